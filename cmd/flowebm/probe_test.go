package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Regressions of issue 18's second probe: each case failed (a panic, a
// value accepted, a file written or a folder left) before its fix.

// wantErr runs the CLI and wants exit status 2 with msg in stderr.
func wantErr(t *testing.T, msg string, args ...string) {
	t.Helper()
	_, stderr, status := runCLI(args...)
	if status != 2 || !strings.Contains(stderr, msg) {
		t.Errorf("%v: status %d, stderr %q; want 2 and %q", args, status, stderr, msg)
	}
}

func TestProbeRefusals(t *testing.T) {
	dir := t.TempDir()
	run0 := trainedRun(t)
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\nNaN,4\n"), 0o644)
	good := filepath.Join(dir, "g.csv")
	os.WriteFile(good, []byte("1,2\n3,4\n"), 0o644)
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(`{"experiment": "two-modes", "train": {"iterations": 2, "batch_size": -1}}`), 0o644)
	steps := filepath.Join(dir, "steps.json")
	os.WriteFile(steps, []byte(`{"experiment": "two-modes", "train": {"iterations": 2, "sampler": {"steps": 1000000000000}}}`), 0o644)
	for _, c := range []struct {
		msg  string
		args []string
	}{
		{"p.csv: point 2, value 1 (of 2, shape [2] each) is NaN", []string{"energy", "--model", run0, "--points", pts}},
		{"--out " + filepath.Join(dir, "e.txt") + ": want a .npy or .csv file", []string{"energy", "--model", run0, "--points", good, "--out", filepath.Join(dir, "e.txt"), "--grad", filepath.Join(dir, "g.npy")}},
		{"--particles applies to --sampler flowmc only", []string{"sample", "--model", run0, "--out", filepath.Join(dir, "s.npy"), "--particles", "9"}},
		{"--log-density applies to an .onnx --model only", []string{"sample", "--model", run0, "--out", filepath.Join(dir, "s.npy"), "--log-density"}},
		{"--warmup 9223372036854775807 (want 0..", []string{"sample", "--model", run0, "--out", filepath.Join(dir, "s.npy"), "--warmup", "9223372036854775807"}},
		{"--data given an empty value", []string{"train", "--data", "", "--out", filepath.Join(dir, "r1")}},
		{"of at most 100 seeds", []string{"train", "--seeds", "1-1000000", "--out", filepath.Join(dir, "r2")}},
		{"--iterations 010: write the number in decimal", []string{"train", "--iterations", "010", "--out", filepath.Join(dir, "r2")}},
		{"--iterations 2_0: write the number in decimal", []string{"train", "--iterations", "2_0", "--out", filepath.Join(dir, "r2")}},
		{"--chains 010: write the number in decimal", []string{"sample", "--model", run0, "--chains=010", "--out", filepath.Join(dir, "s.npy")}},
		{"c.json: train.batch_size -1", []string{"train", "--config", cfg, "--out", filepath.Join(dir, "r3")}},
		{"train.sampler fields steps 1000000000000", []string{"train", "--config", steps, "--out", filepath.Join(dir, "r4")}},
		{"iterations 9223372036854775807, want at most", []string{"train", "--iterations", "9223372036854775807", "--out", filepath.Join(dir, "r5")}},
		{"make 2.56e+17 iterations, want at most", []string{"train", "--epochs", "1000000000000000", "--out", filepath.Join(dir, "r6")}},
		{"is inside the training run " + run0, []string{"convert", "../../io/onnx/testdata/torch/toy_f64.onnx", filepath.Join(run0, "checkpoint"), "--force"}},
		{"--out " + run0 + " is or is inside a training run", []string{"train", "--seeds", "1", "--iterations", "2", "--out", run0}},
	} {
		wantErr(t, c.msg, c.args...)
	}
	if _, err := os.Stat(filepath.Join(dir, "g.npy")); err == nil {
		t.Error("energy wrote --grad before refusing --out")
	}
	// A refused command leaves no folder behind (a run folder holding
	// only its lock was left before).
	for _, r := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		if _, err := os.Stat(filepath.Join(dir, r)); err == nil {
			t.Errorf("%s left behind by a refused train", r)
		}
	}
}

// The seeds' range ending at the largest seed parses (it wrapped round).
func TestParseSeedsAtTheTop(t *testing.T) {
	s, err := parseSeeds("18446744073709551614-18446744073709551615")
	if err != nil || len(s) != 2 || s[1] != 18446744073709551615 {
		t.Errorf("%v, %v; want the two largest seeds", s, err)
	}
}

// A run resumed after its last iteration, outputs written, does nothing
// and rewrites nothing; an edited config.json is refused on resume.
func TestResumeFinishedAndEditedRuns(t *testing.T) {
	run0 := trainedRun(t)
	metrics := filepath.Join(run0, "metrics.json")
	before, _ := os.ReadFile(metrics)
	stdout, stderr, status := runCLI("train", "--resume", run0, "--quiet")
	if status != 0 || !strings.Contains(stdout, "nothing to do") {
		t.Fatalf("resume of a finished run: status %d, %q %q", status, stdout, stderr)
	}
	if after, _ := os.ReadFile(metrics); string(after) != string(before) {
		t.Error("metrics.json rewritten by resuming a finished run")
	}
	cfgPath := filepath.Join(run0, "config.json")
	b, _ := os.ReadFile(cfgPath)
	var m map[string]any
	json.Unmarshal(b, &m)
	m["train"].(map[string]any)["algorithm"] = "ula"
	b, _ = json.Marshal(m)
	os.WriteFile(cfgPath, b, 0o644)
	wantErr(t, `field "train.algorithm" is "ula", but the checkpoint was written with "flowmc"`, "train", "--resume", run0)
	if _, stderr, _ := runCLI("train", "--resume", run0); strings.Contains(stderr, "no complete checkpoint") {
		t.Errorf("an edited config.json is reported as a missing checkpoint: %s", stderr)
	}
}

// --force replaces a run's outputs: none of the old run's stay beside the
// new one's.
func TestForceClearsReplacedRun(t *testing.T) {
	run0 := trainedRun(t)
	stale := filepath.Join(run0, "rhat.svg")
	os.WriteFile(stale, []byte("<svg/>"), 0o644)
	tmp := filepath.Join(run0, ".metrics.csv.tmp123")
	os.WriteFile(tmp, nil, 0o644)
	if _, stderr, status := runCLI("train", "--iterations", "1", "--quiet", "--force", "--out", run0); status != 0 {
		t.Fatal(stderr)
	}
	for _, p := range []string{stale, tmp} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s kept after --force", p)
		}
	}
}

// A data file reached through a link outside the run folder is inside it
// all the same (training would overwrite its own data).
func TestSymlinkedDataInsideRunRefused(t *testing.T) {
	run0 := trainedRun(t)
	link := filepath.Join(t.TempDir(), "d.npy")
	if err := os.Symlink(filepath.Join(run0, "samples.npy"), link); err != nil {
		t.Skip(err)
	}
	wantErr(t, "is inside the run folder", "train", "--iterations", "2", "--data", link, "--out", run0, "--force")
}

// --data with --config keeps the file's data settings that no flag gives.
func TestDataFlagKeepsConfigDataSettings(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.csv")
	var b strings.Builder
	for i := 0; i < 300; i++ {
		b.WriteString(ftoa(float64(i%17)) + "," + ftoa(float64(i%13)*0.5) + "\n")
	}
	os.WriteFile(data, []byte(b.String()), 0o644)
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(`{"data": {"file": "elsewhere.csv", "holdout": 0.5, "standardize": "none"}, "train": {"iterations": 1, "batch_size": 16, "persistent": 256}}`), 0o644)
	out := filepath.Join(dir, "run")
	if _, stderr, status := runCLI("train", "--config", cfg, "--data", data, "--quiet", "--out", out); status != 0 {
		t.Fatal(stderr)
	}
	raw, _ := os.ReadFile(filepath.Join(out, "config.json"))
	var got struct {
		Data struct {
			File        string  `json:"file"`
			HoldOut     float64 `json:"holdout"`
			Standardize string  `json:"standardize"`
		} `json:"data"`
	}
	json.Unmarshal(raw, &got)
	if got.Data.File != data || got.Data.HoldOut != 0.5 || got.Data.Standardize != "none" {
		t.Errorf("data settings %+v, want the flag's file with the config's holdout 0.5 and standardize none", got.Data)
	}
}

// Curves are named by as much of their folders' paths as tells them
// apart.
func TestCurveNames(t *testing.T) {
	got := curveNames([]string{"a/x/s1", "b/x/s1", "c/s2"})
	want := []string{"a/x/s1", "b/x/s1", "c/s2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%q, want %q", got, want)
	}
	if got := curveNames([]string{"runs/one", "runs/two"}); got[0] != "one" || got[1] != "two" {
		t.Errorf("%q, want the folders' names alone", got)
	}
}

// Data settings that cannot describe the run are refused, naming them.
func TestDataSettingsRefused(t *testing.T) {
	dir := t.TempDir()
	data := gridCSV(t, dir)
	for name, c := range map[string]struct{ json, want string }{
		"data_size": {`{"data": {"file": "` + data + `"}, "data_size": 100000, "train": {"iterations": 1}}`, "data_size 100000, but " + data + " has 180 training rows"},
		"null data": {`{"experiment": "data", "data": null, "train": {"iterations": 1}}`, `experiment "data" without a data section`},
		"no file":   {`{"data": {"file": ""}, "train": {"iterations": 1}}`, "the data section has no file: give data.file"},
	} {
		cfg := filepath.Join(dir, name+".json")
		os.WriteFile(cfg, []byte(c.json), 0o644)
		wantErr(t, c.want, "train", "--config", cfg, "--out", filepath.Join(dir, "run-"+name))
	}
}

// plot redraws a run's figures from its checkpoint and metrics: the same
// bytes as training drew, and in another format on request.
func TestPlotRedrawsRun(t *testing.T) {
	run0 := trainedRun(t)
	names, _ := filepath.Glob(filepath.Join(run0, "*.png"))
	if len(names) < 2 {
		t.Fatalf("the run drew %q, want the density and the weights at least", names)
	}
	before := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		before[n] = b
		os.Remove(n)
	}
	if _, stderr, status := runCLI("plot", run0); status != 0 {
		t.Fatal(stderr)
	}
	for _, n := range names {
		if b, err := os.ReadFile(n); err != nil || string(b) != string(before[n]) {
			t.Errorf("%s redrawn: %v, identical to training's: %v", n, err, string(b) == string(before[n]))
		}
	}
	if _, stderr, status := runCLI("plot", "--plot-format", "svg", run0); status != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(filepath.Join(run0, "density.svg")); err != nil {
		t.Error(err)
	}
	wantErr(t, "is not a run folder", "plot", t.TempDir())
}

// --seeds continues a seed's run that a kill stopped while it wrote its
// outputs (it kept it as trained before), and refuses a seed folder
// holding a run of other settings.
func TestSeedsContinueInterruptedRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "S")
	args := []string{"train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out}
	if _, stderr, status := runCLI(args...); status != 0 {
		t.Fatal(stderr)
	}
	samples := filepath.Join(out, "s1", "samples.npy")
	os.Remove(samples) // as a kill before its write
	stdout, stderr, status := runCLI(args...)
	if status != 0 || !strings.Contains(stdout, "continuing") {
		t.Fatalf("rerun: status %d, %q %q; want the seed's run continued", status, stdout, stderr)
	}
	if _, err := os.Stat(samples); err != nil {
		t.Errorf("samples.npy not written by the continued run: %v", err)
	}
	wantErr(t, `holds a run with train.algorithm "flowmc", this command asks for "ula"`, "train", "--seeds", "1", "--iterations", "2", "--algorithm", "ula", "--out", out)
}

// Probe 29: a seed's run with no checkpoint (a full disk or a kill in its
// first one) could only be got past with --force, which trains every seed
// again. It is trained again alone; a damaged checkpoint is not replaced,
// and the refusal says how to train that seed alone.
func TestSeedsRestartRunWithoutCheckpoint(t *testing.T) {
	out := filepath.Join(t.TempDir(), "S")
	args := []string{"train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", out}
	if _, stderr, status := runCLI(args...); status != 0 {
		t.Fatal(stderr)
	}
	s1, s2 := filepath.Join(out, "s1"), filepath.Join(out, "s2")
	before, err := os.ReadFile(filepath.Join(s2, "samples.npy"))
	if err != nil {
		t.Fatal(err)
	}
	fi1, _ := os.Stat(filepath.Join(s1, "samples.npy"))
	for _, f := range []string{"samples.npy", "checkpoint", "metrics.json"} {
		os.RemoveAll(filepath.Join(s2, f))
	}
	stdout, stderr, status := runCLI(args...)
	if status != 0 || !strings.Contains(stdout, "seed 1: already trained") || !strings.Contains(stdout, "stopped before its first checkpoint: trained again from the start") {
		t.Fatalf("rerun: status %d, %q %q", status, stdout, stderr)
	}
	if after, err := os.ReadFile(filepath.Join(s2, "samples.npy")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("seed 2 trained again: %v, same samples %v", err, bytes.Equal(after, before))
	}
	if fi, err := os.Stat(filepath.Join(s1, "samples.npy")); err != nil || !fi.ModTime().Equal(fi1.ModTime()) {
		t.Errorf("seed 1 was written again: %v", err)
	}
	os.Remove(filepath.Join(s2, "samples.npy"))
	weights := filepath.Join(s2, "checkpoint", "weights.npz")
	b, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	os.WriteFile(weights, b, 0o644)
	wantErr(t, "); nothing to resume: to train this seed again alone, move "+s2+" away and give the same --seeds command again (--force would train every seed again)", args...)
}

// Probe 30: a seed's state was read once, before the first seed trained:
// one that another process trained meanwhile was trained again from the
// start. It is read again at its turn.
func TestSeedsStateReadAtItsTurn(t *testing.T) {
	out := filepath.Join(t.TempDir(), "S")
	args := []string{"train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", out}
	if _, stderr, status := runCLI(append(args[:2:2], "2", "--iterations", "2", "--quiet", "--out", out)...); status != 0 {
		t.Fatal(stderr)
	}
	s2 := filepath.Join(out, "s2")
	for _, f := range []string{"samples.npy", "checkpoint", "metrics.json"} {
		os.RemoveAll(filepath.Join(s2, f))
	}
	os.Remove(filepath.Join(out, "seeds.json"))
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "seeds-checked" {
			testHook = nil
			if _, stderr, status := runCLI("train", "--seed", "2", "--iterations", "2", "--quiet", "--out", s2, "--force"); status != 0 {
				t.Error(stderr)
			}
		}
	}
	stdout, stderr, status := runCLI(args...)
	if status != 0 || !strings.Contains(stdout, "seed 2: already trained") {
		t.Errorf("status %d, %q %q; want seed 2 kept as trained meanwhile", status, stdout, stderr)
	}
}

// Outputs inside a run's checkpoint folders are refused (the next
// checkpoint would delete them); so is a run trained there.
func TestNoOutputsInRunCheckpoints(t *testing.T) {
	run0 := trainedRun(t)
	pts := filepath.Join(t.TempDir(), "p.csv")
	os.WriteFile(pts, []byte("1,2\n"), 0o644)
	model := "../../io/onnx/testdata/torch/toy_f64.onnx"
	wantErr(t, "inside the checkpoint folders of the run", "energy", "--model", model, "--points", pts, "--out", filepath.Join(run0, "checkpoint", "e.npy"))
	wantErr(t, "is inside the training run", "train", "--iterations", "2", "--out", filepath.Join(run0, "checkpoint.new"))
	link := filepath.Join(t.TempDir(), "lnk")
	os.Symlink(filepath.Join(run0, "checkpoint"), link)
	wantErr(t, "is inside the training run", "convert", model, link, "--force")
}

// --force replaces a run only once the new one can start: a refused
// configuration leaves the old run whole.
func TestForceKeepsRunWhenNewOneIsRefused(t *testing.T) {
	run0 := trainedRun(t)
	cfg := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(cfg, []byte(`{"experiment": "two-modes", "rhat_chains": 5000, "train": {"iterations": 2, "persistent": 1024}}`), 0o644)
	wantErr(t, "rhat_chains 5000 exceeds", "train", "--config", cfg, "--out", run0, "--force")
	for _, f := range []string{"config.json", "metrics.json", "samples.npy", "checkpoint/spec.json"} {
		if _, err := os.Stat(filepath.Join(run0, f)); err != nil {
			t.Errorf("%s of the old run lost: %v", f, err)
		}
	}
}

// reproduce into a folder that does not exist yet trains its runs (the
// lock check removed the run folder it had just made, and nothing
// trained).
func TestReproduceIntoNewFolder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "new", "rp")
	if _, stderr, status := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "2", "--jobs", "1", "--out", out); status != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", "two-modes-flowmc", "samples.npy")); err != nil {
		t.Errorf("the run did not train: %v", err)
	}
}

// Mode centres that are equal as numbers (0 and −0), or beyond ±1e150,
// are refused naming the file.
func TestModesRefused(t *testing.T) {
	dir := t.TempDir()
	data := gridCSV(t, dir)
	for want, modes := range map[string]string{
		"centres 1 and 2 are equal":              "0,0\n-0,-0\n",
		"want a finite coordinate within ±1e150": "1e308,1e308\n-1e308,-1e308\n",
	} {
		m := filepath.Join(dir, "m.csv")
		os.WriteFile(m, []byte(modes), 0o644)
		wantErr(t, want, "train", "--data", data, "--modes", m, "--iterations", "1", "--out", filepath.Join(dir, "r"))
	}
}

// Model and data fields that a run cannot use are refused naming them.
func TestModelFieldsNamed(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.csv")
	os.WriteFile(data, []byte(strings.Repeat("1,2\n3,5\n", 100)), 0o644)
	os.WriteFile(filepath.Join(dir, "c1.json"), []byte(`{"experiment": "two-modes", "model": {"flow_mask": "bogus"}, "train": {"iterations": 1}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "c2.json"), []byte(`{"experiment": "two-modes", "model": {"flow_init": "bogus"}, "train": {"iterations": 1}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "c3.json"), []byte(`{"data": {"file": "`+data+`", "key": "a"}, "train": {"iterations": 1}}`), 0o644)
	wantErr(t, `model.flow_mask "bogus"`, "train", "--config", filepath.Join(dir, "c1.json"), "--out", filepath.Join(dir, "r"))
	wantErr(t, `model.flow_init "bogus"`, "train", "--config", filepath.Join(dir, "c2.json"), "--out", filepath.Join(dir, "r"))
	wantErr(t, `data.key "a" selects a member of an .npz file`, "train", "--config", filepath.Join(dir, "c3.json"), "--out", filepath.Join(dir, "r"))
}

// gridCSV writes 200 rows of two columns on a grid into dir/d.csv.
func gridCSV(t *testing.T, dir string) string {
	t.Helper()
	data := filepath.Join(dir, "d.csv")
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString(ftoa(float64(i%17)) + "," + ftoa(float64(i%13)) + "\n")
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

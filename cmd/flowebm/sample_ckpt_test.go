package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// A sample run killed (SIGKILL) right after its first checkpoint and
// continued with --resume writes the same bytes as the run left alone:
// adaptive flowMC killed in its training phase and in its production
// phase, MALA in its warm-up, NeuTra (whose latent chains are part of the
// checkpoint) in its kept steps.
func TestSampleResumesBitForBit(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	run0 := trainedRun(t)
	for _, c := range []struct {
		name, every string
		args        []string
	}{
		{"adaptive, training", "20", []string{"--model", model, "--sampler", "flowmc", "--warmup", "100", "--patience", "0", "--steps", "40"}},
		{"adaptive, production", "45", []string{"--model", model, "--sampler", "flowmc", "--warmup", "30", "--steps", "60"}},
		{"mala, warm-up", "20", []string{"--model", model, "--sampler", "mala", "--warmup", "40", "--steps", "30"}},
		{"neutra, kept steps", "25", []string{"--model", run0, "--sampler", "neutra", "--warmup", "10", "--steps", "40"}},
	} {
		name := strings.NewReplacer(" ", "", ",", "_").Replace(c.name)
		full, part, ck := filepath.Join(dir, name+"-full.npy"), filepath.Join(dir, name+"-part.npy"), filepath.Join(dir, name+".npz")
		common := append([]string{"sample", "--chains", "8"}, c.args...)
		var so, se bytes.Buffer
		if code := run(append(common, "--out", full), &so, &se); code != 0 {
			t.Fatalf("%s: %s", c.name, se.String())
		}
		code, stderr := outputsChild(t, "sample-checkpoint", "KILL", append(common, "--out", part, "--checkpoint", ck, "--checkpoint-every", c.every)...)
		if code != -1 || exists(part) || !exists(ck) {
			t.Fatalf("%s: the child was not killed at its first checkpoint (exit %d, %s)", c.name, code, stderr)
		}
		so.Reset()
		if code := run([]string{"sample", "--resume", ck}, &so, &se); code != 0 || !strings.Contains(so.String(), "resumed from") {
			t.Fatalf("%s: resume: exit %d, %s %s", c.name, code, so.String(), se.String())
		}
		if adaptive := strings.HasPrefix(c.name, "adaptive"); adaptive && (!strings.Contains(so.String(), "continues from the checkpoint's weights") || strings.Contains(so.String(), "training a RealNVP")) { // round 83 B4
			t.Errorf("%s: the resumed flow announced as trained anew: %s", c.name, so.String())
		}
		a, _ := os.ReadFile(full)
		b, _ := os.ReadFile(part)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the resumed run's draws differ from the uninterrupted run's", c.name)
		}
	}
}

// --resume refuses other flags, a changed model, and a file that is not a
// sample checkpoint.
func TestSampleResumeRefusals(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../io/onnx/testdata/flows/bimodal_energy.onnx")
	if err != nil {
		t.Fatal(err)
	}
	model, ck := filepath.Join(dir, "m.onnx"), filepath.Join(dir, "c.npz")
	if err := os.WriteFile(model, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := outputsChild(t, "sample-checkpoint", "KILL", "sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "20", "--checkpoint", ck, "--checkpoint-every", "10", "--out", filepath.Join(dir, "x.npy"))
	if code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	var so, se bytes.Buffer
	if code := run([]string{"sample", "--resume", ck, "--steps", "30"}, &so, &se); code != 2 || !strings.Contains(se.String(), "drop --steps") {
		t.Errorf("resume with another flag: exit %d, %q", code, se.String())
	}
	if err := os.WriteFile(model, append(src, 0x12, 1, 'x'), 0o644); err != nil { // producer_name "x": another file, the same network
		t.Fatal(err)
	}
	se.Reset()
	if code := run([]string{"sample", "--resume", ck}, &so, &se); code == 0 || !strings.Contains(se.String(), "has changed since the checkpoint") {
		t.Errorf("resume on a changed model: exit %d, %q", code, se.String())
	}
	se.Reset()
	other := filepath.Join(dir, "other.npz")
	if err := npz.WriteFile(other, map[string]*npy.Array{"a": {Shape: []int{2}, Data: []float64{1, 2}}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"sample", "--resume", other}, &so, &se); code == 0 || !strings.Contains(se.String(), "is not part of a sample checkpoint") {
		t.Errorf("resume from another npz: exit %d, %q", code, se.String())
	}
}

// editCheckpoint copies the checkpoint src to dst with edit applied to its
// arrays and its meta (as a JSON map), its SHA-256 sums recomputed (as one
// who forged them would): the checks beyond the sums are tested.
func editCheckpoint(t *testing.T, src, dst string, edit func(a map[string]*npy.Array, meta map[string]any)) {
	t.Helper()
	editCheckpointSums(t, src, dst, edit, true)
}

// editCheckpointSums is editCheckpoint, its sums recomputed or not.
func editCheckpointSums(t *testing.T, src, dst string, edit func(a map[string]*npy.Array, meta map[string]any), resum bool) {
	t.Helper()
	arch, err := npz.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	raw := arch.Arrays["meta"].Data
	b := make([]byte, len(raw))
	for i, v := range raw {
		b[i] = byte(v)
	}
	var meta map[string]any
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	edit(arch.Arrays, meta)
	if _, had := meta["sums"]; had && resum {
		sums := map[string]any{}
		for name, a := range arch.Arrays {
			if name != "meta" {
				sums[name] = memberSum(a.Shape, a.Data)
			}
		}
		meta["sums"] = sums
		delete(meta, "meta_sha256")
		b, _ := json.Marshal(meta)
		var sm sampleMeta
		if json.Unmarshal(b, &sm) == nil {
			if sum, err := metaSum(sm); err == nil {
				meta["meta_sha256"] = sum
			}
		}
	}
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	raw = make([]float64, len(b))
	for i, c := range b {
		raw[i] = float64(c)
	}
	arch.Arrays["meta"] = &npy.Array{Shape: []int{len(raw)}, Data: raw}
	if err := npz.WriteFile(dst, arch.Arrays, npy.Float64); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint edited or damaged is refused with the member or meta field
// at fault, before any draw (round-9 probe: a panic, an endless loop,
// wrong draws written, gigabytes allocated for an unknown member); a copy
// of a checkpoint resumes from another folder, checkpointing into itself.
func TestSampleResumeChecksTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	mala, ada := killedCheckpoints(t, dir, model, "0")
	for _, c := range []struct {
		name, src string
		edit      func(a map[string]*npy.Array, meta map[string]any)
		want      string
	}{
		{"draws of another dimension", mala, func(a map[string]*npy.Array, _ map[string]any) {
			a["draws"] = &npy.Array{Shape: []int{4, 15, 3}, Data: make([]float64, 180)}
		}, `member "draws" has shape [4 15 3], want [4 15 2]`},
		{"done beyond the run", mala, func(_ map[string]*npy.Array, m map[string]any) { m["done"] = 1000 }, "meta done 1000, want 0..40"},
		{"done disagreeing with the draws", mala, func(_ map[string]*npy.Array, m map[string]any) { m["done"] = 30 }, `member "draws" has shape [4 15 2], want [4 20 2]`},
		{"a NaN state", mala, func(a map[string]*npy.Array, _ map[string]any) { a["x"].Data[0] = math.NaN() }, `member "x" holds NaN at index 0`},
		{"an unknown member", mala, func(a map[string]*npy.Array, _ map[string]any) {
			a["junk"] = &npy.Array{Shape: []int{3}, Data: make([]float64, 3)}
		}, `member "junk" is not part of a sample checkpoint`},
		{"a zero step size", mala, func(_ map[string]*npy.Array, m map[string]any) { m["step_size"] = 0 }, "meta step_size 0, want a finite step size > 0"},
		{"an absurd training cycle", ada, func(_ map[string]*npy.Array, m map[string]any) { m["cycle"] = 1e9 }, "meta cycle 1000000000 (stale 0), want 0..40"},
		{"NaN flow weights", ada, func(a map[string]*npy.Array, _ map[string]any) { a["flow"].Data[3] = math.NaN() }, `member "flow" holds NaN at index 3`},
		{"no input hashes", ada, func(_ map[string]*npy.Array, m map[string]any) { m["inputs"] = map[string]any{} }, "records no SHA-256 of"},
		// Probe 18: Go's own texts ("cannot unmarshal string into Go struct
		// field sampleMeta.step_size") gave way to the file's terms.
		{"a step size as text", mala, func(_ map[string]*npy.Array, m map[string]any) { m["step_size"] = "NaN" }, "member meta: near line 1"},
		{"an unknown meta field", mala, func(_ map[string]*npy.Array, m map[string]any) { m["colour"] = 1 }, `member meta: unknown field "colour"`},
	} {
		bad := filepath.Join(dir, "bad.npz")
		editCheckpoint(t, c.src, bad, c.edit)
		var so, se bytes.Buffer
		if code := run([]string{"sample", "--resume", bad, "--force"}, &so, &se); code == 0 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%s: exit %d, %q; want an error containing %q", c.name, code, se.String(), c.want)
		}
	}
	// A copy resumes from another working folder, into its own file.
	other := t.TempDir()
	cp := filepath.Join(other, "copy.npz")
	editCheckpoint(t, mala, cp, func(map[string]*npy.Array, map[string]any) {})
	t.Chdir(other)
	var so, se bytes.Buffer
	if code := run([]string{"sample", "--resume", "copy.npz"}, &so, &se); code != 0 || !exists(filepath.Join(dir, "never.npy")) {
		t.Errorf("resume of a copy from another folder: exit %d, %q", code, se.String())
	}
}

// Flags that cannot apply are refused before any work (round-9 probe):
// --patience with a frozen flow, --flow-out on a file or on the
// checkpoint's path; a config.json alone above the output is not a run.
func TestSampleFlowOutAndPatience(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	f := "../../io/onnx/testdata/flows/realnvp2_f64"
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sampler", "flowmc", "--flow", f + "_sample.onnx", "--flow-density", f + "_density.onnx", "--patience", "3"}, "--patience applies to flowmc training its flow"},
		{[]string{"--sampler", "flowmc", "--flow-out", file}, "is a file: give a folder"},
		{[]string{"--sampler", "flowmc", "--flow-out", filepath.Join(dir, "c.npz"), "--checkpoint", filepath.Join(dir, "c.npz")}, "is also --checkpoint"},
	} {
		var so, se bytes.Buffer
		args := append([]string{"sample", "--model", model, "--chains", "4", "--steps", "5", "--out", filepath.Join(dir, "o.npy")}, c.args...)
		if code := run(args, &so, &se); code == 0 || !strings.Contains(se.String(), c.want) || so.Len() > 0 {
			t.Errorf("%v: exit %d, %q %q; want a refusal before work containing %q", c.args, code, so.String(), se.String(), c.want)
		}
	}
	proj := filepath.Join(dir, "proj")
	if err := os.MkdirAll(filepath.Join(proj, "results"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	if code := run([]string{"sample", "--model", model, "--chains", "4", "--steps", "5", "--out", filepath.Join(proj, "results", "c.npy")}, &so, &se); code != 0 {
		t.Errorf("output below a folder holding only a config.json: %s", se.String())
	}
}

// --flow-out writes its two graphs as a pair: a run killed while staging
// the second leaves the old pair whole (round-9 probe: a new sampling
// graph beside the old density graph). A --checkpoint file that appears
// after the run started (another run given the same file) stops the run
// at its first checkpoint instead of being overwritten.
func TestSampleOutputsNotMixed(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	fo := filepath.Join(dir, "fo")
	base := []string{"sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "10", "--warmup", "20", "--flow-out", fo}
	var so, se bytes.Buffer
	if code := run(append(base, "--out", filepath.Join(dir, "a.npy")), &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	before := map[string][]byte{}
	for _, n := range []string{"flow_sample.onnx", "flow_density.onnx"} {
		before[n], _ = os.ReadFile(filepath.Join(fo, n))
	}
	t.Setenv("FLOWEBM_CHILD_SKIP", "1") // the first output written is the sampling graph
	if code, stderr := outputsChild(t, "output-writing", "KILL", append(base, "--out", filepath.Join(dir, "b.npy"), "--seed", "9", "--force")...); code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	for n, b := range before {
		if got, _ := os.ReadFile(filepath.Join(fo, n)); !bytes.Equal(got, b) {
			t.Errorf("%s changed though the new pair was not complete", n)
		}
	}
	t.Setenv("FLOWEBM_CHILD_SKIP", "0")
	ck := filepath.Join(dir, "c.npz")
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "sample-started" {
			os.WriteFile(ck, []byte("another run's"), 0o644)
		}
	}
	se.Reset()
	args := []string{"sample", "--model", model, "--chains", "4", "--steps", "30", "--warmup", "0", "--checkpoint", ck, "--checkpoint-every", "10", "--out", filepath.Join(dir, "c.npy")}
	if code := run(args, &so, &se); code == 0 || !strings.Contains(se.String(), "exists") {
		t.Errorf("a checkpoint file made meanwhile: exit %d, %q", code, se.String())
	}
	if b, _ := os.ReadFile(ck); string(b) != "another run's" {
		t.Error("the other run's checkpoint was overwritten")
	}
}

// Round-10 probe: --modes is read and checked before any work (shape,
// dimension, finite and distinct centres; CSV accepted) and is an input
// no output may replace; a checkpoint whose cache does not match its
// points, whose meta contradicts its progress or that records no flags is
// refused.
func TestSampleModesAndCheckpointConsistency(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	w := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	good := w("good.csv", "x,y\n-2.5,0\n2.5,0\n")
	out := filepath.Join(dir, "o.npy")
	for _, c := range []struct {
		modes string
		extra []string
		want  string
	}{
		{w("d3.csv", "-2,0,1\n2,0,1\n"), nil, "2 centres of dimension 3, want 1 to 1000 of dimension 2"},
		{w("nan.csv", "nan,0\n2,0\n"), nil, "centre 1 holds NaN in coordinate 1"},
		{w("dup.csv", "1,0\n1,0\n"), nil, "centres 1 and 2 are equal"},
		{good, []string{"--out", good, "--force"}, "is also an input"},
	} {
		var so, se bytes.Buffer
		args := append([]string{"sample", "--model", model, "--chains", "4", "--steps", "10", "--modes", c.modes, "--out", out}, c.extra...)
		if code := run(args, &so, &se); code == 0 || !strings.Contains(se.String(), c.want) || exists(out) {
			t.Errorf("--modes %s: exit %d, %q; want a refusal before work containing %q", filepath.Base(c.modes), code, se.String(), c.want)
		}
	}
	var so, se bytes.Buffer
	if code := run([]string{"sample", "--model", model, "--chains", "4", "--steps", "10", "--modes", good, "--out", out}, &so, &se); code != 0 || !strings.Contains(so.String(), "mode 1 at (-2.50, 0.00)") {
		t.Errorf("--modes from CSV: exit %d, %q %q", code, so.String(), se.String())
	}
	so.Reset()
	one := w("one.csv", "0,0\n") // a single centre: every draw in its zone
	if code := run([]string{"sample", "--model", model, "--chains", "4", "--steps", "10", "--modes", one, "--out", out, "--force"}, &so, &se); code != 0 ||
		!strings.Contains(so.String(), "mode 1 at (0.00, 0.00): 1.0000 (every draw in this zone: no error estimate)") || strings.Contains(so.String(), "NaN") {
		t.Errorf("--modes with one centre: exit %d, %q %q", code, so.String(), se.String())
	}
	mala, ada := killedCheckpoints(t, dir, model, "3")
	for _, c := range []struct {
		name, src string
		edit      func(a map[string]*npy.Array, meta map[string]any)
		want      string
	}{
		{"points moved, cache kept", mala, func(a map[string]*npy.Array, _ map[string]any) {
			for i := range a["x"].Data {
				a["x"].Data[i] += 5
			}
		}, `member "logp" is not the model's log-density`},
		{"an acceptance above its steps", mala, func(_ map[string]*npy.Array, m map[string]any) { m["local_sum"] = "0.9" }, "meta acceptance sum 0.9 after 15 kept steps of 30"},
		{"adaptation on in the kept steps", mala, func(_ map[string]*npy.Array, m map[string]any) { m["frozen"] = false }, "meta frozen false at step 25, want true"},
		{"a cycle inside a window", ada, func(_ map[string]*npy.Array, m map[string]any) { m["cycle"] = 15 }, "meta cycle 15, want a multiple of 10"},
		{"stale beyond patience", ada, func(_ map[string]*npy.Array, m map[string]any) { m["stale"] = 1e9 }, "want at most 3 (--patience)"},
		{"no flags", mala, func(_ map[string]*npy.Array, m map[string]any) { delete(m, "args") }, "meta records no flags (args)"},
	} {
		bad := filepath.Join(dir, "bad.npz")
		editCheckpoint(t, c.src, bad, c.edit)
		var so, se bytes.Buffer
		if code := run([]string{"sample", "--resume", bad, "--force"}, &so, &se); code == 0 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%s: exit %d, %q; want an error containing %q", c.name, code, se.String(), c.want)
		}
	}
}

// killedCheckpoints makes two checkpoints of runs on model killed at their
// first checkpoint: MALA in its kept steps (done 25 of 10 + 30) and
// adaptive flowMC in training (cycle 20 of 40, with --patience patience).
func killedCheckpoints(t *testing.T, dir, model, patience string) (mala, ada string) {
	t.Helper()
	mala, ada = filepath.Join(dir, "mala.npz"), filepath.Join(dir, "ada.npz")
	for _, c := range []struct {
		ck   string
		args []string
	}{
		{mala, []string{"--sampler", "mala", "--warmup", "10", "--steps", "30", "--checkpoint-every", "25"}},
		{ada, []string{"--sampler", "flowmc", "--warmup", "40", "--patience", patience, "--steps", "10", "--checkpoint-every", "20"}},
	} {
		args := append([]string{"sample", "--model", model, "--chains", "4", "--out", filepath.Join(dir, "never.npy"), "--checkpoint", c.ck}, c.args...)
		if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", args...); code != -1 {
			t.Fatalf("child exit %d: %s", code, stderr)
		}
	}
	return mala, ada
}

// Probe 15: two sample runs given one --checkpoint (with --force) ran side
// by side, each replacing the other's checkpoint; the second is refused
// while the first holds the file's lock, and the lock file goes with it.
func TestSampleCheckpointLocked(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck.npz")
	release, err := lockFile("--checkpoint", ck, "sample")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"sample", "--model", "../../io/onnx/testdata/torch/toy_f64.onnx", "--chains", "2", "--steps", "4", "--warmup", "4", "--checkpoint", ck, "--checkpoint-every", "2", "--force", "--out", filepath.Join(dir, "x.npy")}
	wantErr(t, "--checkpoint "+ck+": another flowebm process (flowebm sample) is writing it", args...)
	release()
	if _, stderr, status := runCLI(args...); status != 0 {
		t.Fatalf("after the release: status %d, %s", status, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".ck.npz.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file is left: %v", err)
	}
}

// Probe 15: a zone holding every draw (or none) printed "± NaN [NaN, NaN]
// (ESS NaN)"; it says there is no error estimate.
func TestFmtWeightWithoutError(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		w    diagnostics.Weight
		want string
	}{
		{diagnostics.Weight{Weight: 1, MCSE: nan, Lo: nan, Hi: nan, ESS: nan}, "1.0000 (every draw in this zone: no error estimate)"},
		{diagnostics.Weight{Weight: 0, MCSE: nan, Lo: nan, Hi: nan, ESS: nan}, "0.0000 (no draw in this zone: no error estimate)"},
		{diagnostics.Weight{Weight: 0.25, MCSE: 0.01, Lo: 0.23, Hi: 0.27, ESS: 400}, "0.2500 ± 0.0100 [0.2300, 0.2700] (ESS 400)"},
	} {
		if got := fmtWeight(c.w, 4, true); got != c.want {
			t.Errorf("fmtWeight(%+v) = %q, want %q", c.w, got, c.want)
		}
	}
}

// Probe 21: sample on a run that checkpoints at every iteration held the
// run and then asked for it again inside, behind the trainer waiting at
// the gate: both waited until the trainer's patience ran out, and reads
// then failed. Sampling the run while it trains neither fails nor slows
// the training into its patience.
func TestSampleWhileTrainingEveryIteration(t *testing.T) {
	dir := t.TempDir()
	cfg, stderr, status := runCLI("train", "--iterations", "60", "--print-config")
	if status != 0 {
		t.Fatal(stderr)
	}
	var c map[string]any
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		t.Fatal(err)
	}
	c["checkpoint_every"], c["eval_every"] = 1, 1
	b, _ := json.Marshal(c)
	cfgPath := filepath.Join(dir, "c.json")
	os.WriteFile(cfgPath, b, 0o644)
	runDir := filepath.Join(dir, "run")
	trained := make(chan string, 1)
	start := time.Now()
	go func() {
		_, stderr, _ := runCLI("train", "--config", cfgPath, "--out", runDir, "--quiet")
		trained <- stderr
	}()
	for !exists(filepath.Join(runDir, "checkpoint", "COMPLETE")) && time.Since(start) < time.Minute { // its first checkpoint
		time.Sleep(5 * time.Millisecond)
	}
	reads, failed := 0, []string{}
	for done := false; !done; {
		select {
		case stderr := <-trained:
			done = true
			if strings.Contains(stderr, "waiting up to") {
				t.Errorf("the training waited for a reader: %s", stderr)
			}
		default:
			reads++
			if _, stderr, status := runCLI("sample", "--model", runDir, "--steps", "4", "--chains", "2", "--out", filepath.Join(dir, "s.npy"), "--force"); status != 0 && len(failed) < 3 {
				failed = append(failed, stderr)
			}
		}
	}
	if len(failed) > 0 || time.Since(start) > 60*time.Second {
		t.Errorf("%d of %d samples failed during training (%v in all), e.g. %q", len(failed), reads, time.Since(start), failed)
	}
}

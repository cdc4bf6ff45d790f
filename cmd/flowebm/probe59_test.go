package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowebm/flowebm/io/npy"
)

// Probe 59 B3: a sample checkpoint records the build that wrote it (Go,
// BLAS, vector math); resumed by another, sample says that the run will
// differ from an uninterrupted one at round-off, as train does. Resumed
// by the same build, it says nothing.
func TestSampleResumeNotesAnotherBuild(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	ck, other := filepath.Join(dir, "k.npz"), filepath.Join(dir, "other.npz")
	out := filepath.Join(dir, "s.npy")
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--checkpoint", ck, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck, "--force"); code != 0 || strings.Contains(stderr, "note: the run was started with") {
		t.Errorf("same build: exit %d: %s", code, stderr)
	}
	editCheckpoint(t, ck, other, func(_ map[string]*npy.Array, meta map[string]any) {
		meta["build"] = map[string]any{"go": "go1.0 plan9/386", "blas": "another", "vector_math": "none"}
	})
	os.Remove(out)
	_, stderr, code := runCLI("sample", "--resume", other, "--force")
	if code != 0 || !strings.Contains(stderr, "note: the run was started with go1.0 plan9/386, BLAS another, vector math none; resumed with go") ||
		!strings.Contains(stderr, "it will differ from an uninterrupted run at round-off") {
		t.Errorf("another build: exit %d: %s", code, stderr)
	}
}

// Probe 59 B4: train --print-config refuses what train refuses: fields
// checked before the data are loaded (grid_size 1, rhat_every −1,
// model.flow_blocks −1, model.shards 1000) were printed, exit 0, then
// refused by train.
func TestPrintConfigRefusesWhatTrainRefuses(t *testing.T) {
	dir := t.TempDir()
	for field, want := range map[string]string{
		`"grid_size": 1`:                    "grid_size 1, want 2..1000",
		`"rhat_every": -1`:                  "rhat_every -1, want > 0",
		`"model": {"flow_blocks": -1}`:      "model.flow_blocks -1, want > 0",
		`"model": {"shards": 1000}`:         "model.shards 1000, want 1 to 256",
		`"model": {"flow_tail_bound": 3.0}`: `model.flow_tail_bound applies to model.flow "spline"`,
	} {
		cfg := filepath.Join(dir, "c.json")
		body := `{"experiment": "two-modes", "train": {"algorithm": "flowmc", "iterations": 5}, ` + field + `}`
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"--print-config"}, {"--out", filepath.Join(dir, "run")}} {
			_, stderr, code := runCLI(append([]string{"train", "--config", cfg}, args...)...)
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("%s with %v: exit %d: %s", field, args, code, stderr)
			}
		}
	}
}

// Probe 59 B5: a CSV with a chain column gives its chains in the order of
// their numbers, whatever the order of the rows: --nested's superchains
// (consecutive chains) were the order chains first appeared, and rows
// listing chain 3 before chain 2 gave a nested R-hat of 1.0000 for 1.8141.
func TestDiagnoseCSVChainsByNumber(t *testing.T) {
	dir := t.TempDir()
	rows := map[int][]string{}
	for c := 1; c <= 4; c++ {
		for d := 1; d <= 20; d++ {
			v := float64((d*7+c*3)%11) / 10
			if c <= 2 {
				v += 2
			}
			rows[c] = append(rows[c], fmt.Sprintf("%d,%d,%g", c, d, v))
		}
	}
	var results []string
	for _, order := range [][]int{{1, 2, 3, 4}, {1, 3, 2, 4}, {4, 3, 2, 1}} {
		var b strings.Builder
		b.WriteString("chain,draw,theta\n")
		for _, c := range order {
			b.WriteString(strings.Join(rows[c], "\n") + "\n")
		}
		p := filepath.Join(dir, fmt.Sprint(order)+".csv")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runCLI("diagnose", "--json", "--nested", "2", p)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", order, code, stderr)
		}
		results = append(results, stdout)
	}
	if results[1] != results[0] || results[2] != results[0] || !strings.Contains(results[0], `"rhat_nested"`) {
		t.Errorf("chains in row orders 1234, 1324, 4321:\n%s\n%s\n%s", results[0], results[1], results[2])
	}
}

// Probe 59 B6: compare says which run's config.json or metrics.json it
// could not read (damaged), rather than showing — without a word; a run
// whose files read says nothing.
func TestCompareNamesUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	if _, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", ref); code != 0 {
		t.Fatal(stderr)
	}
	for _, c := range []struct{ file, body string }{{"metrics.json", "{"}, {"config.json", `{"experiment": 5}`}} {
		bad := filepath.Join(dir, "bad-"+strings.TrimSuffix(c.file, ".json"))
		if err := os.CopyFS(bad, os.DirFS(ref)); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(bad, ".lock"))
		if err := os.WriteFile(filepath.Join(bad, c.file), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runCLI("compare", ref, bad, "--out", filepath.Join(dir, "cmp-"+c.file))
		if code != 0 || !strings.Contains(stderr, "note: "+filepath.Join(bad, c.file)) || strings.Contains(stderr, ref+string(filepath.Separator)) {
			t.Errorf("%s damaged: exit %d: %s", c.file, code, stderr)
		}
	}
}

// Probe 59 B7 (b): a second sample --resume of a checkpoint another
// process continues names --resume, and does not advise another file.
func TestSampleResumeHeldSaysResume(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	ck := filepath.Join(dir, "k.npz")
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--checkpoint", ck, "--out", filepath.Join(dir, "s.npy")); code != 0 {
		t.Fatal(stderr)
	}
	hold, err := lockFile("--checkpoint", ck, "sample")
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	_, stderr, code := runCLI("sample", "--resume", ck, "--force")
	if code != 2 || !strings.Contains(stderr, "--resume "+ck+": another flowebm process (flowebm sample) is continuing it") ||
		strings.Contains(stderr, "give another file") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 59 B7 (k): a resumed run whose --model has moved says which of
// its files is missing and to put it back.
func TestSampleResumeModelMoved(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../io/onnx/testdata/flows/bimodal_energy.onnx")
	if err != nil {
		t.Fatal(err)
	}
	model, ck := filepath.Join(dir, "m.onnx"), filepath.Join(dir, "k.npz")
	if err := os.WriteFile(model, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--checkpoint", ck, "--out", filepath.Join(dir, "s.npy")); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Rename(model, model+".moved"); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("sample", "--resume", ck, "--force")
	if code != 2 || !strings.Contains(stderr, "--resume "+ck+": the run's --model "+model+" no longer exists") || !strings.Contains(stderr, "put it back there") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 59 B7 (a): --out naming the input folder (or one inside it) says
// to give a file outside it: "give a file name in it" was then refused.
func TestOutFolderIsInput(t *testing.T) {
	run0 := trainedRun(t)
	for out, want := range map[string]string{
		run0:                              "--out " + run0 + " is the input folder " + run0 + ": give a file name outside it",
		filepath.Join(run0, "checkpoint"): "is a folder inside the input folder " + run0 + ": give a file name outside it",
	} {
		_, stderr, code := runCLI("sample", "--model", run0, "--out", out, "--chains", "4", "--steps", "8")
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("--out %s: exit %d: %s", out, code, stderr)
		}
	}
}

// Probe 60 B2: without --checkpoint-every, a checkpoint waits 9 times as
// long as the last one took to write, so that writing, which rewrites
// every draw kept, takes at most a tenth of the run (it grew with the
// square of the draws: 7 times the run's time at 60000 steps).
func TestCheckpointPace(t *testing.T) {
	var p checkpointPace
	t0 := time.Unix(1000, 0)
	if !p.due(t0) {
		t.Fatal("the first checkpoint is not due")
	}
	p.start(t0)
	p.end(t0.Add(time.Second)) // took 1 s
	for _, c := range []struct {
		after time.Duration
		due   bool
	}{{time.Second, false}, {8 * time.Second, false}, {9 * time.Second, true}, {time.Minute, true}} {
		if got := p.due(t0.Add(time.Second + c.after)); got != c.due {
			t.Errorf("%v after a write of 1 s: due %v, want %v", c.after, got, c.due)
		}
	}
}

// The pacing changes no draw: a run checkpointed at its pace and one
// checkpointed every 10 steps write the same draws as one never
// checkpointed.
func TestCheckpointPaceSameDraws(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	common := []string{"sample", "--model", model, "--chains", "4", "--steps", "300", "--sampler", "mala"}
	var outs [][]byte
	for i, extra := range [][]string{nil, {"--checkpoint", filepath.Join(dir, "a.npz")}, {"--checkpoint", filepath.Join(dir, "b.npz"), "--checkpoint-every", "10"}} {
		out := filepath.Join(dir, fmt.Sprintf("s%d.npy", i))
		if _, stderr, code := runCLI(append(append(common, extra...), "--out", out)...); code != 0 {
			t.Fatal(stderr)
		}
		b, _ := os.ReadFile(out)
		outs = append(outs, b)
	}
	if !bytes.Equal(outs[0], outs[1]) || !bytes.Equal(outs[0], outs[2]) {
		t.Error("checkpointing changed the draws")
	}
}

// Probe 60 B4: a run folder whose config.json was deleted is named as
// such by plot and train --resume, with the copy in its checkpoint to
// restore it; restored as advised, the run resumes.
func TestRunWithoutConfigJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(trainedRun(t))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, ".lock"))
	cfg := filepath.Join(dir, "config.json")
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	advice := "the run's checkpoint holds a copy of its configuration: cp " + filepath.Join(dir, "checkpoint", "run-config.json") + " " + cfg + " restores it"
	for _, args := range [][]string{{"plot", dir}, {"train", "--resume", dir}} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, advice) {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// compare notes it (probe 61: silent).
	if _, stderr, code := runCLI("compare", dir, "--out", filepath.Join(t.TempDir(), "c")); code != 0 || !strings.Contains(stderr, advice) {
		t.Errorf("compare: exit %d: %s", code, stderr)
	}
	// In checkpoint.old/ (a crash between the two renames), plot names it
	// too (probe 61: "not a run folder").
	if err := os.Rename(filepath.Join(dir, "checkpoint"), filepath.Join(dir, "checkpoint.old")); err != nil {
		t.Fatal(err)
	}
	oldAdvice := "cp " + filepath.Join(dir, "checkpoint.old", "run-config.json") + " " + cfg + " restores it"
	if _, stderr, code := runCLI("plot", dir); code != 2 || !strings.Contains(stderr, oldAdvice) {
		t.Errorf("plot, checkpoint.old: exit %d: %s", code, stderr)
	}
	if err := os.Rename(filepath.Join(dir, "checkpoint.old"), filepath.Join(dir, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "checkpoint", "run-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--resume", dir); code != 0 {
		t.Errorf("restored as advised: exit %d: %s", code, stderr)
	}
}

// Probe 61 B4: flowmc without a flow on a 1-D energy says why it cannot
// (a RealNVP needs d ≥ 2) and what to use, not the layer's own message;
// MALA samples it.
func TestFlowMCOneDimension(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/pinned/quadratic_1d_dyn.onnx"
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--chains", "8", "--steps", "20", "--out", filepath.Join(dir, "f.npy"))
	if code != 2 || !strings.Contains(stderr, "it needs d ≥ 2, and --model "+model+" has d = 1; sample it with --sampler mala, hmc or ula") || strings.Contains(stderr, "layers:") {
		t.Errorf("flowmc: exit %d: %s", code, stderr)
	}
	// Session 38: "× 1 dims" read as a plural.
	if stdout, stderr, code := runCLI("sample", "--model", model, "--sampler", "mala", "--chains", "8", "--steps", "20", "--out", filepath.Join(dir, "m.npy")); code != 0 || !strings.Contains(stdout, "8 chains × 20 draws × 1 dim written") {
		t.Errorf("mala: exit %d: %s%s", code, stdout, stderr)
	}
}

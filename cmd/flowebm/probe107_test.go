package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Round 107 B2: a sample checkpoint with its meta's step size (or
// generator state) or a kept draw edited resumed silently into other
// draws. Each member's SHA-256 and meta's are recorded, and an edit is
// refused naming the member; the checkpoint as written resumes.
func TestSampleCheckpointEditsRefused(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	ck := filepath.Join(dir, "k.npz")
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--checkpoint", ck, "--out", filepath.Join(dir, "s.npy")); code != 0 {
		t.Fatal(stderr)
	}
	for _, c := range []struct {
		name string
		edit func(a map[string]*npy.Array, meta map[string]any)
		want string
	}{
		{"step size", func(_ map[string]*npy.Array, meta map[string]any) { meta["step_size"] = 0.2 }, "member meta is not what the run wrote (its SHA-256 is not the one it records): a field was edited"},
		{"a chain's state", func(a map[string]*npy.Array, _ map[string]any) { a["x"].Data[3] += 0.5 }, `member "x" is not what the run wrote`},
		// Round 108 B2: meta's own sum removed, a field edited.
		{"meta's sum removed", func(_ map[string]*npy.Array, meta map[string]any) {
			delete(meta, "meta_sha256")
			meta["step_size"] = 0.05
		}, "member meta records its members' SHA-256 (sums) but not its own (meta_sha256), which the run writes: it was edited"}, // round 109 B4: said to differ
		// Round 108 B4: a member the format knows, added.
		{"a member added", func(a map[string]*npy.Array, _ map[string]any) {
			a["logq"] = &npy.Array{Shape: []int{4}, Data: make([]float64, 4)}
		}, `member "logq" is not one the run wrote`},
		// Round 108 B1: a member removed: the way on too.
		{"a member removed", func(a map[string]*npy.Array, _ map[string]any) { delete(a, "grad") }, `"grad"`},
	} {
		bad := filepath.Join(dir, "bad.npz")
		editCheckpointSums(t, ck, bad, c.edit, false)
		_, stderr, code := runCLI("sample", "--resume", bad, "--out", filepath.Join(dir, "r.npy"), "--force")
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "start the run again") {
			t.Errorf("%s: exit %d, %s", c.name, code, stderr)
		}
		os.Remove(bad)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck, "--out", filepath.Join(dir, "r.npy"), "--force"); code != 0 {
		t.Errorf("as written: exit %d, %s", code, stderr)
	}
}

// Round 107 B1: reproduce interrupted while train --resume checked a
// finished run said its outputs "could not be checked (… nothing was
// trained)" and advised moving the finished run away to train it anew.
// It says the check was interrupted and that the same command checks
// them; given again, it does, and the run is kept.
func TestReproduceInterruptedCheckKeepsRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	samples := filepath.Join(out, "runs", "two-modes-ula", "samples.npy")
	before, _ := os.ReadFile(samples)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutputsChild$")
	cmd.Env = append(os.Environ(), "FLOWEBM_CHILD_ARGS="+strings.Join(args, "\x1f"), "FLOWEBM_CHILD_POINT=reproduce-check", "FLOWEBM_CHILD_SIGNAL=INT", "FLOWEBM_CHILD_STDOUT=1", "FLOWEBM_CHILD_WAIT=200ms")
	both, _ := cmd.CombinedOutput()
	if !strings.Contains(string(both), "two-modes-ula: already done (the check of its outputs was interrupted: the same reproduce command, given again, checks them)") || strings.Contains(string(both), "trains it anew") {
		t.Errorf("interrupted check: %q", both)
	}
	stdout, stderr, code := runCLI(args...)
	if code != 0 || !strings.Contains(stdout, "two-modes-ula: already done") {
		t.Errorf("again: exit %d, %s%s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(samples); string(after) != string(before) {
		t.Error("the finished run's samples.npy changed")
	}
}

// Round 108 B3: compare showed an edited true_held_out_ll of a data run
// (which has no exact density) as its exact held-out log-likelihood.
func TestCompareDataRunExactLLEdit(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.csv")
	var b strings.Builder
	for i := range 200 {
		b.WriteString(strconv.Itoa(i%7-3) + "," + strconv.Itoa(i%5-2) + "\n")
	}
	os.WriteFile(data, []byte(b.String()), 0o644)
	run := filepath.Join(dir, "r")
	if _, stderr, code := runCLI("train", "--data", data, "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, _ := runCLI("compare", run, "--out", filepath.Join(dir, "c0")); strings.Contains(stderr, "true_held_out_ll") {
		t.Errorf("untouched: %s", stderr)
	}
	editJSON(t, filepath.Join(run, "metrics.json"), func(m map[string]any) { m["true_held_out_ll"] = -1.0 })
	_, stderr, _ := runCLI("compare", run, "--out", filepath.Join(dir, "c1"))
	if !strings.Contains(stderr, `field "true_held_out_ll" is -1, but the run has no exact density`) {
		t.Errorf("edited: %s", stderr)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
)

// Probe 58 A4: ULA stopped at a point where the gradient is undefined
// said "nothing was written" beside the checkpoint it had written; A5: a
// start where the gradient is undefined was blamed on the model, without
// naming --starts.
func TestULACheckpointAndStartsNamed(t *testing.T) {
	model := pinnedModel(t, "where_sqrt_dyn")
	inTempDir(t)
	npy.WriteFile("st.npy", &npy.Array{Shape: []int{1, 2}, Data: []float64{1.5, 0}}, npy.Float64)
	npy.WriteFile("bad.npy", &npy.Array{Shape: []int{2, 2}, Data: []float64{1.5, 0, -1, 0.3}}, npy.Float64)
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "ula", "--starts", "st.npy", "--chains", "16", "--steps", "400",
		"--checkpoint", "ck.npz", "--checkpoint-every", "1", "--out", "u.npy")
	if code == 0 || strings.Contains(stderr, "nothing was written") || !strings.Contains(stderr, "holds the steps before, and a resume from it reaches the same point") {
		t.Errorf("ula with --checkpoint: exit %d, %s", code, stderr)
	}
	_, stderr, code = runCLI("sample", "--model", model, "--sampler", "mala", "--starts", "bad.npy", "--chains", "2", "--steps", "10", "--out", "m.npy")
	if code == 0 || !strings.Contains(stderr, "The chains start at the points of --starts bad.npy: move that point") {
		t.Errorf("a start where the gradient is undefined: exit %d, %s", code, stderr)
	}
}

// Probe 58 B2: a resume refused for memory advised fewer chains, which
// --resume refuses; it says where the run was accepted, to resume there.
func TestSampleResumeRefusalSaysWhere(t *testing.T) {
	f, m := convSampleRun(t, 64)
	f.chains = int(2 * memoryLimit(maxWorkBytes) / (f.memoryNeed(m) / 64))
	f.resume = "ck.npz"
	f.accepted = &sysmem.Accepted{Limit: 1 << 30, Total: 1 << 34, Ulimit: 6000000 << 10}
	if err := f.checkMemory(m); err == nil || !strings.Contains(err.Error(), "a resumed run keeps its chains: it was accepted at its start under a limit of 1 GiB (ulimit -v 6000000, in KiB as the shell takes it): resume it under that ulimit -v or a higher one") {
		t.Errorf("%v", err)
	}
}

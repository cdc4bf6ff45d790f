package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
)

// pinnedModel is an ONNX fixture of io/onnx/testdata/pinned (exported by
// PyTorch from io/onnx/crosscheck/make_pinned.py), as an absolute path
// (taken before the test changes folder).
func pinnedModel(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", name+".onnx"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Probe 57 A1: E(x) = 3‖relu(Wx)‖ + ½|x|² (x.norm(dim=1), exported as a
// square root of a sum of squares) had a NaN gradient wherever every
// feature is 0, 76% of its mass (grid quadrature: 0.764): MALA from a
// point outside never entered it and gave 0.000 at exit 0. Its norm now
// has PyTorch's gradient (0 there). 16 chains × 2,000 MALA steps: the
// fraction of draws with every feature 0 is within 0.05 of 0.764 (the
// indicator's variance is at most 0.18; at the ≥ 1,000 effective draws
// of such a run its MCSE is about 0.013, so 0.05 is about 4 of them).
func TestNormGradientAtZero(t *testing.T) {
	model := pinnedModel(t, "norm_relu_dyn")
	inTempDir(t)
	npy.WriteFile("st.npy", &npy.Array{Shape: []int{1, 2}, Data: []float64{1.5, 0}}, npy.Float64)
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "mala", "--base", "0", "--starts", "st.npy",
		"--chains", "16", "--steps", "2000", "--warmup", "200", "--out", "d.npy")
	if code != 0 || strings.Contains(stderr, "gradient is NaN") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	a, err := npy.ReadFile("d.npy")
	if err != nil {
		t.Fatal(err)
	}
	w := [][2]float64{{1, 0}, {1, 0.5}, {1, -0.5}}
	dead := 0
	for i := 0; i < len(a.Data); i += 2 {
		all := true
		for _, r := range w {
			all = all && r[0]*a.Data[i]+r[1]*a.Data[i+1] <= 0
		}
		if all {
			dead++
		}
	}
	p := float64(dead) / float64(len(a.Data)/2)
	t.Logf("%d draws, fraction %.3f", len(a.Data)/2, p)
	if math.Abs(p-0.764) > 0.05 {
		t.Errorf("fraction of draws where every feature is 0: %.3f, want 0.764 ± 0.05", p)
	}
}

// Probe 57 A1's other half: where the gradient is NaN though the energy
// is finite (torch.sqrt((h ** 2).sum(1)) at h = 0, NaN in PyTorch too),
// energy --grad said the model was undefined there, MALA and HMC
// rejected every proposal there without a word, ULA said the energy was
// NaN, and sample advised --starts. Each now says what it is.
func TestUndefinedGradientSaid(t *testing.T) {
	model := pinnedModel(t, "where_sqrt_dyn")
	inTempDir(t)
	npy.WriteFile("p.npy", &npy.Array{Shape: []int{1, 2}, Data: []float64{-1, 0.3}}, npy.Float64)
	npy.WriteFile("st.npy", &npy.Array{Shape: []int{1, 2}, Data: []float64{1.5, 0}}, npy.Float64)
	// Written as it is since round 98 A1, the note saying what it is.
	if _, stderr, code := runCLI("energy", "--model", model, "--points", "p.npy", "--grad", "g.npy"); code != 0 || !strings.Contains(stderr, "the gradient, where the energy is finite, at 1 of 1 points (the first: point 1, counting from 1) is NaN: the model's gradient is not defined there though its energy is") {
		t.Errorf("energy --grad: exit %d, %s", code, stderr)
	}
	for _, s := range []string{"mala", "hmc"} {
		_, stderr, code := runCLI("sample", "--model", model, "--sampler", s, "--starts", "st.npy", "--chains", "8", "--steps", "100", "--out", s+".npy")
		if code != 0 || !strings.Contains(stderr, "proposals reached points where the energy of --model "+model+" is finite but its gradient is NaN or infinite, and were rejected") {
			t.Errorf("%s: exit %d, %s", s, code, stderr)
		}
	}
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "mala", "--chains", "16", "--steps", "10", "--out", "n.npy")
	if code == 0 || !strings.Contains(stderr, "though its energy is") || strings.Contains(stderr, "give --starts") {
		t.Errorf("normal starts: exit %d, %s; want a refusal without --starts advice", code, stderr)
	}
	_, stderr, code = runCLI("sample", "--model", model, "--sampler", "ula", "--starts", "st.npy", "--chains", "16", "--steps", "200", "--out", "u.npy")
	if code == 0 || !strings.Contains(stderr, "but its gradient is NaN or infinite; no draws were written") {
		t.Errorf("ula: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat("u.npy"); err == nil {
		t.Error("ula wrote its draws")
	}
}

// Probe 57 A5: the flow pair sample --flow-out writes could not drive
// NeuTra (its density graph had no z = T⁻¹(x)), and the advice named a
// checkpoint that did not exist; convert of such a graph advised
// --output, which convert has not. The pair now drives NeuTra, and
// convert says what it converts.
func TestFlowOutDrivesNeuTra(t *testing.T) {
	model := pinnedModel(t, "norm_relu_dyn")
	inTempDir(t)
	if _, stderr, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--chains", "16", "--steps", "50", "--warmup", "50", "--flow-out", "fo", "--out", "a.npy"); code != 0 {
		t.Fatalf("flowmc --flow-out: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", model, "--sampler", "neutra", "--flow", "fo/flow_sample.onnx", "--flow-density", "fo/flow_density.onnx", "--chains", "16", "--steps", "20", "--out", "b.npy"); code != 0 {
		t.Errorf("neutra with the pair: exit %d, %s", code, stderr)
	}
	wantErr(t, "fo/flow_sample.onnx: the graph has 2 outputs (x, log_density): convert turns an energy graph of one output, an MLP, into a checkpoint", "convert", "fo/flow_sample.onnx", "ck")
	// Probe 58 B3: the folder itself as --flow.
	wantErr(t, "--flow fo is a folder of a flow's two graphs (as sample --flow-out writes): give them as --flow fo/flow_sample.onnx --flow-density fo/flow_density.onnx", "sample", "--model", model, "--sampler", "neutra", "--flow", "fo", "--chains", "4", "--steps", "5", "--out", "c.npy")
}

// Probe 57 B2: a sample run accepted at its start was refused on
// resuming under the same ulimit -v (the limit moves between identical
// processes), advising fewer chains, which --resume refuses. A run is
// held to the limit it was accepted under (recorded in its checkpoint):
// chains needing 64 MiB more than the limit now are refused, and
// accepted where the run records a limit that fits them (within the
// drift measured, sysmem.MaxDrift).
func TestSampleHoldsTheAcceptedLimit(t *testing.T) {
	f, m := convSampleRun(t, 64)
	limit := memoryLimit(maxWorkBytes)
	total, _ := sysmem.Total()
	if !(total/2 > limit+64<<20) {
		t.Skipf("the limit %s is half the machine's memory already: no recorded limit above it is plausible", sysmem.Bytes(limit))
	}
	f.chains = int((limit + 64<<20) / (f.memoryNeed(m) / 64))
	if err := f.checkMemory(m); err == nil {
		t.Fatalf("--chains %d: accepted, want a refusal", f.chains)
	}
	f.accepted = sysmem.Accept(f.memoryNeed(m))
	if err := f.checkMemory(m); err != nil {
		t.Errorf("--chains %d, a limit that fits them recorded: %v", f.chains, err)
	}
}

// Probe 57 B3: reproduce rerun right after a SIGKILL skipped a run whose
// dying train process still held its lock, and its summary then blamed a
// kill ("incomplete: stopped (killed, …)"). The summary says it was
// skipped for another process, which has stopped since.
func TestReproduceSkippedRunSummary(t *testing.T) {
	r := &reproRun{experiment: "two-modes", algorithm: algorithms.FlowMC, dir: t.TempDir(), state: runIncomplete,
		err: "stopped (killed, or its time ran out) at its last checkpoint, iteration 19 of 60", outcome: outcome{outcomeSkipped, "skipped: another flowebm process is training in this folder"}}
	got := strings.Join(failedList([]*reproRun{r}), "")
	if want := "two-modes-flowmc (skipped, as another process was training it, which has stopped since; incomplete: stopped (killed"; !strings.Contains(got, want) {
		t.Errorf("%s, want %q", got, want)
	}
	r.state = runInProgress
	if got := strings.Join(failedList([]*reproRun{r}), ""); strings.Contains(got, "has stopped since") {
		t.Errorf("still in progress: %s", got)
	}
}

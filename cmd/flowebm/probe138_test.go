package main

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 138 A4: energy refused a several-array .npz whose first member,
// read for want of --key, is a 1-D array of the wrong length, without
// naming that member or --key (as it names them for other shapes).
func TestEnergyNamesMemberOfRefusedVector(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "pz.npz")
	err := npz.WriteFile(pts, map[string]*npy.Array{
		"a": {Shape: []int{3}, Data: make([]float64, 3)},
		"b": {Shape: []int{2, 2}, Data: []float64{1, 1, 1, 1}},
	}, npy.Float64)
	if err != nil {
		t.Fatal(err)
	}
	fx := "../../io/onnx/testdata/torch/toy_f64.onnx"
	_, stderr, code := runCLI("energy", "--model", fx, "--points", pts)
	if code == 0 || !strings.Contains(stderr, `read "a", the first (--key names another)`) || !strings.Contains(stderr, "a 1-D array of 3 values") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 138 A1: HMC on a mixture of modes at ±3, acceptance 0.99, the
// chains crossing between the modes 1-6 times in 300 draws (lag-1 0.65
// in dimension 0, from the crossings), was told "the steps are small:
// raise --step" (R-hat 1.298 → 1.283 → 1.190 as followed; flowmc 1.000).
// Chains that are not slow where R-hat is largest, their locations apart,
// are told of modes apart first; slow chains still to raise --step.
func TestHighAcceptanceChainsNotSlow(t *testing.T) {
	f := sampleFlags{sampler: "hmc", step: 0.3, leapfrog: 7}
	crossing := mixing{rho1: []float64{0.65, -0.48}, sd: []float64{2.9, 1}, rhat: []float64{1.298, 1.001}, bulk: []float64{1.3, 1.001}, worst: 1.298}
	if got := f.notMixedAdvice(checkpoint.Models{}, 0.99, crossing); strings.Contains(got, "raise --step") || !strings.Contains(got, "in dimension 0, where R-hat is largest, the chains are not slow (lag-1 autocorrelation 0.65)") || !strings.Contains(got, "--sampler flowmc") {
		t.Errorf("crossing rarely between modes: %q", got)
	}
	slow := mixing{rho1: []float64{0.99, 0.99}, sd: []float64{0.3, 0.3}, rhat: []float64{3.4, 3.1}, bulk: []float64{3.4, 3.1}, worst: 3.4}
	f.step = 0.01
	if got := f.notMixedAdvice(checkpoint.Models{}, 1, slow); !strings.Contains(got, "raise --step (0.01") {
		t.Errorf("small steps: %q", got)
	}
}

// Round 138 A2, A3: HMC's modes-apart advice named --sampler flowmc for a
// 1-D model, which flowmc's own flow refuses (the other notes name a flow
// of one's own); the flipping-draws advice told to check that diagnose's
// ess_bulk rises, where draws that flip hold it at its cap already.
func TestHMCAdviceForOneDimensionAndFlips(t *testing.T) {
	one := checkpoint.Models{EBM: &graph.EBM{Net: dimNet{d: 1}}}
	f := sampleFlags{sampler: "hmc", step: 0.1, leapfrog: 10}
	apart := mixing{rho1: []float64{-0.66}, sd: []float64{2}, rhat: []float64{1.64}, bulk: []float64{1.64}, worst: 1.64}
	if got := f.hmcResonance(one, 0.99, apart); !strings.Contains(got, "the chains sit apart in dimension 0") || !strings.Contains(got, "a flow of your own (--flow; flowmc's own RealNVP needs d ≥ 2)") {
		t.Errorf("d = 1, modes apart: %q", got)
	}
	flipping := mixing{rho1: []float64{-0.98}, sd: []float64{1}, rhat: []float64{1.367}, bulk: []float64{1.0}, worst: 1.367}
	got := f.hmcResonance(checkpoint.Models{}, 1, flipping)
	if !strings.Contains(got, "flip back and forth") || !strings.Contains(got, "R-hat falls and its ess_tail rises") || strings.Contains(got, "(flowebm diagnose's ess_bulk rises)") {
		t.Errorf("flipping: %q", got)
	}
}

// Round 138 B2: a finished run whose config.json alone was edited had
// every model reader add "no command uses a model whose files no
// checkpoint vouches for … else train the run again" after the way on
// that works (the checkpoint folder itself, whose files are whole).
func TestConfigEditedNoFalseTail(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	editJSON(t, filepath.Join(run, "config.json"), func(c map[string]any) { c["train"].(map[string]any)["iterations"] = 200 })
	_, stderr, code := runCLI("sample", "--model", run, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"))
	if code == 0 || !strings.Contains(stderr, "takes the checkpoint folder itself") || strings.Contains(stderr, "train the run again") {
		t.Errorf("sample: exit %d, %s", code, stderr)
	}
}

// Round 138 B3: a finished run's checkpoint/run-config.json edited (its
// COMPLETE written again): sample refused the run folder ("no command uses
// a model whose files no checkpoint vouches for") and used the checkpoint
// folder itself unsaid. Both use the models, whose files are the run's,
// with a note naming the edit.
func TestEditedRecordSameVerdict(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	ck := filepath.Join(run, "checkpoint")
	editJSON(t, filepath.Join(ck, "run-config.json"), func(c map[string]any) { c["seed"] = 2 })
	if err := checkpoint.WriteManifest(ck); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{run, ck} {
		_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"), "--force")
		if code != 0 || !strings.Contains(stderr, `run-config.json: field "seed" is 2, but the run's config.json and metrics.json hold 1`) || !strings.Contains(stderr, "are used here: only train --resume") {
			t.Errorf("sample --model %s: exit %d, %s", model, code, stderr)
		}
	}
}

// Round 136 A5: every chain started in one mode's zone, a mode far away
// got no draw, and its weight 0 was printed beside R-hat 1.004 without a
// caveat (R-hat cannot see a mode no chain reached).
func TestUnreachedModeCaveat(t *testing.T) {
	const chains, steps = 4, 10
	draws := make([]float64, chains*steps*2)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < len(draws); i += 2 {
		draws[i], draws[i+1] = -8+rng.NormFloat64(), rng.NormFloat64()
	}
	centres := [][]float64{{-8, 0}, {8, 0}}
	var b strings.Builder
	f := sampleFlags{modes: "m.npy", chains: chains, steps: steps}
	if err := f.printModeWeights(&b, draws, 2, centres, 1.004, ""); err != nil || !strings.Contains(b.String(), "mode 2 got no draw, and every chain's first draw lay in mode 1's zone") {
		t.Errorf("%v: %s", err, b.String())
	}
	for i := range steps { // the last chain in the other mode: both reached
		draws[(3*steps+i)*2] += 16
	}
	b.Reset()
	if err := f.printModeWeights(&b, draws, 2, centres, 1.004, ""); err != nil || strings.Contains(b.String(), "got no draw") {
		t.Errorf("%v: %s", err, b.String())
	}
}

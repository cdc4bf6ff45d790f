package main

import (
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

package algorithms

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/gonum/mat"
)

// EstimateLogZ on an unnormalised N(0, I₂)·e^c with a wider Gaussian
// proposal recovers c within 4.5 of its own standard errors.
func TestEstimateLogZ(t *testing.T) {
	const c = 2.5
	logp := func(x mat.Matrix, out []float64) error {
		r, _ := x.Dims()
		for i := 0; i < r; i++ {
			a, b := x.At(i, 0), x.At(i, 1)
			out[i] = c - (a*a+b*b)/2 - math.Log(2*math.Pi)
		}
		return nil
	}
	q, err := samplers.NewNormal([]float64{0, 0}, mat.NewSymDense(2, []float64{2.25, 0, 0, 2.25}))
	if err != nil {
		t.Fatal(err)
	}
	est, err := EstimateLogZ(logp, q, rand.New(rand.NewPCG(1, 2)), 20000)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(est.LogZ-c) > 4.5*est.SE {
		t.Errorf("log Z %v ± %v, want %v", est.LogZ, est.SE, c)
	}
	// ESS fraction for N(0,1) target, N(0, s²) proposal in d dims:
	// (s²/√(2s²−1))^(−d) = (2.25/√3.5)^(−2) ≈ 0.69.
	if math.Abs(est.ESS-0.69) > 0.05 {
		t.Errorf("importance ESS fraction %v, want about 0.69", est.ESS)
	}
}

// SampleChains leaves training untouched, and at initialisation (E ≡ 0,
// flow = identity, bank drawn from ρ) flowMC's cycles start with an i-SIR
// move from the exact law (acceptance 7/8), so 40 cycles of 32 chains give
// R-hat near 1 (bound 1.1, the usual convergence threshold; its sampling
// spread here is about 0.01).
func TestSampleChainsAtInitMix(t *testing.T) {
	r := smallRun(t, FlowMC, 10, t.TempDir())
	bank := mat.DenseCopyOf(r.Trainer.Bank)
	step := r.Trainer.stepSize()
	draws, err := r.Trainer.SampleChains(rand.New(rand.NewPCG(3, 4)), 32, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(draws) != 32*40*2 {
		t.Fatalf("%d draws", len(draws))
	}
	if !mat.Equal(bank, r.Trainer.Bank) || step != r.Trainer.stepSize() {
		t.Error("SampleChains changed the bank or the step size")
	}
	sum, err := diagnostics.Summarize(draws, 32, 40, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sum {
		if s.RHat > 1.1 || s.RHatClassic > 1.1 {
			t.Errorf("dimension %d: R-hat %v (classic %v) at initialisation, want ≤ 1.1", s.Dim, s.RHat, s.RHatClassic)
		}
	}
	ev, err := r.Evaluate(IterStats{})
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(ev.MaxRHat) || math.IsNaN(ev.MaxRHatClassic) {
		t.Error("no R-hat at iteration 0")
	}
	// At initialisation the EBM is ρ, so log Z = 0 exactly and the flow
	// (= ρ) is a perfect proposal.
	if math.Abs(ev.LogZ.LogZ) > 1e-4 || ev.LogZ.ESS < 0.999 {
		t.Errorf("log Z %v, ESS %v at initialisation, want 0 and 1", ev.LogZ.LogZ, ev.LogZ.ESS)
	}
}

package main

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/checkpoint"
)

// Round 140 A1: HMC on one Gaussian mode, one chain started far (a
// transient, named by its note), was told of modes apart that "larger
// steps do not join", where the draws after the transient had R-hat 1.11
// from small steps (lag-1 0.89) and --step 0.3 gave 1.009. R-hat's advice
// reads the draws after the transient: where they mixed, it says to drop
// the early draws; where not, it gives their own advice, and lag-1 0.89
// is slow, with raising --step named first.
func TestAdviceAfterTransient(t *testing.T) {
	const chains, steps, d, cut = 4, 400, 1, 30
	rng := rand.New(rand.NewPCG(11, 12))
	draws := make([]float64, chains*steps*d)
	for i := range draws {
		draws[i] = rng.NormFloat64()
	}
	for i := range cut { // chain 2 comes down from 40
		draws[2*steps+i] = 40 * float64(cut-i) / cut
	}
	f := sampleFlags{sampler: "hmc", step: 0.5, leapfrog: 4, chains: chains, steps: steps, cutAt: cut}
	got := f.afterTransient(checkpoint.Models{}, 0.9, draws, d, "the chains sit apart")
	if !strings.Contains(got, "without the draws before draw 30, R-hat is 1.0") || !strings.Contains(got, "drop them (NumPy: x[:, 30:])") || strings.Contains(got, "sit apart") {
		t.Errorf("mixed after the transient: %q", got)
	}
	slow := mixing{rho1: []float64{0.89}, sd: []float64{1}, rhat: []float64{1.11}, bulk: []float64{1.11}, worst: 1.11}
	f.step = 0.1
	if got := f.notMixedAdvice(checkpoint.Models{}, 1, slow); !strings.Contains(got, "the chains move slowly (lag-1 autocorrelation 0.89)") || !strings.Contains(got, "raise --step (0.1") || !strings.Contains(got, "if they sit in modes apart") {
		t.Errorf("lag-1 0.89: %q", got)
	}
}

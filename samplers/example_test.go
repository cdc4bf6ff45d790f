package samplers_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/gonum/mat"
)

// flowMC on the paper's two-mode example: every chain starts in the 1/3
// mode; i-SIR global moves from a broad proposal let them reach the 2:1
// split (standard error 0.015 with 1,000 chains), and the rank-normalised
// R-hat of 400 recorded draws per chain is near 1.
func ExampleFlowMC() {
	target, _ := samplers.NewMixture([]float64{1, 2}, [][]float64{{-1.5, -1.5}, {1.5, 1.5}}, []float64{math.Sqrt(0.05), math.Sqrt(0.1)})
	proposal, _ := samplers.NewNormal([]float64{0, 0}, mat.NewSymDense(2, []float64{4, 0, 0, 4}))
	rng := rand.New(rand.NewPCG(7, 7))

	const chains = 1000
	x := mat.NewDense(chains, 2, nil)
	for i := 0; i < chains; i++ {
		x.SetRow(i, []float64{-1.5, -1.5})
	}
	s := samplers.NewState(x)
	k := &samplers.FlowMC{
		Global: &samplers.ISIR{Target: target, Proposal: proposal, Particles: 32}, GlobalSteps: 1,
		Local: &samplers.MALA{Target: target, StepSize: 0.01}, LocalSteps: 4, Stacked: true,
	}
	store, _ := samplers.NewStore(chains, 2, 400, 1)
	for step := 0; step < 450; step++ {
		if _, err := k.Step(rng, s); err != nil {
			panic(err)
		}
		if step >= 50 {
			store.Record(s.X)
		}
	}
	w := diagnostics.ModeWeights(s.X, target.Means)
	fmt.Printf("top-right weight %.2f (truth 0.67)\n", w[1])
	fmt.Printf("rank-normalised R-hat %.3f\n", diagnostics.RHat(store.Chains(0)))
	// Output:
	// top-right weight 0.68 (truth 0.67)
	// rank-normalised R-hat 1.003
}

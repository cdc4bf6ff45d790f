package samplers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// FlowMC is the flowMC sampler (paper Alg. 5): cycles of GlobalSteps global
// moves (an *ISIR or *IMH with the flow as proposal) followed by LocalSteps
// local moves (a *MALA), optionally adapting the flow on the states each
// cycle visited.
//
// With Stacked, one Step is a whole cycle (App. C's "stacked": k global and
// n local steps count as one MCMC step); otherwise one Step is the next
// single move of the cycle, so that 128 steps of "1 global and 127 local"
// are exactly one cycle.
type FlowMC struct {
	Global      Kernel
	Local       Kernel
	GlobalSteps int
	LocalSteps  int
	Stacked     bool
	// Adapt, if set, is called after every completed cycle with the states
	// visited during it (one row per chain and sub-step); it typically takes
	// a maximum-likelihood step of the flow (Alg. 5 step 3). The proposal
	// density cache is dropped afterwards.
	Adapt func(visited *mat.Dense) error

	pos     int
	visited []float64
}

// Reset restarts the cycle at its first move.
func (k *FlowMC) Reset() { k.pos, k.visited = 0, k.visited[:0] }

func (k *FlowMC) cycleLen() int { return k.GlobalSteps + k.LocalSteps }

// Step advances by one move, or by one cycle if Stacked.
func (k *FlowMC) Step(rng *rand.Rand, s *State) (Stats, error) {
	if k.GlobalSteps < 0 || k.LocalSteps < 0 || k.cycleLen() == 0 {
		return noStats(), fmt.Errorf("samplers: flowMC needs non-negative step counts, not both zero (have %d global, %d local)", k.GlobalSteps, k.LocalSteps)
	}
	if (k.GlobalSteps > 0 && k.Global == nil) || (k.LocalSteps > 0 && k.Local == nil) {
		return noStats(), fmt.Errorf("samplers: flowMC is missing its global or local kernel")
	}
	if !k.Stacked {
		return k.move(rng, s)
	}
	var sum Stats
	var nl, ng int
	last := noStats()
	for i := 0; i < k.cycleLen(); i++ {
		st, err := k.move(rng, s)
		if err != nil {
			return noStats(), err
		}
		if !math.IsNaN(st.Local) {
			sum.Local += st.Local
			nl++
		}
		if !math.IsNaN(st.Global) {
			sum.Global += st.Global
			ng++
		}
		if !math.IsNaN(st.StepSize) {
			last.StepSize = st.StepSize
		}
		last.GradUndefined += st.GradUndefined
	}
	last.Local, last.Global = ratio(sum.Local, nl), ratio(sum.Global, ng)
	return last, nil
}

func ratio(s float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

func (k *FlowMC) move(rng *rand.Rand, s *State) (Stats, error) {
	kern := k.Local
	if k.pos < k.GlobalSteps {
		kern = k.Global
	}
	st, err := kern.Step(rng, s)
	if err != nil {
		return noStats(), err
	}
	if k.Adapt != nil {
		k.visited = append(k.visited, s.X.RawMatrix().Data[:s.Chains()*s.Dim()]...)
	}
	k.pos++
	if k.pos == k.cycleLen() {
		k.pos = 0
		if k.Adapt != nil {
			v := mat.NewDense(len(k.visited)/s.Dim(), s.Dim(), k.visited)
			if err := k.Adapt(v); err != nil {
				return noStats(), err
			}
			k.visited = k.visited[:0]
			s.InvalidateProposal()
		}
	}
	return st, nil
}

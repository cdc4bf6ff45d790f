package algorithms

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/samplers"
)

// AdaptiveFlowMC samples any target with flowMC whose flow is trained on
// the chains' own states while they run (paper App. A, Alg. 5; what
// flowMC does for a target of one's own): a training phase of cycles of
// i-SIR global moves proposed by the flow and MALA local moves, each
// cycle followed by maximum-likelihood steps of the flow on the states it
// visited, then a production phase with the flow and the MALA step size
// frozen, whose draws are kept. It needs no data and no pretrained flow:
// a flow at the identity over a base that covers the target will do.
// Zero fields mean the defaults.
type AdaptiveFlowMC struct {
	Target samplers.Target
	// Flow proposes the global moves; it is trained in place.
	Flow *graph.Flow
	// TrainingCycles is the length of the training phase (default 100).
	TrainingCycles int
	// GlobalSteps i-SIR moves with Particles particles (defaults 1, 32)
	// and LocalSteps MALA moves of StepSize (defaults 4, 0.01; adapted
	// during training to an acceptance of 0.75) make a cycle.
	GlobalSteps, LocalSteps, Particles int
	StepSize                           float64
	// FlowSteps maximum-likelihood steps of Optim (default Adam, learning
	// rate 1e-3) follow each training cycle (default 1).
	FlowSteps int
	Optim     OptimConfig
}

// Sample trains the flow from the chains' starts x (m × d, moved in
// place), then returns draws production cycles of every chain, laid out
// chains × draws × d, with the production phase's mean local and global
// acceptance.
func (a AdaptiveFlowMC) Sample(rng *rand.Rand, x *mat.Dense, draws int) (out []float64, local, global float64, err error) {
	if a.Target == nil || a.Flow == nil {
		return nil, 0, 0, fmt.Errorf("algorithms: adaptive flowMC needs a target and a flow")
	}
	if _, d := x.Dims(); d != a.Target.Dim() || d != a.Flow.Dim() {
		return nil, 0, 0, fmt.Errorf("algorithms: chains of dimension %d, target %d, flow %d", d, a.Target.Dim(), a.Flow.Dim())
	}
	opt, err := a.Optim.New(a.Flow.Params.Count())
	if err != nil {
		return nil, 0, 0, err
	}
	mala := &samplers.MALA{Target: a.Target, StepSize: cmp.Or(a.StepSize, 0.01)}
	k := &samplers.FlowMC{
		Global:      &samplers.ISIR{Target: a.Target, Proposal: a.Flow, Particles: cmp.Or(a.Particles, 32)},
		Local:       mala,
		GlobalSteps: cmp.Or(a.GlobalSteps, 1), LocalSteps: cmp.Or(a.LocalSteps, 4),
		Stacked: true, // one step is one cycle
		Adapt:   a.flowStep(opt),
	}
	return samplers.RunChains(rng, k, x, cmp.Or(a.TrainingCycles, 100), draws, func() {
		k.Adapt, mala.Frozen = nil, true
	})
}

// flowStep is the maximum-likelihood update of the flow on the states a
// cycle visited.
func (a AdaptiveFlowMC) flowStep(opt Optimizer) func(*mat.Dense) error {
	theta := a.Flow.Params.Flatten(nil)
	grad := make([]float64, len(theta))
	return func(visited *mat.Dense) error {
		for range cmp.Or(a.FlowSteps, 1) {
			ll, err := a.Flow.MLGrad(visited, grad)
			if err != nil {
				return err
			}
			if math.IsNaN(ll) || hasNaN(grad) {
				return fmt.Errorf("algorithms: adaptive flowMC: the flow's log-likelihood of the visited states is %v: %w", ll, ErrDiverged)
			}
			negate(grad)
			opt.Step(theta, grad)
			a.Flow.Params.SetFlat(theta)
		}
		return nil
	}
}

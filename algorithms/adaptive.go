package algorithms

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
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
	// Every ReportEvery training cycles (default 10) make a window: Report,
	// if set, gets the window's means, and the training phase stops early
	// once the window's global acceptance has not risen by more than
	// MinImprovement (default 0.01) above its best for Patience windows in
	// a row (default 5; negative: never stop early).
	ReportEvery, Patience int
	MinImprovement        float64
	Report                func(AdaptiveReport)
}

// AdaptiveReport is the progress of the training phase over one window of
// cycles.
type AdaptiveReport struct {
	Cycle, Cycles int // the last cycle of the window, of the phase's length
	// Global and Local are the window's mean acceptances (NaN where no
	// such move ran); LogLikelihood is the flow's mean log-likelihood of
	// the states it was trained on.
	Global, Local, LogLikelihood float64
	// RHat is the largest rank-normalised split R-hat over dimensions of
	// the chains' states in the window (NaN if it cannot be computed).
	RHat float64
	// Stopped says the training phase ends here, before Cycles, because
	// global acceptance stopped improving.
	Stopped bool
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
	}
	var ll float64
	k.Adapt = a.flowStep(opt, &ll)
	if err := a.train(rng, k, x, &ll); err != nil {
		return nil, 0, 0, err
	}
	k.Adapt, mala.Frozen = nil, true
	return samplers.RunChains(rng, k, x, 0, draws, nil)
}

// train runs the training phase on the chains x, window by window.
func (a AdaptiveFlowMC) train(rng *rand.Rand, k samplers.Kernel, x *mat.Dense, ll *float64) error {
	m, d := x.Dims()
	cycles, every := cmp.Or(a.TrainingCycles, 100), cmp.Or(a.ReportEvery, 10)
	if every < 1 || a.MinImprovement < 0 || math.IsNaN(a.MinImprovement) {
		return fmt.Errorf("algorithms: adaptive flowMC: ReportEvery %d (want ≥ 1), MinImprovement %v (want ≥ 0)", every, a.MinImprovement)
	}
	st := samplers.NewState(x)
	win := newWindow(m, d, every)
	best, stale := math.Inf(-1), 0
	for c := 1; c <= cycles; c++ {
		s, err := k.Step(rng, st)
		if err != nil {
			return fmt.Errorf("training cycle %d: %w", c, err)
		}
		win.add(st.X, s, *ll)
		if c%every != 0 && c != cycles {
			continue
		}
		r := win.report(c, cycles)
		if a.Patience >= 0 {
			if r.Global > best+cmp.Or(a.MinImprovement, 0.01) {
				best, stale = r.Global, 0
			} else if stale++; stale >= cmp.Or(a.Patience, 5) && c < cycles {
				r.Stopped = true
			}
		}
		if a.Report != nil {
			a.Report(r)
		}
		if r.Stopped {
			break
		}
		win.reset()
	}
	return nil
}

// window accumulates one window of training cycles.
type window struct {
	states            [][][]float64 // per dimension, per chain, the cycles' values
	global, local, ll stats1
	m, d, n, cap      int
}

// stats1 is a running mean that skips NaNs.
type stats1 struct{ sum, n float64 }

func (s *stats1) add(v float64) {
	if !math.IsNaN(v) {
		s.sum, s.n = s.sum+v, s.n+1
	}
}

func (s stats1) mean() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.sum / s.n
}

func newWindow(m, d, n int) *window {
	w := &window{m: m, d: d, states: make([][][]float64, d)}
	for j := range w.states {
		w.states[j] = make([][]float64, m)
		for i := range w.states[j] {
			w.states[j][i] = make([]float64, 0, n)
		}
	}
	return w
}

func (w *window) add(x *mat.Dense, s samplers.Stats, ll float64) {
	for i := 0; i < w.m; i++ {
		for j := 0; j < w.d; j++ {
			w.states[j][i] = append(w.states[j][i], x.At(i, j))
		}
	}
	w.global.add(s.Global)
	w.local.add(s.Local)
	w.ll.add(ll)
	w.n++
}

func (w *window) report(c, cycles int) AdaptiveReport {
	r := AdaptiveReport{Cycle: c, Cycles: cycles, Global: w.global.mean(), Local: w.local.mean(), LogLikelihood: w.ll.mean(), RHat: math.NaN()}
	for j := range w.states {
		if v := diagnostics.RHat(w.states[j]); !math.IsNaN(v) && !(v <= r.RHat) {
			r.RHat = v
		}
	}
	return r
}

func (w *window) reset() {
	for j := range w.states {
		for i := range w.states[j] {
			w.states[j][i] = w.states[j][i][:0]
		}
	}
	w.global, w.local, w.ll, w.n = stats1{}, stats1{}, stats1{}, 0
}

// flowStep is the maximum-likelihood update of the flow on the states a
// cycle visited.
func (a AdaptiveFlowMC) flowStep(opt Optimizer, last *float64) func(*mat.Dense) error {
	theta := a.Flow.Params.Flatten(nil)
	grad := make([]float64, len(theta))
	return func(visited *mat.Dense) error {
		for range cmp.Or(a.FlowSteps, 1) {
			ll, err := a.Flow.MLGrad(visited, grad)
			if err != nil {
				return err
			}
			*last = ll
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

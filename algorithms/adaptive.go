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
	// a row (default 5; negative: never stop early). The best counts from
	// the lowest window so far: chains that start where the flow proposes
	// well accept its moves more often than once they have moved, and
	// that transient is not the flow's progress to beat.
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
// acceptance. Start is the same a cycle at a time.
func (a AdaptiveFlowMC) Sample(rng *rand.Rand, x *mat.Dense, draws int) (out []float64, local, global float64, err error) {
	r, err := a.Start(x, draws)
	if err != nil {
		return nil, 0, 0, err
	}
	for !r.Finished() {
		if err := r.Step(rng); err != nil {
			return nil, 0, 0, err
		}
	}
	out, local, global = r.Result()
	return out, local, global, nil
}

// AdaptiveRun is a run of AdaptiveFlowMC a cycle at a time, so that a
// caller can show progress and checkpoint between cycles. Its exported
// fields (with the flow's parameters and the optimiser's state) are the
// whole of its progress: restore them into a run made by the same Start
// to continue it bit for bit.
type AdaptiveRun struct {
	// Training is the training phase's state: Cycle cycles done, the
	// lowest windowed global acceptance (+Inf before the first window), the
	// best since then and the windows since it rose.
	Training  *samplers.State
	Cycle     int
	Low, Best float64
	Stale     int
	Optimizer Optimizer
	MALA      *samplers.MALA
	// Production is the production phase (nil during training).
	Production *samplers.ChainRun

	a      AdaptiveFlowMC
	kernel *samplers.FlowMC
	win    *window
	ll     float64
	draws  int
}

// Start prepares the run from the chains' starts x (m × d, moved in
// place) for draws production cycles.
func (a AdaptiveFlowMC) Start(x *mat.Dense, draws int) (*AdaptiveRun, error) {
	if a.Target == nil || a.Flow == nil {
		return nil, fmt.Errorf("algorithms: adaptive flowMC needs a target and a flow")
	}
	m, d := x.Dims()
	if d != a.Target.Dim() || d != a.Flow.Dim() {
		return nil, fmt.Errorf("algorithms: chains of dimension %d, target %d, flow %d", d, a.Target.Dim(), a.Flow.Dim())
	}
	if every := cmp.Or(a.ReportEvery, 10); every < 1 || a.MinImprovement < 0 || math.IsNaN(a.MinImprovement) || draws < 1 {
		return nil, fmt.Errorf("algorithms: adaptive flowMC: ReportEvery %d (want ≥ 1), MinImprovement %v (want ≥ 0), %d draws (want ≥ 1)", every, a.MinImprovement, draws)
	}
	opt, err := a.Optim.New(a.Flow.Params.Count())
	if err != nil {
		return nil, err
	}
	r := &AdaptiveRun{Training: samplers.NewState(x), Low: math.Inf(1), Best: math.Inf(-1), Optimizer: opt, a: a, draws: draws,
		MALA: &samplers.MALA{Target: a.Target, StepSize: cmp.Or(a.StepSize, 0.01)}, win: newWindow(m, d, cmp.Or(a.ReportEvery, 10))}
	r.kernel = &samplers.FlowMC{
		Global:      &samplers.ISIR{Target: a.Target, Proposal: a.Flow, Particles: cmp.Or(a.Particles, 32)},
		Local:       r.MALA,
		GlobalSteps: cmp.Or(a.GlobalSteps, 1), LocalSteps: cmp.Or(a.LocalSteps, 4),
		Stacked: true, // one step is one cycle
	}
	r.kernel.Adapt = a.flowStep(opt, &r.ll)
	return r, nil
}

// TrainingCycles is the training phase's length (at most: it may stop
// early).
func (r *AdaptiveRun) TrainingCycles() int { return cmp.Or(r.a.TrainingCycles, 100) }

// WindowCycles is the length of a window of training cycles.
func (r *AdaptiveRun) WindowCycles() int { return cmp.Or(r.a.ReportEvery, 10) }

// Patience is how many windows without progress end training (≤ 0:
// never).
func (r *AdaptiveRun) Patience() int {
	if r.a.Patience < 0 {
		return 0
	}
	return cmp.Or(r.a.Patience, 5)
}

// Finished says whether the production phase has run all its cycles.
func (r *AdaptiveRun) Finished() bool { return r.Production != nil && r.Production.Finished() }

// Step runs the next cycle: of training (with a report at the end of each
// window, and the switch to production when training ends), or of
// production.
func (r *AdaptiveRun) Step(rng *rand.Rand) error {
	if r.Production != nil {
		return r.Production.Step(rng)
	}
	cycles, every := cmp.Or(r.a.TrainingCycles, 100), cmp.Or(r.a.ReportEvery, 10)
	s, err := r.kernel.Step(rng, r.Training)
	if err != nil {
		return fmt.Errorf("training cycle %d: %w", r.Cycle+1, err)
	}
	r.Cycle++
	r.win.add(r.Training.X, s, r.ll)
	if r.Cycle%every != 0 && r.Cycle != cycles {
		return nil
	}
	rep := r.win.report(r.Cycle, cycles)
	if r.a.Patience >= 0 {
		rep.Stopped = r.stalled(rep.Global) && r.Cycle < cycles
	}
	if r.a.Report != nil {
		r.a.Report(rep)
	}
	r.win.reset()
	if rep.Stopped || r.Cycle == cycles {
		return r.produce()
	}
	return nil
}

// stalled counts the window of global acceptance g and says whether
// training has stopped improving: g has not risen by MinImprovement above
// the best window for Patience windows. A window below every earlier one
// restarts the count from it (probe 67 A4: the first window, of chains
// still where the flow proposes well, accepted 0.71, the next 0.56, and
// training stopped at cycle 60 below 0.72 though it rose to 0.97).
func (r *AdaptiveRun) stalled(g float64) bool {
	switch {
	case g < r.Low:
		r.Low, r.Best, r.Stale = g, g, 0
	case g > r.Best+cmp.Or(r.a.MinImprovement, 0.01):
		r.Best, r.Stale = g, 0
	default:
		r.Stale++
	}
	return r.Stale >= cmp.Or(r.a.Patience, 5)
}

// AtWindowEnd says whether the run is between windows (or in production):
// where a checkpoint loses nothing.
func (r *AdaptiveRun) AtWindowEnd() bool { return r.Production != nil || r.win.n == 0 }

// produce freezes the flow and the step size and starts the production
// phase on the training phase's chains.
func (r *AdaptiveRun) produce() error {
	r.kernel.Adapt, r.MALA.Frozen = nil, true
	var err error
	r.Production, err = samplers.NewChainRun(r.kernel, r.Training.X, 0, r.draws, nil)
	return err
}

// StartProduction moves a run restored from a checkpoint taken in its
// production phase there (freezing the flow and the step size).
func (r *AdaptiveRun) StartProduction() error { return r.produce() }

// Result returns the production draws (chains × draws × d) and the mean
// local and global acceptance.
func (r *AdaptiveRun) Result() (draws []float64, local, global float64) { return r.Production.Result() }

// window accumulates one window of training cycles.
type window struct {
	states            [][][]float64 // per dimension, per chain, the cycles' values
	global, local, ll stats1
	m, d, n           int
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
		// The parameters are the truth (a checkpoint restores them), not a
		// copy kept here.
		theta = a.Flow.Params.Flatten(theta)
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

package algorithms

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// Two Adam steps against torch.optim.Adam's update rule written out by hand
// (defaults β = (0.9, 0.999), ε = 1e-8, bias-corrected moments): the first
// step moves each coordinate by lr·g/(|g| + ε), the second by
// lr·m̂/(√v̂ + ε).
func TestAdamMatchesHandComputedSteps(t *testing.T) {
	opt, err := OptimConfig{Name: "adam", LR: 0.1}.New(2)
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{1, -2}
	g1, g2 := []float64{0.5, -1}, []float64{0.25, 2}
	opt.Step(p, g1)
	opt.Step(p, g2)
	want := make([]float64, 2)
	for i := range want {
		m := 0.9*(0.1*g1[i]) + 0.1*g2[i]
		v := 0.999*(0.001*g1[i]*g1[i]) + 0.001*g2[i]*g2[i]
		mh, vh := m/(1-0.81), v/(1-0.999*0.999)
		step1 := 0.1 * g1[i] / (math.Abs(g1[i]) + 1e-8)
		want[i] = []float64{1, -2}[i] - step1 - 0.1*mh/(math.Sqrt(vh)+1e-8)
	}
	for i := range p {
		if math.Abs(p[i]-want[i]) > 1e-12 {
			t.Errorf("Adam p[%d] = %.15g, want %.15g", i, p[i], want[i])
		}
	}
}

func TestSGDMomentumAndDecay(t *testing.T) {
	opt, err := OptimConfig{Name: "sgd", LR: 0.5, Momentum: 0.9}.New(1)
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{0}
	opt.Step(p, []float64{1}) // buf 1, p −0.5
	opt.Step(p, []float64{1}) // buf 1.9, p −1.45
	if math.Abs(p[0]+1.45) > 1e-15 {
		t.Errorf("SGD with momentum: p = %v, want -1.45", p[0])
	}
	c := OptimConfig{LR: 0.01, Decay: 0.5, DecayEvery: 10}
	if lr := c.scheduledLR(25); math.Abs(lr-0.0025) > 1e-15 {
		t.Errorf("decayed lr after 25 steps = %v, want 0.0025", lr)
	}
	if _, err := (OptimConfig{Name: "rmsprop"}).New(1); err == nil {
		t.Error("unknown optimiser accepted")
	}
}

// The grid quadrature of an exact mixture recovers its weights; the
// misassignment between zones of the two-modes target is below 1e-6 and the
// 200² grid's quadrature error of the order of 1e-4, so 1e-3 is safe.
func TestGridWeightsOfExactTargets(t *testing.T) {
	for _, exp := range []*experiments.Experiment{experiments.TwoModes(), experiments.FourModes(), experiments.EightGaussians()} {
		g := NewGrid(exp.Box, 200)
		if err := g.Fill(exp.Target.LogDensity); err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.LogZ) > 1e-3 {
			t.Errorf("%s: normalised target has log Z = %v on the grid, want 0 ± 1e-3", exp.Name, g.LogZ)
		}
		w := g.ZoneWeights(exp.Zones(g.Points), len(exp.Weights))
		for k := range w {
			if math.Abs(w[k]-exp.Weights[k]) > 1e-3 {
				t.Errorf("%s: zone %d weight %v, want %v", exp.Name, k, w[k], exp.Weights[k])
			}
		}
	}
}

// The rings density p_r(|x|)/(2π|x|) integrates to 1 (quadrature 1e-3 on a
// 400² grid of [−5, 5]², where the outer ring's mass beyond 5 is 1e-9).
func TestRingsDensityIsNormalised(t *testing.T) {
	g := NewGrid(5, 400)
	if err := g.Fill(experiments.Rings{}.LogDensity); err != nil {
		t.Fatal(err)
	}
	if math.Abs(g.LogZ) > 1e-3 {
		t.Errorf("rings: log ∫p = %v, want 0 ± 1e-3", g.LogZ)
	}
}

func TestMedianSquaredError(t *testing.T) {
	if m := MedianSquaredError([]float64{1, 2, 3, math.NaN()}, []float64{0, 0, 0, 0}); m != 4 {
		t.Errorf("median of {1, 4, 9} = %v", m)
	}
}

// smallRun is two-modes shrunk to train in milliseconds (smallConfig).
func smallRun(t *testing.T, alg Algorithm, iters int, dir string) *Run {
	t.Helper()
	r, err := NewRun(smallConfig(t, alg, iters), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stepN(t *testing.T, r *Run, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		st, err := r.Step()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Evaluate(st); err != nil {
			t.Fatal(err)
		}
	}
}

// A run interrupted by a checkpoint and resumed ends bit for bit where an
// uninterrupted run with the same seed ends: parameters, bank, step size.
func TestResumeReproducesUninterruptedRun(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(string(alg), func(t *testing.T) {
			straight := smallRun(t, alg, 12, t.TempDir())
			stepN(t, straight, 12)

			dir := t.TempDir()
			first := smallRun(t, alg, 12, dir)
			stepN(t, first, 5)
			if err := first.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			resumed, err := Resume(dir)
			if err != nil {
				t.Fatal(err)
			}
			if resumed.Trainer.Iter != 5 || len(resumed.Evals) != 5 {
				t.Fatalf("resumed at iteration %d with %d evaluations, want 5 and 5", resumed.Trainer.Iter, len(resumed.Evals))
			}
			stepN(t, resumed, 7)

			a, b := straight.Trainer.EBM.Params.Flatten(nil), resumed.Trainer.EBM.Params.Flatten(nil)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("EBM parameter %d: %v uninterrupted, %v resumed", i, a[i], b[i])
				}
			}
			if straight.Trainer.Flow != nil {
				a, b = straight.Trainer.Flow.Params.Flatten(nil), resumed.Trainer.Flow.Params.Flatten(nil)
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("flow parameter %d differs after resume", i)
					}
				}
			}
			if straight.Trainer.Config.AverageWindow == 0 {
				t.Fatal("the defaults should average the EBM, so that resuming is tested with averaging")
			}
			a, b = averaged(t, straight), averaged(t, resumed)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("averaged EBM parameter %d: %v uninterrupted, %v resumed", i, a[i], b[i])
				}
			}
			if !mat.Equal(straight.Trainer.Bank, resumed.Trainer.Bank) {
				t.Error("persistent bank differs after resume")
			}
			ea, eb := straight.Evals[11], resumed.Evals[11]
			if ea.Stats.Loss != eb.Stats.Loss || ea.Stats.StepSize != eb.Stats.StepSize {
				t.Errorf("last evaluation differs: %+v vs %+v", ea.Stats, eb.Stats)
			}
		})
	}
}

// The negatives' and starts' weights of an evaluation pool every iteration
// since the previous one, also across a checkpoint and resume.
func TestModeWeightsPoolIterationsSinceLastEvaluation(t *testing.T) {
	straight := smallRun(t, "flowmc", 6, t.TempDir())
	exp := straight.Experiment
	neg, start := make([]float64, 2), make([]float64, 2)
	var last []float64
	for i := 0; i < 6; i++ {
		if _, err := straight.Step(); err != nil {
			t.Fatal(err)
		}
		for _, k := range exp.Zones(straight.Trainer.Negatives()) {
			neg[k]++
		}
		for _, k := range exp.Zones(straight.Trainer.Starts()) {
			start[k]++
		}
		last = exp.Weigh(straight.Trainer.Negatives())
	}
	ev, err := straight.Evaluate(IterStats{})
	if err != nil {
		t.Fatal(err)
	}
	rows := float64(straight.Trainer.Negatives().RawMatrix().Rows)
	for k := range neg {
		if want := neg[k] / (6 * rows); ev.NegWeights[k] != want {
			t.Errorf("negatives' weight %d: %v, want %v pooled over 6 iterations (last batch alone %v)", k, ev.NegWeights[k], want, last[k])
		}
		if want := start[k] / (6 * rows); ev.StartWeights[k] != want {
			t.Errorf("starts' weight %d: %v, want %v", k, ev.StartWeights[k], want)
		}
	}

	dir := t.TempDir()
	first := smallRun(t, "flowmc", 6, dir)
	for i := 0; i < 3; i++ {
		if _, err := first.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := resumed.Step(); err != nil {
			t.Fatal(err)
		}
	}
	ev2, err := resumed.Evaluate(IterStats{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range neg {
		if ev2.NegWeights[k] != ev.NegWeights[k] || ev2.StartWeights[k] != ev.StartWeights[k] {
			t.Errorf("resumed run's pooled weights %v, %v; uninterrupted %v, %v", ev2.NegWeights, ev2.StartWeights, ev.NegWeights, ev.StartWeights)
		}
	}
}

func averaged(t *testing.T, r *Run) []float64 {
	t.Helper()
	var v []float64
	if err := r.Trainer.WithAveraged(func() error { v = r.Trainer.EBM.Params.Flatten(nil); return nil }); err != nil {
		t.Fatal(err)
	}
	return v
}

// The averaged EBM is the exponential moving average of the iterates,
// computed here by hand from the parameters after each step; outside
// WithAveraged the EBM holds the current iterate.
func TestAverageWindowIsMovingAverage(t *testing.T) {
	r := smallRun(t, FlowMC, 10, t.TempDir())
	r.Trainer.Config.AverageWindow = 4
	r.Trainer.thetaAvg = r.Trainer.EBM.Params.Flatten(nil)
	want := r.Trainer.EBM.Params.Flatten(nil)
	for i := 0; i < 10; i++ {
		if _, err := r.Trainer.Step(); err != nil {
			t.Fatal(err)
		}
		cur := r.Trainer.EBM.Params.Flatten(nil)
		for j := range want {
			want[j] = 0.75*want[j] + 0.25*cur[j]
		}
	}
	cur := r.Trainer.EBM.Params.Flatten(nil)
	got := averaged(t, r)
	differs := false
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-12*(1+math.Abs(want[j])) {
			t.Fatalf("averaged parameter %d = %v, want %v", j, got[j], want[j])
		}
		differs = differs || got[j] != cur[j]
	}
	if !differs {
		t.Error("the averaged parameters equal the current ones")
	}
	after := r.Trainer.EBM.Params.Flatten(nil)
	for j := range cur {
		if after[j] != cur[j] {
			t.Fatalf("WithAveraged left parameter %d at %v, want the current %v", j, after[j], cur[j])
		}
	}
}

// Training must not leave E ≡ 0: after a few iterations the data are given
// lower energy than the persistent chains' starts in the gap between modes.
func TestTrainingLowersDataEnergy(t *testing.T) {
	r := smallRun(t, FlowMC, 30, t.TempDir())
	stepN(t, r, 30)
	pts := mat.NewDense(2, 2, []float64{1.5, 1.5, 0, 0})
	e := make([]float64, 2)
	if err := r.Trainer.EBM.Energy(pts, e); err != nil {
		t.Fatal(err)
	}
	if !(e[0] < e[1]) {
		t.Errorf("E(mode) = %v, E(gap) = %v after 30 iterations: the data should have lower energy", e[0], e[1])
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := map[string]TrainConfig{
		"algorithm":         {Algorithm: "cd", Iterations: 1},
		"iterations":        {},
		"sampler.negatives": {Iterations: 1, Sampler: SamplerConfig{Negatives: "some"}},
		"sampler.subsample": {Iterations: 1, BatchSize: 10, Sampler: SamplerConfig{Negatives: "subsample", Subsample: 3}},
		"persistent":        {Iterations: 1, BatchSize: 10, Persistent: 5},
		"start":             {Iterations: 1, Start: "zero"},
		"average_window":    {Iterations: 1, AverageWindow: -1},
		"flow_steps":        {Iterations: 1, FlowSteps: -2},
		// Values that would be ignored, refused (issue 18's probe):
		"flow_optim.lr":               {Algorithm: ULA, Iterations: 1, FlowOptim: OptimConfig{LR: -1}},
		"ebm_optim.momentum":          {Iterations: 1, EBMOptim: OptimConfig{Momentum: 0.9}},
		"flow_optim.beta1":            {Iterations: 1, FlowOptim: OptimConfig{Name: "sgd", Beta1: 0.5}},
		"sampler.subsample 4 applies": {Iterations: 1, Sampler: SamplerConfig{Subsample: 4}},
	}
	for field, c := range cases {
		_, err := c.withDefaults()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v does not name the field", field, err)
		}
	}
}

// FlowSteps makes that many maximum-likelihood steps of the flow on one
// iteration's negatives: Adam's step count says how many were taken, and
// the steps raise the flow's likelihood of those negatives (a small step
// of Adam on a fixed batch of 64 points; the flow starts at the identity,
// far from them).
func TestFlowStepsPerIteration(t *testing.T) {
	for _, k := range []int{1, 3} {
		r := smallRun(t, FlowMC, 4, t.TempDir())
		r.Trainer.Config.FlowSteps = k
		st, err := r.Step()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Trainer.optFlow.State()["t"][0]; got != float64(k) {
			t.Errorf("flow_steps %d: Adam took %v steps", k, got)
		}
		ll := make([]float64, r.Trainer.neg.RawMatrix().Rows)
		if err := r.Trainer.Flow.LogDensity(r.Trainer.neg, ll); err != nil {
			t.Fatal(err)
		}
		if after := stat.Mean(ll, nil); !(after > st.FlowLL) {
			t.Errorf("flow_steps %d: log-likelihood of the negatives %v before, %v after", k, st.FlowLL, after)
		}
	}
}

// The divergence guard stops training on a data energy beyond MaxEnergy,
// and on a loss beyond it (the negatives' energies exploding while the
// data's stay bounded), with ErrDiverged.
func TestDivergenceGuard(t *testing.T) {
	r := smallRun(t, ULA, 10, t.TempDir())
	stepN(t, r, 3)
	tr := r.Trainer
	e := make([]float64, tr.Data().RawMatrix().Rows)
	if err := tr.EBM.Energy(tr.Data(), e); err != nil {
		t.Fatal(err)
	}
	maxData := 0.0
	for _, v := range e {
		maxData = max(maxData, math.Abs(v))
	}
	if maxData == 0 {
		t.Fatal("the EBM is still zero after 3 iterations")
	}

	// Chains far out, where the piecewise-linear energy is huge: the loss
	// exceeds a limit that every data energy respects.
	far := mat.DenseCopyOf(tr.Bank)
	for i := range far.RawMatrix().Data {
		far.RawMatrix().Data[i] = 1e6
	}
	tr.Bank.Copy(far)
	tr.Config.MaxEnergy = 10 * maxData
	_, err := r.Step()
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "negatives' energies exploded") {
		t.Fatalf("negatives at 1e6: error %v, want the loss guard's ErrDiverged", err)
	}

	// A limit below every energy stops training as well.
	r = smallRun(t, ULA, 10, t.TempDir())
	stepN(t, r, 3)
	r.Trainer.Config.MaxEnergy = 1e-12
	_, err = r.Step()
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("limit 1e-12: error %v, want ErrDiverged", err)
	}
}

// An interrupted run (its context cancelled mid-run) stops between
// iterations with a checkpoint, and resuming from it reaches the same
// parameters as an uninterrupted run.
func TestInterruptedRunResumes(t *testing.T) {
	straight := smallRun(t, "flowmc", 8, t.TempDir())
	stepN(t, straight, 8)
	dir := t.TempDir()
	first := smallRun(t, "flowmc", 8, dir)
	ctx, cancel := context.WithCancel(context.Background())
	err := first.TrainContext(ctx, func(it int) {
		if it == 3 {
			cancel()
		}
	})
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "at iteration 3 of 8; checkpoint written to") {
		t.Fatalf("error %v", err)
	}
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Trainer.Iter != 3 {
		t.Fatalf("resumed at iteration %d, want 3", resumed.Trainer.Iter)
	}
	stepN(t, resumed, 5)
	a, b := straight.Trainer.EBM.Params.Flatten(nil), resumed.Trainer.EBM.Params.Flatten(nil)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("EBM parameter %d: %v uninterrupted, %v after the interruption", i, a[i], b[i])
		}
	}
}

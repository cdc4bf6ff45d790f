package training

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/gonum/mat"
)

// smallRun is two-modes shrunk to train in milliseconds (smallConfig).
func smallRun(t *testing.T, alg algorithms.Algorithm, iters int, dir string) *Run {
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
	for _, alg := range algorithms.Algorithms {
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
	ev, err := straight.Evaluate(algorithms.IterStats{})
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
	ev2, err := resumed.Evaluate(algorithms.IterStats{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range neg {
		if ev2.NegWeights[k] != ev.NegWeights[k] || ev2.StartWeights[k] != ev.StartWeights[k] {
			t.Errorf("resumed run's pooled weights %v, %v; uninterrupted %v, %v", ev2.NegWeights, ev2.StartWeights, ev.NegWeights, ev.StartWeights)
		}
	}
}

// Training must not leave E ≡ 0: after a few iterations the data are given
// lower energy than the persistent chains' starts in the gap between modes.
func TestTrainingLowersDataEnergy(t *testing.T) {
	r := smallRun(t, algorithms.FlowMC, 30, t.TempDir())
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
	cases := map[string]algorithms.TrainConfig{
		"algorithm":         {Algorithm: "cd", Iterations: 1},
		"iterations":        {},
		"sampler.negatives": {Iterations: 1, Sampler: algorithms.SamplerConfig{Negatives: "some"}},
		"sampler.subsample": {Iterations: 1, BatchSize: 10, Sampler: algorithms.SamplerConfig{Negatives: "subsample", Subsample: 3}},
		"persistent":        {Iterations: 1, BatchSize: 10, Persistent: 5},
		"persistent -1":     {Iterations: 1, Persistent: -1},
		"freeze_flow 100":   {Algorithm: algorithms.CoopFlow, Iterations: 3, FreezeFlow: 100},
		"start":             {Iterations: 1, Start: "zero"},
		"average_window":    {Iterations: 1, AverageWindow: -1},
		"flow_steps":        {Iterations: 1, FlowSteps: -2},
		// Values that would be ignored, refused (issue 18's probe):
		"flow_optim.lr":               {Algorithm: algorithms.ULA, Iterations: 1, FlowOptim: algorithms.OptimConfig{LR: -1}},
		"ebm_optim.momentum":          {Iterations: 1, EBMOptim: algorithms.OptimConfig{Momentum: 0.9}},
		"flow_optim.beta1":            {Iterations: 1, FlowOptim: algorithms.OptimConfig{Name: "sgd", Beta1: 0.5}},
		"sampler.subsample 4 applies": {Iterations: 1, Sampler: algorithms.SamplerConfig{Subsample: 4}},
	}
	for field, c := range cases {
		_, err := c.Resolved()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v does not name the field", field, err)
		}
	}
}

// The divergence guard stops training on a data energy beyond MaxEnergy,
// and on a loss beyond it (the negatives' energies exploding while the
// data's stay bounded), with algorithms.ErrDiverged.
func TestDivergenceGuard(t *testing.T) {
	r := smallRun(t, algorithms.ULA, 10, t.TempDir())
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
	if !errors.Is(err, algorithms.ErrDiverged) || !strings.Contains(err.Error(), "negatives' energies exploded") {
		t.Fatalf("negatives at 1e6: error %v, want the loss guard's algorithms.ErrDiverged", err)
	}

	// A limit below every energy stops training as well.
	r = smallRun(t, algorithms.ULA, 10, t.TempDir())
	stepN(t, r, 3)
	r.Trainer.Config.MaxEnergy = 1e-12
	_, err = r.Step()
	if !errors.Is(err, algorithms.ErrDiverged) {
		t.Fatalf("limit 1e-12: error %v, want algorithms.ErrDiverged", err)
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
	if !errors.Is(err, algorithms.ErrInterrupted) || !strings.Contains(err.Error(), "at iteration 3 of 8; checkpoint written to") {
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

// SampleChains leaves training untouched, and at initialisation (E ≡ 0,
// flow = identity, bank drawn from ρ) flowMC's cycles start with an i-SIR
// move from the exact law (acceptance 7/8), so 40 cycles of 32 chains give
// R-hat near 1 (bound 1.1, the usual convergence threshold; its sampling
// spread here is about 0.01).
func TestSampleChainsAtInitMix(t *testing.T) {
	r := smallRun(t, algorithms.FlowMC, 10, t.TempDir())
	bank := mat.DenseCopyOf(r.Trainer.Bank)
	step := r.Trainer.StepSize()
	draws, err := r.Trainer.SampleChains(rand.New(rand.NewPCG(3, 4)), 32, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(draws) != 32*40*2 {
		t.Fatalf("%d draws", len(draws))
	}
	if !mat.Equal(bank, r.Trainer.Bank) || step != r.Trainer.StepSize() {
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
	ev, err := r.Evaluate(algorithms.IterStats{})
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

// averaged are the parameters of the run's averaged EBM.
func averaged(t *testing.T, r *Run) []float64 {
	t.Helper()
	var v []float64
	if err := r.Trainer.WithAveraged(func() error { v = r.Trainer.EBM.Params.Flatten(nil); return nil }); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestResultsIndependentOfCores: a run's models split their batches into
// model.shards blocks evaluated by GOMAXPROCS workers; the same seed gives
// bit-identical parameters, bank and metrics with 1 worker and with 2 (and
// with more workers than cores), so results never depend on the machine's
// number of cores. Whole batches (shards 1) are compared too.
func TestResultsIndependentOfCores(t *testing.T) {
	for _, shards := range []int{1, 4} {
		var ref []float64
		for _, procs := range []int{1, 2, 5} {
			cfg := smallConfig(t, algorithms.FlowMC, 6)
			cfg.Train.BatchSize, cfg.Train.Persistent = 64, 128 // blocks of 16 rows
			cfg.Model.Shards = shards
			prev := runtime.GOMAXPROCS(procs)
			r, err := NewRun(cfg, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			stepN(t, r, 6)
			runtime.GOMAXPROCS(prev)
			got := append(r.Trainer.EBM.Params.Flatten(nil), r.Trainer.Flow.Params.Flatten(nil)...)
			got = append(got, r.Trainer.Bank.RawMatrix().Data...)
			if ref == nil {
				ref = got
				continue
			}
			if !slices.Equal(got, ref) {
				t.Errorf("shards %d: %d workers give different parameters or bank than 1 worker", shards, procs)
			}
		}
	}
}

// The evaluation hands a model at most evalChunk rows at once, in order,
// so that one compiled graph serves any number of held-out points.
func TestInChunks(t *testing.T) {
	n := 2*evalChunk + 76
	x := mat.NewDense(n, 3, nil)
	for i := 0; i < n; i++ {
		x.Set(i, 0, float64(i))
	}
	var sizes []int
	f := inChunks(func(b mat.Matrix, out []float64) error {
		r, _ := b.Dims()
		sizes = append(sizes, r)
		for i := range out {
			out[i] = b.At(i, 0)
		}
		return nil
	})
	out := make([]float64, n)
	if err := f(x, out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sizes, []int{evalChunk, evalChunk, 76}) {
		t.Errorf("chunks of %v rows, want %d, %d, 76", sizes, evalChunk, evalChunk)
	}
	for i, v := range out {
		if v != float64(i) {
			t.Fatalf("row %d got the value of row %v", i, v)
		}
	}
}

// Probe 65 A3: a float32 run (model.float32) resumed from its rounded
// weights and drifted from the uninterrupted run by 1e-7 relative from the
// next iteration; the float64 values training continues from (current
// and averaged EBM, flow) are kept in state.npz, and it ends bit for bit.
func TestFloat32ResumeReproducesUninterruptedRun(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{algorithms.FlowMC, algorithms.NT} {
		t.Run(string(alg), func(t *testing.T) {
			cfg := smallConfig(t, alg, 12)
			cfg.Model.Float32 = true
			newRun := func(dir string) *Run {
				r, err := NewRun(cfg, dir)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			straight := newRun(t.TempDir())
			stepN(t, straight, 12)
			dir := t.TempDir()
			checkpointAfter(t, newRun(dir), dir, 5)
			resumed := mustResume(t, dir)
			stepN(t, resumed, 7)
			wantResumedLikeStraight(t, straight, resumed)
			if a, b := straight.Evals[11].Stats.Loss, resumed.Evals[11].Stats.Loss; a != b {
				t.Errorf("last loss %v uninterrupted, %v resumed", a, b)
			}
		})
	}
}

// ExactHeldOutLL draws a run's held-out data again from its recorded
// configuration: the same mean exact log-density as the run's own (compare
// reads it for runs still training, which have no metrics.json yet), for
// two seeds (it depends on the seed), and NaN for a data file's run.
func TestExactHeldOutLLFromConfig(t *testing.T) {
	var seen []float64
	for _, seed := range []uint64{1, 2} {
		dir := t.TempDir()
		cfg := smallConfig(t, algorithms.ULA, 2)
		cfg.Seed = seed
		r, err := NewRun(cfg, dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ExactHeldOutLL(r.Config) // as config.json records it

		if err != nil || math.IsNaN(got) || got != r.TrueHeldOutLL {
			t.Errorf("seed %d: %v (%v), want the run's %v", seed, got, err, r.TrueHeldOutLL)
		}
		seen = append(seen, got)
	}
	if seen[0] == seen[1] {
		t.Errorf("the same held-out LL %v for two seeds", seen[0])
	}
	cfg := smallConfig(t, algorithms.ULA, 2)
	cfg.Data = &config.Data{File: "elsewhere.csv"}
	if got, err := ExactHeldOutLL(cfg); err != nil || !math.IsNaN(got) {
		t.Errorf("data run: %v, %v; want NaN", got, err)
	}
}

// Package algorithms trains energy-based models by maximum likelihood with
// one training loop (Trainer) and four negative-sample strategies, the
// paper's flowMC-EBM (Alg. 1) and its baselines ULA-EBM (Alg. 3), NT-EBM and
// CoopFlow (App. C.1).
//
// Every iteration draws a batch of data (positives), runs MCMC chains to get
// negatives, takes an EBM step on mean E(x⁺) − mean E(x⁻) (+ the optional L2
// term of App. C.6) and, for the flow-based algorithms, a maximum-likelihood
// step of the companion flow on the negatives. The strategies differ only in
// where chains start and which kernel moves them:
//
//	flowmc    persistent chains; flowMC: i-SIR (or IMH) global moves proposed
//	          by the flow, MALA local moves; flow fitted on the negatives
//	ula       persistent chains; unadjusted Langevin; no flow
//	nt        persistent chains; MALA in the flow's latent space (NeuTra);
//	          flow fitted on the negatives
//	coopflow  fresh flow samples every iteration; noise-free Langevin, as
//	          the CoopFlow authors advise; flow pretrained on data, frozen
//	          for the first iterations, then fitted on the negatives
//
// The EBM is always the tilted model p(x) ∝ exp(−E(x))ρ(x) of Eq. 6, ρ the
// flow's base (the tilt changes no gradient, App. B); the ULA baseline
// samples the same tilted model.
//
// The packages below this one do the rest of a training run: config (the
// run's configuration), settings (the paper's and the scaled defaults),
// training (a run with its evaluations, checkpoints and outputs), metrics
// (evaluation measures), plots (figures) and experiments (targets and data).
package algorithms

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/flowebm/flowebm/internal/sysmem"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/samplers"
)

// SamplerConfig configures the negative-sample MCMC. Zero values mean the
// defaults given per field.
type SamplerConfig struct {
	// Steps is the number of MCMC steps per iteration (default 10).
	Steps int `json:"steps,omitempty"`
	// Negatives is "last" (default: the chains' final states), "all" (every
	// state of every step) or "subsample" (Subsample states per chain,
	// evenly spaced, from BatchSize/Subsample chains: App. C.4's
	// "subsampling by k").
	Negatives NegativeSelection `json:"negatives,omitempty"`
	Subsample int               `json:"subsample,omitempty"`
	// Global is flowMC's global kernel: "isir" (default) or "imh".
	Global GlobalKernel `json:"global,omitempty"`
	// Particles is i-SIR's number of particles N (default 32).
	Particles int `json:"particles,omitempty"`
	// GlobalSteps and LocalSteps make one flowMC cycle (defaults 1 and 4).
	GlobalSteps int `json:"global_steps,omitempty"`
	LocalSteps  int `json:"local_steps,omitempty"`
	// Stacked counts a whole flowMC cycle as one step (App. C.5).
	Stacked bool `json:"stacked,omitempty"`
	// StepSize is the initial MALA step η, or ULA's η (default 0.01).
	StepSize float64 `json:"step_size,omitempty"`
	// TargetAccept is MALA's target acceptance (default 0.75); FixedStep
	// turns the adaptation off.
	TargetAccept float64 `json:"target_accept,omitempty"`
	FixedStep    bool    `json:"fixed_step,omitempty"`
}

// PretrainConfig configures flow pretraining before EBM training.
type PretrainConfig struct {
	// Steps is the number of pretraining steps (0: none).
	Steps int `json:"steps,omitempty"`
	// Objective is "data" (maximum likelihood on the training data, as
	// CoopFlow; the default for coopflow) or "reverse-kl" (against the
	// initial EBM; the default otherwise).
	Objective PretrainObjective `json:"objective,omitempty"`
	// LR is the pretraining learning rate of an Adam optimiser (default 1e-2).
	LR float64 `json:"lr,omitempty"`
	// BatchSize is the pretraining batch (default the training batch).
	BatchSize int `json:"batch_size,omitempty"`
}

// TrainConfig configures a training run. Zero values mean the defaults given per
// field.
type TrainConfig struct {
	// MemoryLimit is the limit NewTrainer checks its memory estimate
	// against (0: sysmem.Limit(sysmem.DefaultLimit)); a resumed run's is
	// the one its start was accepted under (config.Run.MemoryAccepted).
	MemoryLimit float64 `json:"-"`
	// Algorithm is flowmc (default), ula, nt or coopflow.
	Algorithm Algorithm `json:"algorithm,omitempty"`
	// Iterations is the number of training iterations (required).
	Iterations int `json:"iterations"`
	// BatchSize is the number of positives and of chains per iteration
	// (default 64).
	BatchSize int `json:"batch_size,omitempty"`
	// Persistent is the size of the persistent bank of chains (default
	// 16·BatchSize); each iteration continues BatchSize chains picked at
	// random from it.
	Persistent int `json:"persistent,omitempty"`
	// Start initialises the bank: "flow" (default for the flow
	// algorithms: samples of the initial flow, i.e. of ρ), "uniform" (on
	// [−StartScale, StartScale]^d, default for ula) or "gaussian"
	// (N(0, StartScale² I)). StartScale defaults to 1 (uniform) or the
	// base σ (gaussian).
	Start      StartStrategy `json:"start,omitempty"`
	StartScale float64       `json:"start_scale,omitempty"`
	// EBMOptim and FlowOptim configure the two optimisers (default Adam,
	// learning rate 1e-3).
	EBMOptim  OptimConfig `json:"ebm_optim"`
	FlowOptim OptimConfig `json:"flow_optim"`
	// L2 is the coefficient of the energy regularisation of App. C.6.
	L2 float64 `json:"l2,omitempty"`
	// Sampler configures the negatives' MCMC.
	Sampler SamplerConfig `json:"sampler"`
	// Pretrain configures flow pretraining.
	Pretrain PretrainConfig `json:"pretrain"`
	// FreezeFlow is the number of initial iterations during which the flow
	// is not updated (CoopFlow: default 4% of Iterations; App. C.1 says
	// "less than 5%").
	FreezeFlow int `json:"freeze_flow,omitempty"`
	// FlowSteps is the number of maximum-likelihood steps the flow takes on
	// each iteration's negatives (default 1, Algorithm 1's single step).
	// More steps are meant to let the flow follow the EBM when a run has
	// far fewer iterations than the paper's (each costs one flow gradient,
	// far less than the i-SIR proposals of one MCMC step); measured on
	// four-gaussians d = 64, 4 steps did worse than 1 (global acceptance
	// 0.30 against 0.41 after 200 iterations), so no default uses them.
	FlowSteps int `json:"flow_steps,omitempty"`
	// AverageWindow, when positive, keeps an exponential moving average of
	// the EBM's parameters with decay 1 − 1/AverageWindow (a window of
	// about that many iterations): the model that is evaluated and saved.
	// Training itself, and so the negatives, use the current parameters.
	// Zero (the paper's choice) evaluates the last iterate.
	AverageWindow int `json:"average_window,omitempty"`
	// MaxEnergy stops training when a data point's energy or the loss
	// (the gap between the data's and the negatives' mean energies)
	// exceeds it in absolute value (default 1e6): the divergence guard.
	MaxEnergy float64 `json:"max_energy,omitempty"`
}

// Resolved returns c with every zero field replaced by its default, or
// an error naming the first invalid field, section by section. Filling an
// already filled configuration changes nothing. A gaussian start's scale
// is the base's σ, which only the models know: NewTrainer sets it.
func (c TrainConfig) Resolved() (TrainConfig, error) {
	return c.ResolvedAs("")
}

// ResolvedAs is Resolved naming the fields in its errors under prefix, as
// a configuration that nests them does: "train." in a run's config.json
// (algorithms/config).
func (c TrainConfig) ResolvedAs(prefix string) (TrainConfig, error) {
	p := fieldPrefix(prefix)
	steps := []func(*TrainConfig, fieldPrefix) error{
		(*TrainConfig).coreDefaults, (*TrainConfig).samplerDefaults, (*TrainConfig).checkScales,
		(*TrainConfig).startDefaults, (*TrainConfig).pretrainDefaults, (*TrainConfig).guardDefaults,
	}
	for _, step := range steps {
		if err := step(&c, p); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Bounds on counts that a run repeats: far beyond any useful value, they
// keep a mistyped number from making a run that never ends (and integer
// arithmetic on them from overflowing).
const (
	MaxIterations = 1_000_000_000 // train.iterations, pretrain.steps
	MaxChainSteps = 1_000_000     // sampler.steps, global_steps, local_steps
	MaxFlowSteps  = 10_000        // flow_steps
)

// coreDefaults fills and checks the algorithm, iterations and batch size.
func (c *TrainConfig) coreDefaults(p fieldPrefix) error {
	if c.Algorithm == "" {
		c.Algorithm = FlowMC
	}
	if err := p.checkOption("algorithm", string(c.Algorithm)); err != nil {
		return err
	}
	if c.Iterations <= 0 || c.Iterations > MaxIterations {
		return fmt.Errorf("algorithms: %s %d, want 1..%d", p.f("iterations"), c.Iterations, MaxIterations)
	}
	c.Algorithm.strategy().defaults(c)
	if c.BatchSize == 0 {
		c.BatchSize = 64
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("algorithms: %s %d, want > 0", p.f("batch_size"), c.BatchSize)
	}
	return nil
}

// samplerDefaults fills and checks the negatives' MCMC and the bank size.
func (c *TrainConfig) samplerDefaults(p fieldPrefix) error {
	for _, step := range []func(fieldPrefix) error{c.chainDefaults, c.Sampler.globalDefaults, c.Sampler.stepDefaults} {
		if err := step(p); err != nil {
			return err
		}
	}
	return nil
}

// chainDefaults fills and checks the chains' length, the negatives'
// selection and the persistent bank.
func (c *TrainConfig) chainDefaults(p fieldPrefix) error {
	s := &c.Sampler
	if s.Steps == 0 {
		s.Steps = 10
	}
	if s.Negatives == "" {
		s.Negatives = NegativesLast
	}
	if err := p.checkOption("sampler.negatives", string(s.Negatives)); err != nil {
		return err
	}
	if s.Negatives != NegativesSubsample && s.Subsample != 0 {
		return fmt.Errorf("algorithms: %s %d applies to %s \"subsample\" only (it is %q): drop it", p.f("sampler.subsample"), s.Subsample, p.f("sampler.negatives"), s.Negatives)
	}
	if err := c.CheckSubsampleGiven(string(p)); err != nil {
		return err
	}
	if s.Negatives == NegativesSubsample {
		if s.Subsample < 1 || c.BatchSize%s.Subsample != 0 || s.Steps%s.Subsample != 0 {
			return fmt.Errorf("algorithms: %s %d must divide %s %d and %s %d", p.f("sampler.subsample"), s.Subsample, p.f("batch_size"), c.BatchSize, p.f("sampler.steps"), s.Steps)
		}
	}
	if c.Persistent < 0 {
		return fmt.Errorf("algorithms: %s %d, want > 0 (unset: the default 16 × %s)", p.f("persistent"), c.Persistent, p.f("batch_size"))
	}
	if c.Persistent == 0 {
		c.Persistent = 16 * c.BatchSize
	}
	if c.Persistent < c.Chains() {
		return fmt.Errorf("algorithms: %[1]s %[2]d is smaller than the %[3]d chains run per iteration (%[4]s %[5]d, %[6]s %[7]q): want %[1]s ≥ the chains, or a smaller %[4]s", p.f("persistent"), c.Persistent, c.Chains(), p.f("batch_size"), c.BatchSize, p.f("sampler.negatives"), c.Sampler.Negatives)
	}
	return nil
}

// CheckSubsampleGiven refuses sampler.negatives "subsample" without
// sampler.subsample, naming the fields under prefix ("", or "train." in a
// run's configuration): its check before defaults would call it 0.
func (c TrainConfig) CheckSubsampleGiven(prefix string) error {
	if c.Sampler.Negatives == NegativesSubsample && c.Sampler.Subsample == 0 {
		return fmt.Errorf("algorithms: %[1]ssampler.negatives \"subsample\" without %[1]ssampler.subsample: give it, k, the states kept of each of %[1]sbatch_size/k chains (k must divide %[1]sbatch_size and %[1]ssampler.steps)", prefix)
	}
	return nil
}

// globalDefaults fills and checks flowMC's global moves and cycle.
func (s *SamplerConfig) globalDefaults(p fieldPrefix) error {
	if s.Global == "" {
		s.Global = ISIR
	}
	if err := p.checkOption("sampler.global", string(s.Global)); err != nil {
		return err
	}
	if s.Particles == 0 {
		s.Particles = 32
	}
	if s.Particles < 2 {
		return fmt.Errorf("algorithms: %s %d, want ≥ 2", p.f("sampler.particles"), s.Particles)
	}
	if s.GlobalSteps == 0 && s.LocalSteps == 0 {
		s.GlobalSteps, s.LocalSteps = 1, 4
	}
	return nil
}

// stepDefaults fills and checks the step size, the counts' bounds and
// MALA's target acceptance.
func (s *SamplerConfig) stepDefaults(p fieldPrefix) error {
	if s.StepSize == 0 {
		s.StepSize = 0.01
	}
	if !(s.StepSize >= 1e-12 && s.StepSize <= maxStepSize) {
		return fmt.Errorf("algorithms: %s %v, want a value in [1e-12, %g] (unset: the default 0.01)", p.f("sampler.step_size"), s.StepSize, maxStepSize)
	}
	if s.Steps < 1 || s.GlobalSteps < 0 || s.LocalSteps < 0 {
		return fmt.Errorf("algorithms: %s fields step_size %v, steps %d, global_steps %d, local_steps %d: want positive", p.f("sampler"), s.StepSize, s.Steps, s.GlobalSteps, s.LocalSteps)
	}
	if s.Steps > MaxChainSteps || s.GlobalSteps > MaxChainSteps || s.LocalSteps > MaxChainSteps {
		return fmt.Errorf("algorithms: %s fields steps %d, global_steps %d, local_steps %d: want at most %d each (every iteration runs them)", p.f("sampler"), s.Steps, s.GlobalSteps, s.LocalSteps, MaxChainSteps)
	}
	if s.TargetAccept == 0 {
		s.TargetAccept = 0.75
	}
	if !(s.TargetAccept > 0 && s.TargetAccept < 1) {
		return fmt.Errorf("algorithms: %s %v, want in (0, 1) (unset: the default 0.75)", p.f("sampler.target_accept"), s.TargetAccept)
	}
	return nil
}

// checkScales checks the start scale, the optimisers and the L2 term.
func (c *TrainConfig) checkScales(p fieldPrefix) error {
	if c.StartScale != 0 && !(c.StartScale >= 1e-150 && c.StartScale <= 1e150) {
		return fmt.Errorf("algorithms: %s %v, want a value in [1e-150, 1e150] (unset: the default)", p.f("start_scale"), c.StartScale)
	}
	if err := c.EBMOptim.validate(p.f("ebm_optim")); err != nil {
		return err
	}
	if c.usesFlow() || c.FlowOptim != (OptimConfig{}) { // ula has no flow, but a wrong value is still wrong
		if err := c.FlowOptim.validate(p.f("flow_optim")); err != nil {
			return err
		}
	}
	if math.IsNaN(c.L2) || math.IsInf(c.L2, 0) || c.L2 < 0 {
		return fmt.Errorf("algorithms: %s %v, want a finite value ≥ 0", p.f("l2"), c.L2)
	}
	return nil
}

// startDefaults fills and checks how the bank starts.
func (c *TrainConfig) startDefaults(p fieldPrefix) error {
	if c.Start == "" {
		c.Start = StartFlow
	}
	if err := p.checkOption("start", string(c.Start)); err != nil {
		return err
	}
	if c.Start == StartUniform && c.StartScale == 0 {
		c.StartScale = 1
	}
	return nil
}

// pretrainDefaults fills and checks flow pretraining.
func (c *TrainConfig) pretrainDefaults(fp fieldPrefix) error {
	p := &c.Pretrain
	if p.Objective == "" {
		p.Objective = ObjectiveReverseKL
	}
	if err := fp.checkOption("pretrain.objective", string(p.Objective)); err != nil {
		return err
	}
	if p.Steps < 0 || p.Steps > MaxIterations {
		return fmt.Errorf("algorithms: %s %d, want 0..%d (0: no pretraining)", fp.f("pretrain.steps"), p.Steps, MaxIterations)
	}
	if p.LR == 0 {
		p.LR = 1e-2
	}
	if !(p.LR > 0) || math.IsInf(p.LR, 0) {
		return fmt.Errorf("algorithms: %s %v, want a finite value > 0 (unset: the default 1e-2)", fp.f("pretrain.lr"), p.LR)
	}
	if p.BatchSize == 0 {
		p.BatchSize = c.BatchSize
	}
	if p.BatchSize < 1 {
		return fmt.Errorf("algorithms: %s %d, want > 0 (unset: the same as %s)", fp.f("pretrain.batch_size"), p.BatchSize, fp.f("batch_size"))
	}
	return nil
}

// guardDefaults fills and checks CoopFlow's frozen start, the divergence
// guard, the flow's steps and the EBM's averaging.
func (c *TrainConfig) guardDefaults(p fieldPrefix) error {
	if c.FreezeFlow < 0 {
		return fmt.Errorf("algorithms: %s %d, want ≥ 0", p.f("freeze_flow"), c.FreezeFlow)
	}
	if c.FreezeFlow > 0 && c.FreezeFlow >= c.Iterations && c.usesFlow() {
		return fmt.Errorf("algorithms: %s %d, want fewer than the %d iterations: the flow would never be trained", p.f("freeze_flow"), c.FreezeFlow, c.Iterations)
	}
	if c.MaxEnergy == 0 {
		c.MaxEnergy = 1e6
	}
	if !(c.MaxEnergy > 0) {
		return fmt.Errorf("algorithms: %s %v, want > 0 (unset: the default 1e6)", p.f("max_energy"), c.MaxEnergy)
	}
	if c.FlowSteps == 0 {
		c.FlowSteps = 1
	}
	if c.FlowSteps < 0 || c.FlowSteps > MaxFlowSteps {
		return fmt.Errorf("algorithms: %s %d, want 1..%d (unset: the default 1)", p.f("flow_steps"), c.FlowSteps, MaxFlowSteps)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"ebm_optim.decay_every", c.EBMOptim.DecayEvery}, {"flow_optim.decay_every", c.FlowOptim.DecayEvery}, {"average_window", c.AverageWindow}, {"freeze_flow", c.FreezeFlow}} {
		if f.v > MaxIterations {
			return fmt.Errorf("algorithms: %s %d, want at most %d", p.f(f.name), f.v, MaxIterations)
		}
	}
	if c.AverageWindow < 0 {
		return fmt.Errorf("algorithms: %s %d, want ≥ 0 (0: no averaging)", p.f("average_window"), c.AverageWindow)
	}
	return nil
}

// Chains is the number of chains run per iteration.
func (c TrainConfig) Chains() int {
	if c.Sampler.Negatives == NegativesSubsample {
		return c.BatchSize / c.Sampler.Subsample
	}
	return c.BatchSize
}

// DiagnosticSteps is the default length of the mixing diagnostic's chains: as
// many steps as an iteration runs, where a flowMC step is a whole cycle
// (Trainer.SampleChains), and at least 8.
func (c TrainConfig) DiagnosticSteps() int {
	return max(8, c.Sampler.Steps/c.Algorithm.strategy().stepsPerDraw(c.Sampler))
}

// usesFlow reports whether the algorithm has a companion flow.
func (c TrainConfig) usesFlow() bool { return c.Algorithm.TrainsFlow() }

// PersistentChains reports whether chains continue from the bank (all but
// CoopFlow).
func (c TrainConfig) PersistentChains() bool { return c.Algorithm.strategy().persistentChains() }

// IterStats are the statistics of one training iteration.
type IterStats struct {
	Iter int `json:"iter"`
	// Loss is mean E(x⁺) − mean E(x⁻) (+ L2 term).
	Loss float64 `json:"loss"`
	// FlowLL is the flow's mean log-likelihood of the negatives before
	// this iteration's first flow update (NaN without a flow update).
	FlowLL float64 `json:"flow_ll"`
	// LocalAccept, GlobalAccept are mean acceptances over the iteration's
	// MCMC steps (NaN where the kernel has none); StepSize is the local
	// step size after the iteration.
	LocalAccept  float64 `json:"local_accept"`
	GlobalAccept float64 `json:"global_accept"`
	StepSize     float64 `json:"step_size"`
}

// ErrInterrupted is returned (wrapped) when a context ends before the work
// does: training.Run.TrainContext's run, or Trainer.InitContext's
// pretraining.
var ErrInterrupted = errors.New("training interrupted")

// ErrDiverged is wrapped by the error Step returns when training diverges
// (a NaN loss, NaN parameters or energies beyond Config.MaxEnergy).
var ErrDiverged = errors.New("training diverged")

// Trainer runs the training loop. Build it with NewTrainer; it is not safe
// for concurrent use.
type Trainer struct {
	// Config is the configuration with defaults filled in (in a Run, the
	// one value that is also the Run's Config.Train).
	Config *TrainConfig
	EBM    *graph.EBM
	// Flow is the companion flow (nil for ula).
	Flow *graph.Flow
	// Bank is the persistent bank of chains (Persistent × d).
	Bank *mat.Dense
	// Iter is the number of completed iterations.
	Iter int

	data    *mat.Dense
	order   []int
	dataPos int

	rngs             Streams
	optEBM, optFlow  Optimizer
	thetaE, thetaF   []float64
	thetaAvg         []float64 // moving average of thetaE (nil: AverageWindow 0)
	gradE, gradF     []float64
	kernels          Kernels
	pos, neg, starts *mat.Dense
	lastStarts       *mat.Dense
	posEnergy        []float64
}

// Streams are the independent random streams of a run, one per component,
// so that changing one component does not shift the others' draws.
type Streams struct {
	Data, Chains, Bank, Init *rand.PCG
}

// NewStreams derives the streams of a run from one seed.
func NewStreams(seed uint64) Streams {
	return Streams{
		Data:   rand.NewPCG(seed, 0xda7a),
		Chains: rand.NewPCG(seed, 0xc4a1),
		Bank:   rand.NewPCG(seed, 0xba4c),
		Init:   rand.NewPCG(seed, 0x1417),
	}
}

// NewTrainer prepares a run on data (n × d, the training set) with the given
// EBM and flow (flow may be nil only for ula; for the other algorithms the
// flow's base is the EBM's tilt). It fills *c's zero fields with their
// defaults and keeps c as the trainer's Config: a caller that shares it
// (a training run's configuration) sees what the trainer runs. Call Init
// (new run) or Restore (resumed run) before the first Step. The models are
// trained in place.
func NewTrainer(c *TrainConfig, ebm *graph.EBM, flow *graph.Flow, data *mat.Dense, streams Streams) (*Trainer, error) {
	n, d := data.Dims()
	if d != ebm.Dim() {
		return nil, fmt.Errorf("algorithms: data have %d columns, the EBM %d dimensions", d, ebm.Dim())
	}
	cfg, err := c.Resolved()
	if err != nil {
		return nil, err
	}
	if cfg.Start == StartGaussian && cfg.StartScale == 0 {
		cfg.StartScale = 1
		if ebm.Tilt != nil {
			cfg.StartScale = maxOf(ebm.Tilt.Sigma)
		}
	}
	if n < cfg.BatchSize {
		return nil, fmt.Errorf("algorithms: %d data rows, fewer than batch_size %d", n, cfg.BatchSize)
	}
	if cfg.usesFlow() && flow == nil {
		return nil, fmt.Errorf("algorithms: %s needs a flow", cfg.Algorithm)
	}
	if flow != nil && flow.Dim() != d {
		return nil, fmt.Errorf("algorithms: flow has %d dimensions, the data %d", flow.Dim(), d)
	}
	if err := sysmem.Check(cfg.MemoryTerms(d, SizesOf(ebm, flow)), cmp.Or(cfg.MemoryLimit, sysmem.Limit(sysmem.DefaultLimit))); err != nil {
		return nil, err
	}
	if !cfg.usesFlow() {
		flow = nil
	}
	*c = cfg
	t := &Trainer{Config: c, EBM: ebm, Flow: flow, data: data, rngs: streams}
	if t.optEBM, err = cfg.EBMOptim.New(ebm.Params.Count()); err != nil {
		return nil, fmt.Errorf("ebm_optim: %w", err)
	}
	t.thetaE = ebm.Params.Flatten(nil)
	t.gradE = make([]float64, len(t.thetaE))
	if cfg.AverageWindow > 0 {
		t.thetaAvg = slices.Clone(t.thetaE)
	}
	if flow != nil {
		if t.optFlow, err = cfg.FlowOptim.New(flow.Params.Count()); err != nil {
			return nil, fmt.Errorf("flow_optim: %w", err)
		}
		t.thetaF = flow.Params.Flatten(nil)
		t.gradF = make([]float64, len(t.thetaF))
	}
	if t.kernels, err = t.newKernels(cfg.Sampler.StepSize, cfg.Sampler.FixedStep); err != nil {
		return nil, err
	}
	t.Bank = mat.NewDense(cfg.Persistent, d, nil)
	t.pos = mat.NewDense(cfg.BatchSize, d, nil)
	t.starts = mat.NewDense(cfg.Chains(), d, nil)
	return t, nil
}

// Init pretrains the flow if configured and fills the persistent bank by
// the configured start strategy. Call it once before the first Step of a new
// run (not after Restore).
func (t *Trainer) Init() error { return t.InitContext(context.Background()) }

// InitContext is Init that stops between pretraining steps when ctx ends
// (the command line's SIGINT): the error wraps ErrInterrupted, and the
// trainer cannot be used.
func (t *Trainer) InitContext(ctx context.Context) error {
	if err := t.pretrain(ctx); err != nil {
		return err
	}
	return t.initChains(rand.New(t.rngs.Init), t.Bank, t.Config.Start)
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// initChains fills x with starting points.
func (t *Trainer) initChains(rng *rand.Rand, x *mat.Dense, how StartStrategy) error {
	raw := x.RawMatrix().Data
	switch how {
	case StartFlow:
		if t.Flow == nil {
			return fmt.Errorf("algorithms: train.start \"flow\" needs a flow, and %s has none: want \"uniform\" or \"gaussian\"", t.Config.Algorithm)
		}
		return t.sampleInChunks(rng, x, bankChunk)
	case StartUniform:
		for i := range raw {
			raw[i] = t.Config.StartScale * (2*rng.Float64() - 1)
		}
	case StartGaussian:
		for i := range raw {
			raw[i] = t.Config.StartScale * rng.NormFloat64()
		}
	}
	return nil
}

// bankChunk is the most rows initChains hands the flow at once: one
// pass over a bank of 16,384 images held every feature map of every row
// (about 24 GB for the conv RealNVP on 28×28 images). It is the
// evaluation's chunk, so that the log Z draws' graph (log_z_samples 512)
// serves the bank's start too.
const bankChunk = 512

// sampleInChunks fills x with draws from the flow, chunk rows at a time.
// Flow.Sample draws the base points of its rows in row order from rng
// and then transforms each row on its own, so the draws are bit for bit
// those of one pass over x.
func (t *Trainer) sampleInChunks(rng *rand.Rand, x *mat.Dense, chunk int) error {
	r, d := x.Dims()
	logq := make([]float64, min(r, chunk))
	for lo := 0; lo < r; lo += chunk {
		hi := min(lo+chunk, r)
		if err := t.Flow.Sample(rng, x.Slice(lo, hi, 0, d).(*mat.Dense), logq[:hi-lo]); err != nil {
			return err
		}
	}
	return nil
}

// newKernels builds the algorithm's kernel with MALA step size step
// (frozen: no adaptation); NewTrainer has checked the models' dimensions.
func (t *Trainer) newKernels(step float64, frozen bool) (Kernels, error) {
	return NewKernels(t.Config.kernelConfig(step, frozen), t.EBM, t.Flow)
}

// StepSize is the local kernel's current step size (adapted during
// training), or the configured one before the kernels are built.
func (t *Trainer) StepSize() float64 {
	if t.kernels.Local != nil {
		return t.kernels.Local.StepSize
	}
	return t.Config.Sampler.StepSize
}

// SampleChains runs m fresh chains of the algorithm's negative-sample kernel
// for steps steps, with the local step size frozen at its current value, and
// returns the state after every step laid out m × steps × d (the layout
// diagnostics.Summarize takes). For flowMC one step is one whole cycle of
// global and local moves (App. C.5's "stacked" step), so that every draw
// follows a global move. Chains start from m distinct rows of the persistent
// bank, or from fresh flow samples for CoopFlow, as the paper's Table 2 does.
// Training is not affected.
func (t *Trainer) SampleChains(rng *rand.Rand, m, steps int) ([]float64, error) {
	d := t.EBM.Dim()
	draws := make([]float64, m*steps*d)
	err := t.freshChains(rng, m, steps, func(s int, x *mat.Dense) {
		for c := 0; c < m; c++ {
			copy(draws[(c*steps+s)*d:(c*steps+s+1)*d], x.RawRowView(c))
		}
	})
	if err != nil {
		return nil, err
	}
	return draws, nil
}

// FinalStates runs m fresh chains as SampleChains does and returns only
// their states after steps steps (m × d), without keeping the draws in
// between (paper Fig. 8: the last state of 64 chains of 512 steps).
func (t *Trainer) FinalStates(rng *rand.Rand, m, steps int) (*mat.Dense, error) {
	var last *mat.Dense
	err := t.freshChains(rng, m, steps, func(s int, x *mat.Dense) {
		if s == steps-1 {
			last = mat.DenseCopyOf(x)
		}
	})
	return last, err
}

// pickRows draws m distinct rows of n with rng: the first m of a random
// permutation, as runs have always drawn them, up to maxPermRows rows;
// beyond, by Floyd's algorithm, which holds m of them only (probe 54: a
// bank of 100 million chains was permuted whole, 800 MB, to draw 128,
// and the run died out of memory).
func pickRows(rng *rand.Rand, n, m int) []int {
	if n <= maxPermRows {
		return rng.Perm(n)[:m]
	}
	return floyd(rng, n, m)
}

// floyd draws m distinct integers of [0, n) with rng (Floyd's algorithm),
// each subset as likely.
func floyd(rng *rand.Rand, n, m int) []int {
	picked := make([]int, 0, m)
	seen := make(map[int]bool, m)
	for j := n - m; j < n; j++ {
		i := rng.IntN(j + 1)
		if seen[i] {
			i = j
		}
		seen[i] = true
		picked = append(picked, i)
	}
	return picked
}

// maxPermRows is the largest bank pickRows permutes whole (128 MB).
const maxPermRows = 1 << 24

// freshChains starts m chains as SampleChains describes and calls after
// with the state after each of steps kernel steps.
func (t *Trainer) freshChains(rng *rand.Rand, m, steps int, after func(s int, x *mat.Dense)) error {
	if m <= 0 || steps <= 0 {
		return fmt.Errorf("algorithms: %d chains of %d steps: both must be positive", m, steps)
	}
	d := t.EBM.Dim()
	x := mat.NewDense(m, d, nil)
	if t.Config.PersistentChains() {
		if m > t.Config.Persistent {
			return fmt.Errorf("algorithms: %d chains requested from a bank of %d", m, t.Config.Persistent)
		}
		for r, i := range pickRows(rng, t.Config.Persistent, m) {
			x.SetRow(r, t.Bank.RawRowView(i))
		}
	} else if err := t.Flow.Sample(rng, x, make([]float64, m)); err != nil {
		return err
	}
	k, err := t.newKernels(t.StepSize(), true)
	if err != nil {
		return err
	}
	if k.flowmc != nil {
		k.flowmc.Stacked = true
	}
	state := samplers.NewState(x)
	for s := 0; s < steps; s++ {
		if _, err := k.Kernel.Step(rng, state); err != nil {
			return err
		}
		after(s, state.X)
	}
	return nil
}

// pretrain fits the flow before training: by maximum likelihood on the data
// or by reverse KL against the initial EBM.
func (t *Trainer) pretrain(ctx context.Context) error {
	p := t.Config.Pretrain
	if p.Steps == 0 || t.Flow == nil {
		return nil
	}
	opt, err := OptimConfig{LR: p.LR}.New(len(t.thetaF))
	if err != nil {
		return err
	}
	rng := rand.New(t.rngs.Init)
	d := t.EBM.Dim()
	batch := mat.NewDense(p.BatchSize, d, nil)
	nData, _ := t.data.Dims()
	for i := 0; i < p.Steps; i++ {
		if ctx.Err() != nil {
			return fmt.Errorf("%w during the flow's pretraining, at step %d of %d: nothing was trained", ErrInterrupted, i, p.Steps)
		}
		switch p.Objective {
		case ObjectiveData:
			for r := 0; r < p.BatchSize; r++ {
				batch.SetRow(r, t.data.RawRowView(rng.IntN(nData)))
			}
			if _, err := t.Flow.MLGrad(batch, t.gradF); err != nil {
				return err
			}
			negate(t.gradF)
		case ObjectiveReverseKL:
			raw := batch.RawMatrix().Data
			for j := range raw {
				raw[j] = rng.NormFloat64()
			}
			if _, err := t.Flow.ReverseKLGrad(batch, t.EBM, t.gradF); err != nil {
				return err
			}
		}
		opt.Step(t.thetaF, t.gradF)
		t.Flow.Params.SetFlat(t.thetaF)
	}
	return nil
}

func negate(v []float64) {
	for i := range v {
		v[i] = -v[i]
	}
}

// nextBatch fills t.pos with the next data rows, reshuffling every epoch.
func (t *Trainer) nextBatch() {
	n, _ := t.data.Dims()
	rng := rand.New(t.rngs.Data)
	for r := 0; r < t.Config.BatchSize; r++ {
		if t.dataPos == len(t.order) {
			t.order = rng.Perm(n)
			t.dataPos = 0
		}
		t.pos.SetRow(r, t.data.RawRowView(t.order[t.dataPos]))
		t.dataPos++
	}
}

// Data returns the training set (not a copy).
func (t *Trainer) Data() *mat.Dense { return t.data }

// Positives returns the last positive batch (valid until the next Step).
func (t *Trainer) Positives() *mat.Dense { return t.pos }

// Samples returns the model's samples: the persistent chains' states, or,
// for CoopFlow, whose chains start afresh every iteration, the last
// negatives (valid until the next Step).
func (t *Trainer) Samples() *mat.Dense {
	if !t.Config.PersistentChains() && t.neg != nil {
		return t.neg
	}
	return t.Bank
}

// Negatives returns the last negatives (valid until the next Step).
func (t *Trainer) Negatives() *mat.Dense { return t.neg }

// Starts returns the chain starts of the last iteration.
func (t *Trainer) Starts() *mat.Dense { return t.lastStarts }

// Step runs one training iteration.
func (t *Trainer) Step() (IterStats, error) {
	st := IterStats{Iter: t.Iter + 1, FlowLL: math.NaN()}
	t.nextBatch()
	idx, err := t.chainStarts()
	if err != nil {
		return st, err
	}
	if t.neg, err = t.runChains(&st, idx); err != nil {
		return st, err
	}
	if err := t.ebmStep(&st); err != nil {
		return st, err
	}
	if err := t.flowSteps(&st); err != nil {
		return st, err
	}
	if err := t.checkEnergies(st.Iter); err != nil {
		return st, err
	}
	t.Iter++
	return st, nil
}

// chainStarts fills t.starts with the iteration's chain starts: chains
// picked from the bank (their bank rows are returned), or fresh flow
// samples for CoopFlow.
func (t *Trainer) chainStarts() ([]int, error) {
	cfg := t.Config
	m, d := cfg.Chains(), t.EBM.Dim()
	var idx []int
	if cfg.PersistentChains() {
		idx = rand.New(t.rngs.Bank).Perm(cfg.Persistent)[:m]
		for r, i := range idx {
			t.starts.SetRow(r, t.Bank.RawRowView(i))
		}
	} else if err := t.Flow.Sample(rand.New(t.rngs.Chains), t.starts, make([]float64, m)); err != nil {
		return nil, err
	}
	if t.lastStarts == nil {
		t.lastStarts = mat.NewDense(m, d, nil)
	}
	t.lastStarts.Copy(t.starts)
	return idx, nil
}

// runChains runs the negatives' MCMC from t.starts, writes the chains back
// to their bank rows idx, records acceptance and step size in st, and
// returns the negatives the configuration's selection collects.
func (t *Trainer) runChains(st *IterStats, idx []int) (*mat.Dense, error) {
	s := t.Config.Sampler
	t.kernels.Reset()
	state := samplers.NewState(t.starts)
	rng := rand.New(t.rngs.Chains)
	col := newCollector(s, t.Config.BatchSize, t.Config.Chains(), t.EBM.Dim())
	var loc, glob accum
	for k := 0; k < s.Steps; k++ {
		ks, err := t.kernels.Kernel.Step(rng, state)
		if u := (*samplers.UndefinedError)(nil); errors.As(err, &u) { // the EBM's energies are NaN or ∓Inf: diverged
			return nil, fmt.Errorf("iteration %d, MCMC step %d: %v: %w", st.Iter, k+1, err, ErrDiverged)
		}
		if err != nil {
			return nil, fmt.Errorf("iteration %d, MCMC step %d: %w", st.Iter, k+1, err)
		}
		loc.add(ks.Local)
		glob.add(ks.Global)
		st.StepSize = ks.StepSize
		col.observe(k, state.X)
	}
	st.LocalAccept, st.GlobalAccept = loc.mean(), glob.mean()
	if !t.Config.Algorithm.AcceptsLocally() { // its kernel reports 1 by construction (round 117 A3: recorded as an acceptance rate)
		st.LocalAccept = math.NaN()
	}
	if t.kernels.Local != nil {
		st.StepSize = t.kernels.Local.StepSize
	}
	for r, i := range idx {
		t.Bank.SetRow(i, state.X.RawRowView(r))
	}
	return col.negatives(state.X), nil
}

// ebmStep takes the EBM's gradient step on the batch's positives and the
// negatives, stopping on divergence, and updates the parameters' average.
func (t *Trainer) ebmStep(st *IterStats) error {
	cfg := t.Config
	t.optEBM.SetLR(cfg.EBMOptim.scheduledLR(t.Iter))
	loss, err := t.EBM.LossGrad(t.pos, t.neg, cfg.L2, t.gradE)
	if err != nil {
		return err
	}
	st.Loss = loss
	if math.IsNaN(loss) || math.IsInf(loss, 0) || hasNaN(t.gradE) {
		return fmt.Errorf("iteration %d: loss %v: %w", st.Iter, loss, ErrDiverged)
	}
	if math.Abs(loss) > cfg.MaxEnergy {
		// The data's energies are held to MaxEnergy by checkEnergies, so
		// a loss this large means the negatives' energies exploded.
		return fmt.Errorf("iteration %d: loss %v beyond the energy limit %g (the negatives' energies exploded): %w", st.Iter, loss, cfg.MaxEnergy, ErrDiverged)
	}
	t.optEBM.Step(t.thetaE, t.gradE)
	t.EBM.Params.SetFlat(t.thetaE)
	if t.thetaAvg != nil {
		b := 1 / float64(cfg.AverageWindow)
		for i, v := range t.thetaE {
			t.thetaAvg[i] += b * (v - t.thetaAvg[i])
		}
	}
	return nil
}

// flowSteps takes the flow's maximum-likelihood steps on the negatives
// (none while the flow is frozen, or without a flow).
func (t *Trainer) flowSteps(st *IterStats) error {
	cfg := t.Config
	if t.Flow == nil || t.Iter < cfg.FreezeFlow {
		return nil
	}
	t.optFlow.SetLR(cfg.FlowOptim.scheduledLR(t.Iter - cfg.FreezeFlow))
	for j := 0; j < cfg.FlowSteps; j++ {
		ll, err := t.Flow.MLGrad(t.neg, t.gradF)
		if err != nil {
			return err
		}
		if j == 0 {
			st.FlowLL = ll
		}
		if math.IsNaN(ll) || hasNaN(t.gradF) {
			return fmt.Errorf("iteration %d: flow log-likelihood %v: %w", st.Iter, ll, ErrDiverged)
		}
		negate(t.gradF)
		t.optFlow.Step(t.thetaF, t.gradF)
		t.Flow.Params.SetFlat(t.thetaF)
	}
	return nil
}

// collector gathers an iteration's negatives from its chains (the
// configuration's sampler.negatives).
type collector interface {
	// observe sees the chains' states after MCMC step k (from 0).
	observe(k int, x *mat.Dense)
	// negatives returns the negatives, given the final states.
	negatives(final *mat.Dense) *mat.Dense
}

func newCollector(s SamplerConfig, batch, chains, d int) collector {
	switch s.Negatives {
	case NegativesAll:
		return &allStates{d: d, all: make([]float64, 0, s.Steps*chains*d)}
	case NegativesSubsample:
		return &subsampledStates{every: s.Steps / s.Subsample, chains: chains, x: mat.NewDense(batch, d, nil)}
	}
	return lastStates{}
}

// lastStates keeps the chains' final states.
type lastStates struct{}

func (lastStates) observe(int, *mat.Dense)               {}
func (lastStates) negatives(final *mat.Dense) *mat.Dense { return final }

// allStates keeps every state of every step.
type allStates struct {
	d   int
	all []float64
}

func (a *allStates) observe(_ int, x *mat.Dense)     { a.all = append(a.all, x.RawMatrix().Data...) }
func (a *allStates) negatives(*mat.Dense) *mat.Dense { return mat.NewDense(len(a.all)/a.d, a.d, a.all) }

// subsampledStates keeps the states of every every-th step (App. C.4's
// subsampling by k).
type subsampledStates struct {
	every, chains int
	x             *mat.Dense
}

func (s *subsampledStates) observe(k int, x *mat.Dense) {
	if (k+1)%s.every == 0 {
		j := (k+1)/s.every - 1
		for r := 0; r < s.chains; r++ {
			s.x.SetRow(j*s.chains+r, x.RawRowView(r))
		}
	}
}

func (s *subsampledStates) negatives(*mat.Dense) *mat.Dense { return s.x }

// WithAveraged runs fn with the EBM's parameters set to their moving
// average (Config.AverageWindow), then restores the current ones. Without
// averaging it just runs fn. Evaluations and saved models go through it.
func (t *Trainer) WithAveraged(fn func() error) error {
	if t.thetaAvg == nil {
		return fn()
	}
	t.EBM.Params.SetFlat(t.thetaAvg)
	defer t.EBM.Params.SetFlat(t.thetaE)
	return fn()
}

// checkEnergies is the divergence guard: the energies of the positives must
// stay finite and below MaxEnergy in absolute value.
func (t *Trainer) checkEnergies(iter int) error {
	if t.posEnergy == nil {
		t.posEnergy = make([]float64, t.Config.BatchSize)
	}
	e := t.posEnergy
	if err := t.EBM.Energy(t.pos, e); err != nil {
		return err
	}
	for _, v := range e {
		if math.IsNaN(v) || math.Abs(v) > t.Config.MaxEnergy {
			return fmt.Errorf("iteration %d: energy %v of a data point (limit %g): %w", iter, v, t.Config.MaxEnergy, ErrDiverged)
		}
	}
	return nil
}

func hasNaN(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return true
		}
	}
	return false
}

type accum struct {
	sum float64
	n   int
}

func (a *accum) add(v float64) {
	if !math.IsNaN(v) {
		a.sum += v
		a.n++
	}
}

func (a *accum) mean() float64 {
	if a.n == 0 {
		return math.NaN()
	}
	return a.sum / float64(a.n)
}

// SetIterations changes the number of training iterations, stretching the
// learning-rate decay schedules in proportion so that the total decay over
// the run stays the same where the intervals are long; each interval is
// rounded down to at least 1, so a run with fewer iterations than the
// schedule's number of decays decays at every iteration, more in total
// (probe 68 B5).
func (t *TrainConfig) SetIterations(n int) {
	if old := t.Iterations; old > 0 && n > 0 {
		for _, o := range []*OptimConfig{&t.EBMOptim, &t.FlowOptim} {
			if o.DecayEvery > 0 {
				o.DecayEvery = max(1, scaleCount(o.DecayEvery, n, old))
			}
		}
		if t.FreezeFlow > 0 {
			t.FreezeFlow = scaleCount(t.FreezeFlow, n, old)
		}
		if t.AverageWindow > 0 {
			t.AverageWindow = max(1, scaleCount(t.AverageWindow, n, old))
		}
	}
	t.Iterations = n
}

// scaleCount is x·n/old rounded down, without overflow; beyond
// MaxIterations it is MaxIterations+1, which validation refuses.
func scaleCount(x, n, old int) int {
	if float64(x)*float64(n)/float64(old) > MaxIterations {
		return MaxIterations + 1
	}
	hi, lo := bits.Mul64(uint64(x), uint64(n))
	q, _ := bits.Div64(hi, lo, uint64(old))
	return int(q)
}

// Package settings holds the paper's settings of each experiment and
// algorithm (App. C, Tables 4–7), whose golden copies are
// algorithms/configs/*.json, and their scaling to a 2-core machine, the
// defaults of flowebm train.
package settings

import (
	"fmt"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/layers"
)

// PaperConfig returns the paper's own settings (App. C, Tables 4–7) for an
// experiment and algorithm, unscaled. Where the paper is silent the choice
// made is stated in the returned notes. Training at these settings takes
// hours to days on 2 CPU cores; Defaults scales them down.
func PaperConfig(experiment string, algorithm algorithms.Algorithm) (config.Run, []string, error) {
	exp, err := experiments.ByName(experiment)
	if err != nil {
		return config.Run{}, nil, err
	}
	return paperConfig(exp, algorithm)
}

// paperConfig is PaperConfig for an experiment already looked up (mnist's
// lookup loads and pools the images).
func paperConfig(exp *experiments.Experiment, algorithm algorithms.Algorithm) (config.Run, []string, error) {
	if algorithm == "" {
		algorithm = algorithms.FlowMC
	}
	if err := new(algorithms.Algorithm).UnmarshalText([]byte(algorithm)); err != nil {
		return config.Run{}, nil, err
	}
	rc := config.Run{Experiment: exp.Name, Seed: 1}
	t := &rc.Train
	t.Algorithm = algorithm
	var notes []string
	var epochs int
	switch {
	case exp.Name == "two-modes":
		epochs, notes = twoModesPaper(exp, algorithm, &rc)
	case exp.Name == "four-modes":
		epochs, notes = fourModesPaper(exp, algorithm, &rc)
	case exp.Name == "8-gaussians" || exp.Name == "rings":
		epochs, notes = gaussianRingsPaper(exp, algorithm, &rc)
	case strings.HasPrefix(exp.Name, "four-gaussians-"):
		epochs, notes = fourGaussiansPaper(exp, algorithm, &rc)
	case exp.Kind == experiments.KindImages:
		epochs, notes = imagesPaper(exp, algorithm, &rc)
	default:
		return config.Run{}, nil, fmt.Errorf("algorithms: no configuration for experiment %q", exp.Name)
	}
	if algorithm == algorithms.ULA && t.Start == "" {
		// ebm-anatomy starts its bank uniformly over the data's range.
		t.Start, t.StartScale = "uniform", exp.Box
	}
	if algorithm == algorithms.CoopFlow && t.Pretrain.Steps == 0 {
		t.Pretrain = algorithms.PretrainConfig{Steps: 1024, LR: 1e-2}
		notes = append(notes, fmt.Sprintf("%s: the paper gives no algorithms.CoopFlow pretraining length here; 1024 steps at 1e-2 as in App. C.4", exp.Name))
	}
	if t.Pretrain.Steps > 0 {
		t.Pretrain.Objective = "data"
	}
	t.Iterations = epochs * rc.DataSize / t.BatchSize
	return rc, notes, nil
}

// twoModesPaper sets the paper's settings of two-modes.
func twoModesPaper(exp *experiments.Experiment, algorithm algorithms.Algorithm, rc *config.Run) (epochs int, notes []string) {
	t := &rc.Train
	// App. C.2: 75 epochs of 16,384 points, batch 64, persistent 1024,
	// learning rate 0.01 for both models, i-SIR with 32 particles,
	// Langevin step 0.01, 10 MCMC steps (flowMC: 2 × (1 global + 4
	// local)).
	rc.DataSize, epochs, t.BatchSize, t.Persistent = 16384, 75, 64, 1024
	setLR(t, 0.01)
	s := algorithms.SamplerConfig{Steps: 10, Particles: 32, StepSize: 0.01}
	switch algorithm {
	case algorithms.FlowMC:
		s.GlobalSteps, s.LocalSteps = 1, 4
	case algorithms.CoopFlow:
		s.StepSize = 5e-4
		notes = append(notes, "two-modes: App. C.2 runs only algorithms.ULA-EBM and flowMC-EBM; coopflow uses App. C.3's noise-free step 5e-4 with 10 steps")
	case algorithms.NT:
		notes = append(notes, "two-modes: App. C.2 runs only algorithms.ULA-EBM and flowMC-EBM; nt uses MALA (target 0.75) with 10 steps")
	}
	t.Sampler = s
	return epochs, notes
}

// fourModesPaper sets the paper's settings of four-modes.
func fourModesPaper(exp *experiments.Experiment, algorithm algorithms.Algorithm, rc *config.Run) (epochs int, notes []string) {
	t := &rc.Train
	// App. C.3 gives Table 4's samplers only; data, batch, bank and
	// learning rate are C.2's.
	rc.DataSize, epochs, t.BatchSize, t.Persistent = 16384, 75, 64, 1024
	setLR(t, 0.01)
	t.Sampler = algorithm.PaperSampler(algorithms.SamplerTable{Local: 24, Steps: 128, Negatives: "all", ULAStep: 0.125 * 0.125 / 2, CoopStep: 5e-4, Particles: 32})
	notes = append(notes, "four-modes: App. C.3 states only Table 4; data size, epochs, batch, persistent size, learning rate and i-SIR particles are taken from C.2")
	return epochs, notes
}

// gaussianRingsPaper sets the paper's settings of 8-gaussians and rings.
func gaussianRingsPaper(exp *experiments.Experiment, algorithm algorithms.Algorithm, rc *config.Run) (epochs int, notes []string) {
	t := &rc.Train
	// App. C.4 and Table 5.
	rc.DataSize, epochs, t.BatchSize, t.Persistent = 60000, 100, 256, 8192
	if algorithm == algorithms.CoopFlow || algorithm == algorithms.FlowMC {
		setLR(t, 1e-3)
	} else {
		setLR(t, 1e-2)
	}
	t.Sampler = algorithm.PaperSampler(algorithms.SamplerTable{Local: 127, Steps: 128, Negatives: "subsample", ULAStep: 0.125 * 0.125 / 2, CoopStep: 5e-4, Particles: 64})
	if algorithm == algorithms.CoopFlow {
		t.Pretrain = algorithms.PretrainConfig{Steps: 1024, LR: 1e-2}
	}
	return epochs, notes
}

// fourGaussiansPaper sets the paper's settings of four-gaussians-D (App. C.5, Tables 6 and 7).
func fourGaussiansPaper(exp *experiments.Experiment, algorithm algorithms.Algorithm, rc *config.Run) (epochs int, notes []string) {
	t := &rc.Train
	d := exp.Dim()
	// App. C.5, Tables 6 and 7.
	rc.DataSize, epochs, t.BatchSize, t.Persistent = 50000, 150, 128, 8192
	if algorithm == algorithms.CoopFlow || algorithm == algorithms.FlowMC {
		setLR(t, 1e-3)
	} else {
		setLR(t, 1e-2)
	}
	t.Sampler = algorithm.PaperSampler(algorithms.SamplerTable{Local: 8, Steps: 16, Negatives: "all", ULAStep: 1e-3, CoopStep: 1e-4, Particles: 128, Stacked: true})
	t.Start = gaussianForULA(algorithm)
	if algorithm == algorithms.CoopFlow {
		t.Pretrain = algorithms.PretrainConfig{Steps: 512, LR: 1e-2}
	}
	h := map[int]int{16: 32, 32: 39, 64: 51}[d]
	if h == 0 {
		h = 32 + (d-16)*19/48 // interpolates Table 7 between d = 16 and 64
		notes = append(notes, fmt.Sprintf("%s: Table 7 has no d = %d; flow hidden width %d interpolated", exp.Name, d, h))
	}
	rc.Model.FlowBlocks, rc.Model.FlowHidden = 2, []int{h, h, h}
	return epochs, notes
}

// imagesPaper sets the paper's settings of the image experiment.
func imagesPaper(exp *experiments.Experiment, algorithm algorithms.Algorithm, rc *config.Run) (epochs int, notes []string) {
	t := &rc.Train
	d := exp.Dim()
	// App. C.6 (CIFAR-10): batch 128, 70 epochs, persistent 1024,
	// learning rate 1e-4 for both decayed ×0.99 every 50 batches, L2
	// 1e-4, negatives from 3 stacked cycles of 1 i-SIR (128 particles)
	// + 32 MALA steps. Its conv EBM (4.5M parameters) and RealNVP (4M)
	// are beyond 2 CPU cores: an MLP EBM and a 4-block RealNVP instead.
	n, _ := exp.TrainSet.Dims()
	rc.DataSize, epochs, t.BatchSize, t.Persistent = n, 70, 128, 1024
	t.EBMOptim = algorithms.OptimConfig{LR: 1e-4, Decay: 0.99, DecayEvery: 50}
	t.FlowOptim = t.EBMOptim
	t.L2 = 1e-4
	t.Sampler = algorithm.PaperSampler(algorithms.SamplerTable{Local: 32, Steps: 3, Negatives: "last", ULAStep: 1e-3, CoopStep: 1e-4, Particles: 128, Stacked: true})
	t.Start = gaussianForULA(algorithm)
	if convImages(exp) {
		// App. C.6's networks are Du & Mordatch's EBM (4.5M parameters)
		// and fmu2/realNVP's RealNVP (base_dim 64, 6 residual blocks, 4M)
		// behind a logit transform; flowebm's conv EBM and conv RealNVP
		// at their defaults are the same kinds of networks, smaller, and
		// the flow works on the data's [−1, 1] directly.
		rc.Model.EBM, rc.Model.Flow = config.EBMConv, config.FlowConvRealNVP
		e, f := layers.ImageEnergy{}.WithDefaults(), layers.ImageRealNVP{}.WithDefaults()
		notes = append(notes, fmt.Sprintf("%s: App. C.6's settings with flowebm's conv EBM (channels %v, SiLU) and conv RealNVP (%d checkerboard and %d channel couplings per scale over %d scales, %d channels) instead of its 4.5M-parameter EBM and 4M-parameter RealNVP with logit transform; no horizontal flips (the training loop has no augmentation; digits and clothes are not mirror-symmetric); the baselines' samplers follow Table 6",
			exp.Name, e.Channels, f.Checkerboard, f.ChannelWise, f.Scales, f.Hidden))
		return epochs, notes
	}
	rc.Model.EBMHidden = []int{128, 128, 128}
	rc.Model.FlowBlocks, rc.Model.FlowHidden = 4, []int{64, 64}
	notes = append(notes, exp.Name+": App. C.6's settings with small models (MLP EBM "+fmt.Sprint(d)+"→128→128→128→1, RealNVP of 4 blocks [64, 64]) instead of its convolutional networks; the baselines' samplers follow Table 6")
	return epochs, notes
}

// convImages reports whether the experiment's images take the conv
// models (height and width divisible by 4, the conv RealNVP's two
// scales): mnist28, fashion-mnist and cifar10; mnist's 7×7 images keep
// the MLP models.
func convImages(exp *experiments.Experiment) bool {
	im := exp.Image
	return exp.Kind == experiments.KindImages && im != nil && im.Height%4 == 0 && im.Width%4 == 0
}

// setLR gives both models the learning rate v, without decay.
func setLR(t *algorithms.TrainConfig, v float64) {
	t.EBMOptim, t.FlowOptim = algorithms.OptimConfig{LR: v}, algorithms.OptimConfig{LR: v}
}

// gaussianForULA is Table 6's "gaussian" start of ULA-EBM ("" otherwise).
func gaussianForULA(algorithm algorithms.Algorithm) algorithms.StartStrategy {
	if algorithm == algorithms.ULA {
		return algorithms.StartGaussian
	}
	return ""
}

// scaling is how Defaults shrinks an experiment's paper settings to fit 2
// CPU cores: fewer iterations (and data), shorter chains, smaller bank.
type scaling struct {
	iterations int
	dataSize   int
	// stepsDiv divides the baselines' chain lengths and flowMC's number of
	// cycles; persistent and batch replace the paper's when non-zero.
	stepsDiv          int
	persistent, batch int
	particles         int
	// lr replaces both learning rates when non-zero.
	lr float64
	// fastFlow switches the RealNVP to checkerboard masks and output-layer-
	// only small initialisation (see the comment in Defaults).
	fastFlow bool
	// flowLR replaces the flow's learning rate of the flow-based
	// algorithms when non-zero (see the comment in Defaults).
	flowLR float64
	// noBaselineL2 leaves the baselines without the L2 energy term that
	// the other experiments give them (see the comment in Defaults).
	noBaselineL2 bool
	// flowBlocks replaces the paper's number of RealNVP blocks at the
	// dimensions it lists (see the comment in Defaults).
	flowBlocks map[int]int
	// flowMCByDim gives flowMC-EBM its own length, i-SIR particles and
	// float type at the dimensions it lists (see flowMCAt).
	flowMCByDim map[int]flowMCScaling
	// conv, when set, sizes the conv models and their sampler (the image
	// experiments; see imageScaling).
	conv *convScaling
}

// flowMCScaling is flowMC-EBM's own scaling at one dimension.
type flowMCScaling struct {
	iterations, particles int
	float32               bool
}

// convScaling shrinks the image experiments' conv models, chains and
// diagnostics.
type convScaling struct {
	// ebmChannels are the conv EBM's stage widths, flowHidden and
	// flowCouplings the conv RealNVP's channels and couplings of each
	// kind per scale.
	ebmChannels               []int
	flowHidden, flowCouplings int
	// localSteps replaces flowMC's MALA steps per stacked cycle.
	localSteps int
	// rhatChains and logZSamples set the diagnostics: chains of the
	// R-hat diagnostic, draws of log Z.
	rhatChains, logZSamples int
}

// imageScaling is the image experiments' scaling: measured on 2 busy
// cores with OpenBLAS (see the comment in Defaults).
var imageScaling = scaling{iterations: 200, stepsDiv: 16, batch: 64, particles: 8, lr: 1e-3,
	conv: &convScaling{ebmChannels: []int{8, 16, 16}, flowHidden: 8, flowCouplings: 1, localSteps: 8, rhatChains: 64, logZSamples: 512}}

var scalings = map[string]scaling{
	"two-modes":   {iterations: 2000},
	"four-modes":  {iterations: 1000, stepsDiv: 4},
	"8-gaussians": {iterations: 1000, dataSize: 16384, stepsDiv: 4, batch: 128, persistent: 2048},
	"rings":       {iterations: 1000, dataSize: 16384, stepsDiv: 4, batch: 128, persistent: 2048},
	"mnist":       {iterations: 500, stepsDiv: 4, particles: 32, batch: 64, lr: 1e-3, fastFlow: true, flowLR: 1e-2},
	"four-gaussians": {iterations: 400, dataSize: 16384, stepsDiv: 4, persistent: 2048, fastFlow: true, flowLR: 1e-2, noBaselineL2: true, flowBlocks: map[int]int{64: 4},
		flowMCByDim: map[int]flowMCScaling{64: {iterations: 2500, particles: 256, float32: true}}},
	"mnist28":       imageScaling,
	"fashion-mnist": imageScaling,
	"cifar10":       imageScaling,
}

// ImageIterations is the default length (Defaults' train.iterations) of
// the image experiment name, for every algorithm, known without reading
// its images: the scaled length does not depend on them. ok is false for
// the other experiments.
func ImageIterations(name string) (iterations int, ok bool) {
	sc, found := scalings[name]
	if !found || !experiments.ReadsFolder(name) || len(sc.flowMCByDim) > 0 {
		return 0, false
	}
	return sc.iterations, true
}

// Defaults returns the run configuration for an experiment and algorithm:
// PaperConfig's settings scaled to run in minutes on 2 CPU cores. Every
// scaling is stated in the returned notes.
func Defaults(experiment string, algorithm algorithms.Algorithm) (config.Run, []string, error) {
	exp, err := experiments.ByName(experiment)
	if err != nil {
		return config.Run{}, nil, err
	}
	return DefaultsFor(exp, algorithm)
}

// DefaultsFor is Defaults for an experiment already looked up (mnist's
// lookup loads and pools the images).
func DefaultsFor(exp *experiments.Experiment, algorithm algorithms.Algorithm) (config.Run, []string, error) {
	rc, notes, err := paperConfig(exp, algorithm)
	if err != nil {
		return rc, nil, err
	}
	key := rc.Experiment
	if strings.HasPrefix(key, "four-gaussians-") {
		key = "four-gaussians"
	}
	sc, ok := scalings[key]
	if !ok {
		return rc, notes, nil
	}
	what := sc.sizes(&rc)
	what = append(what, sc.flowMCAt(&rc, exp.Dim())...)
	what = append(what, sc.flow(&rc, exp.Dim())...)
	what = append(what, sc.convModels(&rc)...)
	what = append(what, sc.chains(&rc)...)
	what = append(what, sc.schedule(&rc)...)
	notes = append(notes, fmt.Sprintf("%s scaled for 2 CPU cores: %s", rc.Experiment, strings.Join(what, "; ")))
	return rc, notes, nil
}

// sizes scales the run's length, data, batch, bank, i-SIR particles and learning rates.
func (sc scaling) sizes(rc *config.Run) (what []string) {
	t := &rc.Train
	paperIters := t.Iterations
	t.Iterations = sc.iterations
	what = append(what, fmt.Sprintf("%d iterations instead of %d", sc.iterations, paperIters))
	if sc.dataSize > 0 {
		what = append(what, fmt.Sprintf("%d training points instead of %d", sc.dataSize, rc.DataSize))
		rc.DataSize = sc.dataSize
	}
	if sc.batch > 0 {
		what = append(what, fmt.Sprintf("batch %d instead of %d", sc.batch, t.BatchSize))
		t.BatchSize = sc.batch
	}
	if sc.persistent > 0 {
		what = append(what, fmt.Sprintf("persistent bank %d instead of %d", sc.persistent, t.Persistent))
		t.Persistent = sc.persistent
	}
	if sc.particles > 0 {
		what = append(what, fmt.Sprintf("i-SIR with %d particles instead of %d", sc.particles, t.Sampler.Particles))
		t.Sampler.Particles = sc.particles
	}
	if sc.lr > 0 {
		what = append(what, fmt.Sprintf("learning rates %g instead of %g", sc.lr, t.EBMOptim.LR))
		t.EBMOptim.LR, t.FlowOptim.LR = sc.lr, sc.lr
	}
	return what
}

// flowMCAt gives flowMC-EBM the length, i-SIR particles and float type of
// flowMCByDim at dimension d.
func (sc scaling) flowMCAt(rc *config.Run, d int) (what []string) {
	f, ok := sc.flowMCByDim[d]
	if !ok || rc.Train.Algorithm != algorithms.FlowMC {
		return nil
	}
	// The paper's R-hat ≤ 1.05 at d = 64 (128 chains of 16 cycles, the
	// worst of 64 coordinates) needs a lag-1 autocorrelation between cycles
	// below about 0.18 (docs/training.md): a global acceptance of about
	// 0.8 or more. With 400 iterations of float64 and 128 particles the
	// defaults reached 0.57 (R-hat 1.133, seed 1; 1.077 and 1.172 for seeds
	// 2, 3); 3,000 such iterations reached 0.81 and 1.067 in 42 minutes.
	// Float32 halves the time per iteration, which buys twice the i-SIR
	// particles: 2,500 iterations with 256 particles gave R-hat 1.046 at
	// iteration 1,500 and 1.038 at 2,000 (seed 1; docs/training.md has the
	// three seeds' results).
	t := &rc.Train
	what = append(what, fmt.Sprintf("flowMC-EBM at d = %d: %d iterations instead of %d, i-SIR with %d particles instead of %d, float32 models", d, f.iterations, sc.iterations, f.particles, t.Sampler.Particles))
	t.Iterations, t.Sampler.Particles, rc.Model.Float32 = f.iterations, f.particles, f.float32
	return what
}

// flow changes the RealNVP and its learning rate where the scaled budget needs it (d: the data's dimension).
func (sc scaling) flow(rc *config.Run, d int) (what []string) {
	t := &rc.Train
	if sc.fastFlow && t.Algorithm.TrainsFlow() {
		// The mixture's two coordinate halves are independent (µ2 flips the
		// first half, µ3 = −µ2), so the reference's half masks condition
		// each half on a variable that says nothing about its mode: the
		// identity is a stationary point of the flow's likelihood, and
		// with every layer at 1e-6 the gradients of the hidden layers also
		// fall below Adam's ε. Measured by maximum likelihood on exact
		// samples (d = 16, Adam 1e-3, batch 128): the paper's flow stays at
		// log-likelihood −31.4 for 2,000 steps (exact −24.1); checkerboard
		// masks with small output layers only reach −25.3 in 400 steps
		// (d = 64: −95.1 against −92.4). It is still the identity at start.
		// On mnist (7×7, an odd width, so these masks are the image's
		// checkerboard) the paper's flow stays nearly affine: flowMC-EBM's
		// global acceptance falls to 0 by iteration 160 and the flow's
		// log-likelihood of the negatives ends at −20; with these masks and
		// initialisation it ends at 1.6 (global acceptance still 0 at lr
		// 1e-3, 0.07 with flowLR 1e-2, seed 1).
		rc.Model.FlowMask, rc.Model.FlowInit = layers.MaskCheckerboard, layers.InitSmallLast
		what = append(what, "RealNVP with checkerboard masks and only its output layers initialised at 1e-6 (the paper's half masks and all-1e-6 layers do not learn this target in the scaled budget)")
	}
	if b := sc.flowBlocks[d]; b > 0 && t.Algorithm.TrainsFlow() && b != rc.Model.FlowBlocks {
		// d = 64 with flowMC-EBM, max rank R-hat over the paper's 16
		// cycles and global acceptance after 400 iterations, seeds 1, 2,
		// 3: Table 7's 2 blocks 1.163, 1.116, 1.243 (0.51, 0.62, 0.36);
		// 4 blocks 1.133, 1.077, 1.172 (0.57, 0.74, 0.46), lower in every
		// seed, at 1.8 times the time per iteration.
		what = append(what, fmt.Sprintf("RealNVP of %d blocks instead of %d (a deeper flow follows the EBM better in the scaled budget)", b, rc.Model.FlowBlocks))
		rc.Model.FlowBlocks = b
	}
	if sc.flowLR > 0 && t.Algorithm.TrainsFlow() && t.FlowOptim.LR != sc.flowLR {
		// With 400 iterations instead of the paper's 58,600 the flow must
		// follow the EBM faster than Adam at 1e-3 lets it. Measured with
		// flowMC-EBM, seed 1, flow learning rate 1e-3 → 1e-2 (EBM's
		// unchanged): max rank R-hat 1.05 → 1.04 (d = 16), 1.22 → 1.09
		// (d = 32), 1.83 → 1.46 (d = 64); global acceptance 0.88 → 0.95,
		// 0.51 → 0.79, 0.12 → 0.37. NT-EBM's flow already has 1e-2
		// (Table 6); CoopFlow's gets it too, so that every flow learns at
		// the same rate. flowMC-EBM keeps Table 6's 128 i-SIR particles:
		// with 64, d = 64 gave R-hat 1.46 and global acceptance 0.37; with
		// 128, 1.26 and 0.51 (400 iterations; 1,000 iterations with 64
		// particles gave 1.36 and 0.42). On mnist (seed 1, with fastFlow)
		// 1e-3 → 1e-2 gives global acceptance 0 → 0.07 at the end
		// (0.04–0.18 over the second half; App. C.6 reports 5–10% on
		// CIFAR-10), flow log-likelihood of the negatives 1.6 → 5.0, class-
		// weight MSE 5.9e-3 → 1.8e-3 (2.7e-3 with the paper's flow).
		what = append(what, fmt.Sprintf("flow learning rate %g instead of %g", sc.flowLR, t.FlowOptim.LR))
		t.FlowOptim.LR = sc.flowLR
	}
	return what
}

// convModels shrinks the image experiments' conv models, flowMC's MALA
// steps per cycle and the diagnostics.
func (sc scaling) convModels(rc *config.Run) (what []string) {
	c := sc.conv
	if c == nil {
		return nil
	}
	t, m := &rc.Train, &rc.Model
	// One flowMC-EBM iteration at App. C.6's sizes (batch 128, 128 i-SIR
	// particles, 3 cycles of 32 MALA steps, the default conv models)
	// would take about 15 minutes on 2 cores: its i-SIR alone runs the
	// flow and the EBM on 3 × 127 × 128 images. These sizes (EBM
	// channels 8, 16, 16; flow channels 8; 200 iterations) let the eight
	// image runs of a report (two data sets, four algorithms) train in
	// about an hour on 2 cores; measured on 2 cores shared with another
	// training run: 4.4 s per flowMC-EBM iteration, 1.6 s for ULA-EBM and
	// NT-EBM, against 6.6 s for flowMC-EBM with channels 16, 32, 32 and
	// flow channels 16 (docs/training.md).
	m.EBMChannels = c.ebmChannels
	what = append(what, fmt.Sprintf("conv EBM of channels %v instead of %v (%d parameters on 28×28 images instead of %d)", c.ebmChannels, layers.ImageEnergy{}.WithDefaults().Channels,
		layers.ImageEnergy{Channels: c.ebmChannels}.ParamCount(), layers.ImageEnergy{}.ParamCount()))
	if t.Algorithm.TrainsFlow() {
		m.FlowHidden, m.FlowBlocks = []int{c.flowHidden}, c.flowCouplings
		f := layers.ImageRealNVP{Hidden: c.flowHidden, Checkerboard: c.flowCouplings, ChannelWise: c.flowCouplings}
		what = append(what, fmt.Sprintf("conv RealNVP of %d checkerboard and %d channel coupling per scale with %d channels instead of 2, 2 and 32 (%d parameters on 28×28 images instead of %d)",
			c.flowCouplings, c.flowCouplings, c.flowHidden, f.ParamCount(), layers.ImageRealNVP{}.ParamCount()))
	} else {
		m.Flow = "" // ULA-EBM has no flow
	}
	if t.Algorithm == algorithms.FlowMC && c.localSteps > 0 {
		what = append(what, fmt.Sprintf("%d MALA steps per stacked cycle instead of %d", c.localSteps, t.Sampler.LocalSteps))
		t.Sampler.LocalSteps = c.localSteps
	}
	// The diagnostics: R-hat of the paper's 128 chains over its chain
	// length costs as much as dozens of iterations (for ULA-EBM's 512
	// steps, hundreds), so they run on fewer chains, as long as the
	// scaled training chains (at least 8 draws: 8 flowMC cycles); log Z
	// on fewer draws of the flow.
	rc.RHatChains, rc.LogZSamples = c.rhatChains, c.logZSamples
	what = append(what, fmt.Sprintf("R-hat on %d chains as long as the scaled training chains (8 flowMC-EBM cycles), log Z from %d draws", c.rhatChains, c.logZSamples))
	return what
}

// chains shortens the MCMC chains, keeping the diagnostic's length.
func (sc scaling) chains(rc *config.Run) (what []string) {
	t := &rc.Train
	if k := sc.stepsDiv; k > 1 && sc.conv != nil {
		old := t.Sampler.Steps
		t.Algorithm.Shorten(&t.Sampler, k)
		if t.Sampler.Steps != old {
			what = append(what, fmt.Sprintf("%d MCMC steps per iteration instead of %d (as many gradient evaluations as flowMC-EBM's cycles, about)", t.Sampler.Steps, old))
		}
		return what
	}
	if k := sc.stepsDiv; k > 1 {
		s := &t.Sampler
		old := s.Steps
		// The mixing diagnostic (paper Table 2) keeps the paper's chain
		// length: R-hat falls as chains grow, so chains as short as the
		// scaled training chains would not compare with the paper's
		// numbers. Measured on one d = 64 flowMC-EBM model, three
		// diagnostic seeds: max rank R-hat 1.25–1.32 over 8 cycles,
		// 1.15 over 16 (the paper's), 1.07 over 32.
		rc.RHatSteps = t.DiagnosticSteps()
		t.Algorithm.Shorten(s, k)
		if s.Steps != old {
			what = append(what, fmt.Sprintf("%d MCMC steps per iteration instead of %d (the R-hat diagnostic's chains keep the paper's %d)", s.Steps, old, rc.RHatSteps))
		}
	}
	return what
}

// schedule decays the learning rates, averages the EBM and gives the baselines the L2 term.
func (sc scaling) schedule(rc *config.Run) (what []string) {
	t := &rc.Train
	// Far fewer iterations than the paper: decay the learning rates ×0.9
	// twenty times over the run (to 12% of the start) so that the final
	// model settles.
	every := max(1, t.Iterations/20)
	t.EBMOptim.Decay, t.EBMOptim.DecayEvery = 0.9, every
	t.FlowOptim.Decay, t.FlowOptim.DecayEvery = 0.9, every
	what = append(what, fmt.Sprintf("learning rates decayed ×0.9 every %d iterations", every))
	// The last iterate of a short run carries the optimiser's noise: on
	// two-modes its top-right weight wanders by ±0.03 over the last
	// thousand iterations. Every algorithm's EBM is evaluated and saved as
	// a moving average over the same window as the decay.
	t.AverageWindow = every
	what = append(what, fmt.Sprintf("the EBM evaluated and saved as a moving average of its parameters over %d iterations", every))
	if t.Algorithm != algorithms.FlowMC && !sc.noBaselineL2 {
		// Measured on two-modes at the paper's learning rate: without it,
		// ULA-EBM's negatives and energies blow up (training diverges by
		// iteration ~110), and NT-EBM (iteration 113) and CoopFlow
		// (iteration 1316) diverge too; with it ULA-EBM completes and
		// shows the baseline's weight instability instead. The baselines
		// get it; flowMC-EBM trains without it, as in the paper. Not on
		// four-gaussians, where the paper has none: with it the baselines'
		// EBMs cannot leave the base (d = 64, seed 1: NT-EBM's held-out
		// log-likelihood stays at −124.5, exact −92.2) and their chains
		// mix trivially (R-hat 1.09). Without it NT-EBM's EBM reaches −108
		// by iteration 200, then its chains stop mixing (R-hat 27 at the
		// end), and CoopFlow's negatives' energies explode (the divergence
		// guard stops it at d = 32 and 64).
		t.L2 = 0.1
		what = append(what, "the L2 energy term of App. C.6 with coefficient 0.1 (stabilises the baselines, which otherwise diverge; flowMC-EBM runs without it)")
	}
	return what
}

// DataDefaults returns the run configuration for training an algorithm on
// a user's data set: the two-modes settings (App. C.2, scaled as Defaults
// scales them), which suit standardised data of unit scale, and every
// training row (DataSize 0). The notes say so.
func DataDefaults(dc config.Data, algorithm algorithms.Algorithm) (config.Run, []string, error) {
	rc, notes, err := Defaults("two-modes", algorithm)
	if err != nil {
		return rc, nil, err
	}
	rc.Experiment, rc.Data, rc.DataSize = "data", &dc, 0
	for i, n := range notes {
		notes[i] = strings.Replace(n, "two-modes", "two-modes settings", 1)
	}
	notes = append([]string{"a user's data set trains with the two-modes settings of App. C.2 (standardised data have unit scale); set others with --config"}, notes...)
	return rc, notes, nil
}

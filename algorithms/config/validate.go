package config

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// MaxGridSize is the largest grid_size a run accepts: a 1000 × 1000 grid
// holds 1 M points, already far finer than any density plot or quadrature
// needs (the paper's is 200²); at 4096², the zones, plot and copies of its
// 16.8 M points took 5.9 GB. The smallest is 2.
const MaxGridSize = 1000

// MaxRHatSteps bounds rhat_steps: the diagnostic keeps every draw of its
// chains, and summarises them with copies of their own.
const MaxRHatSteps = 100_000

// memoryLimit is the most memory (bytes) a run's largest buffers may need,
// as estimated from its configuration (a variable for tests).
var memoryLimit = func() float64 { return sysmem.Limit(sysmem.DefaultLimit) }

// Validate checks the fields of a run's configuration that are its own (not
// train's, but for a missing train.sampler.subsample, which the trainer's
// checks would call 0), before anything is loaded or allocated. Zero values
// mean the documented defaults; negative ones are refused.
func (c Run) Validate() error {
	if c.DataSize < 0 {
		return fmt.Errorf("algorithms: data_size %d, want > 0 (unset: the default)", c.DataSize)
	}
	if c.RHatSteps < 0 || c.RHatSteps > MaxRHatSteps { // one range in every refusal (round 123 B2: "> 0", "≥ 4", "at most 100000"; checkDiagnostics refuses 1..3)
		return fmt.Errorf("algorithms: rhat_steps %d, want %d..%d (unset: the default)", c.RHatSteps, minRHatSteps, MaxRHatSteps)
	}
	if c.GridSize != 0 && (c.GridSize < 2 || c.GridSize > MaxGridSize) {
		return fmt.Errorf("algorithms: grid_size %d, want 2..%d (unset: the default 200)", c.GridSize, MaxGridSize)
	}
	if c.Epochs < 0 {
		return fmt.Errorf("algorithms: epochs %d, want ≥ 0 (0: train.iterations gives the length)", c.Epochs)
	}
	if c.Train.Iterations == 0 && c.Epochs == 0 {
		return fmt.Errorf("algorithms: train.iterations is 0 or not given: give it, 1..%d, or epochs (--iterations or --epochs on the command line)", algorithms.MaxIterations)
	}
	if c.Train.Iterations < 0 || c.Train.Iterations > algorithms.MaxIterations {
		return fmt.Errorf("algorithms: train.iterations %d, want 1..%d", c.Train.Iterations, algorithms.MaxIterations)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"eval_every", c.EvalEvery}, {"checkpoint_every", c.CheckpointEvery}, {"rhat_every", c.RHatEvery},
		{"rhat_chains", c.RHatChains}, {"log_z_samples", c.LogZSamples}} {
		if f.v < 0 {
			return fmt.Errorf("algorithms: %s %d, want > 0 (unset: the default)", f.name, f.v)
		}
	}
	if err := c.Train.CheckSubsampleGiven("train."); err != nil {
		return err
	}
	if c.Model.FlowONNX != nil && !c.Train.Algorithm.TrainsFlow() {
		return fmt.Errorf("algorithms: model.flow_onnx with algorithm %q, which has no flow: drop it, or choose flowmc, nt or coopflow", c.Train.Algorithm)
	}
	return c.Model.validate()
}

// MaxShards bounds model.shards (each block compiles its own programs).
const MaxShards = 256

// validate checks the model's fields (zero values mean the defaults).
func (m Model) validate() error {
	if m.Shards < 0 || m.Shards > MaxShards {
		return fmt.Errorf("algorithms: model.shards %d, want 1 to %d (0: %d)", m.Shards, MaxShards, DefaultShards)
	}
	if !slices.Contains([]string{"", layers.MaskHalf, layers.MaskCheckerboard}, m.FlowMask) {
		return fmt.Errorf("algorithms: model.flow_mask %q, want %q or %q (\"\": %s)", m.FlowMask, layers.MaskHalf, layers.MaskCheckerboard, layers.MaskHalf)
	}
	if !slices.Contains([]string{"", layers.InitSmall, layers.InitSmallLast}, m.FlowInit) {
		return fmt.Errorf("algorithms: model.flow_init %q, want %q or %q (\"\": %s)", m.FlowInit, layers.InitSmall, layers.InitSmallLast, layers.InitSmall)
	}
	if m.FlowBlocks < 0 {
		return fmt.Errorf("algorithms: model.flow_blocks %d, want > 0 (unset: the default 4)", m.FlowBlocks)
	}
	for _, h := range []struct {
		name string
		v    []int
	}{{"model.ebm_hidden", m.EBMHidden}, {"model.flow_hidden", m.FlowHidden}} {
		for _, w := range h.v {
			if w < 1 {
				return fmt.Errorf("algorithms: %s holds %d, want widths ≥ 1", h.name, w)
			}
		}
	}
	if m.BaseSigma != 0 && !checkpoint.ValidBaseSigma(m.BaseSigma) {
		return fmt.Errorf("algorithms: model.base_sigma %v, want σ in %s (0: from the data)", m.BaseSigma, checkpoint.BaseSigmaRange)
	}
	if m.EBMSlope != 0 && !(m.EBMSlope > 0 && m.EBMSlope <= 1) {
		return fmt.Errorf("algorithms: model.ebm_slope %v, want the LeakyReLU's negative slope in (0, 1] (unset: the default 0.05)", m.EBMSlope)
	}
	if err := m.validateFlowONNX(); err != nil {
		return err
	}
	if err := m.validateEBM(); err != nil {
		return err
	}
	if err := m.validateFamily(); err != nil {
		return err
	}
	return m.validateConvFlow()
}

// validateFlowONNX checks model.flow_onnx: both files named, and none of
// the fields it replaces given (the family of the flow built otherwise
// included).
func (m Model) validateFlowONNX() error {
	f := m.FlowONNX
	if f == nil {
		return nil
	}
	if f.Sample == "" || f.Density == "" {
		return fmt.Errorf("algorithms: model.flow_onnx needs sample and density (the flow's two ONNX graphs), have %q and %q", f.Sample, f.Density)
	}
	if f.BaseSigma != 0 && !checkpoint.ValidBaseSigma(f.BaseSigma) {
		return fmt.Errorf("algorithms: model.flow_onnx.base_sigma %v, want σ in %s (0: the files' metadata, else 1)", f.BaseSigma, checkpoint.BaseSigmaRange)
	}
	for _, c := range []struct {
		name string
		set  bool
	}{{"base_sigma", m.BaseSigma != 0}, {"flow_blocks", m.FlowBlocks != 0}, {"flow_hidden", m.FlowHidden != nil}, {"flow_init", m.FlowInit != ""}, {"flow_mask", m.FlowMask != ""},
		{"flow", m.Flow != ""}, {"flow_bins", m.FlowBins != 0}, {"flow_tail_bound", m.FlowTailBound != 0}} {
		if c.set {
			return fmt.Errorf("algorithms: model.%s and model.flow_onnx: the flow read from ONNX has its own architecture and base (model.flow_onnx.base_sigma): drop model.%s", c.name, c.name)
		}
	}
	return nil
}

// memoryTerms estimates the run's largest buffers in d dimensions: the
// data, the evaluation's draws and grid, and the trainer's and the models'
// (tc, with defaults; see algorithms.TrainConfig.MemoryTerms).
func (c Run) memoryTerms(tc algorithms.TrainConfig, d int) []sysmem.Term {
	return c.memoryTermsFor(tc, d, nil)
}

// memoryTermsFor is memoryTerms with the shape of the images that conv
// models take (nil: none).
func (c Run) memoryTermsFor(tc algorithms.TrainConfig, d int, image *layers.ImageShape) []sysmem.Term {
	fd := float64(d)
	terms := []sysmem.Term{
		// rows and their shuffled order
		term(fmt.Sprintf("data_size %d × %d dims × 8 B", c.DataSize, d), float64(c.DataSize)*(fd+2)*8),
		term(fmt.Sprintf("log_z_samples %d × %d dims × 8 B", c.LogZSamples, d), float64(c.LogZSamples)*(fd+3)*8),
		term(fmt.Sprintf("rhat_chains %d × rhat_steps %d × %d dims × 8 B", c.RHatChains, c.RHatSteps, d),
			float64(c.RHatChains)*float64(c.RHatSteps)*fd*8),
		// probe 55: the diagnostics' own work, not counted, ran out of memory
		term(fmt.Sprintf("R-hat's work on %d dimensions at once × rhat_chains %d × rhat_steps %d × 96 B", diagnostics.Workers(d), c.RHatChains, c.RHatSteps),
			diagnostics.RHatBytes(c.RHatChains, c.RHatSteps, d)),
	}
	if d == 2 {
		terms = append(terms, term(fmt.Sprintf("grid_size %d² × 3 × 8 B", c.GridSize), float64(c.GridSize)*float64(c.GridSize)*3*8))
	}
	if c.Data != nil { // samples.npy in the data's units: the bank copied once (probe 55: twice, out of memory at 100 million chains)
		terms = append(terms, term(fmt.Sprintf("train.persistent %d × %d dims × 8 B (samples.npy in the data's units)", tc.Persistent, d), float64(tc.Persistent)*fd*8))
	}
	return append(terms, tc.MemoryTerms(d, c.modelSizes(d, image))...)
}

// modelSizes are the models' sizes (with defaults) and the batches the
// evaluation runs them on (evalBatches). Conv models are sized for images
// of shape image (nil: not sized).
func (c Run) modelSizes(d int, image *layers.ImageShape) algorithms.ModelSizes {
	model := c.Model.WithDefaults()
	m := algorithms.ModelSizes{EBMHidden: model.EBMHidden, FlowBlocks: model.FlowBlocks, FlowHidden: model.FlowHidden}
	m.EBMEval, m.FlowEval, m.EvalChains = c.evalBatches(d, image != nil)
	if model.Float32 {
		m.ValueBytes = 4
	}
	if model.Flow == FlowSpline {
		m.FlowBins = cmp.Or(model.FlowBins, layers.DefaultSplineBins)
	}
	if image != nil && model.EBM == EBMConv {
		e := model.imageEnergy(*image)
		m.EBMNet = &algorithms.NetSize{Params: float64(e.ParamCount()), Values: e.GraphValues(true), EvalValues: e.GraphValues(false),
			Of: fmt.Sprintf("model.ebm %q with model.ebm_channels %v", EBMConv, model.EBMChannels)}
	}
	if image != nil && model.Flow == FlowConvRealNVP && model.FlowONNX == nil {
		f := model.imageFlow(*image)
		m.FlowNet = &algorithms.NetSize{Params: float64(f.ParamCount()), Values: f.GraphValues(true), EvalValues: f.GraphValues(false),
			Of: fmt.Sprintf("model.flow %q with model.flow_blocks %d, model.flow_hidden %v", FlowConvRealNVP, model.FlowBlocks, model.FlowHidden)}
	}
	return m
}

// evalChunk is the most rows the evaluation hands the EBM at once (the
// held-out data, the log Z draws, the bank's energies: training's
// evalChunk), and imageChains the image figures' chains (training's
// ImageChains).
const (
	evalChunk   = 512
	imageChains = 64
)

// evalBatches are the batches each compiled graph of the evaluation
// takes: the EBM's (the evaluation's chunks of evalChunk rows, the rest
// of the log Z draws, in 2D the grid's chunks of 8192 points, for images
// the figures' chains and the rest of the bank), the flow's (the log Z
// draws, at once) and the chains run with the training's kernel (R-hat's,
// for images the figures').
func (c Run) evalBatches(d int, images bool) (ebm, flow, chains []algorithms.Rows) {
	ebm = []algorithms.Rows{{N: evalChunk, Of: fmt.Sprintf("the evaluation's chunks of %d", evalChunk)}, lastChunk("log_z_samples", c.LogZSamples)}
	flow = []algorithms.Rows{{N: float64(c.LogZSamples), Of: fmt.Sprintf("log_z_samples %d", c.LogZSamples)}}
	chains = []algorithms.Rows{{N: float64(c.RHatChains), Of: fmt.Sprintf("rhat_chains %d", c.RHatChains)}}
	if d == 2 {
		ebm = append(ebm, algorithms.Rows{N: 8192, Of: "the grid's chunks of 8192"})
	}
	if images {
		figure := algorithms.Rows{N: imageChains, Of: fmt.Sprintf("the image figures' %d chains", imageChains)}
		ebm = append(ebm, figure, lastChunk("train.persistent", c.Train.Persistent))
		chains = append(chains, figure)
	}
	return ebm, flow, chains
}

// lastChunk is the last chunk of n rows (field name) handed over in
// chunks of evalChunk: all of them if fewer, else the rest (0: none).
func lastChunk(name string, n int) algorithms.Rows {
	if n <= evalChunk {
		return algorithms.Rows{N: float64(n), Of: fmt.Sprintf("%s %d", name, n)}
	}
	return algorithms.Rows{N: float64(n % evalChunk), Of: fmt.Sprintf("the last %d of %s %d", n%evalChunk, name, n)}
}

// term is a memory estimate's term.
func term(what string, bytes float64) sysmem.Term { return sysmem.Term{What: what, Bytes: bytes} }

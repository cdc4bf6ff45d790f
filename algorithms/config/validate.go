package config

import (
	"fmt"
	"slices"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/layers"
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
	if c.RHatSteps > MaxRHatSteps {
		return fmt.Errorf("algorithms: rhat_steps %d, want at most %d (unset: the default)", c.RHatSteps, MaxRHatSteps)
	}
	if c.GridSize != 0 && (c.GridSize < 2 || c.GridSize > MaxGridSize) {
		return fmt.Errorf("algorithms: grid_size %d, want 2..%d (unset: the default 200)", c.GridSize, MaxGridSize)
	}
	if c.Epochs < 0 {
		return fmt.Errorf("algorithms: epochs %d, want ≥ 0 (0: train.iterations gives the length)", c.Epochs)
	}
	if c.Train.Iterations == 0 && c.Epochs == 0 {
		return fmt.Errorf("algorithms: train.iterations is not given: give it, or epochs (--iterations or --epochs on the command line)")
	}
	if c.Train.Iterations < 0 || c.Train.Iterations > algorithms.MaxIterations {
		return fmt.Errorf("algorithms: train.iterations %d, want 1..%d", c.Train.Iterations, algorithms.MaxIterations)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"eval_every", c.EvalEvery}, {"checkpoint_every", c.CheckpointEvery}, {"rhat_every", c.RHatEvery},
		{"rhat_chains", c.RHatChains}, {"rhat_steps", c.RHatSteps}, {"log_z_samples", c.LogZSamples}} {
		if f.v < 0 {
			return fmt.Errorf("algorithms: %s %d, want > 0 (unset: the default)", f.name, f.v)
		}
	}
	if s := c.Train.Sampler; s.Negatives == algorithms.NegativesSubsample && s.Subsample == 0 {
		return fmt.Errorf("algorithms: train.sampler.negatives \"subsample\" without train.sampler.subsample: give it, k, the states kept of each of batch_size/k chains (k must divide train.batch_size and train.sampler.steps)")
	}
	return c.Model.validate()
}

// validate checks the model's fields (zero values mean the defaults).
func (m Model) validate() error {
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
	return nil
}

// flowValuesPerBlock is about how many float64 values per point and
// dimension a RealNVP block's graph holds while it is evaluated and
// differentiated: measured peak resident memory 2.24 GB at d = 250 and
// 4.81 GB at d = 500 (200 rows, 4 blocks, 4,096 log Z draws), 73 each.
// flowValuesPerHidden is the same per point and hidden unit of a block's
// coupling networks, which dominate in few dimensions: coopflow
// pretraining in d = 2 (4 blocks, 2 steps) measured 12.1 KB per
// pretrain.batch_size row with flow_hidden [16] and 69.5 KB with [128]
// (peak resident memory at batches 2,000 and 50,000 or 20,000), 61 values
// per dimension and 16 per hidden unit, per block.
const (
	flowValuesPerBlock  = 75
	flowValuesPerHidden = 16
)

// ebmValuesPerUnit is about how many float64 values per row and unit (the
// input's dimensions and model.ebm_hidden's widths) the EBM's graph holds
// while the trainer differentiates it on a batch of positives and
// negatives: ULA in d = 2 measured 25.9 KB per batch_size row (batch =
// persistent 2,000 and 50,000: peak resident memory 110 MB and 1.29 GB) with
// ebm_hidden [32 64 64 64], and 62.2 KB with [256 256], 15 values per unit;
// the bank (persistent) and sampler.steps barely count. Evaluating it
// without training (the grid, the log Z draws) holds ebmEvalValuesPerUnit.
const (
	ebmValuesPerUnit     = 16
	ebmEvalValuesPerUnit = 4
)

// neutraFlowPasses is how many ML-gradient passes of the flow one NT-EBM
// chain's step costs (MALA differentiates the EBM through the flow): NT
// measured 62 KB per batch_size row in d = 2 (batch = persistent 2,000 and
// 20,000), 33 KB of it beyond the EBM's, 2.5 times the flow's 13 KB.
const neutraFlowPasses = 3

// memoryTerms estimates the run's largest buffers in d dimensions: the
// data, the evaluation's draws and grid, the models' parameters (with
// gradients and optimiser moments), their graphs' intermediate values and
// the trainer's buffers (tc, with defaults).
func (c Run) memoryTerms(tc algorithms.TrainConfig, d int) []sysmem.Term {
	fd := float64(d)
	terms := []sysmem.Term{
		// rows and their shuffled order
		term(fmt.Sprintf("data_size %d × %d dims × 8 B", c.DataSize, d), float64(c.DataSize)*(fd+2)*8),
		term(fmt.Sprintf("log_z_samples %d × %d dims × 8 B", c.LogZSamples, d), float64(c.LogZSamples)*(fd+3)*8),
		term(fmt.Sprintf("rhat_chains %d × rhat_steps %d × %d dims × 8 B", c.RHatChains, c.RHatSteps, d),
			float64(c.RHatChains)*float64(c.RHatSteps)*fd*8),
	}
	if d == 2 {
		terms = append(terms, term(fmt.Sprintf("grid_size %d² × 3 × 8 B", c.GridSize), float64(c.GridSize)*float64(c.GridSize)*3*8))
	}
	model := c.Model.WithDefaults()
	terms = append(terms, c.ebmTerms(tc, d, model)...)
	if tc.Algorithm.TrainsFlow() {
		terms = append(terms, c.flowTerms(tc, d, model)...)
	}
	return append(terms, tc.MemoryTerms(d)...)
}

// paramCopies are the parameters, their gradients, two optimiser moments
// and the averaged copy.
const paramCopies = 5

// mlpParams is the number of parameters of an MLP of the layer sizes.
func mlpParams(sizes ...int) float64 {
	p := 0.0
	for i := 0; i+1 < len(sizes); i++ {
		p += float64(sizes[i]+1) * float64(sizes[i+1])
	}
	return p
}

// ebmTerms are the EBM's parameters and its graph's values for the largest
// batch it evaluates (the grid's chunks of 8192 points in 2D, the log Z
// draws) or is trained on (tc's positives and negatives).
func (c Run) ebmTerms(tc algorithms.TrainConfig, d int, model Model) []sysmem.Term {
	units := float64(d)
	for _, w := range model.EBMHidden {
		units += float64(w)
	}
	sizes := append(append([]int{d}, model.EBMHidden...), 1)
	params := term(fmt.Sprintf("model.ebm_hidden %v parameters × 8 B × %d", model.EBMHidden, paramCopies), mlpParams(sizes...)*8*paramCopies)
	eval := rows{float64(c.LogZSamples), fmt.Sprintf("log_z_samples %d", c.LogZSamples)}
	if d == 2 {
		eval = eval.max(rows{8192, "the grid's chunks of 8192"})
	}
	train := rows{float64(tc.BatchSize), fmt.Sprintf("batch_size %d", tc.BatchSize)}.max(negatives(tc))
	if p := tc.Pretrain; p.Steps > 0 && p.Objective == algorithms.ObjectiveReverseKL {
		train = train.max(rows{float64(p.BatchSize), fmt.Sprintf("pretrain.batch_size %d", p.BatchSize)})
	}
	values := func(r rows, perUnit float64) sysmem.Term {
		return term(fmt.Sprintf("the EBM's intermediate values for %s points × (%d dims + model.ebm_hidden %v) × %g × 8 B", r.of, d, model.EBMHidden, perUnit),
			r.n*units*perUnit*8)
	}
	act := values(train, ebmValuesPerUnit)
	if e := values(eval, ebmEvalValuesPerUnit); e.Bytes > act.Bytes {
		act = e
	}
	return []sysmem.Term{params, act}
}

// flowTerms are the flow's parameters and its graph's values for the
// largest batch it evaluates: the log Z draws, i-SIR's proposals, NT-EBM's
// chains, the negatives it is trained on or the pretraining batch.
func (c Run) flowTerms(tc algorithms.TrainConfig, d int, model Model) []sysmem.Term {
	hidden := 0.0
	for _, w := range model.FlowHidden {
		hidden += float64(w)
	}
	blocks := model.FlowBlocks
	// Each block: two couplings of a scale and a translation net.
	sizes := append(append([]int{d}, model.FlowHidden...), d)
	params := term(fmt.Sprintf("model.flow_blocks %d × model.flow_hidden %v parameters × 8 B × %d", blocks, model.FlowHidden, paramCopies),
		float64(blocks)*4*mlpParams(sizes...)*8*paramCopies)
	r := c.flowRows(tc)
	perRow := float64(blocks) * (float64(d)*flowValuesPerBlock + hidden*flowValuesPerHidden) * 8
	values := term(fmt.Sprintf("the flow's intermediate values for %s points × (%d dims × %d + model.flow_hidden %v × %d) × model.flow_blocks %d × 8 B",
		r.of, d, flowValuesPerBlock, model.FlowHidden, flowValuesPerHidden, blocks), r.n*perRow)
	return []sysmem.Term{params, values}
}

// flowRows is the largest batch the flow's graph holds (see flowTerms).
func (c Run) flowRows(tc algorithms.TrainConfig) rows {
	r := rows{float64(c.LogZSamples), fmt.Sprintf("log_z_samples %d", c.LogZSamples)}.max(negatives(tc))
	chains := chainsOf(tc)
	switch tc.Algorithm.Kernel() {
	case algorithms.KernelFlowMC:
		r = r.max(rows{float64(tc.Sampler.Particles) * float64(tc.Chains()), fmt.Sprintf("sampler.particles %d × %s", tc.Sampler.Particles, chains)})
	case algorithms.KernelNeuTra:
		r = r.max(rows{neutraFlowPasses * float64(tc.Chains()), fmt.Sprintf("%d × %s (NT-EBM's MALA through the flow)", neutraFlowPasses, chains)})
	}
	if p := tc.Pretrain; p.Steps > 0 {
		r = r.max(rows{float64(p.BatchSize), fmt.Sprintf("pretrain.batch_size %d", p.BatchSize)})
	}
	return r
}

// negatives is how many negatives an iteration trains on: the chains'
// last states, all their states or the subsampled ones.
func negatives(tc algorithms.TrainConfig) rows {
	n, chains := float64(tc.Chains()), chainsOf(tc)
	switch tc.Sampler.Negatives {
	case algorithms.NegativesAll:
		return rows{float64(tc.Sampler.Steps) * n, fmt.Sprintf("sampler.steps %d × %s (sampler.negatives \"all\")", tc.Sampler.Steps, chains)}
	case algorithms.NegativesSubsample:
		return rows{n * float64(tc.Sampler.Subsample), fmt.Sprintf("%s × sampler.subsample %d", chains, tc.Sampler.Subsample)}
	}
	return rows{n, chains}
}

// chainsOf names the chains an iteration runs and the fields that set them.
func chainsOf(tc algorithms.TrainConfig) string {
	if tc.Sampler.Negatives == algorithms.NegativesSubsample {
		return fmt.Sprintf("batch_size/sampler.subsample %d chains", tc.Chains())
	}
	return fmt.Sprintf("batch_size %d chains", tc.Chains())
}

// rows is a number of rows a graph holds and the fields that set it.
type rows struct {
	n  float64
	of string
}

// max is the larger of r and o (r if equal).
func (r rows) max(o rows) rows {
	if o.n > r.n {
		return o
	}
	return r
}

// term is a memory estimate's term.
func term(what string, bytes float64) sysmem.Term { return sysmem.Term{What: what, Bytes: bytes} }

package algorithms

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/flowebm/flowebm/internal/sysmem"
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

// DefaultMemoryLimit is the most memory (bytes) the largest buffers of a
// run may need, as estimated from its configuration (see checkMemory),
// unless the machine has less: then half of /proc/meminfo's MemTotal.
const DefaultMemoryLimit = 8 << 30

// memoryLimit is the limit checkMemory applies (a variable for tests).
var memoryLimit = func() float64 { return sysmem.Limit(DefaultMemoryLimit) }

// memTerm is one buffer of a memory estimate: the fields that size it and
// its size in bytes (a float, so that absurd configurations do not
// overflow).
type memTerm struct {
	what  string
	bytes float64
}

// checkMemory refuses a configuration whose buffers (terms, summed) need
// more than memoryLimit(), naming the largest, before any is allocated.
func checkMemory(terms []memTerm) error {
	total := 0.0
	for _, t := range terms {
		total += t.bytes
	}
	limit := memoryLimit()
	if !(total > limit) {
		return nil
	}
	sort.SliceStable(terms, func(i, j int) bool { return terms[i].bytes > terms[j].bytes })
	var names []string
	sum := 0.0
	for _, t := range terms {
		// The terms that make up most of the estimate.
		names = append(names, fmt.Sprintf("%s = %s", t.what, bytesString(t.bytes)))
		sum += t.bytes
		if sum >= total/2 || len(names) == 3 {
			break
		}
	}
	return fmt.Errorf("algorithms: the configuration needs about %s of memory, over the limit of %s (%s, or half the machine's memory if less): %s; lower these fields",
		bytesString(total), bytesString(limit), bytesString(DefaultMemoryLimit), strings.Join(names, "; "))
}

func bytesString(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}

// memTerms estimates the trainer's largest buffers for c (with defaults)
// in d dimensions: 8-byte floats.
func (c TrainConfig) memTerms(d int) []memTerm {
	fd := float64(d)
	s := c.Sampler
	chains := float64(c.chains())
	chainsOf := fmt.Sprintf("batch_size %d chains", c.chains())
	if s.Negatives == NegativesSubsample {
		chainsOf = fmt.Sprintf("batch_size/sampler.subsample %d chains", c.chains())
	}
	terms := []memTerm{
		{fmt.Sprintf("persistent %d × %d dims × 8 B", c.Persistent, d), float64(c.Persistent) * fd * 8},
		// positives, starts, negatives and the last starts
		{fmt.Sprintf("batch_size %d × %d dims × 4 buffers × 8 B", c.BatchSize, d), float64(c.BatchSize) * fd * 8 * 4},
	}
	if s.Negatives == "all" {
		terms = append(terms, memTerm{fmt.Sprintf("sampler.steps %d × %s × %d dims × 8 B (sampler.negatives \"all\")", s.Steps, chainsOf, d),
			float64(s.Steps) * chains * fd * 8})
	}
	if c.Algorithm.strategy().kernel() == KernelFlowMC && s.Global == ISIR {
		terms = append(terms, memTerm{fmt.Sprintf("sampler.particles %d × %s × %d dims × 8 B", s.Particles, chainsOf, d),
			float64(s.Particles) * chains * (fd + 2) * 8})
	}
	if c.Pretrain.Steps > 0 {
		terms = append(terms, memTerm{fmt.Sprintf("pretrain.batch_size %d × %d dims × 8 B", c.Pretrain.BatchSize, d),
			float64(c.Pretrain.BatchSize) * (fd + 1) * 8})
	}
	return terms
}

// validate checks the fields of an optimiser's configuration that New does
// not (the decay schedule); prefix names it (ebm_optim, flow_optim).
func (c OptimConfig) validate(prefix string) error {
	if math.IsNaN(c.Decay) || c.Decay < 0 || c.Decay > 1 {
		return fmt.Errorf("algorithms: %s.decay %v, want in (0, 1] (0 or 1: no decay)", prefix, c.Decay)
	}
	if c.DecayEvery < 0 {
		return fmt.Errorf("algorithms: %s.decay_every %d, want ≥ 1 (0 only without decay)", prefix, c.DecayEvery)
	}
	if c.DecayEvery == 0 && c.Decay > 0 && c.Decay < 1 {
		return fmt.Errorf("algorithms: %s.decay_every 0 with %s.decay %v: want decay_every ≥ 1 (the decay would never apply)", prefix, prefix, c.Decay)
	}
	if math.IsInf(c.LR, 0) || math.IsNaN(c.LR) || c.LR < 0 {
		return fmt.Errorf("algorithms: %s.lr %v, want a finite value > 0 (0: the default 1e-3)", prefix, c.LR)
	}
	// Fields of the other optimiser would be ignored.
	switch {
	case c.Name != "sgd" && c.Momentum != 0:
		return fmt.Errorf("algorithms: %s.momentum %v is SGD's; %s.name is %q: drop it, or set name \"sgd\"", prefix, c.Momentum, prefix, cmp.Or(c.Name, "adam"))
	case c.Name == "sgd" && (c.Beta1 != 0 || c.Beta2 != 0 || c.Eps != 0):
		return fmt.Errorf("algorithms: %s.beta1, beta2 and eps are Adam's; %s.name is \"sgd\": drop them", prefix, prefix)
	}
	return nil
}

// validate checks the fields of a run's configuration that are its own (not
// train's), before anything is loaded or allocated. Zero values mean the
// documented defaults; negative ones are refused.
func (c RunConfig) validate() error {
	if c.DataSize < 0 {
		return fmt.Errorf("algorithms: data_size %d, want > 0 (0: the default)", c.DataSize)
	}
	if c.RHatSteps > MaxRHatSteps {
		return fmt.Errorf("algorithms: rhat_steps %d, want at most %d (0: the default)", c.RHatSteps, MaxRHatSteps)
	}
	if c.GridSize != 0 && (c.GridSize < 2 || c.GridSize > MaxGridSize) {
		return fmt.Errorf("algorithms: grid_size %d, want 2..%d (0: the default 200)", c.GridSize, MaxGridSize)
	}
	if c.Epochs < 0 {
		return fmt.Errorf("algorithms: epochs %d, want ≥ 0 (0: train.iterations gives the length)", c.Epochs)
	}
	if (c.Train.Iterations <= 0 && c.Epochs == 0) || c.Train.Iterations > MaxIterations {
		return fmt.Errorf("algorithms: train.iterations %d, want 1..%d", c.Train.Iterations, MaxIterations)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"eval_every", c.EvalEvery}, {"checkpoint_every", c.CheckpointEvery}, {"rhat_every", c.RHatEvery},
		{"rhat_chains", c.RHatChains}, {"rhat_steps", c.RHatSteps}, {"log_z_samples", c.LogZSamples}} {
		if f.v < 0 {
			return fmt.Errorf("algorithms: %s %d, want > 0 (0: the default)", f.name, f.v)
		}
	}
	return c.Model.validate()
}

// validate checks the model's fields (zero values mean the defaults).
func (m ModelConfig) validate() error {
	if !slices.Contains([]string{"", layers.MaskHalf, layers.MaskCheckerboard}, m.FlowMask) {
		return fmt.Errorf("algorithms: model.flow_mask %q, want %q or %q (\"\": %s)", m.FlowMask, layers.MaskHalf, layers.MaskCheckerboard, layers.MaskHalf)
	}
	if !slices.Contains([]string{"", layers.InitSmall, layers.InitSmallLast}, m.FlowInit) {
		return fmt.Errorf("algorithms: model.flow_init %q, want %q or %q (\"\": %s)", m.FlowInit, layers.InitSmall, layers.InitSmallLast, layers.InitSmall)
	}
	if m.FlowBlocks < 0 {
		return fmt.Errorf("algorithms: model.flow_blocks %d, want > 0 (0: the default 4)", m.FlowBlocks)
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
	if m.BaseSigma != 0 && !(m.BaseSigma >= 1e-150 && m.BaseSigma <= 1e150) {
		return fmt.Errorf("algorithms: model.base_sigma %v, want σ in [1e-150, 1e150] (0: from the data)", m.BaseSigma)
	}
	if m.EBMSlope != 0 && !(m.EBMSlope > 0 && m.EBMSlope <= 1) {
		return fmt.Errorf("algorithms: model.ebm_slope %v, want the LeakyReLU's negative slope in (0, 1] (0: the default 0.05)", m.EBMSlope)
	}
	return nil
}

// flowValuesPerBlock is about how many float64 values per point and
// dimension a RealNVP block's graph holds while it is evaluated and
// differentiated: measured peak resident memory 2.24 GB at d = 250 and
// 4.81 GB at d = 500 (200 rows, 4 blocks, 4,096 log Z draws), 73 each.
const flowValuesPerBlock = 75

// memTerms estimates the run's largest buffers in d dimensions: the data,
// the evaluation's draws and grid, the models' parameters (with gradients
// and optimiser moments) and the trainer's (tc, with defaults).
func (c RunConfig) memTerms(tc TrainConfig, d int) []memTerm {
	fd := float64(d)
	terms := []memTerm{
		// rows and their shuffled order
		{fmt.Sprintf("data_size %d × %d dims × 8 B", c.DataSize, d), float64(c.DataSize) * (fd + 2) * 8},
		{fmt.Sprintf("log_z_samples %d × %d dims × 8 B", c.LogZSamples, d), float64(c.LogZSamples) * (fd + 3) * 8},
		{fmt.Sprintf("rhat_chains %d × rhat_steps %d × %d dims × 8 B", c.RHatChains, c.RHatSteps, d),
			float64(c.RHatChains) * float64(c.RHatSteps) * fd * 8},
	}
	if d == 2 {
		terms = append(terms, memTerm{fmt.Sprintf("grid_size %d² × 3 × 8 B", c.GridSize), float64(c.GridSize) * float64(c.GridSize) * 3 * 8})
	}
	// Parameters, gradients, two optimiser moments and the averaged copy.
	const copies = 5
	params := func(sizes []float64) float64 {
		p := 0.0
		for i := 0; i+1 < len(sizes); i++ {
			p += (sizes[i] + 1) * sizes[i+1]
		}
		return p
	}
	ebmHidden, flowHidden := c.Model.EBMHidden, c.Model.FlowHidden
	if ebmHidden == nil {
		ebmHidden = []int{32, 64, 64, 64}
	}
	if flowHidden == nil {
		flowHidden = []int{16}
	}
	ebm := []float64{fd}
	for _, w := range ebmHidden {
		ebm = append(ebm, float64(w))
	}
	terms = append(terms, memTerm{fmt.Sprintf("model.ebm_hidden %v parameters × 8 B × %d", ebmHidden, copies), params(append(ebm, 1)) * 8 * copies})
	// The EBM's activations and their gradients for the largest batch it
	// evaluates: the grid's chunks of 8192 points (2D) or the log Z draws.
	rows, sum := float64(c.LogZSamples), 0.0
	if d == 2 {
		rows = max(rows, 8192)
	}
	for _, w := range ebmHidden {
		sum += float64(w)
	}
	terms = append(terms, memTerm{fmt.Sprintf("the EBM's activations for %.0f points × model.ebm_hidden %v × 8 B × 4", rows, ebmHidden), rows * sum * 8 * 4})
	if tc.usesFlow() {
		flow := []float64{fd}
		for _, w := range flowHidden {
			flow = append(flow, float64(w))
		}
		// Each block: two couplings of a scale and a translation net.
		blocks := c.Model.FlowBlocks
		if blocks == 0 {
			blocks = 4
		}
		terms = append(terms, memTerm{fmt.Sprintf("model.flow_blocks %d × model.flow_hidden %v parameters × 8 B × %d", blocks, flowHidden, copies),
			float64(blocks) * 4 * params(append(flow, fd)) * 8 * copies})
		// The flow's graph holds about flowValuesPerBlock values per point,
		// dimension and block, with their gradients, for the largest batch
		// it evaluates: the log Z draws or i-SIR's proposals.
		rows, of := c.LogZSamples, fmt.Sprintf("log_z_samples %d", c.LogZSamples)
		if p := tc.Sampler.Particles * tc.chains(); tc.Algorithm.strategy().kernel() == KernelFlowMC && p > rows {
			chains := "batch_size"
			if tc.Sampler.Negatives == NegativesSubsample {
				chains = "batch_size/sampler.subsample"
			}
			rows, of = p, fmt.Sprintf("sampler.particles %d × %s %d", tc.Sampler.Particles, chains, tc.chains())
		}
		terms = append(terms, memTerm{fmt.Sprintf("the flow's intermediate values for %s points × %d dims × model.flow_blocks %d × %d × 8 B", of, d, blocks, flowValuesPerBlock),
			float64(rows) * fd * float64(blocks) * flowValuesPerBlock * 8})
	}
	return append(terms, tc.memTerms(d)...)
}

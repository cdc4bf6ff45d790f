package algorithms

import (
	"cmp"
	"fmt"
	"math"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/layers"
)

// ModelSizes sizes the models for TrainConfig.MemoryTerms, under the run
// configuration's names: an energy MLP of hidden widths EBMHidden and a
// RealNVP of FlowBlocks blocks whose coupling networks have hidden widths
// FlowHidden.
type ModelSizes struct {
	EBMHidden  []int
	FlowBlocks int
	FlowHidden []int
	// FlowBins is the spline flow's bins (0: a RealNVP): each coupling's
	// conditioner then outputs 3·bins − 1 values per transformed
	// coordinate.
	FlowBins int
	// EBMEval and FlowEval are the largest batches a run evaluates the
	// models on without training them (the grid, the log Z draws): none
	// for a trainer alone.
	EBMEval, FlowEval Rows
	// EBMNet and FlowNet, when set, size networks other than the MLP
	// energy and the RealNVP or spline flow (the image models): they
	// replace the estimates from the widths above.
	EBMNet, FlowNet *NetSize
}

// NetSize sizes a network that is not an MLP: its parameters, and the
// values its graph holds per row while it is differentiated (Values) or
// only evaluated (EvalValues); Of names it in the estimate's terms.
type NetSize struct {
	Params, Values, EvalValues float64
	Of                         string
}

// sizedNet is a network that sizes itself (layers.ImageEnergy,
// layers.ImageRealNVP).
type sizedNet interface {
	ParamCount() int
	GraphValues(grad bool) float64
}

// netSize is the NetSize of n, named of.
func netSize(n sizedNet, of string) *NetSize {
	return &NetSize{Params: float64(n.ParamCount()), Values: n.GraphValues(true), EvalValues: n.GraphValues(false), Of: of}
}

// SizesOf reads the sizes of the trainer's models. Architectures other
// than flowebm's MLP energy and RealNVP (imported ones) count as their
// input alone, a lower bound: one block without hidden units.
func SizesOf(ebm *graph.EBM, flow *graph.Flow) ModelSizes {
	var m ModelSizes
	if e, ok := ebm.Net.(graph.MLPEnergy); ok && len(e.Sizes) >= 2 {
		m.EBMHidden = e.Sizes[1 : len(e.Sizes)-1]
	}
	if n, ok := ebm.Net.(sizedNet); ok {
		m.EBMNet = netSize(n, fmt.Sprintf("the EBM %T", n))
	}
	if flow == nil {
		return m
	}
	if n, ok := flow.Net.(sizedNet); ok {
		m.FlowNet = netSize(n, fmt.Sprintf("the flow %T", n))
		return m
	}
	m.FlowBlocks = 1
	switch r := flow.Net.(type) {
	case layers.RealNVP:
		m.FlowBlocks, m.FlowHidden = r.Blocks*max(r.BlockDepth, 1), r.Hidden
	case layers.SplineFlow:
		m.FlowBlocks, m.FlowHidden, m.FlowBins = r.Blocks, r.Hidden, r.Spline.WithDefaults().Bins
	}
	return m
}

// Rows is a number of rows a graph holds and the fields that set it.
type Rows struct {
	N  float64
	Of string
}

// Max is the larger of r and o (r if equal).
func (r Rows) Max(o Rows) Rows {
	if o.N > r.N {
		return o
	}
	return r
}

// MemoryTerms estimates the largest buffers of a run of c (with defaults)
// in d dimensions with models of sizes m: the trainer's own, the models'
// parameters (with gradients and optimiser moments) and their graphs'
// intermediate values for the largest batch each is trained or evaluated
// on; 8-byte floats.
func (c TrainConfig) MemoryTerms(d int, m ModelSizes) []sysmem.Term {
	terms := append(c.bufferTerms(d), c.ebmTerms(d, m)...)
	if c.usesFlow() {
		terms = append(terms, c.flowTerms(d, m)...)
	}
	return terms
}

// bufferTerms are the trainer's buffers of points: the bank, the batches,
// the chains' states and i-SIR's proposals.
func (c TrainConfig) bufferTerms(d int) []sysmem.Term {
	fd := float64(d)
	s := c.Sampler
	chains, chainsOf := float64(c.Chains()), c.chainsOf()
	terms := []sysmem.Term{
		term(fmt.Sprintf("persistent %d × %d dims × 8 B", c.Persistent, d), float64(c.Persistent)*fd*8),
		// positives, starts, negatives and the last starts
		term(fmt.Sprintf("batch_size %d × %d dims × 4 buffers × 8 B", c.BatchSize, d), float64(c.BatchSize)*fd*8*4),
	}
	if s.Negatives == NegativesAll {
		terms = append(terms, term(fmt.Sprintf("sampler.steps %d × %s × %d dims × 8 B (sampler.negatives \"all\")", s.Steps, chainsOf, d),
			float64(s.Steps)*chains*fd*8))
	}
	if c.Algorithm.Kernel() == KernelFlowMC && s.Global == ISIR {
		terms = append(terms, term(fmt.Sprintf("sampler.particles %d × %s × %d dims × 8 B", s.Particles, chainsOf, d),
			float64(s.Particles)*chains*(fd+2)*8))
	}
	if c.Pretrain.Steps > 0 {
		terms = append(terms, term(fmt.Sprintf("pretrain.batch_size %d × %d dims × 8 B", c.Pretrain.BatchSize, d),
			float64(c.Pretrain.BatchSize)*(fd+1)*8))
	}
	return terms
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

// sum is the sum of the widths.
func sum(widths []int) float64 {
	s := 0.0
	for _, w := range widths {
		s += float64(w)
	}
	return s
}

// ebmTerms are the EBM's parameters and its graph's values for the largest
// batch it is trained on (c's positives and negatives) or evaluates
// (m.EBMEval).
func (c TrainConfig) ebmTerms(d int, m ModelSizes) []sysmem.Term {
	if n := m.EBMNet; n != nil {
		return n.terms(c.ebmRows(), m.EBMEval)
	}
	units := float64(d) + sum(m.EBMHidden)
	sizes := append(append([]int{d}, m.EBMHidden...), 1)
	params := term(fmt.Sprintf("model.ebm_hidden %v parameters × 8 B × %d", m.EBMHidden, paramCopies), mlpParams(sizes...)*8*paramCopies)
	values := func(r Rows, perUnit float64) sysmem.Term {
		return term(fmt.Sprintf("the EBM's intermediate values for %s points × (%d dims + model.ebm_hidden %v) × %g × 8 B", r.Of, d, m.EBMHidden, perUnit),
			r.N*units*perUnit*8)
	}
	act := values(c.ebmRows(), ebmValuesPerUnit)
	if e := values(m.EBMEval, ebmEvalValuesPerUnit); e.Bytes > act.Bytes {
		act = e
	}
	return []sysmem.Term{params, act}
}

// terms are n's parameters (with their copies) and its graph's values
// for the largest of train rows differentiated and eval rows evaluated.
func (n NetSize) terms(train, eval Rows) []sysmem.Term {
	params := term(fmt.Sprintf("%s: %.0f parameters × 8 B × %d", n.Of, n.Params, paramCopies), n.Params*8*paramCopies)
	values := term(fmt.Sprintf("%s's intermediate values for %s points × %.0f values × 8 B", n.Of, train.Of, n.Values), train.N*n.Values*8)
	if eval.N*n.EvalValues > train.N*n.Values {
		values = term(fmt.Sprintf("%s's intermediate values for %s points × %.0f values × 8 B", n.Of, eval.Of, n.EvalValues), eval.N*n.EvalValues*8)
	}
	return []sysmem.Term{params, values}
}

// ebmRows is the largest batch the EBM is trained on: the positives, the
// negatives or reverse-KL pretraining's draws.
func (c TrainConfig) ebmRows() Rows {
	r := Rows{float64(c.BatchSize), fmt.Sprintf("batch_size %d", c.BatchSize)}.Max(c.negatives())
	if p := c.Pretrain; p.Steps > 0 && p.Objective == ObjectiveReverseKL {
		r = r.Max(Rows{float64(p.BatchSize), fmt.Sprintf("pretrain.batch_size %d", p.BatchSize)})
	}
	return r
}

// flowTerms are the flow's parameters and its graph's values for the
// largest batch it evaluates or is trained on (see flowRows).
func (c TrainConfig) flowTerms(d int, m ModelSizes) []sysmem.Term {
	if n := m.FlowNet; n != nil {
		return n.terms(c.flowRows(m.FlowEval), Rows{})
	}
	blocks := m.FlowBlocks
	// Each block: two couplings of a scale and a translation net (a
	// RealNVP), or of one conditioner from the ⌈d/2⌉ (at most) identity
	// coordinates to 3·bins − 1 outputs per transformed coordinate (a
	// spline flow), its outputs counted as a hidden layer.
	sizes := append(append([]int{d}, m.FlowHidden...), d)
	nets, hidden := 4.0, sum(m.FlowHidden)
	if m.FlowBins > 0 {
		half := (d + 1) / 2
		out := half * (3*m.FlowBins - 1)
		sizes = append(append([]int{half}, m.FlowHidden...), out)
		nets, hidden = 2, hidden+float64(out)
	}
	params := term(fmt.Sprintf("model.flow_blocks %d × model.flow_hidden %v parameters × 8 B × %d", blocks, m.FlowHidden, paramCopies),
		float64(blocks)*nets*mlpParams(sizes...)*8*paramCopies)
	r := c.flowRows(m.FlowEval)
	perRow := float64(blocks) * (float64(d)*flowValuesPerBlock + hidden*flowValuesPerHidden) * 8
	values := term(fmt.Sprintf("the flow's intermediate values for %s points × (%d dims × %d + model.flow_hidden %v × %d) × model.flow_blocks %d × 8 B",
		r.Of, d, flowValuesPerBlock, m.FlowHidden, flowValuesPerHidden, blocks), r.N*perRow)
	return []sysmem.Term{params, values}
}

// flowRows is the largest batch the flow's graph holds: eval (the log Z
// draws), i-SIR's proposals, NT-EBM's chains, the negatives it is trained
// on or the pretraining batch.
func (c TrainConfig) flowRows(eval Rows) Rows {
	r := eval.Max(c.negatives())
	chains := c.chainsOf()
	switch c.Algorithm.Kernel() {
	case KernelFlowMC:
		r = r.Max(Rows{float64(c.Sampler.Particles) * float64(c.Chains()), fmt.Sprintf("sampler.particles %d × %s", c.Sampler.Particles, chains)})
	case KernelNeuTra:
		r = r.Max(Rows{neutraFlowPasses * float64(c.Chains()), fmt.Sprintf("%d × %s (NT-EBM's MALA through the flow)", neutraFlowPasses, chains)})
	}
	if p := c.Pretrain; p.Steps > 0 {
		r = r.Max(Rows{float64(p.BatchSize), fmt.Sprintf("pretrain.batch_size %d", p.BatchSize)})
	}
	return r
}

// negatives is how many negatives an iteration trains on: the chains'
// last states, all their states or the subsampled ones.
func (c TrainConfig) negatives() Rows {
	n, chains := float64(c.Chains()), c.chainsOf()
	switch c.Sampler.Negatives {
	case NegativesAll:
		return Rows{float64(c.Sampler.Steps) * n, fmt.Sprintf("sampler.steps %d × %s (sampler.negatives \"all\")", c.Sampler.Steps, chains)}
	case NegativesSubsample:
		return Rows{n * float64(c.Sampler.Subsample), fmt.Sprintf("%s × sampler.subsample %d", chains, c.Sampler.Subsample)}
	}
	return Rows{n, chains}
}

// chainsOf names the chains an iteration runs and the fields that set them.
func (c TrainConfig) chainsOf() string {
	if c.Sampler.Negatives == NegativesSubsample {
		return fmt.Sprintf("batch_size/sampler.subsample %d chains", c.Chains())
	}
	return fmt.Sprintf("batch_size %d chains", c.Chains())
}

// validate checks every field of an optimiser's configuration, naming
// the field under prefix (ebm_optim, flow_optim) and its file's value.
func (c OptimConfig) validate(prefix string) error {
	if err := c.validateKind(prefix); err != nil {
		return err
	}
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
		return fmt.Errorf("algorithms: %s.lr %v, want a finite value > 0 (unset: the default 1e-3)", prefix, c.LR)
	}
	return nil
}

// validateKind checks the optimiser's name and its own fields, refusing
// the other optimiser's (they would be ignored).
func (c OptimConfig) validateKind(prefix string) error {
	switch c.Name {
	case "", "adam":
		d := c.WithDefaults()
		b1, b2, eps := d.Beta1, d.Beta2, d.Eps
		if !(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1 && eps > 0 && !math.IsInf(eps, 1)) {
			return fmt.Errorf("algorithms: %s.beta1 %v, beta2 %v, eps %v (unset ones at their defaults 0.9, 0.999, 1e-8): want betas in [0, 1) and a finite eps > 0", prefix, b1, b2, eps)
		}
		if c.Momentum != 0 {
			return fmt.Errorf("algorithms: %s.momentum %v is SGD's; %s.name is %q: drop it, or set name \"sgd\"", prefix, c.Momentum, prefix, cmp.Or(c.Name, "adam"))
		}
	case "sgd":
		if !(c.Momentum >= 0 && c.Momentum < 1) {
			return fmt.Errorf("algorithms: %s.momentum %v, want [0, 1)", prefix, c.Momentum)
		}
		if c.Beta1 != 0 || c.Beta2 != 0 || c.Eps != 0 {
			return fmt.Errorf("algorithms: %s.beta1, beta2 and eps are Adam's; %s.name is \"sgd\": drop them", prefix, prefix)
		}
	default:
		return fmt.Errorf("algorithms: %s.name %q, want \"adam\" or \"sgd\"", prefix, c.Name)
	}
	return nil
}

// term is a memory estimate's term.
func term(what string, bytes float64) sysmem.Term { return sysmem.Term{What: what, Bytes: bytes} }

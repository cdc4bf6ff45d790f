package algorithms

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gorgonia.org/tensor"

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
	// EBMEval and FlowEval are the batches a run evaluates the models on
	// without training them (the grid's and the evaluation's chunks, the
	// log Z draws), and EvalChains the chains it runs with the training's
	// kernel (R-hat's, the image figures'): none for a trainer alone.
	EBMEval, FlowEval, EvalChains []Rows
	// EBMNet and FlowNet, when set, size networks other than the MLP
	// energy and the RealNVP or spline flow (the image models): they
	// replace the estimates from the widths above.
	EBMNet, FlowNet *NetSize
	// ValueBytes is the size of one of the graphs' values: 8 (float64,
	// also for 0) or 4 (float32 models).
	ValueBytes float64
}

// valueBytes is m.ValueBytes, 8 where unset.
func (m ModelSizes) valueBytes() float64 {
	if m.ValueBytes == 0 {
		return 8
	}
	return m.ValueBytes
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
	if ebm.Params != nil && ebm.Params.Dtype() == tensor.Float32 {
		m.ValueBytes = 4
	}
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
// intermediate values for every batch each is trained or evaluated on
// (each pass and size keeps its own graph); 8-byte floats.
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
// input's dimensions and model.ebm_hidden's widths) one of the EBM's
// differentiated graphs holds: ULA in d = 2 measured 25.9 KB per
// batch_size row (batch = persistent 2,000 and 50,000: peak resident
// memory 110 MB and 1.29 GB) with ebm_hidden [32 64 64 64], and 62.2 KB
// with [256 256], 15 values per unit, over three graph rows per batch row
// (the loss's positives and negatives, the chains' gradient): 5 each; the
// bank (persistent) and sampler.steps barely count. Evaluating it without
// training (the grid, the log Z draws) holds ebmEvalValuesPerUnit.
const (
	ebmValuesPerUnit     = 6
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

// Batch is a batch of rows that one of a network's compiled graphs takes:
// Graph names the pass ("loss", "grad", "energy", "ml", "sample", …),
// differentiated (Grad) or only evaluated. Every pass keeps a graph with
// all its values for each number of rows it has run on, for the whole
// run, so the estimate sums the distinct ones.
type Batch struct {
	Rows
	Graph string
	Grad  bool
}

// distinct drops empty batches and merges those of a pass and size
// listed before into it (one compiled graph serves them), naming both and
// counted as differentiated if either is.
func distinct(bs []Batch) []Batch {
	type key struct {
		graph string
		n     float64
	}
	at := map[key]int{}
	var out []Batch
	for _, b := range bs {
		k := key{b.Graph, b.N}
		i, seen := at[k]
		switch {
		case b.N <= 0:
		case !seen:
			at[k] = len(out)
			out = append(out, b)
		default:
			out[i].Grad = out[i].Grad || b.Grad
			if !strings.Contains(out[i].Of, b.Of) {
				out[i].Of += " and " + b.Of
			}
		}
	}
	return out
}

// allChains are the chains the kernel runs on: the evaluation's (eval),
// then the training's.
func (c TrainConfig) allChains(eval []Rows) []Rows {
	return append(slices.Clone(eval), Rows{float64(c.Chains()), c.chainsOf()})
}

// ebmTerms are the EBM's parameters and its graphs' values for every
// batch it is trained or evaluated on (ebmBatches).
func (c TrainConfig) ebmTerms(d int, m ModelSizes) []sysmem.Term {
	if n := m.EBMNet; n != nil {
		return n.terms(c.ebmBatches(m), m.valueBytes())
	}
	sizes := append(append([]int{d}, m.EBMHidden...), 1)
	terms := []sysmem.Term{term(fmt.Sprintf("model.ebm_hidden %v parameters × 8 B × %d", m.EBMHidden, paramCopies), mlpParams(sizes...)*8*paramCopies)}
	for _, b := range c.ebmBatches(m) {
		perUnit := float64(ebmEvalValuesPerUnit)
		if b.Grad {
			perUnit = ebmValuesPerUnit
		}
		terms = append(terms, term(fmt.Sprintf("the EBM's intermediate values for %s points × (%d dims + model.ebm_hidden %v) × %g × %g B", b.Of, d, m.EBMHidden, perUnit, m.valueBytes()),
			b.N*m.EBMRowBytes(d, b.Grad)))
	}
	return terms
}

// EBMRowBytes is the bytes the energy MLP's graph holds per point, with
// its gradient (grad) or evaluated only: (d + Σ model.ebm_hidden) units ×
// ebmValuesPerUnit or ebmEvalValuesPerUnit values; 0 for an energy sized
// by EBMNet instead.
func (m ModelSizes) EBMRowBytes(d int, grad bool) float64 {
	if m.EBMNet != nil {
		return 0
	}
	perUnit := float64(ebmEvalValuesPerUnit)
	if grad {
		perUnit = ebmValuesPerUnit
	}
	return (float64(d) + sum(m.EBMHidden)) * perUnit * m.valueBytes()
}

// terms are n's parameters (with their copies), its graphs' values for
// each batch, differentiated or evaluated, and the collector's headroom
// over them (see gcHeadroom).
func (n NetSize) terms(batches []Batch, vb float64) []sysmem.Term {
	terms := []sysmem.Term{term(fmt.Sprintf("%s: %.0f parameters × 8 B × %d", n.Of, n.Params, paramCopies), n.Params*8*paramCopies)}
	values := 0.0
	for _, b := range batches {
		v := n.EvalValues
		if b.Grad {
			v = n.Values
		}
		terms = append(terms, term(fmt.Sprintf("%s's intermediate values for %s points × %.0f values × %g B", n.Of, b.Of, v, vb), b.N*v*vb))
		values += b.N * v * vb
	}
	return append(terms, term(fmt.Sprintf("the garbage collector's headroom over %s's graphs (× %.1f of their values)", n.Of, gcHeadroom), values*gcHeadroom))
}

// gcHeadroom is the memory the Go collector lets a pass's garbage take
// beyond the graphs' live values (GraphValues counts those), as a
// fraction of them: at GOGC 100 the heap grows to twice the live heap
// before a collection. A 2-iteration mnist28 flowMC-EBM run (the defaults,
// 600 training images, an evaluation with R-hat and the image figures)
// peaked at 3.92 GB resident, for 1.99 GB of graph values estimated. The
// MLPs' values per unit were measured as peak resident memory, which
// holds it already.
const gcHeadroom = 1.0

// ebmBatches are the batches the EBM's graphs take: the loss's positives
// and negatives, reverse-KL pretraining's draws, the kernel's on the
// training's and the evaluation's chains (chainBatches) and m.EBMEval.
func (c TrainConfig) ebmBatches(m ModelSizes) []Batch {
	neg := c.negatives()
	loss := float64(c.BatchSize) + neg.N
	bs := []Batch{{Rows{loss, fmt.Sprintf("batch_size %d points and the negatives of %s, %.0f", c.BatchSize, neg.Of, loss)}, "loss", true}}
	if p := c.Pretrain; p.Steps > 0 && p.Objective == ObjectiveReverseKL {
		bs = append(bs, Batch{Rows{float64(p.BatchSize), fmt.Sprintf("pretrain.batch_size %d", p.BatchSize)}, "reverse-kl", true})
	}
	for _, ch := range c.allChains(m.EvalChains) {
		e, _ := c.chainBatches(ch)
		bs = append(bs, e...)
	}
	for _, r := range m.EBMEval {
		bs = append(bs, Batch{r, "energy", false})
	}
	return distinct(bs)
}

// chainBatches are the batches the kernel's graphs take on chains: the
// EBM differentiated at each chain, flowMC's global moves (i-SIR's
// sampler.particles proposals per chain or IMH's one, drawn from the flow
// and evaluated by the EBM, and both densities at the chains),
// NT-EBM's MALA through the flow, CoopFlow's chains drawn from the flow.
func (c TrainConfig) chainBatches(chains Rows) (ebm, flow []Batch) {
	ebm = []Batch{{chains, "grad", true}}
	switch {
	case c.Algorithm.Kernel() == KernelFlowMC:
		props := chains
		if c.Sampler.Global == ISIR {
			props = Rows{float64(c.Sampler.Particles) * chains.N, fmt.Sprintf("sampler.particles %d × %s", c.Sampler.Particles, chains.Of)}
		}
		ebm = append(ebm, Batch{props, "energy", false}, Batch{chains, "energy", false})
		// The proposals' graph counted as differentiated: a bound.
		flow = []Batch{{props, "sample", true}, {chains, "density", false}}
	case c.Algorithm.Kernel() == KernelNeuTra:
		flow = []Batch{{Rows{neutraFlowPasses * chains.N, fmt.Sprintf("%d × %s (NT-EBM's MALA through the flow)", neutraFlowPasses, chains.Of)}, "neutra", true}}
	case c.usesFlow() && !c.PersistentChains():
		flow = []Batch{{chains, "sample", false}}
	}
	return ebm, flow
}

// flowTerms are the flow's parameters and its graphs' values for every
// batch it is trained or evaluated on (flowBatches).
func (c TrainConfig) flowTerms(d int, m ModelSizes) []sysmem.Term {
	if n := m.FlowNet; n != nil {
		return n.terms(c.flowBatches(m), m.valueBytes())
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
	terms := []sysmem.Term{term(fmt.Sprintf("model.flow_blocks %d × model.flow_hidden %v parameters × 8 B × %d", blocks, m.FlowHidden, paramCopies),
		float64(blocks)*nets*mlpParams(sizes...)*8*paramCopies)}
	perRow := m.FlowRowBytes(d)
	for _, b := range c.flowBatches(m) {
		terms = append(terms, term(fmt.Sprintf("the flow's intermediate values for %s points × (%d dims × %d + model.flow_hidden %v × %d) × model.flow_blocks %d × %g B",
			b.Of, d, flowValuesPerBlock, m.FlowHidden, flowValuesPerHidden, blocks, m.valueBytes()), b.N*perRow))
	}
	return terms
}

// FlowRowBytes is the bytes the RealNVP's or spline flow's graph holds
// per point: model.flow_blocks × (d × flowValuesPerBlock + the hidden
// units × flowValuesPerHidden) values; 0 for a flow sized by FlowNet
// instead, or none.
func (m ModelSizes) FlowRowBytes(d int) float64 {
	if m.FlowNet != nil || m.FlowBlocks == 0 {
		return 0
	}
	hidden := sum(m.FlowHidden)
	if m.FlowBins > 0 {
		hidden += float64((d + 1) / 2 * (3*m.FlowBins - 1))
	}
	return float64(m.FlowBlocks) * (float64(d)*flowValuesPerBlock + hidden*flowValuesPerHidden) * m.valueBytes()
}

// flowBatches are the batches the flow's graphs take: the pretraining
// batch, the negatives it is trained on, the kernel's on the training's
// and the evaluation's chains (chainBatches), the bank's start in chunks
// of bankChunk rows (initChains) and m.FlowEval (the log Z draws).
func (c TrainConfig) flowBatches(m ModelSizes) []Batch {
	var bs []Batch
	if p := c.Pretrain; p.Steps > 0 {
		bs = append(bs, Batch{Rows{float64(p.BatchSize), fmt.Sprintf("pretrain.batch_size %d", p.BatchSize)}, "pretrain", true})
	}
	bs = append(bs, Batch{c.negatives(), "ml", true})
	for _, ch := range c.allChains(m.EvalChains) {
		_, f := c.chainBatches(ch)
		bs = append(bs, f...)
	}
	if c.Start == StartFlow {
		bs = append(bs, c.bankBatches()...)
	}
	for _, r := range m.FlowEval {
		bs = append(bs, Batch{r, "sample", false})
	}
	return distinct(bs)
}

// bankBatches are the chunks of the flow's pass over the bank at start
// (initChains): bankChunk rows, and the rest.
func (c TrainConfig) bankBatches() []Batch {
	n := c.Persistent
	if n <= bankChunk {
		return []Batch{{Rows{float64(n), fmt.Sprintf("persistent %d (the bank's start)", n)}, "sample", false}}
	}
	return []Batch{
		{Rows{bankChunk, fmt.Sprintf("persistent %d's start in chunks of %d", n, bankChunk)}, "sample", false},
		{Rows{float64(n % bankChunk), fmt.Sprintf("the last %d of persistent %d's start", n%bankChunk, n)}, "sample", false},
	}
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
			valid := ""
			if !(c.Momentum >= 0 && c.Momentum < 1) {
				valid = ", and not one SGD takes (want [0, 1))"
			}
			return fmt.Errorf("algorithms: %s.momentum %v is SGD's%s; %s.name is %q: drop it, or set name \"sgd\"", prefix, c.Momentum, valid, prefix, cmp.Or(c.Name, "adam"))
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

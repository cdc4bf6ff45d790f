package algorithms

// strategy is what sets one of the paper's four algorithms apart in
// training: the kernel the negatives' chains run, where those chains start,
// whether a flow is trained beside the EBM, the algorithm's own defaults,
// and its column of the paper's sampler tables. Everything else (the data
// batches, the EBM's and the flow's gradient steps, the negatives'
// selection, checkpoints, evaluation) is common to all four. Each
// algorithm's implementation sits in a file of its own.
type strategy interface {
	// kernel is the kind of kernel the negatives' chains run.
	kernel() KernelKind
	// trainsFlow reports whether a companion flow is trained beside the
	// EBM.
	trainsFlow() bool
	// persistentChains reports whether an iteration's chains continue
	// from the persistent bank; otherwise they start afresh from the flow.
	persistentChains() bool
	// defaults fills the algorithm's own defaults into c's zero fields
	// where they differ from the common ones (the bank starts from the
	// flow, which is pretrained, if at all, by reverse KL, and never
	// frozen). c.Iterations is known.
	defaults(c *TrainConfig)
	// stepsPerDraw is how many of the sampler's steps make one draw of the
	// mixing diagnostic's chains.
	stepsPerDraw(s SamplerConfig) int
	// shorten divides the length of the sampler's chains by k (Defaults'
	// scaling for 2 CPU cores).
	shorten(s *SamplerConfig, k int)
	// paperSampler is the algorithm's column of one of the paper's
	// Tables 4–6.
	paperSampler(tb SamplerTable) SamplerConfig
}

// strategy returns the algorithm's implementation; a (checked) empty name
// is flowMC-EBM, the default.
func (a Algorithm) strategy() strategy {
	switch a {
	case ULA:
		return ulaEBM{}
	case NT:
		return ntEBM{}
	case CoopFlow:
		return coopFlow{}
	}
	return flowMCEBM{}
}

// Kernel is the kind of kernel the algorithm's negatives' chains run.
func (a Algorithm) Kernel() KernelKind { return a.strategy().kernel() }

// TrainsFlow reports whether the algorithm trains a companion flow beside
// the EBM (all but ULA-EBM).
func (a Algorithm) TrainsFlow() bool { return a.strategy().trainsFlow() }

// AcceptsLocally reports whether the algorithm's local moves have an
// accept step (all but ULA-EBM's unadjusted Langevin and CoopFlow's
// noise-free Langevin, whose local acceptance is 1 by construction).
func (a Algorithm) AcceptsLocally() bool {
	k := a.strategy().kernel()
	return k != KernelULA && k != KernelLangevinNoiseFree
}

// Shorten divides the length of the algorithm's chains in s by k, keeping
// what the algorithm needs whole (flowMC-EBM's cycles): the scaling of
// the paper's settings to 2 CPU cores.
func (a Algorithm) Shorten(s *SamplerConfig, k int) { a.strategy().shorten(s, k) }

// SamplerTable is one row of the paper's Tables 4–6: flowMC's cycle of
// one global and Local MALA steps (Steps in all, Stacked or not, the
// Negatives selected, i-SIR with Particles), NT-EBM's 128 MALA steps,
// CoopFlow's 256 noise-free Langevin steps at CoopStep and ULA-EBM's 512
// steps at ULAStep, the baselines keeping the last state only.
type SamplerTable struct {
	Local, Steps      int
	Negatives         NegativeSelection
	ULAStep, CoopStep float64
	Particles         int
	Stacked           bool
}

// PaperSampler is the algorithm's sampler in the paper's table row tb.
func (a Algorithm) PaperSampler(tb SamplerTable) SamplerConfig { return a.strategy().paperSampler(tb) }

// baselineSteps shortens a baseline's chains by k (at least one step).
func baselineSteps(s *SamplerConfig, k int) { s.Steps = max(1, s.Steps/k) }

package algorithms

// ulaEBM is ULA-EBM: persistent contrastive divergence, the negatives'
// chains continuing from the persistent bank with unadjusted Langevin
// steps; it has no flow.
type ulaEBM struct{}

func (ulaEBM) kernel() KernelKind     { return KernelULA }
func (ulaEBM) trainsFlow() bool       { return false }
func (ulaEBM) persistentChains() bool { return true }

// defaults starts the bank uniformly (ebm-anatomy's start): there is no
// flow to start from.
func (ulaEBM) defaults(c *TrainConfig) {
	if c.Start == "" {
		c.Start = StartUniform
	}
}

func (ulaEBM) stepsPerDraw(SamplerConfig) int  { return 1 }
func (ulaEBM) shorten(s *SamplerConfig, k int) { baselineSteps(s, k) }

// paperSampler is 512 Langevin steps at the table's ULA step size.
func (ulaEBM) paperSampler(tb SamplerTable) SamplerConfig {
	return SamplerConfig{Particles: tb.Particles, Steps: 512, StepSize: tb.ULAStep}
}

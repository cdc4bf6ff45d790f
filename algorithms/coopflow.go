package algorithms

// coopFlow is CoopFlow: every iteration's chains start afresh from the
// companion flow and run noise-free Langevin steps; the flow, pretrained
// on the data and frozen for the first iterations, is then trained by
// maximum likelihood on the negatives.
type coopFlow struct{}

func (coopFlow) kernel() KernelKind     { return KernelLangevinNoiseFree }
func (coopFlow) trainsFlow() bool       { return true }
func (coopFlow) persistentChains() bool { return false }

// defaults pretrains the flow on the data and freezes it for the first 4%
// of the iterations.
func (coopFlow) defaults(c *TrainConfig) {
	if c.Pretrain.Objective == "" {
		c.Pretrain.Objective = ObjectiveData
	}
	if c.FreezeFlow == 0 {
		c.FreezeFlow = c.Iterations * 4 / 100
	}
}

func (coopFlow) stepsPerDraw(SamplerConfig) int  { return 1 }
func (coopFlow) shorten(s *SamplerConfig, k int) { baselineSteps(s, k) }

// paperSampler is 256 noise-free Langevin steps at the table's step size.
func (coopFlow) paperSampler(tb SamplerTable) SamplerConfig {
	return SamplerConfig{Particles: tb.Particles, Steps: 256, StepSize: tb.CoopStep}
}

package algorithms

// ntEBM is NT-EBM: the negatives' chains continue from the persistent bank
// with MALA in the companion flow's latent space (NeuTra), and the flow is
// trained by maximum likelihood on the negatives.
type ntEBM struct{}

func (ntEBM) kernel() KernelKind     { return KernelNeuTra }
func (ntEBM) trainsFlow() bool       { return true }
func (ntEBM) persistentChains() bool { return true }

func (ntEBM) defaults(*TrainConfig) {}

func (ntEBM) stepsPerDraw(SamplerConfig) int  { return 1 }
func (ntEBM) shorten(s *SamplerConfig, k int) { baselineSteps(s, k) }

// paperSampler is 128 MALA steps at 0.01.
func (ntEBM) paperSampler(tb SamplerTable) SamplerConfig {
	return SamplerConfig{Particles: tb.Particles, Steps: 128, StepSize: 0.01}
}

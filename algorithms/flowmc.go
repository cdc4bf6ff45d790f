package algorithms

// flowMCEBM is flowMC-EBM (Alg. 1): the negatives' chains continue from the
// persistent bank with cycles of global moves from the companion flow
// (i-SIR or IMH) and local MALA moves, and the flow is trained by maximum
// likelihood on the negatives.
type flowMCEBM struct{}

func (flowMCEBM) kernel() KernelKind     { return KernelFlowMC }
func (flowMCEBM) trainsFlow() bool       { return true }
func (flowMCEBM) persistentChains() bool { return true }

func (flowMCEBM) defaults(*TrainConfig) {}

// stepsPerDraw is a whole cycle of global and local moves unless the
// cycles are stacked (one step is then already a cycle).
func (flowMCEBM) stepsPerDraw(s SamplerConfig) int {
	if s.Stacked {
		return 1
	}
	return max(1, s.GlobalSteps+s.LocalSteps)
}

// shorten keeps whole cycles: stacked cycles are fewer (at least 4), and
// unstacked ones have shorter local runs, with a step count that the
// subsampling still divides.
func (flowMCEBM) shorten(s *SamplerConfig, k int) {
	if s.Stacked {
		s.Steps = max(min(4, s.Steps), s.Steps/k)
		return
	}
	s.LocalSteps = max(1, (s.LocalSteps+1)/k-1)
	s.Steps = max(s.GlobalSteps+s.LocalSteps, s.Steps/k)
	if s.Negatives == NegativesSubsample && s.Steps%s.Subsample != 0 {
		s.Steps -= s.Steps % s.Subsample
	}
}

// paperSampler is one global move and the table's local steps per cycle,
// MALA at step 0.01, with the table's selection of negatives.
func (flowMCEBM) paperSampler(tb SamplerTable) SamplerConfig {
	s := SamplerConfig{Particles: tb.Particles, Steps: tb.Steps, GlobalSteps: 1, LocalSteps: tb.Local,
		StepSize: 0.01, Negatives: tb.Negatives, Stacked: tb.Stacked}
	if tb.Negatives == NegativesSubsample {
		s.Subsample = 4
	}
	return s
}

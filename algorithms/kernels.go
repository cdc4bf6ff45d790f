package algorithms

import (
	"fmt"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/samplers"
)

// KernelKind names an MCMC kernel on an EBM.
type KernelKind string

// The kernels: local ones on the EBM alone, flow-assisted ones with a flow.
const (
	KernelMALA              KernelKind = "mala"                // Metropolis-adjusted Langevin
	KernelULA               KernelKind = "ula"                 // unadjusted Langevin
	KernelLangevinNoiseFree KernelKind = "langevin-noise-free" // CoopFlow's gradient descent steps
	KernelHMC               KernelKind = "hmc"                 // Hamiltonian Monte Carlo
	KernelFlowMC            KernelKind = "flowmc"              // i-SIR (or IMH) from the flow, then MALA (Alg. 5)
	KernelNeuTra            KernelKind = "neutra"              // MALA in the flow's latent space
)

// KernelConfig describes a kernel. The zero value of a field means the
// kernel's own default.
type KernelConfig struct {
	Kind KernelKind
	// StepSize is the Langevin/HMC step; MALA adapts it towards
	// TargetAccept unless Frozen.
	StepSize     float64
	TargetAccept float64
	Frozen       bool
	// Leapfrog is HMC's number of leapfrog steps.
	Leapfrog int
	// Global (ISIR or IMH), Particles, GlobalSteps, LocalSteps and Stacked
	// configure flowMC's cycle.
	Global                             GlobalKernel
	Particles, GlobalSteps, LocalSteps int
	Stacked                            bool
}

// Kernels is a kernel with handles on its parts: Local is its MALA (nil
// for the unadjusted and HMC kernels), whose step size adapts and is
// saved in checkpoints.
type Kernels struct {
	Kernel samplers.Kernel
	Local  *samplers.MALA
	flowmc *samplers.FlowMC
	neutra *samplers.NeuTra
}

// NeuTra is the NeuTra kernel, or nil for other kinds.
func (k Kernels) NeuTra() *samplers.NeuTra { return k.neutra }

// Reset forgets per-chain state (flowMC's position in its cycle, NeuTra's
// latent chains) before a new set of chains.
func (k Kernels) Reset() {
	if k.flowmc != nil {
		k.flowmc.Reset()
	}
	if k.neutra != nil {
		k.neutra.Reset()
	}
}

// NewKernels builds the kernel c describes on the EBM target, with flow
// for the flow-assisted kinds: the one kernel factory of training,
// evaluation and "flowebm sample".
func NewKernels(c KernelConfig, target *graph.EBM, flow *graph.Flow) (Kernels, error) {
	if (c.Kind == KernelFlowMC || c.Kind == KernelNeuTra) && flow == nil {
		return Kernels{}, fmt.Errorf("algorithms: the %s kernel needs a flow", c.Kind)
	}
	mala := &samplers.MALA{Target: target, StepSize: c.StepSize, TargetAccept: c.TargetAccept, Frozen: c.Frozen}
	switch c.Kind {
	case KernelMALA:
		return Kernels{Kernel: mala, Local: mala}, nil
	case KernelULA, KernelLangevinNoiseFree:
		return Kernels{Kernel: &samplers.ULA{Target: target, StepSize: c.StepSize, NoiseFree: c.Kind == KernelLangevinNoiseFree}}, nil
	case KernelHMC:
		return Kernels{Kernel: &samplers.HMC{Target: target, StepSize: c.StepSize, Leapfrog: c.Leapfrog}}, nil
	case KernelFlowMC:
		var global samplers.Kernel = &samplers.ISIR{Target: target, Proposal: flow, Particles: c.Particles}
		if c.Global == IMH {
			global = &samplers.IMH{Target: target, Proposal: flow}
		}
		fm := &samplers.FlowMC{Global: global, Local: mala, GlobalSteps: c.GlobalSteps, LocalSteps: c.LocalSteps, Stacked: c.Stacked}
		return Kernels{Kernel: fm, Local: mala, flowmc: fm}, nil
	case KernelNeuTra:
		lat, err := graph.NewLatent(flow, target)
		if err != nil {
			return Kernels{}, err
		}
		nt := &samplers.NeuTra{Latent: lat, Local: *mala}
		return Kernels{Kernel: nt, Local: &nt.Local, neutra: nt}, nil
	}
	return Kernels{}, fmt.Errorf("algorithms: kernel %q, want mala, ula, hmc, flowmc or neutra", c.Kind)
}

// kernelConfig is the negatives' kernel of the training configuration c,
// with MALA step size step (frozen: no adaptation).
func (c TrainConfig) kernelConfig(step float64, frozen bool) KernelConfig {
	s := c.Sampler
	k := KernelConfig{StepSize: step, TargetAccept: s.TargetAccept, Frozen: frozen,
		Global: s.Global, Particles: s.Particles, GlobalSteps: s.GlobalSteps, LocalSteps: s.LocalSteps, Stacked: s.Stacked}
	k.Kind = c.Algorithm.strategy().kernel()
	return k
}

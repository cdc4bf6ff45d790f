package algorithms

import (
	"strings"
	"testing"
)

// NewKernels builds every kind, with a MALA handle where the kernel has
// one; flow-assisted kinds without a flow and unknown kinds are refused.
func TestNewKernels(t *testing.T) {
	r := smallRun(t, FlowMC, 2, t.TempDir())
	ebm, flow := r.Trainer.EBM, r.Trainer.Flow
	for kind, hasLocal := range map[KernelKind]bool{KernelMALA: true, KernelULA: false, KernelLangevinNoiseFree: false, KernelHMC: false, KernelFlowMC: true, KernelNeuTra: true} {
		k, err := NewKernels(KernelConfig{Kind: kind, StepSize: 0.01, Leapfrog: 3, Particles: 4, GlobalSteps: 1, LocalSteps: 2}, ebm, flow)
		if err != nil || k.Kernel == nil || (k.Local != nil) != hasLocal {
			t.Errorf("%s: %+v, %v", kind, k, err)
		}
	}
	for _, kind := range []KernelKind{KernelFlowMC, KernelNeuTra} {
		if _, err := NewKernels(KernelConfig{Kind: kind, StepSize: 0.01}, ebm, nil); err == nil || !strings.Contains(err.Error(), "needs a flow") {
			t.Errorf("%s without a flow: %v", kind, err)
		}
	}
	if _, err := NewKernels(KernelConfig{Kind: "gibbs"}, ebm, flow); err == nil || !strings.Contains(err.Error(), `kernel "gibbs"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

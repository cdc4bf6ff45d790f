package training

import (
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
)

// algorithms.NewKernels builds every kind, with a MALA handle where the kernel has
// one; flow-assisted kinds without a flow and unknown kinds are refused.
func TestNewKernels(t *testing.T) {
	r := smallRun(t, algorithms.FlowMC, 2, t.TempDir())
	ebm, flow := r.Trainer.EBM, r.Trainer.Flow
	for kind, hasLocal := range map[algorithms.KernelKind]bool{algorithms.KernelMALA: true, algorithms.KernelULA: false, algorithms.KernelLangevinNoiseFree: false, algorithms.KernelHMC: false, algorithms.KernelFlowMC: true, algorithms.KernelNeuTra: true} {
		k, err := algorithms.NewKernels(algorithms.KernelConfig{Kind: kind, StepSize: 0.01, Leapfrog: 3, Particles: 4, GlobalSteps: 1, LocalSteps: 2}, ebm, flow)
		if err != nil || k.Kernel == nil || (k.Local != nil) != hasLocal {
			t.Errorf("%s: %+v, %v", kind, k, err)
		}
	}
	for _, kind := range []algorithms.KernelKind{algorithms.KernelFlowMC, algorithms.KernelNeuTra} {
		if _, err := algorithms.NewKernels(algorithms.KernelConfig{Kind: kind, StepSize: 0.01}, ebm, nil); err == nil || !strings.Contains(err.Error(), "needs a flow") {
			t.Errorf("%s without a flow: %v", kind, err)
		}
	}
	if _, err := algorithms.NewKernels(algorithms.KernelConfig{Kind: "gibbs"}, ebm, flow); err == nil || !strings.Contains(err.Error(), `kernel "gibbs"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

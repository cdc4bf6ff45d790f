package config

import (
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
)

// A float32 model's graphs hold 4-byte values: the estimate of their
// intermediate values is half the float64 model's (it counted 8 B, and
// refused four-gaussians-64 with 256 i-SIR particles in float32 at 8.54
// GiB, which needs half of its 7.08 GiB of flow values); parameters and
// the kernels' float64 buffers are counted as before.
func TestMemoryFloat32Values(t *testing.T) {
	tc := algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Iterations: 10, BatchSize: 128, Persistent: 2048,
		Sampler: algorithms.SamplerConfig{Particles: 256, GlobalSteps: 1, LocalSteps: 8, Steps: 4}}
	resolved, err := tc.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[bool][2]float64{}
	for _, f32 := range []bool{false, true} {
		c := Run{DataSize: 16384, LogZSamples: 4096, RHatChains: 128, RHatSteps: 16, Model: Model{FlowBlocks: 4, FlowHidden: []int{51, 51, 51}, Float32: f32}}
		var values, other float64
		for _, term := range c.memoryTerms(resolved, 64) {
			if strings.Contains(term.What, "intermediate values") {
				values += term.Bytes
			} else if !strings.Contains(term.What, "headroom") {
				other += term.Bytes
			}
		}
		sums[f32] = [2]float64{values, other}
	}
	if f64, f32 := sums[false], sums[true]; f64[0] == 0 || f32[0] != f64[0]/2 || f32[1] != f64[1] {
		t.Errorf("float64: values %.4g B, other %.4g B; float32: values %.4g B, other %.4g B; want half the values, the same other terms", f64[0], f64[1], f32[0], f32[1])
	}
}

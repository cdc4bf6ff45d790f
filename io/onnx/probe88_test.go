package onnx

import (
	"math"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Round 88 A4: a float32 flow whose log_density is float64 (its base a
// torch.distributions.Normal of float64 tensors) was refused: its map's
// Jacobian was checked by float64 finite differences, whose round-off in
// float32 exceeded the float64 tolerance. It reads, with float32's step
// and tolerance, and its two graphs agree.
func TestMixedFloatFlowReads(t *testing.T) {
	dir := filepath.Join("testdata", "pinned")
	f, err := ReadFlow(filepath.Join(dir, "mixedbase_flow_sample.onnx"), filepath.Join(dir, "mixedbase_flow_density.onnx"), FlowConfig{Frozen: true})
	if err != nil {
		t.Fatal(err)
	}
	z := mat.NewDense(3, 2, []float64{0.1, -0.4, 1.2, 0.3, -0.7, 0.9})
	x, ld := mat.NewDense(3, 2, nil), make([]float64, 3)
	if err := f.Forward(z, x, ld); err != nil {
		t.Fatal(err)
	}
	lq := make([]float64, 3)
	if err := f.LogDensity(x, lq); err != nil {
		t.Fatal(err)
	}
	for i := range lq {
		lr := -0.5*(z.At(i, 0)*z.At(i, 0)+z.At(i, 1)*z.At(i, 1)) - math.Log(2*math.Pi)
		if want := lr - ld[i]; math.Abs(lq[i]-want) > 1e-4 {
			t.Errorf("point %d: log q(x) %v from the density graph, log ρ(z) − log|det| %v from the sampling graph", i, lq[i], want)
		}
	}
}

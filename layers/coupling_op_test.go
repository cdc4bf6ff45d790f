package layers_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// The fused coupling operations on graph's executor (the tests of
// coupling_op_internal_test.go run Gorgonia's TapeMachine): the flow's
// parameter gradient and its gradient with respect to the input, both
// directions, against central finite differences.

// couplingTestFlow is a flow with weights far from the identity.
func couplingTestFlow(t *testing.T, r layers.RealNVP, dt tensor.Dtype, seed uint64) *graph.Flow {
	t.Helper()
	r.InitScale = 1
	rng := rand.New(rand.NewPCG(seed, seed+1))
	f, err := graph.NewFlow(r, layers.NewIsotropic(r.Dim, 1.2), dt, rng)
	if err != nil {
		t.Fatal(err)
	}
	flat := f.Params.Flatten(nil)
	for i := range flat {
		flat[i] += 0.2 * rng.NormFloat64()
	}
	f.Params.SetFlat(flat)
	return f
}

func couplingTestMatrix(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := range m.RawMatrix().Data {
		m.RawMatrix().Data[i] = rng.NormFloat64()
	}
	return m
}

var couplingTestNets = []layers.RealNVP{
	{Dim: 6, Blocks: 2, Hidden: []int{7}, Mask: layers.MaskCheckerboard},
	{Dim: 5, Blocks: 1, BlockDepth: 2, Hidden: []int{6, 6}, Activation: layers.Tanh},
	{Dim: 8, Blocks: 2, BlockDepth: 2, Hidden: []int{5}, Mask: layers.MaskCheckerboard, Init: layers.InitSmallLast},
}

// TestCouplingFlowParamGradient: graph.CheckFlow (∇ mean log λ through the
// inverse, by the executor) within the repository's 1e-6.
func TestCouplingFlowParamGradient(t *testing.T) {
	for i, r := range couplingTestNets {
		f := couplingTestFlow(t, r, tensor.Float64, uint64(10+i))
		c, err := graph.CheckFlow(f, couplingTestMatrix(rand.New(rand.NewPCG(3, uint64(i))), 5, r.Dim))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v: %v", r, c)
		if c.RelErr > 1e-6 {
			t.Errorf("%+v: %v", r, c)
		}
	}
}

// TestCouplingFlowInputGradient: ∇_z of log π(T(z)) + log|J_T(z)| for a
// flow target π (NeuTra with a flow as target: the forward map, then the
// target flow's inverse), against central finite differences per row.
func TestCouplingFlowInputGradient(t *testing.T) {
	for i, r := range couplingTestNets {
		pre, target := couplingTestFlow(t, r, tensor.Float64, uint64(20+i)), couplingTestFlow(t, r, tensor.Float64, uint64(30+i))
		lat, err := graph.NewLatent(pre, target)
		if err != nil {
			t.Fatal(err)
		}
		const n = 4
		z := couplingTestMatrix(rand.New(rand.NewPCG(4, uint64(i))), n, r.Dim)
		lp, grad := make([]float64, n), mat.NewDense(n, r.Dim, nil)
		if err := lat.LogDensityGrad(z, lp, grad); err != nil {
			t.Fatal(err)
		}
		one, oneLp := mat.NewDense(1, r.Dim, nil), make([]float64, 1)
		for k := 0; k < n; k++ {
			f := func(v []float64) float64 {
				one.SetRow(0, v)
				if err := lat.LogDensity(one, oneLp); err != nil {
					t.Fatal(err)
				}
				return oneLp[0]
			}
			want := fd.Gradient(nil, f, mat.Row(nil, k, z), &fd.Settings{Formula: fd.Central})
			got := grad.RawRowView(k)
			num, den := 0.0, 0.0
			for j := range got {
				num = math.Max(num, math.Abs(got[j]-want[j]))
				den = math.Max(den, math.Max(math.Abs(got[j]), math.Abs(want[j])))
			}
			if num > 1e-6*den {
				t.Errorf("%+v, row %d: ∇_z %v, finite differences %v", r, k, got, want)
			}
		}
	}
}

// TestCouplingFlowFloat32: the float32 flow of the d = 64 benchmark
// agrees with float64 to float32 round-off, forward and inverse (same
// bound and reasoning as graph's TestFlowFloat32MatchesFloat64).
func TestCouplingFlowFloat32(t *testing.T) {
	r := couplingBenchNet
	f32, f64 := couplingTestFlow(t, r, tensor.Float32, 40), couplingTestFlow(t, r, tensor.Float64, 40)
	f64.Params.SetFlat(f32.Params.Flatten(nil))
	const n = 16
	z := couplingTestMatrix(rand.New(rand.NewPCG(5, 6)), n, r.Dim)
	for i, v := range z.RawMatrix().Data {
		z.RawMatrix().Data[i] = float64(float32(v))
	}
	x32, x64 := mat.NewDense(n, r.Dim, nil), mat.NewDense(n, r.Dim, nil)
	l32, l64 := make([]float64, n), make([]float64, n)
	if err := f32.Forward(z, x32, l32); err != nil {
		t.Fatal(err)
	}
	if err := f64.Forward(z, x64, l64); err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(x32, x64, 1e-4) {
		t.Errorf("float32 T(z) differs from float64 by more than 1e-4")
	}
	q32, q64 := make([]float64, n), make([]float64, n)
	if err := f32.LogDensity(x64, q32); err != nil {
		t.Fatal(err)
	}
	if err := f64.LogDensity(x64, q64); err != nil {
		t.Fatal(err)
	}
	for i := range q64 {
		if math.Abs(l32[i]-l64[i]) > 1e-4*math.Max(1, math.Abs(l64[i])) || math.Abs(q32[i]-q64[i]) > 1e-4*math.Max(1, math.Abs(q64[i])) {
			t.Errorf("row %d: log|J| %v (float32), %v (float64); log λ %v, %v", i, l32[i], l64[i], q32[i], q64[i])
		}
	}
}

// couplingBenchNet is the RealNVP of the four-gaussians d = 64 experiment
// (algorithms/settings: 4 blocks of Table 7's [51, 51, 51], checkerboard
// masks, small output layers), with weights drawn at InitScale 1 so that
// the couplings are far from the identity. couplingBenchTail is the same
// flow with hidden width 2: its matrix products are negligible, which
// leaves the couplings' elementwise operations.
var (
	couplingBenchNet  = layers.RealNVP{Dim: 64, Blocks: 4, Hidden: []int{51, 51, 51}, Mask: layers.MaskCheckerboard, Init: layers.InitSmallLast, InitScale: 1}
	couplingBenchTail = layers.RealNVP{Dim: 64, Blocks: 4, Hidden: []int{2}, Mask: layers.MaskCheckerboard, Init: layers.InitSmallLast, InitScale: 1}
)

func couplingBenchFlow(b *testing.B, r layers.RealNVP, dt tensor.Dtype, n int) (*graph.Flow, *mat.Dense) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	f, err := graph.NewFlow(r, layers.NewIsotropic(r.Dim, 1), dt, rng)
	if err != nil {
		b.Fatal(err)
	}
	x := mat.NewDense(n, r.Dim, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = rng.NormFloat64()
	}
	return f, x
}

// BenchmarkCouplingFlow times Flow.Forward, Flow.LogDensity and
// Flow.MLGrad of the d = 64 RealNVP (and of its elementwise part alone,
// "tail") on the executor (graphs compiled outside the timer), on the BLAS
// that FLOWEBM_BLAS selects.
func BenchmarkCouplingFlow(b *testing.B) {
	name, err := graph.UseBLASFromEnv() // as the command line: OpenBLAS where it loads
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("BLAS: %s; vector math: %s", name, layers.VectorMath())
	for _, net := range []struct {
		name string
		r    layers.RealNVP
	}{{"d=64", couplingBenchNet}, {"d=64-tail", couplingBenchTail}} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, n := range []int{128, 1024} {
				bench := func(what string, run func(f *graph.Flow, x *mat.Dense) error) {
					b.Run(fmt.Sprintf("%s/%s/%v/B=%d", net.name, what, dt, n), func(b *testing.B) {
						f, x := couplingBenchFlow(b, net.r, dt, n)
						if err := run(f, x); err != nil { // compiles the graph
							b.Fatal(err)
						}
						b.ReportAllocs()
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if err := run(f, x); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
				out, ld := mat.NewDense(n, net.r.Dim, nil), make([]float64, n)
				grad := []float64(nil)
				bench("Forward", func(f *graph.Flow, z *mat.Dense) error { return f.Forward(z, out, ld) })
				bench("LogDensity", func(f *graph.Flow, x *mat.Dense) error { return f.LogDensity(x, ld) })
				bench("MLGrad", func(f *graph.Flow, x *mat.Dense) error {
					if grad == nil {
						grad = make([]float64, f.Params.Count())
					}
					_, err := f.MLGrad(x, grad)
					return err
				})
			}
		}
	}
}

package layers_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// splineBenchNets are the d = 64 spline flow (4 bins) and the RealNVP of
// the same blocks, hidden widths and mask.
var splineBenchNets = []struct {
	name string
	net  graph.FlowNet
}{
	{"spline", layers.SplineFlow{Dim: 64, Blocks: 4, Hidden: []int{51, 51, 51}, Mask: layers.MaskCheckerboard, InitScale: 1, Spline: layers.RQSpline{Bins: 4}}},
	{"realnvp", layers.RealNVP{Dim: 64, Blocks: 4, Hidden: []int{51, 51, 51}, Mask: layers.MaskCheckerboard, Init: layers.InitSmallLast}},
}

// BenchmarkSplineFlowD64 times, for the d = 64 spline flow and the
// RealNVP of the same size, one Flow.Sample plus one Flow.LogDensity of
// 2048 rows (the forward and the inverse pass) and one Flow.MLGrad of 512
// rows, in float64 and float32, on the BLAS that FLOWEBM_BLAS selects
// (graphs compiled outside the timer).
func BenchmarkSplineFlowD64(b *testing.B) {
	name, err := graph.UseBLASFromEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("BLAS: %s; vector math: %s", name, layers.VectorMath())
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, c := range splineBenchNets {
			bench := func(what string, n int, run func(f *graph.Flow, x *mat.Dense, rng *rand.Rand) error) {
				b.Run(fmt.Sprintf("%s/%s/%v/B=%d", what, c.name, dt, n), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(1, 2))
					f, err := graph.NewFlow(c.net, layers.NewIsotropic(64, 1), dt, rng)
					if err != nil {
						b.Fatal(err)
					}
					x := smoothPoints(rng, n, 64, 1.5)
					if err := run(f, x, rng); err != nil { // compiles the graphs
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if err := run(f, x, rng); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			xs, lq := mat.NewDense(2048, 64, nil), make([]float64, 2048)
			bench("SampleLogDensity", 2048, func(f *graph.Flow, x *mat.Dense, rng *rand.Rand) error {
				if err := f.Sample(rng, xs, lq); err != nil {
					return err
				}
				return f.LogDensity(x, lq)
			})
			var grad []float64
			bench("MLGrad", 512, func(f *graph.Flow, x *mat.Dense, _ *rand.Rand) error {
				if grad == nil {
					grad = make([]float64, f.Params.Count())
				}
				_, err := f.MLGrad(x, grad)
				return err
			})
		}
	}
}

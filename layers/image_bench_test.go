package layers_test

import (
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// imgBenchDtypes are the float types the image benchmarks run in.
var imgBenchDtypes = []struct {
	name string
	dt   tensor.Dtype
}{{"float64", tensor.Float64}, {"float32", tensor.Float32}}

// BenchmarkImageEnergyGrad times E and ∇ₓE of the default image EBM
// (222,017 parameters) on a batch of 64 1×28×28 images, weights moved off
// the zero last layer (the graph is compiled before the timer starts).
func BenchmarkImageEnergyGrad(b *testing.B) {
	imgBenchBLAS(b)
	for _, c := range imgBenchDtypes {
		b.Run(c.name, func(b *testing.B) {
			e := imgPerturbed(b, layers.ImageEnergy{}, c.dt, 0.01, 1)
			n := 64
			x := imgRandMatrix(imgRNG(2), n, 784, 1)
			en, g := make([]float64, n), mat.NewDense(n, 784, nil)
			if err := e.EnergyGrad(x, en, g); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := e.EnergyGrad(x, en, g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkImageRealNVP times the default image flow (191,524 parameters)
// on a batch of 64 1×28×28 images: sample (z ~ ρ, x = T(z) and log λ(x))
// and density (log λ(x) through T⁻¹), weights moved off the identity.
func BenchmarkImageRealNVP(b *testing.B) {
	imgBenchBLAS(b)
	for _, c := range imgBenchDtypes {
		f := imgFlow(b, layers.ImageRealNVP{}, c.dt, 0.01, 3)
		n := 64
		x, lq := mat.NewDense(n, 784, nil), make([]float64, n)
		rng := imgRNG(4)
		b.Run("sample/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := f.Sample(rng, x, lq); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("density/"+c.name, func(b *testing.B) {
			if err := f.LogDensity(x, lq); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := f.LogDensity(x, lq); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// imgBenchBLAS selects the BLAS as the command line does (FLOWEBM_BLAS;
// OpenBLAS where it loads) and logs it.
func imgBenchBLAS(b *testing.B) {
	name, err := graph.UseBLASFromEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("BLAS: %s; vector math: %s", name, layers.VectorMath())
}

var _ graph.FlowNet = layers.ImageRealNVP{}
var _ graph.EnergyNet = layers.ImageEnergy{}

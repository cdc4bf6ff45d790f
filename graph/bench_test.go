package graph

import (
	"fmt"
	"testing"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

var benchDtypes = []tensor.Dtype{tensor.Float64, tensor.Float32}

// BenchmarkEnergyGrad: toy EBM E + ∇ₓE (d = 2).
func BenchmarkEnergyGrad(b *testing.B) {
	for _, dt := range benchDtypes {
		for _, n := range []int{64, 1024, 8192} {
			b.Run(fmt.Sprintf("%v/B=%d", dt, n), func(b *testing.B) {
				e := mustEBM(b, ToyEnergyNet(2, false), nil, dt, 1)
				x := randMatrix(newRNG(2), n, 2, 1)
				en, g := make([]float64, n), mat.NewDense(n, 2, nil)
				if err := e.EnergyGrad(x, en, g); err != nil { // compile outside the timer
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
}

// BenchmarkLossGrad: toy EBM training gradient, 256 positives + 256 negatives.
func BenchmarkLossGrad(b *testing.B) {
	for _, dt := range benchDtypes {
		b.Run(fmt.Sprintf("%v/B=256", dt), func(b *testing.B) {
			e := mustEBM(b, ToyEnergyNet(2, false), nil, dt, 3)
			rng := newRNG(4)
			pos, neg := randMatrix(rng, 256, 2, 1), randMatrix(rng, 256, 2, 1)
			grad := make([]float64, e.Params.Count())
			if _, err := e.LossGrad(pos, neg, 0, grad); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.LossGrad(pos, neg, 0, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchFlows are the paper's sizes: App. C.2 (d = 2) and App. C.5 (d = 64).
var benchFlows = map[string]layers.RealNVP{
	"d=2":  {Dim: 2, Blocks: 4, Hidden: []int{16}},
	"d=64": {Dim: 64, Blocks: 2, Hidden: []int{51, 51, 51}},
}

// BenchmarkFlowMLGrad: log λ(x) and ∇_α mean log λ at B = 1024.
func BenchmarkFlowMLGrad(b *testing.B) {
	for _, dt := range benchDtypes {
		for name, net := range benchFlows {
			b.Run(fmt.Sprintf("%v/%s/B=1024", dt, name), func(b *testing.B) {
				f := randomFlow(b, net, 1, dt, 5)
				x := randMatrix(newRNG(6), 1024, net.Dim, 1)
				grad := make([]float64, f.Params.Count())
				if _, err := f.MLGrad(x, grad); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := f.MLGrad(x, grad); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFlowSample: z ~ ρ, x = T(z), log λ(x) at B = 1024.
func BenchmarkFlowSample(b *testing.B) {
	for _, dt := range benchDtypes {
		for name, net := range benchFlows {
			b.Run(fmt.Sprintf("%v/%s/B=1024", dt, name), func(b *testing.B) {
				f := randomFlow(b, net, 1, dt, 7)
				rng := newRNG(8)
				z, x, lq := mat.NewDense(1024, net.Dim, nil), mat.NewDense(1024, net.Dim, nil), make([]float64, 1024)
				if err := f.SampleLatent(rng, z, x, lq); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := f.SampleLatent(rng, z, x, lq); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

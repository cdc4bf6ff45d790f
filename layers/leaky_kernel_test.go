package layers

import (
	"math"
	"math/rand/v2"
	"testing"
)

// leaky64 and leaky32 (C for long slices where cgo is on) give the Go
// loops' bits for every kind of value (±0, ±Inf, NaN, subnormals, both
// signs) at every length around the C threshold, for ReLU (slope 0) and
// leaky slopes, as activation (y = x) and as gradient (y ≠ x).
func TestLeakyKernelsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, -5e-324, 1e308, -1e308}
	draw := func() float64 {
		if rng.IntN(4) == 0 {
			return special[rng.IntN(len(special))]
		}
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4))
	}
	for _, n := range []int{1, leakyCMin - 1, leakyCMin, leakyCMin + 1, 1000, 4099} {
		x, g := make([]float64, n), make([]float64, n)
		x32, g32 := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], g[i] = draw(), draw()
			x32[i], g32[i] = float32(x[i]), float32(g[i])
		}
		for _, slope := range []float64{0, 0.01, 0.2} {
			for _, y := range [][]float64{x, g} {
				got, want := make([]float64, n), make([]float64, n)
				leaky64(got, x, y, slope)
				leakyGo64(want, x, y, slope)
				for i := range got {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("float64 n %d slope %v: element %d (x %v, y %v): %v, Go %v", n, slope, i, x[i], y[i], got[i], want[i])
					}
				}
			}
			for _, y := range [][]float32{x32, g32} {
				got, want := make([]float32, n), make([]float32, n)
				leaky32(got, x32, y, float32(slope))
				leakyGo32(want, x32, y, float32(slope))
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("float32 n %d slope %v: element %d (x %v, y %v): %v, Go %v", n, slope, i, x32[i], y[i], got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkLeaky32 times LeakyReLU's float32 loop on a d = 64 hidden
// layer's batch (1,024 rows × 51 units): the C loop against the Go loop.
func BenchmarkLeaky32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1024 * 51
	x, dst := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, k := range []struct {
		name string
		f    func(dst, x, y []float32, slope float32)
	}{{"kernel", leaky32}, {"go", leakyGo32}} {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(8 * n))
			for range b.N {
				k.f(dst, x, x, 0.2)
			}
		})
	}
}

// BenchmarkLeaky64 times the float64 loop on the same layer (Go: C was
// slower, see leaky64).
func BenchmarkLeaky64(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1024 * 51
	x, dst := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	b.SetBytes(int64(16 * n))
	for range b.N {
		leaky64(dst, x, x, 0.2)
	}
}

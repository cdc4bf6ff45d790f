package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The elementwise functions give each element a result that depends on its
// value alone: not on the length of the array it sits in, its position there,
// where the Go allocator put the input and output buffers, or whether they
// overlap (in place). Before, GCC's alias check chose between a vector and a
// scalar loop by the buffers' distance, and the last n mod VF elements went
// through the scalar loop, so a float32 flow's log-density of one point
// changed in the last bits from one run to the next.
func TestVectorMathDependsOnValueAlone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 150 // two full blocks of 64 and a tail of 22
	src32 := make([]float32, n)
	src64 := make([]float64, n)
	for i := range src32 {
		v := rng.NormFloat64() * 3
		src32[i], src64[i] = float32(v), v
	}
	type fn32 = func(dst, src []float32)
	type fn64 = func(dst, src []float64)
	fns32 := map[string]fn32{
		"exp32":    func(d, s []float32) { exp32(d, s, false) },
		"exp32neg": func(d, s []float32) { exp32(d, s, true) },
		"tanh32":   tanh32,
	}
	fns64 := map[string]fn64{
		"exp64":    func(d, s []float64) { exp64(d, s, false) },
		"exp64neg": func(d, s []float64) { exp64(d, s, true) },
		"tanh64":   tanh64,
	}
	for name, f := range fns32 {
		checkValueAlone(t, name, f, src32)
	}
	for name, f := range fns64 {
		checkValueAlone(t, name, f, src64)
	}
}

// checkValueAlone checks f(src) element by element against f applied to
// each element alone, in every buffer layout.
func checkValueAlone[T float32 | float64](t *testing.T, name string, f func(dst, src []T), src []T) {
	t.Helper()
	n := len(src)
	ref := make([]T, n)
	for i := range src {
		out := make([]T, 1)
		f(out, src[i:i+1])
		ref[i] = out[0]
	}
	for _, c := range layouts(n) {
		buf := make([]T, c.size)
		copy(buf[c.src:], src)
		f(buf[c.dst:c.dst+n], buf[c.src:c.src+n])
		for i := 0; i < n; i++ {
			if got := buf[c.dst+i]; got != ref[i] && !(got != got && ref[i] != ref[i]) {
				t.Fatalf("%s %s: element %d = %v, alone %v", name, c.name, i, got, ref[i])
			}
		}
	}
}

type layout struct {
	name           string
	size, src, dst int
}

// layouts places an input and an output of n elements in one buffer: in
// place, output just after the input (within a vector's width of each other
// or not), and at odd offsets.
func layouts(n int) []layout {
	var ls []layout
	for _, off := range []int{0, 1, 3} {
		ls = append(ls, layout{fmt.Sprintf("in place at %d", off), n + off, off, off})
		for _, gap := range []int{0, 1, 2, 5, 8, 17, 64} {
			ls = append(ls, layout{fmt.Sprintf("output %d after the input at %d", gap, off), 2*n + gap + off, off, off + n + gap})
		}
	}
	return ls
}

func BenchmarkVectorMath(b *testing.B) {
	for _, n := range []int{16, 1000, 64 * 256} {
		src := make([]float32, n)
		dst := make([]float32, n)
		for i := range src {
			src[i] = float32(i%17) / 5
		}
		b.Run(fmt.Sprintf("exp32/%d", n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				exp32(dst, src, false)
			}
		})
		b.Run(fmt.Sprintf("tanh32/%d", n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				tanh32(dst, src)
			}
		})
	}
}

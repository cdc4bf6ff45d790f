package nd

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Helpers shared by the indexing, matrix product, convolution and
// pooling operations (slice.go … pool.go).

// fp is the element type of the tensors the operations work on.
type fp interface{ float32 | float64 }

// data returns t's elements, its backing slice cut to its size, as []T
// (t must hold T).
func data[T fp](t *tensor.Dense) []T {
	var z T
	var d []T
	if _, ok := any(z).(float32); ok {
		d = any(t.Float32s()).([]T)
	} else {
		d = any(t.Float64s()).([]T)
	}
	return d[:prod(shapeOf(t))]
}

// shapeOf is t's shape, (1) for a scalar.
func shapeOf(t *tensor.Dense) tensor.Shape {
	if s := t.Shape(); len(s) > 0 {
		return s
	}
	return tensor.Shape{1}
}

// prod is the product of s (1 for none).
func prod(s []int) int {
	p := 1
	for _, v := range s {
		p *= v
	}
	return p
}

// positive says whether every dimension of the shapes is at least 1.
func positive(shapes ...[]int) bool {
	for _, s := range shapes {
		for _, d := range s {
			if d < 1 {
				return false
			}
		}
	}
	return true
}

// atLeast1 is s, or (1) if s is empty (a rank-0 result).
func atLeast1(s tensor.Shape) tensor.Shape {
	if len(s) == 0 {
		return tensor.Shape{1}
	}
	return s
}

// gemm sets c = op(a)·op(b) + beta·c through Gorgonia's BLAS, op(x) being
// x or xᵀ (ta, tb), for row-major m×k and k×n products.
func gemm[T fp](ta, tb bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if ta {
		tA = blas.Trans
	}
	if tb {
		tB = blas.Trans
	}
	impl := G.WhichBLAS()
	switch cv := any(c).(type) {
	case []float64:
		impl.Dgemm(tA, tB, m, n, k, 1, any(a).([]float64), lda, any(b).([]float64), ldb, float64(beta), cv, ldc)
	case []float32:
		impl.Sgemm(tA, tB, m, n, k, 1, any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), cv, ldc)
	}
}

// slicePool recycles scratch slices of T.
type slicePool[T any] struct{ p sync.Pool }

// get returns a slice of length n (contents undefined).
func (sp *slicePool[T]) get(n int) *[]T {
	if b, ok := sp.p.Get().(*[]T); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]T, n)
	return &b
}

func (sp *slicePool[T]) put(b *[]T) { sp.p.Put(b) }

var (
	intPool slicePool[int]
	f64Pool slicePool[float64]
	f32Pool slicePool[float32]
)

// getScratch returns a pooled scratch slice of n Ts; give it back with
// putScratch.
func getScratch[T fp](n int) *[]T {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(f32Pool.get(n)).(*[]T)
	}
	return any(f64Pool.get(n)).(*[]T)
}

func putScratch[T fp](b *[]T) {
	switch p := any(b).(type) {
	case *[]float32:
		f32Pool.put(p)
	case *[]float64:
		f64Pool.put(p)
	}
}

// parallelWork is the number of multiply-adds below which work is not
// split between goroutines (a variable for tests).
var parallelWork = 1 << 16

// shards is the number of ranges parallelFor splits large work into. It
// is fixed, not the number of cores, so that the ranges, and with them
// the order in which per-range sums (a convolution's weight gradient) are
// added, are the same on every machine: results are bit-identical
// whatever GOMAXPROCS is; the Go scheduler spreads the goroutines over
// the cores there are.
const shards = 4

// chunks is the number of goroutines parallelFor uses for n items and the
// given total work in multiply-adds: shards, or one for small work.
func chunks(n, work int) int {
	if work < parallelWork {
		return 1
	}
	return max(1, min(shards, n))
}

// parallelFor splits [0, n) into chunks(n, work) contiguous ranges and
// runs f(w, lo, hi) on each in its own goroutine, w numbering the range.
func parallelFor(n, work int, f func(w, lo, hi int)) {
	p := chunks(n, work)
	if p == 1 {
		f(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < p; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			f(w, w*n/p, (w+1)*n/p)
		}(w)
	}
	wg.Wait()
}

// indexValue converts an index carried as a float to an int in [0, n),
// counting negative ones from the end.
func indexValue(v float64, n int) (int, error) {
	if v != math.Trunc(v) || v < float64(-n) || v >= float64(n) {
		return 0, fmt.Errorf("index %v out of range for a dimension of %d", v, n)
	}
	i := int(v)
	if i < 0 {
		i += n
	}
	return i, nil
}

// fill sets every element of s to v.
func fill[T fp](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// addTo adds src to dst elementwise.
func addTo[T fp](dst, src []T) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}

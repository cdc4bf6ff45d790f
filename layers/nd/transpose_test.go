package nd

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// transposeRef permutes x by definition.
func transposeRef(x input, p []int) []float64 {
	s := make([]int, len(p))
	for i, a := range p {
		s[i] = x.shape[a]
	}
	out := make([]float64, len(x.vals))
	for i := range out {
		c := unravel(i, s)
		ci := make([]int, len(p))
		for k, a := range p {
			ci[a] = c[k]
		}
		out[i] = x.vals[ravel(ci, x.shape)]
	}
	return out
}

func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, c := range []struct{ shape, perm []int }{
		{[]int{2, 3}, []int{1, 0}},
		{[]int{40, 35}, []int{1, 0}},
		{[]int{2, 3}, []int{0, 1}},
		{[]int{5}, []int{0}},
		{[]int{1}, []int{0}},
		{[]int{2, 3, 4, 5}, []int{0, 2, 3, 1}}, // NCHW → NHWC
		{[]int{2, 4, 5, 3}, []int{0, 3, 1, 2}}, // NHWC → NCHW
		{[]int{2, 3, 4, 5}, []int{0, 2, 1, 3}},
		{[]int{2, 3, 4, 5}, []int{3, 2, 1, 0}},
		{[]int{2, 3, 4, 5}, []int{1, 0, 3, 2}},
		{[]int{2, 1, 3}, []int{2, 1, 0}},
		{[]int{1, 3, 1, 4}, []int{2, 3, 0, 1}},
		{[]int{2, 1, 3}, []int{0, 2, 1}},
		{[]int{3, 33, 40}, []int{0, 2, 1}},
		{[]int{2, 3, 4}, []int{1, 2, 0}},
	} {
		op := Transpose{Perm: c.perm}
		x := randInput(rng, c.shape...)
		got, _ := eval64(t, op, x)
		if len(x.vals) <= 200 { // the large ones test the blocks of transpose2D
			got = checkOp(t, op, gradTol, x)
		}
		sameVals(t, op.String(), got, transposeRef(x, c.perm))
	}
	// An empty permutation reverses the axes.
	x := randInput(rng, 2, 3, 4)
	got, s := eval64(t, Transpose{}, x)
	if !s.Eq(tensor.Shape{4, 3, 2}) {
		t.Fatalf("Transpose{} shape %v", s)
	}
	sameVals(t, "Transpose{}", got, transposeRef(x, []int{2, 1, 0}))
	checkOp(t, Transpose{}, gradTol, x)
	checkGraph32(t, Transpose{Perm: []int{0, 2, 3, 1}}, randInput(rng, 2, 3, 2, 2))
	for _, p := range [][]int{{0, 0, 1}, {0, 1}, {0, 1, 3}, {-1, 0, 1}} {
		if _, err := (Transpose{Perm: p}).InferShape(tensor.Shape{2, 3, 4}); err == nil {
			t.Errorf("Transpose%v of (2, 3, 4) accepted", p)
		}
	}
}

func TestSimplifyPerm(t *testing.T) {
	for _, c := range []struct {
		shape, perm, dims, q []int
	}{
		{[]int{2, 3, 4, 5}, []int{0, 2, 3, 1}, []int{2, 3, 20}, []int{0, 2, 1}},
		{[]int{2, 3, 4, 5}, []int{0, 1, 2, 3}, []int{120}, []int{0}},
		{[]int{2, 1, 3}, []int{0, 2, 1}, []int{6}, []int{0}},
		{[]int{1, 1}, []int{1, 0}, []int{}, []int{}},
		{[]int{2, 3, 4}, []int{2, 0, 1}, []int{6, 4}, []int{1, 0}},
	} {
		d, q := simplifyPerm(c.shape, c.perm)
		if !intsEq(d, c.dims) || !intsEq(q, c.q) {
			t.Errorf("simplifyPerm(%v, %v) = %v %v, want %v %v", c.shape, c.perm, d, q, c.dims, c.q)
		}
	}
}

func intsEq(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

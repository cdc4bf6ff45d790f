package nd

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// matMulRef multiplies naively, broadcasting the batch axes.
func matMulRef(ta, tb bool, a, b input) ([]float64, []int) {
	ra, rb := len(a.shape), len(b.shape)
	m, k := a.shape[ra-2], a.shape[ra-1]
	if ta {
		m, k = k, m
	}
	n := b.shape[rb-1]
	if tb {
		n = b.shape[rb-2]
	}
	batch, _ := broadcastBatch(a.shape[:ra-2], b.shape[:rb-2])
	out := append(append([]int{}, batch...), m, n)
	res := make([]float64, prod(out))
	// at returns x's element at batch coordinates bc (broadcast) and (i, j).
	at := func(x input, bc []int, i, j int, t bool) float64 {
		r := len(x.shape)
		c := make([]int, r)
		for ax := 0; ax < r-2; ax++ {
			if x.shape[ax] > 1 {
				c[ax] = bc[len(bc)-(r-2)+ax]
			}
		}
		if t {
			i, j = j, i
		}
		c[r-2], c[r-1] = i, j
		return x.vals[ravel(c, x.shape)]
	}
	for f := range res {
		c := unravel(f, out)
		bc, i, j := c[:len(batch)], c[len(batch)], c[len(batch)+1]
		for l := 0; l < k; l++ {
			res[f] += at(a, bc, i, l, ta) * at(b, bc, l, j, tb)
		}
	}
	return res, out
}

func TestMatMulValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct {
		as, bs []int
		ta, tb bool
	}{
		{[]int{2, 3, 4, 5}, []int{5, 6}, false, false},
		{[]int{2, 3, 4, 5}, []int{6, 5}, false, true},
		{[]int{3, 4}, []int{2, 4, 5}, false, false},
		{[]int{2, 1, 3, 4}, []int{5, 4, 6}, false, false},
		{[]int{2, 5, 3}, []int{2, 4, 5}, true, true},
		{[]int{2, 5, 3}, []int{1, 5, 4}, true, false},
		{[]int{4, 3}, []int{4, 2}, true, false},
		{[]int{3, 1, 4}, []int{3, 2, 4}, false, true},
		{[]int{1, 2}, []int{2, 1}, false, false},
	} {
		a, b := randInput(rng, c.as...), randInput(rng, c.bs...)
		op := MatMul{TransA: c.ta, TransB: c.tb, RankA: len(c.as), RankB: len(c.bs)}
		got := checkOp(t, op, gradTol, a, b)
		want, _ := matMulRef(c.ta, c.tb, a, b)
		wantClose(t, op.String(), got, want, 1e-12)
	}
}

func TestMatMulErrors(t *testing.T) {
	for _, c := range [][2][]int{{{3, 4}, {5, 6}}, {{2, 3, 4}, {3, 4, 5}}, {{4}, {4, 5}}} {
		a := tensor.New(tensor.WithShape(c[0]...), tensor.Of(tensor.Float64))
		b := tensor.New(tensor.WithShape(c[1]...), tensor.Of(tensor.Float64))
		if _, err := Eval(MatMul{}, a, b); err == nil {
			t.Errorf("%v · %v: no error", c[0], c[1])
		}
	}
}

func BenchmarkMatMulBatched(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := dense64(randInput(rng, 64, 32, 128))
	w := dense64(randInput(rng, 128, 64))
	op := MatMul{RankA: 3, RankB: 2}
	out, _ := Eval(op, x, w)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := op.UsePreallocDo(out, x, w); err != nil {
			b.Fatal(err)
		}
	}
}

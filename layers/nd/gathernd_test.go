package nd

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// ndRef lists, for each index row of q into data of shape ds with b batch
// dimensions, the flat data indices of its block, in order.
func ndRef(ds []int, q input, b int) [][]int {
	k := q.shape[len(q.shape)-1]
	rows := len(q.vals) / k
	perBatch := prod(q.shape[b : len(q.shape)-1])
	blockShape := ds[b+k:]
	var out [][]int
	for r := 0; r < rows; r++ {
		lead := unravel(r/perBatch, ds[:b])
		for j := 0; j < k; j++ {
			v := int(q.vals[r*k+j])
			if v < 0 {
				v += ds[b+j]
			}
			lead = append(lead, v)
		}
		var blk []int
		for e := 0; e < prod(blockShape); e++ {
			blk = append(blk, ravel(append(append([]int{}, lead...), unravel(e, blockShape)...), ds))
		}
		out = append(out, blk)
	}
	return out
}

func TestGatherNDONNXExamples(t *testing.T) {
	x := input{shape: []int{2, 2}, vals: []float64{0, 1, 2, 3}, diff: true}
	got := checkOp(t, GatherND{Rank: 2, IndicesRank: 2, IndexDepth: 2}, gradTol, x, indexInput([]int{2, 2}, 0, 0, 1, 1))
	wantClose(t, "example 1", got, []float64{0, 3}, 0)
	x3 := input{shape: []int{2, 2, 2}, vals: []float64{0, 1, 2, 3, 4, 5, 6, 7}, diff: true}
	got = checkOp(t, GatherND{BatchDims: 1, Rank: 3, IndicesRank: 2, IndexDepth: 1}, gradTol, x3, indexInput([]int{2, 1}, 1, 0))
	wantClose(t, "example 5", got, []float64{2, 3, 4, 5}, 0)
}

func TestGatherNDValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	x := randInput(rng, 2, 3, 4, 5)
	for _, c := range []struct {
		b  int
		qs []int
	}{{1, []int{2, 3, 2}}, {0, []int{5, 4}}, {0, []int{3}}, {2, []int{2, 3, 1}}, {0, []int{4, 1}}} {
		q := input{shape: c.qs, vals: make([]float64, prod(c.qs))}
		k := c.qs[len(c.qs)-1]
		for i := range q.vals {
			n := x.shape[c.b+i%k]
			q.vals[i] = float64(rng.IntN(2*n) - n)
		}
		op := GatherND{BatchDims: c.b, Rank: 4, IndicesRank: len(c.qs), IndexDepth: k}
		got := checkOp(t, op, gradTol, x, q)
		var want []float64
		for _, blk := range ndRef(x.shape, q, c.b) {
			for _, i := range blk {
				want = append(want, x.vals[i])
			}
		}
		wantClose(t, op.String(), got, want, 0)
	}
}

func TestGatherNDScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	x := randInput(rng, 3, 4)
	got := checkOp(t, GatherND{Rank: 2, IndicesRank: 1, IndexDepth: 2}, gradTol, x, indexInput([]int{2}, 2, -1))
	wantClose(t, "scalar", got, []float64{x.vals[11]}, 0)
}

func TestGatherNDErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(3, 4), tensor.Of(tensor.Float64))
	for _, c := range []struct {
		b  int
		qs []int
		q  []float64
	}{{0, []int{1, 2}, []float64{3, 0}}, {0, []int{1, 3}, []float64{0, 0, 0}}, {1, []int{2, 1}, []float64{0, 0}}, {0, []int{1, 1}, []float64{1.5}}} {
		q := tensor.New(tensor.WithShape(c.qs...), tensor.WithBacking(c.q))
		if _, err := Eval(GatherND{BatchDims: c.b}, x, q); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func TestScatterNDONNXExample(t *testing.T) {
	x := input{shape: []int{8}, vals: []float64{1, 2, 3, 4, 5, 6, 7, 8}, diff: true}
	u := input{shape: []int{4}, vals: []float64{9, 10, 11, 12}, diff: true}
	got := checkOp(t, ScatterND{Rank: 1, IndicesRank: 2, IndexDepth: 1}, gradTol, x, indexInput([]int{4, 1}, 4, 3, 1, 7), u)
	wantClose(t, "example 1", got, []float64{1, 11, 3, 10, 9, 6, 7, 12}, 0)
}

func TestScatterNDValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	x := randInput(rng, 4, 3, 2)
	for _, c := range []struct {
		qs []int
		q  []int
		us []int
	}{
		{[]int{3, 2}, []int{1, 2, -1, 0, 1, 2}, []int{3, 2}},
		{[]int{2, 2, 1}, []int{3, 0, 0, -1}, []int{2, 2, 3, 2}},
		{[]int{2, 3}, []int{0, 1, 1, 3, 2, 0}, []int{2}},
		{[]int{3}, []int{2, 2, 1}, []int{1}},
	} {
		q := indexInput(c.qs, c.q...)
		u := randInput(rng, c.us...)
		op := ScatterND{Rank: 3, IndicesRank: len(c.qs), IndexDepth: c.qs[len(c.qs)-1]}
		got := checkOp(t, op, gradTol, x, q, u)
		want := append([]float64(nil), x.vals...)
		for r, blk := range ndRef(x.shape, q, 0) {
			for e, i := range blk {
				want[i] = u.vals[r*len(blk)+e]
			}
		}
		wantClose(t, op.String(), got, want, 0)
	}
}

func TestScatterNDErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(3, 4), tensor.Of(tensor.Float64))
	q := tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float64{0, 3}))
	u := tensor.New(tensor.WithShape(2, 4), tensor.Of(tensor.Float64))
	if _, err := Eval(ScatterND{}, x, q, u); err == nil {
		t.Error("index out of range: no error")
	}
	q = tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float64{0, 2}))
	u = tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float64))
	if _, err := Eval(ScatterND{}, x, q, u); err == nil {
		t.Error("updates of the wrong shape: no error")
	}
}

package nd

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGatherValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	x := randInput(rng, 3, 4, 5)
	for _, op := range []Gather{
		{Axis: 1, Indices: []int{3, 0, 3, 1, 2, 2}, IndicesShape: []int{2, 3}, Rank: 3},
		{Axis: 2, Indices: []int{4, 4, 0, 1}, IndicesShape: []int{4}, Rank: 3},
		{Axis: 0, Indices: []int{2}, IndicesShape: nil, Rank: 3},
	} {
		got := checkOp(t, op, gradTol, x)
		a := op.Axis
		outShape := append(append(append([]int{}, x.shape[:a]...), op.IndicesShape...), x.shape[a+1:]...)
		want := make([]float64, prod(outShape))
		for i := range want {
			c := unravel(i, outShape)
			k := len(op.IndicesShape)
			src := append(append(append([]int{}, c[:a]...), op.Indices[ravel(c[a:a+k], op.IndicesShape)]), c[a+k:]...)
			want[i] = x.vals[ravel(src, x.shape)]
		}
		wantClose(t, op.String(), got, want, 0)
	}
}

func TestGatherScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	x := randInput(rng, 6)
	op := Gather{Axis: 0, Indices: []int{4}, Rank: 1}
	got := checkOp(t, op, gradTol, x)
	wantClose(t, "gather", got, []float64{x.vals[4]}, 0)
	if r := op.Type().String(); r == "" {
		t.Fatal("no type")
	}
	g := G.NewGraph()
	n := G.NewTensor(g, tensor.Float64, 1, G.WithShape(6), G.WithName("x"))
	y, err := Apply(op, n)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape{1}) || y.Dims() != 1 {
		t.Fatalf("scalar gather gives %v of shape %v", y.Type(), y.Shape())
	}
}

func TestGatherErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(3, 4), tensor.Of(tensor.Float64))
	for _, op := range []Gather{
		{Axis: 1, Indices: []int{4}, IndicesShape: []int{1}, Rank: 2},
		{Axis: 1, Indices: []int{-1}, IndicesShape: []int{1}, Rank: 2},
		{Axis: 2, Indices: []int{0}, IndicesShape: []int{1}, Rank: 2},
		{Axis: 0, Indices: []int{0, 1}, IndicesShape: []int{3}, Rank: 2},
	} {
		if _, err := Eval(op, x); err == nil {
			t.Errorf("%v: no error", op)
		}
	}
}

// gatherElementsRef is GatherElements computed coordinate by coordinate.
func gatherElementsRef(axis int, x, q input) []float64 {
	want := make([]float64, len(q.vals))
	for i := range want {
		c := unravel(i, q.shape)
		j := int(q.vals[i])
		if j < 0 {
			j += x.shape[axis]
		}
		c[axis] = j
		want[i] = x.vals[ravel(c, x.shape)]
	}
	return want
}

func TestGatherElementsValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	x := randInput(rng, 3, 4, 5)
	for axis := 0; axis < 3; axis++ {
		qs := []int{2, 3, 4}
		qs[axis] = 6
		q := input{shape: qs, vals: make([]float64, prod(qs))}
		n := x.shape[axis]
		for i := range q.vals {
			q.vals[i] = float64(rng.IntN(2*n) - n)
		}
		op := GatherElements{Axis: axis, Rank: 3}
		got := checkOp(t, op, gradTol, x, q)
		wantClose(t, op.String(), got, gatherElementsRef(axis, x, q), 0)
	}
}

func TestGatherElementsErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(3, 4), tensor.Of(tensor.Float64))
	for _, q := range [][]float64{{0, 4}, {0, -5}, {0.5, 1}} {
		idx := tensor.New(tensor.WithShape(1, 2), tensor.WithBacking(q))
		if _, err := Eval(GatherElements{Axis: 1, Rank: 2}, x, idx); err == nil {
			t.Errorf("indices %v: no error", q)
		}
	}
	idx := tensor.New(tensor.WithShape(1, 5), tensor.Of(tensor.Float64))
	if _, err := Eval(GatherElements{Axis: 0, Rank: 2}, x, idx); err == nil {
		t.Error("indices wider than data: no error")
	}
}

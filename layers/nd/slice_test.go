package nd

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestSliceValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := randInput(rng, 4, 5, 6)
	op := Slice{Starts: []int{1, 4, 0}, Steps: []int{2, -2, 1}, Counts: []int{2, 3, 6}}
	got := checkOp(t, op, gradTol, x)
	var want []float64
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 6; k++ {
				want = append(want, x.vals[ravel([]int{1 + 2*i, 4 - 2*j, k}, x.shape)])
			}
		}
	}
	wantClose(t, "slice", got, want, 0)
}

func TestSliceSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randInput(rng, 7)
	got := checkOp(t, Slice{Starts: []int{6}, Steps: []int{-3}, Counts: []int{3}}, gradTol, x)
	wantClose(t, "slice", got, []float64{x.vals[6], x.vals[3], x.vals[0]}, 0)
}

func TestSliceErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(3, 4), tensor.Of(tensor.Float64))
	for _, op := range []Slice{
		{Starts: []int{0}, Steps: []int{1}, Counts: []int{1}},
		{Starts: []int{0, 0}, Steps: []int{1, 1}, Counts: []int{4, 1}},
		{Starts: []int{0, 3}, Steps: []int{1, -1}, Counts: []int{1, 5}},
		{Starts: []int{0, 0}, Steps: []int{0, 1}, Counts: []int{1, 1}},
		{Starts: []int{0, 0}, Steps: []int{1, 1}, Counts: []int{0, 1}},
	} {
		if _, err := Eval(op, x); err == nil {
			t.Errorf("%v: no error", op)
		}
		if _, err := op.InferShape(x.Shape()); err == nil {
			t.Errorf("%v: InferShape: no error", op)
		}
	}
}

// TestSliceGraphType checks that Type agrees with the ranks Gorgonia sees.
func TestSliceGraphType(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 2, G.WithShape(3, 4), G.WithName("x"))
	y, err := Apply(Slice{Starts: []int{0, 1}, Steps: []int{1, 1}, Counts: []int{3, 2}}, x)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape{3, 2}) || y.Dtype() != tensor.Float32 {
		t.Fatalf("node %v of shape %v", y.Type(), y.Shape())
	}
}

package nd

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestExpand(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct {
		in, shape, want []int
	}{
		{[]int{3, 1}, []int{2, 1, 6}, []int{2, 3, 6}}, // ONNX's example
		{[]int{3, 1}, []int{3, 4}, []int{3, 4}},
		{[]int{4}, []int{2, 3, 1}, []int{2, 3, 4}},
		{[]int{2, 3}, []int{3}, []int{2, 3}},
		{[]int{2, 3}, []int{1, 1}, []int{2, 3}},
		{[]int{1}, []int{2, 2, 2, 2}, []int{2, 2, 2, 2}},
		{[]int{2, 1, 3, 1}, []int{4, 1, 5}, []int{2, 4, 3, 5}},
	} {
		op := Expand{Shape: c.shape, Rank: len(c.in)}
		x := randInput(rng, c.in...)
		got := checkOp(t, op, gradTol, x)
		want, ws := broadcastRef(func(a, _ float64) float64 { return a }, x, vals(c.shape, make([]float64, prod(c.shape))...))
		if !tensor.Shape(ws).Eq(tensor.Shape(c.want)) {
			t.Fatalf("reference shape %v, want %v", ws, c.want)
		}
		sameVals(t, op.String(), got, want)
		checkGraph32(t, op, x)
	}
	for _, c := range []struct {
		op Expand
		in []int
	}{
		{Expand{Shape: []int{3}, Rank: 1}, []int{2}},
		{Expand{Shape: []int{2, 0}, Rank: 2}, []int{2, 1}},
		{Expand{Shape: []int{3}}, []int{2, 3}},
	} {
		if _, err := c.op.InferShape(tensor.Shape(c.in)); err == nil {
			t.Errorf("%v of %v accepted", c.op, c.in)
		}
	}
	// Rank 0 stands for len(Shape).
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 2, G.WithShape(3, 1), G.WithName("x"))
	if y, err := Apply(Expand{Shape: []int{3, 5}}, x); err != nil || !y.Shape().Eq(tensor.Shape{3, 5}) {
		t.Errorf("Expand without Rank: %v", err)
	}
}

// tileRef tiles x by definition.
func tileRef(x input, reps []int) ([]float64, []int) {
	s := make([]int, len(x.shape))
	for a := range s {
		s[a] = x.shape[a] * reps[a]
	}
	out := make([]float64, prod(s))
	for i := range out {
		c := unravel(i, s)
		for a := range c {
			c[a] %= x.shape[a]
		}
		out[i] = x.vals[ravel(c, x.shape)]
	}
	return out, s
}

func TestTile(t *testing.T) {
	got, _ := eval64(t, Tile{Repeats: []int{2, 2}}, vals([]int{2, 2}, 0, 1, 2, 3))
	sameVals(t, "Tile", got, []float64{0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3}) // ONNX's example
	rng := rand.New(rand.NewPCG(25, 26))
	for _, c := range []struct{ in, reps []int }{
		{[]int{2, 3}, []int{2, 2}},
		{[]int{2, 3}, []int{1, 3}},
		{[]int{4}, []int{3}},
		{[]int{1}, []int{5}},
		{[]int{2, 1, 3}, []int{1, 4, 2}},
		{[]int{2, 3}, []int{1, 1}},
	} {
		op := Tile{Repeats: c.reps}
		x := randInput(rng, c.in...)
		got := checkOp(t, op, gradTol, x)
		want, _ := tileRef(x, c.reps)
		sameVals(t, op.String(), got, want)
		checkGraph32(t, op, x)
	}
	for _, op := range []Tile{{Repeats: []int{2}}, {Repeats: []int{0, 1}}} {
		if _, err := op.InferShape(tensor.Shape{2, 3}); err == nil {
			t.Errorf("%v of (2, 3) accepted", op)
		}
	}
}

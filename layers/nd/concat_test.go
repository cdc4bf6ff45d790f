package nd

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestConcatValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for axis := 0; axis < 3; axis++ {
		shapes := [][]int{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}
		for i := range shapes {
			shapes[i][axis] = i + 1
		}
		ins := []input{randInput(rng, shapes[0]...), randInput(rng, shapes[1]...), randInput(rng, shapes[2]...)}
		got := checkOp(t, Concat{Axis: axis, Rank: 3, N: 3}, gradTol, ins...)
		outShape := append([]int(nil), shapes[0]...)
		outShape[axis] = 6
		want := make([]float64, prod(outShape))
		for i := range want {
			c := unravel(i, outShape)
			k := 0
			for c[axis] >= shapes[k][axis] {
				c[axis] -= shapes[k][axis]
				k++
			}
			want[i] = ins[k].vals[ravel(c, shapes[k])]
		}
		wantClose(t, "concat", got, want, 0)
	}
}

func TestConcatOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := randInput(rng, 5)
	got := checkOp(t, Concat{Axis: 0, Rank: 1, N: 1}, gradTol, x)
	wantClose(t, "concat", got, x.vals, 0)
}

func TestConcatErrors(t *testing.T) {
	a := tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float64))
	b := tensor.New(tensor.WithShape(3, 3), tensor.Of(tensor.Float64))
	if _, err := Eval(Concat{Axis: 1, Rank: 2, N: 2}, a, b); err == nil {
		t.Error("mismatched shapes: no error")
	}
	if _, err := Eval(Concat{Axis: 2, Rank: 2, N: 2}, a, a); err == nil {
		t.Error("axis out of range: no error")
	}
	if _, err := Eval(Concat{Axis: 0, Rank: 2, N: 0}); err == nil {
		t.Error("no inputs: no error")
	}
}

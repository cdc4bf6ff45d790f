package nd

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// padRef pads x naively, coordinate by coordinate.
func padRef(op Pad, x input) []float64 {
	out := make([]int, len(x.shape))
	for a, n := range x.shape {
		out[a] = n + op.Begin[a] + op.End[a]
	}
	want := make([]float64, prod(out))
	for i := range want {
		c := unravel(i, out)
		border := false
		for a, n := range x.shape {
			j := c[a] - op.Begin[a]
			for j < 0 || j >= n {
				switch op.Mode {
				case PadConstant:
					border = true
					j = 0
				case PadEdge:
					j = min(max(j, 0), n-1)
				case PadReflect:
					if j < 0 {
						j = -j
					} else {
						j = 2*n - 2 - j
					}
				}
			}
			c[a] = j
		}
		if border {
			want[i] = op.Value
		} else {
			want[i] = x.vals[ravel(c, x.shape)]
		}
	}
	return want
}

func TestPadValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	x := randInput(rng, 3, 4, 5)
	for _, op := range []Pad{
		{Begin: []int{1, 0, 2}, End: []int{2, 1, 0}, Mode: PadConstant, Value: 1.5},
		{Begin: []int{2, 3, 1}, End: []int{2, 0, 4}, Mode: PadReflect},
		{Begin: []int{3, 1, 0}, End: []int{0, 5, 2}, Mode: PadEdge},
		{Begin: []int{-1, 2, -2}, End: []int{1, -2, 1}, Mode: PadConstant},
		{Begin: []int{-1, 2, -2}, End: []int{1, -1, 2}, Mode: PadReflect},
		{Begin: []int{-1, 2, -2}, End: []int{2, -1, 3}, Mode: PadEdge},
	} {
		got := checkOp(t, op, gradTol, x)
		wantClose(t, op.String(), got, padRef(op, x), 0)
	}
}

func TestPadErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(3, 4), tensor.Of(tensor.Float32))
	for _, op := range []Pad{
		{Begin: []int{0}, End: []int{0}},
		{Begin: []int{-2, 0}, End: []int{-1, 0}},
		{Begin: []int{3, 0}, End: []int{0, 0}, Mode: PadReflect},
		{Begin: []int{-1, 0}, End: []int{2, 0}, Mode: PadReflect},
		{Begin: []int{0, 0}, End: []int{0, 0}, Mode: PadMode(7)},
	} {
		if _, err := Eval(op, x); err == nil {
			t.Errorf("%v: no error", op)
		}
		if _, err := op.InferShape(x.Shape()); err == nil {
			t.Errorf("%v: InferShape: no error", op)
		}
	}
}

package nd

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestCumSumValues(t *testing.T) {
	x := vals([]int{5}, 1, 2, 3, 4, 5)
	for _, c := range []struct {
		op   CumSum
		want []float64
	}{
		// ONNX's examples.
		{CumSum{}, []float64{1, 3, 6, 10, 15}},
		{CumSum{Exclusive: true}, []float64{0, 1, 3, 6, 10}},
		{CumSum{Reverse: true}, []float64{15, 14, 12, 9, 5}},
		{CumSum{Exclusive: true, Reverse: true}, []float64{14, 12, 9, 5, 0}},
	} {
		got, _ := eval64(t, c.op, x)
		sameVals(t, c.op.String(), got, c.want)
	}
	m := vals([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	got, _ := eval64(t, CumSum{Axis: 0}, m)
	sameVals(t, "CumSum axis 0", got, []float64{1, 2, 3, 5, 7, 9})
	got, _ = eval64(t, CumSum{Axis: 1}, m)
	sameVals(t, "CumSum axis 1", got, []float64{1, 3, 6, 4, 9, 15})
	if _, err := (CumSum{Axis: 2}).InferShape(tensor.Shape{2, 3}); err == nil {
		t.Error("axis 2 of a matrix accepted")
	}
}

func TestCumSumGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, shape := range [][]int{{2, 3, 4}, {6}, {1}} {
		for axis := range shape {
			for _, ex := range []bool{false, true} {
				for _, rev := range []bool{false, true} {
					op := CumSum{Axis: axis, Exclusive: ex, Reverse: rev}
					checkOp(t, op, gradTol, randInput(rng, shape...))
				}
			}
		}
	}
	checkGraph32(t, CumSum{Axis: 1, Exclusive: true}, randInput(rng, 2, 3))
}

package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// softmaxRef is the softmax (or its logarithm) along axis by definition.
func softmaxRef(x input, axis int, log bool) []float64 {
	out := make([]float64, len(x.vals))
	for i := range x.vals {
		c := unravel(i, x.shape)
		s := 0.0
		for k := 0; k < x.shape[axis]; k++ {
			c2 := append([]int(nil), c...)
			c2[axis] = k
			s += math.Exp(x.vals[ravel(c2, x.shape)])
		}
		out[i] = math.Exp(x.vals[i]) / s
		if log {
			out[i] = x.vals[i] - math.Log(s)
		}
	}
	return out
}

func TestSoftmaxValuesAndGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, shape := range [][]int{{2, 3, 4}, {5}, {1}, {3, 1}} {
		for axis := range shape {
			for _, log := range []bool{false, true} {
				x := randInput(rng, shape...)
				op := Softmax{Axis: axis, Log: log}
				got := checkOp(t, op, smoothTol, x)
				wantClose(t, op.String(), got, softmaxRef(x, axis, log), 1e-14)
				checkGraph32(t, op, x)
			}
		}
	}
}

func TestSoftmaxEdges(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		op      Softmax
		x, want []float64
	}{
		{Softmax{}, []float64{1000, 1000}, []float64{0.5, 0.5}},
		{Softmax{Log: true}, []float64{1000, 1000}, []float64{-math.Ln2, -math.Ln2}},
		{Softmax{}, []float64{-1000, -1000 + math.Ln2}, []float64{1.0 / 3, 2.0 / 3}},
		{Softmax{}, []float64{-inf, 0}, []float64{0, 1}},
		{Softmax{Log: true}, []float64{-inf, 0}, []float64{-inf, 0}},
		{Softmax{}, []float64{inf, 0}, []float64{nan, nan}}, // as PyTorch
		{Softmax{}, []float64{-inf, -inf}, []float64{nan, nan}},
		{Softmax{}, []float64{nan, 0}, []float64{nan, nan}},
	} {
		got, _ := eval64(t, c.op, vals([]int{len(c.x)}, c.x...))
		wantClose(t, c.op.String(), got, c.want, 1e-12) // −1000 + ln 2 is rounded
	}
	if _, err := (Softmax{Axis: 2}).InferShape(tensor.Shape{2, 3}); err == nil {
		t.Error("axis 2 of a matrix accepted")
	}
	if _, err := (Softmax{Axis: -1}).InferShape(tensor.Shape{2, 3}); err == nil {
		t.Error("axis −1 accepted")
	}
}

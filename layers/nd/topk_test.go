package nd

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"gorgonia.org/tensor"
)

// TestTopK checks TopK's values against sorting each lane and its
// gradient against finite differences (random values: no ties), along
// every axis, for several K, largest and smallest.
func TestTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	shape := []int{2, 3, 4}
	for ax := range shape {
		for _, k := range []int{1, 2, shape[ax]} {
			for _, largest := range []bool{true, false} {
				x := randInput(rng, shape...)
				op := TopK{Axis: ax, K: k, Largest: largest}
				got := checkOp(t, op, smoothTol, x)
				wantClose(t, op.String(), got, topKRef(x, ax, k, largest), 0)
			}
		}
	}
}

// topKRef sorts each lane of x along ax and keeps k values.
func topKRef(x input, ax, k int, largest bool) []float64 {
	outer, n, inner := prod(x.shape[:ax]), x.shape[ax], prod(x.shape[ax+1:])
	out := make([]float64, outer*k*inner)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			lane := make([]float64, n)
			for j := range lane {
				lane[j] = x.vals[(o*n+j)*inner+i]
			}
			sort.Float64s(lane)
			if largest {
				sort.Sort(sort.Reverse(sort.Float64Slice(lane)))
			}
			for j := 0; j < k; j++ {
				out[(o*k+j)*inner+i] = lane[j]
			}
		}
	}
	return out
}

// Equal values are taken in index order (ONNX), and each gets its own
// gradient; NaN ranks above every number (PyTorch).
func TestTopKTiesAndNaN(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		x       []float64
		k       int
		largest bool
		y, dx   []float64 // dx for g = (1, 2, …)
	}{
		{[]float64{1, 3, 3, 2}, 2, true, []float64{3, 3}, []float64{0, 1, 2, 0}},
		{[]float64{1, 3, 3, 2}, 3, false, []float64{1, 2, 3}, []float64{1, 3, 0, 2}},
		{[]float64{1, nan, 3}, 2, true, []float64{nan, 3}, []float64{0, 1, 2}},
		{[]float64{1, nan, 3}, 3, false, []float64{1, 3, nan}, []float64{1, 3, 2}},
	} {
		op := TopK{K: c.k, Largest: c.largest}
		x := vals([]int{len(c.x)}, c.x...)
		y, _ := eval64(t, op, x)
		sameVals(t, op.String(), y, c.y)
		g := make([]float64, c.k)
		for i := range g {
			g[i] = float64(i + 1)
		}
		dx, _ := eval64(t, topKGrad{op: op}, x, vals([]int{c.k}, g...))
		sameVals(t, op.String()+" gradient", dx, c.dx)
	}
	for _, op := range []TopK{{Axis: 1, K: 1}, {K: 4}, {K: -1}, {Axis: -1, K: 1}} {
		if _, err := op.InferShape(tensor.Shape{3}); err == nil {
			t.Errorf("%v of (3) accepted", op)
		}
	}
}

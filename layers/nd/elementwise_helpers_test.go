package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Test helpers of unary_test.go … transpose_test.go.

// smoothTol is the relative tolerance of the gradient checks of the
// nonlinear operations. gonum's central differences (step h = 6e-6) have
// a truncation error of about h²/6·|f‴| ≈ 6e-12 for these smooth
// functions of O(1) inputs and a rounding error of about 1e-16/h ≈ 2e-11
// relative; inputs are kept well away from kinks and poles (no input lies
// within 1e-3 of one), so 1e-6 leaves a wide margin while any wrong
// factor, sign or index is far above it.
const smoothTol = 1e-6

// mapInput returns in with f applied to its values.
func mapInput(in input, f func(float64) float64) input {
	v := make([]float64, len(in.vals))
	for i, x := range in.vals {
		v[i] = f(x)
	}
	in.vals = v
	return in
}

// positive is a random differentiable input with values in [0.5, ∞).
func posInput(rng *rand.Rand, shape ...int) input {
	return mapInput(randInput(rng, shape...), func(x float64) float64 { return math.Abs(x) + 0.5 })
}

// awayInput is a random differentiable input with |values| ≥ 0.5.
func awayInput(rng *rand.Rand, shape ...int) input {
	return mapInput(randInput(rng, shape...), func(x float64) float64 { return math.Copysign(math.Abs(x)+0.5, x) })
}

// vals is a non-differentiated input of the given shape and values.
func vals(shape []int, v ...float64) input { return input{shape: shape, vals: v} }

// eval64 evaluates op on float64 inputs and returns the values and shape.
func eval64(t *testing.T, op Op, ins ...input) ([]float64, tensor.Shape) {
	t.Helper()
	ts := make([]*tensor.Dense, len(ins))
	for i, in := range ins {
		ts[i] = dense64(in)
	}
	y, err := Eval(op, ts...)
	if err != nil {
		t.Fatalf("%v: %v", op, err)
	}
	return append([]float64(nil), y.Data().([]float64)...), y.Shape()
}

// sameVals fails t unless got and want agree exactly, NaNs matching NaNs.
func sameVals(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("%s: value %d = %v, want %v\n got  %v\n want %v", what, i, got[i], want[i], got, want)
		}
	}
}

// graphGrads returns the gradients of Σ op(ins)⊙w (w: 1, 2, 3, …) with
// respect to the differentiable inputs, computed through a Gorgonia
// graph of type dt.
func graphGrads(t *testing.T, dt tensor.Dtype, op Op, ins ...input) [][]float64 {
	t.Helper()
	g := G.NewGraph()
	nodes := make([]*G.Node, len(ins))
	var wrt G.Nodes
	for i, in := range ins {
		v := dense64(in)
		if dt == tensor.Float32 {
			v = dense32(in)
		}
		nodes[i] = G.NewTensor(g, dt, len(in.shape), G.WithShape(in.shape...), G.WithValue(v), G.WithName(string(rune('a'+i))))
		if in.diff {
			wrt = append(wrt, nodes[i])
		}
	}
	y, err := Apply(op, nodes...)
	if err != nil {
		t.Fatalf("%v: Apply: %v", op, err)
	}
	w := make([]float64, y.Shape().TotalSize())
	for i := range w {
		w[i] = float64(i%7) - 3
	}
	wv := dense64(input{shape: y.Shape().Clone(), vals: w})
	if dt == tensor.Float32 {
		wv = dense32(input{shape: y.Shape().Clone(), vals: w})
	}
	wn := G.NewTensor(g, dt, y.Dims(), G.WithShape(y.Shape().Clone()...), G.WithValue(wv), G.WithName("w"))
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(y, wn))))
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		t.Fatalf("%v: Grad: %v", op, err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("%v: running the graph: %v", op, err)
	}
	out := make([][]float64, len(grads))
	for i, gr := range grads {
		out[i] = append([]float64(nil), f64s(gr.Value().(*tensor.Dense))...)
	}
	return out
}

// checkGraph32 checks that op's gradients through a float32 graph agree
// with those through a float64 one, to 1e-4 relative (float32 rounding of
// O(1) values, summed over a few elements).
func checkGraph32(t *testing.T, op Op, ins ...input) {
	t.Helper()
	g64 := graphGrads(t, tensor.Float64, op, ins...)
	g32 := graphGrads(t, tensor.Float32, op, ins...)
	for i := range g64 {
		wantClose(t, op.String()+" float32 gradient", g32[i], g64[i], 1e-4)
	}
}

package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// input is an operand of a checked operation: its shape, values and
// whether its gradient is checked (masks and indices are not).
type input struct {
	shape []int
	vals  []float64
	diff  bool
}

// randInput is a differentiable input with values drawn from N(0, 1).
func randInput(rng *rand.Rand, shape ...int) input {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return input{shape: shape, vals: v, diff: true}
}

func dense64(in input) *tensor.Dense {
	return tensor.New(tensor.WithShape(in.shape...), tensor.WithBacking(append([]float64(nil), in.vals...)))
}

func dense32(in input) *tensor.Dense {
	v := make([]float32, len(in.vals))
	for i, x := range in.vals {
		v[i] = float32(x)
	}
	return tensor.New(tensor.WithShape(in.shape...), tensor.WithBacking(v))
}

// checkOp evaluates op on ins and checks, against the returned forward
// values:
//   - the gradient of L = Σ w⊙op(ins), w fixed and random, with respect to
//     every differentiable input, against central finite differences of
//     Eval (gonum diff/fd), to tol relative (‖·‖∞);
//   - that UsePreallocDo into the previous result gives the same values;
//   - that the float32 forward agrees with the float64 one to 1e-5
//     relative.
func checkOp(t *testing.T, op Op, tol float64, ins ...input) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	// Forward in float64 through Eval.
	ts := make([]*tensor.Dense, len(ins))
	for i, in := range ins {
		ts[i] = dense64(in)
	}
	y, err := Eval(op, ts...)
	if err != nil {
		t.Fatalf("%v: Eval: %v", op, err)
	}
	yv := append([]float64(nil), y.Data().([]float64)...)
	// The declared shape must match the computed one.
	dims := make([]G.DimSizer, len(ins))
	for i, in := range ins {
		dims[i] = tensor.Shape(in.shape)
	}
	if s, err := op.InferShape(dims...); err != nil {
		t.Fatalf("%v: InferShape: %v", op, err)
	} else if !s.Eq(y.Shape()) && !(len(s) == 0 && y.Shape().Eq(tensor.Shape{1})) {
		t.Fatalf("%v: InferShape %v, Do gave %v", op, s, y.Shape())
	}
	// Preallocated write.
	vs := make([]G.Value, len(ts))
	for i := range ts {
		vs[i] = ts[i]
	}
	prev := tensor.New(tensor.WithShape(y.Shape().Clone()...), tensor.Of(tensor.Float64))
	for i := range prev.Data().([]float64) {
		prev.Data().([]float64)[i] = math.NaN()
	}
	y2, err := op.UsePreallocDo(prev, vs...)
	if err != nil {
		t.Fatalf("%v: UsePreallocDo: %v", op, err)
	}
	for i, v := range y2.(*tensor.Dense).Data().([]float64) {
		if v != yv[i] && !(math.IsNaN(v) && math.IsNaN(yv[i])) {
			t.Fatalf("%v: UsePreallocDo value %d = %v, Do %v", op, i, v, yv[i])
		}
	}
	// float32 forward.
	ts32 := make([]*tensor.Dense, len(ins))
	for i, in := range ins {
		ts32[i] = dense32(in)
	}
	y32, err := Eval(op, ts32...)
	if err != nil {
		t.Fatalf("%v: Eval float32: %v", op, err)
	}
	scale := 0.0
	for _, v := range yv {
		scale = math.Max(scale, math.Abs(v))
	}
	for i, v := range y32.Data().([]float32) {
		if d := math.Abs(float64(v) - yv[i]); d > 1e-5*math.Max(1, scale) && !(math.IsNaN(d) && math.IsNaN(yv[i])) {
			t.Fatalf("%v: float32 value %d = %v, float64 %v", op, i, v, yv[i])
		}
	}
	// Gradients through a Gorgonia graph, in float64 and float32.
	w := make([]float64, len(yv))
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	var which []int
	for i, in := range ins {
		if in.diff {
			which = append(which, i)
		}
	}
	if len(which) == 0 {
		return yv
	}
	grads := opGraphGrads(t, op, tensor.Float64, ins, w, y.Shape())
	grads32 := opGraphGrads(t, op, tensor.Float32, ins, w, y.Shape())
	for k, i := range which {
		got := grads[k]
		// float32 gradients agree with float64 ones to 1e-4 of their
		// largest value (float32 round-off through sums of a few
		// hundred terms).
		if r := relMax(grads32[k], got); r > 1e-4 {
			t.Errorf("%v: float32 gradient of input %d differs from float64 by %.2e relative", op, i, r)
		}
		f := func(v []float64) float64 {
			args := make([]*tensor.Dense, len(ins))
			for j := range ins {
				args[j] = dense64(ins[j])
			}
			args[i] = tensor.New(tensor.WithShape(ins[i].shape...), tensor.WithBacking(append([]float64(nil), v...)))
			r, err := Eval(op, args...)
			if err != nil {
				t.Fatalf("%v: Eval: %v", op, err)
			}
			s := 0.0
			for j, x := range r.Data().([]float64) {
				s += w[j] * x
			}
			return s
		}
		want := make([]float64, len(ins[i].vals))
		fd.Gradient(want, f, ins[i].vals, &fd.Settings{Formula: fd.Central})
		num, den := 0.0, 0.0
		for j := range want {
			num = math.Max(num, math.Abs(got[j]-want[j]))
			den = math.Max(den, math.Max(math.Abs(got[j]), math.Abs(want[j])))
		}
		if den > 0 {
			num /= den
		}
		if num > tol || math.IsNaN(num) {
			t.Errorf("%v: gradient of input %d: rel. error %.2e > %.0e\n got  %v\n want %v", op, i, num, tol, got, want)
		}
	}
	return yv
}

// graphGrads returns the gradients of Σ w⊙op(ins) with respect to the
// differentiable inputs, through a Gorgonia graph of type dt.
func opGraphGrads(t *testing.T, op Op, dt tensor.Dtype, ins []input, w []float64, yshape tensor.Shape) [][]float64 {
	t.Helper()
	mk := func(shape []int, v []float64) *tensor.Dense {
		in := input{shape: shape, vals: v}
		if dt == tensor.Float32 {
			return dense32(in)
		}
		return dense64(in)
	}
	g := G.NewGraph()
	nodes := make([]*G.Node, len(ins))
	var wrt G.Nodes
	for i, in := range ins {
		nodes[i] = G.NewTensor(g, dt, len(in.shape), G.WithShape(in.shape...), G.WithValue(mk(in.shape, in.vals)), G.WithName(string(rune('a'+i))))
		if in.diff {
			wrt = append(wrt, nodes[i])
		}
	}
	out, err := Apply(op, nodes...)
	if err != nil {
		t.Fatalf("%v: Apply: %v", op, err)
	}
	wn := G.NewTensor(g, dt, len(yshape), G.WithShape(yshape.Clone()...), G.WithValue(mk(yshape.Clone(), w)), G.WithName("w"))
	prod, err := G.HadamardProd(out, wn)
	if err != nil {
		t.Fatal(err)
	}
	cost, err := G.Sum(prod)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		t.Fatalf("%v: Grad: %v", op, err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("%v: running the %v graph: %v", op, dt, err)
	}
	res := make([][]float64, len(grads))
	for k, gr := range grads {
		res[k] = append([]float64(nil), f64s(gr.Value().(*tensor.Dense))...)
	}
	return res
}

// relMax is ‖a − b‖∞ / ‖b‖∞.
func relMax(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range a {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

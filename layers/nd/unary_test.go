package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

func TestUnaryGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, op := range []Unary{
		{Fn: Neg}, {Fn: Abs}, {Fn: Exp}, {Fn: Erf}, {Fn: Tanh}, {Fn: Sigmoid},
		{Fn: Relu}, {Fn: LeakyRelu, A: 0.1}, {Fn: Elu, A: 1.5}, {Fn: Selu, A: 1.6732632423543772, B: 1.0507009873554805},
		{Fn: Celu, A: 0.7}, {Fn: Softplus}, {Fn: Softsign}, {Fn: HardSigmoid, A: 0.4, B: 0.5},
		{Fn: Clip, A: -0.5, B: 0.7}, {Fn: Clip, A: math.Inf(-1), B: 0.2}, {Fn: Sin}, {Fn: Cos}, {Fn: Mish},
	} {
		checkOp(t, op, smoothTol, awayInput(rng, 2, 3, 4))
	}
	for _, op := range []Unary{{Fn: Sqrt}, {Fn: Log}, {Fn: SqrtFlatAtZero}} {
		checkOp(t, op, smoothTol, posInput(rng, 3, 5))
	}
	checkOp(t, Unary{Fn: Reciprocal}, smoothTol, awayInput(rng, 4, 2))
	// The trigonometric and hyperbolic family, inside their domains.
	inside := func(lo, hi float64) input { // values in (lo, hi)
		return mapInput(randInput(rng, 3, 4), func(x float64) float64 { return lo + (hi-lo)*(0.1+0.8*(math.Tanh(x)+1)/2) })
	}
	for _, c := range []struct {
		fn     UnaryFn
		lo, hi float64
	}{{Tan, -1.2, 1.2}, {Asin, -0.9, 0.9}, {Acos, -0.9, 0.9}, {Atan, -4, 4}, {Sinh, -3, 3}, {Cosh, -3, 3}, {Asinh, -4, 4}, {Acosh, 1.1, 5}, {Atanh, -0.9, 0.9}} {
		checkOp(t, Unary{Fn: c.fn}, smoothTol, inside(c.lo, c.hi))
	}
	// HardSwish on all three pieces.
	checkOp(t, Unary{Fn: HardSwish}, smoothTol, mapInput(randInput(rng, 30), func(x float64) float64 { return 2.5 * x }))
	// A single element.
	checkOp(t, Unary{Fn: Tanh}, smoothTol, randInput(rng, 1))
}

func TestUnaryValues(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		op      Unary
		x, want []float64
	}{
		{Unary{Fn: Neg}, []float64{1, -2, 0, inf, nan}, []float64{-1, 2, 0, -inf, nan}},
		{Unary{Fn: Abs}, []float64{-3, 2, -inf, nan}, []float64{3, 2, inf, nan}},
		{Unary{Fn: Sqrt}, []float64{4, 0, -1, inf}, []float64{2, 0, nan, inf}},
		{Unary{Fn: Reciprocal}, []float64{4, -0.5, 0, inf}, []float64{0.25, -2, inf, 0}},
		{Unary{Fn: Exp}, []float64{0, 1, -inf, inf, nan}, []float64{1, math.E, 0, inf, nan}},
		{Unary{Fn: Log}, []float64{1, math.E, 0, -1}, []float64{0, 1, -inf, nan}},
		{Unary{Fn: Erf}, []float64{0, 0.5, -inf, inf}, []float64{0, math.Erf(0.5), -1, 1}},
		{Unary{Fn: Tanh}, []float64{0, 1, -inf, 1000}, []float64{0, math.Tanh(1), -1, 1}},
		{Unary{Fn: Sigmoid}, []float64{0, 2, -2, -1000, 1000, nan}, []float64{0.5, 1 / (1 + math.Exp(-2)), 1 / (1 + math.Exp(2)), 0, 1, nan}},
		{Unary{Fn: Relu}, []float64{-1, 0, 2, nan, -inf}, []float64{0, 0, 2, nan, 0}},
		{Unary{Fn: LeakyRelu, A: 0.1}, []float64{-2, 0, 3, nan}, []float64{-0.2, 0, 3, nan}},
		{Unary{Fn: Elu, A: 2}, []float64{-1, 0, 3, -inf}, []float64{2 * (math.Exp(-1) - 1), 0, 3, -2}},
		{Unary{Fn: Selu, A: 2, B: 3}, []float64{-1, 1}, []float64{6 * (math.Exp(-1) - 1), 3}},
		{Unary{Fn: Celu, A: 2}, []float64{-1, 1}, []float64{2 * (math.Exp(-0.5) - 1), 1}},
		{Unary{Fn: Softplus}, []float64{0, 1000, -1000, 1, nan}, []float64{math.Ln2, 1000, 0, math.Log(1 + math.E), nan}},
		{Unary{Fn: Softsign}, []float64{1, -3, inf}, []float64{0.5, -0.75, nan}},
		{Unary{Fn: HardSigmoid, A: 0.2, B: 0.5}, []float64{0, 1, -10, 10, nan}, []float64{0.5, 0.7, 0, 1, nan}},
		{Unary{Fn: HardSwish}, []float64{-4, 0, 1, 4}, []float64{0, 0, 1 * (1.0/6 + 0.5), 4}},
		{Unary{Fn: Clip, A: -1, B: 2}, []float64{-3, 0.5, 5, nan, inf}, []float64{-1, 0.5, 2, nan, 2}},
		{Unary{Fn: Clip, A: math.Inf(-1), B: inf}, []float64{-3, inf, -inf}, []float64{-3, inf, -inf}},
		{Unary{Fn: Clip, A: 3, B: 1}, []float64{0, 2, 5}, []float64{1, 1, 1}},
		{Unary{Fn: Sin}, []float64{0, math.Pi / 2}, []float64{0, 1}},
		{Unary{Fn: Cos}, []float64{0, math.Pi}, []float64{1, -1}},
		{Unary{Fn: Floor}, []float64{1.5, -1.5, 2, inf}, []float64{1, -2, 2, inf}},
		{Unary{Fn: Ceil}, []float64{1.5, -1.5, 2}, []float64{2, -1, 2}},
		{Unary{Fn: Round}, []float64{0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6, nan}, []float64{0, 2, 2, 0, -2, 2, 3, nan}},
		{Unary{Fn: Sign}, []float64{-2, 0, 3, -inf, nan}, []float64{-1, 0, 1, -1, nan}},
		{Unary{Fn: Not}, []float64{0, 1, -2, nan}, []float64{1, 0, 0, 0}},
		{Unary{Fn: IsNaN}, []float64{0, nan, inf}, []float64{0, 1, 0}},
		{Unary{Fn: IsInf, A: 1, B: 1}, []float64{0, nan, inf, -inf}, []float64{0, 0, 1, 1}},
		{Unary{Fn: IsInf, A: 1}, []float64{inf, -inf}, []float64{1, 0}},
		{Unary{Fn: IsInf, B: 1}, []float64{inf, -inf}, []float64{0, 1}},
		{Unary{Fn: Mish}, []float64{0, 1, -1000, 1000}, []float64{0, math.Tanh(math.Log(1 + math.E)), 0, 1000}},
	} {
		got, s := eval64(t, c.op, input{shape: []int{len(c.x)}, vals: c.x})
		if !s.Eq(tensor.Shape{len(c.x)}) {
			t.Fatalf("%v: shape %v", c.op, s)
		}
		for i := range got {
			if d := math.Abs(got[i] - c.want[i]); d > 1e-15 && !(math.IsNaN(got[i]) && math.IsNaN(c.want[i])) && got[i] != c.want[i] {
				t.Errorf("%v(%v) = %v, want %v", c.op, c.x[i], got[i], c.want[i])
			}
		}
	}
}

// TestUnaryKinks checks the derivatives at kinks against PyTorch's.
func TestUnaryKinks(t *testing.T) {
	for _, c := range []struct {
		op      Unary
		x, want []float64
	}{
		{Unary{Fn: Relu}, []float64{0, -1, 1}, []float64{0, 0, 1}},
		{Unary{Fn: LeakyRelu, A: 0.1}, []float64{0, -1, 1}, []float64{0.1, 0.1, 1}},
		{Unary{Fn: Abs}, []float64{0, -1, 1}, []float64{0, -1, 1}},
		{Unary{Fn: Elu, A: 2}, []float64{0}, []float64{2}},
		{Unary{Fn: Selu, A: 2, B: 3}, []float64{0}, []float64{6}},
		{Unary{Fn: HardSigmoid, A: 0.2, B: 0.5}, []float64{-2.5, 2.5, 0}, []float64{0, 0, 0.2}},
		{Unary{Fn: HardSwish}, []float64{-3, 3, -3.5, 3.5, 0}, []float64{-0.5, 1, 0, 1, 0.5}}, // round 79 A1: PyTorch's at −3 (at 3 its batched kernel's)
		{Unary{Fn: Clip, A: -1, B: 1}, []float64{-1, 1, -1.5, 1.5, math.NaN()}, []float64{1, 1, 0, 0, 0}},
		{Unary{Fn: Clip, A: math.Inf(-1), B: math.Inf(1)}, []float64{math.Inf(1)}, []float64{1}},
		{Unary{Fn: Sqrt}, []float64{0, 4}, []float64{math.Inf(1), 0.25}},
		{Unary{Fn: SqrtFlatAtZero}, []float64{0, 4}, []float64{0, 0.25}},
	} {
		y, _ := eval64(t, c.op, vals([]int{len(c.x)}, c.x...))
		g := make([]float64, len(c.x))
		for i := range g {
			g[i] = 1
		}
		got, _ := eval64(t, unaryGrad{op: c.op}, vals([]int{len(c.x)}, c.x...), vals([]int{len(y)}, y...), vals([]int{len(g)}, g...))
		sameVals(t, c.op.String()+"′", got, c.want)
	}
}

func TestUnaryNoGradient(t *testing.T) {
	for fn := Not; fn <= IsInf; fn++ {
		if (Unary{Fn: fn}).DiffWRT(1)[0] {
			t.Errorf("%v: differentiable", fn)
		}
	}
	// Probe 34: the piecewise constant functions of a number have the
	// gradient 0 (as PyTorch's), not none.
	x := []float64{-1.5, -0.3, 0.4, 2.5}
	for fn := Floor; fn <= Sign; fn++ {
		op := Unary{Fn: fn}
		y, _ := eval64(t, op, vals([]int{4}, x...))
		got, _ := eval64(t, unaryGrad{op: op}, vals([]int{4}, x...), vals([]int{4}, y...), vals([]int{4}, 1, 1, 1, 1))
		sameVals(t, op.String()+"′", got, []float64{0, 0, 0, 0})
	}
	if !(Unary{Fn: Mish}).DiffWRT(1)[0] {
		t.Error("Mish: not differentiable")
	}
	if _, err := (Unary{Fn: UnaryFn(99)}).InferShape(tensor.Shape{2}); err == nil {
		t.Error("unknown function accepted")
	}
	if s := UnaryFn(99).String(); s != "UnaryFn(99)" {
		t.Errorf("String of an unknown function: %q", s)
	}
}

func TestUnaryGraph32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, fn := range []UnaryFn{Tanh, Sigmoid, Softplus, Exp} {
		checkGraph32(t, Unary{Fn: fn}, randInput(rng, 2, 3, 2, 2))
	}
}

func benchUnary(b *testing.B, fn UnaryFn) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := dense64(randInput(rng, 256, 1024))
	op := Unary{Fn: fn}
	out, err := op.Do(x)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err = op.UsePreallocDo(out, x); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnaryRelu(b *testing.B)    { benchUnary(b, Relu) }
func BenchmarkUnarySigmoid(b *testing.B) { benchUnary(b, Sigmoid) }

// The ReLU/LeakyReLU fast loops keep the special values of the general
// definitions: ReLU(−∞) = 0, LeakyReLU(−∞) = −∞, NaN propagates.
func TestReluSpecialValues(t *testing.T) {
	x := []float64{math.Inf(-1), math.Inf(1), math.NaN(), -2, 0, 3}
	in := input{shape: []int{len(x)}, vals: x}
	for _, c := range []struct {
		op   Unary
		want []float64
	}{
		{Unary{Fn: Relu}, []float64{0, math.Inf(1), math.NaN(), 0, 0, 3}},
		{Unary{Fn: LeakyRelu, A: 0.1}, []float64{math.Inf(-1), math.Inf(1), math.NaN(), -0.2, 0, 3}},
	} {
		y, err := Eval(c.op, dense64(in))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range y.Data().([]float64) {
			if w := c.want[i]; v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
				t.Errorf("%v(%v) = %v, want %v", c.op, x[i], v, w)
			}
		}
	}
}

// Round 78 A2: a flat piece of relu, clamp, hardsigmoid or hardswish (and
// the piecewise constant functions) passes no gradient however large the
// incoming one: √ at 0 after relu(x) sent +Inf, and ∞·0 made NaN where
// PyTorch's backward selects 0. Where PyTorch multiplies (|x| at 0,
// leaky relu) the product stands.
func TestFlatPiecesSelectZero(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		op      Unary
		x, want []float64
	}{
		{Unary{Fn: Relu}, []float64{-1, 0, 2}, []float64{0, 0, inf}},
		{Unary{Fn: LeakyRelu, A: 0.1}, []float64{-1}, []float64{inf}},
		{Unary{Fn: LeakyRelu, A: 0}, []float64{-1}, []float64{nan}}, // round 79 A2: multiplied, as PyTorch's
		{Unary{Fn: Clip, A: 0, B: 1}, []float64{-1, 2, 0.5}, []float64{0, 0, inf}},
		{Unary{Fn: HardSigmoid, A: 0.2, B: 0.5}, []float64{-5, 5}, []float64{0, 0}},
		{Unary{Fn: HardSwish}, []float64{-4, -1.5}, []float64{0, nan}},
		{Unary{Fn: Floor}, []float64{1.5}, []float64{0}},
		{Unary{Fn: Abs}, []float64{0}, []float64{nan}},
	} {
		y, _ := eval64(t, c.op, vals([]int{len(c.x)}, c.x...))
		g := make([]float64, len(c.x))
		for i := range g {
			g[i] = inf
		}
		got, _ := eval64(t, unaryGrad{op: c.op}, vals([]int{len(c.x)}, c.x...), vals([]int{len(y)}, y...), vals([]int{len(g)}, g...))
		for i := range got {
			if !(got[i] == c.want[i] || math.IsNaN(got[i]) && math.IsNaN(c.want[i])) {
				t.Errorf("%v′ at %v with g = +Inf: %v, want %v", c.op, c.x[i], got[i], c.want[i])
			}
		}
	}
}

// Round 79 A3: relu(−0) and clip(−0, 0, …) are −0, as PyTorch's and ONNX
// Runtime's (1/relu(−0) was +Inf, PyTorch's −Inf).
func TestNegativeZeroKept(t *testing.T) {
	for _, op := range []Unary{{Fn: Relu}, {Fn: Clip, A: 0, B: 6}} {
		y, _ := eval64(t, op, vals([]int{1}, math.Copysign(0, -1)))
		if !math.Signbit(y[0]) || y[0] != 0 {
			t.Errorf("%v(−0) = %v, want −0", op, y[0])
		}
	}
}

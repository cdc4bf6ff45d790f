package nd

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// UnaryFn is the function of a Unary operation. Its parameters, where it
// has any, are Unary's A and B.
type UnaryFn int

// The functions of Unary, as ONNX defines them. Derivatives at kinks are
// PyTorch's: relu'(0) = 0, leaky_relu'(0) = α, abs'(0) = 0, hardsigmoid'
// is 0 at both corners, hardswish' is −½ at −3 and 1 at 3 (its batched kernel's), clip passes
// the gradient where min ≤ x ≤ max, elu'(0) = α and selu'(0) = γα.
const (
	Neg            UnaryFn = iota // −x
	Abs                           // |x|
	Sqrt                          // √x
	Reciprocal                    // 1/x
	Exp                           // eˣ
	Log                           // ln x
	Erf                           // the error function
	Tanh                          // tanh x
	Sigmoid                       // 1/(1 + e⁻ˣ)
	Relu                          // max(x, 0), NaN for NaN
	LeakyRelu                     // x if x > 0, else A·x (A = alpha)
	Elu                           // x if x > 0, else A·(eˣ − 1) (A = alpha)
	Selu                          // B·(x if x > 0, else A·(eˣ − 1)) (A = alpha, B = gamma)
	Celu                          // max(0, x) + min(0, A·(e^(x/A) − 1)) (A = alpha)
	Softplus                      // ln(1 + eˣ)
	Softsign                      // x/(1 + |x|)
	HardSigmoid                   // max(0, min(1, A·x + B)) (A = alpha, B = beta)
	HardSwish                     // x·max(0, min(1, x/6 + ½))
	Clip                          // min(max(x, A), B), ±Inf bounds allowed; B where A > B
	Sin                           // sin x
	Cos                           // cos x
	Floor                         // ⌊x⌋, gradient 0 (as PyTorch's)
	Ceil                          // ⌈x⌉, gradient 0
	Round                         // x rounded to the nearest integer, halves to even; gradient 0
	Sign                          // −1, 0 or 1 (NaN for NaN), gradient 0
	Not                           // 1 if x = 0, else 0; no gradient
	IsNaN                         // 1 if x is NaN, else 0; no gradient
	IsInf                         // 1 if x is +Inf and A ≠ 0 or x is −Inf and B ≠ 0, else 0; no gradient
	Mish                          // x·tanh(softplus(x))
	ToFloat32                     // x rounded to float32 (ONNX Cast to FLOAT in a float64 graph); gradient 1, as PyTorch's
	ToFloat16                     // x rounded to IEEE half precision (Cast to FLOAT16), ±Inf beyond 65504; gradient 1
	ToBFloat16                    // x rounded to bfloat16 (Cast to BFLOAT16); gradient 1
	SqrtFlatAtZero                // √x with derivative 0 at x = 0, where PyTorch's x.std and clamped norms give 0 (io/onnx uses it for their exported square roots)
	Tan                           // tan x
	Asin                          // arcsin x (NaN beyond ±1)
	Acos                          // arccos x (NaN beyond ±1)
	Atan                          // arctan x
	Sinh                          // sinh x
	Cosh                          // cosh x
	Asinh                         // arsinh x
	Acosh                         // arcosh x (NaN below 1)
	Atanh                         // artanh x (NaN beyond ±1)
)

// unaryDef is a UnaryFn's value f(x) and derivative d(x, y = f(x)); d is
// nil for the functions without a gradient.
type unaryDef struct {
	name string
	f    func(x, a, b float64) float64
	d    func(x, y, a, b float64) float64
}

var unaryDefs = [...]unaryDef{
	Neg:         {"Neg", func(x, _, _ float64) float64 { return -x }, func(_, _, _, _ float64) float64 { return -1 }},
	Abs:         {"Abs", func(x, _, _ float64) float64 { return math.Abs(x) }, func(x, _, _, _ float64) float64 { return sign(x) }},
	Sqrt:        {"Sqrt", func(x, _, _ float64) float64 { return math.Sqrt(x) }, func(_, y, _, _ float64) float64 { return 0.5 / y }},
	Reciprocal:  {"Reciprocal", func(x, _, _ float64) float64 { return 1 / x }, func(_, y, _, _ float64) float64 { return -y * y }},
	Exp:         {"Exp", func(x, _, _ float64) float64 { return math.Exp(x) }, func(_, y, _, _ float64) float64 { return y }},
	Log:         {"Log", func(x, _, _ float64) float64 { return math.Log(x) }, func(x, _, _, _ float64) float64 { return 1 / x }},
	Erf:         {"Erf", func(x, _, _ float64) float64 { return math.Erf(x) }, func(x, _, _, _ float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) }},
	Tanh:        {"Tanh", func(x, _, _ float64) float64 { return math.Tanh(x) }, func(_, y, _, _ float64) float64 { return 1 - y*y }},
	Sigmoid:     {"Sigmoid", func(x, _, _ float64) float64 { return sigmoid(x) }, func(_, y, _, _ float64) float64 { return y * (1 - y) }},
	Relu:        {"Relu", relu, func(x, _, _, _ float64) float64 { return step(x > 0) }},
	LeakyRelu:   {"LeakyRelu", leakyRelu, func(x, _, a, _ float64) float64 { return pick(x > 0, 1, a) }},
	Elu:         {"Elu", func(x, a, _ float64) float64 { return elu(x, a) }, func(x, _, a, _ float64) float64 { return pick(x > 0, 1, a*math.Exp(x)) }},
	Selu:        {"Selu", func(x, a, g float64) float64 { return g * elu(x, a) }, func(x, _, a, g float64) float64 { return g * pick(x > 0, 1, a*math.Exp(x)) }},
	Celu:        {"Celu", celu, func(x, _, a, _ float64) float64 { return pick(x > 0, 1, math.Exp(x/a)) }},
	Softplus:    {"Softplus", func(x, _, _ float64) float64 { return softplus(x) }, func(x, _, _, _ float64) float64 { return sigmoid(x) }},
	Softsign:    {"Softsign", func(x, _, _ float64) float64 { return x / (1 + math.Abs(x)) }, dSoftsign},
	HardSigmoid: {"HardSigmoid", hardSigmoid, dHardSigmoid},
	HardSwish:   {"HardSwish", func(x, _, _ float64) float64 { return x * hardSigmoid(x, 1.0/6, 0.5) }, dHardSwish},
	Clip:        {"Clip", clip, dClip},
	Sin:         {"Sin", func(x, _, _ float64) float64 { return math.Sin(x) }, func(x, _, _, _ float64) float64 { return math.Cos(x) }},
	Cos:         {"Cos", func(x, _, _ float64) float64 { return math.Cos(x) }, func(x, _, _, _ float64) float64 { return -math.Sin(x) }},
	Floor:       {"Floor", func(x, _, _ float64) float64 { return math.Floor(x) }, zeroSlope},
	Ceil:        {"Ceil", func(x, _, _ float64) float64 { return math.Ceil(x) }, zeroSlope},
	Round:       {"Round", func(x, _, _ float64) float64 { return math.RoundToEven(x) }, zeroSlope},
	Sign:        {"Sign", func(x, _, _ float64) float64 { return sign(x) }, zeroSlope},
	Not:         {"Not", func(x, _, _ float64) float64 { return step(x == 0) }, nil},
	IsNaN:       {"IsNaN", func(x, _, _ float64) float64 { return step(math.IsNaN(x)) }, nil},
	IsInf:       {"IsInf", func(x, p, n float64) float64 { return step(math.IsInf(x, 1) && p != 0 || math.IsInf(x, -1) && n != 0) }, nil},
	Mish:        {"Mish", func(x, _, _ float64) float64 { return x * math.Tanh(softplus(x)) }, dMish},
	ToFloat32:   {"ToFloat32", func(x, _, _ float64) float64 { return float64(float32(x)) }, unitSlope},
	ToFloat16:   {"ToFloat16", func(x, _, _ float64) float64 { return RoundBinary(x, 10, -14, 65504) }, unitSlope},
	SqrtFlatAtZero: {"SqrtFlatAtZero", func(x, _, _ float64) float64 { return math.Sqrt(x) }, func(_, y, _, _ float64) float64 {
		if y == 0 {
			return 0
		}
		return 0.5 / y
	}},
	ToBFloat16: {"ToBFloat16", func(x, _, _ float64) float64 { return RoundBinary(float64(float32(x)), 7, -126, 0x1.fep127) }, unitSlope},
	// The trigonometric and hyperbolic family (round 100 B3: an energy
	// with torch.atan was refused).
	Tan:   {"Tan", func(x, _, _ float64) float64 { return math.Tan(x) }, func(_, y, _, _ float64) float64 { return 1 + y*y }},
	Asin:  {"Asin", func(x, _, _ float64) float64 { return math.Asin(x) }, func(x, _, _, _ float64) float64 { return 1 / math.Sqrt(1-x*x) }},
	Acos:  {"Acos", func(x, _, _ float64) float64 { return math.Acos(x) }, func(x, _, _, _ float64) float64 { return -1 / math.Sqrt(1-x*x) }},
	Atan:  {"Atan", func(x, _, _ float64) float64 { return math.Atan(x) }, func(x, _, _, _ float64) float64 { return 1 / (1 + x*x) }},
	Sinh:  {"Sinh", func(x, _, _ float64) float64 { return math.Sinh(x) }, func(x, _, _, _ float64) float64 { return math.Cosh(x) }},
	Cosh:  {"Cosh", func(x, _, _ float64) float64 { return math.Cosh(x) }, func(x, _, _, _ float64) float64 { return math.Sinh(x) }},
	Asinh: {"Asinh", func(x, _, _ float64) float64 { return math.Asinh(x) }, func(x, _, _, _ float64) float64 { return 1 / math.Sqrt(x*x+1) }},
	Acosh: {"Acosh", func(x, _, _ float64) float64 { return math.Acosh(x) }, func(x, _, _, _ float64) float64 { return 1 / math.Sqrt(x*x-1) }},
	Atanh: {"Atanh", func(x, _, _ float64) float64 { return math.Atanh(x) }, func(x, _, _, _ float64) float64 { return 1 / (1 - x*x) }},
}

// unitSlope is the derivative of a rounding to a narrower float type, as
// PyTorch passes the gradient through a cast.
func unitSlope(_, _, _, _ float64) float64 { return 1 }

// RoundBinary is x rounded to nearest (ties to even) in a binary floating
// point type with mant bits of fraction, minExp its least normal exponent
// and largest its largest finite value (half: 10, −14, 65504): ±Inf where
// the rounded value is beyond it; subnormals kept; NaN, ±Inf and ±0 as
// they are.
func RoundBinary(x float64, mant, minExp int, largest float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	_, exp := math.Frexp(x) // |x| in [2^(exp−1), 2^exp)
	q := max(exp-1, minExp) - mant
	r := math.Ldexp(math.RoundToEven(math.Ldexp(x, -q)), q)
	if math.Abs(r) > largest {
		return math.Copysign(math.Inf(1), x)
	}
	return r
}

// String is the function's ONNX name.
func (f UnaryFn) String() string {
	if f < 0 || int(f) >= len(unaryDefs) {
		return fmt.Sprintf("UnaryFn(%d)", int(f))
	}
	return unaryDefs[f].name
}

// step is 1 if c, else 0.
func step(c bool) float64 { return pick(c, 1, 0) }

// pick is a if c, else b.
func pick(c bool, a, b float64) float64 {
	if c {
		return a
	}
	return b
}

// sign is −1, 0 or 1 as x is negative, zero or positive (NaN for NaN).
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0 or NaN
}

// sigmoid is 1/(1 + e⁻ˣ), without overflow for either sign.
func sigmoid(x float64) float64 {
	e := math.Exp(-math.Abs(x))
	r := 1 / (1 + e)
	if x < 0 {
		r *= e
	}
	return r
}

// softplus is ln(1 + eˣ) = max(x, 0) + ln(1 + e^−|x|).
func softplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// relu is max(x, 0), −0 kept (as PyTorch's and ONNX Runtime's: round 79
// A3, 1/relu(−0) was +Inf); mapUnary has its loop.
func relu(x, _, _ float64) float64 {
	if x == 0 {
		return x
	}
	return max(x, 0)
}

// leakyRelu is x if x > 0, else a·x, without branches.
func leakyRelu(x, a, _ float64) float64 { return max(x, 0) + a*min(x, 0) }

// elu is x if x > 0, else a·(eˣ − 1).
func elu(x, a float64) float64 { return pick(x > 0, x, a*math.Expm1(x)) }

// celu is max(0, x) + min(0, a·(e^(x/a) − 1)).
func celu(x, a, _ float64) float64 {
	return math.Max(0, x) + math.Min(0, a*math.Expm1(x/a))
}

// hardSigmoid is a·x + b clipped to [0, 1].
func hardSigmoid(x, a, b float64) float64 { return math.Max(0, math.Min(1, a*x+b)) }

// dSoftsign is 1/(1 + |x|)².
func dSoftsign(x, _, _, _ float64) float64 {
	d := 1 + math.Abs(x)
	return 1 / (d * d)
}

// dHardSigmoid is a strictly inside the ramp, else 0.
func dHardSigmoid(x, _, a, b float64) float64 {
	v := a*x + b
	return pick(v > 0 && v < 1, a, 0)
}

// dHardSwish is PyTorch's hardswish_backward: 0 below −3, x/3 + ½ from −3
// (−½ there: round 79 A1, it was 0) up to 3, 1 from 3 on. At 3 itself
// PyTorch 1.13 disagrees with itself: its vectorised kernel (a batch of
// points) gives 1, its scalar loop (a tensor of a few values) 3/2.
func dHardSwish(x, _, _, _ float64) float64 {
	switch {
	case x < -3:
		return 0
	case x < 3:
		return x/3 + 0.5
	}
	return 1
}

// clip is min(max(x, lo), hi), x itself where it lies within (−0 stays
// −0, as PyTorch's clamp and ONNX Runtime's Clip: round 79 A3).
func clip(x, lo, hi float64) float64 {
	if x >= lo && x <= hi {
		return x
	}
	return math.Min(math.Max(x, lo), hi)
}

// dClip is 1 where lo ≤ x ≤ hi, else 0 (NaN included).
func dClip(x, _, lo, hi float64) float64 { return step(x >= lo && x <= hi) }

// dMish is tanh(sp) + x·σ(x)·(1 − tanh²(sp)), sp = softplus(x).
// zeroSlope is the derivative of a piecewise constant function, almost
// everywhere.
func zeroSlope(_, _, _, _ float64) float64 { return 0 }

func dMish(x, _, _, _ float64) float64 {
	t := math.Tanh(softplus(x))
	return t + x*sigmoid(x)*(1-t*t)
}

// Unary is an elementwise function of one tensor, of any rank (its Type is
// rank-polymorphic: a → a). Fn's parameters are A and B (see UnaryFn).
// The gradient is g⊙f′(x), one operation. The piecewise constant
// functions of a number (Floor, Ceil, Round, Sign) have the gradient 0,
// their derivative almost everywhere, as PyTorch gives it (probe 34: an
// energy with a Floor had no gradient: "Non Differentiable WRTs"); the
// tests (Not, IsNaN, IsInf) have none: DiffWRT is false.
type Unary struct {
	pure
	Fn   UnaryFn
	A, B float64
}

// unaryGrad is g⊙f′(x) for inputs (x, y = f(x), g).
type unaryGrad struct {
	pure
	op Unary
}

// def returns the definition of op.Fn.
func (op Unary) def() (unaryDef, error) {
	if op.Fn < 0 || int(op.Fn) >= len(unaryDefs) {
		return unaryDef{}, fmt.Errorf("nd: unknown unary function %d", int(op.Fn))
	}
	return unaryDefs[op.Fn], nil
}

// Arity is 1.
func (op Unary) Arity() int { return 1 }

// Type is a → a, for tensors of any rank.
func (op Unary) Type() hm.Type { return fnType(0, 0) }

// InferShape returns the input's shape.
func (op Unary) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if _, err := op.def(); err != nil {
		return nil, err
	}
	return sameShapes(op, in, 1)
}

// sameShapes returns the shape of n inputs that must all have it.
func sameShapes(op fmt.Stringer, in []G.DimSizer, n int) (tensor.Shape, error) {
	s, err := inShapes(op, in, n)
	if err != nil {
		return nil, err
	}
	for _, x := range s[1:] {
		if !x.Eq(s[0]) {
			return nil, fmt.Errorf("nd: %v of shapes %v: want one shape", op, s)
		}
	}
	return s[0].Clone(), nil
}

// Do applies the function.
func (op Unary) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo applies the function, writing into prealloc if it fits.
func (op Unary) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	d, err := op.def()
	if err != nil {
		return nil, err
	}
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), shapeOf(ts[0]), ts...)
	if out.Dtype() == tensor.Float32 {
		mapUnary(op.Fn, data[float32](out), data[float32](ts[0]), d.f, op.A, op.B)
	} else {
		mapUnary(op.Fn, data[float64](out), data[float64](ts[0]), d.f, op.A, op.B)
	}
	return out, nil
}

// mapUnary sets out = f(x), with ReLU and LeakyReLU in a loop of their
// own (see unaryBack).
func mapUnary[T fp](fn UnaryFn, out, x []T, f func(x, a, b float64) float64, a, b float64) {
	out = out[:len(x)]
	if fn == Relu || fn == LeakyRelu {
		slope := T(a)
		if fn == Relu {
			slope = 0
		}
		for i, v := range x {
			switch {
			case v > 0 || v == 0 && fn == Relu: // −0 stays −0 (round 79 A3)
				out[i] = v
			case fn == Relu && v == v: // ReLU(−∞) = 0, NaN stays NaN
				out[i] = 0
			default:
				out[i] = v * slope
			}
		}
		return
	}
	for i, v := range x {
		out[i] = T(f(float64(v), a, b))
	}
}

// WriteHash writes the function and parameters.
func (op Unary) WriteHash(h hash.Hash) { fmt.Fprintf(h, "Unary%v", op) }

// Hashcode hashes the function and parameters.
func (op Unary) Hashcode() uint32 { return hashOf(op) }

// String shows the function and its parameters.
func (op Unary) String() string {
	switch op.Fn {
	case LeakyRelu, Elu, Celu:
		return fmt.Sprintf("%v{%v}", op.Fn, op.A)
	case Selu, HardSigmoid, Clip, IsInf:
		return fmt.Sprintf("%v{%v, %v}", op.Fn, op.A, op.B)
	}
	return op.Fn.String()
}

// DiffWRT is false for the tests (Not, IsNaN, IsInf).
func (op Unary) DiffWRT(int) []bool {
	d, err := op.def()
	return []bool{err == nil && d.d != nil}
}

// SymDiff returns g⊙f′(x).
func (op Unary) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	if !op.DiffWRT(1)[0] {
		return nil, fmt.Errorf("nd: %v has no gradient", op)
	}
	d, err := Apply(unaryGrad{op: op}, in[0], out, grad)
	return G.Nodes{d}, err
}

// Arity is 3: x, y and g.
func (op unaryGrad) Arity() int { return 3 }

// Type is a → a → a → a.
func (op unaryGrad) Type() hm.Type { return fnType(0, 0, 0, 0) }

// InferShape returns the shape shared by the inputs.
func (op unaryGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return sameShapes(op, in, 3)
}

// Do computes g⊙f′(x).
func (op unaryGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes g⊙f′(x) into prealloc if it fits.
func (op unaryGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 3)
	if err != nil {
		return nil, err
	}
	for _, t := range ts[1:] {
		if !shapeOf(t).Eq(shapeOf(ts[0])) {
			return nil, fmt.Errorf("nd: %v of shapes %v and %v", op, ts[0].Shape(), t.Shape())
		}
	}
	d := unaryDefs[op.op.Fn].d
	out := output(prealloc, ts[0].Dtype(), shapeOf(ts[0]), ts...)
	if out.Dtype() == tensor.Float32 {
		unaryBack(op.op.Fn, data[float32](out), data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]), d, op.op.A, op.op.B)
	} else {
		unaryBack(op.op.Fn, data[float64](out), data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]), d, op.op.A, op.op.B)
	}
	return out, nil
}

// unaryBack sets out = g⊙d(x, y). ReLU and LeakyReLU, the activations
// of convolutional energies, have a branch-free loop of their own (a
// function call per element costs several times the arithmetic there).
func unaryBack[T fp](fn UnaryFn, out, x, y, g []T, d func(x, y, a, b float64) float64, a, b float64) {
	out, y, g = out[:len(x)], y[:len(x)], g[:len(x)]
	if fn == Relu || fn == LeakyRelu {
		slope := T(a)
		if fn == Relu {
			slope = 0
		}
		for i, v := range x {
			switch {
			case v > 0:
				out[i] = g[i]
			case fn == Relu:
				out[i] = 0 // selected, as PyTorch's threshold_backward: 0 even where g is ±Inf or NaN (a leaky relu of slope 0 multiplies, as PyTorch's: round 79 A2)
			default:
				out[i] = g[i] * slope
			}
		}
		return
	}
	sel := selects(fn)
	for i, v := range x {
		dv := d(float64(v), float64(y[i]), a, b)
		if dv == 0 && sel && (fn != HardSwish || v < -3) {
			out[i] = 0 // a flat piece passes no gradient, however large g (round 78 A2: ∞·0 made NaN)
			continue
		}
		out[i] = T(float64(g[i]) * dv)
	}
}

// selects reports whether fn's gradient is zero by selection where its
// derivative is zero, as PyTorch's backward computes it (clamp,
// hardsigmoid, hardswish below −3, and the piecewise constant functions:
// where(mask, g, 0), not g·0): an infinite g from a square root at 0
// after relu(x) or clamp(x, min=0) gives 0 there, not NaN. Elsewhere (cos
// at 0, |x| at 0) PyTorch multiplies, and so does Unary.
func selects(fn UnaryFn) bool {
	switch fn {
	case Clip, HardSigmoid, HardSwish, Floor, Ceil, Round, Sign:
		return true
	}
	return false
}

// WriteHash writes the function and parameters.
func (op unaryGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "UnaryGrad%v", op.op) }

// Hashcode hashes the function and parameters.
func (op unaryGrad) Hashcode() uint32 { return hashOf(op) }

// String names the gradient.
func (op unaryGrad) String() string { return fmt.Sprintf("%vGrad", op.op) }

package nd

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BinaryKind is the function of a Binary operation.
type BinaryKind int

// The functions of Binary. Comparisons and logical functions give 1 for
// true and 0 for false, take any nonzero value (NaN included) as true, and
// have no gradient.
const (
	Add            BinaryKind = iota // a + b
	Sub                              // a − b
	Mul                              // a·b
	Div                              // a/b
	Pow                              // aᵇ (math.Pow)
	Min                              // min(a, b), NaN if either is; ties split the gradient half and half
	Max                              // max(a, b), NaN if either is; ties split the gradient half and half
	Mod                              // a − b·⌊a/b⌋: the sign of b, as NumPy's mod and ONNX Mod with fmod = 0
	Fmod                             // a − b·trunc(a/b): the sign of a, as C's fmod and ONNX Mod with fmod = 1
	Equal                            // a = b
	Less                             // a < b
	LessOrEqual                      // a ≤ b
	Greater                          // a > b
	GreaterOrEqual                   // a ≥ b
	And                              // a ≠ 0 and b ≠ 0
	Or                               // a ≠ 0 or b ≠ 0
	Xor                              // exactly one of a and b is nonzero
)

// binaryDef is a BinaryKind's value f(a, b) and partial derivatives, given
// y = f(a, b) too; da and db are nil for the functions without gradient.
type binaryDef struct {
	name   string
	f      func(a, b float64) float64
	da, db func(a, b, y float64) float64
}

var binaryDefs = [...]binaryDef{
	Add:            {"Add", func(a, b float64) float64 { return a + b }, nil, nil},
	Sub:            {"Sub", func(a, b float64) float64 { return a - b }, nil, nil},
	Mul:            {"Mul", func(a, b float64) float64 { return a * b }, func(_, b, _ float64) float64 { return b }, func(a, _, _ float64) float64 { return a }},
	Div:            {"Div", func(a, b float64) float64 { return a / b }, func(_, b, _ float64) float64 { return 1 / b }, func(_, b, y float64) float64 { return -y / b }},
	Pow:            {"Pow", math.Pow, dPowBase, dPowExp},
	Min:            {"Min", math.Min, func(a, b, _ float64) float64 { return tie(b > a, a == b) }, func(a, b, _ float64) float64 { return tie(a > b, a == b) }},
	Max:            {"Max", math.Max, func(a, b, _ float64) float64 { return tie(a > b, a == b) }, func(a, b, _ float64) float64 { return tie(b > a, a == b) }},
	Mod:            {"Mod", mod, one, func(a, b, _ float64) float64 { return -math.Floor(a / b) }},
	Fmod:           {"Fmod", math.Mod, one, func(a, b, _ float64) float64 { return -math.Trunc(a / b) }},
	Equal:          {"Equal", func(a, b float64) float64 { return step(a == b) }, nil, nil},
	Less:           {"Less", func(a, b float64) float64 { return step(a < b) }, nil, nil},
	LessOrEqual:    {"LessOrEqual", func(a, b float64) float64 { return step(a <= b) }, nil, nil},
	Greater:        {"Greater", func(a, b float64) float64 { return step(a > b) }, nil, nil},
	GreaterOrEqual: {"GreaterOrEqual", func(a, b float64) float64 { return step(a >= b) }, nil, nil},
	And:            {"And", func(a, b float64) float64 { return step(a != 0 && b != 0) }, nil, nil},
	Or:             {"Or", func(a, b float64) float64 { return step(a != 0 || b != 0) }, nil, nil},
	Xor:            {"Xor", func(a, b float64) float64 { return step((a != 0) != (b != 0)) }, nil, nil},
}

// String is the function's name.
func (k BinaryKind) String() string {
	if k < 0 || int(k) >= len(binaryDefs) {
		return fmt.Sprintf("BinaryKind(%d)", int(k))
	}
	return binaryDefs[k].name
}

// differentiable says whether k has a gradient.
func (k BinaryKind) differentiable() bool { return k <= Fmod }

// one is the derivative 1.
func one(_, _, _ float64) float64 { return 1 }

// tie is 1 if win, ½ if tied, else 0.
func tie(win, tied bool) float64 { return pick(win, 1, pick(tied, 0.5, 0)) }

// mod is a − b·⌊a/b⌋, computed as fmod moved to the sign of b.
func mod(a, b float64) float64 {
	r := math.Mod(a, b)
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

// dPowBase is b·a^(b−1), 0 where b = 0 (as PyTorch).
func dPowBase(a, b, _ float64) float64 {
	if b == 0 {
		return 0
	}
	return b * math.Pow(a, b-1)
}

// dPowExp is aᵇ·ln a where a > 0, else 0. PyTorch gives 0 only where
// a = 0 (and b ≥ 0) and NaN where a < 0; 0 there keeps a constant exponent
// stored as a weight from receiving NaN.
func dPowExp(a, _, y float64) float64 {
	if a > 0 {
		return y * math.Log(a)
	}
	return 0
}

// Binary is an elementwise function of two tensors under NumPy
// broadcasting (aligned on their last axes, each dimension equal or 1).
// RankA and RankB are the ranks of the inputs, which Type needs to give
// the result rank max(RankA, RankB): callers set them (or leave both 0
// for inputs of one rank, any rank: the Type is then a → a → a);
// InferShape checks them against the shapes, and Do ignores them.
// The gradients are summed over the axes an input was broadcast along;
// comparisons and logical functions have none (DiffWRT is false).
type Binary struct {
	pure
	Kind         BinaryKind
	RankA, RankB int
}

// binaryGrad is the gradient of Binary with respect to input which, for
// inputs (a, b, y, g): g⊙∂f/∂(a or b) summed to the input's shape.
type binaryGrad struct {
	pure
	kind  BinaryKind
	which int
	a, b  tensor.Shape
}

// def returns the definition of op.Kind.
func (op Binary) def() (binaryDef, error) {
	if op.Kind < 0 || int(op.Kind) >= len(binaryDefs) {
		return binaryDef{}, fmt.Errorf("nd: unknown binary function %d", int(op.Kind))
	}
	return binaryDefs[op.Kind], nil
}

// Arity is 2.
func (op Binary) Arity() int { return 2 }

// Type is a function from tensors of ranks RankA and RankB to one of rank
// max(RankA, RankB), or a → a → a if both are 0.
func (op Binary) Type() hm.Type { return rankType(op.RankA, op.RankB) }

// InferShape returns the broadcast of the input shapes.
func (op Binary) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if _, err := op.def(); err != nil {
		return nil, err
	}
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	if err := checkRanks(op, s, op.RankA, op.RankB); err != nil {
		return nil, err
	}
	out, err := broadcastShapes(s...)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %v", op, err)
	}
	return out, nil
}

// Do applies the function.
func (op Binary) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo applies the function, writing into prealloc if it fits.
func (op Binary) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	d, err := op.def()
	if err != nil {
		return nil, err
	}
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	s, err := broadcastShapes(shapeOf(ts[0]), shapeOf(ts[1]))
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %v", op, err)
	}
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	b := newBcast(s, shapeOf(ts[0]), shapeOf(ts[1]))
	if out.Dtype() == tensor.Float32 {
		binaryRun(b, op.Kind, d.f, data[float32](out), data[float32](ts[0]), data[float32](ts[1]))
	} else {
		binaryRun(b, op.Kind, d.f, data[float64](out), data[float64](ts[0]), data[float64](ts[1]))
	}
	return out, nil
}

// binaryRun sets out = f(x, y) over the rows of b: whole rows at a time,
// each operand either a row (inner stride 1) or one element repeated.
func binaryRun[T fp](b *bcast, k BinaryKind, f func(a, b float64) float64, out, x, y []T) {
	n, sx, sy := b.row(), b.inner(0), b.inner(1)
	b.rows(func(o int, off []int) {
		xr, yr := x[off[0]:off[0]+1+(n-1)*sx], y[off[1]:off[1]+1+(n-1)*sy]
		if !arithRow(k, out[o:o+n], xr, yr) {
			funcRow(out[o:o+n], xr, yr, f)
		}
	})
}

// arithRow sets o = x op y for the four arithmetic operations, where x and
// y have o's length or one element (broadcast), and says whether k was
// one of them. Each call of a loop with a function literal is inlined
// with it: tight loops.
func arithRow[T fp](k BinaryKind, o, x, y []T) bool {
	sx, sy := len(x) < len(o), len(y) < len(o)
	switch {
	case k == Add && sx:
		loopSV(o, x[0], y, func(a, b T) T { return a + b })
	case k == Add && sy:
		loopVS(o, x, y[0], func(a, b T) T { return a + b })
	case k == Add:
		loopVV(o, x, y, func(a, b T) T { return a + b })
	case k == Sub && sx:
		loopSV(o, x[0], y, func(a, b T) T { return a - b })
	case k == Sub && sy:
		loopVS(o, x, y[0], func(a, b T) T { return a - b })
	case k == Sub:
		loopVV(o, x, y, func(a, b T) T { return a - b })
	case k == Mul && sx:
		loopSV(o, x[0], y, func(a, b T) T { return a * b })
	case k == Mul && sy:
		loopVS(o, x, y[0], func(a, b T) T { return a * b })
	case k == Mul:
		loopVV(o, x, y, func(a, b T) T { return a * b })
	case k == Div && sx:
		loopSV(o, x[0], y, func(a, b T) T { return a / b })
	case k == Div && sy:
		loopVS(o, x, y[0], func(a, b T) T { return a / b })
	case k == Div:
		loopVV(o, x, y, func(a, b T) T { return a / b })
	default:
		return false
	}
	return true
}

// loop2 sets o[i] = f(x[i], y[i]), an operand of one element standing for
// all.
func loop2[T fp](o, x, y []T, f func(a, b T) T) {
	switch {
	case len(x) < len(o):
		loopSV(o, x[0], y, f)
	case len(y) < len(o):
		loopVS(o, x, y[0], f)
	default:
		loopVV(o, x, y, f)
	}
}

// loopVV sets o[i] = f(x[i], y[i]).
func loopVV[T fp](o, x, y []T, f func(a, b T) T) {
	x, y = x[:len(o)], y[:len(o)]
	for i := range o {
		o[i] = f(x[i], y[i])
	}
}

// loopSV sets o[i] = f(c, y[i]).
func loopSV[T fp](o []T, c T, y []T, f func(a, b T) T) {
	y = y[:len(o)]
	for i := range o {
		o[i] = f(c, y[i])
	}
}

// loopVS sets o[i] = f(x[i], c).
func loopVS[T fp](o, x []T, c T, f func(a, b T) T) {
	x = x[:len(o)]
	for i := range o {
		o[i] = f(x[i], c)
	}
}

// funcRow is loop2 for a function of float64s.
func funcRow[T fp](o, x, y []T, f func(a, b float64) float64) {
	loop2(o, x, y, func(a, b T) T { return T(f(float64(a), float64(b))) })
}

// WriteHash writes the function and ranks.
func (op Binary) WriteHash(h hash.Hash) { fmt.Fprintf(h, "Binary%v%d,%d", op.Kind, op.RankA, op.RankB) }

// Hashcode hashes the function and ranks.
func (op Binary) Hashcode() uint32 { return hashOf(op) }

// String names the function.
func (op Binary) String() string { return op.Kind.String() }

// DiffWRT is true for both inputs of the arithmetic functions, Min, Max
// and the modulos, false for comparisons and logical functions.
func (op Binary) DiffWRT(int) []bool {
	d := op.Kind.differentiable()
	return []bool{d, d}
}

// SymDiff returns the gradients of both inputs, summed over the axes
// they were broadcast along.
func (op Binary) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	if !op.Kind.differentiable() {
		return nil, fmt.Errorf("nd: %v has no gradient", op)
	}
	ds := make(G.Nodes, 2)
	for i := range ds {
		var err error
		switch {
		case op.Kind == Add || op.Kind == Sub && i == 0:
			ds[i], err = reduceTo(grad, in[i].Shape(), 1)
		case op.Kind == Sub:
			ds[i], err = reduceTo(grad, in[i].Shape(), -1)
		default:
			gop := binaryGrad{kind: op.Kind, which: i, a: in[0].Shape().Clone(), b: in[1].Shape().Clone()}
			ds[i], err = Apply(gop, in[0], in[1], out, grad)
		}
		if err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// target is the shape of the input whose gradient op is.
func (op binaryGrad) target() tensor.Shape { return []tensor.Shape{op.a, op.b}[op.which] }

// Arity is 4: a, b, y and g.
func (op binaryGrad) Arity() int { return 4 }

// Type is a function of a, b, y and g to a tensor of a's or b's rank.
func (op binaryGrad) Type() hm.Type {
	r := max(len(op.a), len(op.b))
	return fnType(len(op.target()), len(op.a), len(op.b), r, r)
}

// InferShape returns the shape of a or b after checking the inputs.
func (op binaryGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 4)
	if err != nil {
		return nil, err
	}
	if err := op.check(s...); err != nil {
		return nil, err
	}
	return op.target().Clone(), nil
}

// check returns an error unless the input shapes are a, b and twice
// their broadcast.
func (op binaryGrad) check(s ...tensor.Shape) error {
	y, err := broadcastShapes(op.a, op.b)
	if err != nil || !s[0].Eq(op.a) || !s[1].Eq(op.b) || !s[2].Eq(y) || !s[3].Eq(y) {
		return fmt.Errorf("nd: %v of shapes %v", op, s)
	}
	return nil
}

// Do computes the gradient.
func (op binaryGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the gradient into prealloc if it fits.
func (op binaryGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 4)
	if err != nil {
		return nil, err
	}
	if err := op.check(shapeOf(ts[0]), shapeOf(ts[1]), shapeOf(ts[2]), shapeOf(ts[3])); err != nil {
		return nil, err
	}
	d := binaryDefs[op.kind].da
	if op.which == 1 {
		d = binaryDefs[op.kind].db
	}
	sel := op.kind == Min || op.kind == Max
	out := output(prealloc, ts[0].Dtype(), op.target(), ts...)
	b := newBcast(shapeOf(ts[2]), op.target(), op.a, op.b)
	if out.Dtype() == tensor.Float32 {
		binaryBack(b, d, sel, data[float32](out), data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]), data[float32](ts[3]))
	} else {
		binaryBack(b, d, sel, data[float64](out), data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]), data[float64](ts[3]))
	}
	return out, nil
}

// binaryBack accumulates g⊙d(a, b, y) into out (operand 0 of b), a and b
// being operands 1 and 2 of b and y and g of its output shape.
// Where sel, a zero derivative selects a zero gradient (Min and Max,
// as PyTorch's maximum backward masks the operand not taken: round 78 A2,
// sqrt(max(x, 0)) at x < 0 gave ∞·0 = NaN).
func binaryBack[T fp](b *bcast, d func(a, b, y float64) float64, sel bool, out, x, y, z, g []T) {
	n, s0, s1, s2 := b.row(), b.inner(0), b.inner(1), b.inner(2)
	withAcc(out, func(acc []float64) {
		b.rows(func(o int, off []int) {
			j, k, l := off[0], off[1], off[2]
			for i := o; i < o+n; i++ {
				if dv := d(float64(x[k]), float64(y[l]), float64(z[i])); dv != 0 || !sel {
					acc[j] += float64(g[i]) * dv
				}
				j, k, l = j+s0, k+s1, l+s2
			}
		})
	})
}

// WriteHash writes the function, input and shapes.
func (op binaryGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the function, input and shapes.
func (op binaryGrad) Hashcode() uint32 { return hashOf(op) }

// String names the gradient.
func (op binaryGrad) String() string {
	return fmt.Sprintf("%vGrad%d%v%v", op.kind, op.which, op.a, op.b)
}

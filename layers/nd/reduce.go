package nd

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ReduceKind is the function of a Reduce operation.
type ReduceKind int

// The reductions of Reduce, as ONNX's Reduce* operations. Sums are taken
// in float64.
const (
	ReduceSum       ReduceKind = iota // Σx
	ReduceMean                        // Σx/n
	ReduceMax                         // max x (NaN if any is); the gradient is split evenly among ties (PyTorch's amax)
	ReduceMin                         // min x (NaN if any is); the gradient is split evenly among ties (PyTorch's amin)
	ReduceProd                        // Πx; the gradient is the product of the others, zeros included
	ReduceLogSumExp                   // ln Σeˣ, shifted by the maximum
	ReduceSumSquare                   // Σx²
	ReduceL1                          // Σ|x|; gradient sign(x), 0 at 0
	ReduceL2                          // √Σx²; gradient x/y, 0 where y = 0
	ReduceLogSum                      // ln Σx
	ReduceLp                          // (Σ|x|ᵖ)^(1/p) for Reduce.P ≠ 0; gradient sign(x)(|x|/y)ᵖ⁻¹, 0 where x or y is 0 (PyTorch's vector_norm)
)

var reduceNames = [...]string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
	"ReduceLogSumExp", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLp"}

// String is the reduction's ONNX name.
func (k ReduceKind) String() string {
	if k < 0 || int(k) >= len(reduceNames) {
		return fmt.Sprintf("ReduceKind(%d)", int(k))
	}
	return reduceNames[k]
}

// Reduce reduces a tensor along the axes Axes, which must be non-negative,
// below the rank and strictly increasing; none means all axes (ONNX's
// noop_with_empty_axes is the caller's to handle). With KeepDims the
// reduced axes stay, of size 1; without, they are dropped (a result of no
// axes has shape (1)). Rank is the input's rank, which Type needs unless
// KeepDims is set: callers set it (0 with KeepDims: a → a, any rank);
// InferShape checks it and Do ignores it. P is the order of ReduceLp, a
// finite number other than 0 (negative orders too: vector_norm(ord=−1));
// the other reductions must leave it 0.
type Reduce struct {
	pure
	Kind     ReduceKind
	Axes     []int
	KeepDims bool
	Rank     int
	P        float64
	// FirstTie gives ReduceMax's and ReduceMin's gradient whole to the
	// first of tied elements, as PyTorch's max pooling does (GlobalMaxPool:
	// round 79 A4), instead of splitting it evenly (its amax).
	FirstTie bool
}

// reduceGrad is Reduce's gradient, for inputs (x, y, g): of x's shape.
type reduceGrad struct {
	pure
	op Reduce
	in tensor.Shape
}

// shapes checks the axes against the input shape and returns the shape
// of the result with the reduced axes kept (keep) and the result's (out).
func (op Reduce) shapes(in tensor.Shape) (keep, out tensor.Shape, err error) {
	if op.Kind < 0 || int(op.Kind) >= len(reduceNames) {
		return nil, nil, fmt.Errorf("nd: unknown reduction %d", int(op.Kind))
	}
	if (op.Kind == ReduceLp) != (op.P != 0) || !(math.Abs(op.P) <= math.MaxFloat64) {
		return nil, nil, fmt.Errorf("nd: %v: the order P must be a finite number other than 0 for ReduceLp, 0 otherwise", op)
	}
	keep = in.Clone()
	for i, a := range op.Axes {
		if a < 0 || a >= len(in) || (i > 0 && a <= op.Axes[i-1]) {
			return nil, nil, fmt.Errorf("nd: %v of shape %v: axes must be increasing, in [0, %d)", op, in, len(in))
		}
		keep[a] = 1
	}
	if len(op.Axes) == 0 {
		for a := range keep {
			keep[a] = 1
		}
	}
	if op.KeepDims {
		return keep, keep.Clone(), nil
	}
	out = tensor.Shape{}
	for a, d := range in {
		if !op.reduces(a) {
			out = append(out, d)
		}
	}
	return keep, atLeast1(out), nil
}

// reduces says whether axis a is reduced.
func (op Reduce) reduces(a int) bool {
	if len(op.Axes) == 0 {
		return true
	}
	for _, b := range op.Axes {
		if a == b {
			return true
		}
	}
	return false
}

// outRank is the rank of the result.
func (op Reduce) outRank() int {
	if op.KeepDims {
		return op.Rank
	}
	if len(op.Axes) == 0 {
		return 1
	}
	return max(1, op.Rank-len(op.Axes))
}

// Arity is 1.
func (op Reduce) Arity() int { return 1 }

// Type is a function from rank Rank to the result's rank (a → a with
// KeepDims and Rank 0).
func (op Reduce) Type() hm.Type { return fnType(op.outRank(), op.Rank) }

// InferShape returns the result's shape.
func (op Reduce) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if op.Rank != len(s[0]) && (op.Rank != 0 || !op.KeepDims) {
		return nil, fmt.Errorf("nd: %v does not describe an input of shape %v: set Rank", op, s[0])
	}
	_, out, err := op.shapes(s[0])
	return out, err
}

// Do reduces.
func (op Reduce) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo reduces into prealloc if it fits.
func (op Reduce) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	keep, s, err := op.shapes(shapeOf(ts[0]))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	b := newBcast(shapeOf(ts[0]), keep)
	if out.Dtype() == tensor.Float32 {
		withAcc(data[float32](out), func(acc []float64) { reduceRun(op, b, acc, data[float32](ts[0])) })
	} else {
		withAcc(data[float64](out), func(acc []float64) { reduceRun(op, b, acc, data[float64](ts[0])) })
	}
	return out, nil
}

// reduceRun sets acc to the reduction of x (b's output; acc is operand 0).
func reduceRun[T fp](op Reduce, b *bcast, acc []float64, x []T) {
	k := op.Kind
	switch k {
	case ReduceMax, ReduceMin, ReduceLogSumExp:
		extremes(b, acc, x, k == ReduceMin)
		if k == ReduceLogSumExp {
			logSumExp(b, acc, x)
		}
		return
	case ReduceProd:
		for j := range acc {
			acc[j] = 1
		}
		b.pairs(func(o, j int) { acc[j] *= float64(x[o]) })
		return
	case ReduceSumSquare, ReduceL2:
		b.pairs(func(o, j int) { acc[j] += float64(x[o]) * float64(x[o]) })
	case ReduceL1:
		b.pairs(func(o, j int) { acc[j] += math.Abs(float64(x[o])) })
	case ReduceLp:
		b.pairs(func(o, j int) { acc[j] += math.Pow(math.Abs(float64(x[o])), op.P) })
	default:
		sumRows(b, acc, x, 1)
	}
	n := float64(b.n / len(acc))
	for j, v := range acc {
		switch k {
		case ReduceMean:
			acc[j] = v / n
		case ReduceL2:
			acc[j] = math.Sqrt(v)
		case ReduceLogSum:
			acc[j] = math.Log(v)
		case ReduceLp:
			acc[j] = math.Pow(v, 1/op.P)
		}
	}
}

// extremes sets acc to the maxima (minima if min) of x, NaN where one is.
func extremes[T fp](b *bcast, acc []float64, x []T, min bool) {
	sg := 1.0
	if min {
		sg = -1
	}
	for j := range acc {
		acc[j] = math.Inf(-1)
	}
	b.pairs(func(o, j int) {
		if v := sg * float64(x[o]); v > acc[j] || v != v {
			acc[j] = v
		}
	})
	for j := range acc {
		acc[j] = sg * acc[j]
	}
}

// logSumExp turns acc from the maxima of x into ln Σeˣ, as m + ln Σe^(x−m)
// (m itself where it is infinite).
func logSumExp[T fp](b *bcast, acc []float64, x []T) {
	p := getScratch[float64](len(acc))
	s := *p
	clear(s)
	b.pairs(func(o, j int) { s[j] += math.Exp(float64(x[o]) - acc[j]) })
	for j, m := range acc {
		if !math.IsInf(m, 0) {
			acc[j] = m + math.Log(s[j])
		}
	}
	putScratch(p)
}

// WriteHash writes the attributes.
func (op Reduce) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Reduce) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Reduce) String() string {
	if op.Kind == ReduceLp || op.P != 0 {
		return fmt.Sprintf("%v{p %v, axes %v, keepdims %v, rank %d}", op.Kind, op.P, op.Axes, op.KeepDims, op.Rank)
	}
	if op.FirstTie {
		return fmt.Sprintf("%v{axes %v, keepdims %v, rank %d, first tie}", op.Kind, op.Axes, op.KeepDims, op.Rank)
	}
	return fmt.Sprintf("%v{axes %v, keepdims %v, rank %d}", op.Kind, op.Axes, op.KeepDims, op.Rank)
}

// DiffWRT is true.
func (op Reduce) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the gradient.
func (op Reduce) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	r := op
	r.Rank = in[0].Dims()
	d, err := Apply(reduceGrad{op: r, in: in[0].Shape().Clone()}, in[0], out, grad)
	return G.Nodes{d}, err
}

// Arity is 3: x, y and g.
func (op reduceGrad) Arity() int { return 3 }

// Type is a function from x, y and g to x's type.
func (op reduceGrad) Type() hm.Type {
	r := op.op.outRank()
	return fnType(len(op.in), len(op.in), r, r)
}

// InferShape returns x's shape after checking the inputs.
func (op reduceGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 3)
	if err != nil {
		return nil, err
	}
	_, out, err := op.op.shapes(op.in)
	if err != nil || !s[0].Eq(op.in) || !s[1].Eq(out) || !s[2].Eq(out) {
		return nil, fmt.Errorf("nd: %v of shapes %v", op, s)
	}
	return op.in.Clone(), nil
}

// Do computes the gradient.
func (op reduceGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the gradient into prealloc if it fits.
func (op reduceGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 3)
	if err != nil {
		return nil, err
	}
	keep, s, err := op.op.shapes(op.in)
	if err != nil || !shapeOf(ts[0]).Eq(op.in) || !shapeOf(ts[1]).Eq(s) || !shapeOf(ts[2]).Eq(s) {
		return nil, fmt.Errorf("nd: %v of shapes %v %v %v", op, ts[0].Shape(), ts[1].Shape(), ts[2].Shape())
	}
	out := output(prealloc, ts[0].Dtype(), op.in, ts...)
	b := newBcast(op.in, keep)
	if out.Dtype() == tensor.Float32 {
		reduceBack(op.op, b, data[float32](out), data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]))
	} else {
		reduceBack(op.op, b, data[float64](out), data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]))
	}
	return out, nil
}

// reduceBack sets dx = g⊙∂y/∂x, x and dx being b's output and y and g its
// operand 0.
func reduceBack[T fp](op Reduce, b *bcast, dx, x, y, g []T) {
	if op.FirstTie && (op.Kind == ReduceMax || op.Kind == ReduceMin) {
		first := make([]int, len(y))
		for j := range first {
			first[j] = -1
		}
		b.pairs(func(o, j int) {
			if first[j] < 0 && x[o] == y[j] {
				first[j] = o
			}
		})
		b.pairs(func(o, j int) { dx[o] = T(pick(first[j] == o, float64(g[j]), 0)) })
		return
	}
	var d func(v, y float64, j int) float64
	switch k := op.Kind; k {
	case ReduceMax, ReduceMin:
		d = tieShares(b, x, y)
	case ReduceProd:
		d = prodPartials(b, x, len(y))
	case ReduceMean:
		n := float64(b.n / len(y))
		d = func(_, _ float64, _ int) float64 { return 1 / n }
	case ReduceLp:
		d = lpDeriv(op.P)
	default:
		d = reduceDerivs[op.Kind]
	}
	b.pairs(func(o, j int) { dx[o] = T(float64(g[j]) * d(float64(x[o]), float64(y[j]), j)) })
}

// reduceDerivs are ∂y/∂x of the reductions whose derivative depends on x
// and y alone.
var reduceDerivs = map[ReduceKind]func(v, y float64, j int) float64{
	ReduceSum:       func(_, _ float64, _ int) float64 { return 1 },
	ReduceLogSumExp: func(v, y float64, _ int) float64 { return math.Exp(v - y) },
	ReduceSumSquare: func(v, _ float64, _ int) float64 { return 2 * v },
	ReduceL1:        func(v, _ float64, _ int) float64 { return sign(v) },
	ReduceL2:        func(v, y float64, _ int) float64 { return pick(y == 0, 0, v/y) },
	ReduceLogSum:    func(_, y float64, _ int) float64 { return math.Exp(-y) },
}

// lpDeriv returns the derivative of an Lp norm y of order p at an element
// v, sign(v)(|v|/y)ᵖ⁻¹: 0 where v or y is 0, as PyTorch's norm backward
// masks them (the chain rule through (Σ|x|ᵖ)^(1/p) gives ∞·0 there).
func lpDeriv(p float64) func(v, y float64, j int) float64 {
	return func(v, y float64, _ int) float64 {
		if v == 0 || y == 0 {
			return 0
		}
		return sign(v) * math.Pow(math.Abs(v)/y, p-1)
	}
}

// tieShares returns the derivative of a maximum or minimum y: 1/n for
// each of the n elements equal to it, 0 for the others.
func tieShares[T fp](b *bcast, x, y []T) func(v, y float64, j int) float64 {
	n := make([]float64, len(y))
	b.pairs(func(o, j int) {
		if x[o] == y[j] {
			n[j]++
		}
	})
	return func(v, y float64, j int) float64 { return pick(v == y, 1/n[j], 0) }
}

// prodPartials returns the derivative of a product: the product of the
// other elements, computed without dividing by zeros (m is the size of
// the result).
func prodPartials[T fp](b *bcast, x []T, m int) func(v, y float64, j int) float64 {
	zeros := make([]int, m)
	nz := make([]float64, m)
	for j := range nz {
		nz[j] = 1
	}
	b.pairs(func(o, j int) {
		if v := float64(x[o]); v == 0 {
			zeros[j]++
		} else {
			nz[j] *= v
		}
	})
	return func(v, _ float64, j int) float64 {
		switch {
		case zeros[j] == 0:
			return nz[j] / v
		case zeros[j] == 1 && v == 0:
			return nz[j]
		}
		return 0
	}
}

// WriteHash writes the reduction and input shape.
func (op reduceGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the reduction and input shape.
func (op reduceGrad) Hashcode() uint32 { return hashOf(op) }

// String names the gradient.
func (op reduceGrad) String() string { return fmt.Sprintf("%vGrad%v", op.op, op.in) }

package layers

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// VectorMath names the implementation of the fused elementwise exp and tanh
// operations: glibc's vector math library through cgo, or Go's math.
func VectorMath() string { return vectorMath }

// pure holds the Gorgonia Op methods shared by flowebm's fused operations:
// they return new values (or write into their previous one), call nothing
// external and never overwrite an input.
type pure struct{}

func (pure) ReturnsPtr() bool     { return false }
func (pure) CallsExtern() bool    { return false }
func (pure) OverwritesInput() int { return -1 }

// mathFn is the function of a mathOp.
type mathFn int

const (
	fnExp    mathFn = iota // exp(x)
	fnExpNeg               // exp(−x)
	fnTanh                 // tanh(x)
)

var mathFnNames = [...]string{"Exp", "Exp(−x)", "Tanh"}

// mathOp is exp(x), exp(−x) or tanh(x) elementwise as a fused Gorgonia
// operation that writes into its previous result and computes whole arrays
// at once (vectorised through cgo, see vmath_cgo.go). The RealNVP couplings
// spend most of their elementwise time in these; Gorgonia's own Exp and
// Tanh allocate their result on every call and call the scalar functions
// one element at a time. Derivatives are Gorgonia nodes built from the
// output y: g⊙y, −g⊙y, and g⊙(1 − y²) (tanhGrad).
type mathOp struct {
	pure
	fn mathFn
}

// applyMath adds fn(x) to x's graph.
func applyMath(fn mathFn, x *G.Node) (*G.Node, error) { return G.ApplyOp(mathOp{fn: fn}, x) }

// tanhGrad is g⊙(1 − y²) for inputs (y, g), y = tanh(x).
type tanhGrad struct{ pure }

func fnType(arity int) hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, arity+1)
	for i := range ts {
		ts[i] = a
	}
	return hm.NewFnType(ts...)
}

func (op mathOp) Arity() int                                        { return 1 }
func (op mathOp) Type() hm.Type                                     { return fnType(1) }
func (op mathOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op mathOp) WriteHash(h hash.Hash)                             { fmt.Fprint(h, op.String()) }
func (op mathOp) Hashcode() uint32                                  { return hashOf(op) }
func (op mathOp) String() string                                    { return mathFnNames[op.fn] }
func (op mathOp) DiffWRT(int) []bool                                { return []bool{true} }

func (op mathOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	var d *G.Node
	var err error
	switch op.fn {
	case fnTanh:
		d, err = G.ApplyOp(tanhGrad{}, output, grad)
	case fnExp:
		d, err = G.HadamardProd(grad, output)
	case fnExpNeg:
		if d, err = G.HadamardProd(grad, output); err == nil {
			d, err = G.Neg(d)
		}
	}
	return G.Nodes{d}, err
}

func (op mathOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op mathOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	x, out, err := unaryOperands(op, prealloc, in)
	if err != nil {
		return nil, err
	}
	neg := op.fn == fnExpNeg
	switch xd := x.Data().(type) {
	case []float64:
		if op.fn == fnTanh {
			tanh64(out.Data().([]float64), xd)
		} else {
			exp64(out.Data().([]float64), xd, neg)
		}
	case []float32:
		if op.fn == fnTanh {
			tanh32(out.Data().([]float32), xd)
		} else {
			exp32(out.Data().([]float32), xd, neg)
		}
	}
	return out, nil
}

func (op tanhGrad) Arity() int                                        { return 2 }
func (op tanhGrad) Type() hm.Type                                     { return fnType(2) }
func (op tanhGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op tanhGrad) WriteHash(h hash.Hash)                             { fmt.Fprint(h, "tanh_grad") }
func (op tanhGrad) Hashcode() uint32                                  { return hashOf(op) }
func (op tanhGrad) String() string                                    { return "TanhGrad" }

func (op tanhGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op tanhGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	y, g, out, err := gradOperands(op, prealloc, in)
	if err != nil {
		return nil, err
	}
	switch yd := y.Data().(type) {
	case []float64:
		od, gd := out.Data().([]float64)[:len(yd)], g.Data().([]float64)[:len(yd)]
		for i, v := range yd {
			od[i] = gd[i] * (1 - v*v)
		}
	case []float32:
		od, gd := out.Data().([]float32)[:len(yd)], g.Data().([]float32)[:len(yd)]
		for i, v := range yd {
			od[i] = gd[i] * (1 - v*v)
		}
	}
	return out, nil
}

// unaryOperands checks a one-input elementwise operation's input (a float64
// or float32 dense tensor) and returns it contiguous with the output:
// prealloc when it has the input's shape and type, else a new tensor.
func unaryOperands(op fmt.Stringer, prealloc G.Value, in []G.Value) (x, out *tensor.Dense, err error) {
	if len(in) != 1 {
		return nil, nil, fmt.Errorf("layers: %v takes 1 input, have %d", op, len(in))
	}
	x, err = contiguous(op, in[0])
	if err != nil {
		return nil, nil, err
	}
	if p, ok := prealloc.(*tensor.Dense); ok && p.Shape().Eq(x.Shape()) && p.Dtype() == x.Dtype() && !p.IsMaterializable() && p.Uintptr() != x.Uintptr() {
		return x, p, nil
	}
	return x, tensor.New(tensor.WithShape(x.Shape().Clone()...), tensor.Of(x.Dtype())), nil
}

// gradOperands is unaryOperands for a backward operation's inputs (x, g):
// g must match x.
func gradOperands(op fmt.Stringer, prealloc G.Value, in []G.Value) (x, g, out *tensor.Dense, err error) {
	if len(in) != 2 {
		return nil, nil, nil, fmt.Errorf("layers: %v takes 2 inputs, have %d", op, len(in))
	}
	if x, out, err = unaryOperands(op, prealloc, in[:1]); err != nil {
		return nil, nil, nil, err
	}
	if g, err = contiguous(op, in[1]); err != nil {
		return nil, nil, nil, err
	}
	if !g.Shape().Eq(x.Shape()) || g.Dtype() != x.Dtype() {
		return nil, nil, nil, fmt.Errorf("layers: %v: gradient %v %v does not match input %v %v", op, g.Dtype(), g.Shape(), x.Dtype(), x.Shape())
	}
	return x, g, out, nil
}

// contiguous returns v as a contiguous float64 or float32 dense tensor.
func contiguous(op fmt.Stringer, v G.Value) (*tensor.Dense, error) {
	t, ok := v.(*tensor.Dense)
	if !ok || (t.Dtype() != tensor.Float64 && t.Dtype() != tensor.Float32) {
		return nil, fmt.Errorf("layers: %v on %v, want a float64 or float32 dense tensor", op, v)
	}
	if t.IsMaterializable() {
		t = t.Materialize().(*tensor.Dense)
	}
	return t, nil
}

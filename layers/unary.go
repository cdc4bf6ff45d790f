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

// expOp is exp(x) (Neg: exp(−x)) elementwise, and tanhOp tanh(x), as fused
// Gorgonia operations that write into their previous result and compute
// whole arrays at once (vectorised through cgo, see vmath_cgo.go). The
// RealNVP couplings spend most of their elementwise time in these two;
// Gorgonia's own Exp and Tanh allocate their result on every call and call
// the scalar functions one element at a time. Their derivatives are
// Gorgonia nodes built from the output: g⊙y (−g⊙y for Neg) and
// g⊙(1 − y²) (tanhGrad).
type expOp struct{ Neg bool }

type tanhOp struct{}

// tanhGrad is g⊙(1 − y²) for inputs (y, g), y = tanh(x).
type tanhGrad struct{}

func unaryType() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}

func (op expOp) Arity() int                                        { return 1 }
func (op expOp) Type() hm.Type                                     { return unaryType() }
func (op expOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op expOp) ReturnsPtr() bool                                  { return false }
func (op expOp) CallsExtern() bool                                 { return false }
func (op expOp) OverwritesInput() int                              { return -1 }
func (op expOp) WriteHash(h hash.Hash)                             { fmt.Fprintf(h, "exp(neg=%v)", op.Neg) }
func (op expOp) Hashcode() uint32                                  { return hashOf(op) }
func (op expOp) DiffWRT(int) []bool                                { return []bool{true} }
func (op expOp) String() string {
	if op.Neg {
		return "Exp(−x)"
	}
	return "Exp"
}

func (op expOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.HadamardProd(grad, output)
	if err == nil && op.Neg {
		d, err = G.Neg(d)
	}
	return G.Nodes{d}, err
}

func (op expOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op expOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("layers: %v takes 1 input, have %d", op, len(in))
	}
	x, out, err := operands(prealloc, in[0])
	if err != nil {
		return nil, err
	}
	switch xd := x.Data().(type) {
	case []float64:
		exp64(out.Data().([]float64), xd, op.Neg)
	case []float32:
		exp32(out.Data().([]float32), xd, op.Neg)
	default:
		return nil, fmt.Errorf("layers: %v on %v, want float64 or float32", op, x.Dtype())
	}
	return out, nil
}

func (op tanhOp) Arity() int                                        { return 1 }
func (op tanhOp) Type() hm.Type                                     { return unaryType() }
func (op tanhOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op tanhOp) ReturnsPtr() bool                                  { return false }
func (op tanhOp) CallsExtern() bool                                 { return false }
func (op tanhOp) OverwritesInput() int                              { return -1 }
func (op tanhOp) WriteHash(h hash.Hash)                             { fmt.Fprint(h, "tanh") }
func (op tanhOp) Hashcode() uint32                                  { return hashOf(op) }
func (op tanhOp) String() string                                    { return "Tanh" }
func (op tanhOp) DiffWRT(int) []bool                                { return []bool{true} }

func (op tanhOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(tanhGrad{}, output, grad)
	return G.Nodes{d}, err
}

func (op tanhOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op tanhOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("layers: %v takes 1 input, have %d", op, len(in))
	}
	x, out, err := operands(prealloc, in[0])
	if err != nil {
		return nil, err
	}
	switch xd := x.Data().(type) {
	case []float64:
		tanh64(out.Data().([]float64), xd)
	case []float32:
		tanh32(out.Data().([]float32), xd)
	default:
		return nil, fmt.Errorf("layers: %v on %v, want float64 or float32", op, x.Dtype())
	}
	return out, nil
}

func (op tanhGrad) Arity() int { return 2 }
func (op tanhGrad) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op tanhGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op tanhGrad) ReturnsPtr() bool                                  { return false }
func (op tanhGrad) CallsExtern() bool                                 { return false }
func (op tanhGrad) OverwritesInput() int                              { return -1 }
func (op tanhGrad) WriteHash(h hash.Hash)                             { fmt.Fprint(h, "tanh_grad") }
func (op tanhGrad) Hashcode() uint32                                  { return hashOf(op) }
func (op tanhGrad) String() string                                    { return "TanhGrad" }

func (op tanhGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op tanhGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("layers: %v takes 2 inputs, have %d", op, len(in))
	}
	y, out, err := operands(prealloc, in[0])
	if err != nil {
		return nil, err
	}
	g, ok := in[1].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("layers: %v: gradient of type %T, want a dense tensor", op, in[1])
	}
	if g.IsMaterializable() {
		g = g.Materialize().(*tensor.Dense)
	}
	if !g.Shape().Eq(y.Shape()) || g.Dtype() != y.Dtype() {
		return nil, fmt.Errorf("layers: %v: gradient %v does not match %v", op, g.Shape(), y.Shape())
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
	default:
		return nil, fmt.Errorf("layers: %v on %v, want float64 or float32", op, y.Dtype())
	}
	return out, nil
}

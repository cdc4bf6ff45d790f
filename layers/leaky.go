package layers

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// leakyReLU is a fused Gorgonia operation for max(x, 0) + slope·min(x, 0)
// (slope 0: ReLU), elementwise. Built from Gorgonia's own operations the
// activation takes five nodes (two Rectify, a Neg, a product and a
// difference), each a pass over the batch with its own mask; this is one
// pass, and its derivative (leakyReLUGrad) one more. Gradients at x = 0 are
// PyTorch's: slope.
type leakyReLU struct{ slope float64 }

// leakyReLUGrad is g·(x > 0 ? 1 : slope), the backward pass of leakyReLU
// for inputs (x, g). It is not differentiated further.
type leakyReLUGrad struct{ slope float64 }

// applyLeakyReLU adds leakyReLU(x) to x's graph.
func applyLeakyReLU(x *G.Node, slope float64) (*G.Node, error) {
	return G.ApplyOp(leakyReLU{slope}, x)
}

func (op leakyReLU) Arity() int { return 1 }
func (op leakyReLU) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op leakyReLU) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op leakyReLU) ReturnsPtr() bool                                  { return false }
func (op leakyReLU) CallsExtern() bool                                 { return false }
func (op leakyReLU) OverwritesInput() int                              { return -1 }
func (op leakyReLU) WriteHash(h hash.Hash)                             { fmt.Fprintf(h, "leaky_relu(%v)", op.slope) }
func (op leakyReLU) Hashcode() uint32                                  { return hashOf(op) }
func (op leakyReLU) String() string                                    { return fmt.Sprintf("LeakyReLU(%v)", op.slope) }
func (op leakyReLU) DiffWRT(int) []bool                                { return []bool{true} }

func (op leakyReLU) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(leakyReLUGrad(op), in[0], grad)
	return G.Nodes{d}, err
}

func (op leakyReLU) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op leakyReLU) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("layers: %v takes 1 input, have %d", op, len(in))
	}
	x, out, err := operands(prealloc, in[0])
	if err != nil {
		return nil, err
	}
	switch xd := x.Data().(type) {
	case []float64:
		od, s := out.Data().([]float64), op.slope
		for i, v := range xd {
			if v > 0 {
				od[i] = v
			} else {
				od[i] = s * v
			}
		}
	case []float32:
		od, s := out.Data().([]float32), float32(op.slope)
		for i, v := range xd {
			if v > 0 {
				od[i] = v
			} else {
				od[i] = s * v
			}
		}
	default:
		return nil, fmt.Errorf("layers: %v on %v, want float64 or float32", op, x.Dtype())
	}
	return out, nil
}

func (op leakyReLUGrad) Arity() int { return 2 }
func (op leakyReLUGrad) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op leakyReLUGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op leakyReLUGrad) ReturnsPtr() bool                                  { return false }
func (op leakyReLUGrad) CallsExtern() bool                                 { return false }
func (op leakyReLUGrad) OverwritesInput() int                              { return -1 }
func (op leakyReLUGrad) WriteHash(h hash.Hash)                             { fmt.Fprintf(h, "leaky_relu_grad(%v)", op.slope) }
func (op leakyReLUGrad) Hashcode() uint32                                  { return hashOf(op) }
func (op leakyReLUGrad) String() string                                    { return fmt.Sprintf("LeakyReLUGrad(%v)", op.slope) }

func (op leakyReLUGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op leakyReLUGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("layers: %v takes 2 inputs, have %d", op, len(in))
	}
	x, out, err := operands(prealloc, in[0])
	if err != nil {
		return nil, err
	}
	g, ok := in[1].(*tensor.Dense)
	if !ok || !g.Shape().Eq(x.Shape()) || g.Dtype() != x.Dtype() {
		return nil, fmt.Errorf("layers: %v: gradient %v does not match input %v", op, in[1], x.Shape())
	}
	if g.IsMaterializable() {
		g = g.Materialize().(*tensor.Dense)
	}
	switch xd := x.Data().(type) {
	case []float64:
		od, gd, s := out.Data().([]float64), g.Data().([]float64), op.slope
		for i, v := range xd {
			if v > 0 {
				od[i] = gd[i]
			} else {
				od[i] = s * gd[i]
			}
		}
	case []float32:
		od, gd, s := out.Data().([]float32), g.Data().([]float32), float32(op.slope)
		for i, v := range xd {
			if v > 0 {
				od[i] = gd[i]
			} else {
				od[i] = s * gd[i]
			}
		}
	default:
		return nil, fmt.Errorf("layers: %v on %v, want float64 or float32", op, x.Dtype())
	}
	return out, nil
}

// operands returns the input as a contiguous dense tensor and the output:
// prealloc when it has the input's shape and type, else a new tensor.
func operands(prealloc, in G.Value) (x, out *tensor.Dense, err error) {
	x, ok := in.(*tensor.Dense)
	if !ok {
		return nil, nil, fmt.Errorf("layers: fused activation on %T, want a dense tensor", in)
	}
	if x.IsMaterializable() {
		x = x.Materialize().(*tensor.Dense)
	}
	if p, ok := prealloc.(*tensor.Dense); ok && p.Shape().Eq(x.Shape()) && p.Dtype() == x.Dtype() && !p.IsMaterializable() && p.Uintptr() != x.Uintptr() {
		return x, p, nil
	}
	return x, tensor.New(tensor.WithShape(x.Shape().Clone()...), tensor.Of(x.Dtype())), nil
}

func sameShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("layers: no input shape")
	}
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("layers: input shape %v of type %T", in[0], in[0])
	}
	return s.Clone(), nil
}

func hashOf(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

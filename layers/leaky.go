package layers

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// leakyReLU is a fused Gorgonia operation for max(x, 0) + slope·min(x, 0)
// (slope 0: ReLU), elementwise. Built from Gorgonia's own operations the
// activation takes five nodes (two Rectify, a Neg, a product and a
// difference), each a pass over the batch with its own mask; this is one
// pass, and its derivative (leakyReLUGrad) one more. Both are branch-free
// (the factor 1 or slope is picked by x's sign bit; with random signs a
// branch mispredicts half the time, measured 5 ns per element): at x = +0
// the gradient is 1 (PyTorch takes slope there; x = −0 gives slope).
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
		od := out.Data().([]float64)[:len(xd)]
		if op.slope == 0 {
			for i, v := range xd {
				od[i] = keepPositive64(v, v)
			}
			break
		}
		f := [2]float64{1, op.slope}
		for i, v := range xd {
			od[i] = v * f[math.Float64bits(v)>>63]
		}
	case []float32:
		od := out.Data().([]float32)[:len(xd)]
		if op.slope == 0 {
			for i, v := range xd {
				od[i] = keepPositive32(v, v)
			}
			break
		}
		f := [2]float32{1, float32(op.slope)}
		for i, v := range xd {
			od[i] = v * f[math.Float32bits(v)>>31]
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
		od, gd := out.Data().([]float64)[:len(xd)], g.Data().([]float64)[:len(xd)]
		if op.slope == 0 {
			for i, v := range xd {
				od[i] = keepPositive64(v, gd[i])
			}
			break
		}
		f := [2]float64{1, op.slope}
		for i, v := range xd {
			od[i] = gd[i] * f[math.Float64bits(v)>>63]
		}
	case []float32:
		od, gd := out.Data().([]float32)[:len(xd)], g.Data().([]float32)[:len(xd)]
		if op.slope == 0 {
			for i, v := range xd {
				od[i] = keepPositive32(v, gd[i])
			}
			break
		}
		f := [2]float32{1, float32(op.slope)}
		for i, v := range xd {
			od[i] = gd[i] * f[math.Float32bits(v)>>31]
		}
	default:
		return nil, fmt.Errorf("layers: %v on %v, want float64 or float32", op, x.Dtype())
	}
	return out, nil
}

// keepPositive64 returns y where x's sign bit is clear, else +0, without a
// branch (ReLU and its gradient with slope 0: exactly 0 even for x = −∞ or
// an infinite y, where multiplying by 0 would give NaN).
func keepPositive64(x, y float64) float64 {
	mask := ^uint64(int64(math.Float64bits(x)) >> 63)
	return math.Float64frombits(math.Float64bits(y) & mask)
}

func keepPositive32(x, y float32) float32 {
	mask := ^uint32(int32(math.Float32bits(x)) >> 31)
	return math.Float32frombits(math.Float32bits(y) & mask)
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

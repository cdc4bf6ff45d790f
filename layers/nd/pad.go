package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PadMode says what Pad puts in the border.
type PadMode int

const (
	// PadConstant fills the border with Pad.Value.
	PadConstant PadMode = iota
	// PadReflect mirrors the input about its first and last elements
	// (excluded): a pad may be at most the dimension (less any crop) less
	// one.
	PadReflect
	// PadEdge repeats the first and last elements.
	PadEdge
)

// String names the mode.
func (m PadMode) String() string {
	switch m {
	case PadConstant:
		return "constant"
	case PadReflect:
		return "reflect"
	case PadEdge:
		return "edge"
	}
	return fmt.Sprintf("PadMode(%d)", int(m))
}

// Pad adds Begin[a] elements before and End[a] after the input along each
// axis a (ONNX Pad with pads for every axis); negative values remove
// elements instead. Element o of the result along an axis is input element
// o − Begin[a] when that lies in the input, and otherwise the border given
// by Mode (Value, a mirror image or the edge). Every result dimension must
// be at least 1. The rank is len(Begin): Type needs nothing else. The
// gradient adds each result element's gradient to the input element it
// came from.
type Pad struct {
	pure
	Begin, End []int
	Mode       PadMode
	Value      float64
}

// padGrad is Pad's gradient.
type padGrad struct {
	pure
	op Pad
	in tensor.Shape
}

// shape checks the attributes against the input shape and returns the
// output shape.
func (op Pad) shape(in tensor.Shape) (tensor.Shape, error) {
	if len(op.Begin) != len(in) || len(op.End) != len(in) {
		return nil, fmt.Errorf("nd: %v of an input of shape %v: want pads for every axis", op, in)
	}
	if op.Mode < PadConstant || op.Mode > PadEdge {
		return nil, fmt.Errorf("nd: %v: unknown mode", op)
	}
	out := make(tensor.Shape, len(in))
	for a, n := range in {
		out[a] = n + op.Begin[a] + op.End[a]
		if out[a] < 1 {
			return nil, fmt.Errorf("nd: %v of an input of shape %v: axis %d empty", op, in, a)
		}
		kept := n + min(op.Begin[a], 0) + min(op.End[a], 0)
		if op.Mode == PadReflect && max(op.Begin[a], op.End[a]) > kept-1 {
			return nil, fmt.Errorf("nd: %v of an input of shape %v: reflection wider than axis %d", op, in, a)
		}
	}
	return out, nil
}

// maps returns, per axis, the input offset of each output element, or -1
// for a constant border.
func (op Pad) maps(in, out tensor.Shape) [][]int {
	st := strides(in)
	m := make([][]int, len(in))
	for a, n := range in {
		m[a] = make([]int, out[a])
		for o := range m[a] {
			i := o - op.Begin[a]
			switch {
			case i >= 0 && i < n:
			case op.Mode == PadConstant:
				m[a][o] = -1
				continue
			case op.Mode == PadEdge:
				i = min(max(i, 0), n-1)
			case i < 0:
				i = -i
			default:
				i = 2*(n-1) - i
			}
			m[a][o] = i * st[a]
		}
	}
	return m
}

// Arity is 1.
func (op Pad) Arity() int { return 1 }

// Type is a function from and to tensors of rank len(Begin).
func (op Pad) Type() hm.Type { return fnType(len(op.Begin), len(op.Begin)) }

// InferShape returns the padded shape.
func (op Pad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	return op.shape(s[0])
}

// Do pads the input.
func (op Pad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo pads the input, writing into prealloc when it fits.
func (op Pad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	s, err := op.shape(shapeOf(x))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, x.Dtype(), s, x)
	m := op.maps(shapeOf(x), s)
	if x.Dtype() == tensor.Float32 {
		gatherAxes(data[float32](out), data[float32](x), m, float32(op.Value))
	} else {
		gatherAxes(data[float64](out), data[float64](x), m, op.Value)
	}
	return out, nil
}

// WriteHash writes the attributes.
func (op Pad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Pad) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Pad) String() string {
	if op.Mode == PadConstant {
		return fmt.Sprintf("Pad{%v %v constant %v}", op.Begin, op.End, op.Value)
	}
	return fmt.Sprintf("Pad{%v %v %v}", op.Begin, op.End, op.Mode)
}

// DiffWRT is true: the input is differentiable.
func (op Pad) DiffWRT(int) []bool { return []bool{true} }

// SymDiff adds the gradient of each result element to its source.
func (op Pad) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(padGrad{op: op, in: in[0].Shape().Clone()}, grad)
	return G.Nodes{d}, err
}

func (op padGrad) Arity() int    { return 1 }
func (op padGrad) Type() hm.Type { return fnType(len(op.in), len(op.in)) }
func (op padGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if want, err := op.op.shape(op.in); err != nil || !want.Eq(s[0]) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v", op, s[0])
	}
	return op.in.Clone(), nil
}
func (op padGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op padGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	g := ts[0]
	s, err := op.op.shape(op.in)
	if err != nil || !s.Eq(shapeOf(g)) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v", op, g.Shape())
	}
	out := output(prealloc, g.Dtype(), op.in, g)
	m := op.op.maps(op.in, s)
	if g.Dtype() == tensor.Float32 {
		d := data[float32](out)
		clear(d)
		scatterAxes(d, data[float32](g), m)
	} else {
		d := data[float64](out)
		clear(d)
		scatterAxes(d, data[float64](g), m)
	}
	return out, nil
}
func (op padGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op padGrad) Hashcode() uint32      { return hashOf(op) }
func (op padGrad) String() string        { return fmt.Sprintf("%vGrad%v", op.op, op.in) }

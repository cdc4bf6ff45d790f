package nd

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Softmax is the softmax e^(x−m)/Σe^(x−m) along axis Axis (m the maximum
// along it), or with Log its logarithm, (x − m) − ln Σe^(x−m): ONNX's
// Softmax and LogSoftmax from opset 13 (callers reshape for the older
// ones, which flatten the axes from Axis on). Axis is non-negative and
// below the rank; the Type is rank-polymorphic (a → a). A +Inf along the
// axis, or all −Inf, gives NaN, as in PyTorch. The gradient is
// y⊙(g − Σg⊙y) for the softmax and g − eʸ⊙Σg for its logarithm.
type Softmax struct {
	pure
	Axis int
	Log  bool
}

// softmaxGrad is Softmax's gradient, for inputs (y, g).
type softmaxGrad struct {
	pure
	op Softmax
}

// axisSplit returns the sizes before, along and after axis of shape s.
func axisSplit(op fmt.Stringer, s tensor.Shape, axis int) (outer, n, inner int, err error) {
	if axis < 0 || axis >= len(s) {
		return 0, 0, 0, fmt.Errorf("nd: %v of shape %v: axis out of range", op, s)
	}
	return prod(s[:axis]), s[axis], prod(s[axis+1:]), nil
}

// lanes calls f(base, stride) for each line along axis n of an
// (outer, n, inner) tensor: its elements are base + i·stride, i < n.
func lanes(outer, n, inner int, f func(base, stride int)) {
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			f(o*n*inner+i, inner)
		}
	}
}

// Arity is 1.
func (op Softmax) Arity() int { return 1 }

// Type is a → a.
func (op Softmax) Type() hm.Type { return fnType(0, 0) }

// InferShape returns the input's shape after checking the axis.
func (op Softmax) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return alongAxisShape(op, in, op.Axis)
}

// Do computes the softmax.
func (op Softmax) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the softmax into prealloc if it fits.
func (op Softmax) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	outer, n, inner, err := axisSplit(op, shapeOf(ts[0]), op.Axis)
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), shapeOf(ts[0]), ts...)
	var f func(base, stride int)
	if out.Dtype() == tensor.Float32 {
		y, x := data[float32](out), data[float32](ts[0])
		f = func(base, stride int) { softmaxLane(y, x, base, stride, n, op.Log) }
	} else {
		y, x := data[float64](out), data[float64](ts[0])
		f = func(base, stride int) { softmaxLane(y, x, base, stride, n, op.Log) }
	}
	lanes(outer, n, inner, f)
	return out, nil
}

// softmaxLane computes one line of the softmax (or its logarithm).
func softmaxLane[T fp](y, x []T, base, stride, n int, log bool) {
	end := base + n*stride
	m := math.Inf(-1)
	for i := base; i < end; i += stride {
		m = math.Max(m, float64(x[i]))
	}
	s := 0.0
	for i := base; i < end; i += stride {
		s += math.Exp(float64(x[i]) - m)
	}
	ls := math.Log(s)
	for i := base; i < end; i += stride {
		if log {
			y[i] = T(float64(x[i]) - m - ls)
		} else {
			y[i] = T(math.Exp(float64(x[i])-m) / s)
		}
	}
}

// WriteHash writes the attributes.
func (op Softmax) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Softmax) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Softmax) String() string {
	if op.Log {
		return fmt.Sprintf("LogSoftmax{axis %d}", op.Axis)
	}
	return fmt.Sprintf("Softmax{axis %d}", op.Axis)
}

// DiffWRT is true.
func (op Softmax) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the gradient.
func (op Softmax) SymDiff(_ G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d, err := Apply(softmaxGrad{op: op}, out, grad)
	return G.Nodes{d}, err
}

// Arity is 2: y and g.
func (op softmaxGrad) Arity() int { return 2 }

// Type is a → a → a.
func (op softmaxGrad) Type() hm.Type { return fnType(0, 0, 0) }

// InferShape returns the shape of y and g.
func (op softmaxGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return sameShapes(op, in, 2)
}

// Do computes the gradient.
func (op softmaxGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the gradient into prealloc if it fits.
func (op softmaxGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	s := shapeOf(ts[0])
	outer, n, inner, err := axisSplit(op, s, op.op.Axis)
	if err != nil || !shapeOf(ts[1]).Eq(s) {
		return nil, fmt.Errorf("nd: %v of shapes %v and %v", op, s, ts[1].Shape())
	}
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	var f func(base, stride int)
	if out.Dtype() == tensor.Float32 {
		dx, y, g := data[float32](out), data[float32](ts[0]), data[float32](ts[1])
		f = func(base, stride int) { softmaxBackLane(dx, y, g, base, stride, n, op.op.Log) }
	} else {
		dx, y, g := data[float64](out), data[float64](ts[0]), data[float64](ts[1])
		f = func(base, stride int) { softmaxBackLane(dx, y, g, base, stride, n, op.op.Log) }
	}
	lanes(outer, n, inner, f)
	return out, nil
}

// softmaxBackLane computes one line of the gradient.
func softmaxBackLane[T fp](dx, y, g []T, base, stride, n int, log bool) {
	end := base + n*stride
	s := 0.0
	for i := base; i < end; i += stride {
		if log {
			s += float64(g[i])
		} else {
			s += float64(g[i]) * float64(y[i])
		}
	}
	for i := base; i < end; i += stride {
		if log {
			dx[i] = T(float64(g[i]) - math.Exp(float64(y[i]))*s)
		} else {
			dx[i] = T(float64(y[i]) * (float64(g[i]) - s))
		}
	}
}

// WriteHash writes the attributes.
func (op softmaxGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%vGrad", op.op) }

// Hashcode hashes the attributes.
func (op softmaxGrad) Hashcode() uint32 { return hashOf(op) }

// String names the gradient.
func (op softmaxGrad) String() string { return fmt.Sprintf("%vGrad", op.op) }

// alongAxisShape is the InferShape of a one-input operation along an axis
// (Softmax, CumSum): the input's shape, once the axis is checked.
func alongAxisShape(op fmt.Stringer, in []G.DimSizer, axis int) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if _, _, _, err := axisSplit(op, s[0], axis); err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

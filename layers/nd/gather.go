package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gather is ONNX Gather with constant indices: it takes the elements of
// its input at Indices (non-negative, below the axis' dimension) along
// axis Axis. Indices has shape IndicesShape, which replaces the axis in
// the result: the result's shape is in[:Axis] ++ IndicesShape ++
// in[Axis+1:] (an empty IndicesShape is one index and removes the axis;
// a result of no axes has shape (1)). Type and InferShape need the input's
// rank, which callers set in Rank (see Ranked; Do ignores it). The
// gradient adds
// the output gradient into zeros at the gathered positions.
type Gather struct {
	pure
	Axis         int
	Indices      []int
	IndicesShape []int
	Rank         int
}

// gatherGrad is Gather's gradient.
type gatherGrad struct {
	pure
	op Gather
	in tensor.Shape
}

// outRank is the rank of Gather's result.
func (op Gather) outRank() int { return max(1, op.Rank-1+len(op.IndicesShape)) }

// shape checks the attributes against the input shape and returns the
// output shape.
func (op Gather) shape(in tensor.Shape) (tensor.Shape, error) {
	if op.Axis < 0 || op.Axis >= len(in) || prod(op.IndicesShape) != len(op.Indices) || !positive(op.IndicesShape) {
		return nil, fmt.Errorf("nd: %v of an input of shape %v", op, in)
	}
	for _, i := range op.Indices {
		if i < 0 || i >= in[op.Axis] {
			return nil, fmt.Errorf("nd: %v of an input of shape %v: index %d out of range", op, in, i)
		}
	}
	out := append(append(append(tensor.Shape{}, in[:op.Axis]...), op.IndicesShape...), in[op.Axis+1:]...)
	return atLeast1(out), nil
}

// Arity is 1.
func (op Gather) Arity() int { return 1 }

// Type is a function from a tensor of rank Rank to one of rank Rank − 1 +
// len(IndicesShape) (at least 1).
func (op Gather) Type() hm.Type { return fnType(op.outRank(), op.Rank) }

// InferShape returns the gathered shape.
func (op Gather) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if err := checkFields(op, s, []int{op.Rank}, []int{len(s[0])}); err != nil {
		return nil, err
	}
	return op.shape(s[0])
}

// Do gathers.
func (op Gather) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo gathers, writing into prealloc when it fits.
func (op Gather) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	xs := shapeOf(x)
	s, err := op.shape(xs)
	if err != nil {
		return nil, err
	}
	out := output(prealloc, x.Dtype(), s, x)
	outer, n, inner := prod(xs[:op.Axis]), xs[op.Axis], prod(xs[op.Axis+1:])
	if x.Dtype() == tensor.Float32 {
		gatherRows(data[float32](out), data[float32](x), op.Indices, outer, n, inner)
	} else {
		gatherRows(data[float64](out), data[float64](x), op.Indices, outer, n, inner)
	}
	return out, nil
}

// gatherRows views src as (outer, n, inner) and dst as (outer, len(idx),
// inner) and copies src[o, idx[j], :] to dst[o, j, :].
func gatherRows[T fp](dst, src []T, idx []int, outer, n, inner int) {
	d := 0
	for o := 0; o < outer; o++ {
		for _, i := range idx {
			s := (o*n + i) * inner
			copy(dst[d:d+inner], src[s:s+inner])
			d += inner
		}
	}
}

// scatterRows is gatherRows' adjoint: it adds src[o, j, :] to
// dst[o, idx[j], :].
func scatterRows[T fp](dst, src []T, idx []int, outer, n, inner int) {
	s := 0
	for o := 0; o < outer; o++ {
		for _, i := range idx {
			d := (o*n + i) * inner
			addTo(dst[d:d+inner], src[s:s+inner])
			s += inner
		}
	}
}

// WriteHash writes the attributes.
func (op Gather) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Gather) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Gather) String() string {
	return fmt.Sprintf("Gather{axis %d of rank %d, %v of shape %v}", op.Axis, op.Rank, op.Indices, op.IndicesShape)
}

// DiffWRT is true: the input is differentiable.
func (op Gather) DiffWRT(int) []bool { return []bool{true} }

// SymDiff adds the gradient into zeros at the gathered positions.
func (op Gather) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(gatherGrad{op: op, in: in[0].Shape().Clone()}, grad)
	return G.Nodes{d}, err
}

func (op gatherGrad) Arity() int    { return 1 }
func (op gatherGrad) Type() hm.Type { return fnType(len(op.in), op.op.outRank()) }
func (op gatherGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if want, err := op.op.shape(op.in); err != nil || !want.Eq(s[0]) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v", op, s[0])
	}
	return op.in.Clone(), nil
}
func (op gatherGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op gatherGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	g := ts[0]
	if want, err := op.op.shape(op.in); err != nil || !want.Eq(shapeOf(g)) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v", op, g.Shape())
	}
	out := output(prealloc, g.Dtype(), op.in, g)
	a := op.op.Axis
	outer, n, inner := prod(op.in[:a]), op.in[a], prod(op.in[a+1:])
	if g.Dtype() == tensor.Float32 {
		d := data[float32](out)
		clear(d)
		scatterRows(d, data[float32](g), op.op.Indices, outer, n, inner)
	} else {
		d := data[float64](out)
		clear(d)
		scatterRows(d, data[float64](g), op.op.Indices, outer, n, inner)
	}
	return out, nil
}
func (op gatherGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op gatherGrad) Hashcode() uint32      { return hashOf(op) }
func (op gatherGrad) String() string        { return fmt.Sprintf("%vGrad%v", op.op, op.in) }

// GatherElements is ONNX GatherElements: for inputs data and indices of
// one rank, result element c (c ranging over the indices' shape, which
// is the result's) is data element c with its coordinate along Axis
// replaced by indices[c]. The indices are float values holding integers,
// negative ones counting from the end; a non-integer or out-of-range one
// is an error of Do. Along the other axes the indices' dimensions must
// not exceed the data's. Type and InferShape need the rank, which callers
// set in Rank (see Ranked; Do ignores it). The indices are not
// differentiable; the
// data's gradient adds the output gradient at the gathered positions.
type GatherElements struct {
	pure
	Axis, Rank int
}

// gatherElementsGrad is GatherElements' gradient for the data; its inputs
// are the output gradient and the indices.
type gatherElementsGrad struct {
	pure
	op GatherElements
	in tensor.Shape
}

// shape checks the data's and indices' shapes and returns the output
// shape.
func (op GatherElements) shape(d, q tensor.Shape) (tensor.Shape, error) {
	if len(d) != len(q) || op.Axis < 0 || op.Axis >= len(d) || !positive(d, q) {
		return nil, fmt.Errorf("nd: %v of data %v and indices %v", op, d, q)
	}
	for a := range d {
		if a != op.Axis && q[a] > d[a] {
			return nil, fmt.Errorf("nd: %v of data %v and indices %v", op, d, q)
		}
	}
	return q.Clone(), nil
}

// Arity is 2.
func (op GatherElements) Arity() int { return 2 }

// Type is a function from two tensors of rank Rank to a third.
func (op GatherElements) Type() hm.Type { return fnType(op.Rank, op.Rank, op.Rank) }

// InferShape returns the indices' shape.
func (op GatherElements) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	if err := checkFields(op, s, []int{op.Rank}, []int{len(s[0])}); err != nil {
		return nil, err
	}
	return op.shape(s[0], s[1])
}

// Do gathers.
func (op GatherElements) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo gathers, writing into prealloc when it fits.
func (op GatherElements) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	x, q := ts[0], ts[1]
	s, err := op.shape(shapeOf(x), shapeOf(q))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, x.Dtype(), s, ts...)
	if x.Dtype() == tensor.Float32 {
		err = gatherElements[float32](out, x, q, op.Axis, false)
	} else {
		err = gatherElements[float64](out, x, q, op.Axis, false)
	}
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}

// gatherElements sets out[c] = x[c with axis coordinate q[c]], or, for
// the gradient (scatter), adds x[c] to out[… q[c] …] after zeroing out.
func gatherElements[T fp](out, x, q *tensor.Dense, axis int, scatter bool) error {
	od, xd, qd := data[T](out), data[T](x), data[T](q)
	pb := intPool.get(len(qd))
	defer intPool.put(pb)
	offs := *pb
	ds := shapeOf(x)
	if scatter {
		ds = shapeOf(out)
	}
	if err := elementOffsets(offs, qd, ds, shapeOf(q), axis); err != nil {
		return err
	}
	if !scatter {
		for f, o := range offs {
			od[f] = xd[o]
		}
		return nil
	}
	clear(od)
	for f, o := range offs {
		od[o] += xd[f]
	}
	return nil
}

// elementOffsets sets offs[f], for each element f of the indices (shape
// qs), to the offset in data of shape ds of the element GatherElements
// takes for it.
func elementOffsets[T fp](offs []int, idx []T, ds, qs tensor.Shape, axis int) error {
	st := strides(ds)
	c := make([]int, len(qs))
	base := 0 // Σ c[a]·st[a] over the axes other than axis
	for f := range offs {
		i, err := indexValue(float64(idx[f]), ds[axis])
		if err != nil {
			return err
		}
		offs[f] = base + i*st[axis]
		for a := len(qs) - 1; a >= 0; a-- {
			c[a]++
			if a != axis {
				base += st[a]
			}
			if c[a] < qs[a] {
				break
			}
			if a != axis {
				base -= c[a] * st[a]
			}
			c[a] = 0
		}
	}
	return nil
}

// WriteHash writes the attributes.
func (op GatherElements) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op GatherElements) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op GatherElements) String() string {
	return fmt.Sprintf("GatherElements{axis %d of rank %d}", op.Axis, op.Rank)
}

// DiffWRT is true for the data, false for the indices.
func (op GatherElements) DiffWRT(int) []bool { return []bool{true, false} }

// SymDiff adds the gradient at the gathered positions.
func (op GatherElements) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(gatherElementsGrad{op: op, in: in[0].Shape().Clone()}, grad, in[1])
	return G.Nodes{d, nil}, err
}

func (op gatherElementsGrad) Arity() int { return 2 }
func (op gatherElementsGrad) Type() hm.Type {
	return fnType(op.op.Rank, op.op.Rank, op.op.Rank)
}
func (op gatherElementsGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	if want, err := op.op.shape(op.in, s[1]); err != nil || !want.Eq(s[0]) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v, indices %v", op, s[0], s[1])
	}
	return op.in.Clone(), nil
}
func (op gatherElementsGrad) Do(in ...G.Value) (G.Value, error) {
	return op.UsePreallocDo(nil, in...)
}
func (op gatherElementsGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	g, q := ts[0], ts[1]
	if want, err := op.op.shape(op.in, shapeOf(q)); err != nil || !want.Eq(shapeOf(g)) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v, indices %v", op, g.Shape(), q.Shape())
	}
	out := output(prealloc, g.Dtype(), op.in, ts...)
	if g.Dtype() == tensor.Float32 {
		err = gatherElements[float32](out, g, q, op.op.Axis, true)
	} else {
		err = gatherElements[float64](out, g, q, op.op.Axis, true)
	}
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}
func (op gatherElementsGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op gatherElementsGrad) Hashcode() uint32      { return hashOf(op) }
func (op gatherElementsGrad) String() string        { return fmt.Sprintf("%vGrad%v", op.op, op.in) }

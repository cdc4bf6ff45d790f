package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Expand broadcasts its input to the NumPy broadcast of the input's shape
// and Shape (ONNX Expand: Shape may have fewer axes than the input, or 1s
// where the input is larger). Rank is the input's rank, which Type needs
// when it differs from len(Shape): callers set it (0 means len(Shape));
// InferShape checks it and Do ignores it. The gradient sums g over the
// expanded axes.
type Expand struct {
	pure
	Shape []int
	Rank  int
}

// inRank is the rank of the input.
func (op Expand) inRank() int {
	if op.Rank == 0 {
		return len(op.Shape)
	}
	return op.Rank
}

// Arity is 1.
func (op Expand) Arity() int { return 1 }

// Type is a function from rank Rank (or len(Shape)) to the larger of it and
// len(Shape).
func (op Expand) Type() hm.Type { return fnType(max(op.inRank(), len(op.Shape)), op.inRank()) }

// InferShape returns the broadcast shape.
func (op Expand) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if len(s[0]) != op.inRank() {
		return nil, fmt.Errorf("nd: %v does not describe an input of shape %v: set Rank", op, s[0])
	}
	return op.shape(s[0])
}

// shape returns the result's shape for an input of shape in.
func (op Expand) shape(in tensor.Shape) (tensor.Shape, error) {
	out, err := broadcastShapes(in, op.Shape)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %v", op, err)
	}
	return out, nil
}

// Do broadcasts the input.
func (op Expand) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo broadcasts the input into prealloc if it fits.
func (op Expand) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	s, err := op.shape(shapeOf(ts[0]))
	if err != nil {
		return nil, err
	}
	return broadcastInto(prealloc, ts[0], s, newBcast(s, shapeOf(ts[0])))
}

// broadcastInto returns x broadcast as b plans (x its operand 0), of
// shape s.
func broadcastInto(prealloc G.Value, x *tensor.Dense, s tensor.Shape, b *bcast) (G.Value, error) {
	out := output(prealloc, x.Dtype(), s, x)
	if out.Dtype() == tensor.Float32 {
		expandRun(b, data[float32](out), data[float32](x))
	} else {
		expandRun(b, data[float64](out), data[float64](x))
	}
	return out, nil
}

// expandRun copies x (operand 0 of b) into out, row by row.
func expandRun[T fp](b *bcast, out, x []T) {
	n, s := b.row(), b.inner(0)
	b.rows(func(o int, off []int) {
		if s == 0 {
			fill(out[o:o+n], x[off[0]])
		} else {
			copy(out[o:o+n], x[off[0]:off[0]+n])
		}
	})
}

// WriteHash writes the attributes.
func (op Expand) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Expand) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Expand) String() string { return fmt.Sprintf("Expand{%v, rank %d}", op.Shape, op.Rank) }

// DiffWRT is true.
func (op Expand) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns g summed over the expanded axes.
func (op Expand) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := reduceTo(grad, in[0].Shape(), 1)
	return G.Nodes{d}, err
}

// Tile repeats its input Repeats[a] times along each axis a (ONNX Tile);
// there is one repeat count, at least 1, per input axis, so the rank is
// len(Repeats). The gradient sums the copies.
type Tile struct {
	pure
	Repeats []int
}

// views returns shapes (1, d₀, 1, d₁, …) and (r₀, d₀, r₁, d₁, …) for an
// input of shape in: tiling broadcasts the first to the second, whose
// elements are in the order of the result's.
func (op Tile) views(in tensor.Shape) (src, dst tensor.Shape, err error) {
	if len(in) != len(op.Repeats) {
		return nil, nil, fmt.Errorf("nd: %v of an input of shape %v: want one repeat per axis", op, in)
	}
	for a, d := range in {
		if op.Repeats[a] < 1 || d < 1 {
			return nil, nil, fmt.Errorf("nd: %v of an input of shape %v: repeats must be at least 1", op, in)
		}
		src = append(src, 1, d)
		dst = append(dst, op.Repeats[a], d)
	}
	return src, dst, nil
}

// shape returns the result's shape for an input of shape in.
func (op Tile) shape(in tensor.Shape) (tensor.Shape, error) {
	if _, _, err := op.views(in); err != nil {
		return nil, err
	}
	out := make(tensor.Shape, len(in))
	for a, d := range in {
		out[a] = d * op.Repeats[a]
	}
	return out, nil
}

// Arity is 1.
func (op Tile) Arity() int { return 1 }

// Type is a function from and to rank len(Repeats).
func (op Tile) Type() hm.Type { return fnType(len(op.Repeats), len(op.Repeats)) }

// InferShape returns the tiled shape.
func (op Tile) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	return op.shape(s[0])
}

// Do tiles the input.
func (op Tile) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo tiles the input into prealloc if it fits.
func (op Tile) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	s, err := op.shape(shapeOf(ts[0]))
	if err != nil {
		return nil, err
	}
	src, dst, _ := op.views(shapeOf(ts[0]))
	return broadcastInto(prealloc, ts[0], s, newBcast(dst, src))
}

// WriteHash writes the repeats.
func (op Tile) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the repeats.
func (op Tile) Hashcode() uint32 { return hashOf(op) }

// String shows the repeats.
func (op Tile) String() string { return fmt.Sprintf("Tile%v", op.Repeats) }

// DiffWRT is true.
func (op Tile) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the sum of g's copies.
func (op Tile) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	src, dst, err := op.views(in[0].Shape())
	if err != nil {
		return nil, err
	}
	sop := sumTo{from: out.Shape().Clone(), to: in[0].Shape().Clone(), vfrom: dst, vto: src, scale: 1}
	d, err := Apply(sop, grad)
	return G.Nodes{d}, err
}

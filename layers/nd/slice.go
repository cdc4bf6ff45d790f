package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Slice takes a strided sub-tensor: along axis a, element i of the result
// is element Starts[a] + i·Steps[a] of the input, for i < Counts[a]. Steps
// may be negative (not zero); every count must be at least 1 and every
// element taken must lie in the input. There is one entry per input axis
// (callers turn ONNX's starts, ends, axes and steps into this form), so
// the rank is len(Starts): Type needs nothing else. The gradient scatters
// the output gradient into zeros.
type Slice struct {
	pure
	Starts, Steps, Counts []int
}

// sliceGrad is Slice's gradient: g scattered into zeros of the input's
// shape.
type sliceGrad struct {
	pure
	op Slice
	in tensor.Shape
}

func (op Slice) rank() int { return len(op.Starts) }

// shape checks the attributes against the input shape and returns the
// output shape.
func (op Slice) shape(in tensor.Shape) (tensor.Shape, error) {
	r := op.rank()
	if len(op.Steps) != r || len(op.Counts) != r || len(in) != r {
		return nil, fmt.Errorf("nd: %v of an input of shape %v: want one start, step and count per axis", op, in)
	}
	for a, n := range in {
		s, st, c := op.Starts[a], op.Steps[a], op.Counts[a]
		last := s + (c-1)*st
		if c < 1 || st == 0 || s < 0 || s >= n || last < 0 || last >= n {
			return nil, fmt.Errorf("nd: %v of an input of shape %v: axis %d out of range", op, in, a)
		}
	}
	return tensor.Shape(append([]int(nil), op.Counts...)), nil
}

// maps returns, per axis, the input offsets of the elements taken.
func (op Slice) maps(in tensor.Shape) [][]int {
	st := strides(in)
	m := make([][]int, len(in))
	for a := range in {
		m[a] = make([]int, op.Counts[a])
		for i := range m[a] {
			m[a][i] = (op.Starts[a] + i*op.Steps[a]) * st[a]
		}
	}
	return m
}

// Arity is 1.
func (op Slice) Arity() int { return 1 }

// Type is a function from and to tensors of rank len(Starts).
func (op Slice) Type() hm.Type { return fnType(op.rank(), op.rank()) }

// InferShape returns Counts after checking them against the input shape.
func (op Slice) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	return op.shape(s[0])
}

// Do takes the slice.
func (op Slice) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo takes the slice, writing into prealloc when it fits.
func (op Slice) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
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
	m := op.maps(shapeOf(x))
	if x.Dtype() == tensor.Float32 {
		gatherAxes(data[float32](out), data[float32](x), m, 0)
	} else {
		gatherAxes(data[float64](out), data[float64](x), m, 0)
	}
	return out, nil
}

// WriteHash writes the attributes.
func (op Slice) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Slice) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Slice) String() string {
	return fmt.Sprintf("Slice{%v %v %v}", op.Starts, op.Steps, op.Counts)
}

// DiffWRT is true: the input is differentiable.
func (op Slice) DiffWRT(int) []bool { return []bool{true} }

// SymDiff scatters the gradient into zeros of the input's shape.
func (op Slice) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(sliceGrad{op: op, in: in[0].Shape().Clone()}, grad)
	return G.Nodes{d}, err
}

func (op sliceGrad) Arity() int    { return 1 }
func (op sliceGrad) Type() hm.Type { return fnType(len(op.in), op.op.rank()) }
func (op sliceGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if want, err := op.op.shape(op.in); err != nil || !want.Eq(s[0]) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v", op, s[0])
	}
	return op.in.Clone(), nil
}
func (op sliceGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op sliceGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	g := ts[0]
	if want, err := op.op.shape(op.in); err != nil || !want.Eq(shapeOf(g)) {
		return nil, fmt.Errorf("nd: %v: gradient of shape %v", op, g.Shape())
	}
	out := output(prealloc, g.Dtype(), op.in, g)
	m := op.op.maps(op.in)
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
func (op sliceGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op sliceGrad) Hashcode() uint32      { return hashOf(op) }
func (op sliceGrad) String() string        { return fmt.Sprintf("%vGrad%v", op.op, op.in) }

// gatherAxes sets dst, of shape (len(maps[0]), len(maps[1]), …), to the
// elements of src at offsets Σ_a maps[a][i_a]; a negative entry in any
// map gives fill instead.
func gatherAxes[T fp](dst, src []T, maps [][]int, fill T) {
	gatherRec(dst, src, maps, fill, 0, 0)
}

func gatherRec[T fp](dst, src []T, maps [][]int, fill T, d, s int) int {
	m := maps[0]
	if len(maps) == 1 {
		out := dst[d : d+len(m)]
		for i, o := range m {
			if s < 0 || o < 0 {
				out[i] = fill
			} else {
				out[i] = src[s+o]
			}
		}
		return d + len(m)
	}
	for _, o := range m {
		next := s + o
		if s < 0 || o < 0 {
			next = -1
		}
		d = gatherRec(dst, src, maps[1:], fill, d, next)
	}
	return d
}

// scatterAxes is the adjoint of gatherAxes: it adds each element of src,
// of shape (len(maps[0]), …), to dst at offset Σ_a maps[a][i_a], skipping
// those with a negative entry.
func scatterAxes[T fp](dst, src []T, maps [][]int) {
	scatterRec(dst, src, maps, 0, 0)
}

func scatterRec[T fp](dst, src []T, maps [][]int, s, d int) int {
	m := maps[0]
	if len(maps) == 1 {
		in := src[s : s+len(m)]
		if d >= 0 {
			for i, o := range m {
				if o >= 0 {
					dst[d+o] += in[i]
				}
			}
		}
		return s + len(m)
	}
	for _, o := range m {
		next := d + o
		if d < 0 || o < 0 {
			next = -1
		}
		s = scatterRec(dst, src, maps[1:], s, next)
	}
	return s
}

package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Concat joins N ≥ 1 tensors of rank Rank along axis Axis (0 ≤ Axis <
// Rank); their other dimensions must agree. Type and InferShape need the
// number of inputs and their rank, which callers set in N and Rank (see
// Ranked; Do takes any number of inputs of one rank and ignores both). The
// gradient of each input is the Slice of the output gradient it came
// from.
type Concat struct {
	pure
	Axis, Rank, N int
}

// shape checks the inputs' shapes and returns the output shape.
func (op Concat) shape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("nd: %v of no inputs", op)
	}
	r := len(in[0])
	if op.Axis < 0 || op.Axis >= r {
		return nil, fmt.Errorf("nd: %v of inputs of rank %d", op, r)
	}
	out := in[0].Clone()
	for _, s := range in[1:] {
		if len(s) != r {
			return nil, fmt.Errorf("nd: %v of inputs of shapes %v", op, in)
		}
		for a := range s {
			if a != op.Axis && s[a] != out[a] {
				return nil, fmt.Errorf("nd: %v of inputs of shapes %v", op, in)
			}
		}
		out[op.Axis] += s[op.Axis]
	}
	return out, nil
}

// Arity is N.
func (op Concat) Arity() int { return op.N }

// Type is a function from N tensors of rank Rank to one.
func (op Concat) Type() hm.Type {
	in := make([]int, max(op.N, 1))
	for i := range in {
		in[i] = op.Rank
	}
	return fnType(op.Rank, in...)
}

// InferShape returns the joined shape.
func (op Concat) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, -1)
	if err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("nd: %v of no inputs", op)
	}
	if err := checkFields(op, s, []int{op.N, op.Rank}, []int{len(s), len(s[0])}); err != nil {
		return nil, err
	}
	return op.shape(s)
}

// Do joins the inputs.
func (op Concat) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo joins the inputs, writing into prealloc when it fits.
func (op Concat) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, -1)
	if err != nil {
		return nil, err
	}
	ss := make([]tensor.Shape, len(ts))
	for i, t := range ts {
		ss[i] = shapeOf(t)
	}
	s, err := op.shape(ss)
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	if out.Dtype() == tensor.Float32 {
		concat[float32](out, ts, op.Axis)
	} else {
		concat[float64](out, ts, op.Axis)
	}
	return out, nil
}

// concat copies the inputs' blocks into out: each is, for every index of
// the axes before axis, a contiguous run of the output row.
func concat[T fp](out *tensor.Dense, ts []*tensor.Dense, axis int) {
	s := shapeOf(out)
	outer, inner := prod(s[:axis]), prod(s[axis+1:])
	row := s[axis] * inner
	od := data[T](out)
	off := 0
	for _, t := range ts {
		td := data[T](t)
		blk := shapeOf(t)[axis] * inner
		for o := 0; o < outer; o++ {
			copy(od[o*row+off:o*row+off+blk], td[o*blk:(o+1)*blk])
		}
		off += blk
	}
}

// WriteHash writes the attributes.
func (op Concat) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Concat) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Concat) String() string {
	return fmt.Sprintf("Concat{axis %d, %d of rank %d}", op.Axis, op.N, op.Rank)
}

// DiffWRT is true for every input.
func (op Concat) DiffWRT(n int) []bool { return allTrue(n) }

// SymDiff slices each input's part out of the gradient.
func (op Concat) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	ds := make(G.Nodes, len(in))
	off := 0
	for i, n := range in {
		s := n.Shape()
		sl := Slice{Starts: make([]int, len(s)), Steps: make([]int, len(s)), Counts: s.Clone()}
		for a := range s {
			sl.Steps[a] = 1
		}
		sl.Starts[op.Axis] = off
		off += s[op.Axis]
		d, err := G.ApplyOp(sl, grad)
		if err != nil {
			return nil, err
		}
		ds[i] = d
	}
	return ds, nil
}

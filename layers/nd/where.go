package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Where selects elementwise between two tensors: for inputs (cond, a, b),
// broadcast together (NumPy rules), the result is a where cond is nonzero
// (NaN included) and b where it is 0. RankCond, RankA and RankB are the
// inputs' ranks, which Type needs (the result has the largest): callers
// set them, or leave all three 0 for inputs of one rank (the Type is then
// a → a → a → a); InferShape checks them and Do ignores them. The
// condition has no gradient; a's is g where cond is nonzero and b's g
// where it is 0, each summed to its input's shape. Values of the branch
// not taken (NaN, ±Inf) reach neither the result nor the gradients.
type Where struct {
	pure
	RankCond, RankA, RankB int
}

// whereGrad is the gradient of Where with respect to a (which = 1) or b
// (which = 2), for inputs (cond, g).
type whereGrad struct {
	pure
	which   int
	cond, y tensor.Shape
	to      tensor.Shape
}

// Arity is 3.
func (op Where) Arity() int { return 3 }

// Type is a function from tensors of ranks RankCond, RankA and RankB to one
// of the largest rank, or a → a → a → a if all are 0.
func (op Where) Type() hm.Type { return rankType(op.RankCond, op.RankA, op.RankB) }

// InferShape returns the broadcast of the input shapes.
func (op Where) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 3)
	if err != nil {
		return nil, err
	}
	if err := checkRanks(op, s, op.RankCond, op.RankA, op.RankB); err != nil {
		return nil, err
	}
	out, err := broadcastShapes(s...)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %v", op, err)
	}
	return out, nil
}

// Do selects.
func (op Where) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo selects into prealloc if it fits.
func (op Where) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 3)
	if err != nil {
		return nil, err
	}
	s := []tensor.Shape{shapeOf(ts[0]), shapeOf(ts[1]), shapeOf(ts[2])}
	y, err := broadcastShapes(s...)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %v", op, err)
	}
	out := output(prealloc, ts[0].Dtype(), y, ts...)
	b := newBcast(y, s...)
	if out.Dtype() == tensor.Float32 {
		whereRun(b, data[float32](out), data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]))
	} else {
		whereRun(b, data[float64](out), data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]))
	}
	return out, nil
}

// whereRun selects x (operand 1 of b) where c (operand 0) is nonzero,
// else y (operand 2).
func whereRun[T fp](b *bcast, out, c, x, y []T) {
	n, sc, sx, sy := b.row(), b.inner(0), b.inner(1), b.inner(2)
	b.rows(func(o int, off []int) {
		i, j, k := off[0], off[1], off[2]
		for p := o; p < o+n; p++ {
			if c[i] != 0 {
				out[p] = x[j]
			} else {
				out[p] = y[k]
			}
			i, j, k = i+sc, j+sx, k+sy
		}
	})
}

// WriteHash writes the ranks.
func (op Where) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the ranks.
func (op Where) Hashcode() uint32 { return hashOf(op) }

// String shows the ranks.
func (op Where) String() string {
	return fmt.Sprintf("Where{ranks %d %d %d}", op.RankCond, op.RankA, op.RankB)
}

// DiffWRT is false for the condition, true for a and b.
func (op Where) DiffWRT(int) []bool { return []bool{false, true, true} }

// SymDiff returns the masked gradients of a and b (nil for cond).
func (op Where) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	ds := make(G.Nodes, 3)
	for i := 1; i < 3; i++ {
		gop := whereGrad{which: i, cond: in[0].Shape().Clone(), y: out.Shape().Clone(), to: in[i].Shape().Clone()}
		var err error
		if ds[i], err = Apply(gop, in[0], grad); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// Arity is 2: cond and g.
func (op whereGrad) Arity() int { return 2 }

// Type is a function from cond and g to a tensor of the input's rank.
func (op whereGrad) Type() hm.Type { return fnType(len(op.to), len(op.cond), len(op.y)) }

// InferShape returns the input's shape after checking cond's and g's.
func (op whereGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	if !s[0].Eq(op.cond) || !s[1].Eq(op.y) {
		return nil, fmt.Errorf("nd: %v of shapes %v", op, s)
	}
	return op.to.Clone(), nil
}

// Do computes the gradient.
func (op whereGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the gradient into prealloc if it fits.
func (op whereGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	if !shapeOf(ts[0]).Eq(op.cond) || !shapeOf(ts[1]).Eq(op.y) {
		return nil, fmt.Errorf("nd: %v of shapes %v and %v", op, ts[0].Shape(), ts[1].Shape())
	}
	out := output(prealloc, ts[0].Dtype(), op.to, ts...)
	b := newBcast(op.y, op.to, op.cond)
	if out.Dtype() == tensor.Float32 {
		whereBack(b, op.which == 1, data[float32](out), data[float32](ts[0]), data[float32](ts[1]))
	} else {
		whereBack(b, op.which == 1, data[float64](out), data[float64](ts[0]), data[float64](ts[1]))
	}
	return out, nil
}

// whereBack adds g into out (operand 0 of b) where cond (operand 1) is
// nonzero (taken) or zero (!taken).
func whereBack[T fp](b *bcast, taken bool, out, c, g []T) {
	n, s0, s1 := b.row(), b.inner(0), b.inner(1)
	withAcc(out, func(acc []float64) {
		b.rows(func(o int, off []int) {
			j, k := off[0], off[1]
			for i := o; i < o+n; i++ {
				if (c[k] != 0) == taken {
					acc[j] += float64(g[i])
				}
				j, k = j+s0, k+s1
			}
		})
	})
}

// WriteHash writes the input and shapes.
func (op whereGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the input and shapes.
func (op whereGrad) Hashcode() uint32 { return hashOf(op) }

// String names the gradient.
func (op whereGrad) String() string {
	return fmt.Sprintf("WhereGrad%d{cond %v, y %v → %v}", op.which, op.cond, op.y, op.to)
}

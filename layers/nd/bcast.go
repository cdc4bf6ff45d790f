package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NumPy broadcasting, shared by Binary, Where, Expand, Tile and Reduce and
// by the gradients that sum over broadcast axes.

// broadcastShapes returns the NumPy broadcast of shapes: aligned on their
// last axes, each dimension equal to the others or 1; missing leading axes
// count as 1. Dimensions must be at least 1.
func broadcastShapes(s ...tensor.Shape) (tensor.Shape, error) {
	n := 0
	for _, x := range s {
		n = max(n, len(x))
	}
	out := make(tensor.Shape, n)
	for i := range out {
		out[i] = 1
	}
	for _, x := range s {
		for i, d := range x {
			j := n - len(x) + i
			switch {
			case d < 1:
				return nil, fmt.Errorf("shape %v has a dimension below 1", x)
			case out[j] == 1:
				out[j] = d
			case d != 1 && d != out[j]:
				return nil, fmt.Errorf("shapes %v do not broadcast", s)
			}
		}
	}
	return atLeast1(out), nil
}

// bcast iterates over the elements of an output shape together with the
// elements of operands broadcast to it. Output axes of size 1 are dropped
// and neighbouring axes along which every operand is alike (broadcast, or
// not) are merged, so the last remaining axis, a row, is as long as it can
// be: a whole same-shape operand is a single row.
type bcast struct {
	n    int     // number of output elements
	dims []int   // the merged output axes; the last is the row
	st   [][]int // st[k][d]: operand k's stride along dims[d], 0 if broadcast
}

// newBcast plans the iteration over out of operands of shapes ops, each
// of which must broadcast to out.
func newBcast(out tensor.Shape, ops ...tensor.Shape) *bcast {
	b := &bcast{n: prod(out), st: make([][]int, len(ops))}
	full := make([][]int, len(ops))
	for k, s := range ops {
		full[k] = alignedStrides(s, out)
	}
	prev := -1
	for d, n := range out {
		if n == 1 {
			continue
		}
		if prev >= 0 && sameBroadcast(full, d, prev) {
			b.dims[len(b.dims)-1] *= n
			for k := range ops {
				b.st[k][len(b.dims)-1] = full[k][d]
			}
		} else {
			b.dims = append(b.dims, n)
			for k := range ops {
				b.st[k] = append(b.st[k], full[k][d])
			}
		}
		prev = d
	}
	if len(b.dims) == 0 {
		b.dims = []int{1}
		for k := range ops {
			b.st[k] = []int{0}
		}
	}
	return b
}

// alignedStrides returns the strides of shape s along the axes of out it
// is aligned with (its last axes with out's last): 0 along axes s lacks or
// is broadcast along.
func alignedStrides(s, out tensor.Shape) []int {
	st := make([]int, len(out))
	ss := strides(s)
	lead := len(out) - len(s)
	for i, d := range s {
		if d != 1 || out[lead+i] == 1 {
			st[lead+i] = ss[i]
		}
	}
	return st
}

// sameBroadcast says whether every operand is broadcast along out axis d
// exactly when it is along axis e.
func sameBroadcast(full [][]int, d, e int) bool {
	for _, st := range full {
		if (st[d] == 0) != (st[e] == 0) {
			return false
		}
	}
	return true
}

// row is the length of the rows rows visits.
func (b *bcast) row() int { return b.dims[len(b.dims)-1] }

// inner is operand k's stride within a row: 1, or 0 if it is broadcast
// along the row.
func (b *bcast) inner(k int) int { return b.st[k][len(b.dims)-1] }

// rows calls f for each row of the output in order, with o the output
// offset of its first element and off[k] operand k's offset there; along
// the row, operand k advances by inner(k). f must not keep off.
func (b *bcast) rows(f func(o int, off []int)) {
	if b.n == 0 {
		return
	}
	nd := len(b.dims) - 1
	idx := make([]int, nd)
	off := make([]int, len(b.st))
	for o := 0; o < b.n; o += b.row() {
		f(o, off)
		for d := nd - 1; d >= 0; d-- {
			idx[d]++
			for k := range off {
				off[k] += b.st[k][d]
			}
			if idx[d] < b.dims[d] {
				break
			}
			for k := range off {
				off[k] -= b.st[k][d] * b.dims[d]
			}
			idx[d] = 0
		}
	}
}

// pairs calls f(o, j) for every output element o, in order, and the
// element j of operand 0 it is broadcast from.
func (b *bcast) pairs(f func(o, j int)) {
	n, s := b.row(), b.inner(0)
	b.rows(func(o int, off []int) {
		j := off[0]
		for i := o; i < o+n; i++ {
			f(i, j)
			j += s
		}
	})
}

// sumRows adds the elements of g (of b's output shape) into acc (of
// operand 0's) they were broadcast from, times scale.
func sumRows[T fp](b *bcast, acc []float64, g []T, scale float64) {
	n, s := b.row(), b.inner(0)
	b.rows(func(o int, off []int) {
		r, j := g[o:o+n], off[0]
		if s == 0 {
			t := 0.0
			for _, v := range r {
				t += float64(v)
			}
			acc[j] += scale * t
			return
		}
		a := acc[j : j+n]
		for i, v := range r {
			a[i] += scale * float64(v)
		}
	})
}

// store writes acc into out, rounding to T.
func store[T fp](out []T, acc []float64) {
	out = out[:len(acc)]
	for i, v := range acc {
		out[i] = T(v)
	}
}

// withAcc calls f with a zeroed float64 scratch slice of n elements, then
// stores it in out.
func withAcc[T fp](out []T, f func(acc []float64)) {
	p := getScratch[float64](len(out))
	acc := *p
	clear(acc)
	f(acc)
	store(out, acc)
	putScratch(p)
}

// sumTo is the gradient of broadcasting: g, of shape from, summed over the
// axes along which an operand of shape to was broadcast to from, times
// scale (1, or −1 for a subtrahend). Where vfrom and vto are set, the
// broadcast is of vto to vfrom, shapes of the sizes of to and from (Tile).
// Sums are taken in float64.
type sumTo struct {
	pure
	from, to   tensor.Shape
	vfrom, vto tensor.Shape
	scale      float64
}

// plan is the iteration of the broadcast sumTo reverses.
func (op sumTo) plan() *bcast {
	if op.vfrom != nil {
		return newBcast(op.vfrom, op.vto)
	}
	return newBcast(op.from, op.to)
}

// reduceTo returns g summed to shape to (g itself when no sum or sign
// change is needed).
func reduceTo(g *G.Node, to tensor.Shape, scale float64) (*G.Node, error) {
	if scale == 1 && g.Shape().Eq(to) {
		return g, nil
	}
	return Apply(sumTo{from: g.Shape().Clone(), to: to.Clone(), scale: scale}, g)
}

// Arity is 1.
func (op sumTo) Arity() int { return 1 }

// Type is a function from rank len(from) to rank len(to).
func (op sumTo) Type() hm.Type { return fnType(len(op.to), len(op.from)) }

// InferShape returns to after checking the input shape.
func (op sumTo) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	if !s[0].Eq(op.from) {
		return nil, fmt.Errorf("nd: %v of shape %v", op, s[0])
	}
	return op.to.Clone(), nil
}

// Do sums the input.
func (op sumTo) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo sums the input into prealloc if it fits.
func (op sumTo) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	if !shapeOf(ts[0]).Eq(op.from) {
		return nil, fmt.Errorf("nd: %v of shape %v", op, ts[0].Shape())
	}
	out := output(prealloc, ts[0].Dtype(), op.to, ts...)
	b := op.plan()
	if out.Dtype() == tensor.Float32 {
		sumToRun(b, data[float32](out), data[float32](ts[0]), op.scale)
	} else {
		sumToRun(b, data[float64](out), data[float64](ts[0]), op.scale)
	}
	return out, nil
}

// sumToRun sums g, b's output, into out, its operand 0, times scale.
func sumToRun[T fp](b *bcast, out, g []T, scale float64) {
	withAcc(out, func(acc []float64) { sumRows(b, acc, g, scale) })
}

// WriteHash writes the shapes and scale.
func (op sumTo) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the shapes and scale.
func (op sumTo) Hashcode() uint32 { return hashOf(op) }

// String shows the shapes and scale.
func (op sumTo) String() string {
	return fmt.Sprintf("SumTo{%v→%v (%v→%v) ×%v}", op.from, op.to, op.vfrom, op.vto, op.scale)
}

// rankType is the type of an operation on inputs of the given ranks to
// their broadcast: rank max(ranks). All zero (unset) gives a function of
// inputs of one type, of any rank, to that type.
func rankType(ranks ...int) hm.Type {
	out := 0
	for _, r := range ranks {
		out = max(out, r)
	}
	return fnType(out, ranks...)
}

// checkRanks returns an error unless the rank fields have (all zero:
// unset) describe the input shapes in; unset fields need inputs of one
// rank.
func checkRanks(op fmt.Stringer, in []tensor.Shape, have ...int) error {
	unset := true
	for _, r := range have {
		unset = unset && r == 0
	}
	for i, s := range in {
		if (unset && len(s) != len(in[0])) || (!unset && have[i] != len(s)) {
			return fmt.Errorf("nd: %v does not describe inputs of shapes %v: set its rank fields", op, in)
		}
	}
	return nil
}

package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MatMul is the matrix product of the last two axes of A and B, op(A)·op(B)
// with op(X) = Xᵀ (of the last two axes) when TransA or TransB is set,
// over NumPy-broadcast batch axes: A of shape (…, m, k) and B of shape
// (…, k, n) give (broadcast batch…, m, n). Both operands have rank ≥ 2
// (callers reshape ONNX's vectors). Type and InferShape need the
// operands' ranks, which callers set in RankA and RankB (see Ranked; Do
// ignores them). The
// products go through Gorgonia's BLAS: one gemm per batch element, or one
// for all when B has no batch (A of shape (…, m, k) and B (k, n)). The
// gradients are products with transposes, summed over the batch axes an
// operand was broadcast along.
type MatMul struct {
	pure
	TransA, TransB bool
	RankA, RankB   int
}

// matMulGrad is op(X)·op(Y) summed to the shape out over broadcast batch
// axes: the gradients of MatMul.
type matMulGrad struct {
	pure
	tx, ty     bool
	ranks      [2]int
	out        tensor.Shape
	whichInput int
}

// mmPlan is a batched product: for each batch index i, c[i] (= or +=)
// op(a[i])·op(b[i]), the operands' batch offsets given by strides (0
// along axes they are broadcast along).
type mmPlan struct {
	ta, tb     bool
	m, n, k    int
	batch      []int
	sa, sb, sc []int
	fullA      bool // a has every batch index
	fullB      bool
	fullC      bool // c has every batch index (no reduction)
	oneB, oneC bool // b (c) is a single matrix
}

// matDims returns the rows and columns of op(x) for x of shape s.
func matDims(s tensor.Shape, t bool) (int, int) {
	r, c := s[len(s)-2], s[len(s)-1]
	if t {
		return c, r
	}
	return r, c
}

// broadcastBatch returns the NumPy broadcast of batch shapes x and y.
func broadcastBatch(x, y []int) ([]int, error) {
	n := max(len(x), len(y))
	out := make([]int, n)
	for i := 1; i <= n; i++ {
		dx, dy := 1, 1
		if i <= len(x) {
			dx = x[len(x)-i]
		}
		if i <= len(y) {
			dy = y[len(y)-i]
		}
		switch {
		case dx == dy || dy == 1:
			out[n-i] = dx
		case dx == 1:
			out[n-i] = dy
		default:
			return nil, fmt.Errorf("batch shapes %v and %v do not broadcast", x, y)
		}
	}
	return out, nil
}

// batchStrides returns the offsets of an operand of batch shape s and
// matrix size size along batch axes batch (right-aligned), 0 where it is
// broadcast, and whether it has every batch index.
func batchStrides(s, batch []int, size int) ([]int, bool, error) {
	st := make([]int, len(batch))
	if len(s) > len(batch) {
		return nil, false, fmt.Errorf("batch shape %v does not broadcast to %v", s, batch)
	}
	acc := size
	for i := 1; i <= len(s); i++ {
		d, b := s[len(s)-i], batch[len(batch)-i]
		if d != b && d != 1 {
			return nil, false, fmt.Errorf("batch shape %v does not broadcast to %v", s, batch)
		}
		if d == b && d > 1 {
			st[len(batch)-i] = acc
		}
		acc *= d
	}
	return st, prod(s) == prod(batch), nil
}

// planMatMul checks the shapes of a product op(a)·op(b) summed to shape c
// (nil: the full result) and returns its plan and result shape.
func planMatMul(ta, tb bool, as, bs, cs tensor.Shape) (*mmPlan, tensor.Shape, error) {
	if len(as) < 2 || len(bs) < 2 || !positive(as, bs) {
		return nil, nil, fmt.Errorf("operands of shapes %v and %v: want rank ≥ 2", as, bs)
	}
	p := &mmPlan{ta: ta, tb: tb}
	var k2 int
	p.m, p.k = matDims(as, ta)
	k2, p.n = matDims(bs, tb)
	batch, err := broadcastBatch(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil || p.k != k2 {
		return nil, nil, fmt.Errorf("operands of shapes %v and %v (transposed: %v %v) do not multiply", as, bs, ta, tb)
	}
	p.batch = batch
	full := append(append(tensor.Shape{}, batch...), p.m, p.n)
	if cs == nil {
		cs = full
	}
	if len(cs) < 2 || cs[len(cs)-2] != p.m || cs[len(cs)-1] != p.n {
		return nil, nil, fmt.Errorf("result %v of a product of shape %v", cs, full)
	}
	if p.sa, p.fullA, err = batchStrides(as[:len(as)-2], batch, p.m*p.k); err == nil {
		if p.sb, p.fullB, err = batchStrides(bs[:len(bs)-2], batch, p.k*p.n); err == nil {
			p.sc, p.fullC, err = batchStrides(cs[:len(cs)-2], batch, p.m*p.n)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	p.oneB, p.oneC = prod(bs[:len(bs)-2]) == 1, prod(cs[:len(cs)-2]) == 1
	return p, cs.Clone(), nil
}

// mmRun computes the plan's product into c.
func mmRun[T fp](p *mmPlan, c, a, b []T) {
	count := prod(p.batch)
	lda, ldb := p.k, p.n
	if p.ta {
		lda = p.m
	}
	if p.tb {
		ldb = p.k
	}
	switch {
	case !p.ta && p.fullA && p.oneB && p.fullC:
		// (count·m, k) · op(b): one product for every batch index.
		gemm(false, p.tb, count*p.m, p.n, p.k, a, lda, b, ldb, 0, c, p.n)
		return
	case p.ta && !p.tb && p.fullA && p.fullB && p.oneC:
		// Σ_i a[i]ᵀ·b[i] = (count·k, m)ᵀ · (count·k, n).
		gemm(true, false, p.m, p.n, count*p.k, a, lda, b, ldb, 0, c, p.n)
		return
	}
	var beta T
	if !p.fullC {
		clear(c)
		beta = 1
	}
	as, bs, cs := p.m*p.k, p.k*p.n, p.m*p.n
	for i := 0; i < count; i++ {
		oa, ob, oc, r := 0, 0, 0, i
		for ax := len(p.batch) - 1; ax >= 0; ax-- {
			j := r % p.batch[ax]
			r /= p.batch[ax]
			oa, ob, oc = oa+j*p.sa[ax], ob+j*p.sb[ax], oc+j*p.sc[ax]
		}
		gemm(p.ta, p.tb, p.m, p.n, p.k, a[oa:oa+as], lda, b[ob:ob+bs], ldb, beta, c[oc:oc+cs], p.n)
	}
}

// matMulDo runs a product op(x)·op(y) summed to shape cs (nil: none).
func matMulDo(op fmt.Stringer, tx, ty bool, cs tensor.Shape, prealloc G.Value, in []G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	x, y := ts[0], ts[1]
	p, s, err := planMatMul(tx, ty, shapeOf(x), shapeOf(y), cs)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	out := output(prealloc, x.Dtype(), s, ts...)
	if x.Dtype() == tensor.Float32 {
		mmRun(p, data[float32](out), data[float32](x), data[float32](y))
	} else {
		mmRun(p, data[float64](out), data[float64](x), data[float64](y))
	}
	return out, nil
}

// Arity is 2.
func (op MatMul) Arity() int { return 2 }

// Type is a function from tensors of ranks RankA and RankB to one of the
// larger rank.
func (op MatMul) Type() hm.Type { return fnType(max(op.RankA, op.RankB), op.RankA, op.RankB) }

// InferShape returns the product's shape.
func (op MatMul) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	if err := checkFields(op, s, []int{op.RankA, op.RankB}, []int{len(s[0]), len(s[1])}); err != nil {
		return nil, err
	}
	_, out, err := planMatMul(op.TransA, op.TransB, s[0], s[1], nil)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}

// Do multiplies.
func (op MatMul) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo multiplies, writing into prealloc when it fits.
func (op MatMul) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	return matMulDo(op, op.TransA, op.TransB, nil, prealloc, in)
}

// WriteHash writes the attributes.
func (op MatMul) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op MatMul) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op MatMul) String() string {
	return fmt.Sprintf("MatMul{ranks %d %d, transposed %v %v}", op.RankA, op.RankB, op.TransA, op.TransB)
}

// DiffWRT is true for both operands.
func (op MatMul) DiffWRT(int) []bool { return []bool{true, true} }

// SymDiff returns the products giving the operands' gradients.
func (op MatMul) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	a, b := in[0], in[1]
	// Operands, in order, and transposes of the products giving ∂A and ∂B.
	type term struct {
		x, y   *G.Node
		tx, ty bool
	}
	var da, db term
	switch {
	case !op.TransA && !op.TransB:
		da, db = term{grad, b, false, true}, term{a, grad, true, false}
	case !op.TransA:
		da, db = term{grad, b, false, false}, term{grad, a, true, false}
	case !op.TransB:
		da, db = term{b, grad, false, true}, term{a, grad, false, false}
	default:
		da, db = term{b, grad, true, true}, term{grad, a, true, true}
	}
	ds := make(G.Nodes, 2)
	for i, t := range []term{da, db} {
		g := matMulGrad{tx: t.tx, ty: t.ty, ranks: [2]int{t.x.Dims(), t.y.Dims()}, out: in[i].Shape().Clone(), whichInput: i}
		d, err := G.ApplyOp(g, t.x, t.y)
		if err != nil {
			return nil, err
		}
		ds[i] = d
	}
	return ds, nil
}

func (op matMulGrad) Arity() int    { return 2 }
func (op matMulGrad) Type() hm.Type { return fnType(len(op.out), op.ranks[0], op.ranks[1]) }
func (op matMulGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	_, out, err := planMatMul(op.tx, op.ty, s[0], s[1], op.out)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}
func (op matMulGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op matMulGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	return matMulDo(op, op.tx, op.ty, op.out, prealloc, in)
}
func (op matMulGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op matMulGrad) Hashcode() uint32      { return hashOf(op) }
func (op matMulGrad) String() string {
	return fmt.Sprintf("MatMulGrad%d{%v %v → %v}", op.whichInput, op.tx, op.ty, op.out)
}

package layers

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// linearOp is a fused Gorgonia operation for a linear layer in PyTorch's
// layout: y = x·Wᵀ + 1·b for x (B, in), W (out, in) and b (1, out), one
// matrix product with the transpose taken by the BLAS, and the bias copied
// into the output rows first. Built from Gorgonia's own operations the
// layer is four nodes (the transpose, copied on every call; the product;
// the ones·b product; the sum). Its gradients are Gorgonia graphs too:
// ∂x = g·W (a plain product), ∂W = gᵀ·x and ∂b = 1ᵀ·g (matMulTN).
type linearOp struct{ pure }

// matMulTN is aᵀ·b for a (k, m) and b (k, n), the transpose taken by the
// BLAS. It is used for gradients only and not differentiated further.
type matMulTN struct{ pure }

// applyLinear adds x·Wᵀ + 1·b to x's graph.
func applyLinear(x, w, b *G.Node) (*G.Node, error) { return G.ApplyOp(linearOp{}, x, w, b) }

func shapes(in []G.DimSizer, n int) ([]tensor.Shape, error) {
	if len(in) != n {
		return nil, fmt.Errorf("layers: %d input shapes, want %d", len(in), n)
	}
	s := make([]tensor.Shape, n)
	for i, d := range in {
		sh, ok := d.(tensor.Shape)
		if !ok || len(sh) != 2 {
			return nil, fmt.Errorf("layers: input %d has shape %v, want a matrix", i, d)
		}
		s[i] = sh
	}
	return s, nil
}

func (op linearOp) Arity() int    { return 3 }
func (op linearOp) Type() hm.Type { return fnType(3) }
func (op linearOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapes(in, 3)
	if err != nil {
		return nil, err
	}
	if s[0][1] != s[1][1] || s[2][0] != 1 || s[2][1] != s[1][0] {
		return nil, fmt.Errorf("layers: linear layer with x %v, W %v, b %v", s[0], s[1], s[2])
	}
	return tensor.Shape{s[0][0], s[1][0]}, nil
}
func (op linearOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "linear") }
func (op linearOp) Hashcode() uint32      { return hashOf(op) }
func (op linearOp) String() string        { return "Linear" }
func (op linearOp) DiffWRT(int) []bool    { return []bool{true, true, true} }

func (op linearOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	x, w := in[0], in[1]
	dx, err := G.Mul(grad, w)
	if err != nil {
		return nil, err
	}
	dw, err := G.ApplyOp(matMulTN{}, grad, x)
	if err != nil {
		return nil, err
	}
	bsz := x.Shape()[0]
	ones := make([]float64, bsz)
	for i := range ones {
		ones[i] = 1
	}
	var t *tensor.Dense
	if x.Dtype() == tensor.Float32 {
		t = tensor.New(tensor.WithShape(bsz, 1), tensor.WithBacking(toFloat32(ones)))
	} else {
		t = tensor.New(tensor.WithShape(bsz, 1), tensor.WithBacking(ones))
	}
	db, err := G.ApplyOp(matMulTN{}, G.NewConstant(t, G.WithName(fmt.Sprintf("ones(%d)", bsz))), grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dw, db}, nil
}

func toFloat32(v []float64) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

func (op linearOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op linearOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := denseInputs(op, in, 3)
	if err != nil {
		return nil, err
	}
	x, w, b := ts[0], ts[1], ts[2]
	bsz, nin := x.Shape()[0], x.Shape()[1]
	nout := w.Shape()[0]
	out := output(prealloc, x.Dtype(), bsz, nout)
	impl := G.WhichBLAS()
	switch od := out.Data().(type) {
	case []float64:
		bd := b.Data().([]float64)
		for r := 0; r < bsz; r++ {
			copy(od[r*nout:(r+1)*nout], bd)
		}
		impl.Dgemm(blas.NoTrans, blas.Trans, bsz, nout, nin, 1, x.Data().([]float64), nin, w.Data().([]float64), nin, 1, od, nout)
	case []float32:
		bd := b.Data().([]float32)
		for r := 0; r < bsz; r++ {
			copy(od[r*nout:(r+1)*nout], bd)
		}
		impl.Sgemm(blas.NoTrans, blas.Trans, bsz, nout, nin, 1, x.Data().([]float32), nin, w.Data().([]float32), nin, 1, od, nout)
	}
	return out, nil
}

func (op matMulTN) Arity() int    { return 2 }
func (op matMulTN) Type() hm.Type { return fnType(2) }
func (op matMulTN) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapes(in, 2)
	if err != nil {
		return nil, err
	}
	if s[0][0] != s[1][0] {
		return nil, fmt.Errorf("layers: aᵀ·b with a %v, b %v", s[0], s[1])
	}
	return tensor.Shape{s[0][1], s[1][1]}, nil
}
func (op matMulTN) WriteHash(h hash.Hash) { fmt.Fprint(h, "matmul_tn") }
func (op matMulTN) Hashcode() uint32      { return hashOf(op) }
func (op matMulTN) String() string        { return "MatMulTN" }

func (op matMulTN) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op matMulTN) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := denseInputs(op, in, 2)
	if err != nil {
		return nil, err
	}
	a, b := ts[0], ts[1]
	k, m, n := a.Shape()[0], a.Shape()[1], b.Shape()[1]
	out := output(prealloc, a.Dtype(), m, n)
	impl := G.WhichBLAS()
	switch od := out.Data().(type) {
	case []float64:
		impl.Dgemm(blas.Trans, blas.NoTrans, m, n, k, 1, a.Data().([]float64), m, b.Data().([]float64), n, 0, od, n)
	case []float32:
		impl.Sgemm(blas.Trans, blas.NoTrans, m, n, k, 1, a.Data().([]float32), m, b.Data().([]float32), n, 0, od, n)
	}
	return out, nil
}

// denseInputs checks that the n inputs are float64 or float32 matrices of
// one type and returns them contiguous.
func denseInputs(op fmt.Stringer, in []G.Value, n int) ([]*tensor.Dense, error) {
	if len(in) != n {
		return nil, fmt.Errorf("layers: %v takes %d inputs, have %d", op, n, len(in))
	}
	ts := make([]*tensor.Dense, n)
	for i, v := range in {
		t, err := contiguous(op, v)
		if err != nil {
			return nil, err
		}
		if t.Dims() != 2 || t.Dtype() != in[0].Dtype() {
			return nil, fmt.Errorf("layers: %v input %d is %v %v, want a matrix of %v", op, i, t.Dtype(), t.Shape(), in[0].Dtype())
		}
		ts[i] = t
	}
	return ts, nil
}

// output returns prealloc if it is an r × c matrix of type dt, else a new one.
func output(prealloc G.Value, dt tensor.Dtype, r, c int) *tensor.Dense {
	if p, ok := prealloc.(*tensor.Dense); ok && p.Dtype() == dt && p.Shape().Eq(tensor.Shape{r, c}) && !p.IsMaterializable() {
		return p
	}
	return tensor.New(tensor.WithShape(r, c), tensor.Of(dt))
}

package nd

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Det is the determinant of each square matrix in the last two axes of a
// tensor of rank Rank (at least 2), ONNX's Det (torch.det, as a Glow
// flow's invertible 1×1 layer exports its log-determinant: round 100 B1).
// The result has the leading axes (shape [1] for a single matrix). Its
// gradient is the cofactor matrix, det(A)·A⁻ᵀ, times the incoming
// gradient; at a singular matrix it is computed from the singular value
// decomposition.
type Det struct {
	pure
	Rank int
}

func (op Det) outRank() int { return max(1, op.Rank-2) }

// Arity is 1.
func (op Det) Arity() int { return 1 }

// Type takes rank Rank to the leading axes' rank.
func (op Det) Type() hm.Type { return fnType(op.outRank(), op.Rank) }

// InferShape returns the leading axes.
func (op Det) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	return op.outShape(s[0])
}

func (op Det) outShape(s tensor.Shape) (tensor.Shape, error) {
	r := len(s)
	if r < 2 || r != op.Rank || s[r-1] != s[r-2] {
		return nil, fmt.Errorf("nd: %v takes square matrices in the last two axes of a rank-%d tensor, have shape %v", op, op.Rank, s)
	}
	if r == 2 {
		return tensor.Shape{1}, nil
	}
	return append(tensor.Shape(nil), s[:r-2]...), nil
}

// Do computes the determinants.
func (op Det) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the determinants into prealloc if it fits.
func (op Det) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	shape, err := op.outShape(shapeOf(ts[0]))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), shape, ts...)
	s := shapeOf(ts[0])
	m := s[len(s)-1]
	if out.Dtype() == tensor.Float32 {
		eachMatrix(data[float32](ts[0]), m, func(k int, a *mat.Dense) { data[float32](out)[k] = float32(mat.Det(a)) })
	} else {
		eachMatrix(data[float64](ts[0]), m, func(k int, a *mat.Dense) { data[float64](out)[k] = mat.Det(a) })
	}
	return out, nil
}

// eachMatrix calls f with each m × m matrix of x (row-major, consecutive)
// as a float64 copy, and its index.
func eachMatrix[T fp](x []T, m int, f func(k int, a *mat.Dense)) {
	a := mat.NewDense(m, m, nil)
	for k := 0; k*m*m < len(x); k++ {
		raw := a.RawMatrix().Data
		for i := range raw {
			raw[i] = float64(x[k*m*m+i])
		}
		f(k, a)
	}
}

// WriteHash writes the rank.
func (op Det) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the rank.
func (op Det) Hashcode() uint32 { return hashOf(op) }

// String shows the rank.
func (op Det) String() string { return fmt.Sprintf("Det{rank %d}", op.Rank) }

// DiffWRT is true.
func (op Det) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the cofactors times the incoming gradient.
func (op Det) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := Apply(detGrad{Rank: op.Rank}, in[0], grad)
	return G.Nodes{d}, err
}

// detGrad is Det's gradient: inputs A and the gradient g of the
// determinants, output g·cof(A) for each matrix.
type detGrad struct {
	pure
	Rank int
}

func (op detGrad) Arity() int { return 2 }

func (op detGrad) Type() hm.Type { return fnType(op.Rank, op.Rank, Det{Rank: op.Rank}.outRank()) }

func (op detGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

func (op detGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op detGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	s := shapeOf(ts[0])
	m := s[len(s)-1]
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	if out.Dtype() == tensor.Float32 {
		g, y := data[float32](ts[1]), data[float32](out)
		eachMatrix(data[float32](ts[0]), m, func(k int, a *mat.Dense) {
			for i, v := range cofactors(a) {
				y[k*m*m+i] = float32(float64(g[k]) * v)
			}
		})
	} else {
		g, y := data[float64](ts[1]), data[float64](out)
		eachMatrix(data[float64](ts[0]), m, func(k int, a *mat.Dense) {
			for i, v := range cofactors(a) {
				y[k*m*m+i] = g[k] * v
			}
		})
	}
	return out, nil
}

// cofactors is the cofactor matrix of a (row-major), ∂det(a)/∂a:
// det(a)·a⁻ᵀ where a is invertible, else from a's singular value
// decomposition a = U·S·Vᵀ, det(U)·det(V)·U·diag(Π_{j≠i} s_j)·Vᵀ, which
// holds at every matrix in O(m³) (the minors would take O(m⁵)).
func cofactors(a *mat.Dense) []float64 {
	m, _ := a.Dims()
	c := make([]float64, m*m)
	var lu mat.LU // one factorisation for the determinant and a⁻ᵀ
	lu.Factorize(a)
	var invT mat.Dense
	if det := lu.Det(); det != 0 && !math.IsNaN(det) && !math.IsInf(det, 0) && lu.SolveTo(&invT, true, eye(m)) == nil {
		for i := range m {
			for j := range m {
				c[i*m+j] = det * invT.At(i, j)
			}
		}
		return c
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDFull) {
		for i := range c {
			c[i] = math.NaN()
		}
		return c
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	s := svd.Values(nil)
	sign := mat.Det(&u) * mat.Det(&v) // ±1
	others := make([]float64, m)      // Π_{j≠i} s_j
	for i := range m {
		others[i] = sign
		for j, sj := range s {
			if j != i {
				others[i] *= sj
			}
		}
	}
	for i := range m {
		for j := range m {
			sum := 0.0
			for k := range m {
				sum += u.At(i, k) * others[k] * v.At(j, k)
			}
			c[i*m+j] = sum
		}
	}
	return c
}

func (op detGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op detGrad) Hashcode() uint32      { return hashOf(op) }
func (op detGrad) String() string        { return fmt.Sprintf("detGrad{rank %d}", op.Rank) }

// DiffWRT is false: no second derivative.
func (op detGrad) DiffWRT(int) []bool { return []bool{false, false} }

// SymDiff is not defined.
func (op detGrad) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("nd: %v has no derivative", op)
}

// eye is the m × m identity.
func eye(m int) *mat.DiagDense {
	d := make([]float64, m)
	for i := range d {
		d[i] = 1
	}
	return mat.NewDiagDense(m, d)
}

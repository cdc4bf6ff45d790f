package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Transpose permutes the axes of its input (ONNX Transpose): axis i of the
// result is axis Perm[i] of the input. The rank is len(Perm); an empty
// Perm reverses the axes, of any rank (its Type is then a → a). Axes of
// size 1 are dropped and axes that stay neighbours are merged first, so
// that the common cases (a matrix, NCHW ↔ NHWC) are batches of matrix
// transposes, done in cache-sized blocks. The gradient is the transpose
// by the inverse permutation.
type Transpose struct {
	pure
	Perm []int
}

// perm returns the permutation for an input of rank r, checking it.
func (op Transpose) perm(r int) ([]int, error) {
	if len(op.Perm) == 0 {
		p := make([]int, r)
		for i := range p {
			p[i] = r - 1 - i
		}
		return p, nil
	}
	seen := make([]bool, r)
	for _, a := range op.Perm {
		if len(op.Perm) != r || a < 0 || a >= r || seen[a] {
			return nil, fmt.Errorf("nd: %v of an input of rank %d: not a permutation of its axes", op, r)
		}
		seen[a] = true
	}
	return op.Perm, nil
}

// shape returns the permutation and the result's shape for an input of
// shape in.
func (op Transpose) shape(in tensor.Shape) ([]int, tensor.Shape, error) {
	p, err := op.perm(len(in))
	if err != nil {
		return nil, nil, err
	}
	out := make(tensor.Shape, len(p))
	for i, a := range p {
		out[i] = in[a]
	}
	return p, out, nil
}

// Arity is 1.
func (op Transpose) Arity() int { return 1 }

// Type is a function from and to rank len(Perm) (a → a if Perm is empty).
func (op Transpose) Type() hm.Type { return fnType(len(op.Perm), len(op.Perm)) }

// InferShape returns the permuted shape.
func (op Transpose) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	_, out, err := op.shape(s[0])
	return out, err
}

// Do transposes.
func (op Transpose) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo transposes into prealloc if it fits.
func (op Transpose) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	p, s, err := op.shape(shapeOf(ts[0]))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	dims, q := simplifyPerm(shapeOf(ts[0]), p)
	if out.Dtype() == tensor.Float32 {
		transposeRun(data[float32](out), data[float32](ts[0]), dims, q)
	} else {
		transposeRun(data[float64](out), data[float64](ts[0]), dims, q)
	}
	return out, nil
}

// simplifyPerm returns an equivalent transpose without axes of size 1 and
// with the axes that stay neighbours (p[i+1] = p[i] + 1) merged: the
// input's dims and the permutation of them.
func simplifyPerm(in tensor.Shape, p []int) ([]int, []int) {
	idx := make([]int, len(in)) // the axes' numbers without those of size 1
	var kept []int
	for a, d := range in {
		if d > 1 {
			idx[a] = len(kept)
			kept = append(kept, d)
		}
	}
	var groups [][2]int // ranges [lo, hi) of kept axes, in output order
	for _, a := range p {
		if in[a] == 1 {
			continue
		}
		if k := len(groups) - 1; k >= 0 && groups[k][1] == idx[a] {
			groups[k][1]++
			continue
		}
		groups = append(groups, [2]int{idx[a], idx[a] + 1})
	}
	q := make([]int, len(groups)) // the groups numbered in input order
	for i, g := range groups {
		for _, h := range groups {
			if h[0] < g[0] {
				q[i]++
			}
		}
	}
	dims := make([]int, len(groups))
	for i, g := range groups {
		dims[q[i]] = prod(kept[g[0]:g[1]])
	}
	return dims, q
}

// transposeRun writes x, of shape dims, permuted by q into out.
func transposeRun[T fp](out, x []T, dims, q []int) {
	k := len(q)
	switch {
	case k <= 1:
		copy(out, x[:len(out)])
		return
	case q[k-1] == k-2 && q[k-2] == k-1 && isIdentity(q[:k-2]):
		r, c := dims[k-2], dims[k-1]
		for b := 0; b < prod(dims[:k-2]); b++ {
			transpose2D(out[b*r*c:(b+1)*r*c], x[b*r*c:(b+1)*r*c], r, c)
		}
		return
	}
	st := strides(dims)
	b := &bcast{n: len(out), dims: make([]int, k), st: [][]int{make([]int, k)}}
	for i, a := range q {
		b.dims[i], b.st[0][i] = dims[a], st[a]
	}
	n, s := b.row(), b.inner(0)
	b.rows(func(o int, off []int) {
		for i, j := o, off[0]; i < o+n; i, j = i+1, j+s {
			out[i] = x[j]
		}
	})
}

// isIdentity says whether q is 0, 1, 2, ….
func isIdentity(q []int) bool {
	for i, a := range q {
		if a != i {
			return false
		}
	}
	return true
}

// transpose2D sets dst (c × r) to the transpose of src (r × c), in
// blocks that fit the cache.
func transpose2D[T fp](dst, src []T, r, c int) {
	const bs = 32
	for i0 := 0; i0 < r; i0 += bs {
		i1 := min(i0+bs, r)
		for j0 := 0; j0 < c; j0 += bs {
			j1 := min(j0+bs, c)
			for i := i0; i < i1; i++ {
				row := src[i*c : i*c+j1]
				for j := j0; j < j1; j++ {
					dst[j*r+i] = row[j]
				}
			}
		}
	}
}

// WriteHash writes the permutation.
func (op Transpose) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the permutation.
func (op Transpose) Hashcode() uint32 { return hashOf(op) }

// String shows the permutation.
func (op Transpose) String() string { return fmt.Sprintf("Transpose%v", op.Perm) }

// DiffWRT is true.
func (op Transpose) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns g transposed by the inverse permutation.
func (op Transpose) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	p, err := op.perm(in[0].Dims())
	if err != nil {
		return nil, err
	}
	inv := make([]int, len(p))
	for i, a := range p {
		inv[a] = i
	}
	d, err := Apply(Transpose{Perm: inv}, grad)
	return G.Nodes{d}, err
}

package layers

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The fused operations of an affine coupling (Coupling). With mask m,
// step dt, conditioner input x_c = x⊙(1−m), raw network outputs
// sRaw = S(x_c) and tRaw = T(x_c) and s = dt·m⊙tanh(sRaw), a coupling is
// the nodes
//
//	couplingMask    x_c = x⊙(1−m)
//	couplingTanh    a = tanh(sRaw)
//	couplingExp     E = exp(s) forward, exp(−s) inverse
//	couplingAffine  y = (x + dt·m⊙tRaw)⊙E forward, x⊙E − dt·m⊙tRaw inverse
//	couplingLogDet  ±Σ_j s_j, one value per row
//
// where the formulas in Gorgonia's operations took nine nodes (products
// with (B, d) constants of m·dt and 1 − m, tanh, exp, an add or a
// subtraction, a sum, a negation) and their gradients about twice as
// many, each a pass over the batch in Go, and some of them (Neg, the
// products whose gradients Gorgonia builds) allocating their result on
// every call. Every operation here writes into its previous result
// (UsePreallocDo) and allocates nothing per call. The per-column factors
// m_j·dt, −m_j·dt and 1 − m_j are attributes, not (B, d) constants; the
// loops run row by row over contiguous memory without branches,
// vectorised C with cgo (coupling_op_cgo.go), Go without, and exp and
// tanh are the array functions of vmath_cgo.go. The results are those of
// the formulas to the last bit: the same IEEE operations in the same
// order.
//
// E and a are cached factors, not differentiated: couplingAffine and
// couplingLogDet take sRaw as a differentiable input that their forward
// computation ignores, and a and E as inputs that Gorgonia does not
// differentiate through, so that the whole derivative with respect to
// sRaw, tanh's included, is one gradient operation built from a and E:
// the backward pass computes no exp or tanh. The gradient operations
// (couplingGradX, couplingGradS, couplingGradT, couplingGradLogDet) are
// not differentiated further.
//
// An operation holds only a pointer to its coupling's immutable
// couplingSpec and two flags, and keeps nothing between calls: one
// operation value may serve graphs evaluated concurrently. Its scratch
// (couplingExp's s before the exponential) lives in its own output.
type couplingKind uint8

const (
	// couplingMask is x⊙(1−m) for x (B, d). It is linear and
	// self-adjoint: its gradient is the same operation on the incoming
	// gradient.
	couplingMask couplingKind = iota
	// couplingExp is E = exp(±dt·m⊙a) (+ forward, − inverse) for
	// a = tanh(sRaw) (B, d): 1 in the columns that pass through. A
	// cached factor, not differentiated.
	couplingExp
	// couplingAffine is the coupling's output from (x, sRaw, tRaw, E, a):
	// y = (x + dt·m⊙tRaw)⊙E forward, y = x⊙E − dt·m⊙tRaw inverse (x
	// standing for the inverse's input). sRaw is read by the gradient
	// only, a and E are not differentiated.
	couplingAffine
	// couplingLogDet is the log-determinant ±dt·Σ_j m_j·a_j (B) from
	// (sRaw, a); a is not differentiated.
	couplingLogDet
	// couplingGradX is g⊙E from (g, E): ∂/∂x of couplingAffine.
	couplingGradX
	// couplingGradS is ∂/∂sRaw of couplingAffine: forward
	// g⊙y⊙dt·m⊙(1 − a²) from (g, y, a), y the output; inverse
	// −g⊙x⊙E⊙dt·m⊙(1 − a²) from (g, x, E, a), x the input.
	couplingGradS
	// couplingGradT is ∂/∂tRaw of couplingAffine: forward dt·m⊙gx from
	// gx = couplingGradX's result; inverse −dt·m⊙g from g.
	couplingGradT
	// couplingGradLogDet is ∂/∂sRaw of couplingLogDet from (g (B), a):
	// ±g_i·dt·m_j·(1 − a_ij²).
	couplingGradLogDet
	// couplingTanh is a = tanh(sRaw) (B, d), a cached factor, not
	// differentiated (mathOp's tanh, without its allocations).
	couplingTanh
)

var couplingKindNames = [...]string{"CouplingMask", "CouplingExp", "CouplingAffine", "CouplingLogDet", "CouplingGradX", "CouplingGradS", "CouplingGradT", "CouplingGradLogDet", "CouplingTanh"}

// couplingSpec is what a coupling's operations know of it: its mask and
// step, with the per-column factors both float types need. It is built
// once per graph construction and never changed.
type couplingSpec struct {
	d      int
	key    string    // d, dt and a hash of the mask: part of every name and hash
	mdt64  []float64 // m_j·dt
	mdt32  []float32 // float32(m_j·dt)
	nmdt64 []float64 // −m_j·dt
	nmdt32 []float32
	keep64 []float64 // 1 − m_j
	keep32 []float32 // float32(1 − m_j)
	cols   []int     // the columns with m_j·dt ≠ 0, ascending: the log-determinant's terms
}

func newCouplingSpec(mask []float64, dt float64) *couplingSpec {
	d := len(mask)
	s := &couplingSpec{d: d, mdt64: make([]float64, d), mdt32: make([]float32, d), nmdt64: make([]float64, d), nmdt32: make([]float32, d), keep64: make([]float64, d), keep32: make([]float32, d)}
	h := fnv.New64a()
	var buf [8]byte
	for j, m := range mask {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(m))
		h.Write(buf[:])
		s.mdt64[j], s.keep64[j] = m*dt, 1-m
		s.mdt32[j], s.keep32[j] = float32(s.mdt64[j]), float32(s.keep64[j])
		s.nmdt64[j], s.nmdt32[j] = -s.mdt64[j], -s.mdt32[j]
		if s.mdt64[j] != 0 {
			s.cols = append(s.cols, j)
		}
	}
	s.key = fmt.Sprintf("d=%d dt=%v mask#%016x", d, dt, h.Sum64())
	return s
}

// couplingOp is one of a coupling's fused operations (see couplingKind).
type couplingOp struct {
	pure
	spec    *couplingSpec
	kind    couplingKind
	inverse bool
}

func (op couplingOp) with(k couplingKind) couplingOp { op.kind = k; return op }

func (op couplingOp) Arity() int {
	switch op.kind {
	case couplingMask, couplingExp, couplingGradT, couplingTanh:
		return 1
	case couplingLogDet, couplingGradX, couplingGradLogDet:
		return 2
	case couplingGradS:
		if op.inverse {
			return 4
		}
		return 3
	default: // couplingAffine
		return 5
	}
}

func (op couplingOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	mat, vec := G.TensorType{Dims: 2, Of: a}, G.TensorType{Dims: 1, Of: a}
	switch op.kind {
	case couplingLogDet:
		return hm.NewFnType(mat, mat, vec)
	case couplingGradLogDet:
		return hm.NewFnType(vec, mat, mat)
	}
	ts := make([]hm.Type, op.Arity()+1)
	for i := range ts {
		ts[i] = mat
	}
	return hm.NewFnType(ts...)
}

// InferShape checks that the matrix inputs are (B, d) and a vector input
// (B), and returns (B, d), or (B) for the log-determinant.
func (op couplingOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != op.Arity() {
		return nil, fmt.Errorf("layers: %v takes %d inputs, have %d", op, op.Arity(), len(in))
	}
	bsz := -1
	for i, ds := range in {
		s, ok := ds.(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("layers: %v: input %d has shape %v of type %T", op, i, ds, ds)
		}
		vector := op.kind == couplingGradLogDet && i == 0
		if vector && (len(s) != 1 || (bsz >= 0 && s[0] != bsz)) || !vector && (len(s) != 2 || s[1] != op.spec.d || (bsz >= 0 && s[0] != bsz)) {
			return nil, fmt.Errorf("layers: %v: input %d has shape %v", op, i, s)
		}
		bsz = s[0]
	}
	if op.kind == couplingLogDet {
		return tensor.Shape{bsz}, nil
	}
	return tensor.Shape{bsz, op.spec.d}, nil
}

func (op couplingOp) String() string {
	dir := ""
	if op.inverse {
		dir = "⁻¹"
	}
	return fmt.Sprintf("%s%s(%s)", couplingKindNames[op.kind], dir, op.spec.key)
}

func (op couplingOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op couplingOp) Hashcode() uint32      { return hashOf(op) }

// DiffWRT: x_c with respect to x; y with respect to x, sRaw and tRaw; the
// log-determinant with respect to sRaw. The cached factors and the
// gradient operations are not differentiated.
func (op couplingOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	switch op.kind {
	case couplingMask:
		d[0] = true
	case couplingAffine:
		d[0], d[1], d[2] = true, true, true
	case couplingLogDet:
		d[0] = true
	}
	return d
}

func (op couplingOp) SymDiff(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	switch op.kind {
	case couplingMask:
		g, err := G.ApplyOp(op, grad)
		return G.Nodes{g}, err
	case couplingAffine:
		x, e, a := in[0], in[3], in[4]
		gx, err := G.ApplyOp(op.with(couplingGradX), grad, e)
		if err != nil {
			return nil, err
		}
		var gs, gt *G.Node
		if op.inverse {
			if gs, err = G.ApplyOp(op.with(couplingGradS), grad, x, e, a); err == nil {
				gt, err = G.ApplyOp(op.with(couplingGradT), grad)
			}
		} else {
			if gs, err = G.ApplyOp(op.with(couplingGradS), grad, output, a); err == nil {
				gt, err = G.ApplyOp(op.with(couplingGradT), gx)
			}
		}
		if err != nil {
			return nil, err
		}
		return G.Nodes{gx, gs, gt, nil, nil}, nil
	case couplingLogDet:
		gs, err := G.ApplyOp(op.with(couplingGradLogDet), grad, in[1])
		return G.Nodes{gs, nil}, err
	}
	return nil, fmt.Errorf("layers: %v is not differentiable", op)
}

func (op couplingOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the operation into prealloc when it has the
// result's shape and type and shares no memory with an input, else into a
// new tensor.
func (op couplingOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	var ts [5]*tensor.Dense
	if len(in) != op.Arity() {
		return nil, fmt.Errorf("layers: %v takes %d inputs, have %d", op, op.Arity(), len(in))
	}
	bsz := -1
	for i, v := range in {
		t, ok := v.(*tensor.Dense)
		if !ok || (t.Dtype() != tensor.Float64 && t.Dtype() != tensor.Float32) {
			return nil, fmt.Errorf("layers: %v on %v, want a float64 or float32 dense tensor", op, v)
		}
		if t.IsMaterializable() {
			t = t.Materialize().(*tensor.Dense)
		}
		s := t.Shape()
		vector := op.kind == couplingGradLogDet && i == 0
		if t.Dtype() != in[0].Dtype() || vector && (len(s) != 1 || (bsz >= 0 && s[0] != bsz)) || !vector && (len(s) != 2 || s[1] != op.spec.d || (bsz >= 0 && s[0] != bsz)) {
			return nil, fmt.Errorf("layers: %v: input %d is %v %v", op, i, t.Dtype(), s)
		}
		bsz = s[0]
		ts[i] = t
	}
	shape := tensor.Shape{bsz, op.spec.d}
	if op.kind == couplingLogDet {
		shape = tensor.Shape{bsz}
	}
	out := op.output(prealloc, ts[:len(in)], shape)
	// Float64s and Float32s, unlike Data, do not allocate a slice header;
	// they return the whole backing array, cut here to the shape's size.
	if out.Dtype() == tensor.Float64 {
		var a [5][]float64
		for i, t := range ts[:len(in)] {
			a[i] = t.Float64s()[:t.Shape().TotalSize()]
		}
		couplingKernel(op, &couplingKernels64, out.Float64s()[:shape.TotalSize()], a, op.spec.mdt64, op.spec.nmdt64, op.spec.keep64)
	} else {
		var a [5][]float32
		for i, t := range ts[:len(in)] {
			a[i] = t.Float32s()[:t.Shape().TotalSize()]
		}
		couplingKernel(op, &couplingKernels32, out.Float32s()[:shape.TotalSize()], a, op.spec.mdt32, op.spec.nmdt32, op.spec.keep32)
	}
	return out, nil
}

// output returns prealloc if it has the given shape and the inputs' type
// and shares no memory with an input, else a new tensor.
func (op couplingOp) output(prealloc G.Value, in []*tensor.Dense, shape tensor.Shape) *tensor.Dense {
	dt := in[0].Dtype()
	if p, ok := prealloc.(*tensor.Dense); ok && p.Dtype() == dt && p.Shape().Eq(shape) && !p.IsMaterializable() {
		lo, hi := p.Uintptr(), p.Uintptr()+p.MemSize()
		shared := false
		for _, t := range in {
			if t.Uintptr() < hi && lo < t.Uintptr()+t.MemSize() {
				shared = true
			}
		}
		if !shared {
			return p
		}
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.Of(dt))
}

// couplingKernel runs op's loops on out and the inputs' data in, through
// the kernels k of out's type (couplingKernels64 or couplingKernels32).
func couplingKernel[T float32 | float64](op couplingOp, k *couplingKernels[T], out []T, in [5][]T, mdt, nmdt, keep []T) {
	switch op.kind {
	case couplingTanh:
		k.tanh(out, in[0])
	case couplingMask:
		k.mulCols(out, in[0], keep)
	case couplingExp:
		k.mulCols(out, in[0], mdt)
		k.exp(out, out, op.inverse)
	case couplingAffine:
		if op.inverse {
			k.affineInv(out, in[0], in[2], in[3], mdt)
		} else {
			k.affineFwd(out, in[0], in[2], in[3], mdt)
		}
	case couplingLogDet:
		couplingLogDetRows(out, in[1], mdt, op.spec.cols, op.inverse)
	case couplingGradX:
		k.mul(out, in[0], in[1])
	case couplingGradS:
		if op.inverse {
			k.gradSInv(out, in[0], in[1], in[2], in[3], mdt)
		} else {
			k.gradSFwd(out, in[0], in[1], in[2], mdt)
		}
	case couplingGradT:
		if op.inverse {
			k.mulCols(out, in[0], nmdt)
		} else {
			k.mulCols(out, in[0], mdt)
		}
	case couplingGradLogDet:
		if op.inverse {
			k.gradLogDet(out, in[0], in[1], nmdt)
		} else {
			k.gradLogDet(out, in[0], in[1], mdt)
		}
	}
}

// couplingKernels are the loops of one float type: the vectorised C loops
// of coupling_op_cgo.go with cgo, the Go loops below without. Both perform
// the same IEEE operations in the same order, without fused
// multiply-adds, and give the same results.
type couplingKernels[T float32 | float64] struct {
	exp                  func(dst, src []T, neg bool)
	tanh                 func(dst, src []T)
	mulCols              func(out, x, f []T)
	mul                  func(out, a, b []T)
	affineFwd, affineInv func(y, x, t, e, mdt []T)
	gradSFwd             func(out, g, y, a, mdt []T)
	gradSInv             func(out, g, x, e, a, mdt []T)
	gradLogDet           func(out, g, a, mdt []T)
}

// couplingGoKernels64 and couplingGoKernels32 are the Go loops.
var (
	couplingGoKernels64 = couplingKernels[float64]{exp64, tanh64, couplingMulCols[float64], couplingMul[float64], couplingAffineFwd[float64], couplingAffineInv[float64], couplingGradSFwd[float64], couplingGradSInv[float64], couplingGradLogDetRows[float64]}
	couplingGoKernels32 = couplingKernels[float32]{exp32, tanh32, couplingMulCols[float32], couplingMul[float32], couplingAffineFwd[float32], couplingAffineInv[float32], couplingGradSFwd[float32], couplingGradSInv[float32], couplingGradLogDetRows[float32]}
)

// The Go loops take (B, d) matrices as row-major slices and the
// per-column factors as slices of length d; each row is sliced to length
// d so that the compiler drops the bounds checks of the inner loops, which
// are branch-free, one output element per iteration. Every product is
// rounded explicitly (T(…)), so that no compiler fuses a multiply and an
// add (Go may on arm64, ppc64 and s390x) and the loops round as the C
// ones and as the Gorgonia formulas they replace. An element's result
// depends on its row's values alone.

// couplingMulCols is out_ij = x_ij·f_j.
func couplingMulCols[T float32 | float64](out, x, f []T) {
	d := len(f)
	for r := 0; r+d <= len(out) && r+d <= len(x); r += d {
		o, xr := out[r:r+d], x[r:r+d]
		for j, v := range f {
			o[j] = xr[j] * v
		}
	}
}

// couplingMul is out = a⊙b.
func couplingMul[T float32 | float64](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] * b[i]
	}
}

// couplingAffineFwd is y = (x + t⊙mdt)⊙e.
func couplingAffineFwd[T float32 | float64](y, x, t, e, mdt []T) {
	d := len(mdt)
	for r := 0; r+d <= len(y); r += d {
		yr, xr, tr, er := y[r:r+d], x[r:r+d], t[r:r+d], e[r:r+d]
		for j, m := range mdt {
			yr[j] = (xr[j] + T(tr[j]*m)) * er[j]
		}
	}
}

// couplingAffineInv is y = x⊙e − t⊙mdt.
func couplingAffineInv[T float32 | float64](y, x, t, e, mdt []T) {
	d := len(mdt)
	for r := 0; r+d <= len(y); r += d {
		yr, xr, tr, er := y[r:r+d], x[r:r+d], t[r:r+d], e[r:r+d]
		for j, m := range mdt {
			yr[j] = T(xr[j]*er[j]) - T(tr[j]*m)
		}
	}
}

// couplingLogDetRows is ld_i = ±Σ_j a_ij·mdt_j, summed in column order
// over the columns where mdt_j ≠ 0 (as Gorgonia's Sum of s = a⊙mdt does,
// the zero terms leaving the sum unchanged). A sum in order is a chain of
// dependent adds, which vector loops would reorder: it stays in Go.
func couplingLogDetRows[T float32 | float64](ld, a, mdt []T, cols []int, neg bool) {
	d := len(mdt)
	for i := range ld {
		ar := a[i*d : i*d+d]
		var s T
		for _, j := range cols {
			s += T(ar[j] * mdt[j])
		}
		if neg {
			s = -s
		}
		ld[i] = s
	}
}

// couplingGradSFwd is g⊙y⊙mdt⊙(1 − a²).
func couplingGradSFwd[T float32 | float64](out, g, y, a, mdt []T) {
	d := len(mdt)
	for r := 0; r+d <= len(out); r += d {
		o, gr, yr, ar := out[r:r+d], g[r:r+d], y[r:r+d], a[r:r+d]
		for j, m := range mdt {
			v := ar[j]
			o[j] = T(T(gr[j]*yr[j])*m) * (1 - T(v*v))
		}
	}
}

// couplingGradSInv is −g⊙x⊙e⊙mdt⊙(1 − a²).
func couplingGradSInv[T float32 | float64](out, g, x, e, a, mdt []T) {
	d := len(mdt)
	for r := 0; r+d <= len(out); r += d {
		o, gr, xr, er, ar := out[r:r+d], g[r:r+d], x[r:r+d], e[r:r+d], a[r:r+d]
		for j, m := range mdt {
			v := ar[j]
			o[j] = -T(T(T(gr[j]*xr[j])*er[j])*m) * (1 - T(v*v))
		}
	}
}

// couplingGradLogDetRows is out_ij = g_i·f_j·(1 − a_ij²) (f = ±mdt).
func couplingGradLogDetRows[T float32 | float64](out, g, a, f []T) {
	d := len(f)
	for i, gi := range g {
		o, ar := out[i*d:i*d+d], a[i*d:i*d+d]
		for j, m := range f {
			v := ar[j]
			o[j] = T(gi*m) * (1 - T(v*v))
		}
	}
}

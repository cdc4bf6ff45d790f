package layers

import "sync"

// The batched evaluation of the spline operations (spline_op.go). The
// scalar RQSpline.eval spends its time in exp, log1p and log, one call
// per bin and element (2K exponentials for the two softmaxes, two
// softplus for the bin's end derivatives, two logarithms for the
// log-derivative), and in one long chain of dependent operations per
// element. Here a chunk of elements (consecutive (row, column) pairs,
// whose raw parameters are consecutive in θ) is laid out by quantity, one
// row of the chunk's scratch per quantity, element after element along
// it, and goes through rqKernel:
//
//  1. the raw widths and heights less their softmax's maximum, into 2K
//     rows;
//  2. exp of those rows at once;
//  3. the softmaxes, the knots of both grids (K+1 rows each), each
//     element's bin, its local parameters (X_k, W, Y_k, H) and −|u_d| of
//     the raw derivatives at the bin's two ends;
//  4. exp and log1p of those, so the end derivatives m_δ + softplus(u_d);
//  5. the rational-quadratic formula (rqLocal.point and out) and, for the
//     log-derivative, log of its two factors, at once.
//
// The gradient operations then run rqGradKernel on the same rows: the
// derivatives of rqLocal.grads and the raw gradients of RQSpline.rawGrad.
//
// With cgo both kernels are C (spline_vec_cgo.go): the array exp, log1p
// and log of glibc's libmvec, and the arithmetic in loops over the chunk
// that GCC vectorises, compiled without -ffast-math or contraction;
// without cgo they are Go with Go's math (spline_vec_nocgo.go). Either
// way the arithmetic is the scalar evaluation's, operation for operation
// (TestRQSVecMatchesScalarBitwise): the results differ from
// RQSpline.eval's only where the array functions round differently from
// Go's math (a few ulp, cgo only), and each element's result depends on
// its own values alone, not on the batch it sits in or its place there.
//
// The scratch of an evaluation comes from a sync.Pool (one per number of
// bins): the operations stay stateless, one value may serve graphs run
// concurrently, and a steady stream of calls allocates no buffers.

// rqChunkValues bounds the size of a chunk's scratch, rqRows(K) +
// rqNamedRows values per element, so that it stays in the L1 and L2
// caches.
const rqChunkValues = 8192

// rqMaxChunk is the most elements of a chunk.
const rqMaxChunk = 128

// The rows of a chunk's scratch after the 2K rows of exponentials (the
// softmaxes after step 3: widths, then heights) and the 2(K+1) rows of
// knots (x, then y): rqRows(K) + rqRow… (the C kernel's enum).
const (
	rqRowX0   = iota // X_k
	rqRowW           // W
	rqRowY0          // Y_k
	rqRowH           // H
	rqRowD0          // δ_k
	rqRowD1          // δ_{k+1}
	rqRowU0          // u_d at the bin's left end (0 at the boundary)
	rqRowU1          // u_d at its right end
	rqRowSP0         // exp(−|u_d|) at the left end
	rqRowSP1         // at the right end
	rqRowSPL0        // log1p(exp(−|u_d|)) at the left end
	rqRowSPL1        // at the right end
	rqRowXI          // rqPoint.xi
	rqRowSL          // rqPoint.sl
	rqRowA           // rqPoint.a
	rqRowT           // rqPoint.t
	rqRowM           // rqPoint.m
	rqRowQ           // rqPoint.q
	rqRowN           // rqPoint.n
	rqRowLG0         // s²q, then the log-derivative ℓ (0 in the tails)
	rqRowLG1         // m, then log m
	rqRowOut         // the output (the input in the tails)
	rqRowBin         // the bin (as a float64)
	rqRowGY          // the upstream gradient of the output
	rqRowGL          // the upstream gradient of the log-derivative
	rqRowDX          // the gradient with respect to the input
	rqRowGP0         // the gradient with respect to the bin's X_k, W, Y_k, H, δ_k, δ_{k+1}: six rows
	rqRowGP1
	rqRowGP2
	rqRowGP3
	rqRowGP4
	rqRowGP5
	rqRowPB  // scratch of the softmax gradients
	rqRowPK  // scratch of the softmax gradients
	rqRowTmp // scratch
	rqNamedRows
)

// The weights of the upstream gradients of a gradient operation: of the
// value, the log-derivative or both (rqsOp's value, logdet and joint).
const (
	rqModeValue = iota
	rqModeLogDet
	rqModeJoint
)

// rqRows is the index of the first named row for K bins.
func rqRows(k int) int { return 4*k + 2 }

// rqScratch is a chunk's scratch.
type rqScratch struct {
	bins, chunk int
	v           []float64 // the chunk's inputs
	bin         []int64   // each element's bin, −1 in the identity tails (and for NaN)
	buf         []float64 // (rqRows(K) + rqNamedRows) rows of m (the chunk's size) values
	sw, sh      []float64 // one element's softmaxes (K)
	grad        []float64 // a raw gradient (3K−1)
}

// rqScratchPools holds a sync.Pool of scratch per number of bins.
var rqScratchPools sync.Map // int → *sync.Pool

// rqGetScratch returns pooled scratch for a spline of k bins; give it
// back with rqPutScratch.
func rqGetScratch(k int) *rqScratch {
	p, ok := rqScratchPools.Load(k)
	if !ok {
		p, _ = rqScratchPools.LoadOrStore(k, &sync.Pool{New: func() any { return newRQScratch(k) }})
	}
	return p.(*sync.Pool).Get().(*rqScratch)
}

func rqPutScratch(sc *rqScratch) {
	if p, ok := rqScratchPools.Load(sc.bins); ok {
		p.(*sync.Pool).Put(sc)
	}
}

func newRQScratch(k int) *rqScratch {
	rows := rqRows(k) + rqNamedRows
	c := max(1, min(rqMaxChunk, rqChunkValues/rows))
	return &rqScratch{
		bins: k, chunk: c,
		v:    make([]float64, c),
		bin:  make([]int64, c),
		buf:  make([]float64, c*rows),
		sw:   make([]float64, k),
		sh:   make([]float64, k),
		grad: make([]float64, 3*k-1),
	}
}

// row returns named row r of a chunk of m elements.
func (sc *rqScratch) row(r, m int) []float64 {
	o := (rqRows(sc.bins) + r) * m
	return sc.buf[o : o+m : o+m]
}

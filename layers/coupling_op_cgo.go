//go:build cgo

package layers

/*
// The arithmetic loops of the coupling operations (coupling_op.go) in C,
// which GCC vectorises (AVX-512, AVX2 or SSE2, picked at load time by
// target_clones) where Go runs one element per iteration. They are
// compiled without the package's -ffast-math and without contraction into
// fused multiply-adds: every element goes through the same IEEE
// operations in the same order in the vector loop, its scalar remainder
// and the Go loops of coupling_op.go, so a result depends on the
// element's values alone, not on its position, the batch size or the
// buffers' alignment, and agrees with the Go loops to the last bit (exp
// and tanh are vmath_cgo.go's).
#pragma GCC push_options
#pragma GCC optimize ("O3", "no-fast-math", "fp-contract=off")

#define FLOWEBM_COUPLING(T, S) \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_cmulcols##S(T *out, const T *x, const T *f, long rows, long d) { \
	for (long r = 0; r < rows; r++) { \
		T *o = out + r * d; \
		const T *xr = x + r * d; \
		for (long j = 0; j < d; j++) o[j] = xr[j] * f[j]; \
	} \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_cmul##S(T *out, const T *a, const T *b, long n) { \
	for (long i = 0; i < n; i++) out[i] = a[i] * b[i]; \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_caffine_fwd##S(T *y, const T *x, const T *t, const T *e, const T *mdt, long rows, long d) { \
	for (long r = 0; r < rows; r++) { \
		T *yr = y + r * d; \
		const T *xr = x + r * d, *tr = t + r * d, *er = e + r * d; \
		for (long j = 0; j < d; j++) yr[j] = (xr[j] + tr[j] * mdt[j]) * er[j]; \
	} \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_caffine_inv##S(T *y, const T *x, const T *t, const T *e, const T *mdt, long rows, long d) { \
	for (long r = 0; r < rows; r++) { \
		T *yr = y + r * d; \
		const T *xr = x + r * d, *tr = t + r * d, *er = e + r * d; \
		for (long j = 0; j < d; j++) yr[j] = xr[j] * er[j] - tr[j] * mdt[j]; \
	} \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_cgrads_fwd##S(T *out, const T *g, const T *y, const T *a, const T *mdt, long rows, long d) { \
	for (long r = 0; r < rows; r++) { \
		T *o = out + r * d; \
		const T *gr = g + r * d, *yr = y + r * d, *ar = a + r * d; \
		for (long j = 0; j < d; j++) o[j] = gr[j] * yr[j] * mdt[j] * (1 - ar[j] * ar[j]); \
	} \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_cgrads_inv##S(T *out, const T *g, const T *x, const T *e, const T *a, const T *mdt, long rows, long d) { \
	for (long r = 0; r < rows; r++) { \
		T *o = out + r * d; \
		const T *gr = g + r * d, *xr = x + r * d, *er = e + r * d, *ar = a + r * d; \
		for (long j = 0; j < d; j++) o[j] = -(gr[j] * xr[j] * er[j] * mdt[j]) * (1 - ar[j] * ar[j]); \
	} \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_cgradlogdet##S(T *out, const T *g, const T *a, const T *f, long rows, long d) { \
	for (long r = 0; r < rows; r++) { \
		T *o = out + r * d; \
		const T *ar = a + r * d; \
		const T gi = g[r]; \
		for (long j = 0; j < d; j++) o[j] = gi * f[j] * (1 - ar[j] * ar[j]); \
	} \
}

FLOWEBM_COUPLING(double, 64)
FLOWEBM_COUPLING(float, 32)

#pragma GCC pop_options
*/
import "C"

import "unsafe"

// couplingKernels64 and couplingKernels32 are the coupling operations'
// loops: vectorised C, with Go's exp and tanh of vmath_cgo.go.
var (
	couplingKernels64 = couplingKernels[float64]{exp64, tanh64, cMulCols64, cMul64, cAffineFwd64, cAffineInv64, cGradSFwd64, cGradSInv64, cGradLogDet64}
	couplingKernels32 = couplingKernels[float32]{exp32, tanh32, cMulCols32, cMul32, cAffineFwd32, cAffineInv32, cGradSFwd32, cGradSInv32, cGradLogDet32}
)

// couplingRows is the number of whole rows of length d in every slice.
func couplingRows[T float32 | float64](d int, s ...[]T) int {
	if d == 0 {
		return 0
	}
	n := len(s[0])
	for _, v := range s[1:] {
		n = min(n, len(v))
	}
	return n / d
}

func couplingPtr64(s []float64) *C.double { return (*C.double)(unsafe.Pointer(unsafe.SliceData(s))) }
func couplingPtr32(s []float32) *C.float  { return (*C.float)(unsafe.Pointer(unsafe.SliceData(s))) }

func cMulCols64(out, x, f []float64) {
	if r := couplingRows(len(f), out, x); r > 0 {
		C.flowebm_cmulcols64(couplingPtr64(out), couplingPtr64(x), couplingPtr64(f), C.long(r), C.long(len(f)))
	}
}

func cMulCols32(out, x, f []float32) {
	if r := couplingRows(len(f), out, x); r > 0 {
		C.flowebm_cmulcols32(couplingPtr32(out), couplingPtr32(x), couplingPtr32(f), C.long(r), C.long(len(f)))
	}
}

func cMul64(out, a, b []float64) {
	if n := min(len(out), len(a), len(b)); n > 0 {
		C.flowebm_cmul64(couplingPtr64(out), couplingPtr64(a), couplingPtr64(b), C.long(n))
	}
}

func cMul32(out, a, b []float32) {
	if n := min(len(out), len(a), len(b)); n > 0 {
		C.flowebm_cmul32(couplingPtr32(out), couplingPtr32(a), couplingPtr32(b), C.long(n))
	}
}

func cAffineFwd64(y, x, t, e, mdt []float64) {
	if r := couplingRows(len(mdt), y, x, t, e); r > 0 {
		C.flowebm_caffine_fwd64(couplingPtr64(y), couplingPtr64(x), couplingPtr64(t), couplingPtr64(e), couplingPtr64(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cAffineFwd32(y, x, t, e, mdt []float32) {
	if r := couplingRows(len(mdt), y, x, t, e); r > 0 {
		C.flowebm_caffine_fwd32(couplingPtr32(y), couplingPtr32(x), couplingPtr32(t), couplingPtr32(e), couplingPtr32(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cAffineInv64(y, x, t, e, mdt []float64) {
	if r := couplingRows(len(mdt), y, x, t, e); r > 0 {
		C.flowebm_caffine_inv64(couplingPtr64(y), couplingPtr64(x), couplingPtr64(t), couplingPtr64(e), couplingPtr64(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cAffineInv32(y, x, t, e, mdt []float32) {
	if r := couplingRows(len(mdt), y, x, t, e); r > 0 {
		C.flowebm_caffine_inv32(couplingPtr32(y), couplingPtr32(x), couplingPtr32(t), couplingPtr32(e), couplingPtr32(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cGradSFwd64(out, g, y, a, mdt []float64) {
	if r := couplingRows(len(mdt), out, g, y, a); r > 0 {
		C.flowebm_cgrads_fwd64(couplingPtr64(out), couplingPtr64(g), couplingPtr64(y), couplingPtr64(a), couplingPtr64(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cGradSFwd32(out, g, y, a, mdt []float32) {
	if r := couplingRows(len(mdt), out, g, y, a); r > 0 {
		C.flowebm_cgrads_fwd32(couplingPtr32(out), couplingPtr32(g), couplingPtr32(y), couplingPtr32(a), couplingPtr32(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cGradSInv64(out, g, x, e, a, mdt []float64) {
	if r := couplingRows(len(mdt), out, g, x, e, a); r > 0 {
		C.flowebm_cgrads_inv64(couplingPtr64(out), couplingPtr64(g), couplingPtr64(x), couplingPtr64(e), couplingPtr64(a), couplingPtr64(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cGradSInv32(out, g, x, e, a, mdt []float32) {
	if r := couplingRows(len(mdt), out, g, x, e, a); r > 0 {
		C.flowebm_cgrads_inv32(couplingPtr32(out), couplingPtr32(g), couplingPtr32(x), couplingPtr32(e), couplingPtr32(a), couplingPtr32(mdt), C.long(r), C.long(len(mdt)))
	}
}

func cGradLogDet64(out, g, a, f []float64) {
	if r := min(couplingRows(len(f), out, a), len(g)); r > 0 {
		C.flowebm_cgradlogdet64(couplingPtr64(out), couplingPtr64(g), couplingPtr64(a), couplingPtr64(f), C.long(r), C.long(len(f)))
	}
}

func cGradLogDet32(out, g, a, f []float32) {
	if r := min(couplingRows(len(f), out, a), len(g)); r > 0 {
		C.flowebm_cgradlogdet32(couplingPtr32(out), couplingPtr32(g), couplingPtr32(a), couplingPtr32(f), C.long(r), C.long(len(f)))
	}
}

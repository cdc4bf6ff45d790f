//go:build cgo

package layers

/*
#cgo CFLAGS: -O3 -ffast-math
#cgo LDFLAGS: -lm
#include <math.h>

// Elementwise exp and tanh over arrays. With -ffast-math GCC vectorises the
// block loops below with glibc's vector math library (libmvec, at most 4 ulp
// from the correctly rounded result), and target_clones picks the AVX-512,
// AVX2 or SSE2 variant at load time. Special values: exp(±inf), exp(nan),
// tanh(±inf) are handled by libmvec's scalar fallback.
//
// Every element goes through the same fixed-size block, copied into local
// buffers that never alias: a plain loop over the caller's arrays would be
// versioned by GCC into a vector path and a scalar path (glibc's scalar expf,
// rounded differently) chosen by whether dst and src lie close in memory,
// with a scalar tail for the last n mod VF elements, so a value's result would
// depend on where the Go allocator put the buffers and on its position in the
// batch. Now f(x[i]) depends on x[i] alone (on a given CPU). The block
// loops are kept loops (unroll 1): GCC would otherwise unroll them completely
// into scalar calls before vectorising.
#include <string.h>
#define FLOWEBM_BLOCK 64 // elements per full block
#define FLOWEBM_TAIL 16  // the rest: padded blocks of 16, a multiple of every vector width
#define FLOWEBM_MAP(NAME, T, EXPR) \
static inline void NAME##_full(const T *restrict bx, T *restrict by) { \
	_Pragma("GCC unroll 1") \
	for (int j = 0; j < FLOWEBM_BLOCK; j++) by[j] = EXPR(bx[j]); \
} \
static inline void NAME##_tail(const T *restrict bx, T *restrict by) { \
	_Pragma("GCC unroll 1") \
	for (int j = 0; j < FLOWEBM_TAIL; j++) by[j] = EXPR(bx[j]); \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void NAME(const T *x, T *y, long n, int neg) { \
	T bx[FLOWEBM_BLOCK], by[FLOWEBM_BLOCK]; \
	long i = 0; \
	for (; i + FLOWEBM_BLOCK <= n; i += FLOWEBM_BLOCK) { \
		for (int j = 0; j < FLOWEBM_BLOCK; j++) bx[j] = neg ? -x[i + j] : x[i + j]; \
		NAME##_full(bx, by); \
		memcpy(y + i, by, sizeof by); \
	} \
	for (; i < n; i += FLOWEBM_TAIL) { \
		long m = n - i < FLOWEBM_TAIL ? n - i : FLOWEBM_TAIL; \
		for (int j = 0; j < FLOWEBM_TAIL; j++) bx[j] = j < m ? (neg ? -x[i + j] : x[i + j]) : 0; \
		NAME##_tail(bx, by); \
		memcpy(y + i, by, m * sizeof(T)); \
	} \
}
FLOWEBM_MAP(flowebm_exp64, double, exp)
FLOWEBM_MAP(flowebm_exp32, float, expf)
FLOWEBM_MAP(flowebm_tanh64_, double, tanh)
FLOWEBM_MAP(flowebm_tanh32_, float, tanhf)
static void flowebm_tanh64(const double *x, double *y, long n) { flowebm_tanh64_(x, y, n, 0); }
static void flowebm_tanh32(const float *x, float *y, long n) { flowebm_tanh32_(x, y, n, 0); }
*/
import "C"

import "unsafe"

// vectorMath says which implementation of the elementwise functions is in use.
const vectorMath = "glibc libmvec (cgo)"

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func exp64(dst, src []float64, neg bool) {
	if len(src) > 0 {
		C.flowebm_exp64((*C.double)(unsafe.Pointer(&src[0])), (*C.double)(unsafe.Pointer(&dst[0])), C.long(len(src)), b2i(neg))
	}
}

func exp32(dst, src []float32, neg bool) {
	if len(src) > 0 {
		C.flowebm_exp32((*C.float)(unsafe.Pointer(&src[0])), (*C.float)(unsafe.Pointer(&dst[0])), C.long(len(src)), b2i(neg))
	}
}

func tanh64(dst, src []float64) {
	if len(src) > 0 {
		C.flowebm_tanh64((*C.double)(unsafe.Pointer(&src[0])), (*C.double)(unsafe.Pointer(&dst[0])), C.long(len(src)))
	}
}

func tanh32(dst, src []float32) {
	if len(src) > 0 {
		C.flowebm_tanh32((*C.float)(unsafe.Pointer(&src[0])), (*C.float)(unsafe.Pointer(&dst[0])), C.long(len(src)))
	}
}

//go:build cgo

package layers

/*
#cgo CFLAGS: -O3 -ffast-math
#cgo LDFLAGS: -lm
#include <math.h>

// Elementwise exp and tanh over arrays. With -ffast-math GCC vectorises the
// loops with glibc's vector math library (libmvec, at most 4 ulp from the
// correctly rounded result), and target_clones picks the AVX-512, AVX2 or
// SSE2 variant at load time. Special values: exp(±inf), exp(nan), tanh(±inf)
// are handled by libmvec's scalar fallback.
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_exp64(const double *x, double *y, long n, int neg) {
	if (neg) { for (long i = 0; i < n; i++) y[i] = exp(-x[i]); }
	else { for (long i = 0; i < n; i++) y[i] = exp(x[i]); }
}
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_exp32(const float *x, float *y, long n, int neg) {
	if (neg) { for (long i = 0; i < n; i++) y[i] = expf(-x[i]); }
	else { for (long i = 0; i < n; i++) y[i] = expf(x[i]); }
}
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_tanh64(const double *x, double *y, long n) {
	for (long i = 0; i < n; i++) y[i] = tanh(x[i]);
}
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_tanh32(const float *x, float *y, long n) {
	for (long i = 0; i < n; i++) y[i] = tanhf(x[i]);
}
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

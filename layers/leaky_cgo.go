//go:build cgo

package layers

/*
// LeakyReLU's float32 loop (leaky.go) in C, which GCC vectorises where Go
// runs one element per iteration. Same options as coupling_op_cgo.go: no fast-math,
// no contraction, so every element gets the Go loop's exact operation
// (y·1 or y·slope, or y masked to +0 for slope 0) and the same bits.
#pragma GCC push_options
#pragma GCC optimize ("O3", "no-fast-math", "fp-contract=off")
#include <math.h>

#define FLOWEBM_LEAKY(T, S) \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_leaky##S(T *dst, const T *x, const T *y, T slope, long n) { \
	for (long i = 0; i < n; i++) dst[i] = y[i] * (signbit(x[i]) ? slope : (T)1); \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void flowebm_relu##S(T *dst, const T *x, const T *y, long n) { \
	for (long i = 0; i < n; i++) dst[i] = signbit(x[i]) ? (T)0 : y[i]; \
}

FLOWEBM_LEAKY(float, 32)

#pragma GCC pop_options
*/
import "C"

import "unsafe"

// leaky64 is leakyGo64: GCC's double loop with signbit ran 6.6 times
// slower than Go's (173 µs against 26 µs for 1,024 × 51 values), so only
// float32 goes to C.
func leaky64(dst, x, y []float64, slope float64) { leakyGo64(dst, x, y, slope) }

// leaky32 is leakyGo32, in C for long slices.
func leaky32(dst, x, y []float32, slope float32) {
	n := len(x)
	if n < leakyCMin {
		leakyGo32(dst, x, y, slope)
		return
	}
	dst, y = dst[:n], y[:n]
	d, xp, yp := (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&y[0]))
	if slope == 0 {
		C.flowebm_relu32(d, xp, yp, C.long(n))
		return
	}
	C.flowebm_leaky32(d, xp, yp, C.float(slope), C.long(n))
}

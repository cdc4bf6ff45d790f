//go:build cgo

package graph

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*threads_fn)(int);

static dgemm_fn flowebm_dgemm;
static sgemm_fn flowebm_sgemm;
static threads_fn flowebm_threads;

static int flowebm_load(const char *name) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) return 0;
	flowebm_dgemm = (dgemm_fn)dlsym(h, "cblas_dgemm");
	flowebm_sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
	flowebm_threads = (threads_fn)dlsym(h, "openblas_set_num_threads");
	if (flowebm_dgemm == NULL || flowebm_sgemm == NULL) {
		flowebm_dgemm = NULL;
		flowebm_sgemm = NULL;
		return 0;
	}
	return 1;
}

static void flowebm_set_threads(int n) { if (flowebm_threads != NULL) flowebm_threads(n); }

static void flowebm_call_dgemm(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc) {
	flowebm_dgemm(101, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void flowebm_call_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
	flowebm_sgemm(101, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
*/
import "C"

import (
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// openBLASNames are the shared objects tried, in order.
var openBLASNames = []string{"libopenblas.so.0", "libopenblas.so", "libopenblas64_.so.0"}

func loadOpenBLAS() (string, bool) {
	for _, name := range openBLASNames {
		cs := C.CString(name)
		ok := C.flowebm_load(cs) == 1
		C.free(unsafe.Pointer(cs))
		if ok {
			return name, true
		}
	}
	return "", false
}

func setOpenBLASThreads(n int) { C.flowebm_set_threads(C.int(n)) }

// openBLAS is gonum's pure-Go BLAS with the matrix products (the only BLAS
// routines the models spend time in) done by OpenBLAS.
type openBLAS struct {
	gonum.Implementation
}

func cblasTrans(t blas.Transpose) C.int {
	if t == blas.NoTrans {
		return 111
	}
	return 112
}

// gemmFits reports whether the row-major operands have the lengths their
// shapes need (gonum's checks, without which C would read out of bounds).
func gemmFits(tA, tB blas.Transpose, m, n, k, la, lda, lb, ldb, lc, ldc int) bool {
	if m <= 0 || n <= 0 || k <= 0 {
		return false
	}
	ar, ac := m, k
	if tA != blas.NoTrans {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB != blas.NoTrans {
		br, bc = n, k
	}
	return lda >= max(1, ac) && ldb >= max(1, bc) && ldc >= max(1, n) &&
		la >= lda*(ar-1)+ac && lb >= ldb*(br-1)+bc && lc >= ldc*(m-1)+n
}

// Dgemm computes C = alpha·op(A)·op(B) + beta·C.
func (o openBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if !gemmFits(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc) {
		o.Implementation.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	C.flowebm_call_dgemm(cblasTrans(tA), cblasTrans(tB), C.int(m), C.int(n), C.int(k), C.double(alpha),
		(*C.double)(unsafe.Pointer(&a[0])), C.int(lda), (*C.double)(unsafe.Pointer(&b[0])), C.int(ldb),
		C.double(beta), (*C.double)(unsafe.Pointer(&c[0])), C.int(ldc))
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C.
func (o openBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !gemmFits(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc) {
		o.Implementation.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	C.flowebm_call_sgemm(cblasTrans(tA), cblasTrans(tB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(&a[0])), C.int(lda), (*C.float)(unsafe.Pointer(&b[0])), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

package graph

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
)

// TestOpenBLASMatchesGonum compares the BLAS Gorgonia uses (OpenBLAS when it
// was loaded) with gonum's pure-Go Dgemm and Sgemm on random operands in
// every transpose combination, with leading dimensions larger than the
// rows. Both sum the same products in different orders: the relative
// difference must stay at round-off level (1e-13 in float64 for k ≤ 70
// terms of unit size; 1e-4 in float32).
func TestOpenBLASMatchesGonum(t *testing.T) {
	if !strings.HasPrefix(BLAS(), "OpenBLAS") {
		cross.Skip(t, "OpenBLAS against gonum", fmt.Sprintf("BLAS in use: %s (FLOWEBM_BLAS=go, or no OpenBLAS: install libopenblas0 and build with cgo)", BLAS()))
	}
	impl, ref := G.WhichBLAS(), gonum.Implementation{}
	rng := newRNG(11)
	for _, dims := range [][3]int{{1, 1, 1}, {7, 5, 3}, {64, 32, 2}, {33, 70, 65}} {
		m, n, k := dims[0], dims[1], dims[2]
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				ar, ac := m, k
				if tA == blas.Trans {
					ar, ac = k, m
				}
				br, bc := k, n
				if tB == blas.Trans {
					br, bc = n, k
				}
				lda, ldb, ldc := ac+2, bc+1, n+3
				a, b := make([]float64, ar*lda), make([]float64, br*ldb)
				c := make([]float64, m*ldc)
				for _, s := range [][]float64{a, b, c} {
					for i := range s {
						s[i] = rng.NormFloat64()
					}
				}
				want := append([]float64(nil), c...)
				got := append([]float64(nil), c...)
				ref.Dgemm(tA, tB, m, n, k, 0.7, a, lda, b, ldb, 0.3, want, ldc)
				impl.Dgemm(tA, tB, m, n, k, 0.7, a, lda, b, ldb, 0.3, got, ldc)
				if e := relErrInf(got, want); e > 1e-13 {
					t.Errorf("Dgemm %c%c m=%d n=%d k=%d: relative difference %g", tA, tB, m, n, k, e)
				}
				a32, b32, c32 := to32(a), to32(b), to32(c)
				want32, got32 := append([]float32(nil), c32...), append([]float32(nil), c32...)
				ref.Sgemm(tA, tB, m, n, k, 0.7, a32, lda, b32, ldb, 0.3, want32, ldc)
				impl.Sgemm(tA, tB, m, n, k, 0.7, a32, lda, b32, ldb, 0.3, got32, ldc)
				if e := relErrInf(to64(got32), to64(want32)); e > 1e-4 || math.IsNaN(e) {
					t.Errorf("Sgemm %c%c m=%d n=%d k=%d: relative difference %g", tA, tB, m, n, k, e)
				}
			}
		}
	}
}

func to32(v []float64) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

func to64(v []float32) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f
}

// The BLAS is chosen by a call, never by importing the package: pure Go
// on request, an unknown choice refused; the test's choice is put back.
func TestUseBLAS(t *testing.T) {
	t.Cleanup(func() { UseBLASFromEnv() }) // after t.Setenv's own cleanup (LIFO)
	name, err := UseBLAS(BLASGo)
	if err != nil || name != "gonum (pure Go)" || BLAS() != name {
		t.Fatalf("UseBLAS(go): %q, %v", name, err)
	}
	if _, ok := G.WhichBLAS().(gonum.Implementation); !ok {
		t.Errorf("Gorgonia uses %T after UseBLAS(go), want gonum's", G.WhichBLAS())
	}
	if _, err := UseBLAS("mkl"); err == nil || !strings.Contains(err.Error(), `BLAS "mkl"`) {
		t.Errorf("UseBLAS(mkl): %v, want a refusal", err)
	}
	t.Setenv(BLASEnv, "GO")
	want := `FLOWEBM_BLAS="GO": want "go" or "openblas" (or unset: OpenBLAS where it loads); using gonum (pure Go)`
	if name, err := UseBLASFromEnv(); err == nil || err.Error() != want || name != "gonum (pure Go)" {
		t.Errorf("FLOWEBM_BLAS=GO: %q, %v; want %s", name, err, want)
	}
}

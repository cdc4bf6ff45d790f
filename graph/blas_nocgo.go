//go:build !cgo

package graph

import "gonum.org/v1/gonum/blas/gonum"

// Without cgo there is no OpenBLAS: gonum's pure-Go BLAS does everything.
type openBLAS struct {
	gonum.Implementation
}

func loadOpenBLAS() (string, bool) { return "", false }

func setOpenBLASThreads(int) {}

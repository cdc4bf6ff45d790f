package graph

import (
	"fmt"
	"os"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
)

// BLASEnv is the environment variable that chooses the BLAS: "go" forces
// gonum's pure-Go implementation; unset or "openblas" uses OpenBLAS when
// the program was built with cgo and libopenblas is installed (Debian:
// libopenblas0), and falls back to pure Go otherwise.
const BLASEnv = "FLOWEBM_BLAS"

var blasName = "gonum (pure Go)"

// The matrix products of every Gorgonia graph (and of gonum's mat) go
// through the BLAS chosen here, once, at start-up. OpenBLAS is loaded with
// dlopen, so a machine without it runs the same binary on pure Go.
func init() {
	switch v := os.Getenv(BLASEnv); v {
	case "go":
		return
	case "", "openblas":
		name, ok := loadOpenBLAS()
		if !ok {
			if v == "openblas" {
				fmt.Fprintf(os.Stderr, "flowebm: %s=openblas but no OpenBLAS could be loaded (cgo build with libopenblas installed needed); using pure Go\n", BLASEnv)
			}
			return
		}
		// One thread: the models' products are small (batch × a few dozen
		// to a few hundred), where waking and waiting for a second
		// OpenBLAS thread costs more than it saves, and where a busy
		// machine leaves the caller blocked until that thread is scheduled
		// (measured: a two-modes iteration 10 ms on the CPU, 127 ms wall,
		// next to two other training processes).
		setOpenBLASThreads(1)
		impl := openBLAS{gonum.Implementation{}}
		G.Use(impl)
		blas64.Use(impl)
		blas32.Use(impl)
		blasName = "OpenBLAS (" + name + ") for matrix products, gonum for the rest"
	default:
		fmt.Fprintf(os.Stderr, "flowebm: %s=%q, want go or openblas; using the default\n", BLASEnv, v)
	}
}

// BLAS names the BLAS in use for matrix products.
func BLAS() string { return blasName }

// SetBLASThreads sets the number of threads OpenBLAS uses (no effect on
// pure Go, whose parallelism follows GOMAXPROCS).
func SetBLASThreads(n int) { setOpenBLASThreads(n) }

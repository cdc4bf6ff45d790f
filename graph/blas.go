package graph

import (
	"fmt"
	"os"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
)

// BLASEnv is the environment variable UseBLASFromEnv reads: "go" for
// gonum's pure-Go BLAS; unset, or "openblas", for OpenBLAS when the
// program was built with cgo and libopenblas is installed (Debian:
// libopenblas0), pure Go otherwise (unset) or an error ("openblas").
const BLASEnv = "FLOWEBM_BLAS"

var blasName = "gonum (pure Go)"

// BLASChoice picks the BLAS of matrix products.
type BLASChoice string

// The choices: OpenBLAS where it can be loaded (a cgo build on a machine
// with libopenblas), else gonum's pure Go; or either one.
const (
	BLASAuto     BLASChoice = ""
	BLASGo       BLASChoice = "go"
	BLASOpenBLAS BLASChoice = "openblas"
)

// UseBLAS makes the matrix products of every Gorgonia graph and of gonum's
// mat go through the BLAS c, for the whole process (gonum's blas64.Use is
// process-wide): call it once at start, before building models. Nothing
// changes until it is called: importing graph leaves gonum's pure-Go BLAS
// in place. It returns the name of the BLAS in use (see BLAS); OpenBLAS
// asked for and not loadable is an error, with pure Go left in place.
// OpenBLAS is loaded with dlopen, so a machine without it runs the same
// binary on pure Go.
func UseBLAS(c BLASChoice) (string, error) {
	switch c {
	case BLASGo:
		use(gonum.Implementation{})
		blasName = "gonum (pure Go)"
	case BLASAuto, BLASOpenBLAS:
		name, ok := loadOpenBLAS()
		if !ok {
			if c == BLASOpenBLAS {
				return blasName, fmt.Errorf("graph: no OpenBLAS could be loaded (a cgo build with libopenblas installed is needed); using %s", blasName)
			}
			return blasName, nil
		}
		// One thread: the models' products are small (batch × a few dozen
		// to a few hundred), where waking and waiting for a second
		// OpenBLAS thread costs more than it saves, and where a busy
		// machine leaves the caller blocked until that thread is scheduled
		// (measured: a two-modes iteration 10 ms on the CPU, 127 ms wall,
		// next to two other training processes).
		setOpenBLASThreads(1)
		use(openBLAS{gonum.Implementation{}})
		blasName = "OpenBLAS (" + name + ") for matrix products, gonum for the rest"
	default:
		return blasName, fmt.Errorf("graph: BLAS %q, want %q or %q (or empty: OpenBLAS where it loads)", c, BLASGo, BLASOpenBLAS)
	}
	return blasName, nil
}

// UseBLASFromEnv is UseBLAS with the choice of the environment variable
// BLASEnv (unset: BLASAuto): the default of the command line and the
// notebooks.
// An error names the variable and what is used instead.
func UseBLASFromEnv() (string, error) {
	v := os.Getenv(BLASEnv)
	switch c := BLASChoice(v); c {
	case BLASAuto, BLASGo, BLASOpenBLAS:
		name, err := UseBLAS(c)
		if err != nil {
			return name, fmt.Errorf("%s=%s: %w", BLASEnv, v, err)
		}
		return name, nil
	default: // probe 28: the warning named neither the variable nor the BLAS used
		return blasName, fmt.Errorf("%s=%q: want %q or %q (or unset: OpenBLAS where it loads); using %s", BLASEnv, v, BLASGo, BLASOpenBLAS, blasName)
	}
}

// use installs impl for Gorgonia's and gonum's products.
func use(impl interface {
	G.BLAS
	blas.Float64
	blas.Float32
}) {
	G.Use(impl)
	blas64.Use(impl)
	blas32.Use(impl)
}

// BLAS names the BLAS in use for matrix products.
func BLAS() string { return blasName }

// SetBLASThreads sets the number of threads OpenBLAS uses (no effect on
// pure Go, whose parallelism follows GOMAXPROCS).
func SetBLASThreads(n int) { setOpenBLASThreads(n) }

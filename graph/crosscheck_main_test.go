package graph

import (
	"fmt"
	"os"
	"testing"

	"github.com/flowebm/flowebm/internal/crosscheck"
)

// cross reports the cross-checks skipped for lack of a peer tool, in one
// line when the tests end.
var cross crosscheck.Recorder

// TestMain runs the tests on the BLAS FLOWEBM_BLAS selects (as the
// command line does): OpenBLAS where it loads, unless "go".
func TestMain(m *testing.M) {
	if _, err := UseBLASFromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	cross.Main(m)
}

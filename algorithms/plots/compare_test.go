package plots

import (
	"os"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/algorithms/training"
)

// Round 105 A1: the held-out log-likelihood figure drew every
// evaluation's, those whose log Z rests on an importance-sampling ESS
// below 1% (a spike of −4.49 at 0.03%) as real. They are left out, the
// title saying how many.
func TestCompareLeavesOutUnreliableLL(t *testing.T) {
	evals := []training.Eval{
		{Iter: 10, HeldOutLL: -1.0, LogZ: metrics.LogZEstimate{ESS: 0.3}},
		{Iter: 20, HeldOutLL: -4.49, LogZ: metrics.LogZEstimate{ESS: 0.0003}},
		{Iter: 30, HeldOutLL: -0.95, LogZ: metrics.LogZEstimate{ESS: 0.4}},
	}
	dir := t.TempDir()
	paths, err := Compare([]Named{{Name: "run", Evals: evals}}, dir, SVG)
	if err != nil {
		t.Fatal(err)
	}
	var ll string
	for _, p := range paths {
		if strings.HasSuffix(p, "held-out-ll.svg") {
			ll = p
		}
	}
	b, err := os.ReadFile(ll)
	if err != nil {
		t.Fatalf("%v (figures %v)", err, paths)
	}
	if !strings.Contains(string(b), "1 evaluation left out: its log Z rests on an importance-sampling ESS below 1%") {
		t.Error("the title does not say that an evaluation was left out")
	}
	if strings.Contains(string(b), ">-4</text>") {
		t.Error("the y axis reaches the unreliable evaluation's −4.49")
	}
}

package plots

import (
	"math"
	"os"
	"slices"
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

// Left from round 105: the held-out LL curve joined its neighbours
// across the evaluations it left out, as if measured there. It breaks
// there; a value not measured (NaN in another figure, such as R-hat
// between its evaluations) is still joined across.
func TestCompareBreaksAtLeftOutLL(t *testing.T) {
	evals := []training.Eval{
		{Iter: 10, HeldOutLL: -1.0, LogZ: metrics.LogZEstimate{ESS: 0.3}, MaxRHat: 1.2},
		{Iter: 20, HeldOutLL: -0.9, LogZ: metrics.LogZEstimate{ESS: 0.3}, MaxRHat: math.NaN()},
		{Iter: 30, HeldOutLL: -4.49, LogZ: metrics.LogZEstimate{ESS: 0.0003}, MaxRHat: math.NaN()},
		{Iter: 40, HeldOutLL: -0.95, LogZ: metrics.LogZEstimate{ESS: 0.4}, MaxRHat: 1.05},
	}
	figs, files, err := CompareFigures([]Named{{Name: "run", Evals: evals}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{"held-out-ll": {2, 1}, "max-rhat": {2}}
	for i, fig := range figs {
		w, ok := want[files[i]]
		if !ok {
			continue
		}
		var got []int
		for _, s := range fig.segments(fig.Curves[0]) {
			got = append(got, len(s))
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s: segments of %v points, want %v", files[i], got, w)
		}
	}
}

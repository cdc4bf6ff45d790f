package diagnostics

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
)

// Summarize runs its dimensions on every core: its summaries are the
// same on 1 and on 4 goroutines, and MaxRHat, which sample prints, is
// the largest of their RHat.
func TestSummarizeWhateverTheCores(t *testing.T) {
	chains, draws, dims := 4, 50, 9
	x := make([]float64, chains*draws*dims)
	rng := rand.New(rand.NewPCG(5, 4))
	for i := range x {
		x[i] = rng.NormFloat64() + float64(i%dims)*float64(i/(draws*dims)) // chains apart in the later dimensions
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one, err := Summarize(x, chains, draws, dims)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(4)
	four, _ := Summarize(x, chains, draws, dims)
	if !reflect.DeepEqual(one, four) {
		t.Error("the summaries differ between 1 and 4 goroutines")
	}
	worst := math.Inf(-1)
	for _, s := range one {
		worst = math.Max(worst, s.RHat)
	}
	if got := MaxRHat(x, chains, draws, dims); got != worst || !(worst > 1.1) {
		t.Errorf("MaxRHat %v, want the summaries' largest R-hat %v (> 1.1)", got, worst)
	}
}

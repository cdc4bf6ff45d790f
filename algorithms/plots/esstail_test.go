package plots

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// Round 85: where the tail ESS is undefined (the indicator of the 5% or
// 95% quantile constant over all draws) but the bulk ESS is not, the ESS
// figure drew the bulk curve alone, unsaid; its title says why. Here 97%
// of the draws are 1, so the 95% quantile is 1 and every draw is ≤ it.
func TestESSFigureNotesUndefinedTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([][]float64, 4)
	for c := range x {
		x[c] = make([]float64, 100)
		for i := range x[c] {
			x[c][i] = 1
			if rng.Float64() < 0.03 {
				x[c][i] = 0
			}
		}
	}
	if b, tl := diagnostics.BulkESS(x), diagnostics.TailESS(x); math.IsNaN(b) || !math.IsNaN(tl) {
		t.Fatalf("bulk ESS %v, tail ESS %v: want a defined bulk, an undefined tail", b, tl)
	}
	f := essFigure(x, "mu")
	if !strings.Contains(f.Title, "\ntail ESS undefined: the indicator of the 5% or 95% quantile is constant over all draws") {
		t.Errorf("title %q", f.Title)
	}
	rng = rand.New(rand.NewPCG(3, 4))
	for c := range x {
		for i := range x[c] {
			x[c][i] = rng.NormFloat64()
		}
	}
	if f := essFigure(x, "mu"); strings.Contains(f.Title, "undefined") {
		t.Errorf("normal draws: title %q", f.Title)
	}
}

package training

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/jsonfile"
)

// Round 104 B1: CheckFinal finds a field of metrics.json's final
// evaluation that is not the run's (a weight, a nested R-hat field), and
// a grid_held_out_ll that grid_log_z does not give; NaN written as null
// compares equal, and fields the evaluation lacks are not compared.
func TestCheckFinal(t *testing.T) {
	last := Eval{Iter: 7, EBMWeights: []float64{0.25, 0.75}, HeldOutLL: -1.5, MaxRHat: math.NaN(), MaxRHatClassic: 1.01,
		Stats: algorithms.IterStats{Iter: 7, Loss: 0.1, FlowLL: math.NaN()}}
	last.LogZ.LogZ, last.LogZ.SE = -2, 0.01
	z, ll := -2.5, -1.5+(-2)-(-2.5)
	write := func(final Eval, gridLL float64) string {
		path := filepath.Join(t.TempDir(), "metrics.json")
		m := map[string]any{"final": final, "grid_log_z": z, "grid_held_out_ll": gridLL, "other": 3}
		if err := jsonfile.Write(path, m); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if err := CheckFinal(write(last, ll), last, "as its checkpoint holds it"); err != nil {
		t.Errorf("the run's own: %v", err)
	}
	edited := last
	edited.EBMWeights = []float64{0.26, 0.74}
	if err := CheckFinal(write(edited, ll), last, "as its checkpoint holds it"); err == nil || !strings.Contains(err.Error(), `field "final.ebm_weights" is not the run's last evaluation (iteration 7`) {
		t.Errorf("edited weight: %v", err)
	}
	edited = last
	edited.Stats.Loss = 0.2
	if err := CheckFinal(write(edited, ll), last, "as its checkpoint holds it"); err == nil || !strings.Contains(err.Error(), `"final.stats.loss"`) {
		t.Errorf("edited loss: %v", err)
	}
	if err := CheckFinal(write(last, ll+0.1), last, "as its checkpoint holds it"); err == nil || !strings.Contains(err.Error(), `fields "grid_log_z" (-2.5) and "grid_held_out_ll" (`) {
		t.Errorf("edited grid_held_out_ll: %v", err)
	}
	fewer := last
	fewer.EBMWeights = nil
	if err := CheckFinal(write(last, ll), fewer, "as its checkpoint holds it"); err != nil {
		t.Errorf("a field the evaluation lacks: %v", err)
	}
}

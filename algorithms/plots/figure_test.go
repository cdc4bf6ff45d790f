package plots

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"gonum.org/v1/plot/plotter"
)

// R-hat plots read between 1 and 10: the log axis labels values there
// (1.01 … 1.5 near 1, then 2 and 5 in every decade), and the threshold
// lines stay in view.
func TestLogTicksReadable(t *testing.T) {
	for _, r := range [][2]float64{{1.005, 1.3}, {1.02, 30}, {1, 1000}, {3, 8}} {
		var labels []float64
		between := false
		for _, tk := range (logTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			if tk.Value < r[0] || tk.Value > r[1] {
				t.Errorf("range %v: tick %v outside", r, tk.Value)
			}
			labels = append(labels, tk.Value)
			between = between || (tk.Value > 1 && tk.Value < 10)
		}
		if len(labels) < 2 || !between {
			t.Errorf("range %v: labelled ticks %v", r, labels)
		}
	}
	fig := Figure{Title: "R-hat", XLabel: "iteration", YLabel: "max R-hat", LogY: true, Thresholds: RHatThresholds,
		Curves: []Curve{{Name: "rank-normalised", Points: plotter.XYs{{X: 0, Y: 30}, {X: 20, Y: 1.3}, {X: 40, Y: 1.2}}}}}
	if err := fig.Save(filepath.Join(t.TempDir(), "rhat.png")); err != nil {
		t.Fatal(err)
	}
}

// Weights plots: the y range follows the truths and the weights (eight
// truths at 0.125 are not squeezed into [0, 1]), ten classes get ten
// colours, and a figure with many curves writes its legend beside the plot.
func TestWeightsPlotReadable(t *testing.T) {
	truths := []float64{0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125}
	evals := []algorithms.Eval{{Iter: 0, EBMWeights: []float64{0.1, 0.15, 0.12, 0.13, 0.125, 0.125, 0.11, 0.135}}}
	lo, hi := weightRange(truths, evals)
	if !(lo > 0.05 && lo < 0.1 && hi > 0.15 && hi < 0.2) {
		t.Errorf("weight range [%v, %v], want about [0.08, 0.17]", lo, hi)
	}
	seen := map[any]bool{}
	for k := 0; k < 10; k++ {
		seen[plotColor(k)] = true
	}
	if len(seen) != 10 {
		t.Errorf("%d distinct colours for ten classes", len(seen))
	}
	fig := Figure{Title: "weights", XLabel: "iteration", YLabel: "weight", YMin: lo, YMax: hi}
	for k, w := range truths {
		fig.Curves = append(fig.Curves, Curve{Name: fmt.Sprintf("mode %d", k+1), Points: plotter.XYs{{X: 0, Y: evals[0].EBMWeights[k]}, {X: 1, Y: w}}, Ref: w, HasRef: true})
	}
	if err := fig.Save(filepath.Join(t.TempDir(), "w.png")); err != nil {
		t.Fatal(err)
	}
}

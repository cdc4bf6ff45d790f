package algorithms

import (
	"path/filepath"
	"testing"

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
	if err := fig.WritePNG(filepath.Join(t.TempDir(), "rhat.png")); err != nil {
		t.Fatal(err)
	}
}

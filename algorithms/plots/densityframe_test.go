package plots

import (
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms/metrics"
)

// Round 89 B4 (with experiments.View): a density figure framed on a data
// set's bulk says how many points lie beyond the frame, and its axes stay
// on the frame (adding the points had widened them to every point).
func TestDensityCountsPointsBeyondTheFrame(t *testing.T) {
	g := metrics.NewGridAt([2]float64{1, 0}, 1, 2, 20)
	if err := g.Fill(func(x mat.Matrix, out []float64) error { clear(out); return nil }); err != nil {
		t.Fatal(err)
	}
	d := Density{Grid: g, Data: mat.NewDense(3, 2, []float64{0.5, 0, 40, 30, 1.5, -1.9}), Samples: mat.NewDense(1, 2, []float64{1, 1})}
	f := d.layout()
	if f.main.X.Min != 0 || f.main.X.Max != 2 || f.main.Y.Min != -2 || f.main.Y.Max != 2 {
		t.Errorf("axes [%v, %v] × [%v, %v], want [0, 2] × [-2, 2]", f.main.X.Min, f.main.X.Max, f.main.Y.Min, f.main.Y.Max)
	}
	if len(f.legend) != 2 || f.legend[0].text != "samples (1 of 1)" || f.legend[1].text != "data (3 of 3);\n1 beyond the frame" {
		t.Errorf("legend %+v", f.legend)
	}
}

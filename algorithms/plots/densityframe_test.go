package plots

import (
	"math"
	"path/filepath"
	"strings"
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

// Round 95 A2: a grid whose quadrature could not normalise the EBM held
// densities of e^1000 (beyond float64): the colour bar panicked ("ColorMap
// Max==Min") and the run's outputs were never written. The figure is drawn
// relative to its largest density, the title saying why; a grid of NaN
// draws one colour.
func TestDensityBeyondFloat64Drawn(t *testing.T) {
	for _, c := range []struct {
		name string
		logp float64
		note string
	}{{"overflow", 1000, "beyond float64"}, {"nan", math.NaN(), ""}} {
		g := metrics.NewGrid(1, 10)
		for i := range g.LogDensity {
			g.LogDensity[i] = c.logp - float64(i%10)
		}
		path := filepath.Join(t.TempDir(), "d.png")
		if err := (Density{Title: "t", Grid: g}).Save(path); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := Density{Title: "t", Grid: g}.layout()
		if !strings.Contains(f.main.Title.Text, c.note) || (c.note != "") != (f.bar.Y.Label.Text == "EBM density ÷ its largest") {
			t.Errorf("%s: title %q, colour bar %q", c.name, f.main.Title.Text, f.bar.Y.Label.Text)
		}
	}
}

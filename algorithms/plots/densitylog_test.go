package plots

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms/metrics"
)

// Round 99 A2: the density of a sharp mode (σ 0.05, weight 0.3) beside a
// broad one (σ 1.5, 0.7) was drawn on a linear scale up to the sharp
// peak: the broad mode, most of the mass, had the colour of nothing. Such
// a grid (over half its mass below a twentieth of the peak) is drawn on
// a log scale, which the colour bar and title say: the broad mode's
// centre then sits over a tenth of the colour range above the floor; a
// single Gaussian stays linear.
func TestDensityLogScaleWherePeakHidesMass(t *testing.T) {
	fill := func(logp func(a, b float64) float64) *metrics.Grid {
		g := metrics.NewGridAt([2]float64{0, 0}, 8, 8, 200)
		if err := g.Fill(func(x mat.Matrix, out []float64) error {
			for i := range out {
				out[i] = logp(x.At(i, 0), x.At(i, 1))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	normal := func(a, b, ma, mb, s float64) float64 {
		return math.Exp(-((a-ma)*(a-ma)+(b-mb)*(b-mb))/(2*s*s)) / (2 * math.Pi * s * s)
	}
	sharp := fill(func(a, b float64) float64 {
		return math.Log(0.3*normal(a, b, -4, 0, 0.05) + 0.7*normal(a, b, 3, 1, 1.5))
	})
	fig := Density{Title: "t", Grid: sharp}.layout()
	if fig.bar.Y.Label.Text != "log10 EBM density" || !strings.Contains(fig.main.Title.Text, "log colour scale") {
		t.Fatalf("sharp and broad: colour bar %q, title %q", fig.bar.Y.Label.Text, fig.main.Title.Text)
	}
	xyz := gridXYZ{g: sharp}
	xyz.log10, xyz.floor = xyz.peakHides()
	broadCentre := xyz.Z(137, 112) // the cell holding (3, 1)
	if frac := (broadCentre - fig.heat.Min) / (fig.heat.Max - fig.heat.Min); frac < 0.1 {
		t.Errorf("the broad mode's centre at %.3f of the colour range", frac)
	}
	smooth := fill(func(a, b float64) float64 { return math.Log(normal(a, b, 0, 0, 1)) })
	if fig := (Density{Title: "t", Grid: smooth}).layout(); fig.bar.Y.Label.Text != "EBM density" {
		t.Errorf("one Gaussian: colour bar %q", fig.bar.Y.Label.Text)
	}
}

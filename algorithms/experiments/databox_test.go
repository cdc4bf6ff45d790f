package experiments

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms/metrics"
)

// Round 84 A1: with --standardize none, a data set's quadrature box was
// centred on the origin, so data far from it got a box many times wider
// than their range, and coarse cells. The box is centred on the data's
// midrange where the origin would widen it by more than half; standardised
// data (about the origin) keep the box about the origin.
func TestDataBoxCentre(t *testing.T) {
	for _, c := range []struct {
		name   string
		pts    []float64
		center [2]float64
		bx, by float64
	}{
		{"standardised", []float64{-1.7, -2, 2.1, 1.9, 0.3, -0.2}, [2]float64{0, 0}, 2.5, 2.5},
		{"off the origin", []float64{99, -51, 101, -49, 100.2, -50.5}, [2]float64{100, -50}, 1.5, 1.5},
		{"one axis off", []float64{-1, 20, 1, 22, 0, 21}, [2]float64{0, 21}, 1.5, 1.5},
	} {
		x := mat.NewDense(len(c.pts)/2, 2, c.pts)
		center, bx, by := dataBox(x)
		if center != c.center || bx != c.bx || by != c.by {
			t.Errorf("%s: centre %v, half-widths %v, %v; want %v, %v, %v", c.name, center, bx, by, c.center, c.bx, c.by)
		}
		// Every point is inside the box, in a cell of the grid.
		g := metrics.NewGridAt(center, bx, by, 50)
		for i, v := range g.LogDensityAt(x) {
			if math.IsNaN(v) {
				t.Errorf("%s: point %d outside the grid", c.name, i)
			}
		}
	}
}

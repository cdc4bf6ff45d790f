package experiments

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/io/data"
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

// Round 89 B4: a data set with a far outlier drew its density figure on a
// box of all its points, the bulk in 1% of the image. The experiment's
// View frames the bulk (all but the 0.5% outermost points along each
// axis) where the box is over three times as wide; data without outliers
// have no View.
func TestBulkViewOfFarOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(89, 4))
	pts := func(outliers int) *mat.Dense {
		x := mat.NewDense(2000+outliers, 2, nil)
		for i := range 2000 {
			x.Set(i, 0, rng.NormFloat64())
			x.Set(i, 1, 0.5*rng.NormFloat64())
		}
		for i := range outliers {
			x.Set(2000+i, 0, 40)
			x.Set(2000+i, 1, 30)
		}
		return x
	}
	opt := DataSetOptions{Standardize: data.NoScaling}
	e, _, err := DataSet("o.csv", pts(6), opt, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	v := e.View
	if !(v.Box > 0 && v.Box < e.Box/3 && v.BoxY < e.BoxY/3) {
		t.Fatalf("box ±%v × ±%v about %v, view %+v: want the bulk's, under a third", e.Box, e.BoxY, e.Center, v)
	}
	// The bulk (|x| < 2.6 sd along each axis: all but ~1% of it) is in view.
	in := 0
	tr := e.TrainSet.RawMatrix()
	for i := range tr.Rows {
		a, b := tr.Data[i*tr.Stride], tr.Data[i*tr.Stride+1]
		if math.Abs(a-v.Center[0]) <= v.Box && math.Abs(b-v.Center[1]) <= v.BoxY {
			in++
		}
	}
	if frac := float64(in) / float64(tr.Rows); frac < 0.99 || in == tr.Rows {
		t.Errorf("%.4f of the training rows in view, want the bulk (≥ 0.99) without the outliers", frac)
	}
	plain, _, err := DataSet("p.csv", pts(0), opt, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if plain.View != (View{}) {
		t.Errorf("no outliers: view %+v, want none", plain.View)
	}
}

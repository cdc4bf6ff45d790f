package metrics

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Round 88 A2: FillCovering doubled a data set's box along with its
// cells' width (±4.5 to ±18 at 200 cells), and the zone weights of a
// sharp EBM moved by 0.018 from their converged value; with sharper
// features the doubled cells missed them, and the grid grew on the tail
// alone to ±1e12 (weights 0.5, 0.5). Growth stops where the grown grid
// loses mass, and a grid that grew is refined over the part that holds
// the mass, with twice the cells. Here: N((−0.41, 0), 0.1²) and
// N((0.57, 0), 0.1²) weighted 0.3 and 0.7, and 2% of the mass in a
// symmetric Cauchy tail of scale 2 (per axis), so the half-plane x < 0
// holds 0.98·0.3 + 0.02·0.5 = 0.304. Unrefined, the grid of ±32 gives
// 0.329.
func TestFillCoveringRefinesAGrownGrid(t *testing.T) {
	logp := func(x mat.Matrix, out []float64) error {
		for i := range out {
			a, b := x.At(i, 0), x.At(i, 1)
			peak := func(m, w float64) float64 {
				return w * math.Exp(-((a-m)*(a-m)+b*b)/(2*0.01)) / (2 * math.Pi * 0.01)
			}
			tail := 0.02 / (4 * math.Pi * math.Pi * (1 + a*a/4) * (1 + b*b/4))
			out[i] = math.Log(0.98*(peak(-0.41, 0.3)+peak(0.57, 0.7)) + tail)
		}
		return nil
	}
	left := func(g *Grid) float64 {
		zones := make([]int, g.N*g.N)
		for i := range zones {
			if g.Points.At(i, 0) > 0 {
				zones[i] = 1
			}
		}
		return g.ZoneWeights(CellZones{Zone: zones}, 2)[0]
	}
	g, err := NewGrid(1, 200).FillCovering(logp)
	if err != nil {
		t.Fatal(err)
	}
	if g.N != 400 || !(g.Box < 64) {
		t.Errorf("the grid was not refined: N %d, half-widths %v, %v", g.N, g.Box, g.BoxY)
	}
	// The tail left beyond the box (a few per cent of the 2%, split
	// evenly between the half-planes) moves the weight by under 0.001:
	// 0.002 is the midpoint rule's error on the refined cells besides.
	if w := left(g); math.Abs(w-0.304) > 0.002 {
		t.Errorf("left weight %.4f, want 0.304 ± 0.002", w)
	}
}

// Round 88 A1: MassBeyond measures the mass beyond a grid's box on a
// grid of twice its half-widths: for N(0, I) and the box ±2, the mass
// beyond the box and within ±4 is (erf(4/√2)² − erf(2/√2)²), 0.0909; the
// coarse midpoint rule is within 1e-3 of it.
func TestMassBeyond(t *testing.T) {
	g := NewGrid(2, 200)
	if err := g.Fill(stdNormal2D); err != nil {
		t.Fatal(err)
	}
	m, err := g.MassBeyond(stdNormal2D)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Pow(math.Erf(4/math.Sqrt2), 2) - math.Pow(math.Erf(2/math.Sqrt2), 2)
	if math.Abs(m-want) > 1e-3 {
		t.Errorf("mass beyond ±2: %v, want %v", m, want)
	}
}

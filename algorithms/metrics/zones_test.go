package metrics

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// nearestOf is the nearest-mode zone of each row, ties to the first mode
// (as diagnostics.NearestMode).
func nearestOf(modes [][2]float64) func(x mat.Matrix) []int {
	return func(x mat.Matrix) []int {
		r, _ := x.Dims()
		z := make([]int, r)
		for i := range z {
			best := math.Inf(1)
			for k, m := range modes {
				dx, dy := x.At(i, 0)-m[0], x.At(i, 1)-m[1]
				if d := dx*dx + dy*dy; d < best {
					best, z[i] = d, k
				}
			}
		}
		return z
	}
}

// Round 89 A3: a cell that a zone boundary crosses went wholly to the zone
// of its centre. A uniform density on [−1, 1]² with modes at (−0.3, 0)
// and (0.7, 0) has zone 0 = {x < 0.2}, of weight 0.6 exactly; on 7 cells
// per axis the boundary crosses the column of cells [0.143, 0.429], whose
// centre is in zone 1: the centre rule gives 4/7 = 0.571. Divided at 8
// sub-points per axis, a crossed cell's fraction is within half a
// sub-cell (h/16) of its own, so the weight within h/32 = 0.009.
func TestZoneWeightsDivideCrossedCells(t *testing.T) {
	g := NewGrid(1, 7)
	if err := g.Fill(func(x mat.Matrix, out []float64) error { clear(out); return nil }); err != nil {
		t.Fatal(err)
	}
	zoneOf := nearestOf([][2]float64{{-0.3, 0}, {0.7, 0}})
	cz := g.Zones(zoneOf)
	centre := g.ZoneWeights(CellZones{Zone: cz.Zone}, 2)
	w := g.ZoneWeights(cz, 2)
	h, _ := g.Cell()
	if math.Abs(w[0]-0.6) > h/32 || math.Abs(w[0]+w[1]-1) > 1e-15 {
		t.Errorf("weights %v, want 0.6 ± %.3g", w, h/32)
	}
	if math.Abs(centre[0]-0.6) < 0.02 {
		t.Errorf("the centre rule gives %v: the test shows nothing", centre)
	}
	if len(cz.Sub) != 2*7 { // the crossed column and its neighbour left of the boundary
		t.Errorf("%d cells divided, want 14", len(cz.Sub))
	}
}

// A broad mixture 0.3 N((−1, −1), I) + 0.7 N((1, 1), I) has zone 0 =
// {x + y < 0} of weight 0.3 Φ(√2) + 0.7 (1 − Φ(√2)) exactly. On the
// default 200 cells per axis of [−6, 6]² the boundary runs through the
// centres of the anti-diagonal's cells (ties go to zone 0), and the
// centre rule is off by their half mass; divided, the weight is within
// 1e-4 (the midpoint rule's error, of order h² = 4e-3 times the density's
// curvature, and the mass beyond ±6, 1e-8).
func TestZoneWeightsOfBroadMixture(t *testing.T) {
	logp := func(x mat.Matrix, out []float64) error {
		r, _ := x.Dims()
		for i := range r {
			s := 0.0
			for _, c := range []struct{ w, m float64 }{{0.3, -1}, {0.7, 1}} {
				a, b := x.At(i, 0)-c.m, x.At(i, 1)-c.m
				s += c.w * math.Exp(-(a*a+b*b)/2) / (2 * math.Pi)
			}
			out[i] = math.Log(s)
		}
		return nil
	}
	g := NewGrid(6, 200)
	if err := g.Fill(logp); err != nil {
		t.Fatal(err)
	}
	phi := 0.5 * math.Erfc(-1) // Φ(√2)
	want := 0.3*phi + 0.7*(1-phi)
	cz := g.Zones(nearestOf([][2]float64{{-1, -1}, {1, 1}}))
	w := g.ZoneWeights(cz, 2)
	centre := g.ZoneWeights(CellZones{Zone: cz.Zone}, 2)
	t.Logf("want %.6f, divided %.6f, centre rule %.6f", want, w[0], centre[0])
	if math.Abs(w[0]-want) > 1e-4 {
		t.Errorf("zone 0 weight %v, want %v ± 1e-4", w[0], want)
	}
	if math.Abs(centre[0]-want) < 1e-3 {
		t.Errorf("the centre rule gives %v: the test shows nothing", centre[0])
	}
}

package metrics

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ZoneSubCells is the number of sub-points per axis at which a cell that
// a zone boundary crosses is divided among the zones.
const ZoneSubCells = 8

// CellZones says which zone each cell of a grid lies in: a cell wholly in
// one zone by its centre's zone; a cell that a zone boundary crosses (one
// whose eight neighbours' centres are not all in its centre's zone) by
// the zones of its sub-points (see subPoints), among which ZoneWeights
// divides the cell's mass. Giving a crossed cell wholly to its centre's
// zone put weights up to 0.004 off at 200 cells per axis (round 89 A3).
type CellZones struct {
	// Zone is the zone of each cell's centre, as Grid.Points.
	Zone []int
	// Sub holds, for each crossed cell, the zones of its sub-points (see
	// subOffset).
	Sub map[int][]int
}

// Zones assigns the grid's cells to zones, zoneOf giving the zone of
// each row of its argument.
func (g *Grid) Zones(zoneOf func(x mat.Matrix) []int) CellZones {
	cz := CellZones{Zone: zoneOf(g.Points), Sub: map[int][]int{}}
	crossed := g.crossedCells(cz.Zone)
	const per = subPoints
	const batch = 8192 / per
	for lo := 0; lo < len(crossed); lo += batch {
		cells := crossed[lo:min(lo+batch, len(crossed))]
		sub := mat.NewDense(len(cells)*per, 2, nil)
		for c, idx := range cells {
			for s := range per {
				dx, dy := g.subOffset(s)
				sub.Set(c*per+s, 0, g.Points.At(idx, 0)+dx)
				sub.Set(c*per+s, 1, g.Points.At(idx, 1)+dy)
			}
		}
		zones := zoneOf(sub)
		for c, idx := range cells {
			cz.Sub[idx] = zones[c*per : (c+1)*per : (c+1)*per]
		}
	}
	return cz
}

// subPoints is the number of sub-points of a crossed cell: a grid of
// ZoneSubCells² shifted off its centre lines by a fraction of a
// sub-cell, and its reflection through the cell's centre. On the grid
// itself, a boundary through the cell's centre at slope 0, ±1 or ∞ (the
// built-in experiments' symmetric modes) ran through a row of sub-points,
// ties all given to one zone (4e-4 on a broad mixture).
const subPoints = 2 * ZoneSubCells * ZoneSubCells

// subOffset is the offset of sub-point s from its cell's centre.
func (g *Grid) subOffset(s int) (dx, dy float64) {
	hx, hy := g.Cell()
	const n = ZoneSubCells
	sign := 1.0
	if s >= n*n {
		s, sign = s-n*n, -1
	}
	return sign * ((float64(s%n)+0.5+0.19)/n - 0.5) * hx, sign * ((float64(s/n)+0.5+0.07)/n - 0.5) * hy
}

// crossedCells are the cells whose eight neighbours' centres are not all in
// their own centre's zone, in increasing order.
func (g *Grid) crossedCells(zone []int) []int {
	n := g.N
	var out []int
	for i := range n {
		for j := range n {
			if g.neighbourDiffers(zone, i, j) {
				out = append(out, i*n+j)
			}
		}
	}
	return out
}

func (g *Grid) neighbourDiffers(zone []int, i, j int) bool {
	n, z := g.N, zone[i*g.N+j]
	for di := -1; di <= 1; di++ {
		for dj := -1; dj <= 1; dj++ {
			a, b := i+di, j+dj
			if a >= 0 && b >= 0 && a < n && b < n && zone[a*n+b] != z {
				return true
			}
		}
	}
	return false
}

// ZoneWeights returns the mass of the normalised grid density in each of
// k zones (the paper's App. C.3 quadrature with nearest-mode zones; see
// experiments.Experiment.Zones), a crossed cell's mass divided evenly
// among its sub-points' zones. (Dividing it as the log-density's slope
// across the cell spreads it moved weights by 3e-5 at most on Gaussian
// mixtures at 50–200 cells per axis, below the midpoint rule's own error:
// not done.)
func (g *Grid) ZoneWeights(cz CellZones, k int) []float64 {
	w := make([]float64, k)
	area := g.CellArea()
	for i, z := range cz.Zone {
		m := math.Exp(g.LogDensity[i]) * area
		sub, ok := cz.Sub[i]
		if !ok {
			w[z] += m
			continue
		}
		for _, zs := range sub {
			w[zs] += m / subPoints
		}
	}
	floats.Scale(1/floats.Sum(w), w)
	return w
}

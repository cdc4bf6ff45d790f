package metrics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/samplers"
	"gonum.org/v1/gonum/mat"
)

// The grid quadrature of an exact mixture recovers its weights; the
// misassignment between zones of the two-modes target is below 1e-6 and the
// 200² grid's quadrature error of the order of 1e-4, so 1e-3 is safe.
func TestGridWeightsOfExactTargets(t *testing.T) {
	for _, exp := range []*experiments.Experiment{experiments.TwoModes(), experiments.FourModes(), experiments.EightGaussians()} {
		g := NewGrid(exp.Box, 200)
		if err := g.Fill(exp.Target.LogDensity); err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.LogZ) > 1e-3 {
			t.Errorf("%s: normalised target has log Z = %v on the grid, want 0 ± 1e-3", exp.Name, g.LogZ)
		}
		w := g.ZoneWeights(g.Zones(exp.Zones), len(exp.Weights))
		for k := range w {
			if math.Abs(w[k]-exp.Weights[k]) > 1e-3 {
				t.Errorf("%s: zone %d weight %v, want %v", exp.Name, k, w[k], exp.Weights[k])
			}
		}
	}
}

// The rings density p_r(|x|)/(2π|x|) integrates to 1 (quadrature 1e-3 on a
// 400² grid of [−5, 5]², where the outer ring's mass beyond 5 is 1e-9).
func TestRingsDensityIsNormalised(t *testing.T) {
	g := NewGrid(5, 400)
	if err := g.Fill(experiments.Rings{}.LogDensity); err != nil {
		t.Fatal(err)
	}
	if math.Abs(g.LogZ) > 1e-3 {
		t.Errorf("rings: log ∫p = %v, want 0 ± 1e-3", g.LogZ)
	}
}

func TestMedianSquaredError(t *testing.T) {
	if m := MedianSquaredError([]float64{1, 2, 3, math.NaN()}, []float64{0, 0, 0, 0}); m != 4 {
		t.Errorf("median of {1, 4, 9} = %v", m)
	}
}

// EstimateLogZ on an unnormalised N(0, I₂)·e^c with a wider Gaussian
// proposal recovers c within 4.5 of its own standard errors.
func TestEstimateLogZ(t *testing.T) {
	const c = 2.5
	logp := func(x mat.Matrix, out []float64) error {
		r, _ := x.Dims()
		for i := 0; i < r; i++ {
			a, b := x.At(i, 0), x.At(i, 1)
			out[i] = c - (a*a+b*b)/2 - math.Log(2*math.Pi)
		}
		return nil
	}
	q, err := samplers.NewNormal([]float64{0, 0}, mat.NewSymDense(2, []float64{2.25, 0, 0, 2.25}))
	if err != nil {
		t.Fatal(err)
	}
	est, err := EstimateLogZ(logp, q, rand.New(rand.NewPCG(1, 2)), 20000)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(est.LogZ-c) > 4.5*est.SE {
		t.Errorf("log Z %v ± %v, want %v", est.LogZ, est.SE, c)
	}
	// ESS fraction for N(0,1) target, N(0, s²) proposal in d dims:
	// (s²/√(2s²−1))^(−d) = (2.25/√3.5)^(−2) ≈ 0.69.
	if math.Abs(est.ESS-0.69) > 0.05 {
		t.Errorf("importance ESS fraction %v, want about 0.69", est.ESS)
	}
}

// Probe 68 B2: a rectangular grid integrates a mixture whose coordinates
// differ in range by 1000 (sd 0.3 and 20, modes at (∓2, ±500), weights
// 0.3, 0.7): log Z within 1e-3 and the weights within 1e-3 (the tolerance
// of the square grid's test above), where a square grid of [−1000, 1000]²
// has cells 10 wide, 30 times the narrow sd, and misses by far more.
func TestRectangularGridQuadrature(t *testing.T) {
	w := []float64{0.3, 0.7}
	logp := func(x mat.Matrix, out []float64) error {
		r, _ := x.Dims()
		for i := 0; i < r; i++ {
			s := 0.0
			for k, sign := range []float64{1, -1} {
				a, b := (x.At(i, 0)+2*sign)/0.3, (x.At(i, 1)-500*sign)/20
				s += w[k] * math.Exp(-(a*a+b*b)/2) / (2 * math.Pi * 0.3 * 20)
			}
			out[i] = math.Log(s)
		}
		return nil
	}
	zones := func(g *Grid) []int {
		z := make([]int, g.N*g.N)
		for i := range z {
			if g.Points.At(i, 1) < 0 {
				z[i] = 1
			}
		}
		return z
	}
	g := NewGridRect(4, 650, 200)
	if err := g.Fill(logp); err != nil {
		t.Fatal(err)
	}
	got := g.ZoneWeights(CellZones{Zone: zones(g)}, 2)
	if math.Abs(g.LogZ) > 1e-3 || math.Abs(got[0]-0.3) > 1e-3 {
		t.Errorf("rectangle: log Z %v, weights %v; want 0 and %v", g.LogZ, got, w)
	}
	sq := NewGrid(1000, 200)
	if err := sq.Fill(logp); err != nil {
		t.Fatal(err)
	}
	if got := sq.ZoneWeights(CellZones{Zone: zones(sq)}, 2); math.Abs(sq.LogZ) < 1e-2 {
		t.Logf("square grid: log Z %v, weights %v", sq.LogZ, got)
		t.Errorf("the square grid integrates the narrow mixture as well as the rectangle: the test shows nothing")
	}
	if hx, hy := g.Cell(); g.CellArea() != hx*hy || hx != 8.0/200 || hy != 1300.0/200 {
		t.Errorf("cells %v × %v, area %v", hx, hy, g.CellArea())
	}
}

// Probe 69 B2: a data set's box holds its points, and the EBM spread well
// beyond them along a narrow axis: the quadrature over the box left out a
// quarter of its mass, unevenly across modes (0.082/0.802/0.116 for
// 0.144/0.659/0.198). FillCovering grows the box until the outer cells
// hold at most CoverMass of the mass: from ±0.005 along y, a mixture of sd
// 0.02 along y (0.3 at x = −2, 0.7 at x = 2, sd 0.3) is integrated to
// log Z 0 and weights 0.3, 0.7 within 1e-3, where the data's box gives
// about 0.2 of the mass.
func TestFillCoveringGrowsTheBox(t *testing.T) {
	logp := func(x mat.Matrix, out []float64) error {
		r, _ := x.Dims()
		for i := 0; i < r; i++ {
			s := 0.0
			for _, c := range []struct{ w, m float64 }{{0.3, -2}, {0.7, 2}} {
				a, b := (x.At(i, 0)-c.m)/0.3, x.At(i, 1)/0.02
				s += c.w * math.Exp(-(a*a+b*b)/2) / (2 * math.Pi * 0.3 * 0.02)
			}
			out[i] = math.Log(s)
		}
		return nil
	}
	small := NewGridRect(3.5, 0.005, 200)
	if err := small.Fill(logp); err != nil {
		t.Fatal(err)
	}
	if small.LogZ > math.Log(0.3) {
		t.Fatalf("the data's box holds %v of the mass: the test shows nothing", math.Exp(small.LogZ))
	}
	g, err := NewGridRect(3.5, 0.005, 200).FillCovering(logp)
	if err != nil {
		t.Fatal(err)
	}
	z := make([]int, g.N*g.N)
	for i := range z {
		if g.Points.At(i, 0) > 0 {
			z[i] = 1
		}
	}
	w := g.ZoneWeights(CellZones{Zone: z}, 2)
	if bx, by := g.HalfWidths(); bx != 3.5 || by <= 0.005 || math.Abs(g.LogZ) > 1e-3 || math.Abs(w[0]-0.3) > 1e-3 {
		t.Errorf("grown to ±%v × ±%v: log Z %v, weights %v", bx, by, g.LogZ, w)
	}
	if ex, ey := g.edgeMass(); ex > CoverMass || ey > CoverMass {
		t.Errorf("edge mass %v, %v after growing", ex, ey)
	}
}

// Probe 70 A1, A2: growth capped at 10 doublings returned the last grid
// unfilled (uniform: the EBM weights were the zones' areas), and the
// outermost cells alone stopped it with 18% of a broad tail's mass
// outside. From a box of ±1e-6 along y, a density of sd 1 along y is
// reached (20 doublings) and filled; a core of sd 0.5 with a fifth of the
// mass in a tail of sd 10 along y is held within 1e-2 (the tail's mass
// beyond the box and the cells' width of the core), and its modes'
// weights 0.3, 0.7 within 1e-2.
func TestFillCoveringReachesTheMass(t *testing.T) {
	mixture := func(coreSD, tailSD, tail float64) func(x mat.Matrix, out []float64) error {
		return func(x mat.Matrix, out []float64) error {
			r, _ := x.Dims()
			for i := 0; i < r; i++ {
				s := 0.0
				for _, c := range []struct{ w, m float64 }{{0.3, -2}, {0.7, 2}} {
					a := (x.At(i, 0) - c.m) / 0.3
					for _, y := range []struct{ w, sd float64 }{{1 - tail, coreSD}, {tail, tailSD}} {
						b := x.At(i, 1) / y.sd
						s += c.w * y.w * math.Exp(-(a*a+b*b)/2) / (2 * math.Pi * 0.3 * y.sd)
					}
				}
				out[i] = math.Log(s)
			}
			return nil
		}
	}
	weights := func(g *Grid) []float64 {
		z := make([]int, g.N*g.N)
		for i := range z {
			if g.Points.At(i, 0) > 0 {
				z[i] = 1
			}
		}
		return g.ZoneWeights(CellZones{Zone: z}, 2)
	}
	for _, c := range []struct {
		name           string
		box            float64
		coreSD, tailSD float64
		tail           float64
	}{{"narrow box", 1e-6, 1, 1, 0}, {"broad tail", 0.6, 0.5, 10, 0.2}} {
		g, err := NewGridRect(3.5, c.box, 200).FillCovering(mixture(c.coreSD, c.tailSD, c.tail))
		if err != nil {
			t.Fatal(err)
		}
		w := weights(g)
		if _, by := g.HalfWidths(); math.Abs(g.LogZ) > 1e-2 || math.Abs(w[0]-0.3) > 1e-2 {
			t.Errorf("%s: grown to ±%v along y: log Z %v, weights %v", c.name, by, g.LogZ, w)
		}
	}
}

// Round 81 B8: the view of a grown grid over the data's box keeps the
// grid's normalisation and says what mass it holds: for N(0, I) filled
// over ±8, the window ±1 holds erf(1/√2)² = 0.46606 of it (the 200²
// midpoint rule on the window is within 1e-4 of that), and its density
// at the centre is 1/(2π) within the same.
func TestGridWindow(t *testing.T) {
	logp := stdNormal2D
	g := NewGrid(8, 200)
	if err := g.Fill(logp); err != nil {
		t.Fatal(err)
	}
	w, mass, err := g.Window([2]float64{}, 1, 1, logp)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Pow(math.Erf(1/math.Sqrt2), 2)
	if math.Abs(mass-want) > 1e-4 {
		t.Errorf("window mass %v, want %v", mass, want)
	}
	if bx, by := w.HalfWidths(); bx != 1 || by != 1 || w.N != g.N || w.LogZ != g.LogZ {
		t.Errorf("window ±%v × ±%v of %d cells, log Z %v (grid's %v)", bx, by, w.N, w.LogZ, g.LogZ)
	}
	centre := w.LogDensityAt(mat.NewDense(1, 2, []float64{0, 0}))[0]
	if math.Abs(math.Exp(centre)-1/(2*math.Pi)) > 1e-4 {
		t.Errorf("density at 0: %v, want %v", math.Exp(centre), 1/(2*math.Pi))
	}
}

// Round 84 A4: N(0, I) has 0.27% of its mass beyond x = ±3 and 0.37%
// beyond y = ±2.9, while the outermost cells of a 200² grid on ±3 × ±2.9
// hold less than CoverMass: the grid grew on the edge cells' mass alone,
// and quadrature left the tails out. Both axes grow, and the grid then
// holds the mass to 1e-3.
func TestFillCoveringSeesMassBeyondThinEdges(t *testing.T) {
	logp := stdNormal2D
	small := NewGridRect(3, 2.9, 200)
	if err := small.Fill(logp); err != nil {
		t.Fatal(err)
	}
	if ex, ey := small.edgeMass(); ex > CoverMass || ey > CoverMass {
		t.Fatalf("edge masses %v, %v: the test shows nothing", ex, ey)
	}
	g, err := NewGridRect(3, 2.9, 200).FillCovering(logp)
	if err != nil {
		t.Fatal(err)
	}
	if bx, by := g.HalfWidths(); by <= 2.9 || bx <= 3 || math.Abs(g.LogZ) > 1e-3 {
		t.Errorf("grown to ±%v × ±%v, log mass %v", bx, by, g.LogZ)
	}
}

// stdNormal2D is the log-density of N(0, I) in 2D at each row of x.
func stdNormal2D(x mat.Matrix, out []float64) error {
	r, _ := x.Dims()
	for i := 0; i < r; i++ {
		a, b := x.At(i, 0), x.At(i, 1)
		out[i] = -(a*a+b*b)/2 - math.Log(2*math.Pi)
	}
	return nil
}

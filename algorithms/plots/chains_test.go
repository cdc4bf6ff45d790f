package plots

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The chain figures show the first 8 chains; each chain's rank histogram
// holds all its draws; the autocorrelation is 1 at lag 0; the ESS curves
// grow with the draws for iid chains; every figure saves.
func TestChainFigures(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([][]float64, 10)
	for c := range x {
		x[c] = make([]float64, 200)
		for n := range x[c] {
			x[c][n] = rng.NormFloat64()
		}
	}
	figs := ChainFigures(x, "theta", nil)
	if len(figs) != 4 {
		t.Fatalf("%d figures", len(figs))
	}
	dir := t.TempDir()
	for _, f := range figs {
		switch f.Kind {
		case "trace", "rank", "autocorrelation":
			if len(f.Figure.Curves) != 8 {
				t.Errorf("%s: %d curves, want 8 (the first chains)", f.Kind, len(f.Figure.Curves))
			}
		}
		if f.Kind == "rank" {
			for _, c := range f.Figure.Curves {
				sum := 0.0
				for _, p := range c.Points {
					sum += p.Y
				}
				if sum != 200 {
					t.Errorf("rank histogram of %s holds %v draws, want 200", c.Name, sum)
				}
			}
		}
		if f.Kind == "autocorrelation" && math.Abs(f.Figure.Curves[0].Points[0].Y-1) > 1e-12 {
			t.Errorf("autocorrelation at lag 0: %v", f.Figure.Curves[0].Points[0].Y)
		}
		if f.Kind == "ess" {
			b := f.Figure.Curves[0].Points
			if len(b) != 10 || !(b[9].Y > 3*b[1].Y) {
				t.Errorf("bulk ESS of iid chains %v: want 10 points growing with the draws", b)
			}
		}
		if err := f.Figure.Save(filepath.Join(dir, f.Kind+".png")); err != nil {
			t.Errorf("%s: %v", f.Kind, err)
		}
	}
}

// Probe 59 B2: a trace of 40000 draws thinned to 2000 points keeps each
// run's smallest and largest draw, so a 4-draw excursion to 50 shows; the
// points stay in draw order, and a chain that fits is drawn whole.
func TestTraceKeepsSpikes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 59))
	ch := make([]float64, 40000)
	for n := range ch {
		ch[n] = rng.NormFloat64()
	}
	for n := 12345; n < 12349; n++ {
		ch[n] = 50
	}
	pts := tracePoints(ch, maxTracePoints)
	top, low := math.Inf(-1), math.Inf(1)
	for i, p := range pts {
		top, low = math.Max(top, p.Y), math.Min(low, p.Y)
		if i > 0 && !(p.X > pts[i-1].X) {
			t.Fatalf("point %d at draw %v after %v", i, p.X, pts[i-1].X)
		}
	}
	minAll := math.Inf(1)
	for _, v := range ch {
		minAll = math.Min(minAll, v)
	}
	if len(pts) > maxTracePoints || top != 50 || low != minAll {
		t.Errorf("%d points, largest %v (want 50), smallest %v (want %v)", len(pts), top, low, minAll)
	}
	if short := tracePoints(ch[:1500], maxTracePoints); len(short) != 1500 || short[1499].X != 1500 {
		t.Errorf("1500 draws: %d points", len(short))
	}
}

// Probe 59 B7: the autocorrelation and ESS figures of constant chains say
// why they are empty, not "no data yet".
func TestConstantChainsFigures(t *testing.T) {
	x := [][]float64{make([]float64, 100), make([]float64, 100)}
	for n := range x[1] {
		x[0][n], x[1][n] = 1, 1
	}
	dir := t.TempDir()
	for _, f := range ChainFigures(x, "theta", nil) {
		if f.Kind != "autocorrelation" && f.Kind != "ess" {
			continue
		}
		if err := f.Figure.Save(filepath.Join(dir, f.Kind+".svg")); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, f.Kind+".svg"))
		if !strings.Contains(string(b), "every chain is constant") || strings.Contains(string(b), "no data yet") {
			t.Errorf("%s: the title does not say why it is empty", f.Kind)
		}
	}
}

// Probe 63 B3, B4: of 64 chains the first 8 were drawn, with nothing said,
// and a stuck chain 41 was not among them; chains were named by their
// position, not by the file's chain numbers. The chains drawn are those
// whose ranks stray furthest, the titles say how many of how many, and
// the legends use the labels given.
func TestChainFiguresChooseAndName(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 1))
	x := make([][]float64, 64)
	labels := make([]string, 64)
	for c := range x {
		x[c] = make([]float64, 200)
		for n := range x[c] {
			x[c][n] = rng.NormFloat64()
			if c == 40 {
				x[c][n] += 4
			}
		}
		labels[c] = strconv.Itoa(10 * (c + 1))
	}
	for _, f := range ChainFigures(x, "theta", labels) {
		if f.Kind == "ess" {
			continue
		}
		if !strings.Contains(f.Figure.Title, "8 of 64 chains") {
			t.Errorf("%s: title %q", f.Kind, f.Figure.Title)
		}
		if !slices.ContainsFunc(f.Figure.Curves, func(c Curve) bool { return c.Name == "chain 410" }) {
			t.Errorf("%s: the stuck chain 41 (labelled 410) is not drawn", f.Kind)
		}
	}
}

// Round 76 B3: the autocorrelation figure of constant chains had a lag
// axis from -1 to 1; it spans the lags, as the ESS figure spans the draws.
func TestConstantChainsLagAxis(t *testing.T) {
	constant := [][]float64{{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}}
	s := chainSet{x: constant, shown: []int{0, 1}}
	if f := s.acfFigure("mu"); f.Curves != nil || f.XMin != 0 || f.XMax != 4 {
		t.Errorf("autocorrelation of constant chains: curves %v, lags %v..%v, want none over 0..4", f.Curves, f.XMin, f.XMax)
	}
}

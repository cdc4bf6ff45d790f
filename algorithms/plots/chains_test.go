package plots

import (
	"math"
	"math/rand/v2"
	"path/filepath"
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
	figs := ChainFigures(x, "theta")
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

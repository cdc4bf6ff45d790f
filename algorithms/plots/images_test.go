package plots

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// stepHistogram is a density: its area is 1 over the finite values, which
// it counts; values outside [lo, hi] fall into the end bins.
func TestStepHistogramIsADensity(t *testing.T) {
	x := []float64{0.1, 0.2, 0.2, 0.9, math.NaN(), math.Inf(1), 1.5, -3}
	pts, dropped := stepHistogram(x, 0, 1, 4)
	if dropped != 2 {
		t.Errorf("dropped %d non-finite values, want 2", dropped)
	}
	area := 0.0
	for i := 1; i+1 < len(pts); i += 2 {
		area += (pts[i+1].X - pts[i].X) * pts[i].Y
	}
	if math.Abs(area-1) > 1e-12 {
		t.Errorf("area %v, want 1", area)
	}
	// bins of width 0.25: 0.1, 0.2, 0.2 and −3 in the first; 0.9 and 1.5 in the last.
	if got, want := pts[1].Y, 4/(6*0.25); math.Abs(got-want) > 1e-12 {
		t.Errorf("first bin %v, want %v", got, want)
	}
	if got, want := pts[7].Y, 2/(6*0.25); math.Abs(got-want) > 1e-12 {
		t.Errorf("last bin %v, want %v", got, want)
	}
}

// An EnergyHistogram of sets with no finite energy (a diverged run) or
// all-equal energies still draws a figure.
func TestEnergyHistogramDegenerate(t *testing.T) {
	dir := t.TempDir()
	for name, sets := range map[string][]EnergySet{
		"nan.png":   {{Name: "data", Energy: []float64{math.NaN()}}, {Name: "chains"}},
		"equal.png": {{Name: "data", Energy: []float64{3, 3, 3}}},
	} {
		path := filepath.Join(dir, name)
		if err := (EnergyHistogram{Title: name, Sets: sets}).Save(path); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

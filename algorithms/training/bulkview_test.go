package training

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/metrics"
)

// Round 89 B4: the density figure of a data set with far outliers is
// drawn on the data's bulk (experiments.View), the grid's window over it.
func TestDisplayGridOnTheBulk(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	rng := rand.New(rand.NewPCG(89, 5))
	for range 2000 { // the 4 outliers below 0.5% of the rows
		b.WriteString(ftoa(rng.NormFloat64()) + "," + ftoa(rng.NormFloat64()) + "\n")
	}
	for range 4 {
		b.WriteString("40,30\n")
	}
	path := filepath.Join(dir, "o.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := evaluatedDataRun(t, path, filepath.Join(dir, "run"))
	v := r.Experiment.View
	if v.Box == 0 {
		t.Fatalf("no view of the bulk: box ±%v × ±%v", r.Experiment.Box, r.Experiment.BoxY)
	}
	g, inView, err := r.DisplayGrid()
	if err != nil {
		t.Fatal(err)
	}
	if gx, gy := g.HalfWidths(); gx != v.Box || gy != v.BoxY || g.Center != v.Center || !(inView > 0.5 && inView <= 1) {
		t.Errorf("drawn on ±%v × ±%v about %v (%.3f of the mass), want the view %+v", gx, gy, g.Center, inView, v)
	}
	// Round 95 A1: quadrature over the whole box (200 cells over ±1e5 gave
	// the bulk one cell) started from the bulk, growing where the EBM's
	// mass lies beyond it: its log Z is that of 640,000 cells over the
	// whole box to 1e-3 (both midpoint rules, cells of 0.035 and ≤ 0.04 on
	// a density of spread ≥ 0.4).
	q := r.Grid()
	if gx, _ := q.HalfWidths(); gx >= r.Experiment.Box {
		t.Errorf("quadrature on ±%v: not started from the bulk (box ±%v)", gx, r.Experiment.Box)
	}
	fine := metrics.NewGridAt(r.Experiment.Center, r.Experiment.Box, r.Experiment.BoxY, 800)
	if err := r.Trainer.WithAveraged(func() error { return fine.Fill(r.Trainer.EBM.LogDensity) }); err != nil {
		t.Fatal(err)
	}
	if math.Abs(q.LogZ-fine.LogZ) > 1e-3 {
		t.Errorf("grid log Z %v, %v on the whole box's fine grid", q.LogZ, fine.LogZ)
	}
}

// Round 96 A1: an EBM trained on data with 1% far outliers put nearly all
// its mass far from the data's bulk, beyond the quadrature grid, and its
// grid and importance-sampling numbers were printed unqualified.
// MissedMass finds, among the training points and chains beyond the grid,
// one where the EBM's density exceeds the grid's largest: here a grid
// moved off the data (a tenth of a standard deviation wide, 3 away) holds
// far less than the density at the data's centre; the run's own grid
// misses nothing.
func TestMissedMassFound(t *testing.T) {
	dir := t.TempDir()
	writeCSV(t, filepath.Join(dir, "d.csv"))
	r := evaluatedDataRun(t, filepath.Join(dir, "d.csv"), filepath.Join(dir, "run"))
	if m, err := r.MissedMass(); err != nil || m != nil {
		t.Fatalf("the run's own grid: %+v, %v", m, err)
	}
	off := metrics.NewGridAt([2]float64{3, 3}, 0.1, 0.1, 20)
	if err := off.Fill(r.Trainer.EBM.LogDensity); err != nil {
		t.Fatal(err)
	}
	r.grid = off
	m, err := r.MissedMass()
	if err != nil || m == nil || !(m.LogExcess > 1) || len(m.At) != 2 {
		t.Fatalf("off the data: %+v, %v", m, err)
	}
}

// evaluatedDataRun starts a 2-iteration ULA run on the data file path in
// dir and evaluates it once (its grid filled).
func evaluatedDataRun(t *testing.T, path, dir string) *Run {
	t.Helper()
	p, err := NewPlan(Request{Data: &config.Data{File: path}, Algorithm: algorithms.ULA, Iterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Evaluate(algorithms.IterStats{}); err != nil {
		t.Fatal(err)
	}
	return r
}

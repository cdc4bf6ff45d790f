package plots

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Round 87 B3: a trace figure of 8 mixing chains of 3000 draws drew each
// chain 1.5 points wide and opaque, and the last one drawn hid the others.
// Trace curves are half a point wide and translucent; their legend lines
// keep the full width and colour.
func TestTraceCurvesThin(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([][]float64, 8)
	for c := range x {
		x[c] = make([]float64, 3000)
		for i := range x[c] {
			x[c][i] = rng.NormFloat64()
		}
	}
	trace := ChainFigures(x, "mu", nil)[0]
	if trace.Kind != "trace" {
		t.Fatalf("first figure %q", trace.Kind)
	}
	_, entries, err := trace.Figure.layout()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.svg")
	if err := trace.Figure.Save(path); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(path)
	if n := strings.Count(string(svg), "stroke-opacity:0.58824"); n != 8 {
		t.Errorf("%d translucent lines, want the 8 chains'", n)
	}
	if len(entries) != 8 {
		t.Fatalf("%d legend entries, want 8", len(entries))
	}
	for _, e := range entries {
		if l := e.thumb.(*plotter.Line); l.Width != vg.Points(1.5) {
			t.Errorf("%s: legend line %v wide", e.text, l.Width)
		}
	}
	if f := ChainFigures(x, "mu", nil)[2].Figure; f.Curves[0].Thin { // the autocorrelation keeps full lines
		t.Error("autocorrelation curves drawn thin")
	}
}

package plots

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/data"
)

// Every plot is written in the format --plot-format names: the files
// WritePlots writes carry that extension and that format's signature, and
// unknown formats are refused by name.
func TestFormats(t *testing.T) {
	magic := map[Format]string{PNG: "\x89PNG", SVG: "<?xml", PDF: "%PDF-"}
	r := smallRun(t)
	for _, f := range []Format{PNG, SVG, PDF} {
		var g Format
		if err := g.Set(strings.ToUpper(f.String())); err != nil || g != f {
			t.Errorf("Set(%q) = %v, %v", strings.ToUpper(f.String()), g, err)
		}
		r.Dir = t.TempDir()
		if err := WriteRun(r, f); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"density", "weights"} {
			b, err := os.ReadFile(filepath.Join(r.Dir, name+f.Ext()))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte(magic[f])) {
				t.Errorf("%s%s starts %q, want %q", name, f.Ext(), b[:min(8, len(b))], magic[f])
			}
		}
	}
	var g Format
	if err := g.Set("jpeg"); err == nil || !strings.Contains(err.Error(), "png, svg or pdf") {
		t.Errorf("Set(jpeg): %v", err)
	}
	if err := (Figure{}).Save(filepath.Join(t.TempDir(), "x.gif")); err == nil || !strings.Contains(err.Error(), ".png, .svg or .pdf") {
		t.Errorf("Save(x.gif): %v", err)
	}
}

// The density plot is readable: axes named after the data's columns (x1,
// x2 without names), a colour bar labelled with what it measures, legend
// entries that say what the points are and how many are drawn (the
// persistent chains named as such), glyphs large enough to see in the
// legend, and a heat map drawn as one image (no seams between cells).
func TestDensityPlotParts(t *testing.T) {
	g := metrics.NewGrid(3, 20)
	if err := g.Fill(func(x mat.Matrix, out []float64) error {
		for i := range out {
			out[i] = -0.5 * (x.At(i, 0)*x.At(i, 0) + x.At(i, 1)*x.At(i, 1))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	pts := func(n int) *mat.Dense {
		m := mat.NewDense(n, 2, nil)
		for i := range m.RawMatrix().Data {
			m.RawMatrix().Data[i] = rng.NormFloat64()
		}
		return m
	}
	d := Density{Title: "t", Grid: g, Data: pts(800), Samples: pts(64), SamplesName: "persistent chains"}
	fig := d.layout()
	if fig.main.X.Label.Text != "x1" || fig.main.Y.Label.Text != "x2" {
		t.Errorf("default axes %q, %q", fig.main.X.Label.Text, fig.main.Y.Label.Text)
	}
	if fig.bar == nil || fig.bar.Y.Label.Text == "" {
		t.Error("no labelled colour bar")
	}
	if !fig.heat.Rasterized {
		t.Error("heat map drawn cell by cell (seams between cells)")
	}
	var names []string
	for _, e := range fig.legend {
		names = append(names, e.text)
		if e.glyph.Radius < 3 {
			t.Errorf("legend entry %q: glyph radius %v, want ≥ 3 pt", e.text, e.glyph.Radius)
		}
	}
	drawn := 0 // of the 500 drawn, those beyond ±3 (round 112 A2: counted over all 800, read as of those drawn)
	for i := range 500 {
		if x, y := d.Data.At(i, 0), d.Data.At(i, 1); math.Abs(x) > 3 || math.Abs(y) > 3 {
			drawn++
		}
	}
	want := []string{"persistent chains (64 of 64)", fmt.Sprintf("data (500 of 800);\n%d of those drawn beyond the frame", drawn)} // N(0, I) points in ±3
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("legend %q, want %q", names, want)
	}
	d.Axes = []string{"height", "weight"}
	if fig := d.layout(); fig.main.X.Label.Text != "height" || fig.main.Y.Label.Text != "weight" {
		t.Errorf("named axes %q, %q", fig.main.X.Label.Text, fig.main.Y.Label.Text)
	}
	// Round 72 B2: CSV headers of 117 characters as axis labels squeezed
	// the panel to a corner; they are shortened in their middle.
	long := strings.Repeat("measurement_of_the_column_", 4) + "x"
	d.Axes = []string{long + "1", long + "2"}
	svg := filepath.Join(t.TempDir(), "d.svg")
	if err := d.Save(svg); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(svg)
	if labels := regexp.MustCompile(`>(measurement_of_the[^<]*)<`).FindAllSubmatch(b, -1); len(labels) != 2 || !strings.Contains(string(labels[0][1]), "…") || !strings.Contains(string(labels[1][1]), "…") {
		t.Errorf("long axes drawn as %q", labels)
	}
	// Data units: the colour scale is the density of the data's units, so
	// it integrates to one over the plotted box whatever the scaling.
	for _, sc := range []*data.Scaling{nil, {Shift: []float64{10, -3}, Scale: []float64{4, 0.5}}} {
		xyz := gridXYZ{g: g, sc: sc}
		c, r := xyz.Dims()
		dx, dy := xyz.X(1)-xyz.X(0), xyz.Y(1)-xyz.Y(0)
		sum := 0.0
		for i := 0; i < c; i++ {
			for j := 0; j < r; j++ {
				sum += xyz.Z(i, j) * dx * dy
			}
		}
		if sum < 0.97 || sum > 1.0001 { // the box [−3, 3]² holds 0.9946 of N(0, I)
			t.Errorf("scaling %v: density integrates to %v over the box", sc, sum)
		}
	}
	if err := d.Save(filepath.Join(t.TempDir(), "density.svg")); err != nil {
		t.Fatal(err)
	}
}

// smallRun is two-modes' flowMC-EBM shrunk to train and evaluate twice in
// a fraction of a second.
func smallRun(t *testing.T) *training.Run {
	t.Helper()
	cfg, _, err := settings.Defaults("two-modes", algorithms.FlowMC)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed, cfg.DataSize, cfg.GridSize = 5, 512, 40
	cfg.Train.Iterations = 2
	cfg.Train.BatchSize, cfg.Train.Persistent = 16, 64
	cfg.Train.Sampler.Particles = 8
	cfg.Model.EBMHidden = []int{16, 16}
	cfg.Model.FlowBlocks = 2
	r, err := training.NewRun(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		st, err := r.Step()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Evaluate(st); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

package plots

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms/metrics"
)

// Round 99 A2: the density of a sharp mode (σ 0.05, weight 0.3) beside a
// broad one (σ 1.5, 0.7) was drawn on a linear scale up to the sharp
// peak: the broad mode, most of the mass, had the colour of nothing. Such
// a grid (over half its mass below a twentieth of the peak) is drawn on
// a log scale, which the colour bar and title say: the broad mode's
// centre then sits over a tenth of the colour range above the floor; a
// single Gaussian stays linear.
func TestDensityLogScaleWherePeakHidesMass(t *testing.T) {
	fill := func(logp func(a, b float64) float64) *metrics.Grid {
		g := metrics.NewGridAt([2]float64{0, 0}, 8, 8, 200)
		if err := g.Fill(func(x mat.Matrix, out []float64) error {
			for i := range out {
				out[i] = logp(x.At(i, 0), x.At(i, 1))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	normal := func(a, b, ma, mb, s float64) float64 {
		return math.Exp(-((a-ma)*(a-ma)+(b-mb)*(b-mb))/(2*s*s)) / (2 * math.Pi * s * s)
	}
	sharp := fill(func(a, b float64) float64 {
		return math.Log(0.3*normal(a, b, -4, 0, 0.05) + 0.7*normal(a, b, 3, 1, 1.5))
	})
	fig := Density{Title: "t", Grid: sharp}.layout()
	if fig.bar.Y.Label.Text != "log10 EBM density" || !strings.Contains(fig.main.Title.Text, "log colour scale") {
		t.Fatalf("sharp and broad: colour bar %q, title %q", fig.bar.Y.Label.Text, fig.main.Title.Text)
	}
	xyz := gridXYZ{g: sharp}
	xyz.log10, xyz.floor = xyz.peakHides()
	broadCentre := xyz.Z(137, 112) // the cell holding (3, 1)
	if frac := (broadCentre - fig.heat.Min) / (fig.heat.Max - fig.heat.Min); frac < 0.1 {
		t.Errorf("the broad mode's centre at %.3f of the colour range", frac)
	}
	smooth := fill(func(a, b float64) float64 { return math.Log(normal(a, b, 0, 0, 1)) })
	if fig := (Density{Title: "t", Grid: smooth}).layout(); fig.bar.Y.Label.Text != "EBM density" {
		t.Errorf("one Gaussian: colour bar %q", fig.bar.Y.Label.Text)
	}
}

// Round 100 A1: the density of a sharp mode holding 64% of the mass
// beside a broad one (σ 0.05 and 10) on a final grid of 800 cells per
// axis. A grid finer than the panel's pixels is drawn in blocks of cells,
// each the mean of their densities (4 × 4 here; 200 cells stay as they
// are), so the peak's block keeps the colour bar's top colour; the broad
// mode's 36%, under a twentieth of the peak, draws it on a log scale.
func TestDensityFineGridKeepsSharpPeak(t *testing.T) {
	g := metrics.NewGridAt([2]float64{0, 0}, 40, 40, 800)
	if err := g.Fill(func(x mat.Matrix, out []float64) error {
		for i := range out {
			a, b := x.At(i, 0), x.At(i, 1)
			broad := math.Exp(-(a*a+b*b)/(2*100)) / (2 * math.Pi * 100)
			sharp := math.Exp(-((a-4)*(a-4)+(b+3)*(b+3))/(2*0.05*0.05)) / (2 * math.Pi * 0.05 * 0.05)
			out[i] = math.Log(0.36*broad + 0.64*sharp)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if heatPool(800) != 4 || heatPool(200) != 1 || heatPool(1000) != 4 {
		t.Errorf("blocks of %d, %d, %d cells for grids of 800, 200, 1000", heatPool(800), heatPool(200), heatPool(1000))
	}
	if fig := (Density{Title: "t", Grid: g}).layout(); fig.bar.Y.Label.Text != "log10 EBM density" {
		t.Errorf("colour bar %q", fig.bar.Y.Label.Text)
	}
	path := filepath.Join(t.TempDir(), "d.png")
	if err := (Density{Title: "t", Grid: g}).Save(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	red := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Min.X+b.Dx()*3/4; x++ { // the panel, left of the colour bar
			r, _, bl, _ := img.At(x, y).RGBA()
			if r>>8 > 150 && bl>>8 < 120 {
				red++
			}
		}
	}
	if red == 0 {
		t.Error("no pixel of the peak's colours in the panel")
	}
}

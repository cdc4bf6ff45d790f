package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/training"
)

// R-hat plots read between 1 and 10: the log axis labels values there
// (1.01 … 1.5 near 1, then 2 and 5 in every decade), and the threshold
// lines stay in view.
func TestLogTicksReadable(t *testing.T) {
	for _, r := range [][2]float64{{1.005, 1.3}, {1.02, 30}, {1, 1000}, {3, 8}} {
		var labels []float64
		between := false
		for _, tk := range (logTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			if tk.Value < r[0] || tk.Value > r[1] {
				t.Errorf("range %v: tick %v outside", r, tk.Value)
			}
			labels = append(labels, tk.Value)
			between = between || (tk.Value > 1 && tk.Value < 10)
		}
		if len(labels) < 2 || !between {
			t.Errorf("range %v: labelled ticks %v", r, labels)
		}
	}
	fig := Figure{Title: "R-hat", XLabel: "iteration", YLabel: "max R-hat", LogY: true, Thresholds: RHatThresholds,
		Curves: []Curve{{Name: "rank-normalised", Points: plotter.XYs{{X: 0, Y: 30}, {X: 20, Y: 1.3}, {X: 40, Y: 1.2}}}}}
	if err := fig.Save(filepath.Join(t.TempDir(), "rhat.png")); err != nil {
		t.Fatal(err)
	}
}

// Weights plots: the y range follows the truths and the weights (eight
// truths at 0.125 are not squeezed into [0, 1]), ten classes get ten
// colours, and a figure with many curves writes its legend beside the plot.
func TestWeightsPlotReadable(t *testing.T) {
	truths := []float64{0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125}
	evals := []training.Eval{{Iter: 0, EBMWeights: []float64{0.1, 0.15, 0.12, 0.13, 0.125, 0.125, 0.11, 0.135}}}
	lo, hi := weightRange(truths, evals)
	if !(lo > 0.05 && lo < 0.1 && hi > 0.15 && hi < 0.2) {
		t.Errorf("weight range [%v, %v], want about [0.08, 0.17]", lo, hi)
	}
	seen := map[any]bool{}
	for k := 0; k < 10; k++ {
		seen[plotColor(k)] = true
	}
	if len(seen) != 10 {
		t.Errorf("%d distinct colours for ten classes", len(seen))
	}
	fig := Figure{Title: "weights", XLabel: "iteration", YLabel: "weight", YMin: lo, YMax: hi}
	for k, w := range truths {
		fig.Curves = append(fig.Curves, Curve{Name: fmt.Sprintf("mode %d", k+1), Points: plotter.XYs{{X: 0, Y: evals[0].EBMWeights[k]}, {X: 1, Y: w}}, Ref: w, HasRef: true})
	}
	if err := fig.Save(filepath.Join(t.TempDir(), "w.png")); err != nil {
		t.Fatal(err)
	}
}

// A figure's legend names every curve and the threshold lines, which stay
// in view whatever the data's range.
func TestFigureLegendAndThresholds(t *testing.T) {
	fig := Figure{Title: "R-hat", LogY: true, Thresholds: RHatThresholds, Curves: []Curve{
		{Name: "a", Points: plotter.XYs{{X: 0, Y: 30}, {X: 1, Y: 2}}},
		{Name: "b", Points: plotter.XYs{{X: 0, Y: 20}, {X: 1, Y: 3}}},
	}}
	p, entries, err := fig.layout()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.text)
	}
	want := []string{"a", "b", RHatThresholds[0].Label, RHatThresholds[1].Label}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("legend %q, want %q", names, want)
	}
	if !(p.Y.Min <= 1.01 && p.Y.Max >= 30) {
		t.Errorf("y range [%v, %v] leaves out the threshold 1.01 or the data", p.Y.Min, p.Y.Max)
	}
}

// The weights figure of a run labels each curve with its exact truth and
// draws it as the curve's reference line; beyond 2D an R-hat figure on a
// log axis with the threshold lines comes with it.
func TestHistoryFigures(t *testing.T) {
	exp, err := experiments.ByName("four-modes")
	if err != nil {
		t.Fatal(err)
	}
	evals := []training.Eval{{Iter: 10, EBMWeights: []float64{0.12, 0.18, 0.3, 0.4}, MaxRHat: math.NaN()}}
	rhat, weights := History{Experiment: exp, Algorithm: "flowmc", Evals: evals}.figures()
	if rhat != nil {
		t.Error("R-hat figure for a 2D experiment")
	}
	if weights == nil || len(weights.Curves) != 4 {
		t.Fatalf("weights figure %+v", weights)
	}
	for k, c := range weights.Curves {
		want := fmt.Sprintf("mode %d (truth %g)", k+1, exp.Weights[k])
		if c.Name != want || !c.HasRef || c.Ref != exp.Weights[k] {
			t.Errorf("curve %d: %q, ref %v (%v), want %q", k, c.Name, c.Ref, c.HasRef, want)
		}
	}
	hd, err := experiments.ByName("four-gaussians-16")
	if err != nil {
		t.Fatal(err)
	}
	evals[0].MaxRHat, evals[0].MaxRHatClassic = 1.3, 1.2
	rhat, _ = History{Experiment: hd, Algorithm: "nt", RHatChains: 128, Evals: evals}.figures()
	if rhat == nil || !rhat.LogY || len(rhat.Thresholds) != 2 || len(rhat.Curves) != 2 {
		t.Errorf("R-hat figure %+v", rhat)
	}
}

// The grid of persistent chains carries its title.
func TestImageGridTitle(t *testing.T) {
	x := mat.NewDense(4, 4, []float64{-1, 0, 1, 0.5, 0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1})
	path := filepath.Join(t.TempDir(), "samples.svg")
	title := "mnist, flowmc: the first 64 persistent chains at iteration 7"
	if err := writeImageGrid(path, title, x, experiments.ImageShape{Channels: 1, Height: 2, Width: 2}, 2, 3); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "iteration 7") {
		t.Errorf("no title in the SVG (%v)", err)
	}
}

// A curve of one point (a run evaluated once) is drawn as a dot: a line
// of one point draws nothing, and compare's figure came out empty.
func TestSinglePointCurveIsMarked(t *testing.T) {
	for n, want := range map[int]int{1: 2, 3: 1} {
		pts := make(plotter.XYs, n)
		for i := range pts {
			pts[i] = plotter.XY{X: float64(i + 1), Y: 1.05}
		}
		drawn, err := curvePlotters(pts, color.Black, nil)
		if err != nil || len(drawn) != want {
			t.Errorf("%d points: %d plotters, %v; want %d", n, len(drawn), err, want)
		}
	}
}

// A curve of equal values far from 0 (one evaluation with a held-out
// log-likelihood of −1e16) draws: gonum/plot's ±1 padding of an empty
// range is lost to rounding there and its ticks panicked.
func TestEqualValuesFarFromZeroDraw(t *testing.T) {
	for _, y := range []float64{-1e16, 3e200, 1e-300} {
		f := Figure{Title: "t", XLabel: "iteration", YLabel: "y",
			Curves: []Curve{{Name: "a", Points: plotter.XYs{{X: 10, Y: y}}}}}
		if err := f.Save(filepath.Join(t.TempDir(), "f.png")); err != nil {
			t.Errorf("y = %g: %v", y, err)
		}
	}
}

// A figure without any point to draw (runs still before their first
// evaluation; on a log axis, only non-positive values) is an empty frame
// titled as such, not a panic (round-12 probe: gonum's log scale panicked
// in reproduce --report over a partial set).
func TestFigureWithoutPoints(t *testing.T) {
	for _, logY := range []bool{false, true} {
		for i, curves := range [][]Curve{nil, {{Name: "a"}}, {{Name: "b", Points: plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: -3}}}}} {
			empty := i < 2 || logY // curve b has points to draw on a linear axis
			f := Figure{Title: "t", XLabel: "iteration", YLabel: "MSE", LogY: logY, Curves: curves}
			if err := f.Save(filepath.Join(t.TempDir(), "f.png")); err != nil {
				t.Errorf("log %v, curves %v: %v", logY, curves, err)
			}
			p, _, err := f.layout()
			if err != nil || strings.HasSuffix(p.Title.Text, "(no data yet)") != empty {
				t.Errorf("log %v, curves %v: title %q, %v", logY, curves, p.Title.Text, err)
			}
		}
	}
}

// The highest curve ends below the top of an automatic y range (the d = 64
// report's NT-EBM R-hat, 57.1, ran along the frame's top edge under the
// title), on a logarithmic and on a linear axis.
func TestFigureHeadroom(t *testing.T) {
	for _, logY := range []bool{true, false} {
		fig := Figure{Title: "R-hat", LogY: logY, Curves: []Curve{{Name: "a", Points: plotter.XYs{{X: 0, Y: 2}, {X: 1, Y: 57.1}}}}}
		p, _, err := fig.layout()
		if err != nil {
			t.Fatal(err)
		}
		p.Add() // the range as drawn
		frac := (p.Y.Max - 57.1) / (p.Y.Max - p.Y.Min)
		if logY {
			frac = math.Log(p.Y.Max/57.1) / math.Log(p.Y.Max/p.Y.Min)
		}
		if frac < 0.03 {
			t.Errorf("logY %v: y range [%v, %v] leaves %.3f of the axis above the highest value, want ≥ 0.03", logY, p.Y.Min, p.Y.Max, frac)
		}
	}
}

// Values near float64's limits draw without headroom rather than with an
// axis up to +Inf (probe 19: a max_rhat of 1e300 in compare, a draw of
// −1.75e308 in diagnose --plots, ran out of memory or looped).
func TestFigureHeadroomNearLimits(t *testing.T) {
	for _, c := range []struct {
		logY bool
		ys   []float64
	}{
		{true, []float64{1.01, 1e300}},
		{true, []float64{1e-300, 1e300}},
		{false, []float64{-1.75e308, 1}},
		{false, []float64{-1.7e308, 1.7e308}},
		{false, []float64{0, 1.7e308}},
	} {
		fig := Figure{Title: "t", LogY: c.logY, Curves: []Curve{{Name: "a", Points: plotter.XYs{{X: 0, Y: c.ys[0]}, {X: 1, Y: c.ys[1]}}}}}
		p, _, err := fig.layout()
		if err != nil {
			continue // refused with a message: fine
		}
		if math.IsInf(p.Y.Max, 0) || math.IsInf(p.Y.Max-p.Y.Min, 0) || p.Y.Max < c.ys[1] {
			t.Errorf("logY %v, %v: y range [%v, %v]", c.logY, c.ys, p.Y.Min, p.Y.Max)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			fig.Save(filepath.Join(t.TempDir(), "f.png"))
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("logY %v, %v: drawing did not end in 30 s", c.logY, c.ys)
		}
	}
}

// Probe 59 B7 (h): no two of 100 curves share colour and line style (the
// 11th run of a compare was drawn as the 1st; round 70: the 41st).
func TestCurveStylesDistinct(t *testing.T) {
	seen := map[string]int{}
	for k := 0; k < 100; k++ {
		key := fmt.Sprint(plotColor(k), curveDashes(k))
		if j, ok := seen[key]; ok {
			t.Errorf("curves %d and %d look alike: %s", j, k, key)
		}
		seen[key] = k
	}
}

// Probe 62 B3: R-hat's two thresholds were drawn alike (their legend
// entries could not be told apart), and 1.01 lay on the bottom axis under
// curves of R-hat above it. Each threshold has its own line style and
// stays off the frame's edges by 3% of the axis or more.
func TestThresholdsApartAndInside(t *testing.T) {
	for _, logY := range []bool{true, false} {
		fig := Figure{Title: "R-hat", LogY: logY, Thresholds: RHatThresholds,
			Curves: []Curve{{Name: "a", Points: plotter.XYs{{X: 0, Y: 1.02}, {X: 1, Y: 57.1}}}}}
		p, entries, err := fig.layout()
		if err != nil {
			t.Fatal(err)
		}
		var dashes [][]vg.Length
		for _, e := range entries[1:] {
			l := e.thumb.(*plotter.Function)
			for _, d := range dashes {
				if slices.Equal(d, l.Dashes) {
					t.Errorf("logY %v: thresholds drawn alike", logY)
				}
			}
			dashes = append(dashes, l.Dashes)
		}
		p.Add()
		for _, th := range RHatThresholds {
			lo, hi := (th.Value-p.Y.Min)/(p.Y.Max-p.Y.Min), (p.Y.Max-th.Value)/(p.Y.Max-p.Y.Min)
			if logY {
				lo, hi = math.Log(th.Value/p.Y.Min)/math.Log(p.Y.Max/p.Y.Min), math.Log(p.Y.Max/th.Value)/math.Log(p.Y.Max/p.Y.Min)
			}
			if lo < 0.03 || hi < 0.03 {
				t.Errorf("logY %v: %v lies %.3f above the bottom, %.3f below the top", logY, th.Value, lo, hi)
			}
		}
	}
}

// Probe 62 (the redrawn report): with R-hat's 1.01 kept off the bottom
// axis, the axis reached below 1 and the labels 1 and 1.1 were printed
// over each other. Labels keep a line apart, 1.1 first.
func TestLogTickLabelsApart(t *testing.T) {
	for _, r := range [][2]float64{{0.94, 57}, {0.97, 2.5}, {0.99, 12}, {1e-3, 1e3}, {1.001, 1.2}, {0.97, 1.9}, {0.99, 1.46}} {
		var labelled []float64
		for _, tk := range (logTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" {
				labelled = append(labelled, tk.Value)
			}
		}
		slices.Sort(labelled)
		for i := 1; i < len(labelled); i++ {
			if math.Log(labelled[i]/labelled[i-1]) < minLabelGap*math.Log(r[1]/r[0])*0.999 {
				t.Errorf("%v: labels %v and %v overlap", r, labelled[i-1], labelled[i])
			}
		}
		if r[0] < 1.1 && r[1] > 1.1 && !slices.Contains(labelled, 1.1) {
			t.Errorf("%v: 1.1 not labelled: %v", r, labelled)
		}
		if top := labelled[len(labelled)-1]; top < math.Pow(r[1], 0.75)*math.Pow(r[0], 0.25) { // probe 63: 1.5 the top label under curves at 1.6-1.85
			t.Errorf("%v: the top label %v leaves the upper quarter of the axis unlabelled", r, top)
		}
	}
}

// Probe 67 B3: an SVG's or PDF's white background covered the plot panel
// only, leaving the legend column transparent (unreadable on a dark
// viewer); the whole canvas is painted first. In SVG, the first path
// drawn is the canvas's rectangle, filled white.
func TestSVGBackgroundCoversCanvas(t *testing.T) {
	b := savedSVG(t, Figure{Title: "t", Curves: []Curve{{Name: "a long legend entry", Points: plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}}}}})
	view := svgViewBox.FindSubmatch(b)
	first := regexp.MustCompile(`<path d="M0,0L([0-9.]+),0L([0-9.]+),([0-9.]+)L0,[0-9.]+Z"\s*style="fill:#FFFFFF`).FindSubmatch(b)
	if view == nil || first == nil || string(first[1]) != string(view[1]) || string(first[3]) != string(view[2]) {
		t.Errorf("the first white rectangle %q does not cover the canvas %q", first, view)
	}
}

// Probe 67 B6: the energies figure's x label wrote p̃ with a combining
// tilde, which the renderer drew over the θ after it ("pθ̃"); its text
// holds no combining marks.
func TestLabelsWithoutCombiningMarks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.svg")
	h := EnergyHistogram{Title: "energies", Sets: []EnergySet{{Name: "held-out", Energy: []float64{1, 2, 3}}}}
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "energy") {
		t.Fatal("no label drawn")
	}
	for _, r := range string(b) {
		if unicode.Is(unicode.Mn, r) {
			t.Errorf("the figure's text holds the combining mark %U", r)
		}
	}
}

// Probe 70 B2: compare's figure of 45 runs named the first 30 in its
// legend, the 30th cut, the rest beyond the canvas; the figure is as tall
// as its legend needs, every name inside the canvas.
func TestLongLegendFits(t *testing.T) {
	var fig Figure
	for k := range 45 {
		fig.Curves = append(fig.Curves, Curve{Name: fmt.Sprintf("run%02d", k+1), Points: plotter.XYs{{X: 0, Y: float64(k)}, {X: 1, Y: float64(k + 1)}}})
	}
	b := savedSVG(t, fig)
	view := svgViewBox.FindSubmatch(b)
	if view == nil {
		t.Fatal("no viewBox")
	}
	height, _ := strconv.ParseFloat(string(view[2]), 64)
	for k := range 45 {
		m := regexp.MustCompile(fmt.Sprintf(`<text x="[0-9.]+" y="(-?[0-9.]+)"[^>]*>run%02d<`, k+1)).FindSubmatch(b)
		if m == nil {
			t.Fatalf("run%02d not in the legend", k+1)
		}
		if y, _ := strconv.ParseFloat(string(m[1]), 64); -y < 0 || -y > height { // gonum's SVG text: y flipped twice (scale(1, -1))
			t.Errorf("run%02d at y = %v, outside the canvas of height %v", k+1, y, height)
		}
	}
}

// svgViewBox matches an SVG's viewBox, its width and height.
var svgViewBox = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)

// savedSVG is fig saved as SVG.
func savedSVG(t *testing.T, fig Figure) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.svg")
	if err := fig.Save(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Round 71 B3: runs of 94-character names (compare's legend) left the
// plot a sliver of the 9-inch canvas, the curves over the axis labels; the
// canvas widens so that the legend starts 6 inches or more from its left.
func TestLongNamesKeepThePlot(t *testing.T) {
	long := strings.Repeat("a-long-run-folder-name-", 5)[:94]
	fig := Figure{Title: "t", Curves: []Curve{
		{Name: long + "1", Points: plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}}},
		{Name: long + "2", Points: plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 0}}}}}
	b := savedSVG(t, fig)
	m := regexp.MustCompile(`<text x="([0-9.]+)"[^>]*>` + long + `1<`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the name is not in the legend")
	}
	if x, _ := strconv.ParseFloat(string(m[1]), 64); x < 6*72 {
		t.Errorf("the legend starts at x = %v pt, leaving the plot less than 6 inches", x)
	}
	view := svgViewBox.FindSubmatch(b)
	if w, _ := strconv.ParseFloat(string(view[1]), 64); w <= 9*72 {
		t.Errorf("canvas %v pt wide: not widened", w)
	}
}

// Round 72 B1, B2: a parameter's name of 90 to 156 characters as a trace's
// y label (diagnose --plots), or a CSV header's as density.png's axes,
// squeezed the plot to a strip or to nothing. Labels and titles are
// shortened in their middle to the plot's sides, keeping both ends.
func TestLongLabelsFitThePlot(t *testing.T) {
	name := "theta_" + strings.Repeat("very_long_parameter_name_", 6) + "[12]"
	fig := Figure{Title: "trace of " + name, XLabel: "draw", YLabel: name,
		Curves: []Curve{{Name: "chain 1", Points: plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: 1}}}}}
	b := savedSVG(t, fig)
	label := regexp.MustCompile(`>((?:trace of )?theta_[^<]*)<`).FindAllSubmatch(b, -1)
	if len(label) != 2 {
		t.Fatalf("%d texts naming theta, want the title's and the y label's", len(label))
	}
	for _, m := range label {
		s := string(m[1])
		if !strings.Contains(s, "…") || !strings.HasSuffix(s, "[12]") || len(s) >= len(name) {
			t.Errorf("label %q: want %q shortened in its middle", s, name)
		}
	}
	sty := plot.New().Y.Label.TextStyle
	if got := fitText(name, sty, 3*vg.Inch); sty.Width(got) > 3*vg.Inch || !strings.HasPrefix(got, "theta_very") || !strings.HasSuffix(got, "name_[12]") {
		t.Errorf("fitText: %q (%v wide)", got, sty.Width(got))
	}
	if got := fitText("x1", sty, 3*vg.Inch); got != "x1" {
		t.Errorf("a short label changed: %q", got)
	}
	// Round 83 B1: a title's second line (density.png's note on the mass
	// in view) was cut with the first; each line is fitted alone.
	note := "(0.0% of its mass in the data's box)"
	if got := fitText(name+"\n"+note, sty, 3*vg.Inch); !strings.HasSuffix(got, "\n"+note) || !strings.Contains(got, "…") {
		t.Errorf("two lines: %q", got)
	}
}

// Undrawable names the characters the figures' font has no glyph for,
// once each: CJK, not Latin, Greek or mathematical signs the font holds.
func TestUndrawable(t *testing.T) {
	if got := string(Undrawable("能量 μ σ é ∑ ≤ 能 x\u200by")); got != "能量" {
		t.Errorf("Undrawable: %q, want %q", got, "能量")
	}
}

// Round 85 B10: a run name of 250 characters made compare's figure 2619
// pixels wide, the plot an eighth of it; a legend line is cut in its
// middle past maxLegendText, keeping both ends.
func TestLegendNamesCut(t *testing.T) {
	long := strings.Repeat("x", 120) + "-end"
	fig := Figure{Title: "t", Curves: []Curve{{Name: long, Points: plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}}}}}
	b := savedSVG(t, fig)
	if bytes.Contains(b, []byte(long)) || !regexp.MustCompile(`>x+…x*-end<`).Match(b) {
		t.Error("the long name is not cut in its middle in the legend")
	}
	view := svgViewBox.FindSubmatch(b)
	if w, _ := strconv.ParseFloat(string(view[1]), 64); w > 6*72+8*72+72 {
		t.Errorf("canvas %v pt wide", w)
	}
}

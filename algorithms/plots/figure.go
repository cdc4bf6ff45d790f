package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowebm/flowebm/algorithms/training"
)

func plotColor(k int) color.Color {
	// Matplotlib's tab10: ten colours, so ten classes never share one.
	cs := []color.Color{color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
		color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
		color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
		color.RGBA{23, 190, 207, 255}}
	return cs[k%len(cs)]
}

// curveDashes is curve k's line style: solid for the first ten, then one
// dash pattern for each next ten, so that no two of 100 curves look alike
// (probe 59: compare's 11th run was drawn as its 1st; round 70: the 41st
// as the 1st).
func curveDashes(k int) []vg.Length {
	p := vg.Points
	styles := [][]vg.Length{nil,
		{p(6), p(3)}, {p(1.5), p(2)}, {p(6), p(2), p(1.5), p(2)},
		{p(12), p(4)}, {p(3), p(3)}, {p(12), p(3), p(1.5), p(3)},
		{p(6), p(2), p(1.5), p(2), p(1.5), p(2)}, {p(1.5), p(5)}, {p(12), p(3), p(6), p(3)}}
	return styles[(k/10)%len(styles)]
}

// Figure is a line plot of curves over a common x axis.
type Figure struct {
	Title, XLabel, YLabel string
	// LogY makes the y axis logarithmic (non-positive points are left out).
	LogY bool
	// YMin and YMax fix the y range when YMax > YMin, and XMin and XMax
	// the x range when XMax > XMin.
	YMin, YMax, XMin, XMax float64
	Curves                 []Curve
	// Thresholds are drawn as grey dashed lines, each named in the legend.
	Thresholds []Threshold
	// Empty says, in the title, why the figure has no point ("" : "no
	// data yet").
	Empty string
}

// Threshold is a named horizontal line of a Figure.
type Threshold struct {
	Value float64
	Label string
}

// RHatThresholds are the usual R-hat criteria: 1.01 (Vehtari et al. 2021)
// and the paper's 1.1.
var RHatThresholds = []Threshold{{1.01, "R-hat 1.01 (Vehtari et al. 2021)"}, {1.1, "R-hat 1.1 (the paper)"}}

// Curve is one named line of a Figure; with HasRef, Ref is drawn as a
// dashed horizontal line in the curve's colour (a true value, a threshold).
type Curve struct {
	Name   string
	Points plotter.XYs
	Ref    float64
	HasRef bool
	// Thin draws the curve half a point wide and translucent, for curves
	// that overlap over most of the plot (trace plots of mixing chains;
	// round 87 B3: the last chain drawn hid the others); its legend entry
	// keeps the full line.
	Thin bool
	// Gaps breaks the line at a NaN point (a value left out), rather
	// than joining its neighbours across it as at a value not measured.
	Gaps bool
}

// maxLegendText is the widest a legend line is drawn (its middle is cut).
const maxLegendText = 8 * vg.Inch

// Save draws the figure into a file at path, atomically, in the format its
// extension names (.png, .svg or .pdf), with the legend in a column right
// of the plot, where it hides no curve. Points with non-finite y are left
// out.
func (f Figure) Save(path string) error {
	p, entries, err := f.layout()
	if err != nil {
		return err
	}
	legend := plot.NewLegend()
	for i, e := range entries {
		// Shortened in the middle past 8 inches (round 85 B10: a name of 250
		// characters left the plot an eighth of a 2619-pixel figure).
		entries[i].text = fitText(e.text, legend.TextStyle, maxLegendText)
		legend.Add(entries[i].text, e.thumb)
	}
	// Taller where the legend needs it: compare's 31st to 45th runs were
	// left off the canvas, unnamed (probe 70 B2); wider, so that the plot
	// keeps 6 inches beside a legend of long names (round 71 B3: runs of
	// 94-character names left no room for the curves).
	widest := vg.Length(0)
	for _, e := range entries {
		widest = max(widest, legend.TextStyle.Width(e.text))
	}
	lw := widest + legend.ThumbnailWidth + legend.Padding + vg.Points(12) // as drawWithSideLegend lays it
	w := max(9*vg.Inch, 6*vg.Inch+lw)
	h := max(4.5*vg.Inch, vg.Length(len(entries)+3)*legendRow(legend))
	fitLabels(p, w-lw-vg.Points(12), h-vg.Inch) // an inch of height goes to the title and the ticks
	return writePlotFile(path, w, h, func(dc draw.Canvas) { drawWithSideLegend(dc, p, legend, w) })
}

// figureEntry is a line of a Figure's legend.
type figureEntry struct {
	text  string
	thumb plot.Thumbnailer
}

// wholeX says whether the curves' x values are all whole numbers (draws,
// lags, iterations), to be ticked at whole numbers only.
func (f Figure) wholeX() bool {
	n := 0
	for _, c := range f.Curves {
		for _, q := range c.Points {
			if q.X != math.Trunc(q.X) {
				return false
			}
			n++
		}
	}
	return n > 0
}

// layout builds the figure's plot (without legend) and its legend lines.
func (f Figure) layout() (*plot.Plot, []figureEntry, error) {
	p := newPlot()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	if f.YMax > f.YMin {
		p.Y.Min, p.Y.Max = f.YMin, f.YMax
	}
	if f.XMax > f.XMin {
		p.X.Min, p.X.Max = f.XMin, f.XMax
	}
	if f.wholeX() {
		p.X.Tick.Marker = readableTicks{integer: true}
	}
	if err := f.fitY(p); err != nil {
		return nil, nil, err
	}
	var entries []figureEntry
	for k, c := range f.Curves {
		var thumb *plotter.Line
		for _, pts := range f.segments(c) {
			drawn, err := curvePlotters(pts, plotColor(k), curveDashes(k))
			if err != nil {
				return nil, nil, err
			}
			if thumb == nil {
				t := *drawn[0].(*plotter.Line)
				thumb = &t
			}
			if c.Thin {
				l := drawn[0].(*plotter.Line)
				r, g, b, _ := plotColor(k).RGBA()
				l.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 150}
				l.Width = vg.Points(0.5)
			}
			p.Add(drawn...)
		}
		if thumb != nil {
			entries = append(entries, figureEntry{c.Name, thumb})
		}
		if c.HasRef {
			ref := plotter.NewFunction(func(float64) float64 { return c.Ref })
			ref.Color = plotColor(k)
			ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(ref)
		}
	}
	for i, th := range f.Thresholds {
		v := th.Value
		l := plotter.NewFunction(func(float64) float64 { return v })
		l.Color = color.Gray{Y: 110}
		l.Dashes = thresholdDashes[i%len(thresholdDashes)] // told apart in the legend (probe 62: R-hat's 1.01 and 1.1 were alike)
		p.Add(l)
		entries = append(entries, figureEntry{th.Label, l})
		// Keep every threshold in view.
		p.Y.Min, p.Y.Max = math.Min(p.Y.Min, v/1.003), math.Max(p.Y.Max, v*1.003)
	}
	if f.YMax <= f.YMin {
		headroom(p, f.LogY)
		thresholdRoom(p, f.Thresholds, f.LogY)
	}
	return p, entries, nil
}

// thresholdDashes are the thresholds' line styles: dotted, dashed,
// dash-dotted.
var thresholdDashes = [][]vg.Length{
	{vg.Points(2), vg.Points(2)},
	{vg.Points(7), vg.Points(3)},
	{vg.Points(7), vg.Points(2), vg.Points(2), vg.Points(2)},
}

// thresholdRoom widens p's automatic y range so that no threshold line
// lies within headroomFraction of the range (of its logarithm on a
// logarithmic axis) of the bottom or the top, where it would be drawn on
// the frame (probe 62: R-hat's 1.01 on the bottom axis, under the
// curves).
func thresholdRoom(p *plot.Plot, ths []Threshold, logY bool) {
	to, from := func(v float64) float64 { return v }, func(v float64) float64 { return v }
	if logY {
		if !(p.Y.Min > 0) {
			return
		}
		to, from = math.Log, math.Exp
	}
	lo, hi := to(p.Y.Min), to(p.Y.Max)
	if !(hi > lo) {
		return
	}
	room := headroomFraction * (hi - lo)
	for _, th := range ths {
		v := to(th.Value)
		if low := from(v - room); v-room < lo && !math.IsInf(low, 0) {
			p.Y.Min = math.Min(p.Y.Min, low)
		}
		if high := from(v + room); v+room > hi && !math.IsInf(high, 0) {
			p.Y.Max = math.Max(p.Y.Max, high)
		}
	}
}

// headroomFraction is the part of an automatic y range left free above the
// highest value, so that a curve ending there is not drawn along the
// frame's top edge, under the title.
const headroomFraction = 0.05

// headroom raises the top of p's automatic y range by headroomFraction of
// the range (of its logarithm on a logarithmic axis).
func headroom(p *plot.Plot, logY bool) {
	top := p.Y.Max
	switch {
	case logY && p.Y.Min > 0 && p.Y.Max > p.Y.Min:
		top = math.Exp(math.Log(p.Y.Max) + headroomFraction*(math.Log(p.Y.Max)-math.Log(p.Y.Min)))
	case !logY && p.Y.Max > p.Y.Min:
		top = p.Y.Max + headroomFraction*(p.Y.Max/2-p.Y.Min/2)*2
	}
	// Values near float64's limits keep their range: a top of +Inf
	// made gonum's ticks loop or exhaust memory (probe 19).
	if !math.IsInf(top, 0) && !math.IsNaN(top) && !math.IsInf(top-p.Y.Min, 0) {
		p.Y.Max = top
	}
}

// fitY checks that the curves' values fit in a plot (gonum/plot's ticks
// do not end over a range that overflows) and widens an axis whose values
// are all equal (gonum pads an empty range by ±1, which crosses 0 on a
// logarithmic axis and is lost to rounding far from 0).
func (f Figure) fitY(p *plot.Plot) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range f.Curves {
		for _, q := range c.Points {
			if !math.IsNaN(q.Y) && !math.IsInf(q.Y, 0) && (!f.LogY || q.Y > 0) {
				lo, hi = math.Min(lo, q.Y), math.Max(hi, q.Y)
			}
			if math.IsNaN(q.X) || math.IsInf(q.X, 0) || math.Abs(q.X) > 1e15 {
				return fmt.Errorf("%s: curve %q has x = %v, want an iteration", f.Title, c.Name, q.X)
			}
		}
	}
	switch {
	case lo > hi: // no points: an empty frame that says so
		p.Title.Text += " (" + cmp.Or(f.Empty, "no data yet") + ")"
		if f.LogY && f.YMax <= f.YMin {
			p.Y.Min, p.Y.Max = 0.1, 1 // a log axis needs a positive range
		}
	case math.IsInf(hi-lo, 0):
		return fmt.Errorf("%s: values from %g to %g, a range beyond what a plot can show", f.Title, lo, hi)
	case f.LogY && f.YMax <= f.YMin && hi <= lo*(1+1e-9):
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	case !f.LogY && f.YMax <= f.YMin && hi-lo <= 8*0x1p-52*math.Max(math.Abs(lo), math.Abs(hi)): // within 8 float64 steps (probe 63: at 1e-9, 1e8 ± 1e-4 was drawn flat on an axis from 5e7 to 1.5e8; round 71 B5: at 1e-13, 1e12 ± 0.03)
		// Equal values far from 0: gonum's ±1 padding is lost to
		// rounding at 1e16 and its ticks then panic.
		pad := math.Max(1, 0.5*math.Max(math.Abs(lo), math.Abs(hi))) // ticks that read apart (gonum writes 1 or 2 digits)
		p.Y.Min, p.Y.Max = lo-pad, hi+pad
	}
	return nil
}

// segments splits curve c into the runs of points it draws: a value no
// plot can draw (NaN, infinite, not positive on a logarithmic axis) is
// skipped, the line joining its neighbours (a value not measured at that
// evaluation), except a NaN in a curve with Gaps, which breaks the line
// (the comparison's held-out LL curve joined across the evaluations it
// left out as unreliable).
func (f Figure) segments(c Curve) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	for _, q := range c.Points {
		switch {
		case !math.IsNaN(q.Y) && !math.IsInf(q.Y, 0) && (!f.LogY || q.Y > 0):
			cur = append(cur, q)
		case c.Gaps && math.IsNaN(q.Y) && len(cur) > 0:
			segs, cur = append(segs, cur), nil
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// curvePlotters draws the points pts as a line in colour c, and a single
// point also as a dot (a line of one point draws nothing).
func curvePlotters(pts plotter.XYs, c color.Color, dashes []vg.Length) ([]plot.Plotter, error) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes
	drawn := []plot.Plotter{l}
	if len(pts) == 1 {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = c, draw.CircleGlyph{}, vg.Points(3)
		drawn = append(drawn, sc)
	}
	return drawn, nil
}

// legendRow is the height of one line of legend.
func legendRow(l plot.Legend) vg.Length {
	return l.TextStyle.Height("Xg") + l.Padding
}

// drawWithSideLegend draws p with legend in a column right of the plot
// area, where it cannot cover a curve.
func drawWithSideLegend(dc draw.Canvas, p *plot.Plot, legend plot.Legend, w vg.Length) {
	legend.Top, legend.Left = true, true
	r := legend.Rectangle(dc)
	lw := r.Max.X - r.Min.X + vg.Points(12)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	legend.Draw(draw.Crop(dc, w-lw+vg.Points(6), 0, 0, -vg.Points(20)))
}

// logTicks labels a logarithmic axis at 1-2-5 steps of every decade and,
// close to 1 (R-hat), at 1.01, 1.02, 1.05, 1.1, 1.2 and 1.5, so that
// values between 1 and 10 are readable; other decades get unlabelled
// minor ticks.
type logTicks struct{}

// Ticks returns the ticks between min and max.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	var labels []int // indices of ticks to label, the most wanted first
	add := func(v float64, label bool) {
		if v < min || v > max {
			return
		}
		if label {
			labels = append(labels, len(ticks))
		}
		ticks = append(ticks, plot.Tick{Value: v})
	}
	switch r := max / min; {
	case r < 3:
		for _, v := range []float64{1.01, 1.02, 1.05, 1.1, 1.2, 1.5} {
			add(v, true)
		}
	case r < 30:
		add(1.1, true)
		add(1.5, true)
	default:
		add(1.1, true)
	}
	for g, ms := range [][]int{{1}, {2, 5}, {3}, {4, 6, 7, 8, 9}} {
		for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
			for _, m := range ms {
				add(float64(m)*math.Pow(10, e), g < 3) // 4, 6, …, 9 unlabelled
			}
		}
	}
	if max/min < 3 { // labels where R-hat's curves lie between 1.5 and 3 (probe 63: the top label was 1.5 under curves at 1.6-1.85)
		for _, v := range []float64{1.3, 1.4, 1.6, 1.8, 2.5} {
			add(v, true)
		}
	}
	// A label is dropped where it would overlap one kept before it
	// (probe 62: 1 and 1.1 printed over each other).
	gap := minLabelGap * math.Log(max/min)
	var kept []float64
	for _, i := range labels {
		v := math.Log(ticks[i].Value)
		if !slices.ContainsFunc(kept, func(k float64) bool { return math.Abs(k-v) < gap }) {
			kept = append(kept, v)
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', 6, 64) // 5e-06, not 4.9999999999999996e-06 (probe 63)
		}
	}
	if len(kept) < 2 { // a narrow range inside one decade
		ticks = append(ticks, plot.Tick{Value: min, Label: strconv.FormatFloat(min, 'g', 3, 64)}, plot.Tick{Value: max, Label: strconv.FormatFloat(max, 'g', 3, 64)})
	}
	return ticks
}

// minLabelGap is the least distance between two labels of a logarithmic
// axis, as a fraction of its length: about a line of text on the
// figures' axes.
const minLabelGap = 0.05

// EvalCurve extracts one quantity of every evaluation as a curve over
// iterations.
func EvalCurve(evals []training.Eval, f func(training.Eval) float64) plotter.XYs {
	pts := make(plotter.XYs, len(evals))
	for i, e := range evals {
		pts[i] = plotter.XY{X: float64(e.Iter), Y: f(e)}
	}
	return pts
}

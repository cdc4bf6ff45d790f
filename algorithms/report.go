package algorithms

import (
	"fmt"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
)

// Metrics is metrics.json: the final evaluation with the run's context.
type Metrics struct {
	Experiment  string    `json:"experiment"`
	Algorithm   string    `json:"algorithm"`
	Seed        uint64    `json:"seed"`
	Iterations  int       `json:"iterations"`
	Seconds     float64   `json:"seconds"`
	TrueWeights []float64 `json:"true_weights,omitempty"`
	// TrueHeldOutLL is the held-out data's mean exact log-density, the
	// reference for Final.HeldOutLL.
	TrueHeldOutLL float64 `json:"true_held_out_ll"`
	Final         Eval    `json:"final"`
	// Build names what decides the results' rounding (the same seed gives
	// the same numbers only with the same Go, BLAS and vector math).
	Build Build `json:"build"`
}

// Build describes the build that computed a run.
type Build struct {
	Go         string `json:"go"`
	BLAS       string `json:"blas"`
	VectorMath string `json:"vector_math"`
}

// CurrentBuild is the build of this process.
func CurrentBuild() Build {
	return Build{Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, BLAS: graph.BLAS(), VectorMath: layers.VectorMath()}
}

// WriteMetrics writes dir/metrics.json for the run's last evaluation.
func WriteMetrics(path string, r *Run, elapsed time.Duration) error {
	if len(r.Evals) == 0 {
		return fmt.Errorf("algorithms: no evaluation to report")
	}
	return writeJSON(path, Metrics{Experiment: r.Experiment.Name, Algorithm: r.Config.Train.Algorithm, Seed: r.Config.Seed,
		Iterations: r.Trainer.Iter, Seconds: elapsed.Seconds(), TrueWeights: r.Experiment.Weights, TrueHeldOutLL: r.TrueHeldOutLL, Final: r.Evals[len(r.Evals)-1],
		Build: CurrentBuild()})
}

// ReadMetrics reads a metrics.json that WriteMetrics wrote. Values written
// as null (NaN or infinite) read as 0.
func ReadMetrics(path string) (Metrics, error) {
	var m Metrics
	if err := readJSON(path, &m, false); err != nil {
		return m, err
	}
	return m, nil
}

// gridXYZ adapts a Grid to plotter.GridXYZ, in the data's units when sc is
// not nil (coordinates and density: the density in the models' coordinates
// divided by the scaling's Jacobian).
type gridXYZ struct {
	g  *Grid
	sc *data.Scaling
}

func (p gridXYZ) Dims() (c, r int) { return p.g.N, p.g.N }
func (p gridXYZ) Z(c, r int) float64 {
	z := math.Exp(p.g.LogDensity[r*p.g.N+c])
	if p.sc != nil {
		z /= math.Abs(p.sc.Scale[0] * p.sc.Scale[1])
	}
	return z
}
func (p gridXYZ) X(c int) float64  { return p.unit(0, p.at(c)) }
func (p gridXYZ) Y(r int) float64  { return p.unit(1, p.at(r)) }
func (p gridXYZ) at(i int) float64 { return -p.g.Box + (float64(i)+0.5)*2*p.g.Box/float64(p.g.N) }
func (p gridXYZ) unit(j int, z float64) float64 {
	if p.sc == nil {
		return z
	}
	return p.sc.Shift[j] + p.sc.Scale[j]*z
}

// inDataUnits returns x mapped to the experiment's data units.
func inDataUnits(exp *experiments.Experiment, x mat.Matrix) mat.Matrix {
	if exp.Scaling == nil {
		return x
	}
	return exp.Scaling.ToData(x)
}

func scatter(x mat.Matrix, max int, c color.Color) (*plotter.Scatter, error) {
	r, _ := x.Dims()
	n := min(r, max)
	pts := make(plotter.XYs, n)
	for i := range pts {
		pts[i].X, pts[i].Y = x.At(i, 0), x.At(i, 1)
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle.Color = c
	s.GlyphStyle.Radius = vg.Points(1)
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	return s, nil
}

// WritePlots writes the run's plots into its folder in format f:
// density.png (the EBM's normalised density with the data and the chains,
// 2D only), rhat.png (max R-hat over training, beyond 2D), samples.png (the
// first 64 chains of the persistent bank, for image experiments) and
// weights.png (mode or class weights over training); .svg or .pdf for
// those formats.
func WritePlots(r *Run, f PlotFormat) error {
	if g := r.grid; g != nil && len(r.Evals) > 0 {
		dp := DensityPlot{
			Title:   fmt.Sprintf("%s, %s: EBM density after %d iterations", r.Experiment.Name, r.Config.Train.Algorithm, r.Trainer.Iter),
			Grid:    g,
			Scaling: r.Experiment.Scaling,
			Axes:    r.Experiment.Columns,
			Data:    r.Trainer.Data(),
		}
		dp.Samples, dp.SamplesName = r.Trainer.Bank, "persistent chains"
		if !r.Trainer.Config.persistent() && r.Trainer.Negatives() != nil {
			dp.Samples, dp.SamplesName = r.Trainer.Negatives(), "last negatives"
		}
		if err := dp.Save(filepath.Join(r.Dir, "density"+f.Ext())); err != nil {
			return err
		}
	}
	if im := r.Experiment.Image; im != nil {
		title := fmt.Sprintf("%s, %s: the first 64 persistent chains at iteration %d", r.Experiment.Name, r.Config.Train.Algorithm, r.Trainer.Iter)
		if err := writeImageGrid(filepath.Join(r.Dir, "samples"+f.Ext()), title, r.Trainer.Bank, *im, 8, 6); err != nil {
			return err
		}
	}
	return EvalPlots{Experiment: r.Experiment, Algorithm: r.Config.Train.Algorithm, RHatChains: r.Config.RHatChains, Evals: r.Evals}.Write(r.Dir, f)
}

// EvalPlots are the plots of a run's evaluations over training, drawn from
// its metrics alone: rhat.png (max R-hat, beyond 2D) and weights.png (mode
// or class weights, when the experiment has them). "flowebm reproduce"
// redraws them for runs it keeps.
type EvalPlots struct {
	Experiment *experiments.Experiment
	Algorithm  string
	RHatChains int
	Evals      []Eval
}

// Write writes the plots into dir in format f.
func (p EvalPlots) Write(dir string, f PlotFormat) error {
	exp := p.Experiment
	if len(p.Evals) > 0 && !(exp.Box > 0 && exp.Dim() == 2) {
		var rhat []Eval
		for _, e := range p.Evals {
			if !math.IsNaN(e.MaxRHat) {
				rhat = append(rhat, e)
			}
		}
		fig := Figure{
			Title:  fmt.Sprintf("%s, %s: max R-hat over dimensions, %d chains from the persistent state", exp.Name, p.Algorithm, p.RHatChains),
			XLabel: "iteration", YLabel: "max R-hat", LogY: true,
			Curves: []Curve{
				{Name: "rank-normalised split R-hat", Points: EvalCurve(rhat, func(e Eval) float64 { return e.MaxRHat })},
				{Name: "classic R-hat", Points: EvalCurve(rhat, func(e Eval) float64 { return e.MaxRHatClassic })},
			},
			Thresholds: RHatThresholds,
		}
		if err := fig.Save(filepath.Join(dir, "rhat"+f.Ext())); err != nil {
			return err
		}
	}
	hasWeights := false
	for _, e := range p.Evals {
		hasWeights = hasWeights || e.EBMWeights != nil
	}
	if !hasWeights {
		return nil
	}
	fig := Figure{
		Title:  fmt.Sprintf("%s, %s: EBM weights over training", exp.Name, p.Algorithm),
		XLabel: "iteration", YLabel: "weight",
	}
	fig.YMin, fig.YMax = weightRange(exp.Weights, p.Evals)
	for k, w := range exp.Weights {
		truth := strconv.FormatFloat(w, 'g', 4, 64)
		name := fmt.Sprintf("mode %d (truth %s)", k+1, truth)
		if exp.ClassNames != nil {
			name = fmt.Sprintf("class %s (truth %s)", exp.ClassNames[k], truth)
		}
		fig.Curves = append(fig.Curves, Curve{Name: name,
			Points: EvalCurve(p.Evals, func(e Eval) float64 { return at(e.EBMWeights, k) }), Ref: w, HasRef: true})
	}
	return fig.Save(filepath.Join(dir, "weights"+f.Ext()))
}

// weightRange is the y range of a weights plot: the truths and every
// finite weight over training, padded by a tenth of their spread (at
// least 0.02), within [0, 1], so that close truths (eight at 0.125) read
// apart.
func weightRange(truths []float64, evals []Eval) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, w := range truths {
		see(w)
	}
	for _, e := range evals {
		for _, w := range e.EBMWeights {
			see(w)
		}
	}
	if lo > hi {
		return 0, 1
	}
	pad := math.Max(0.1*(hi-lo), 0.02)
	return math.Max(0, lo-pad), math.Min(1, hi+pad)
}

func at(v []float64, k int) float64 {
	if k < len(v) {
		return v[k]
	}
	return math.NaN()
}

func plotColor(k int) color.Color {
	// Matplotlib's tab10: ten colours, so ten classes never share one.
	cs := []color.Color{color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
		color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
		color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
		color.RGBA{23, 190, 207, 255}}
	return cs[k%len(cs)]
}

// Figure is a line plot of curves over a common x axis.
type Figure struct {
	Title, XLabel, YLabel string
	// LogY makes the y axis logarithmic (non-positive points are left out).
	LogY bool
	// YMin and YMax fix the y range when YMax > YMin.
	YMin, YMax float64
	Curves     []Curve
	// Thresholds are drawn as grey dashed lines, each named in the legend.
	Thresholds []Threshold
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
}

// Save draws the figure into a file at path, atomically, in the format its
// extension names (.png, .svg or .pdf). Points with non-finite y are left
// out.
func (f Figure) Save(path string) error {
	p := plot.New()
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
	for k, c := range f.Curves {
		pts := make(plotter.XYs, 0, len(c.Points))
		for _, q := range c.Points {
			if !math.IsNaN(q.Y) && !math.IsInf(q.Y, 0) && (!f.LogY || q.Y > 0) {
				pts = append(pts, q)
			}
		}
		if len(pts) > 0 {
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = plotColor(k)
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(c.Name, l)
		}
		if c.HasRef {
			ref := plotter.NewFunction(func(float64) float64 { return c.Ref })
			ref.Color = plotColor(k)
			ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(ref)
		}
	}
	for _, th := range f.Thresholds {
		v := th.Value
		l := plotter.NewFunction(func(float64) float64 { return v })
		l.Color = color.Gray{Y: 110}
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(th.Label, l)
		// Keep every threshold in view.
		p.Y.Min, p.Y.Max = math.Min(p.Y.Min, v/1.003), math.Max(p.Y.Max, v*1.003)
	}
	p.Legend.Top = true
	if len(f.Curves)+len(f.Thresholds) > 3 {
		w, h := 9*vg.Inch, 4.5*vg.Inch
		return writePlotFile(path, w, h, func(dc draw.Canvas) { drawWithSideLegend(dc, p, w) })
	}
	return writePlotFile(path, 7*vg.Inch, 4*vg.Inch, p.Draw)
}

// drawWithSideLegend draws p with its legend in a column right of the
// plot area, where it cannot cover a curve (many curves: ten classes).
func drawWithSideLegend(dc draw.Canvas, p *plot.Plot, w vg.Length) {
	legend := p.Legend
	p.Legend = plot.NewLegend()
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
	near1 := []float64{1.01, 1.02, 1.05, 1.1, 1.2, 1.5}
	add := func(v float64, label bool) {
		if v < min || v > max {
			return
		}
		t := plot.Tick{Value: v}
		if label {
			t.Label = strconv.FormatFloat(v, 'g', -1, 64)
		}
		ticks = append(ticks, t)
	}
	switch r := max / min; {
	case r < 3:
		for _, v := range near1 {
			add(v, true)
		}
	case r < 30:
		add(1.1, true)
		add(1.5, true)
	default:
		add(1.1, true)
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		d := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			add(float64(m)*d, m == 1 || m == 2 || m == 5)
		}
	}
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 2 { // a narrow range inside one decade
		ticks = append(ticks, plot.Tick{Value: min, Label: strconv.FormatFloat(min, 'g', 3, 64)}, plot.Tick{Value: max, Label: strconv.FormatFloat(max, 'g', 3, 64)})
	}
	return ticks
}

// EvalCurve extracts one quantity of every evaluation as a curve over
// iterations.
func EvalCurve(evals []Eval, f func(Eval) float64) plotter.XYs {
	pts := make(plotter.XYs, len(evals))
	for i, e := range evals {
		pts[i] = plotter.XY{X: float64(e.Iter), Y: f(e)}
	}
	return pts
}

// writeImageGrid writes the first side² rows of x as a side × side grid of
// grey images (values in [−1, 1], first channel), each pixel scale × scale.
func writeImageGrid(path, title string, x *mat.Dense, shape experiments.ImageShape, side, scale int) error {
	n, _ := x.Dims()
	h, w := shape.Height*scale, shape.Width*scale
	const gap = 2
	img := image.NewGray(image.Rect(0, 0, side*(w+gap)+gap, side*(h+gap)+gap))
	for i := range img.Pix {
		img.Pix[i] = 128
	}
	for k := 0; k < min(n, side*side); k++ {
		row := x.RawRowView(k)
		ox, oy := gap+(k%side)*(w+gap), gap+(k/side)*(h+gap)
		for i := 0; i < h; i++ {
			for j := 0; j < w; j++ {
				v := row[(i/scale)*shape.Width+j/scale]
				img.SetGray(ox+j, oy+i, color.Gray{Y: uint8(math.Round(255 * min(1, max(0, (v+1)/2))))})
			}
		}
	}
	// The grid as an image plot, for its title.
	p := plot.New()
	p.Title.Text = title
	p.HideAxes()
	b := img.Bounds()
	p.Add(plotter.NewImage(img, 0, 0, float64(b.Dx()), float64(b.Dy())))
	return writePlotFile(path, vg.Length(b.Dx())+vg.Points(20), vg.Length(b.Dy())+vg.Points(40), p.Draw)
}

// DensityPlot is a 2D density drawn as a heat map with a colour bar, with
// samples (black dots) and data (green crosses) over it, at most 500 of
// each (the first rows); the legend, right of the plot, says how many are
// drawn.
type DensityPlot struct {
	Title string
	// Grid holds the density (Grid.Fill).
	Grid *Grid
	// Scaling, if not nil, maps the grid's and the points' coordinates to
	// the data's units for the axes (and the density to those units).
	Scaling *data.Scaling
	// Axes names the two coordinates (default "x1", "x2").
	Axes          []string
	Data, Samples mat.Matrix // either may be nil
	// SamplesName names the samples in the legend (default "samples").
	SamplesName string
}

// densityMarks is the most points of each kind a density plot draws.
const densityMarks = 500

// Save draws the plot into a file at path, atomically, in the format its
// extension names (.png, .svg or .pdf).
func (d DensityPlot) Save(path string) error {
	const w, h = 8 * vg.Inch, 6 * vg.Inch
	fig := d.layout()
	return writePlotFile(path, w, h, func(dc draw.Canvas) { fig.draw(dc, w, h) })
}

// densityFigure is a DensityPlot's parts: the heat map with the points,
// its colour bar and the legend.
type densityFigure struct {
	main, bar *plot.Plot
	heat      *plotter.HeatMap
	legend    []legendEntry
}

// legendEntry is a legend's line: a glyph and what it marks.
type legendEntry struct {
	text  string
	glyph draw.GlyphStyle
}

// draw lays the parts out on a w × h canvas: the colour bar and, under
// it, the legend in a column right of the plot, where they hide no data.
func (f densityFigure) draw(dc draw.Canvas, w, h vg.Length) {
	legend := plot.NewLegend()
	for _, e := range f.legend {
		legend.Add(e.text, glyphThumb(e.glyph))
	}
	legend.Top, legend.Left = true, true
	r := legend.Rectangle(dc)
	col := max(r.Max.X-r.Min.X, 1.2*vg.Inch) + vg.Points(12)
	f.main.Draw(draw.Crop(dc, 0, -col, 0, 0))
	right := draw.Crop(dc, w-col+vg.Points(6), 0, 0, 0)
	f.bar.Draw(draw.Crop(right, 0, -col/2, h*0.35, -vg.Points(24)))
	legend.Draw(draw.Crop(right, 0, 0, 0, -(h*0.65 + vg.Points(12))))
}

func (d DensityPlot) layout() densityFigure {
	g := d.Grid
	p := plot.New()
	p.Title.Text = d.Title
	p.X.Label.Text, p.Y.Label.Text = "x1", "x2"
	if len(d.Axes) == 2 {
		p.X.Label.Text, p.Y.Label.Text = d.Axes[0], d.Axes[1]
	}
	xyz := gridXYZ{g, d.Scaling}
	cm := moreland.SmoothBlueRed()
	heat := plotter.NewHeatMap(xyz, cm.Palette(255))
	heat.Rasterized = true // no seams between the cells
	if !(heat.Max > heat.Min) {
		heat.Max = heat.Min + math.Max(1e-300, 1e-9*math.Abs(heat.Min))
	}
	p.Add(heat)
	cm.SetMin(heat.Min)
	cm.SetMax(heat.Max)
	unit := func(x mat.Matrix) mat.Matrix {
		if d.Scaling == nil {
			return x
		}
		return d.Scaling.ToData(x)
	}
	var legend []legendEntry
	mark := func(x mat.Matrix, name string, sty draw.GlyphStyle) {
		if x == nil {
			return
		}
		s, err := scatter(unit(x), densityMarks, sty.Color)
		if err != nil {
			return
		}
		s.GlyphStyle.Shape, s.GlyphStyle.Radius = sty.Shape, sty.Radius
		p.Add(s)
		n, _ := x.Dims()
		sty.Radius = vg.Points(3.5) // the legend's glyphs larger than the plot's
		legend = append(legend, legendEntry{fmt.Sprintf("%s (%d of %d)", name, min(n, densityMarks), n), sty})
	}
	name := d.SamplesName
	if name == "" {
		name = "samples"
	}
	// The data over the samples: they are the reference to read against.
	mark(d.Samples, name, draw.GlyphStyle{Color: color.Black, Shape: draw.CircleGlyph{}, Radius: vg.Points(1.2)})
	mark(d.Data, "data", draw.GlyphStyle{Color: color.RGBA{0, 200, 0, 255}, Shape: draw.CrossGlyph{}, Radius: vg.Points(2)})
	p.X.Min, p.X.Max = xyz.unit(0, -g.Box), xyz.unit(0, g.Box)
	p.Y.Min, p.Y.Max = xyz.unit(1, -g.Box), xyz.unit(1, g.Box)

	bar := plot.New()
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	bar.HideX()
	bar.Y.Label.Text = "EBM density"
	return densityFigure{main: p, bar: bar, heat: heat, legend: legend}
}

// glyphThumb draws a glyph style as a legend entry's thumbnail.
type glyphThumb draw.GlyphStyle

// Thumbnail implements plot.Thumbnailer.
func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(draw.GlyphStyle(g), c.Center()) }

// WriteSamples writes the model's samples in the data's units to
// dir/samples.npy (float64, rows × d), atomically: the persistent chains'
// current states, or for CoopFlow, whose chains start afresh every
// iteration, the last iteration's negatives.
func WriteSamples(r *Run) error {
	src := r.Trainer.Bank
	if !r.Trainer.Config.persistent() && r.Trainer.Negatives() != nil {
		src = r.Trainer.Negatives()
	}
	x := mat.DenseCopyOf(inDataUnits(r.Experiment, src))
	n, d := x.Dims()
	return npy.WriteFile(filepath.Join(r.Dir, "samples.npy"), &npy.Array{Shape: []int{n, d}, Data: x.RawMatrix().Data}, npy.Float64)
}

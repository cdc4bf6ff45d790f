package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/io/data"
)

// gridXYZ adapts a metrics.Grid to plotter.GridXYZ, in the data's units when sc is
// not nil (coordinates and density: the density in the models' coordinates
// divided by the scaling's Jacobian).
type gridXYZ struct {
	g  *metrics.Grid
	sc *data.Scaling
	// shift is subtracted from the log-densities: their largest, where
	// the density would overflow (relative), 0 otherwise.
	shift float64
	// log10 draws log₁₀ of the density, clipped below at floor.
	log10 bool
	floor float64
	// pool, above 1, draws blocks of pool × pool cells, each the mean of
	// their densities (heatPool).
	pool int
}

// maxHeatCells is the most cells per axis a density figure draws: fewer
// than the pixels of its panel (8 inches at 96 dpi, less the colour bar
// and legend). A finer grid (a data set's final one, up to 800 cells) is
// drawn in blocks of cells, each their mean density, rather than scaled
// down by the image's resampling.
const maxHeatCells = 300

// heatPool is the block size that brings n cells per axis within
// maxHeatCells: the least one that divides n, up to twice the least that
// would do (blocks of one width: the heat map draws every block as wide),
// that least otherwise.
func heatPool(n int) int {
	k := (n + maxHeatCells - 1) / maxHeatCells
	for d := k; d <= 2*k; d++ {
		if n%d == 0 {
			return d
		}
	}
	return k
}

func (p gridXYZ) k() int { return max(p.pool, 1) }

func (p gridXYZ) Dims() (c, r int) {
	n := (p.g.N + p.k() - 1) / p.k()
	return n, n
}

func (p gridXYZ) Z(c, r int) float64 {
	v := p.logBlock(c, r) - p.logJacobian() - p.shift
	if p.log10 {
		return max(v/math.Ln10, p.floor)
	}
	return math.Exp(v)
}

// hiddenMass is the share of a density's mass in cells below a twentieth
// of its peak above which its figure is drawn on a log scale: a Gaussian
// has 5% there, one beside a mode 100 times as sharp holding 64% of the
// mass 36% (round 100 A1, drawn in the colour of nothing).
const hiddenMass = 0.2

// logBlock is the log of the mean density of block (c, r): its cell's
// log-density where blocks are single cells.
func (p gridXYZ) logBlock(c, r int) float64 {
	n, k := p.g.N, p.k()
	if k == 1 {
		return p.g.LogDensity[r*n+c]
	}
	top, sum, cells := math.Inf(-1), 0.0, 0
	for i := r * k; i < min(r*k+k, n); i++ {
		for j := c * k; j < min(c*k+k, n); j++ {
			top = max(top, p.g.LogDensity[i*n+j])
		}
	}
	for i := r * k; i < min(r*k+k, n); i++ {
		for j := c * k; j < min(c*k+k, n); j++ {
			sum += math.Exp(p.g.LogDensity[i*n+j] - top)
			cells++
		}
	}
	return top + math.Log(sum/float64(cells))
}

// peakHides reports whether drawn linearly the grid's density would hide
// much of its mass: more than hiddenMass of it lies in cells below a
// twentieth of the largest density (round 99 A2: a sharp mode's peak set
// the colour bar, and the broad mode holding 68% of the mass was drawn in
// the colour of nothing). Such a grid is drawn on a log scale, from
// floor: the level (log₁₀) whose cells above hold 99.9% of the mass, at
// least two decades under the peak.
func (p gridXYZ) peakHides() (hides bool, floor float64) {
	ld := p.g.LogDensity
	top := math.Inf(-1)
	for _, v := range ld {
		if !math.IsNaN(v) {
			top = max(top, v)
		}
	}
	if math.IsInf(top, 0) {
		return false, 0
	}
	order := make([]float64, 0, len(ld))
	total, low := 0.0, 0.0
	for _, v := range ld {
		if math.IsNaN(v) {
			continue
		}
		m := math.Exp(v - top)
		order = append(order, v)
		total += m
		if v < top-math.Log(20) {
			low += m
		}
	}
	if !(low > hiddenMass*total) {
		return false, 0
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(order)))
	held, level := 0.0, order[0]
	for _, v := range order {
		if held >= 0.999*total {
			break
		}
		held += math.Exp(v - top)
		level = v
	}
	level = min(level, top-2*math.Ln10)
	return true, (level - p.logJacobian() - p.shift) / math.Ln10
}

// logJacobian is the log of the scaling's area factor (0 without one).
func (p gridXYZ) logJacobian() float64 {
	if p.sc == nil {
		return 0
	}
	return math.Log(math.Abs(p.sc.Scale[0] * p.sc.Scale[1]))
}

// overflowShift is the largest log-density, in the data's units, where
// the grid's density leaves float64's range (a grid whose quadrature could
// not normalise the EBM: round 95 A2, a density of 1e443 made the colour
// bar panic), so that it is drawn relative to its largest; 0 otherwise.
func (p gridXYZ) overflowShift() float64 {
	top := math.Inf(-1)
	for _, v := range p.g.LogDensity {
		if !math.IsNaN(v) {
			top = max(top, v)
		}
	}
	if top -= p.logJacobian(); top < 700 || math.IsInf(top, 0) {
		return 0
	}
	return top
}

func (p gridXYZ) X(c int) float64 { return p.unit(0, p.at(0, c)) }
func (p gridXYZ) Y(r int) float64 { return p.unit(1, p.at(1, r)) }

// at is the centre of block i along axis j (of its first and last cells).
func (p gridXYZ) at(j, i int) float64 {
	k := p.k()
	return (p.g.At(j, i*k) + p.g.At(j, min(i*k+k, p.g.N)-1)) / 2
}
func (p gridXYZ) unit(j int, z float64) float64 {
	if p.sc == nil {
		return z
	}
	return p.sc.Shift[j] + p.sc.Scale[j]*z
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

// Density is a 2D density drawn as a heat map with a colour bar, with
// samples (black dots) and data (green crosses) over it, at most 500 of
// each (the first rows); the legend, right of the plot, says how many are
// drawn.
type Density struct {
	Title string
	// Grid holds the density (metrics.Grid.Fill).
	Grid *metrics.Grid
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
func (d Density) Save(path string) error {
	const w, h = 8 * vg.Inch, 6 * vg.Inch
	fig := d.layout()
	return writePlotFile(path, w, h, func(dc draw.Canvas) { fig.draw(dc, w, h) })
}

// densityFigure is a Density's parts: the heat map with the points,
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
	fitLabels(f.main, w-col-vg.Points(12), h-vg.Inch) // an inch of height goes to the title and the ticks
	f.main.Draw(draw.Crop(dc, 0, -col, 0, 0))
	right := draw.Crop(dc, w-col+vg.Points(6), 0, 0, 0)
	f.bar.Draw(draw.Crop(right, 0, -col/2, h*0.35, -vg.Points(24)))
	legend.Draw(draw.Crop(right, 0, 0, 0, -(h*0.65 + vg.Points(12))))
}

func (d Density) layout() densityFigure {
	g := d.Grid
	p := newPlot()
	p.Title.Text = d.Title
	p.X.Label.Text, p.Y.Label.Text = "x1", "x2"
	if len(d.Axes) == 2 {
		p.X.Label.Text, p.Y.Label.Text = d.Axes[0], d.Axes[1]
	}
	xyz := gridXYZ{g: g, sc: d.Scaling, pool: heatPool(g.N)}
	barLabel := "EBM density"
	if xyz.shift = xyz.overflowShift(); xyz.shift != 0 {
		barLabel = "EBM density ÷ its largest"
		p.Title.Text += fmt.Sprintf("\n(its density here reaches e^%.4g, beyond float64: the grid did not normalise it)", xyz.shift)
	}
	if xyz.log10, xyz.floor = xyz.peakHides(); xyz.log10 {
		barLabel = "log10 " + barLabel
		p.Title.Text += "\n(log colour scale: a linear one would hide much of the mass under a sharp peak)"
	}
	cm := moreland.SmoothBlueRed()
	heat := plotter.NewHeatMap(xyz, cm.Palette(255))
	heat.Rasterized = true // no seams between the cells
	if math.IsNaN(heat.Min) || math.IsInf(heat.Min, 0) || math.IsNaN(heat.Max) || math.IsInf(heat.Max, 0) {
		heat.Min, heat.Max = 0, 1 // NaN density (the grid's cells all NaN): one colour, no panic
	}
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
	bx, by := g.HalfWidths()
	fr := frame{xyz.unit(0, g.Center[0]-bx), xyz.unit(0, g.Center[0]+bx), xyz.unit(1, g.Center[1]-by), xyz.unit(1, g.Center[1]+by)}
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
		text := fmt.Sprintf("%s (%d of %d)", name, min(n, densityMarks), n)
		if out := fr.beyond(unit(x), densityMarks); out > 0 { // round 89 B4: a figure framed on the data's bulk
			of := ""
			if n > densityMarks { // round 112 A2: counted over all, read as of those drawn
				of = " of those drawn"
			}
			text += fmt.Sprintf(";\n%d%s beyond the frame", out, of)
		}
		legend = append(legend, legendEntry{text, sty})
	}
	name := d.SamplesName
	if name == "" {
		name = "samples"
	}
	// The data over the samples: they are the reference to read against.
	mark(d.Samples, name, draw.GlyphStyle{Color: color.Black, Shape: draw.CircleGlyph{}, Radius: vg.Points(1.2)})
	mark(d.Data, "data", draw.GlyphStyle{Color: color.RGBA{0, 200, 0, 255}, Shape: draw.CrossGlyph{}, Radius: vg.Points(2)})
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = fr.x0, fr.x1, fr.y0, fr.y1 // last: p.Add widens the axes to every point

	bar := newPlot()
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	bar.HideX()
	bar.Y.Label.Text = barLabel
	return densityFigure{main: p, bar: bar, heat: heat, legend: legend}
}

// frame is the part of the plane a density figure shows, in the data's
// units: [x0, x1] × [y0, y1].
type frame struct{ x0, x1, y0, y1 float64 }

// beyond is the number of the first k rows of x (points, those drawn)
// outside the frame.
func (f frame) beyond(x mat.Matrix, k int) int {
	r, _ := x.Dims()
	n := 0
	for i := range min(r, k) {
		a, b := x.At(i, 0), x.At(i, 1)
		if !(a >= f.x0 && a <= f.x1 && b >= f.y0 && b <= f.y1) {
			n++
		}
	}
	return n
}

// glyphThumb draws a glyph style as a legend entry's thumbnail.
type glyphThumb draw.GlyphStyle

// Thumbnail implements plot.Thumbnailer.
func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(draw.GlyphStyle(g), c.Center()) }

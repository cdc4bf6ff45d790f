package plots

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"path/filepath"
	"strconv"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/training"
)

// WriteRun writes the run's plots into its folder in format f:
// density.png (the EBM's normalised density with the data and the chains,
// 2D only), rhat.png (max R-hat over training, beyond 2D), samples.png (the
// first 64 chains of the persistent bank, for image experiments, and from
// the run's training.ImageSamplesFile samples-512.png and energies.png,
// paper Figs. 8 and 7), weights.png (mode or class weights over training)
// and acceptance.png (the samplers' acceptance over training, for
// algorithms with an accept step); .svg or .pdf for those formats.
func WriteRun(r *training.Run, f Format) error {
	g, inBox, err := r.DisplayGrid()
	if err != nil {
		return err
	}
	if g != nil { // from the checkpoint, evaluated or not (round 78 B5)
		title := fmt.Sprintf("%s, %s: EBM density after %d iterations", r.Experiment.Name, r.Config.Train.Algorithm, r.Trainer.Iter)
		title += divergedNote(r)
		switch {
		case inBox < 0.5:
			where := "the data's box"
			if r.Experiment.View.Box > 0 {
				where = "the data's bulk"
			}
			title += fmt.Sprintf("\n(%.1f%% of its mass in %s: drawn where it is)", 100*inBox, where)
		case inBox < 0.999:
			title += fmt.Sprintf("\n(%.1f%% of its mass in view)", 100*inBox)
		}
		if missed, err := r.MissedMass(); err == nil && missed != nil { // round 96 A1
			title += fmt.Sprintf("\n(beyond this grid the EBM's density reaches e^%.4g times its largest here)", missed.LogExcess)
		}
		dp := Density{
			Title:   title,
			Grid:    g,
			Scaling: r.Experiment.Scaling,
			Axes:    r.Experiment.Columns,
			Data:    r.Trainer.Data(),
		}
		dp.Samples, dp.SamplesName = r.Trainer.Samples(), "persistent chains"
		if !r.Trainer.Config.PersistentChains() {
			// CoopFlow's chains start afresh: its last negatives, which a
			// resumed run no longer has (its bank is not its samples).
			dp.Samples, dp.SamplesName = nil, "last negatives"
			if neg := r.Trainer.Negatives(); neg != nil {
				dp.Samples = neg
			}
		}
		if err := dp.Save(filepath.Join(r.Dir, "density"+f.Ext())); err != nil {
			return err
		}
	}
	if e := r.Experiment; e.Kind == experiments.KindImages {
		title := fmt.Sprintf("%s, %s: the first 64 persistent chains at iteration %d", r.Experiment.Name, r.Config.Train.Algorithm, r.Trainer.Iter) + divergedNote(r)
		if err := writeImageGrid(filepath.Join(r.Dir, "samples"+f.Ext()), title, r.Trainer.Bank, *e.Image, 8, gridScale(*e.Image)); err != nil {
			return err
		}
		if err := writeImageFigures(r, f); err != nil {
			return err
		}
	}
	if len(r.Evals) == 0 {
		return nil // no evaluation to draw
	}
	return runHistory(r).Write(r.Dir, f)
}

// History is the plots of a run's evaluations over training, drawn from
// its metrics alone: rhat.png (max R-hat, beyond 2D) and weights.png (mode
// or class weights, when the experiment has them). "flowebm reproduce"
// redraws them for runs it keeps.
type History struct {
	Experiment *experiments.Experiment
	Algorithm  algorithms.Algorithm
	RHatChains int
	Evals      []training.Eval
}

// Write writes the plots into dir in format f.
func (p History) Write(dir string, f Format) error {
	if acc := p.acceptance(); acc != nil {
		if err := acc.Save(filepath.Join(dir, "acceptance"+f.Ext())); err != nil {
			return err
		}
	}
	rhat, weights := p.figures()
	if rhat != nil {
		if err := rhat.Save(filepath.Join(dir, "rhat"+f.Ext())); err != nil {
			return err
		}
	}
	if weights != nil {
		return weights.Save(filepath.Join(dir, "weights"+f.Ext()))
	}
	return nil
}

// acceptance returns the figure of the samplers' acceptance rates at
// each evaluation's iteration, or nil for an algorithm without an accept
// step (ULA-EBM, CoopFlow) or without evaluations.
func (p History) acceptance() *Figure {
	if len(p.Evals) == 0 || p.Algorithm == algorithms.ULA || p.Algorithm == algorithms.CoopFlow {
		return nil
	}
	fig := &Figure{
		Title:  fmt.Sprintf("%s, %s: acceptance of the training iteration's moves at each evaluation", p.Experiment.Name, p.Algorithm),
		XLabel: "iteration", YLabel: "acceptance rate", YMin: 0, YMax: 1,
		Curves: []Curve{{Name: "local (MALA)", Points: EvalCurve(p.Evals, func(e training.Eval) float64 { return e.Stats.LocalAccept })}},
	}
	if p.Algorithm == algorithms.FlowMC {
		fig.Curves = append(fig.Curves, Curve{Name: "global (i-SIR)", Points: EvalCurve(p.Evals, func(e training.Eval) float64 { return e.Stats.GlobalAccept })})
	}
	return fig
}

// figures returns the R-hat figure (nil in 2D or without evaluations) and
// the weights figure (nil without weights).
func (p History) figures() (rhat, weights *Figure) {
	exp := p.Experiment
	if len(p.Evals) > 0 && !(exp.Box > 0 && exp.Dim() == 2) {
		var evals []training.Eval
		for _, e := range p.Evals {
			if !math.IsNaN(e.MaxRHat) {
				evals = append(evals, e)
			}
		}
		from := "the persistent state"
		if p.Algorithm == algorithms.CoopFlow { // round 90 B2: it keeps none
			from = "the flow's samples"
		}
		rhat = &Figure{
			Title:  fmt.Sprintf("%s, %s: max R-hat over dimensions, %d chains from %s", exp.Name, p.Algorithm, p.RHatChains, from),
			XLabel: "iteration", YLabel: "max R-hat", LogY: true,
			Curves: []Curve{
				{Name: "rank-normalised split R-hat", Points: EvalCurve(evals, func(e training.Eval) float64 { return e.MaxRHat })},
				{Name: "classic R-hat", Points: EvalCurve(evals, func(e training.Eval) float64 { return e.MaxRHatClassic })},
			},
			Thresholds: RHatThresholds,
		}
	}
	hasWeights := false
	for _, e := range p.Evals {
		hasWeights = hasWeights || e.EBMWeights != nil
	}
	if !hasWeights {
		return rhat, nil
	}
	title := fmt.Sprintf("%s, %s: EBM weights over training", exp.Name, p.Algorithm)
	if !(exp.Box > 0 && exp.Dim() == 2) { // round 90 B1: beyond 2D, no quadrature: the chains' weights
		title = fmt.Sprintf("%s, %s: weights of the final states of %d chains over training\n(the EBM's where the chains mix: see the R-hat figure)", exp.Name, p.Algorithm, p.RHatChains)
	}
	weights = &Figure{
		Title:  title,
		XLabel: "iteration", YLabel: "weight",
	}
	weights.YMin, weights.YMax = weightRange(exp.Weights, p.Evals)
	for k, w := range exp.Weights {
		truth := strconv.FormatFloat(w, 'g', 4, 64)
		name := fmt.Sprintf("mode %d (truth %s)", k+1, truth)
		if exp.ClassNames != nil {
			name = fmt.Sprintf("class %s (truth %s)", exp.ClassNames[k], truth)
		}
		weights.Curves = append(weights.Curves, Curve{Name: name,
			Points: EvalCurve(p.Evals, func(e training.Eval) float64 { return e.EBMWeight(k) }), Ref: w, HasRef: true})
	}
	return rhat, weights
}

// weightRange is the y range of a weights plot: the truths and every
// finite weight over training, padded by a tenth of their spread (at
// least 0.02), within [0, 1], so that close truths (eight at 0.125) read
// apart.
func weightRange(truths []float64, evals []training.Eval) (lo, hi float64) {
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

// gridScale is the pixel size of an image grid's pixels: about 96 screen
// pixels an image (14 for 7×7 images, 3 for 28×28 and 32×32).
func gridScale(shape experiments.ImageShape) int {
	return max(1, int(math.Round(96/float64(max(shape.Height, shape.Width)))))
}

// writeImageGrid writes the first side² rows of x as imageGrid draws them.
func writeImageGrid(path, title string, x *mat.Dense, shape experiments.ImageShape, side, scale int) error {
	img, err := imageGrid(x, shape, side, scale)
	if err != nil {
		return err
	}
	return writePlotFile(path, vg.Length(img.Bounds().Dx())+vg.Points(20), vg.Length(img.Bounds().Dy())+vg.Points(40), imagePlot(img, title).Draw)
}

// imageGrid draws the first side² rows of x (C·H·W values in [−1, 1], the
// CHW layout) as a grid of side columns (and as many rows as they fill, at
// most side) of images, each pixel scale × scale: in colour for 3 channels
// (red, green, blue), otherwise the first channel in grey.
func imageGrid(x *mat.Dense, shape experiments.ImageShape, side, scale int) (*image.RGBA, error) {
	n, d := x.Dims()
	if want := shape.Channels * shape.Height * shape.Width; d != want {
		return nil, fmt.Errorf("plots: images of %d values, want %d (%d×%d×%d)", d, want, shape.Channels, shape.Height, shape.Width)
	}
	h, w := shape.Height*scale, shape.Width*scale
	const gap = 2
	rows := max(1, (min(n, side*side)+side-1)/side) // fewer rows for fewer images
	img := image.NewRGBA(image.Rect(0, 0, side*(w+gap)+gap, rows*(h+gap)+gap))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.Gray{Y: 128}), image.Point{}, draw.Src)
	for k := 0; k < min(n, side*side); k++ {
		row := x.RawRowView(k)
		ox, oy := gap+(k%side)*(w+gap), gap+(k/side)*(h+gap)
		for i := 0; i < h; i++ {
			for j := 0; j < w; j++ {
				img.SetRGBA(ox+j, oy+i, pixel(row, shape, (i/scale)*shape.Width+j/scale))
			}
		}
	}
	return img, nil
}

// divergedNote ends the title of a figure drawn from the last checkpoint
// of a run that diverged after it (round 113: read as any other run's);
// "" otherwise.
func divergedNote(r *training.Run) string {
	if !r.Diverged {
		return ""
	}
	return fmt.Sprintf(" of %d (the run diverged after this, its last checkpoint)", r.Config.Train.Iterations)
}

// pixel is the colour of pixel p (row-major) of the CHW image row: its red,
// green and blue channels for 3 channels, else its first channel's grey.
func pixel(row []float64, shape experiments.ImageShape, p int) color.RGBA {
	if shape.Channels != 3 {
		v := level(row[p])
		return color.RGBA{R: v, G: v, B: v, A: 255}
	}
	hw := shape.Height * shape.Width
	return color.RGBA{R: level(row[p]), G: level(row[hw+p]), B: level(row[2*hw+p]), A: 255}
}

// level maps a value in [−1, 1] (clamped) to an 8-bit intensity in [0, 255].
func level(v float64) uint8 {
	return uint8(math.Round(255 * min(1, max(0, (v+1)/2))))
}

// imagePlot shows img under title, without axes.
func imagePlot(img image.Image, title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.HideAxes()
	b := img.Bounds()
	p.Add(plotter.NewImage(img, 0, 0, float64(b.Dx()), float64(b.Dy())))
	return p
}

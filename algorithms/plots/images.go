package plots

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/plot/plotter"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/shellquote"
)

// Names of the image experiments' final figures in a run folder (with the
// format's extension): paper Fig. 8's chains and Fig. 7's energies.
const (
	ChainsFigure   = "samples-512"
	EnergiesFigure = "energies"
)

// writeImageFigures draws the run's ImageSamplesFile, when it has one,
// into ChainsFigure and EnergiesFigure.
func writeImageFigures(r *training.Run, f Format) error {
	return WriteImageFigures(r.Dir, r.Config, r.Experiment, f)
}

// WriteImageFigures draws the image figures (samples-512, energies) of the
// finished image run in dir from its training.ImageSamplesFile, for the
// run's configuration cfg and experiment exp, in format f; it does nothing
// when dir has no such file.
func WriteImageFigures(dir string, cfg config.Run, exp *experiments.Experiment, f Format) error {
	if exp.Image == nil {
		return fmt.Errorf("plots: %s is not an image experiment", exp.Name)
	}
	if _, err := os.Stat(filepath.Join(dir, training.ImageSamplesFile)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	s, err := training.ReadImageSamplesOf(dir, *exp.Image)
	if err != nil { // round 105 B4: no way on named
		return fmt.Errorf("%w; flowebm train --resume %s writes it again from the run's final checkpoint", err, shellquote.Quote(dir))
	}
	title := chainsTitle(cfg, exp.Name, s.Chains.RawMatrix().Rows)
	if err := writeImageGrid(filepath.Join(dir, ChainsFigure+f.Ext()), title, s.Chains, *exp.Image, 8, gridScale(*exp.Image)); err != nil {
		return err
	}
	bank := "persistent bank"
	if !cfg.Train.PersistentChains() {
		bank = "last negatives"
	}
	return EnergyHistogram{
		Title: fmt.Sprintf("%s, %s: energies of held-out data and of samples (paper Fig. 7)", exp.Name, cfg.Train.Algorithm),
		Sets: []EnergySet{
			{Name: "held-out data", Energy: s.DataEnergy},
			{Name: bank, Energy: s.BankEnergy},
			{Name: "chains of the samples figure", Energy: s.ChainEnergy},
		},
	}.Save(filepath.Join(dir, EnergiesFigure+f.Ext()))
}

// chainsTitle is ChainsFigure's title for n chains of
// training.ImageKernelSteps steps: gradient steps from the persistent
// state, flowMC-EBM's cycles with their MALA steps, or CoopFlow's
// noise-free Langevin steps from its flow, as many as in its training.
func chainsTitle(cfg config.Run, name string, n int) string {
	t := cfg.Train
	steps := training.ImageKernelSteps(t)
	switch {
	case !t.PersistentChains():
		return fmt.Sprintf("%s, %s: last state of %d chains of %d noise-free Langevin steps from the flow (as in training)", name, t.Algorithm, n, steps)
	case steps != training.ImageChainSteps:
		return fmt.Sprintf("%s, %s: last state of %d chains of %d cycles (%d MALA steps) from the persistent state", name, t.Algorithm, n, steps, steps*t.Sampler.LocalSteps)
	}
	return fmt.Sprintf("%s, %s: last state of %d chains of %d steps from the persistent state", name, t.Algorithm, n, steps)
}

// EnergyHistogram compares the distributions of energies of several sets
// of points as density-normalised step histograms on common bins.
type EnergyHistogram struct {
	Title string
	Sets  []EnergySet
	// Bins is the number of bins (0: 40).
	Bins int
}

// EnergySet is one histogram of an EnergyHistogram.
type EnergySet struct {
	Name   string
	Energy []float64
}

// Save draws the histograms into path (format by extension). Non-finite
// energies are left out and counted in the set's legend entry.
func (h EnergyHistogram) Save(path string) error {
	bins := h.Bins
	if bins <= 0 {
		bins = 40
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range h.Sets {
		for _, e := range s.Energy {
			if !math.IsNaN(e) && !math.IsInf(e, 0) {
				lo, hi = math.Min(lo, e), math.Max(hi, e)
			}
		}
	}
	if lo > hi {
		lo, hi = 0, 1 // no finite energy: empty axes
	}
	if hi-lo < 1e-12*math.Max(1, math.Abs(lo)) {
		lo, hi = lo-0.5, hi+0.5
	}
	fig := Figure{Title: h.Title, XLabel: "energy Eθ(x) = −log of the unnormalised density", YLabel: "density"}
	for _, s := range h.Sets {
		pts, dropped := stepHistogram(s.Energy, lo, hi, bins)
		name := fmt.Sprintf("%s (%d)", s.Name, len(s.Energy)-dropped)
		if dropped > 0 {
			name += fmt.Sprintf(", %d non-finite left out", dropped)
		}
		fig.Curves = append(fig.Curves, Curve{Name: name, Points: pts})
	}
	return fig.Save(path)
}

// stepHistogram returns the density histogram of the finite values of x
// on bins equal bins of [lo, hi] as a step curve, and how many values
// were not finite.
func stepHistogram(x []float64, lo, hi float64, bins int) (plotter.XYs, int) {
	counts := make([]float64, bins)
	width := (hi - lo) / float64(bins)
	n := 0
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		k := min(bins-1, max(0, int((v-lo)/width)))
		counts[k]++
		n++
	}
	if n > 0 {
		floats.Scale(1/(float64(n)*width), counts)
	}
	pts := make(plotter.XYs, 0, 2*bins+2)
	pts = append(pts, plotter.XY{X: lo, Y: 0})
	for k, c := range counts {
		x0 := lo + float64(k)*width
		pts = append(pts, plotter.XY{X: x0, Y: c}, plotter.XY{X: x0 + width, Y: c})
	}
	pts = append(pts, plotter.XY{X: hi, Y: 0})
	return pts, len(x) - n
}

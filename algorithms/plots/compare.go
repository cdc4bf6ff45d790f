package plots

import (
	"fmt"
	"math"
	"path/filepath"

	"gonum.org/v1/plot/plotter"

	"github.com/flowebm/flowebm/algorithms/training"
)

// Named is one run's evaluations over training, named for a legend.
type Named struct {
	Name  string
	Evals []training.Eval
	// GridMissedAt, where not 0, is the iteration of an evaluation whose
	// quadrature grid misses the EBM's mass (metrics.json's grid_missed,
	// of the final one): its values that rest on the grid are left out.
	GridMissedAt int
	// ISRejectedAt, where not 0, is the iteration of an evaluation whose
	// importance-sampling log Z is more than 3 standard errors from the
	// grid's (metrics.json's grid_log_z, of the final one), where train and
	// the summary give the held-out LL by the grid: its IS one is left out
	// of the held-out LL figure.
	ISRejectedAt int
}

// comparison is one quantity plotted for several runs.
type comparison struct {
	file, title, yLabel string
	logY                bool
	thresholds          []Threshold
	value               func(training.Eval) float64
	// reliable, if not nil, says which evaluations' values the figure
	// shows; the others are left out, the title saying how many.
	reliable func(training.Eval) bool
	// grid: the values rest on the EBM's normalisation over the grid (or
	// its part of the mass), left out where the grid misses mass.
	grid bool
}

var comparisons = []comparison{
	{"ebm-weight-mse", "MSE of the mode weights against the truth\n(the EBM's by grid quadrature in 2D; beyond, its chains' final states)", "MSE", true, nil, func(e training.Eval) float64 { return e.EBMWeightMSE }, nil, true},
	{"max-rhat", "max rank-normalised R-hat over dimensions", "max R-hat", true, RHatThresholds, func(e training.Eval) float64 { return e.MaxRHat }, nil, false},
	{"log-density-error", "median squared log-density error over held-out data", "median squared error", true, nil, func(e training.Eval) float64 { return e.LogDensityMedSE }, nil, true},
	{"held-out-ll", "held-out log-likelihood (log Z by importance sampling)", "mean log-likelihood", false, nil, func(e training.Eval) float64 { return e.HeldOutLL },
		func(e training.Eval) bool { return e.LogZ.Reliable() || math.IsNaN(e.LogZ.ESS) }, true}, // round 105 A1: spikes at an ESS of 0.03% drawn as real
	{"global-accept", "global (flow) acceptance of the negatives' chains", "acceptance", false, nil, func(e training.Eval) float64 { return e.Stats.GlobalAccept }, nil, false},
}

// Compare draws, for each quantity some run has, one figure with a curve
// per run into dir in format f, and returns the files written.
func Compare(runs []Named, dir string, f Format) ([]string, error) {
	figs, files, err := CompareFigures(runs)
	if err != nil {
		return nil, err
	}
	var paths []string
	for i, fig := range figs {
		p := filepath.Join(dir, files[i]+f.Ext())
		if err := fig.Save(p); err != nil {
			return paths, fmt.Errorf("%s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// CompareFigures lays out the figures of Compare, and names their files
// (without extension). Every figure is laid out before any is written, so
// that data no plot can show leave no partial set of figures.
func CompareFigures(runs []Named) (figs []Figure, files []string, err error) {
	for _, c := range comparisons {
		fig := Figure{Title: c.title, XLabel: "iteration", YLabel: c.yLabel, LogY: c.logY, Thresholds: c.thresholds}
		any, unreliable, missed, rejected := false, 0, 0, 0
		for _, r := range runs {
			var pts plotter.XYs
			for _, e := range r.Evals {
				v := c.value(e)
				switch {
				case math.IsNaN(v) || math.IsInf(v, 0) || c.logY && v <= 0:
				case c.grid && r.GridMissedAt != 0 && e.Iter == r.GridMissedAt: // round 111 A1: drawn as the run's
					missed++
					pts = append(pts, plotter.XY{X: float64(e.Iter), Y: math.NaN()})
				case c.reliable != nil && !c.reliable(e):
					unreliable++
					pts = append(pts, plotter.XY{X: float64(e.Iter), Y: math.NaN()}) // a gap
				case c.reliable != nil && r.ISRejectedAt != 0 && e.Iter == r.ISRejectedAt: // round 113 A1: drawn unmarked, the summary giving the grid's
					rejected++
					pts = append(pts, plotter.XY{X: float64(e.Iter), Y: math.NaN()})
				default:
					pts = append(pts, plotter.XY{X: float64(e.Iter), Y: v})
					any = true
				}
			}
			fig.Curves = append(fig.Curves, Curve{Name: r.Name, Points: pts, Gaps: true})
		}
		if !any {
			continue
		}
		if unreliable > 0 {
			fig.Title += fmt.Sprintf("\n%s left out: %s log Z rests on an importance-sampling ESS below 1%% (unreliable)", evaluations(unreliable, ""), its(unreliable))
		}
		if rejected > 0 {
			fig.Title += fmt.Sprintf("\n%s left out: %s log Z is more than 3 standard errors from the grid's (the summary gives the LL by grid quadrature)", evaluations(rejected, "final "), its(rejected))
		}
		if missed > 0 {
			fig.Title += fmt.Sprintf("\n%s left out: the quadrature grid misses the EBM's mass there (grid_missed)", evaluations(missed, "final "))
		}
		if _, _, err := fig.layout(); err != nil {
			return nil, nil, err
		}
		figs = append(figs, fig)
		files = append(files, c.file)
	}
	return figs, files, nil
}

// evaluations is "n evaluation(s)", kind ("final ") before the noun.
func evaluations(n int, kind string) string {
	if n == 1 {
		return "1 " + kind + "evaluation"
	}
	return fmt.Sprintf("%d %sevaluations", n, kind)
}

// its is the possessive of n evaluations.
func its(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

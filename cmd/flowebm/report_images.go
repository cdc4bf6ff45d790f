package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
)

// imageExperiments are the full-resolution image experiments (App. C.6),
// in report order; reproduce runs them when --experiments names them.
var imageExperiments = []string{"mnist28", "fashion-mnist", "cifar10"}

// imageTitles name the image experiments in the report.
var imageTitles = map[string]string{
	"mnist28":       "MNIST, 28×28",
	"fashion-mnist": "Fashion-MNIST, 28×28",
	"cifar10":       "CIFAR-10, 3×32×32",
}

// images writes the full-resolution image experiments (App. C.6): the
// class weights with their errors, acceptance, R-hat, and the runs'
// figures of samples (paper Fig. 8) and energies (Fig. 7).
func (w *reportWriter) images() error {
	p, runs := w.p, w.runs
	var shown []string
	for _, e := range imageExperiments {
		if len(present(runs, e)) > 0 {
			shown = append(shown, e)
		}
	}
	if len(shown) == 0 {
		return nil
	}
	p("## Image experiments at full resolution (App. C.6)\n\n")
	p("The paper trains flowMC-EBM on CIFAR-10 (a convolutional EBM of about 4.5M parameters and a convolutional RealNVP of about 4M, batch 128, 70 epochs) and states: \"The global sampler proposals are getting accepted 5-10%% of the time\" and \"The EBM produces sample in the right energy range but not as diverse as the training data\" (App. C.6, Figs. 7 and 8). ")
	p("Here: every algorithm on the images at full resolution (28×28 for MNIST and Fashion-MNIST, 3×32×32 for CIFAR-10), dequantised to [−1, 1], with the scaled convolutional EBM and RealNVP of `flowebm train`'s defaults (each run's `log.txt` states the scaling). ")
	p("Class weights are the sampler's: the draws of the R-hat chains (the algorithm's kernel from the persistent bank; from the flow for CoopFlow) labelled by the experiment's 5-nearest-neighbour classifier, ± their Monte Carlo standard error from the ESS of each class's indicator (the 95%% interval is ± 1.96 of it); the MSEs are of the weights among those chains' final states, against the data's class frequencies and against the negatives' (pooled since the previous evaluation). ")
	p("A class-weight MSE says something only for samples that look like the data (see the samples figures): noise images, labelled by their nearest neighbours, spread over the classes and can score well. ")
	p("Global acceptance is the training iteration's at the last evaluation, and its range over the evaluations of the second half of training. ")
	p("Each run's figures: the last state of 64 chains (fewer where the persistent bank holds fewer) of 512 steps from the persistent state (paper Fig. 8; for flowMC-EBM 512 MALA steps, in cycles of one i-SIR move and the cycle's MALA steps; CoopFlow's chains start from its flow and run as many noise-free Langevin steps as in training, 512 of which drive every chain to one point), the energies −log p̃θ of held-out images against those chains and the persistent bank (Fig. 7), and the acceptance over training.\n\n")
	for _, e := range shown {
		w.imageExperiment(e)
	}
	return nil
}

// imageExperiment writes one image experiment's table and figures.
func (w *reportWriter) imageExperiment(e string) {
	p, ext := w.p, w.ext
	rs := present(w.runs, e)
	p("### %s\n\n", imageTitles[e])
	w.partial(rs)
	p("| algorithm | class-weight MSE (chains' final states vs data) | negatives' MSE vs the chains' final states | sampler's weights ± MCSE, classes 0–9 (all draws) | global acc., last (second half) | max R-hat (rank / classic) | iterations | ms/iteration |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		ev := r.final()
		if ev == nil || r.err != "" {
			p("| %s | %s | | | | | | |\n", algorithmNames[r.algorithm], r.status())
			continue
		}
		lo, hi := evalRange(r.evals, func(e training.Eval) float64 { return e.Stats.GlobalAccept })
		acc := fmtRate(ev.Stats.GlobalAccept)
		if !math.IsNaN(lo) && r.algorithm == algorithms.FlowMC {
			acc += fmt.Sprintf(" (%.2f – %.2f)", lo, hi)
		}
		ms := 1000 * r.metrics.Seconds / float64(max(1, r.metrics.Iterations))
		p("| %s%s | %.2e | %.2e | %s | %s | %.2f / %.2f | %d | %.0f |\n", algorithmNames[r.algorithm], r.mark(), ev.EBMWeightMSE, ev.NegMSE,
			classWeights(ev, r.metrics.Final), acc, ev.MaxRHat, ev.MaxRHatClassic, r.metrics.Iterations, ms)
	}
	p("\n")
	for _, fig := range []struct{ name, what string }{
		{plots.ChainsFigure, "Samples: last state of 64 chains (or the bank's, if fewer; of 512 gradient steps from the persistent state; CoopFlow's of its training length from its flow)"},
		{plots.EnergiesFigure, "Energies of held-out images and of samples"},
		{"acceptance", "Acceptance over training"},
	} {
		var imgs string
		for _, r := range rs {
			if _, err := os.Stat(filepath.Join(r.dir, fig.name+ext)); err == nil && r.state == "" { // not an unreadable or mismatched run's (round 85 B2)
				imgs += fmt.Sprintf("![%s %s](runs/%s/%s%s) ", r.name(), fig.name, r.name(), fig.name, ext)
			}
		}
		if imgs != "" {
			p("%s (in the table's order of algorithms that have it):\n\n%s\n\n", fig.what, imgs)
		}
	}
}

// evalRange is the range of f over the evaluations of the second half of
// training (NaN, NaN where f is NaN throughout).
func evalRange(evals []training.Eval, f func(training.Eval) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	if len(evals) == 0 {
		return math.NaN(), math.NaN()
	}
	last := evals[len(evals)-1].Iter
	for _, e := range evals {
		if v := f(e); 2*e.Iter >= last && !math.IsNaN(v) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if lo > hi {
		return math.NaN(), math.NaN()
	}
	return lo, hi
}

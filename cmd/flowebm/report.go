package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// writeReport writes DIR/report.md, the paper's tables beside the runs'
// numbers section by section, then the acceptance checks, and its
// figures, returning the seeds.json files it could not read (named in the
// report).
func writeReport(f reproduceFlags, runs []*reproRun, elapsed time.Duration) (badSeeds []string, err error) {
	w := newReportWriter(f, runs)
	w.extra = extraFolders(f.out, runs) // round 88 B1: a reproduce of another set left the earlier runs unsaid
	w.header(elapsed)
	for _, section := range []func() error{w.twoModes, w.fourModes, w.table1, w.table2, w.mnist, w.images, w.overSeeds, w.heldOut} {
		if err := section(); err != nil {
			return nil, err
		}
	}
	w.p("## Checks against the acceptance criteria\n\n")
	checks := append(acceptanceChecks(w.get), w.seedChecks()...)
	for _, c := range checks {
		w.p("- %s\n", c)
	}
	if len(checks) == 0 { // round 89 B5: the heading over nothing
		w.p("No acceptance criterion applies to these runs: the criteria are of flowMC-EBM's runs of two-modes, four-modes, the four-gaussians mixtures and the image experiments.\n")
	}
	_, badSeeds = w.readSeedSets()
	text := w.b.String()
	if err := safefile.Write(filepath.Join(f.out, "report.md"), func(out io.Writer) error { _, err := io.WriteString(out, text); return err }); err != nil {
		return badSeeds, err
	}
	return badSeeds, removeUnlinkedFigures(f.out, text)
}

// reportRecord is the file beside report.md that lists the figures the
// report drew there (figureSet).
const reportRecord = ".report-figures"

// removeUnlinkedFigures removes from dir the report figures that an
// earlier report drew (its record) and this report's text does not show:
// an earlier report's in another format, or of runs no longer reported
// (round 83 B5: a partial PNG report's figure stood beside the SVG
// report's). A file of the user's named like one is kept (round 119 B7:
// any file of a figure's name, in any format, was deleted unsaid).
func removeUnlinkedFigures(dir, text string) error {
	var linked []string
	for _, name := range reportNames() {
		if name != "report.md" && strings.Contains(text, "]("+name+")") {
			linked = append(linked, name)
		}
	}
	isFigure := func(name string) bool { return name != "report.md" && slices.Contains(reportNames(), name) }
	_, _, err := figureSet(dir, reportRecord, linked, isFigure, true)
	return err
}

// The report's figures, beside report.md (in the plot format's
// extension).
const (
	twoModesFigure  = "two-modes-weights"
	fourModesFigure = "four-modes-mse"
)

// noFigure stands for a figure over training of runs none of which has
// evaluated yet.
const noFigure = "(no figure: none of these runs has an evaluation yet)"

// rhatFigure is the report's figure of max R-hat for experiment e.
func rhatFigure(e string) string { return "rhat-" + e }

// reportNames are the files that reproduce writes into its folder beside
// runs/: report.md and its figures in every plot format.
func reportNames() []string {
	names := []string{twoModesFigure, fourModesFigure}
	for _, e := range highDim {
		names = append(names, rhatFigure(e))
	}
	return append(figureNames(names...), "report.md")
}

// reportWriter builds report.md.
type reportWriter struct {
	f     reproduceFlags
	runs  []*reproRun
	ext   string // the plots' file extension
	byKey map[string]*reproRun
	extra []extraFolder // folders in runs/ that are none of the runs
	seeds *seedSets     // DIR/seeds, once read
	b     strings.Builder
}

func newReportWriter(f reproduceFlags, runs []*reproRun) *reportWriter {
	w := &reportWriter{f: f, runs: runs, ext: f.plotFormat.Ext(), byKey: map[string]*reproRun{}}
	for _, r := range runs {
		w.byKey[r.name()] = r
	}
	return w
}

// p appends formatted text.
func (w *reportWriter) p(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }

// get returns the run of experiment e with algorithm a (nil if none).
func (w *reportWriter) get(e string, a algorithms.Algorithm) *reproRun {
	return w.byKey[e+"-"+string(a)]
}

// header writes the title and how the runs were made.
func (w *reportWriter) header(elapsed time.Duration) {
	p, f, runs := w.p, w.f, w.runs
	mode := "full"
	switch {
	case f.quick:
		mode = "quick (a tenth of the iterations: not comparable with the paper)"
	case f.iters > 0:
		mode = fmt.Sprintf("%d iterations per run (not comparable with the paper)", f.iters)
	}
	p("# flowebm reproduce: our numbers beside the paper's\n\n")
	var trainSeconds float64
	for _, r := range runs {
		trainSeconds += r.metrics.Seconds
	}
	summed := (time.Duration(trainSeconds) * time.Second).Round(time.Second)
	if f.report != "" {
		w.reportHeader(mode, summed)
	} else {
		p("- Mode: %s; seed %d; %d runs; training time summed over the finished runs %s (this invocation: %s, up to %s at a time; how each run was trained: the time note below).\n", mode, f.seed, len(runs), // round 111 B2: "1 at a time" of runs an earlier invocation trained 2 at a time
			summed, elapsed.Round(time.Second), count(f.jobs, "run"))
		for _, x := range w.extra {
			if x.why == notInSet {
				p("- Not in this report: `runs/%s` (%s, this reproduce's; `flowebm reproduce --report` with --experiments and --algorithms naming it reports it beside these).\n", x.name, x.why)
			}
		}
		p("- Machine: %s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	}
	if rev := vcsRevision(); rev != "" {
		p(", flowebm %s", rev)
	}
	if f.report != "" {
		p(" (each run's `metrics.json` records the build that trained it)")
	}
	p(".\n- Settings: `flowebm train`'s defaults, the paper's App. C scaled to 2 CPU cores (each run's `config.json` says exactly how, as do the scaling notes train prints, kept at the top of its `log.txt` where reproduce or a plan's line trained it); the paper's own settings are in `algorithms/configs/`.\n")
	p("- Every run folder `runs/EXPERIMENT-ALGORITHM/` holds its metrics over training (`metrics.csv`), final metrics (`metrics.json`), checkpoint and plots.\n\n")
}

// reportHeader writes --report's lines on how the runs were made and
// which have no result, in place of reproduce's own.
func (w *reportWriter) reportHeader(mode string, summed time.Duration) {
	p, f, runs := w.p, w.f, w.runs
	how := ""
	if f.inferred != "" {
		how = " (" + f.inferred + " read from the runs' config.json)"
	}
	if f.setInferred {
		how += fmt.Sprintf("; the runs reported are those of the reproduce that made this folder (`%s`): experiments %s × algorithms %s", runSetFile, f.experiments, f.algorithms)
	}
	var lacking []*reproRun
	for _, r := range runs {
		if !r.hasResult() {
			lacking = append(lacking, r)
		}
	}
	p("- Mode: %s; seed %d%s; built by `flowebm reproduce --report` from the run folders in `runs/`, however they were trained (a --plan's commands, a scheduler, reproduce, by hand); %d of %d runs have a result; training time summed over the finished runs %s.\n",
		mode, f.seed, how, len(runs)-len(lacking), len(runs), summed)
	if len(lacking) > 0 {
		p("- **Partial set**: %d of %d runs have no result, and every section below says which of its tables this leaves partial:\n", len(lacking), len(runs))
		for _, r := range lacking {
			p("  - `%s`: %s: %s\n", r.name(), r.status(), r.err)
		}
	}
	for _, x := range w.extra {
		p("- Not in this report: `runs/%s` (%s).\n", x.name, x.why)
	}
	p("- Report built on: %s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// partial writes, above the table of the runs rs, which of them have no
// result (missing, unfinished, failed or unreadable): the table then
// covers a partial set.
func (w *reportWriter) partial(rs []*reproRun) {
	var lacking []string
	for _, r := range rs {
		if !r.hasResult() {
			s := r.name() + " " + r.status()
			if r.note != "" {
				s += " (" + r.note + ")"
			}
			lacking = append(lacking, s)
		}
	}
	if len(lacking) > 0 {
		w.p("**Partial set: %d of %d runs have a result** (no result: %s); its comparisons cover only those.\n\n", len(rs)-len(lacking), len(rs), strings.Join(lacking, ", "))
	}
}

// rows writes a table row per run: row for a run whose final evaluation
// has what ok asks, else the run's status in a row of cols cells.
func (w *reportWriter) rows(rs []*reproRun, cols int, ok func(*training.Eval) bool, row func(*reproRun, *training.Eval)) {
	for _, r := range rs {
		if ev := r.final(); ev != nil && ok(ev) {
			row(r, ev)
			continue
		}
		w.p("| %s | %s |%s\n", algorithmNames[r.algorithm], r.status(), strings.Repeat(" |", cols-2))
	}
}

// fmtChainWeights writes weights with their Monte Carlo standard errors
// ("0.340 ± 0.009, 0.660 ± 0.009"; the weight alone where its error is
// undefined), or — for a run without them (trained before they were
// recorded).
func fmtChainWeights(ws []diagnostics.Weight) string {
	if len(ws) == 0 {
		return "—"
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("%.3f ± %.3f", w.Weight, w.MCSE)
		if math.IsNaN(w.MCSE) { // too few draws or batches for an error
			parts[i] = fmt.Sprintf("%.3f", w.Weight)
		}
	}
	return strings.Join(parts, ", ")
}

// negWeights writes the negatives' weights of ev, with their Monte Carlo
// standard errors where the run's final evaluation (metrics.json) is ev
// and has them.
func negWeights(ev *training.Eval, final training.Eval) string {
	if final.Iter == ev.Iter && len(final.NegIntervals) > 0 {
		return fmtChainWeights(final.NegIntervals)
	}
	return fmtWeights(ev.NegWeights)
}

// classWeights writes the sampler's class weights ± MCSE of the run's
// final evaluation, or the EBM's weights without errors for a run trained
// before they were recorded.
func classWeights(ev *training.Eval, final training.Eval) string {
	if final.Iter == ev.Iter && len(final.ChainWeights) > 0 {
		return fmtChainWeights(final.ChainWeights)
	}
	return fmtWeights(ev.EBMWeights) + " (EBM, no errors recorded)"
}

// twoModes writes the motivating example (paper Fig. 1).
func (w *reportWriter) twoModes() error {
	p, ext, runs, f := w.p, w.ext, w.runs, w.f
	if rs := present(runs, "two-modes"); len(rs) > 0 {
		p("## Motivating example: two modes with weights 1/3, 2/3 (paper Fig. 1)\n\n")
		p("EBM mode weights by grid quadrature (200² grid on [−3.5, 3.5]²: no Monte Carlo error); negatives' weights by nearest-mode zones, pooled over the iterations since the previous evaluation, ± their Monte Carlo standard error from the iteration-to-iteration variation (a single batch of 64 has a standard error near 0.06 per weight); the sampler's weights among the draws of the final R-hat chains (the algorithm's kernel from the persistent bank) ± their Monte Carlo standard error (the 95%% interval is ± 1.96 of it).\n\n")
		w.partial(rs)
		p("| algorithm | EBM weight, mode (−1.5, −1.5) | EBM weight, mode (1.5, 1.5) | weight MSE | negatives' weights | sampler's weights ± MCSE | spread of the top-right weight over the last half of training |\n|---|---|---|---|---|---|---|\n")
		w.rows(rs, 7, func(ev *training.Eval) bool { return ev.EBMWeights != nil }, func(r *reproRun, ev *training.Eval) {
			lo, hi := weightRange(r.evals, 1)
			p("| %s%s | %.3f | %.3f | %.2e | %s | %s | %.3f – %.3f |\n", algorithmNames[r.algorithm], r.mark(), ev.EBMWeights[0], ev.EBMWeights[1], ev.EBMWeightMSE, negWeights(ev, r.metrics.Final), fmtChainWeights(r.metrics.Final.ChainWeights), lo, hi)
		})
		p("\nTruth: 0.333, 0.667. ")
		drawn, err := plotAcross(f.out, twoModesFigure+ext, "two-modes: EBM weight of the top-right mode over training", "weight", false, []plots.Threshold{{Value: 2.0 / 3, Label: "truth 2/3"}}, rs, // round 85: the truth line was unnamed
			func(e training.Eval) float64 { return e.EBMWeight(1) })
		if err != nil {
			return err
		}
		if drawn {
			p("Top-right weight over training (dashed: 2/3):\n\n![two-modes weights](%s%s)\n\n", twoModesFigure, ext)
		} else {
			p("%s\n\n", noFigure)
		}
	}
	return nil
}

// fourModes writes the extended motivating example (paper Table 3).
func (w *reportWriter) fourModes() error {
	p, ext, runs, f := w.p, w.ext, w.runs, w.f
	if rs := present(runs, "four-modes"); len(rs) > 0 {
		p("## Extended motivating example: four modes with weights 0.1, 0.2, 0.3, 0.4 (paper Table 3)\n\n")
		p("MSEs of mode weights: chain starts and negatives (each pooled over the iterations since the previous evaluation) against the EBM, the EBM against the truth. Ours / paper.\n\n")
		w.partial(rs)
		p("| algorithm | init. wrt EBM | neg. samples wrt EBM | EBM wrt truth | EBM weights (quadrature) | sampler's weights ± MCSE |\n|---|---|---|---|---|---|\n")
		w.rows(rs, 6, func(*training.Eval) bool { return true }, func(r *reproRun, ev *training.Eval) {
			pp := paperNumbers.table3[r.algorithm]
			p("| %s%s | %.2e / %.2e | %.2e / %.2e | %.2e / %.2e | %s | %s |\n", algorithmNames[r.algorithm], r.mark(), ev.StartMSE, pp[0], ev.NegMSE, pp[1], ev.EBMWeightMSE, pp[2], fmtWeights(ev.EBMWeights), fmtChainWeights(r.metrics.Final.ChainWeights))
		})
		drawn, err := plotAcross(f.out, fourModesFigure+ext, "four-modes: MSE of the EBM's mode weights against the truth", "MSE", true, nil, rs,
			func(e training.Eval) float64 { return e.EBMWeightMSE })
		if err != nil {
			return err
		}
		if drawn {
			p("\n![four-modes MSE](%s%s)\n\n", fourModesFigure, ext)
		} else {
			p("\n%s\n\n", noFigure)
		}
	}
	return nil
}

// table1 writes the 2D targets (paper Table 1).
func (w *reportWriter) table1() error {
	p, get, ext, runs := w.p, w.get, w.ext, w.runs
	var t1 []string
	for _, e := range []string{"8-gaussians", "rings"} {
		if len(present(runs, e)) > 0 {
			t1 = append(t1, e)
		}
	}
	if len(t1) > 0 {
		p("## 2D targets (paper Table 1)\n\n")
		p("Median over 4,096 held-out data points of (log p_θ(x) − log p⋆(x))², the EBM normalised by quadrature on a 200² grid. Ours / paper.\n\n")
		w.partial(presentAll(runs, t1))
		crossTable(&w.b, t1, get, func(e string) string { return e }, func(ev *training.Eval, e string, a algorithms.Algorithm) string {
			return fmt.Sprintf("%.2f / %.2f", ev.LogDensityMedSE, paperNumbers.table1[e][a])
		}, func(e string, a algorithms.Algorithm) float64 { return paperNumbers.table1[e][a] })
		var rows []string // an experiment's densities each (probe 69 B6: the caption over none)
		for _, e := range t1 {
			var images []string
			for _, r := range present(runs, e) {
				if _, err := os.Stat(filepath.Join(r.dir, "density"+ext)); err == nil && r.state == "" { // round 85 B2: an unreadable or mismatched run's (another algorithm's) density shown
					images = append(images, fmt.Sprintf("![%s](runs/%s/density%s)", r.name(), r.name(), ext))
				}
			}
			if len(images) > 0 {
				rows = append(rows, strings.Join(images, " "))
			}
		}
		if len(rows) > 0 {
			p("\nDensities (each run's `density%s`):\n\n%s\n\n", ext, strings.Join(rows, "\n\n"))
		} else {
			p("\nDensities: %s\n\n", noFigure)
		}
	}
	return nil
}

// table2 writes the high-dimensional mixture (paper Table 2).
func (w *reportWriter) table2() error {
	p, get, ext, runs, f := w.p, w.get, w.ext, w.runs, w.f
	var t2 []string
	for _, e := range highDim {
		if len(present(runs, e)) > 0 {
			t2 = append(t2, e)
		}
	}
	if len(t2) > 0 {
		p("## High-dimensional mixture of four Gaussians (paper Table 2)\n\n")
		p("Max over dimensions of R-hat of 128 chains started from the persistent state (from the flow for CoopFlow), run with the training kernel for the paper's number of steps of that algorithm (at least 8; a flowMC step is a whole global + local cycle), not the scaled training chains' length: R-hat falls as chains grow. Rank-normalised split R-hat (Vehtari et al. 2021) / classic R-hat / paper. Both are large when chains barely move; for well-mixed chains stuck in separate modes the rank-normalised R-hat saturates (about 1.66 for two equal groups) while the classic one grows with the separation, so the paper's large values compare with the classic column.\n\n")
		w.partial(presentAll(runs, t2))
		crossTable(&w.b, t2, get, func(e string) string { return "d = " + strings.TrimPrefix(e, "four-gaussians-") }, func(ev *training.Eval, e string, a algorithms.Algorithm) string {
			return fmt.Sprintf("%.2f / %.2f / %.2f", ev.MaxRHat, ev.MaxRHatClassic, paperNumbers.table2[e][a])
		}, func(e string, a algorithms.Algorithm) float64 { return paperNumbers.table2[e][a] })
		p("\n")
		for _, e := range t2 {
			name := rhatFigure(e) + ext
			drawn, err := plotAcross(f.out, name, e+": max rank-normalised R-hat over training", "max R-hat", true, plots.RHatThresholds, present(runs, e),
				func(e training.Eval) float64 { return e.MaxRHat })
			if err != nil {
				return err
			}
			if drawn {
				p("![%s](%s)\n", name, name)
			} else {
				p("%s: %s\n\n", e, noFigure)
			}
		}
		p("\n")
	}
	return nil
}

// mnist writes the image experiment (App. C.6 at 2-core scale).
func (w *reportWriter) mnist() error {
	p, ext, runs := w.p, w.ext, w.runs
	if rs := present(runs, "mnist"); len(rs) > 0 {
		p("## Image experiment (App. C.6 at 2-core scale): MNIST pooled to 7×7\n\n")
		p("The paper trains flowMC-EBM on CIFAR-10 with convolutional networks of millions of parameters and reports samples and a global acceptance of 5–10%%. Here: MNIST average-pooled to 7×7 (49 dimensions), dequantised to [−1, 1], an MLP EBM and a RealNVP. Class weights: EBM from the final states of 128 chains started from the persistent bank, negatives pooled over the iterations since the previous evaluation, each image labelled by 5 nearest neighbours among 10,000 training images (94%% accurate on held-out digits); truth = MNIST's class frequencies. The class weights shown are the sampler's: among every draw of those 128 chains, ± their Monte Carlo standard error (from the ESS of each class's indicator; the 95%% interval is ± 1.96 of it).\n\n")
		w.partial(rs)
		p("| algorithm | class-weight MSE of the EBM | of the negatives (vs EBM) | sampler's weights ± MCSE, classes 0–9 | global acc. | max R-hat (rank / classic) |\n|---|---|---|---|---|---|\n")
		for _, r := range rs {
			ev := r.final()
			if ev == nil || r.err != "" {
				p("| %s | %s | | | | |\n", algorithmNames[r.algorithm], r.status())
				continue
			}
			p("| %s | %.2e | %.2e | %s | %s | %.2f / %.2f |\n", algorithmNames[r.algorithm], ev.EBMWeightMSE, ev.NegMSE, classWeights(ev, r.metrics.Final), fmtRate(ev.Stats.GlobalAccept), ev.MaxRHat, ev.MaxRHatClassic)
		}
		// The runs that drew their chains, named (probe 68 B7: a caption
		// naming all four algorithms over no image).
		var names, images []string
		for _, r := range rs {
			if _, err := os.Stat(filepath.Join(r.dir, "samples"+ext)); err == nil && r.state == "" {
				names = append(names, algorithmNames[r.algorithm])
				images = append(images, fmt.Sprintf("![%s](runs/%s/samples%s)", r.name(), r.name(), ext))
			}
		}
		if len(images) > 0 {
			p("\nPersistent chains after training (first 64 of the bank), %s:\n\n%s\n\n", strings.Join(names, ", "), strings.Join(images, " "))
		}
	}
	return nil
}

// heldOut writes held-out log-likelihoods, acceptance and time of every run.
func (w *reportWriter) heldOut() error {
	p, runs, f := w.p, w.runs, w.f
	p("## Held-out log-likelihood, acceptance and time (all runs)\n\n")
	p("Time per iteration includes the evaluations, %s.\n\n", sharingNote(cmp.Or(f.report, f.out), runs))
	p("Mean log-likelihood of 4,096 held-out points under the normalised EBM, log Z estimated by importance sampling with 4,096 draws of the companion flow (of the tilt ρ for ULA-EBM), beside the same mean under the exact density; not in the paper. IS ESS is the importance weights' effective sample size as a fraction: below a few per cent, log Z (and so the log-likelihood) is unreliable.\n\n")
	w.partial(runs)
	p("| run | held-out LL | exact | log Z ± s.e. | IS ESS | local acc. | global acc. | iterations | ms/iteration |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		ev := r.final()
		if ev == nil || r.err != "" {
			p("| %s | %s | | | | | | | |\n", r.name(), r.status())
			continue
		}
		exact := "—"
		if r.exactDensity {
			exact = fixed3(r.metrics.TrueHeldOutLL)
		}
		ms := 1000 * r.metrics.Seconds / float64(max(1, r.metrics.Iterations))
		local := ev.Stats.LocalAccept
		if !r.algorithm.AcceptsLocally() {
			local = math.NaN() // unadjusted Langevin: no accept step
		}
		p("| %s | %s%s | %s | %s | %.1f%% | %s | %s | %d | %.0f |\n", r.name(), fixed3(ev.HeldOutLL), r.missedMark(), exact,
			withError(ev.LogZ.LogZ, ev.LogZ.SE), 100*ev.LogZ.ESS, fmtRate(local), fmtRate(ev.Stats.GlobalAccept), r.metrics.Iterations, ms)
	}
	p("\n")
	return nil
}

package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/npy"
)

// summaryName is the table that compare writes beside its figures.
const summaryName = "summary.md"

// runSummary is what compare's table shows of one run: its configuration
// (where config.json reads), its evaluations, and its metrics.json where
// it has finished.
type runSummary struct {
	plots.Named
	dir     string
	cfg     string // experiment, algorithm and flow, or "" where unreadable
	exp     string // the experiment (a data set: its file), or "" where unreadable
	total   int    // the run's iterations (0 where unreadable)
	metrics *training.Metrics
	exactLL float64 // the exact held-out LL (NaN: unknown), from metrics.json or drawn again from config.json
	// diverged: the run's error.txt records a divergence (round 112 B4:
	// shown as "2 of 20", an interrupted run's)
	diverged bool
}

// readSummary reads what the table shows of the run in dir, and returns
// the errors of its config.json and metrics.json where they are present
// but cannot be read (probe 59: a damaged one showed — without a word).
// A run still training has no metrics.json.
func readSummary(r plots.Named, dir string) (runSummary, []error) {
	s := runSummary{Named: r, dir: dir, exactLL: math.NaN(), diverged: divergedBefore(dir) != ""}
	var unread []error
	cfg, err := training.ReadRunConfig(dir)
	if err != nil && (exists(filepath.Join(dir, "config.json")) || training.ConfigRestore(dir) != "") { // probe 61: a deleted one, silent
		unread = append(unread, err)
	}
	if err == nil {
		if edited := training.ConfigEdited(dir, cfg); edited != nil { // round 105 B7: another run's config.json, metrics.json blamed
			return s, append(unread, edited)
		}
	}
	if err == nil {
		m := cfg.Model.WithDefaults()
		flow := string(m.Flow)
		switch {
		case !cfg.Train.Algorithm.TrainsFlow():
			flow = "—" // ula builds none (probe 26: "realnvp")
		case m.FlowONNX != nil:
			flow = "ONNX"
		}
		s.cfg = fmt.Sprintf("%s | %s | %s", cell(cmp.Or(cfg.Experiment, "data")), cell(string(cfg.Train.Algorithm)), cell(flow))
		s.exp, s.total = cmp.Or(cfg.Experiment, "data"), cfg.Train.Iterations
		if cfg.Data != nil {
			s.exp = "data " + filepath.Base(cfg.Data.File)
		}
	}
	path := filepath.Join(dir, "metrics.json")
	m, err := training.ReadMetrics(path)
	if err == nil && s.cfg != "" && m.OfRun(cfg) {
		err = checkMetricsOfRun(dir, path, m, cfg, r.Evals) // round 105 B2, B3: edited fields shown as the run's
	}
	if outvoted := training.ConfigOutvoted(dir); err == nil && s.cfg != "" && outvoted != nil { // round 141 B1: "train --resume writes the run's own again", which trained it on over its results
		return s, append(unread, outvoted)
	}
	switch {
	case err == nil && s.cfg != "" && !m.OfRun(cfg): // round 95 B3: another run's, read as this one's
		unread = append(unread, fmt.Errorf("%s is of seed %d, %s, %d iterations, but the run's config.json has seed %d, %s, %d: the files disagree (flowebm train --resume %s writes the run's own again)",
			path, m.Seed, m.Algorithm, m.Iterations, cfg.Seed, cfg.Train.Algorithm, cfg.Train.Iterations, shellQuote(dir)))
	case err == nil:
		s.metrics, s.exactLL = &m, m.TrueHeldOutLL
	case errors.As(err, new(uncheckedError)), errors.As(err, new(*training.SecondsError)): // its own way on (round 139 B1: "train --resume writes it again" of a time that may be the checkpoint's edit)
		unread = append(unread, err)
	case exists(path) && hasCheckpointFolder(dir): // round 107 B4: no way on named
		unread = append(unread, fmt.Errorf("%w (flowebm train --resume %s writes it again)", err, shellQuote(dir)))
	case exists(path):
		unread = append(unread, err)
	case cfg.Experiment != "": // still training: drawn again (round 63: left out)
		if s.exactLL, err = training.ExactHeldOutLL(cfg); err != nil {
			s.exactLL = math.NaN() // its config.json was read: an experiment it cannot draw is the evaluations' to show
		}
	}
	return s, unread
}

// checkMetricsOfRun checks a finished run's metrics.json m (at path)
// against its last evaluation (its checkpoint's where it reads, else
// evals' last, from metrics.csv) and its truth drawn again from cfg
// (training.CheckTruth); nil where they agree.
func checkMetricsOfRun(dir, path string, m training.Metrics, cfg config.Run, evals []training.Eval) error {
	if err := training.CheckTruth(path, m, cfg); err != nil { // the way on added by the caller (round 109 A1: given twice)
		return err
	}
	if cfg.Experiment != "" && m.Experiment != cfg.Experiment { // round 106 B4
		return fmt.Errorf("%s: field \"experiment\" is %q, but the run's config.json trains %q: edited, or another run's", path, m.Experiment, cfg.Experiment)
	}
	last, source, seconds := training.Eval{}, "", 0.0
	if len(evals) > 0 {
		last, source = evals[len(evals)-1], "metrics.csv's last row"
	}
	switch ck, s, ok, err := training.CheckpointLastEval(dir, -1); {
	case errors.As(err, new(training.EditedCheckpointError)): // round 110 B1: metrics.json blamed, train --resume advised, which refuses the checkpoint
		return uncheckedError{fmt.Errorf("%w: the run's checkpoint holds what no run writes (edited), so its outputs cannot be checked against it: restore the checkpoint from a copy, or train the run anew", err)}
	case err == nil && ok && (len(evals) == 0 || ck.Iter >= last.Iter): // an older checkpoint than the run's result (its final one lost: round 123 B4) is not the final
		last, source, seconds = ck, "as its checkpoint holds it", s
	}
	if source != "" {
		if err := training.CheckFinal(path, last, source); err != nil { // first: a checkpoint before the run's end is not its final (round 124 B2)
			return err
		}
	}
	return training.CheckSeconds(path, m, seconds) // round 106 B2
}

// writeSummary writes the table of the runs' final evaluations into
// dir/summary.md: held-out log-likelihood (against the exact one), max
// R-hat, global acceptance at the end and over the second half, mode
// weight MSE, and the time per iteration of finished runs.
func writeSummary(dir string, runs []runSummary) (string, error) {
	path := filepath.Join(dir, summaryName)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "| run | experiment | algorithm | flow | iterations | held-out LL (exact) | max R-hat, rank / classic | global acc., last (2nd-half mean) | weight MSE | ms/iteration |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		fmt.Fprintln(w, r.row())
	}
	fmt.Fprintln(w, "\nLast evaluation of each run (its metrics.csv, or its checkpoint's while it trains; \"160 of 400\" for a run not finished); a held-out LL whose log Z rests on an importance-sampling ESS below 1% is marked unreliable, and in 2D the LL by grid quadrature follows it where that estimate is unreliable or more than 3 standard errors from the grid's log Z; weight MSE: of the EBM's mode weights by grid quadrature in 2D, of its chains' final states beyond (the EBM's where they mix: see max R-hat); \"mass beyond the grid\" marks a 2-D run whose final quadrature grid misses the EBM's mass (train's warning, metrics.json's grid_missed): its weights, log Z and held-out LL are those of the grid's part, and the figures leave that evaluation out; time per iteration from metrics.json (training time summed over resumed invocations, divided by the iterations) for finished runs only; — where a run has no value.")
	err = errors.Join(w.Flush(), f.Close())
	return path, err
}

// row is the run's line of the table.
func (r runSummary) row() string {
	cfg := cmp.Or(r.cfg, "— | — | —")
	name := cell(r.Name)
	if len(r.Evals) == 0 {
		return fmt.Sprintf("| %s | %s | — | — | — | — | — | — |", name, cfg)
	}
	last := r.Evals[len(r.Evals)-1]
	ll := num(last.HeldOutLL, "%.3f")
	ms := "—"
	if !math.IsNaN(r.exactLL) {
		ll += " (" + num(r.exactLL, "%.3f") + ")"
	}
	if z := last.LogZ; !z.Reliable() && !math.IsNaN(z.ESS) && !math.IsNaN(last.HeldOutLL) { // round 82 B3: repeated without its ESS
		ll += ", unreliable: IS ESS " + essPercent(z.ESS)
	}
	missed := r.missedAt(last)
	if g := r.gridHeldOutLL(last); g != "" && missed == "" { // round 97 A1: train printed the grid's, the table the IS one alone
		ll += "; by grid quadrature " + g
	}
	ll += missed
	iters := strconv.Itoa(last.Iter)
	if r.metrics == nil && r.total > last.Iter { // round 82 B6: a stopped run looked finished
		iters = fmt.Sprintf("%d of %d", last.Iter, r.total)
		if r.diverged {
			iters += ", diverged (error.txt)"
		}
	}
	if m := r.metrics; m != nil {
		if m.Iterations > 0 {
			ms = fmt.Sprintf("%.0f", 1000*m.Seconds/float64(m.Iterations))
		}
	}
	rhat := num(last.MaxRHat, "%.3f") + " / " + num(last.MaxRHatClassic, "%.3f")
	acc := num(last.Stats.GlobalAccept, "%.2f") + " (" + num(secondHalfMean(r.Evals), "%.2f") + ")"
	mse := num(last.EBMWeightMSE, "%.2e")
	if missed != "" && mse != "—" {
		mse += ", unreliable: mass beyond the grid"
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", name, cfg, iters, ll, rhat, acc, mse, ms)
}

// missedAt is, where the run's final grid misses the EBM's mass
// (metrics.json's grid_missed, as train warns) and last is that final
// evaluation, the mark of its held-out LL: it and the weights cover the
// grid's part only (round 111 A1: shown unmarked); "" otherwise.
func (r runSummary) missedAt(last training.Eval) string {
	if m := r.metrics; m != nil && m.GridMissed != nil && m.Final.Iter == last.Iter {
		return fmt.Sprintf(", unreliable: the EBM's density beyond the grid reaches e^%.4g times its largest on it (mass the grid and log Z miss)", m.GridMissed.LogExcess)
	}
	return ""
}

// gridHeldOutLL is the held-out log-likelihood by the grid's log Z (of a
// finished 2-D run's metrics.json) where train prints it beside the
// importance-sampling one: that estimate unreliable, or more than 3
// standard errors from the grid's and farther than the grid's own error;
// "" otherwise, or where the two read alike to the 3 decimals shown.
func (r runSummary) gridHeldOutLL(last training.Eval) string {
	m := r.metrics
	if m == nil || m.GridHeldOutLL == nil || m.GridLogZ == nil || m.Final.Iter != last.Iter {
		return ""
	}
	g := fmt.Sprintf("%.3f", *m.GridHeldOutLL)
	if !gridLLShown(last.LogZ, *m.GridLogZ, m.GridError) || g == fmt.Sprintf("%.3f", last.HeldOutLL) { // round 105 A4: the same number again, where train, weighing the grid's own error, printed none
		return ""
	}
	return g
}

// cell is s as one Markdown table cell: its pipes escaped, its line
// breaks (a folder name may hold them) written as spaces.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// secondHalfMean is the mean global acceptance over the evaluations of
// the second half of the run so far (NaN where none has one).
func secondHalfMean(evals []training.Eval) float64 {
	half := evals[len(evals)-1].Iter / 2
	sum, n := 0.0, 0
	for _, e := range evals {
		if v := e.Stats.GlobalAccept; e.Iter > half && !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// num formats v, or — when it is NaN or infinite.
func num(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

// uncheckedError is why a run's outputs cannot be checked against its
// checkpoint: the checkpoint's, with its own way on (train --resume,
// which reads the checkpoint too, would refuse it).
type uncheckedError struct{ err error }

func (e uncheckedError) Error() string { return e.err.Error() }
func (e uncheckedError) Unwrap() error { return e.err }

// unwrittenOutputsNote says, for the run in dir that reached its last
// iteration (reached) yet lacks metrics.json or samples.npy, the outputs
// it writes at its end, that it was stopped as it wrote them and that
// train --resume writes them again (round 114 B1: compare showed such a
// run finished and plot drew its figures, unsaid; reproduce --report
// called it incomplete); "" otherwise. The caller checks that no other
// process holds the run (writing them now).
func unwrittenOutputsNote(dir string, reached bool) string {
	if !reached {
		return ""
	}
	var missing []string
	for _, name := range []string{"metrics.json", "samples.npy"} {
		if !exists(filepath.Join(dir, name)) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		if err := damagedSamples(dir); err != nil { // round 125 B1: a cut samples.npy, unsaid
			return fmt.Sprintf("flowebm: note: %v: flowebm train --resume %s writes it again", err, shellQuote(dir))
		}
		return ""
	}
	return fmt.Sprintf("flowebm: note: the run %s reached its last iteration but lacks %s, written at its end (it was stopped as it wrote its outputs): flowebm train --resume %s writes them again", dir, strings.Join(missing, " and "), shellQuote(dir))
}

// damagedSamples is why the samples.npy of the finished run in dir does
// not read as a (rows, d) array of d columns as its config.json's data
// has; nil where it does (its values are checked against the final
// chains by train --resume and plot, which load the checkpoint).
func damagedSamples(dir string) error {
	path := filepath.Join(dir, "samples.npy")
	a, err := npy.ReadFile(path)
	if err != nil {
		return fmt.Errorf("the run's %w", err)
	}
	if len(a.Shape) != 2 || a.Shape[0] < 1 {
		return fmt.Errorf("the run's %s has shape %v, want (chains, d)", path, a.Shape)
	}
	return nil
}

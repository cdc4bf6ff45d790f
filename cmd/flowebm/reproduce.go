package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/pathcheck"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
)

type reproduceFlags struct {
	out, experiments, algorithms string
	quick                        bool
	iters                        int
	itersGiven                   bool // --iterations given (0 is then refused)
	plotFormat                   plots.Format
	jobs                         int
	seed                         uint64
	force                        bool            // replace a report.md and figures that no reproduce wrote (with --plan: the plan file)
	plan, planBinary             string          // --plan FILE: write the runs' train commands instead of training
	report                       string          // --report DIR: build DIR/report.md from the run folders there
	given                        map[string]bool // the flags given on the command line
	inferred                     string          // --report: what was read from the runs' config.json ("" if all given)
	setInferred                  bool            // --report: the experiments and algorithms are those runSetFile records
}

// reproduceExperiments are the paper's experiments, in report order.
var reproduceExperiments = []string{"two-modes", "four-modes", "8-gaussians", "rings",
	"four-gaussians-16", "four-gaussians-32", "four-gaussians-64", "mnist"}

// highDim are the experiments of paper Table 2.
var highDim = []string{"four-gaussians-16", "four-gaussians-32", "four-gaussians-64"}

func reproduceCmd() *cobra.Command {
	var f reproduceFlags
	cmd := &cobra.Command{
		Use:   "reproduce",
		Short: "Run every experiment with every algorithm and write a report beside the paper's tables",
		Long: `reproduce trains every algorithm (flowmc, ula, nt, coopflow) on every
experiment of the paper (two-modes, four-modes, 8-gaussians, rings,
four-gaussians in d = 16, 32, 64, and the image experiment on MNIST pooled
to 7×7) with the scaled defaults of "flowebm train",
then writes DIR/report.md: the paper's Tables 1–3 beside our numbers, the
motivating example's weights, held-out log-likelihoods, acceptance rates and
timings, with plots (PNG, or --plot-format svg|pdf; each run's own plots are in DIR/runs/NAME).

The full-resolution image experiments (App. C.6 on 28×28 images, with
convolutional models) are not in the default list: --experiments
mnist28,fashion-mnist trains them (about an hour more on 2 cores), and the
report shows their class weights with errors, acceptance, R-hat, samples
and energy histograms; cifar10 runs too when FLOWEBM_CIFAR10 names the
folder of CIFAR-10's binary files (a GPU-class budget at the paper's scale).

Each run is a "flowebm train" process writing DIR/runs/EXPERIMENT-ALGORITHM;
--jobs of them run at once. Interrupted, reproduce can be started again with
the same DIR: finished runs are kept, interrupted ones resume from their
checkpoint; a diverged run (a result, as in the paper's tables) is reported,
not retried, and a run that failed otherwise (a full disk, say) is retried.
A failure other than divergence, or a run left unfinished, makes reproduce
exit with an error after writing the report; so does a run whose checkpoint
train --resume refuses (edited or damaged), which is kept, not restarted.
A DIR holding a report.md or report figures but no runs/ of an earlier
reproduce is refused unless --force.

On a cluster, --plan FILE trains nothing: it writes one "flowebm train"
command per run to FILE (line N is run N, longest first; each makes its
DIR/runs/EXPERIMENT-ALGORITHM and appends its output to log.txt there),
for a Slurm job array, GNU parallel or a Kubernetes Indexed Job. Runs
already finished or diverged in DIR are left out and interrupted ones are
resumed, so writing the plan again (--force replaces FILE) gives the runs
left. The commands run --plan-binary (default flowebm, found on PATH).
Then --report DIR builds DIR/report.md from the run folders however they
were trained, without training: missing, unfinished and unreadable runs are
marked, and so is every table they leave partial; the runs' seed and length
are read from their config.json unless --seed, --quick or --iterations give
them. It exits with an error, after writing the report, only for run
folders it cannot read or of other settings. docs/reproducing.md has the
scripts.

--quick trains a tenth of the iterations (at least 50): about 11 minutes
instead of about 40 on 2 cores (docs/reproducing.md says how each was
measured); its numbers are not comparable with the paper's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.itersGiven = cmd.Flags().Changed("iterations")
			f.given = map[string]bool{}
			cmd.Flags().Visit(func(fl *pflag.Flag) { f.given[fl.Name] = true })
			switch {
			case f.plan != "" || f.report != "":
				return runPlanOrReport(cmd.OutOrStdout(), f)
			case f.given["plan-binary"]:
				return fmt.Errorf("--plan-binary names the executable of the commands that --plan writes: give it with --plan FILE")
			}
			return runReproduce(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "output folder (default runs/reproduce or runs/reproduce-quick)")
	fl.BoolVar(&f.quick, "quick", false, "a tenth of the iterations, for a check in minutes")
	fl.IntVar(&f.iters, "iterations", 0, "train every run for this many iterations instead (a check in seconds; not comparable with the paper)")
	fl.IntVar(&f.jobs, "jobs", runtime.NumCPU(), "training processes run at once")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed of every run")
	fl.BoolVar(&f.force, "force", false, "write the report into an --out that holds a report.md or report figures but no runs/ of an earlier reproduce (replacing them); with --plan: replace the plan file")
	fl.Var(&f.plotFormat, "plot-format", "file format of the plots (the report's and every run's): png, svg or pdf")
	fl.StringVar(&f.experiments, "experiments", strings.Join(reproduceExperiments, ","), "comma-separated experiments")
	fl.StringVar(&f.algorithms, "algorithms", "flowmc,ula,nt,coopflow", "comma-separated algorithms")
	fl.StringVar(&f.plan, "plan", "", "train nothing: write one flowebm train command per run to this file, for a scheduler or GNU parallel (--force replaces it)")
	fl.StringVar(&f.planBinary, "plan-binary", "flowebm", "with --plan: the flowebm executable that the commands run, on the machines that run them")
	fl.StringVar(&f.report, "report", "", "train nothing: build DIR/report.md from the run folders in DIR/runs, however they were trained (missing and unfinished runs are marked)")
	markPathFlags(fl, "out", "plan", "report")
	return cmd
}

// reproRun is one training run of the reproduction.
type reproRun struct {
	experiment   string
	exp          *experiments.Experiment // nil for --plan's image runs (their images not read)
	algorithm    algorithms.Algorithm
	dir          string
	exactDensity bool // the experiment has an exact log-density
	// Filled after the run:
	evals   []training.Eval
	metrics training.Metrics
	err     string // the run's error (e.g. divergence), "" if it finished
	// state is, for --report, what keeps a run without a recorded error
	// from having a result: runMissing, runIncomplete, runInProgress,
	// runUnreadable or runMismatched (err then says why); "" otherwise.
	state string
	note  string // a short note on state, for the tables ("iteration 200 of 400")
	// startErr is why reproduce could not start the run's train process,
	// which nothing in its folder may say ("" if it started).
	startErr string
	// trained: reproduce started the run's train process and it trained
	// (not stopped at its start by a signal).
	trained bool
	// ckBefore is the SHA-256 of its newest checkpoint's COMPLETE as
	// this reproduce began ("" where none reads): trained on since the
	// record of how it was trained (noteTrainedBy) where that differs.
	ckBefore string
	// outcome is how trainOne left the run (zero if not reached).
	outcome outcome
}

// An outcome is how trainOne left a run: its kind, and the words of
// reproduce's progress line for it.
type outcome struct {
	kind   outcomeKind
	status string
}

// outcomeKind is what became of a run in a reproduce.
type outcomeKind int

const (
	outcomeNotReached  outcomeKind = iota // trainOne has not returned
	outcomeEnded                          // done, or diverged (a result)
	outcomeNotStarted                     // interrupted before it trained
	outcomeSkipped                        // another process trains it
	outcomeInterrupted                    // stopped at its last checkpoint
	outcomeFailed                         // retried by the next reproduce
)

func (o outcome) String() string { return o.status }

func (r *reproRun) name() string { return r.experiment + "-" + string(r.algorithm) }

func (r *reproRun) final() *training.Eval {
	if len(r.evals) == 0 {
		return nil
	}
	return &r.evals[len(r.evals)-1]
}

// check refuses flags out of range and an --out that is a file or a
// training run, and sets --out's default.
func (f *reproduceFlags) check() error {
	if f.jobs < 1 {
		return fmt.Errorf("--jobs %d, want ≥ 1", f.jobs)
	}
	if f.iters < 0 || (f.itersGiven && f.iters == 0) || f.iters > algorithms.MaxIterations {
		return fmt.Errorf("--iterations %d: want a count from 1 to %d (leave it out for the full runs)", f.iters, algorithms.MaxIterations)
	}
	if f.iters > 0 && f.quick {
		return fmt.Errorf("--iterations and --quick both set the runs' length: give one")
	}
	if f.out == "" { // the default checked as one given (probe 45: not checked)
		f.out = filepath.Join("runs", "reproduce")
		if f.quick {
			f.out += "-quick"
		}
	}
	if fi, err := os.Stat(f.out); err == nil && !fi.IsDir() {
		return fmt.Errorf("--out %s is a file: give a folder", f.out)
	}
	if isTrainingRun(f.out) || trainingRunAbove(f.out) != "" {
		return fmt.Errorf("--out %s is or is inside a training run: reproduce writes OUT/runs and OUT/report.md; give another folder", f.out)
	}
	flag := "--out"
	if f.report != "" {
		flag = "--report"
	} else if err := notFolderOfRuns(f.out); err != nil {
		return err
	}
	if err := checkHeldFolder(flag, f.out, "give another folder"); err != nil { // probe 44: --out H/checkpoint, a run setting up in H, was deleted by H's first checkpoint
		return err
	}
	if err := blockedFolder(f.out); err != nil {
		return fmt.Errorf("--out %s: %v", f.out, err) // before a run's config.json is read (probe 28: that file was named)
	}
	if err := replaceable(f.out, []string{runSetFile}, "reproduce records its set of runs there: move it away"); err != nil { // round 90 B3: a raw rename error after training
		return fmt.Errorf("--out %s: %w", f.out, err)
	}
	if f.plan != "" { // --force is the plan file's
		return checkPlanReportFolder(f.out)
	}
	return checkReportFolder(flag, f.out, f.force)
}

// notFolderOfRuns refuses an --out that holds training runs itself (a
// reproduce folder's runs/, train --seeds' folder): reproduce would write
// its runs/ and report among them (round 86 B4: train --out refused such
// folders, reproduce --out took them).
func notFolderOfRuns(out string) error {
	if ev := seedsEvidence(out); ev != "" {
		return fmt.Errorf("--out %s holds the seed runs of train --seeds (%s): reproduce writes OUT/runs and OUT/report.md; give a folder of its own", out, ev)
	}
	runs := runFolders(out)
	if len(runs) == 0 {
		return nil
	}
	if filepath.Base(filepath.Clean(out)) == "runs" && exists(filepath.Join(filepath.Dir(filepath.Clean(out)), "report.md")) {
		return fmt.Errorf("--out %s is the runs/ folder of a reproduce (it holds the runs %s): give the folder above it, %s, to continue that reproduce, or a folder of its own", out, listRuns(runs), filepath.Dir(filepath.Clean(out)))
	}
	if isReproduceFolder(out) { // round 94 B3: an earlier reproduce's folder, told to start afresh elsewhere
		return fmt.Errorf("--out %s is an earlier reproduce's folder, but it also holds the runs %s, outside its runs/: move them out of it, then give the same command again (it keeps the runs in runs/)", out, listRuns(runs))
	}
	return fmt.Errorf("--out %s holds the runs %s: reproduce writes OUT/runs and OUT/report.md; give a folder of its own", out, listRuns(runs))
}

// checkReportFolder refuses, unless force, an output folder holding
// report.md or a report figure but no runs/ of an earlier reproduce:
// files that reproduce did not write, which the report would replace.
func checkReportFolder(flag, out string, force bool) error {
	// Before any work (probe 29: a report.md that is a folder failed the
	// rename at the end, the figures already replaced).
	if err := replaceable(out, reportNames(), "reproduce writes the report there: move it away"); err != nil {
		return fmt.Errorf("%s %s: %w", flag, out, err)
	}
	if fi, err := os.Stat(filepath.Join(out, "runs")); force || (err == nil && fi.IsDir()) {
		return nil
	}
	if found := presentIn(out, reportNames()); len(found) > 0 {
		return fmt.Errorf("%s %s holds %s but no runs/ of an earlier reproduce: the report would replace it; give another folder, or replace it with --force", flag, out, strings.Join(found, ", "))
	}
	return nil
}

func runReproduce(out io.Writer, f reproduceFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	runs, err := planRuns(f)
	if err != nil {
		return err
	}
	if err := checkKeptRuns(runs, f); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// A signal before the runs start stops reproduce at once, removing
	// the lock and the folders made (probe 35: killed without a word,
	// .lock left): then the runs' signals take over.
	stopEarly := sync.OnceFunc(removeTempsOnSignal())
	defer stopEarly()
	release, err := lockOut(f.out)
	if err != nil {
		return err
	}
	defer release()
	// Its runs write OUT/runs/NAME: its lock is not another process's.
	defer ownLock(f.out)()
	if err := removeStaleTemps(f.out, reportNames()...); err != nil { // a killed report.md write
		return err
	}
	stopEarly()
	soft, hard, stop := reproduceSignals()
	runsDir := filepath.Join(f.out, "runs")
	madeRuns := !exists(runsDir)
	if err := mkdirAll(runsDir); err != nil {
		stop()
		return err
	}
	wroteSet, err := writeRunSet(f, false) // for a --report without --experiments and --algorithms (round 87 B2)
	if err != nil {
		stop()
		return err
	}
	t0 := time.Now()
	for _, r := range runs {
		r.ckBefore = checkpointSum(r.dir)
	}
	how := fmt.Sprintf("reproduce --jobs %d", f.jobs)
	if err := markPending(f.out, runs, how); err != nil {
		stop()
		return err
	}
	trainAll(soft, hard, out, exe, runs, f)
	hook("reproduce-runs-ended")
	var sig signalCause
	interrupted := errors.As(context.Cause(soft), &sig)
	stop()
	switch trained := slices.ContainsFunc(runs, func(r *reproRun) bool { return r.trained }); {
	case wroteSet && madeRuns && !trained:
		os.Remove(filepath.Join(f.out, runSetFile)) // with the runs/ it made
	case !wroteSet && anyKept(runs): // the record of an earlier set, replaced once a run of this one is kept (round 89 B3)
		if _, err := writeRunSet(f, true); err != nil {
			return err
		}
	}
	if err := noteTrainedBy(f.out, runs, how); err != nil {
		return err
	}
	if interrupted { // exits 128 + the signal's number (probe 34: 2, as a failure)
		return stoppedError{sig: syscall.Signal(sig), err: interruptedRuns(runs, madeRuns, runsDir)}
	}
	// No run is under way now: a signal stops reproduce at once (probe 29:
	// it was said to stop the runs, and ignored).
	notYet := "no report written: start the same reproduce command again to write it"
	if kept := keptNote(runs); kept != "" {
		notYet += " (" + kept + ")"
	}
	defer removeTempsOnSignalNoting(placedNote(filepath.Join(f.out, "report.md"), "the report is written: ", notYet))() // probe 30: "no report written" after it was
	hook("reproduce-trained")
	// The runs are read as --report reads them: a run that another
	// process trains, or that appeared of other settings meanwhile, is
	// marked so (probe 29: "failed", and taken as this reproduce's).
	for _, r := range runs {
		if warning := r.collect(f); warning != "" {
			fmt.Fprintln(out, "warning:", warning)
		}
		if r.state != "" && r.startErr != "" { // nothing on disk says why, or the run there is older (probe 44: "stopped (killed, …)" of a run whose log.txt was a FIFO)
			r.state, r.err = "", r.startErr
		}
	}
	if _, err := writeReport(f, runs, time.Since(t0)); err != nil { // probe 43: the bare error of a full disk
		failed := ""
		if list := failedList(runs); len(list) > 0 {
			failed = fmt.Sprintf("; %d of %d runs failed or did not finish: %s", len(list), len(runs), strings.Join(list, ", "))
		}
		kept := ""
		if anyKept(runs) { // probes 44, 45: said when none had
			kept = "; the runs trained are kept"
		}
		return fmt.Errorf("no report written (%w)%s%s; start the same reproduce command again once the cause is fixed: it writes the report (and retries the runs that failed)", err, kept, failed)
	}
	hook("report-written")
	fmt.Fprintf(out, "report: %s\n", filepath.Join(f.out, "report.md"))
	return failedRuns(runs)
}

// failedRuns is an error naming the runs that failed for a reason other
// than divergence (a result the report shows, as the paper's tables do):
// reproduce then exits with an error status, after writing the report.
func failedRuns(runs []*reproRun) error {
	failed := failedList(runs)
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d runs failed or did not finish: %s; the report marks them; start the same reproduce command again to retry them once their cause is fixed",
		len(failed), len(runs), strings.Join(failed, ", "))
}

// failedList names the runs without a result, each with why.
func failedList(runs []*reproRun) []string {
	var failed []string
	for _, r := range runs {
		if r.hasResult() {
			continue
		}
		why := filepath.Join(r.dir, "error.txt")
		if _, err := os.Stat(why); err != nil || r.state != "" {
			why = r.err
		}
		if st := r.status(); st != "failed" {
			why = st + ": " + why // in progress (another process trains it), mismatched, …
		}
		if r.outcome.kind == outcomeSkipped && r.status() != runInProgress { // probe 57: it had stopped by the summary, which blamed a kill
			why = "skipped, as another process was training it, which has stopped since; " + why
		}
		failed = append(failed, fmt.Sprintf("%s (%s)", r.name(), why))
	}
	return failed
}

// planRuns lists the runs of --experiments × --algorithms, each checked to
// have defaults, in OUT/runs/EXPERIMENT-ALGORITHM. With --plan, which
// trains nothing here, an image experiment's data are not loaded (its
// runs' exp is nil): the plan is written on a login node, the images read
// where its lines run (a 4 GB ulimit -v refused the MNIST load, probe 18).
func planRuns(f reproduceFlags) ([]*reproRun, error) {
	exps, err := splitList("experiments", f.experiments)
	if err != nil {
		return nil, err
	}
	algs, err := splitList("algorithms", f.algorithms)
	if err != nil {
		return nil, err
	}
	var runs []*reproRun
	for _, e := range exps {
		var exp *experiments.Experiment
		var err error
		_, image := dataDirEnv(e)
		switch {
		case image && f.plan != "":
			_, err = experiments.FindDataDir(e) // exp stays nil
		case image && f.report != "" && !anyRunFolder(f.out, e, algs):
			// nothing of it to report: exp stays nil, its images unread
			// (probe 22 on: a 4 GB ulimit -v refused a report without it)
		default:
			exp, err = experiments.ByName(e) // once: mnist's loads the images
		}
		var notGiven *experiments.FolderNotGivenError
		if errors.As(err, &notGiven) {
			return nil, fmt.Errorf("--experiments %s: %s needs %s: set %s=DIR (reproduce has no --data-dir; every run is given DIR as --data-dir)", e, notGiven.Experiment, notGiven.Want, notGiven.Env)
		}
		var inFile *data.FormatError // the files found, but refused (their content, the memory they need)
		if env, image := dataDirEnv(e); err != nil && image && !errors.As(err, &inFile) {
			if v := os.Getenv(env); v != "" && !strings.Contains(err.Error(), env+"=") && !strings.Contains(err.Error(), "the folder that "+env+" names") { // probe 31: told to set it; probe 41: named twice
				return nil, fmt.Errorf("--experiments %s: %w (the folder that %s names)", e, err, env)
			} else if v != "" {
				return nil, fmt.Errorf("--experiments %s: %w", e, err)
			}
			return nil, fmt.Errorf("--experiments %s: %w (reproduce has no --data-dir: set %s to the folder, and every run is given it as --data-dir)", e, err, env)
		}
		if unknown := (*experiments.UnknownError)(nil); errors.As(err, &unknown) { // printed as "experiments: unknown …"
			return nil, fmt.Errorf("--experiments %s: unknown experiment (%s)", e, unknown.Known())
		}
		if err != nil {
			return nil, err
		}
		for _, name := range algs {
			var a algorithms.Algorithm
			if err := a.Set(name); err != nil {
				return nil, fmt.Errorf("--algorithms %s: %w", name, err)
			}
			if exp != nil { // --plan's image experiments: their defaults need the images
				if _, _, err := settings.DefaultsFor(exp, a); err != nil {
					return nil, err
				}
			}
			r := &reproRun{experiment: e, exp: exp, algorithm: a}
			r.dir = filepath.Join(f.out, "runs", r.name())
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// reproduceSignals returns a context that a first SIGINT or SIGTERM ends
// (the runs under way are asked to stop at a checkpoint, none is started)
// and one that a second ends (they are killed).
// soft's cause (context.Cause) is then the signal, a signalCause.
func reproduceSignals() (soft, hard context.Context, stop func()) {
	soft, cancelSoft := context.WithCancelCause(context.Background())
	hard, cancelHard := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ignoreBrokenPipes()
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		// Cancelled before the message is written: the check before a
		// run starts sees it sooner (probe 37: a run started in 8 of 15).
		cancelSoft(signalCause(s.(syscall.Signal)))
		fmt.Fprintln(os.Stderr, "flowebm: interrupted; the runs under way stop at their next checkpoint (interrupt again to kill them: each then resumes from its last checkpoint)")
		if _, ok := <-sigs; ok {
			cancelHard()
		}
	}()
	return soft, hard, func() { signal.Stop(sigs); close(sigs); cancelSoft(nil); cancelHard() }
}

// signalCause is the cause of a context cancelled by a signal.
type signalCause syscall.Signal

func (s signalCause) Error() string { return syscall.Signal(s).String() }

// trainAll trains the runs, --jobs at a time, longest first, printing
// each one's status with the elapsed time and an ETA.
func trainAll(soft, hard context.Context, out io.Writer, exe string, runs []*reproRun, f reproduceFlags) {
	t0 := time.Now()
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, f.jobs)
	var wg sync.WaitGroup
	// The high-dimensional runs are the longest: start them first.
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		sem <- struct{}{}
		if soft.Err() != nil {
			<-sem
			break // interrupted: start no more runs
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			status := trainOne(soft, hard, exe, r, f)
			mu.Lock()
			defer mu.Unlock()
			r.outcome = status
			done++
			el := time.Since(t0)
			eta := time.Duration(float64(el) / float64(done) * float64(len(runs)-done))
			// The times before the status: a status can end in the run's
			// own advice, a command (probe 38: "… --resume DIR in 0s").
			fmt.Fprintf(out, "[%d/%d, %s; elapsed %s, ETA %s] %s: %s\n", done, len(runs),
				time.Since(start).Round(time.Second), el.Round(time.Second), eta.Round(time.Second), r.name(), status)
		}()
	}
	wg.Wait()
}

// splitList splits the comma-separated list of flag, refusing empty and
// repeated names (two processes would train the same run); an empty flag
// is refused before.
func splitList(flag, s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			return nil, fmt.Errorf("--%s %q has an empty name (a stray comma?): want names separated by single commas", flag, s)
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("--%s %q names %s twice", flag, s, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// anyRunFolder says whether out/runs holds a folder of a run of
// experiment e with one of the algorithms algs.
func anyRunFolder(out, e string, algs []string) bool {
	for _, a := range algs {
		if exists(filepath.Join(out, "runs", e+"-"+a)) {
			return true
		}
	}
	return false
}

// iterations is the number of iterations reproduce trains run r for.
func (f reproduceFlags) iterations(r *reproRun) (int, error) {
	if f.iters > 0 {
		return f.iters, nil
	}
	var n int
	if r.exp == nil { // --plan's image runs: their length without their images
		var ok bool
		if n, ok = settings.ImageIterations(r.experiment); !ok {
			return 0, fmt.Errorf("%s: no default length without its data", r.experiment)
		}
	} else {
		cfg, _, err := settings.DefaultsFor(r.exp, r.algorithm) // the experiment looked up once (mnist's loads the images)
		if err != nil {
			return 0, err
		}
		n = cfg.Train.Iterations
	}
	if f.quick {
		return max(50, n/10), nil
	}
	return n, nil
}

// checkKeptRuns refuses an output folder holding runs of another
// experiment, algorithm, seed or length than this invocation trains: they
// would be kept and reported as its own (a run copied there, a full
// reproduce into a --quick folder, or --seed 2 over seed 1).
func checkKeptRuns(runs []*reproRun, f reproduceFlags) error {
	for _, r := range runs {
		if err := checkKept(r, f); err != nil {
			return err
		}
	}
	return nil
}

// checkKept checks the run that r.dir may hold (see checkKeptRuns).
func checkKept(r *reproRun, f reproduceFlags) error {
	cfg, err := training.ReadRunConfig(r.dir)
	if errors.Is(err, os.ErrNotExist) {
		if others := visibleEntries(r.dir); len(others) > 0 && !isRun(r.dir) { // round 86 B2: the run's train refused them, and no retry could pass
			return fmt.Errorf("%s holds %s, which are not a run's files: its run would not start among them; move them away, then give the same command again", r.dir, listNames(others, 3))
		}
		return nil
	}
	if err != nil {
		return err
	}
	if err := training.ConfigEdited(r.dir, cfg); err != nil && f.plan == "" { // round 95 B8: another run's config.json, "move it away" advised (a plan leaves the run out, saying so)
		return err
	}
	if cfg.Experiment != r.experiment || cfg.Train.Algorithm != r.algorithm {
		return fmt.Errorf("%s holds a run of experiment %q with algorithm %q (its config.json), not %s with %s: move it away, or give another --out",
			r.dir, cfg.Experiment, cfg.Train.Algorithm, r.experiment, r.algorithm)
	}
	want, err := f.iterations(r)
	if err != nil {
		return err
	}
	if cfg.Seed != f.seed || cfg.Train.Iterations != want {
		return fmt.Errorf("%s holds a run with seed %d and %d iterations; this reproduce trains seed %d for %d: give another --out (or the flags that run was made with)",
			r.dir, cfg.Seed, cfg.Train.Iterations, f.seed, want)
	}
	return nil // a finished run's damaged outputs, metrics.csv among them, are written again by completeFinished (round 102: refused, naming a cp)
}

// finishedEvals reads a finished run's evaluations (metrics.csv), refusing
// a file without any.
func (r *reproRun) finishedEvals() ([]training.Eval, error) {
	path := filepath.Join(r.dir, "metrics.csv")
	var evals []training.Eval
	var err error
	if r.exp == nil { // --plan's image runs: as many classes as the file has
		evals, err = training.ReadEvalsCSVModes(path)
	} else {
		evals, err = training.ReadEvalsCSV(path, len(r.exp.Weights))
	}
	if err == nil && len(evals) == 0 {
		err = fmt.Errorf("%s holds no evaluations, yet the run finished (it has metrics.json): the file is damaged%s", path, training.EvalsRestore(path))
	}
	if err == nil {
		err = training.CheckEvalsOfRun(r.dir)
	}
	return evals, err
}

// lockOut takes lockRun's lock on the output folder out, so that two
// reproduce processes never train, log and report into one folder, with a
// message that names --out.
func lockOut(out string) (release func(), err error) {
	release, _, err = lockOutputFolder(out, "reproduce")
	err = namingFlag("--out", err)
	var busy folderBusyError
	if errors.As(err, &busy) {
		return nil, fmt.Errorf("--out %s: another flowebm process is writing into this folder (it holds %s): wait for it to end, or give another --out", out, busy.lock)
	}
	return release, err
}

// interruptedRuns is why reproduce, interrupted, stopped with the runs in
// the state they are: what ended, what was not started, what another
// process trains (skipped), and what was under way. An empty runs/ it
// made is removed where nothing trained.
func interruptedRuns(runs []*reproRun, madeRuns bool, runsDir string) error {
	var left, skipped []string
	for _, r := range runs {
		switch {
		case r.outcome.kind == outcomeSkipped: // probe 46: said not started
			skipped = append(skipped, r.name())
		case r.unended():
			left = append(left, r.name())
		}
	}
	note := ""
	if len(skipped) > 0 {
		note = fmt.Sprintf(" (skipped, as another process trains them: %s)", strings.Join(skipped, ", "))
	}
	switch {
	case len(left) == 0: // probes 44–46: "the runs under way stopped" of runs all done, failed or skipped
		again := "start the same reproduce command again to write it"
		if slices.ContainsFunc(runs, (*reproRun).failed) {
			again += " (and to retry the runs that failed)"
		}
		ended := "ended"
		if len(skipped) > 0 {
			ended = "ended or was skipped"
		}
		return errors.New("interrupted once every run had " + ended + " (see the lines above): no report written; " + again + note)
	case !slices.ContainsFunc(runs, func(r *reproRun) bool { return r.trained }): // probe 38: "the runs under way stopped" when none had started
		if madeRuns {
			os.Remove(runsDir) // while empty; then --out too, if made (probe 36: left holding an empty runs/)
		}
		return errors.New("interrupted before any run trained: nothing was trained, no report written; start the same reproduce command again" + note)
	case !slices.ContainsFunc(runs, func(r *reproRun) bool { return r.trained && r.unended() }): // probe 45: "the runs under way" where none was
		return fmt.Errorf("interrupted before %d of %d runs started (%s); the runs that ended are kept, no report written; start the same reproduce command again to train them and write it%s", len(left), len(runs), strings.Join(left, ", "), note)
	}
	var none []string // under way and without a checkpoint (probe 47: "stopped at their last checkpoint" of a run killed before its first)
	for _, r := range runs {
		if r.trained && r.unended() && !hasCheckpoint(r.dir) {
			none = append(none, r.name())
		}
	}
	if len(none) > 0 {
		return fmt.Errorf("interrupted: the runs under way stopped (see the lines above), %s before its first checkpoint; start the same reproduce command again to continue them from their last checkpoint, or to start again those without one; no report written%s", strings.Join(none, ", "), note)
	}
	return errors.New("interrupted: the runs under way stopped at their last checkpoint (see the lines above); start the same reproduce command again to continue them; no report written" + note)
}

// unended reports whether the run has not ended: no samples.npy (written
// last), no divergence recorded, and it did not fail in this reproduce
// (probe 45: a failed run was taken for one under way).
func (r *reproRun) unended() bool {
	return !exists(filepath.Join(r.dir, "samples.npy")) && divergedBefore(r.dir) == "" && !r.failed()
}

// failed reports whether the run failed in this reproduce.
func (r *reproRun) failed() bool { return r.outcome.kind == outcomeFailed }

// anyKept reports whether a run has a checkpoint or its outputs.
func anyKept(runs []*reproRun) bool {
	return slices.ContainsFunc(runs, func(r *reproRun) bool { return hasCheckpoint(r.dir) || exists(filepath.Join(r.dir, "samples.npy")) })
}

// keptNote is what a stop before the report says of the runs: that what
// they wrote is kept, where one has a checkpoint or its outputs (probe
// 45: said where none had), and that the next reproduce retries the
// failed ones.
func keptNote(runs []*reproRun) string {
	note := ""
	if anyKept(runs) {
		note = "the runs trained are kept"
	}
	if slices.ContainsFunc(runs, (*reproRun).failed) {
		note = strings.TrimPrefix(note+"; it retries the runs that failed", "; ")
	}
	return note
}

// trainOne runs (or resumes, or skips) one training process and returns
// what became of it.
func trainOne(soft, hard context.Context, exe string, r *reproRun, f reproduceFlags) outcome {
	if _, err := os.Stat(filepath.Join(r.dir, "samples.npy")); err == nil { // written last
		return r.completeFinished(soft, hard, exe, f.out)
	}
	errPath := filepath.Join(r.dir, "error.txt")
	earlier, err := safefile.ReadFile(errPath, maxTextBytes)
	if err == nil && isDivergence(string(earlier)) {
		return outcome{outcomeEnded, "diverged before (see error.txt)"} // a result, not retried
	}
	if msg := loggedDivergence(r.dir); err != nil && msg != "" { // trained by a --plan's command, which writes no error.txt
		if err := safefile.Write(errPath, func(w io.Writer) error { _, err := fmt.Fprintln(w, msg); return err }); err != nil {
			return r.failedToStart(err)
		}
		return outcome{outcomeEnded, "diverged before (see error.txt)"}
	}
	hook("reproduce-run")
	if soft.Err() != nil { // probe 36: a signal as reproduce began still started a run, leaving its folder
		return outcome{outcomeNotStarted, "not started (reproduce was interrupted)"}
	}
	// Another process (a train --resume) training in r.dir is not a
	// failure of the run: leave it, its log and no error.txt.
	made := !exists(r.dir)
	if err := mkdirAll(r.dir); err != nil {
		return r.failedToStart(err)
	}
	release, err := lockRun(r.dir)
	if err != nil {
		return outcome{outcomeSkipped, "skipped: " + err.Error()}
	}
	release()
	// Another failure (a full disk, say) is retried: from the run's last
	// checkpoint where it has one.
	if earlier != nil {
		if err := os.Remove(errPath); err != nil {
			return r.failedToStart(err)
		}
	}
	// Appended: a resumed run keeps the notes its start wrote at the top.
	if err := removeStaleTemps(r.dir, "log.txt"); err != nil { // a copy of a shared log.txt that a kill cut short (probe 44)
		return r.failedToStart(err)
	}
	logf, err := safefile.OpenAppend(filepath.Join(r.dir, "log.txt")) // not through a link or FIFO, nor into a cp -al copy's (probe 43)
	if err != nil {
		return r.failedToStart(err)
	}
	defer logf.Close()
	args, err := trainArgs(r, f)
	if err != nil {
		return r.failedToStart(err)
	}
	cmd := exec.Command(exe, args...)
	output := &childLog{log: logf}
	cmd.Stdout, cmd.Stderr = output, output
	// Each process gets its share of the cores.
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", max(1, runtime.NumCPU()/f.jobs)), ownLocksEnv(f.out)) // its run is this reproduce's
	hook("reproduce-child")
	r.trained = true
	if err := runChild(soft, hard, cmd); err != nil {
		msg := childFailure(err, output.lastLine())
		if output.err != nil { // probe 30: a full disk left an empty log.txt and "exit status 2"
			msg += fmt.Sprintf(" (its log.txt could not be written: %v)", output.err)
		}
		stopped := stoppedBySignal(exitStatus(err))
		switch {
		case stopped && exists(filepath.Join(r.dir, "samples.npy")): // stopped once its outputs were written (probe 34: "interrupted")
			return outcome{outcomeEnded, "done"}
		case strings.HasPrefix(msg, "flowebm: "+r.dir+": another flowebm process is "): // its folderBusyError, not a path holding the words (probe 34)
			r.trained = false
			return outcome{outcomeSkipped, "skipped: " + msg} // it took the lock after the check above
		case soft.Err() != nil && made && removeUnstarted(r.dir, output.lastLine()):
			r.trained = false
			return outcome{outcomeNotStarted, "not started (reproduce was interrupted as it started the run)"}
		case soft.Err() != nil && strings.Contains(output.lastLine(), "nothing was trained"):
			r.trained = false
			return outcome{outcomeNotStarted, "not started (reproduce was interrupted as it started the run): " + output.lastLine()}
		case soft.Err() != nil: // stopped (or killed) because reproduce was interrupted
			return outcome{outcomeInterrupted, "interrupted (run reproduce again to continue it from its last checkpoint, or to start it again if it has none): " + msg}
		case stopped: // a signal to the train process itself (probe 30: recorded as a failure)
			return outcome{outcomeInterrupted, "interrupted (reproduce again continues it from its last checkpoint, or starts it again if it has none): " + msg}
		case strings.HasPrefix(msg, "flowebm: ") && strings.Contains(msg, "the run stopped without writing there"): // its folderChangedError: the folder at r.dir is not the run's (probe 51: its error.txt was replaced)
			return failureStatus(msg)
		}
		m, stuck := strings.CutSuffix(msg, training.NothingToResumeAdvice)
		if stuck { // round 95 B5: reproduce --force restarted nothing (the advice is train's --force, not reproduce's)
			msg = m + fmt.Sprintf("; nothing to resume: move %s away (or give flowebm train --force the run's flags), then give the same reproduce command again", r.dir)
		}
		safefile.Write(filepath.Join(r.dir, "error.txt"), func(w io.Writer) error { _, err := fmt.Fprintln(w, msg); return err })
		if stuck { // round 104 B3: "retried by the next reproduce", which failed alike
			return outcome{outcomeFailed, "FAILED (the next reproduce retries it once its folder is moved away): " + msg}
		}
		return failureStatus(msg)
	}
	return outcome{outcomeEnded, "done"}
}

// completeFinished checks a finished run's outputs by train --resume,
// which writes again from the final checkpoint those damaged (round 99
// B1, B2: an emptied samples.npy and figures deleted were "already done"),
// its output appended to the run's log.txt (out: the reproduce folder,
// whose lock it holds). A run whose outputs are whole
// is "already done"; one that train could not check (a damaged
// checkpoint) too, with why: its outputs stand, as before the check.
func (r *reproRun) completeFinished(soft, hard context.Context, exe, out string) outcome {
	logf, err := safefile.OpenAppend(filepath.Join(r.dir, "log.txt"))
	if err != nil {
		return outcome{outcomeEnded, fmt.Sprintf("already done (its outputs not checked: %v)", err)}
	}
	defer logf.Close()
	cmd := exec.Command(exe, "train", "--resume", r.dir, "--quiet")
	output := &childLog{log: logf}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.Env = append(os.Environ(), ownLocksEnv(out)) // its run is this reproduce's
	hook("reproduce-check")
	if err := runChild(soft, hard, cmd); err != nil { // round 104 B2: train's advice (--force) does not fit reproduce
		if soft.Err() != nil { // reproduce interrupted during the check (round 107 B1: "move it away" for a finished run)
			return outcome{outcomeEnded, "already done (the check of its outputs was interrupted: the same reproduce command, given again, checks them)"}
		}
		why, _, _ := strings.Cut(strings.TrimSuffix(childFailure(err, output.lastLine()), training.NothingToResumeAdvice), finishedUnreadableHead)
		why = strings.TrimPrefix(why, "flowebm: ")
		return outcome{outcomeEnded, "already done, but its outputs could not be checked (" + why + "); " + retrainAdvice(r.dir)}
	}
	for _, line := range strings.Split(string(output.tail), "\n") { // train's note, or its line for the figures
		if strings.Contains(line, rewritingOutputs) || strings.Contains(line, redrewFigures) {
			return outcome{outcomeEnded, "already done; its damaged outputs written again from its final checkpoint: " + strings.TrimPrefix(line, "flowebm: note: ")}
		}
	}
	return outcome{outcomeEnded, "already done"}
}

// childLog is a train process's output: written to its log.txt, the last
// lines also kept, which say why it failed when log.txt cannot be
// written (a full disk).
type childLog struct {
	log  io.Writer
	err  error // the first write to log that failed: no more are tried
	tail []byte
}

func (c *childLog) Write(p []byte) (int, error) {
	if c.err == nil {
		_, c.err = c.log.Write(p)
	}
	c.tail = append(c.tail, p...)
	if n := len(c.tail); n > 4096 {
		c.tail = append(c.tail[:0], c.tail[n-4096:]...)
	}
	return len(p), nil
}

// lastLine is the last line the process wrote in this run of it.
func (c *childLog) lastLine() string {
	lines := strings.Split(strings.TrimSpace(string(c.tail)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// interruptionMark matches train's own lines for a run it stopped on a
// signal ("flowebm: training interrupted at iteration 78 …",
// "flowebm: interrupted again …"), at the start of the line.
// train's own wordings, with the signal's name where they give one, not a
// word that a path may begin with (probes 31–33: --out "interrupted runs",
// "interrupted (copy)" made a failure an interruption).
var interruptionMark = regexp.MustCompile(`^flowebm: (` + regexp.QuoteMeta(algorithms.ErrInterrupted.Error()) +
	` (at iteration \d+(, and writing its checkpoint failed: | of \d+; checkpoint written to )|during the flow's pretraining, at step \d+ of \d+|after waiting \S+ for a process that reads )|interrupted \((interrupt|terminated|hangup)\): the partial files being written were removed|interrupted again \((interrupt|terminated|hangup)\): quitting now; |interrupted before training started: nothing was trained|interrupted; stopping (after|once) the )`)

// isInterruption reports whether msg, the last error line of a run's
// log.txt, says that it stopped on a signal: continued from its last
// checkpoint, not a failure. The report reads it of runs that reproduce
// did not start (a --plan's); a train process reproduce runs is told by
// its exit status (stoppedBySignal).
func isInterruption(msg string) bool { return interruptionMark.MatchString(msg) }

// exitStatus is the exit status of a process that ended with err, as the
// shell gives it: 128 + the signal's number for one a signal killed
// (probe 34: a train process stopped by SIGINT before its handler was
// installed was recorded as a failure); -1 if it did not start.
func exitStatus(err error) int {
	exit := (*exec.ExitError)(nil)
	if !errors.As(err, &exit) {
		return -1
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return exit.ExitCode()
}

// childFailure is why a train process that ended with err failed, given
// the last line of its log: its own error, or, when a signal killed it
// (the out-of-memory killer, say), that signal, the line being progress
// (probe 29).
func childFailure(err error, last string) string {
	var exit *exec.ExitError
	switch {
	case last == "":
		return err.Error()
	case errors.As(err, &exit) && !exit.Exited():
		return fmt.Sprintf("the train process ended with %v (the last line of its log.txt: %q)", err, last)
	}
	return last
}

// failedToStart records err as why run r's train process could not be
// started, and returns it as its outcome.
func (r *reproRun) failedToStart(err error) outcome {
	r.startErr = err.Error()
	return outcome{outcomeFailed, "FAILED (retried by the next reproduce): " + r.startErr}
}

// divergenceMark matches train's error for a diverged run (it wraps
// algorithms.ErrDiverged: "…: training diverged; …" or at the end of the
// line), and not the word in a path (probe 19: an --out holding
// "diverged" made every failure a divergence, never retried).
var divergenceMark = regexp.MustCompile(`(?m): ` + regexp.QuoteMeta(algorithms.ErrDiverged.Error()) + `(;|\s*$)`)

// isDivergence reports whether msg, a train process's last error line
// (error.txt, log.txt), says that the run diverged.
func isDivergence(msg string) bool { return divergenceMark.MatchString(msg) }

// failureStatus is the progress line's word for a run whose train process
// ended with msg: a divergence is a result (the report shows it, as the
// paper's tables do), any other failure is retried by the next reproduce.
func failureStatus(msg string) outcome {
	if isDivergence(msg) {
		return outcome{outcomeEnded, "diverged (a result the report shows, not retried): " + msg}
	}
	return outcome{outcomeFailed, "FAILED (retried by the next reproduce): " + msg}
}

// removeUnstarted removes the run folder dir that reproduce made for a
// train process that a signal stopped before it trained anything (its
// last line says so, or it said nothing): the folder then holds only the
// log.txt that reproduce made (probe 37: a signal as reproduce started a
// run left the folder and its log, the run reported interrupted).
func removeUnstarted(dir, lastLine string) bool {
	if lastLine != "" && !strings.Contains(lastLine, "nothing was trained") {
		return false
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return false
	}
	// Held while it is read and emptied: a process that takes it meanwhile
	// (a train --resume) keeps the folder and its lock (probe 41: checked,
	// then removed).
	release, err := lockRunAs(dir, "reproduce")
	if err != nil {
		return false
	}
	defer release()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// The child, stopped in its setup in a folder it did not make, leaves
	// its lock (probe 40: 6 of 32 runs "not started" kept the folder).
	if !slices.Equal(names, []string{".lock", "log.txt"}) {
		return false
	}
	return os.Remove(filepath.Join(dir, "log.txt")) == nil && os.Remove(filepath.Join(dir, ".lock")) == nil && os.Remove(dir) == nil
}

// runChild runs cmd in a process group of its own (a terminal's Ctrl-C
// reaches reproduce only), asking it to stop at a checkpoint (SIGINT, as
// Ctrl-C asks train) when soft ends or reproduce dies, and killing it when
// hard ends.
func runChild(soft, hard context.Context, cmd *exec.Cmd) error {
	// The child is asked to stop at a checkpoint if reproduce dies (a
	// SIGKILL, a closed terminal): Pdeathsig fires when the thread that
	// started it ends, so that thread stays locked to this goroutine.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		select {
		case <-soft.Done():
			cmd.Process.Signal(os.Interrupt)
		case <-exited:
			return
		}
		select {
		case <-hard.Done():
			cmd.Process.Kill()
		case <-exited:
		}
	}()
	err := cmd.Wait()
	close(exited)
	return err
}

// trainArgs is the train command line of run r: a new run, or the
// resumption of an interrupted one.
func trainArgs(r *reproRun, f reproduceFlags) ([]string, error) {
	args := []string{"train", "--plot-format", f.plotFormat.String()}
	// Also one killed during a checkpoint replacement; and a damaged
	// checkpoint, which train --resume refuses saying why (the run is then
	// reported failed, its checkpoint kept: --force would delete it).
	if _, err := training.LatestCheckpoint(r.dir); err == nil || hasCheckpoint(r.dir) {
		return append(args, "--resume", r.dir), nil
	}
	args = append(args, "--experiment", r.experiment, "--algorithm", string(r.algorithm),
		"--seed", strconv.FormatUint(f.seed, 10), "--out", r.dir)
	if exists(filepath.Join(r.dir, "metrics.json")) { // probe 20: replaced with --force
		return nil, fmt.Errorf("%s holds a finished run's metrics.json but neither its samples.npy (written last) nor a checkpoint: a copy of a run's results (as docs/results keeps them)? reproduce does not replace it; move it away to train the run again", r.dir)
	}
	if isRun(r.dir) { // a run that stopped before its first checkpoint: start it again
		args = append(args, "--force")
	}
	if f.quick || f.iters > 0 {
		n, err := f.iterations(r)
		if err != nil {
			return nil, err
		}
		args = append(args, "--iterations", strconv.Itoa(n))
	}
	dir, err := imageDataDir(r.experiment)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		args = append(args, "--data-dir", dir) // the plan's lines run anywhere
	}
	return args, nil
}

// imageDataDir is the absolute folder that the environment variable of
// image experiment e names (FLOWEBM_CIFAR10, …), or "" (not an image
// experiment, or the variable unset: the built-in files).
// A value whose .. the system reads through a symbolic link is refused,
// as such a path flag is (probe 39: FLOWEBM_MNIST=L/../mn was looked up in
// ./mn); only where the experiment reads it (probe 40: every train was
// refused).
func imageDataDir(e string) (string, error) {
	env, ok := dataDirEnv(e)
	if !ok || os.Getenv(env) == "" {
		return "", nil
	}
	v := os.Getenv(env)
	if err := pathcheck.DotDot(v); err != nil {
		return "", fmt.Errorf("data: %s=%s: %w", env, v, err) // as experiments says it (probe 41: three wordings)
	}
	// Its folder and files checked as the experiment checks them (probe
	// 42: a config's run said "cm.json: data_dir …" of a missing one).
	if _, err := experiments.FindDataDir(e); err != nil {
		if !strings.Contains(err.Error(), env) { // probe 44: the folder named, not the variable
			return "", fmt.Errorf("%w (the folder that %s names)", err, env)
		}
		return "", err
	}
	return filepath.Abs(v)
}

// hasCheckpoint reports whether the run folder dir holds a checkpoint
// folder, complete or not, other than a first one being written
// (checkpoint.new alone, without its COMPLETE: round 126 B1, one completed
// and damaged since was "a run that stopped before its first checkpoint
// was complete").
func hasCheckpoint(dir string) bool {
	return exists(filepath.Join(dir, checkpointPrefix)) || exists(filepath.Join(dir, checkpointPrefix+".old")) ||
		exists(filepath.Join(dir, checkpointPrefix+".new", checkpoint.ManifestName))
}

func lastLine(path string) string {
	b, _ := safefile.ReadFile(path, maxTextBytes)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// heldNotRedrawn is the warning for a finished run another process holds:
// it is read, its figures are not redrawn in format.
func heldNotRedrawn(r *reproRun, format plots.Format) string {
	return fmt.Sprintf("%s: another process holds %s: its plots were not redrawn in %s", r.name(), filepath.Join(r.dir, ".lock"), format)
}

// holdRunToRedraw takes the lock of the run folder dir while its files are
// read and its figures redrawn from them, so that no train --force
// replaces the run in between (probe 26: the new run was left with the
// old one's figures). busy says another process holds it: the run is
// read, not redrawn. A lock that cannot be taken otherwise (a read-only
// copy) is passed over.
func holdRunToRedraw(dir string) (release func(), busy bool) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return func() {}, false // no run to hold (and none made)
	}
	release, err := lockRunAs(dir, "reproduce")
	if err != nil {
		return func() {}, errors.As(err, new(folderBusyError))
	}
	return release, false
}

// redrawRun redraws a finished run's figures that need no model, in
// format: those of its evaluations, and an image run's samples and
// energies (from its image-samples.npz).
func redrawRun(dir string, cfg config.Run, exp *experiments.Experiment, evals []training.Eval, format plots.Format) error {
	if err := (plots.History{Experiment: exp, Algorithm: cfg.Train.Algorithm, RHatChains: cfg.RHatChains, Evals: evals}).Write(dir, format); err != nil {
		return err
	}
	if exp.Kind != experiments.KindImages {
		return nil
	}
	return plots.WriteImageFigures(dir, cfg, exp, format)
}

// paperNumbers are the paper's Tables 1–3 (and Table 2's R-hat), keyed by
// experiment, then algorithm.
var paperNumbers = struct {
	table1 map[string]map[algorithms.Algorithm]float64 // med. squared log-density error
	table2 map[string]map[algorithms.Algorithm]float64 // max R-hat
	table3 map[algorithms.Algorithm][3]float64         // four-modes: init MSE, neg MSE, EBM MSE
}{
	table1: map[string]map[algorithms.Algorithm]float64{
		"8-gaussians": {algorithms.ULA: 1.86, algorithms.NT: 0.97, algorithms.CoopFlow: 58.75, algorithms.FlowMC: 0.94},
		"rings":       {algorithms.ULA: 5.39, algorithms.NT: 0.62, algorithms.CoopFlow: 7.78, algorithms.FlowMC: 0.40},
	},
	table2: map[string]map[algorithms.Algorithm]float64{
		"four-gaussians-16": {algorithms.CoopFlow: 20.52, algorithms.NT: 2.02, algorithms.ULA: 7.30, algorithms.FlowMC: 1.01},
		"four-gaussians-32": {algorithms.CoopFlow: 44.12, algorithms.NT: 2.50, algorithms.ULA: 9.29, algorithms.FlowMC: 1.01},
		"four-gaussians-64": {algorithms.CoopFlow: 51.66, algorithms.NT: 3.10, algorithms.ULA: 90.90, algorithms.FlowMC: 1.05},
	},
	table3: map[algorithms.Algorithm][3]float64{
		algorithms.ULA:      {1.19e-3, 1.79e-3, 1.24e-3},
		algorithms.CoopFlow: {1.21e-1, 1.11e-1, 1.24e-1},
		algorithms.NT:       {9.27e-4, 3.85e-4, 9.87e-4},
		algorithms.FlowMC:   {5.19e-4, 3.12e-5, 4.29e-4},
	},
}

var algorithmNames = map[algorithms.Algorithm]string{algorithms.FlowMC: "flowMC-EBM", algorithms.ULA: "ULA-EBM", algorithms.NT: "NT-EBM", algorithms.CoopFlow: "CoopFlow"}

// crossTable writes a Markdown table with one row per algorithm and one
// column per experiment; cell formats a finished run's final evaluation, and
// a failed run shows its status beside the paper's number.
func crossTable(b *strings.Builder, exps []string, get func(e string, a algorithms.Algorithm) *reproRun, head func(string) string,
	cell func(ev *training.Eval, e string, a algorithms.Algorithm) string, paper func(e string, a algorithms.Algorithm) float64) {
	fmt.Fprint(b, "| algorithm |")
	for _, e := range exps {
		fmt.Fprintf(b, " %s |", head(e))
	}
	fmt.Fprintf(b, "\n|---|%s\n", strings.Repeat("---|", len(exps)))
	for _, a := range algorithms.Algorithms {
		fmt.Fprintf(b, "| %s |", algorithmNames[a])
		for _, e := range exps {
			switch r := get(e, a); {
			case r == nil:
				fmt.Fprint(b, " |")
			case r.final() != nil && r.err == "":
				fmt.Fprintf(b, " %s |", cell(r.final(), e, a))
			default:
				fmt.Fprintf(b, " %s / %.2f |", r.status(), paper(e, a))
			}
		}
		fmt.Fprintln(b)
	}
}

// acceptanceChecks states, for the single seed of this report, each
// measurable acceptance criterion of the issue and whether it holds. A
// flowMC-EBM run without a result is not checked; a comparison with
// baselines of which some have no result says over how many it holds.
func acceptanceChecks(get func(e string, a algorithms.Algorithm) *reproRun) []string {
	var out []string
	verdict := func(ok bool) string {
		if ok {
			return "holds"
		}
		return "FAILS"
	}
	// subject is experiment e's flowMC-EBM run with its final evaluation,
	// or nil (a line then says why it is not checked).
	subject := func(e string) *reproRun {
		r := get(e, algorithms.FlowMC)
		switch {
		case r == nil:
			return nil
		case r.status() == "diverged":
			out = append(out, fmt.Sprintf("%s, flowMC-EBM: the run diverged: FAILS", e))
			return nil
		case r.err != "" || r.state != "" || r.final() == nil:
			out = append(out, fmt.Sprintf("%s, flowMC-EBM: not checked: the run is %s", e, r.status()))
			return nil
		}
		return r
	}
	// baselines compares flowMC-EBM's value v of experiment e with every
	// baseline's (better: whether flowMC-EBM's is the better), listing
	// theirs; a baseline without an evaluation is named, and the verdict
	// then says it covers a partial set.
	baselines := func(e string, v func(*training.Eval) float64, format string, better func(ours, theirs float64) bool) (list, ok string) {
		holds := true
		var others []string
		n, lacking := 0, 0
		for _, a := range algorithms.Algorithms[1:] {
			o := get(e, a)
			if o == nil {
				continue
			}
			n++
			name := algorithmNames[a]
			switch ev := o.final(); {
			case !o.hasResult():
				lacking++
				if ev != nil {
					others = append(others, fmt.Sprintf("%s "+format+" (%s; its last evaluation, not counted)", name, v(ev), o.status()))
				} else {
					others = append(others, name+" "+o.status())
				}
			case ev == nil: // diverged before its first evaluation
				others = append(others, name+" "+o.status())
			default:
				note := ""
				if o.err != "" {
					note = fmt.Sprintf(" (%s; its last evaluation)", o.status())
				}
				others = append(others, fmt.Sprintf("%s "+format+"%s", name, v(ev), note))
				holds = holds && better(v(get(e, algorithms.FlowMC).final()), v(ev))
			}
		}
		switch ok = verdict(holds); {
		case lacking == n:
			ok = "not checked: no baseline has a result"
		case lacking > 0:
			ok += fmt.Sprintf(" over a partial set (%d of %d baselines have a result)", n-lacking, n)
		}
		return strings.Join(others, ", "), ok
	}
	if r := subject("two-modes"); r != nil && r.final().EBMWeights != nil {
		w := r.final().EBMWeights[1]
		out = append(out, fmt.Sprintf("two-modes, flowMC-EBM: top-right weight %.3f, |w − 2/3| = %.3f ≤ 0.03: %s (one seed; see README for five)", w, math.Abs(w-2.0/3), verdict(math.Abs(w-2.0/3) <= 0.03)))
	}
	if r := subject("four-modes"); r != nil {
		ev := r.final()
		out = append(out, fmt.Sprintf("four-modes, flowMC-EBM: EBM weight MSE %.2e ≤ 1e-3: %s", ev.EBMWeightMSE, verdict(ev.EBMWeightMSE <= 1e-3)))
		others, ok := baselines("four-modes", func(e *training.Eval) float64 { return e.NegMSE }, "%.2e", func(ours, theirs float64) bool { return ours < theirs })
		out = append(out, fmt.Sprintf("four-modes: negatives' MSE against the EBM, flowMC-EBM %.2e smaller than every baseline (%s): %s", ev.NegMSE, others, ok))
	}
	for _, e := range highDim {
		r := subject(e)
		if r == nil {
			continue
		}
		ev := r.final()
		others, ok := baselines(e, func(e *training.Eval) float64 { return e.MaxRHat }, "%.2f", func(ours, theirs float64) bool { return theirs > ours })
		out = append(out, fmt.Sprintf("%s: flowMC-EBM max rank R-hat %.3f ≤ 1.1: %s; every baseline larger (%s): %s", e, ev.MaxRHat, verdict(ev.MaxRHat <= 1.1), others, ok))
	}
	for _, e := range append([]string{"mnist"}, imageExperiments...) {
		r := subject(e)
		if r == nil {
			continue
		}
		// The paper claims weights that come out right; App. C.6 states no
		// number for them, so this compares with the baselines only.
		others, ok := baselines(e, func(e *training.Eval) float64 { return e.EBMWeightMSE }, "%.2e", func(ours, theirs float64) bool { return ours < theirs })
		out = append(out, fmt.Sprintf("%s: flowMC-EBM class-weight MSE %.2e smaller than every baseline's (%s): %s", e, r.final().EBMWeightMSE, others, ok))
	}
	return out
}

// presentAll is present over several experiments, in their order.
func presentAll(runs []*reproRun, exps []string) []*reproRun {
	var out []*reproRun
	for _, e := range exps {
		out = append(out, present(runs, e)...)
	}
	return out
}

func present(runs []*reproRun, experiment string) []*reproRun {
	var out []*reproRun
	for _, r := range runs {
		if r.experiment == experiment {
			out = append(out, r)
		}
	}
	return out
}

func (r *reproRun) status() string {
	if r.state != "" {
		return r.state
	}
	if r.err != "" {
		if isDivergence(r.err) {
			return "diverged"
		}
		return "failed"
	}
	return "—"
}

// hasResult reports whether the run finished or diverged: a result, as
// in the paper's tables (a failed, missing or unfinished run is none).
func (r *reproRun) hasResult() bool {
	return r.state == "" && (r.err == "" || r.status() == "diverged")
}

// mark flags a run that failed, or has not finished, but still has
// evaluations from its last checkpoint.
func (r *reproRun) mark() string {
	if r.err != "" {
		return " (" + r.status() + "; last checkpoint)"
	}
	return r.missedMark()
}

// missedMark marks a finished run whose final quadrature grid misses the
// EBM's mass (metrics.json's grid_missed, as train warns): its weights,
// log Z and held-out LL are those of the grid's part (round 111 A1: shown
// unmarked by compare); "" otherwise.
func (r *reproRun) missedMark() string {
	if m := r.metrics.GridMissed; m != nil && r.metrics.Final.Iter == r.metrics.Iterations {
		return fmt.Sprintf(" (unreliable: the EBM's density beyond the grid reaches e^%.4g times its largest on it)", m.LogExcess)
	}
	return ""
}

// weightRange is the range of mode k's EBM weight over the second half of
// training.
func weightRange(evals []training.Eval, k int) (lo, hi float64) {
	return evalRange(evals, func(e training.Eval) float64 { return e.EBMWeight(k) })
}

func fmtWeights(w []float64) string {
	if w == nil {
		return "—"
	}
	parts := make([]string, len(w))
	for i, v := range w {
		parts[i] = fmt.Sprintf("%.3f", v)
	}
	return strings.Join(parts, ", ")
}

func fmtRate(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

// plotAcross plots one evaluation quantity over training for several runs
// of one experiment, with named horizontal lines (a true value, R-hat's
// thresholds).
//
// Where no run has an evaluation yet, nothing is drawn (an empty figure's
// axes were drawn at -1..1; probe 63) and drawn is false.
func plotAcross(dir, name, title, yLabel string, logY bool, thresholds []plots.Threshold, runs []*reproRun, f func(training.Eval) float64) (drawn bool, err error) {
	if !slices.ContainsFunc(runs, func(r *reproRun) bool {
		return slices.ContainsFunc(r.evals, func(e training.Eval) bool { return !math.IsNaN(f(e)) })
	}) {
		return false, nil
	}
	fig := plots.Figure{Title: title, XLabel: "iteration", YLabel: yLabel, LogY: logY, Thresholds: thresholds}
	for _, r := range runs {
		var evals []training.Eval
		for _, e := range r.evals {
			if !math.IsNaN(f(e)) {
				evals = append(evals, e)
			}
		}
		name := algorithmNames[r.algorithm]
		if r.err != "" || r.state != "" {
			name += " (" + r.status() + ")"
		}
		fig.Curves = append(fig.Curves, plots.Curve{Name: name, Points: plots.EvalCurve(evals, f)})
	}
	return true, fig.Save(filepath.Join(dir, name))
}

// vcsRevision is the commit the binary was built from, if recorded.
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty && rev != "" {
		rev += " (modified)"
	}
	return rev
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/safefile"
)

// The states of a run without a result that --report tells apart (see
// reproRun.state); unreadable and mismatched folders make it exit with an
// error after writing the report.
const (
	runMissing    = "missing"
	runIncomplete = "incomplete"
	runInProgress = "in progress"
	runUnreadable = "unreadable"
	runMismatched = "mismatched"
)

// runReport builds DIR/report.md (and its figures) from the run folders
// in DIR/runs, however they were trained, training nothing: every run of
// --experiments × --algorithms is reported, as finished, diverged, failed,
// in progress, incomplete (stopped at a checkpoint), missing, unreadable
// or of other settings, and every table over runs without a result is
// marked partial. The seed and length of the runs are --seed, --quick and
// --iterations where given, else read from the runs' config.json.
func runReport(out io.Writer, f reproduceFlags) error {
	for _, name := range []string{"out", "force"} {
		if f.given[name] {
			return fmt.Errorf("--%s does not apply to --report DIR, which writes DIR/report.md (replacing the one there): drop it", name)
		}
	}
	if err := checkReportDir(f.report); err != nil { // as given (probe 37: sub/../x was "stat x")
		return err
	}
	dir := filepath.Clean(f.report)
	f.out = dir
	if err := f.check(); err != nil {
		return err
	}
	if err := inferRunSet(&f, dir); err != nil {
		return err
	}
	runs, err := planRuns(f)
	if err != nil {
		return err
	}
	if err := inferSettings(&f, runs); err != nil {
		return err
	}
	release, err := lockRun(dir)
	var busy folderBusyError
	if errors.As(err, &busy) {
		return fmt.Errorf("--report %s: another flowebm process is writing into this folder (it holds %s): wait for it to end", dir, busy.lock)
	}
	if err != nil {
		return err
	}
	defer release()
	defer removeTempsOnSignalNoting(placedNote(filepath.Join(dir, "report.md"), "the report is written: ", // probe 40: the bare "interrupted"
		"no report written: give the same reproduce --report command again to write it"))()
	if err := removeStaleTemps(dir, reportNames()...); err != nil { // a killed report.md write
		return err
	}
	var bad []string
	for _, r := range runs {
		if warning := r.collect(f); warning != "" {
			fmt.Fprintln(out, "warning:", warning)
		}
		if r.state == runUnreadable || r.state == runMismatched {
			bad = append(bad, r.err)
		}
	}
	badSeeds, err := writeReport(f, runs, 0)
	if err != nil {
		return err
	}
	hook("report-written")
	bad = append(bad, badSeeds...)
	have := 0
	var lacking []string
	for _, r := range runs {
		if r.hasResult() {
			have++
		} else {
			lacking = append(lacking, fmt.Sprintf("  %s: %s: %s", r.name(), r.status(), r.err))
		}
	}
	fmt.Fprintf(out, "report: %s (%d of %d runs have a result)\n", filepath.Join(dir, "report.md"), have, len(runs))
	if len(lacking) > 0 {
		fmt.Fprintf(out, "partial set: the report marks the %s without a result, and the tables they leave partial:\n%s\n", count(len(lacking), "run"), strings.Join(lacking, "\n"))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d run folder(s) or seeds.json file(s) could not be read or hold runs of other settings; the report marks them: %s", len(bad), strings.Join(bad, "; "))
	}
	return nil
}

// again is how a run's status says to start it again: a reproduce's
// runs by reproduce (probe 43: "write the plan again" where no plan was
// written), --report's by the plan or reproduce that trained them.
func (f reproduceFlags) again() string {
	if f.report != "" {
		return "write the plan again, or reproduce again"
	}
	return "reproduce again"
}

// checkReportDir refuses a --report folder that is not a reproduce
// folder: missing, a file, a training run or inside one, or without runs/.
func checkReportDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--report %s: no such folder: give the folder that reproduce or the commands of reproduce --plan trained into (its --out)", dir)
	case err != nil:
		return fmt.Errorf("--report %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("--report %s is a file: give the folder that reproduce or the commands of reproduce --plan trained into (its --out)", dir)
	case isTrainingRun(dir):
		return fmt.Errorf("--report %s is a training run: give the folder that holds runs/EXPERIMENT-ALGORITHM (reproduce's --out)", dir)
	case trainingRunAbove(dir) != "":
		return fmt.Errorf("--report %s is inside the training run %s: give the folder that holds runs/EXPERIMENT-ALGORITHM (reproduce's --out)", dir, trainingRunAbove(dir))
	}
	if fi, err := os.Stat(filepath.Join(dir, "runs")); err != nil || !fi.IsDir() {
		if exists(filepath.Join(dir, runSetFile)) { // round 89 B6: the advice named the folder given
			return fmt.Errorf("--report %s holds no runs/ folder yet: no run of its reproduce or plan has started (each makes OUT/runs/EXPERIMENT-ALGORITHM); run the plan's lines, or the reproduce command, first", dir)
		}
		return fmt.Errorf("--report %s holds no runs/ folder: give the --out folder of reproduce or of reproduce --plan, whose runs are in OUT/runs/EXPERIMENT-ALGORITHM", dir)
	}
	return nil
}

// runSetFile records, in a reproduce's --out, the experiments and
// algorithms it was given, which --report reports where its flags do not
// name them (round 87 B2: the report of the 2 runs a reproduce trained
// was replaced by one of the default 32, 30 "missing").
const runSetFile = "reproduce-set.json"

// runSet is runSetFile's content.
type runSet struct {
	Experiments []string `json:"experiments"`
	Algorithms  []string `json:"algorithms"`
	// TrainedBy records, for each run a reproduce trained here (by its
	// name), how (round 110 A1: the report said that a reproduce's own
	// runs were trained outside it). A run it does not list was trained
	// otherwise (a plan's line, or by hand).
	TrainedBy map[string]runTraining `json:"trained_by,omitempty"`
}

// runTraining is how a run was trained: By, "reproduce --jobs N", each
// invocation that trained it in turn, up to its checkpoint whose COMPLETE
// has the SHA-256 Checkpoint; a run whose checkpoint is another since was
// trained on otherwise, or anew (round 112 B3: a run trained again by a
// plan's line kept the record of the reproduce that trained it first).
type runTraining struct {
	By         []string `json:"by"`
	Checkpoint string   `json:"checkpoint_sha256,omitempty"`
	// Pending is the reproduce ("reproduce --jobs N") that set out to
	// train the run, recorded before it starts (markPending) and cleared
	// as it records how far it trained it: left set, that reproduce was
	// killed before it recorded, so a checkpoint other than Checkpoint is
	// its work, or by hand after it (round 113 B5: said "by hand").
	Pending string `json:"pending,omitempty"`
}

// unrecorded is how the run was trained up to a checkpoint that rec does
// not record: by the reproduce that set out to and was killed, or by hand
// after it, or otherwise.
func (rec runTraining) unrecorded() string {
	if rec.Pending != "" {
		return rec.Pending + " (killed before it recorded how far; or by hand after it)"
	}
	return otherTraining
}

// checkpointSum is the SHA-256 of the COMPLETE of the run in dir's newest
// checkpoint; "" where it has none that reads.
func checkpointSum(dir string) string {
	latest, err := training.LatestCheckpoint(dir)
	if err != nil {
		return ""
	}
	sum, err := safefile.SHA256(filepath.Join(latest, checkpoint.ManifestName))
	if err != nil {
		return ""
	}
	return sum
}

// writeRunSet records f's set in f.out, its names as the runs are named
// (round 89 B2: "two-modes, rings" recorded " rings"). With replace
// false, a record already there is kept: a plan whose lines have not run,
// or a reproduce before any of its runs trained, does not replace the set
// of the runs trained before (round 89 B3); it says whether it wrote.
func writeRunSet(f reproduceFlags, replace bool) (bool, error) {
	exps, err := splitList("experiments", f.experiments)
	if err != nil {
		return false, err
	}
	algs, err := splitList("algorithms", f.algorithms)
	if err != nil {
		return false, err
	}
	path := filepath.Join(f.out, runSetFile)
	if !replace && exists(path) {
		return false, nil
	}
	set := runSet{Experiments: exps, Algorithms: algs}
	if old, err := readRunSet(path); err == nil { // the runs trained before stay in the folder
		set.TrainedBy = old.TrainedBy
	}
	return true, set.write(path)
}

func (s runSet) write(path string) error {
	return safefile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	})
}

// markPending records in dir's record that how sets out to train runs
// (runTraining.Pending), before it starts them, and first how each was
// trained since the record: a checkpoint (r.ckBefore) other than the one
// recorded was trained otherwise (round 113 B3: overwritten unnoticed),
// or by a reproduce killed before it recorded (B5).
func markPending(dir string, runs []*reproRun, how string) error {
	return updateTrainedBy(dir, func(set runSet) {
		for _, r := range runs {
			rec := set.TrainedBy[r.name()]
			if r.ckBefore != "" && r.ckBefore != rec.Checkpoint {
				rec.By, rec.Checkpoint = append(rec.By, rec.unrecorded()), r.ckBefore
			}
			rec.Pending = how
			set.TrainedBy[r.name()] = rec
		}
	})
}

// noteTrainedBy records in dir's record that how trained the runs marked
// trained, up to their checkpoint now, and clears the others' Pending
// (markPending recorded how each was trained before).
func noteTrainedBy(dir string, runs []*reproRun, how string) error {
	return updateTrainedBy(dir, func(set runSet) {
		for _, r := range runs {
			rec := set.TrainedBy[r.name()]
			if !r.trained {
				rec.Pending = ""
				if len(rec.By) == 0 && rec.Checkpoint == "" {
					delete(set.TrainedBy, r.name())
				} else {
					set.TrainedBy[r.name()] = rec
				}
				continue
			}
			if len(rec.By) == 0 || rec.By[len(rec.By)-1] != how {
				rec.By = append(rec.By, how)
			}
			rec.Checkpoint, rec.Pending = checkpointSum(r.dir), ""
			set.TrainedBy[r.name()] = rec
		}
	})
}

// updateTrainedBy applies change to the trained_by of dir's record and
// writes it again; nothing where there is no readable record
// (inferRunSet names a damaged one).
func updateTrainedBy(dir string, change func(runSet)) error {
	path := filepath.Join(dir, runSetFile)
	set, err := readRunSet(path)
	if err != nil {
		return nil
	}
	if set.TrainedBy == nil {
		set.TrainedBy = map[string]runTraining{}
	}
	change(set)
	if len(set.TrainedBy) == 0 {
		set.TrainedBy = nil
	}
	return set.write(path)
}

// trainedHow says how the run r was trained, from the record rec.
func trainedHow(r *reproRun, rec runTraining) string {
	now := checkpointSum(r.dir)
	if len(rec.By) == 0 {
		if now != "" && rec.Pending != "" {
			return rec.unrecorded()
		}
		return otherTraining
	}
	how := strings.Join(rec.By, ", then ")
	if now != "" && now != rec.Checkpoint { // trained on since, or anew
		how += ", then " + rec.unrecorded()
	}
	return how
}

// otherTraining is how a run was trained where no reproduce records it.
const otherTraining = "a plan's lines or by hand"

// sharingNote says, for the report of runs in dir, how many runs shared
// the machine as they trained, from the record of how each was (a run it
// does not list: otherwise, by a plan's line or by hand; round 111 B3: a
// plan written, none of its lines run, was counted).
func sharingNote(dir string, runs []*reproRun) string {
	set, _ := readRunSet(filepath.Join(dir, runSetFile))
	var hows []string
	named := map[string][]string{} // the runs trained each way
	for _, r := range runs {
		if !r.hasResult() {
			continue
		}
		how := trainedHow(r, set.TrainedBy[r.name()])
		if !slices.Contains(hows, how) {
			hows = append(hows, how)
		}
		named[how] = append(named[how], r.name())
	}
	switch jobs := sameJobs(hows); {
	case jobs == 1:
		return "trained one run at a time (reproduce --jobs 1 trained them)"
	case jobs > 0:
		return fmt.Sprintf("with up to %d runs sharing the machine (reproduce --jobs %d trained them)", jobs, jobs)
	case len(hows) == 1 && hows[0] == otherTraining:
		return "but the runs were trained by a plan's lines or by hand, and how many shared a machine is not recorded: compare it only between runs trained alike"
	case len(hows) > 0: // round 116 B1: which runs were trained alike was not said
		ways := make([]string, len(hows))
		for i, how := range hows {
			ways[i] = fmt.Sprintf("%s (%s)", how, strings.Join(named[how], ", "))
		}
		return fmt.Sprintf("but the runs were trained by %s, which may differ in how many runs shared a machine: compare it only between runs trained alike", strings.Join(ways, "; by "))
	}
	return "but how many runs shared a machine is not recorded here: compare it only between runs trained alike"
}

// sameJobs is N where every way in hows is "reproduce --jobs N", or
// several in turn, with one N; 0 otherwise.
func sameJobs(hows []string) int {
	jobs := 0
	for _, how := range hows {
		for _, step := range strings.Split(how, ", then ") {
			n := reproduceJobs(step)
			if n == 0 || jobs != 0 && n != jobs {
				return 0
			}
			jobs = n
		}
	}
	return jobs
}

// reproduceJobs is N where how is "reproduce --jobs N" alone, else 0.
func reproduceJobs(how string) int {
	n, ok := strings.CutPrefix(how, "reproduce --jobs ")
	jobs, err := strconv.Atoi(n)
	if !ok || err != nil {
		return 0
	}
	return jobs
}

// readRunSet reads the record at path.
func readRunSet(path string) (runSet, error) {
	var set runSet
	err := jsonfile.Read(path, &set, jsonfile.Options{MaxBytes: 1 << 16})
	return set, err
}

// differs says whether the set of f (its names as splitList reads them)
// is not the one recorded.
func (s runSet) differs(f reproduceFlags) bool {
	exps, err1 := splitList("experiments", f.experiments)
	algs, err2 := splitList("algorithms", f.algorithms)
	return err1 != nil || err2 != nil || !slices.Equal(exps, s.Experiments) || !slices.Equal(algs, s.Algorithms)
}

// inferRunSet sets, where neither --experiments nor --algorithms is
// given, the set to the one that the reproduce which made dir recorded
// there (runSetFile), if any: one flag given is not mixed with the
// record's other list (round 89 B1: a set no reproduce had asked for).
func inferRunSet(f *reproduceFlags, dir string) error {
	path := filepath.Join(dir, runSetFile)
	if f.given["experiments"] || f.given["algorithms"] || !exists(path) {
		return nil
	}
	set, err := readRunSet(path)
	if err == nil && (len(set.Experiments) == 0 || len(set.Algorithms) == 0) {
		err = fmt.Errorf("%s: want lists of experiments and algorithms", path)
	}
	for _, names := range [][]string{set.Experiments, set.Algorithms} {
		for i, n := range names {
			if err == nil && slices.Contains(names[:i], n) { // round 90 B3: blamed on --experiments, not given
				err = fmt.Errorf("%s names %q twice: want distinct names", path, n)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("--report %s: the set of runs its reproduce recorded cannot be read: %w: give --experiments and --algorithms", dir, err)
	}
	for _, e := range set.Experiments {
		if !slices.Contains(experiments.Names(), e) {
			return fmt.Errorf("--report %s: %s records the experiment %q, which flowebm does not know: give --experiments and --algorithms", dir, path, e)
		}
	}
	for _, a := range set.Algorithms {
		if !slices.Contains(algorithms.Algorithms, algorithms.Algorithm(a)) {
			return fmt.Errorf("--report %s: %s records the algorithm %q, which flowebm does not know: give --experiments and --algorithms", dir, path, a)
		}
	}
	f.experiments, f.algorithms = strings.Join(set.Experiments, ","), strings.Join(set.Algorithms, ",")
	f.setInferred = true
	return nil
}

// inferSettings sets the seed and length of the runs that --report
// reports, where no flag gives them, from the runs' config.json: they
// must agree (a run of other settings is then marked as such).
func inferSettings(f *reproduceFlags, runs []*reproRun) error {
	seedGiven, lengthGiven := f.given["seed"], f.quick || f.iters > 0
	if seedGiven && lengthGiven {
		return nil
	}
	type kept struct {
		r   *reproRun
		cfg config.Run
	}
	var ks []kept
	for _, r := range runs {
		cfg, err := training.ReadRunConfig(r.dir)
		if err == nil && cfg.Experiment == r.experiment && cfg.Train.Algorithm == r.algorithm {
			ks = append(ks, kept{r, cfg})
		}
	}
	if len(ks) == 0 {
		return nil // nothing to read them from: reproduce's defaults
	}
	var inferred []string
	if !seedGiven {
		bySeed := map[uint64][]string{}
		var seeds []uint64
		for _, k := range ks {
			if bySeed[k.cfg.Seed] == nil {
				seeds = append(seeds, k.cfg.Seed)
			}
			bySeed[k.cfg.Seed] = append(bySeed[k.cfg.Seed], k.r.name())
		}
		if len(seeds) > 1 {
			var parts []string
			for _, s := range seeds {
				parts = append(parts, fmt.Sprintf("seed %d (%s)", s, strings.Join(bySeed[s], ", ")))
			}
			return fmt.Errorf("--report %s: the runs are of several seeds: %s: give --seed for the runs to report (the others are then marked as of other settings)", f.out, strings.Join(parts, "; "))
		}
		f.seed = seeds[0]
		inferred = append(inferred, "seed")
	}
	if !lengthGiven {
		full, quick, fixed := true, true, true
		var lengths []string
		for _, k := range ks {
			d, _, _ := settings.Defaults(k.r.experiment, k.r.algorithm)
			it := k.cfg.Train.Iterations
			full = full && it == d.Train.Iterations
			quick = quick && it == max(50, d.Train.Iterations/10)
			fixed = fixed && it == ks[0].cfg.Train.Iterations
			lengths = append(lengths, fmt.Sprintf("%s %d", k.r.name(), it))
		}
		switch {
		case full:
		case quick:
			f.quick = true
		case fixed:
			f.iters = ks[0].cfg.Train.Iterations
		default:
			return fmt.Errorf("--report %s: the runs are of lengths that no one reproduce trains (iterations: %s): give --quick or --iterations N for the runs to report (the others are then marked as of other settings)", f.out, strings.Join(lengths, ", "))
		}
		inferred = append(inferred, "length")
	}
	f.inferred = strings.Join(inferred, " and ")
	return nil
}

// collect reads what the folder of run r holds for --report, setting its
// metrics, evaluations (a run without a result: those of its last
// checkpoint, if any), error and state. It returns a warning for a run
// whose plots could not be redrawn ("" if none).
func (r *reproRun) collect(f reproduceFlags) (warning string) {
	if warning = r.collectHeld(f); warning != "" || !r.hasResult() || !r.lacksFigures(f.plotFormat) {
		return warning
	}
	// Figures drawn from the model (the density), in another format only:
	// drawn as plot draws them, the run's folder locked again (probe 62:
	// the report's densities were empty, with no note).
	if _, err := redraw(r.dir, f.plotFormat, os.Stderr); err != nil {
		return fmt.Sprintf("%s: its figures were not all redrawn in %s: %v", r.name(), f.plotFormat, err)
	}
	return ""
}

// lacksFigures says whether the run has a figure in another format that
// it lacks in format.
func (r *reproRun) lacksFigures(format plots.Format) bool {
	for _, name := range plotNames {
		if exists(filepath.Join(r.dir, name+format.Ext())) {
			continue
		}
		for _, other := range []plots.Format{plots.PNG, plots.SVG, plots.PDF} {
			if exists(filepath.Join(r.dir, name+other.Ext())) {
				return true
			}
		}
	}
	return false
}

// collectHeld is collect's reading, the run's folder held.
func (r *reproRun) collectHeld(f reproduceFlags) (warning string) {
	r.exactDensity = r.exp != nil && r.exp.Kind == experiments.KindDensity // nil: an image experiment with no run here (planRuns)
	set := func(state, format string, args ...any) string {
		r.state, r.err = state, fmt.Sprintf(format, args...)
		return ""
	}
	fi, err := os.Stat(r.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return set(runMissing, "no folder %s", r.dir)
	case err != nil:
		return set(runUnreadable, "%v", err)
	case !fi.IsDir():
		return set(runUnreadable, "%s is a file, want a run folder", r.dir)
	}
	release, busy := holdRunToRedraw(r.dir)
	defer release()
	cfg, err := training.ReadRunConfig(r.dir)
	if errors.Is(err, os.ErrNotExist) {
		found := presentIn(r.dir, []string{"metrics.json", "samples.npy", "metrics.csv", "checkpoint", "checkpoint.old"})
		errTxt, _ := safefile.ReadFile(filepath.Join(r.dir, "error.txt"), maxTextBytes)
		switch msg := loggedError(r.dir); {
		case busy:
			return set(runInProgress, "starting: another process holds %s", filepath.Join(r.dir, ".lock"))
		case len(found) > 0:
			restore := training.ConfigRestore(r.dir) // probe 61: no way out named
			if restore != "" {
				restore = ": " + restore
			}
			return set(runUnreadable, "%s is missing, yet the folder holds %s%s", filepath.Join(r.dir, "config.json"), strings.Join(found, ", "), restore)
		case len(bytes.TrimSpace(errTxt)) > 0: // reproduce's record of a failure (or divergence) as it started
			r.err = strings.TrimSpace(string(errTxt))
			return ""
		case isInterruption(msg): // probe 31: called "failed"
			return set(runIncomplete, "interrupted before its first checkpoint: start it again (%s)", f.again())
		case msg != "":
			r.err = msg // failed (or diverged) as it started: its log.txt says why
			return ""
		}
		return set(runMissing, "%s holds no run (no config.json)", r.dir)
	}
	if err != nil {
		return set(runUnreadable, "%v", err) // it names config.json
	}
	want, err := f.iterations(r)
	if err != nil {
		return set(runUnreadable, "%v", err)
	}
	if err := training.ConfigEdited(r.dir, cfg); err != nil { // round 105 B1: another run's config.json in this run's folder, the run "mismatched", moved away
		return set(runUnreadable, "%v", err)
	}
	if cfg.Experiment != r.experiment || cfg.Train.Algorithm != r.algorithm || cfg.Seed != f.seed || cfg.Train.Iterations != want {
		advice := "move it away (or give the --seed, --quick or --iterations it was trained with)"
		if cfg.Experiment != r.experiment || cfg.Train.Algorithm != r.algorithm { // round 85 B9: no flag makes another algorithm's run this one
			advice = "move it away: it is another experiment's or algorithm's run in this one's folder"
		}
		return set(runMismatched, "%s is of experiment %q with algorithm %q, seed %d and %d iterations, not %s with %s, seed %d and %d iterations: %s",
			filepath.Join(r.dir, "config.json"), cfg.Experiment, cfg.Train.Algorithm, cfg.Seed, cfg.Train.Iterations, r.experiment, r.algorithm, f.seed, want, advice)
	}
	if field, have, want := f.configDiff(r, cfg); field != "" {
		return set(runMismatched, "%s: field %s is %s, but reproduce trains this run with %s (flowebm train's defaults): move it away, or train it again with the defaults", filepath.Join(r.dir, "config.json"), field, have, want)
	}
	if exists(filepath.Join(r.dir, "samples.npy")) { // written last: finished
		return r.collectFinished(f, cfg, busy)
	}
	iter, ckErr := r.checkpointEvals()
	progress := fmt.Sprintf("iteration %d of %d", iter, cfg.Train.Iterations)
	switch {
	case ckErr != nil: // probe 27: a read that failed was reported as "no checkpoint yet"
		progress = fmt.Sprintf("unreadable (%v), of %d iterations", ckErr, cfg.Train.Iterations)
	case iter == 0:
		progress = fmt.Sprintf("no checkpoint yet, of %d iterations", cfg.Train.Iterations)
	}
	if busy {
		r.note = progress
		return set(runInProgress, "training now (another process holds %s); its last checkpoint: %s", filepath.Join(r.dir, ".lock"), progress)
	}
	if b, err := safefile.ReadFile(filepath.Join(r.dir, "error.txt"), maxTextBytes); err == nil { // reproduce's record of a failure
		r.err = strings.TrimSpace(string(b))
		return ""
	}
	msg := loggedError(r.dir)
	if msg != "" && !isInterruption(msg) {
		r.err = msg // failed or diverged: its log.txt says why
		return ""
	}
	r.note = progress
	how := "stopped (killed, or its time ran out) at its last checkpoint"
	if msg != "" {
		how = "interrupted, stopped at its last checkpoint"
	}
	if ckErr != nil {
		return set(runUnreadable, "its last checkpoint: %s", progress)
	}
	if iter == 0 { // probe 19: "at its last checkpoint, no checkpoint yet"
		how = "stopped before its first checkpoint"
		if msg != "" {
			how = "interrupted before its first checkpoint"
		}
		return set(runIncomplete, "%s (of %d iterations): start it again (%s)", how, cfg.Train.Iterations, f.again())
	}
	return set(runIncomplete, "%s, %s: continue it (%s, or flowebm train --resume %s)", how, progress, f.again(), shellQuote(r.dir))
}

// modes is the number of the run's modes, or -1 where reproduce does not
// know them (a --plan's image runs: read from the files' headers).
func (r *reproRun) modes() int {
	if r.exp == nil {
		return -1
	}
	return len(r.exp.Weights)
}

// hasCheckpointFolder reports whether the run in dir holds a checkpoint
// folder, complete or not.
func hasCheckpointFolder(dir string) bool {
	for _, name := range []string{"checkpoint", "checkpoint.new", "checkpoint.old"} {
		if exists(filepath.Join(dir, name)) {
			return true
		}
	}
	return false
}

// retrainAdvice is how reproduce trains the run in dir anew: moved
// away, the same reproduce command starts it again.
func retrainAdvice(dir string) string {
	return fmt.Sprintf("move %s away (or remove it), then give the same reproduce command again, which trains it anew", dir)
}

// collectFinished reads a finished run (see collect) and redraws its
// evaluation plots in --plot-format, as reproduce does, unless another
// process holds its folder.
func (r *reproRun) collectFinished(f reproduceFlags, cfg config.Run, busy bool) (warning string) {
	path := filepath.Join(r.dir, "metrics.json")
	m, err := training.ReadMetrics(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.state, r.err = runUnreadable, fmt.Sprintf("%s is missing, yet the run finished (it has samples.npy, written last): flowebm train --resume %s writes it again from the run's last checkpoint", path, shellQuote(r.dir))
		return ""
	case err != nil: // round 94 B2: no way on was named
		r.state, r.err = runUnreadable, fmt.Sprintf("%v; flowebm train --resume %s writes it again from the run's last checkpoint", err, shellQuote(r.dir))
		return ""
	case m.Experiment != r.experiment || m.Algorithm != r.algorithm: // config.json is this run's (round 105 B1: the run moved away for a copied file)
		r.state, r.err = runUnreadable, fmt.Sprintf("%s is of experiment %q with algorithm %q, not %s with %s as the run's config.json: another run's file; flowebm train --resume %s writes the run's own again from its last checkpoint", path, m.Experiment, m.Algorithm, r.experiment, r.algorithm, shellQuote(r.dir))
		return ""
	case m.Iterations != cfg.Train.Iterations:
		r.state, r.err = runUnreadable, fmt.Sprintf("%s: field \"iterations\" is %d, but the run's config.json trains %d: the files disagree (flowebm train --resume %s writes the run's own again from its last checkpoint)", path, m.Iterations, cfg.Train.Iterations, shellQuote(r.dir)) // round 106 B6: no way on
		return ""
	case m.Seed != cfg.Seed: // round 95 B2: another seed's numbers reported as this run's
		r.state, r.err = runUnreadable, fmt.Sprintf("%s: field \"seed\" is %d, but the run's config.json has seed %d: the files disagree (flowebm train --resume %s writes the run's own again from its last checkpoint)", path, m.Seed, cfg.Seed, shellQuote(r.dir))
		return ""
	}
	evals, err := r.finishedEvals()
	if err != nil {
		r.state, r.err = runUnreadable, err.Error()
		return ""
	}
	if err := damagedSamples(r.dir); err != nil { // round 125 B1: a cut samples.npy reported as a result
		r.state, r.err = runUnreadable, fmt.Sprintf("%v; flowebm train --resume %s writes it again from the run's last checkpoint", err, shellQuote(r.dir))
		return ""
	}
	if _, err := training.LatestCheckpoint(r.dir); err != nil && hasCheckpointFolder(r.dir) { // round 104 B2: its outputs, edited, were reported unchecked (checkpoints removed to save room: reported as before)
		r.state, r.err = runUnreadable, fmt.Sprintf("%v: the run's outputs cannot be checked against it, so they are not reported%s; %s", withoutPackagePrefixes(err.Error()), editedWay(err), retrainAdvice(r.dir))
		return ""
	}
	last, source, seconds := evals[len(evals)-1], "metrics.csv's last row", 0.0
	switch ck, s, ok, err := training.CheckpointLastEval(r.dir, r.modes()); {
	case errors.As(err, new(training.EditedCheckpointError)): // round 110 B1: metrics.json blamed, train --resume advised, which refuses the checkpoint
		r.state, r.err = runUnreadable, fmt.Sprintf("%v: the run's checkpoint holds what no run writes (edited), so its outputs cannot be checked against it, and are not reported; restore the checkpoint from a copy, or %s", withoutPackagePrefixes(err.Error()), retrainAdvice(r.dir))
		return ""
	case err == nil && ok && ck.Iter >= last.Iter: // its chain weights too (round 105 B2); not an older checkpoint than the result (round 123 B4)
		last, source, seconds = ck, "as its checkpoint holds it", s
	}
	if err := training.CheckTruth(path, m, cfg); err != nil { // round 105 B3, round 106 A1
		r.state, r.err = runUnreadable, fmt.Sprintf("%v; flowebm train --resume %s writes it again", err, shellQuote(r.dir))
		return ""
	}
	if err := training.CheckFinal(path, last, source); err != nil { // round 104 B1
		way := fmt.Sprintf("flowebm train --resume %s writes both again from the run's last checkpoint", shellQuote(r.dir))
		if !hasCheckpointFolder(r.dir) {
			way = "the run has no checkpoint to write them again from: " + retrainAdvice(r.dir)
		}
		r.state, r.err = runUnreadable, fmt.Sprintf("%v; %s", err, way)
		return ""
	}
	if err := training.CheckSeconds(path, m, seconds); err != nil { // round 106 B2; its ways on its own (round 139 B1)
		r.state, r.err = runUnreadable, err.Error()
		return ""
	}
	r.metrics, r.evals = m, evals
	if busy { // read, not redrawn (probe 27: said nothing)
		return heldNotRedrawn(r, f.plotFormat)
	}
	hook("run-redrawing")
	if err := removeStaleTemps(r.dir, runNames()...); err != nil { // a killed redraw's (probe 29: left for good)
		return fmt.Sprintf("%s: its plots were not redrawn in %s: %v", r.name(), f.plotFormat, err)
	}
	if err := redrawRun(r.dir, cfg, r.exp, evals, f.plotFormat); err != nil {
		return fmt.Sprintf("%s: its plots were not redrawn in %s: %v", r.name(), f.plotFormat, err)
	}
	return ""
}

// checkpointEvals sets r.evals to the evaluations of the run's latest
// complete checkpoint, and returns that checkpoint's iteration (0 if
// there is none), or why it could not be read.
func (r *reproRun) checkpointEvals() (int, error) {
	iter := 0
	err := training.ReadLatest(r.dir, func(ck string) error { // a run being trained: one checkpoint whole
		hook("report-checkpoint-read")
		evals, err := training.ReadEvalsCSV(filepath.Join(ck, "evals.csv"), len(r.exp.Weights))
		if err != nil {
			return err // ReadRun says when the checkpoint was replaced meanwhile
		}
		path := filepath.Join(ck, "state.json")
		b, err := safefile.ReadFile(path, jsonfile.DefaultMaxBytes)
		if err != nil {
			return err
		}
		var st struct {
			Iter int `json:"iter"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		r.evals, iter = evals, st.Iter
		return nil
	})
	switch {
	case errors.Is(err, training.ErrNoCheckpoint) && !hasCheckpoint(r.dir):
		err = nil // none yet (probe 28: a damaged one was "no checkpoint yet")
	case err != nil:
		return 0, err
	}
	if iter > 0 {
		return iter, nil
	}
	if ev := r.final(); ev != nil {
		return ev.Iter, nil
	}
	return 0, err
}

// loggedError is the error that the last train process of the run in dir
// ended with, the last line of its log.txt ("flowebm: …"), or "" if it
// ended without one (finished, or killed) or refused to start because the
// run was there (a plan's line run twice) or busy: those say nothing of
// the run.
func loggedError(dir string) string {
	line := lastLine(filepath.Join(dir, "log.txt"))
	if !strings.HasPrefix(line, "flowebm: ") || strings.HasPrefix(line, "flowebm: warning") ||
		strings.Contains(line, "already holds a run: continue it with --resume") || strings.Contains(line, "already holds a finished run") || strings.Contains(line, "another flowebm process is") {
		return ""
	}
	return line
}

// loggedDivergence is the divergence that the log.txt of the unfinished
// run in dir ends with, or "": a --plan's train command records it only
// there.
func loggedDivergence(dir string) string {
	if msg := loggedError(dir); isDivergence(msg) && !exists(filepath.Join(dir, "metrics.json")) {
		return msg
	}
	return ""
}

// divergedBefore is the divergence of the run in dir, recorded in its
// error.txt (by reproduce) or log.txt (by a --plan's command), or "".
func divergedBefore(dir string) string {
	if b, err := safefile.ReadFile(filepath.Join(dir, "error.txt"), maxTextBytes); err == nil && isDivergence(string(b)) {
		return strings.TrimSpace(string(b))
	}
	return loggedDivergence(dir)
}

// notInSet is why a run of reproduce in runs/ is left out of a report.
const notInSet = "not among --experiments × --algorithms"

// extraFolder is an entry of runs/ that the report does not report.
type extraFolder struct{ name, why string }

// extraFolders lists the entries of DIR/runs that are none of runs.
func extraFolders(dir string, runs []*reproRun) []extraFolder {
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		return nil
	}
	var out []extraFolder
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || slices.ContainsFunc(runs, func(r *reproRun) bool { return r.name() == name }) {
			continue
		}
		why := "not a run of reproduce: its runs are named EXPERIMENT-ALGORITHM"
		for _, a := range algorithms.Algorithms {
			if exp, ok := strings.CutSuffix(name, "-"+string(a)); ok && slices.Contains(experiments.Names(), exp) {
				why = notInSet
			}
		}
		out = append(out, extraFolder{name, why})
	}
	return out
}

// configDiff compares the configuration of the run in r.dir with the one
// "flowebm train" resolves for r with this invocation's flags (the
// experiment's defaults, --seed, the length of --quick or --iterations),
// returning the first field where they differ with both values, or "".
func (f reproduceFlags) configDiff(r *reproRun, have config.Run) (field, va, vb string) {
	exp := r.exp
	if have.DataDir != "" { // the defaults of the run's own data (data_size is the images')
		if e, err := experiments.ByNameIn(r.experiment, have.DataDir); err == nil {
			exp = e
		}
	}
	want, _, err := settings.DefaultsFor(exp, r.algorithm)
	if err == nil {
		want.Seed = f.seed
		if f.quick || f.iters > 0 {
			var n int
			if n, err = f.iterations(r); err == nil {
				want.Train.SetIterations(n)
			}
		}
		if err == nil {
			err = want.Resolve(exp)
		}
	}
	if err != nil {
		return "(defaults)", err.Error(), "resolvable defaults"
	}
	if want.Train.StartScale == 0 {
		// The σ of a gaussian start comes from the built models (Resolve
		// leaves it): the run's is what its defaults gave.
		want.Train.StartScale = have.Train.StartScale
	}
	return training.ConfigDiff(have, want)
}

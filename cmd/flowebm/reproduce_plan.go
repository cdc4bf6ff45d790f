package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/shellquote"
	"github.com/flowebm/flowebm/io/safefile"
)

// runPlanOrReport runs reproduce --plan FILE or --report DIR: neither
// trains anything.
func runPlanOrReport(out io.Writer, f reproduceFlags) error {
	if f.plan != "" && f.report != "" {
		return fmt.Errorf("--plan writes the commands that train the runs, --report reports runs already trained: give one of them")
	}
	if f.given["jobs"] {
		return fmt.Errorf("--jobs is how many runs reproduce trains at once; with --plan or --report it trains none (the scheduler, or parallel --jobs N, decides how many run at once): drop it")
	}
	if f.report != "" {
		if f.given["plan-binary"] {
			return fmt.Errorf("--plan-binary names the executable of the commands that --plan writes: drop it with --report")
		}
		return runReport(out, f)
	}
	return writePlan(out, f)
}

// checkPlanReportFolder refuses an --out for --plan that holds report.md
// or a report figure but no runs/ of an earlier reproduce: the report that
// --report builds there after the plan would replace them.
func checkPlanReportFolder(out string) error {
	if fi, err := os.Stat(filepath.Join(out, "runs")); err == nil && fi.IsDir() {
		return nil
	}
	if found := presentIn(out, reportNames()); len(found) > 0 {
		return fmt.Errorf("--out %s holds %s but no runs/ of an earlier reproduce: the report that --report builds after the plan would replace it; give another --out", out, strings.Join(found, ", "))
	}
	return nil
}

// writePlan writes --plan: the command line of every run of the
// reproduction that is still to train (or to finish), one per line, line
// N being run N, longest first (as reproduce starts them), then comment
// lines saying how to run them and how to build the report. A run's
// command makes its folder, OUT/runs/EXPERIMENT-ALGORITHM, and appends its
// output to log.txt there, as reproduce does; it is the train command that
// reproduce would run for the run as its folder is now: a new run, or
// the resumption of an interrupted one. Finished and diverged runs are
// left out.
func writePlan(out io.Writer, f reproduceFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := checkPlanText("--out", f.out); err != nil {
		return err
	}
	if lockedByOther(f.out) { // round 86 B7: its lines failed, or resumed runs the other process finished
		return fmt.Errorf("--out %s: another flowebm process%s is training the runs of this folder (it holds %s), every run the plan would hold: wait for it to end (then --report builds the report), or stop it and write the plan again (its runs resume from their lines)", f.out, holderWords(filepath.Join(f.out, ".lock")), filepath.Join(f.out, ".lock"))
	}
	if err := checkPlanText("--plan-binary", f.planBinary); err != nil {
		return err
	}
	if err := checkOutput("--plan", f.plan); err != nil {
		return err
	}
	if err := checkPlanPath(f); err != nil {
		return err
	}
	if err := checkNew("--plan", f.plan, f.force); err != nil {
		return err
	}
	if err := replacesAPlan(f.plan); f.force && err != nil {
		return err
	}
	runs, err := planRuns(f)
	if err != nil {
		return err
	}
	if err := checkKeptRuns(runs, f); err != nil {
		return err
	}
	var lines, left, busy []string
	// The high-dimensional runs are the longest: first.
	for _, r := range slices.Backward(runs) {
		line, leftOut, err := planEntry(r, f)
		switch {
		case err != nil:
			return err
		case leftOut != "":
			left = append(left, leftOut)
		default:
			lines = append(lines, line)
			if lockedByOther(r.dir) {
				busy = append(busy, r.name()+sharedLockRun(r.dir))
			}
		}
	}
	text := strings.Join(append(lines, planNotes(f, len(lines), left, busy)...), "\n") + "\n"
	if err := mkdirAll(f.out); err != nil { // round 88 B4: the set, for a --report without flags
		return err
	}
	wroteSet, err := writeRunSet(f, false) // an earlier set's record is kept: none of the plan's lines has run (round 89 B3)
	if err != nil {
		return err
	}
	defer removeTempsOnSignalNoting(placedNote(f.plan, "the plan is written: ", // probe 40: the bare "interrupted"
		"no plan written: give the same reproduce --plan command again to write it"))()
	if err := writeOutput("--plan", f.plan, f.force, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
		return err
	}
	fmt.Fprintf(out, "plan: %s: %d of %d runs to train, one command per line (line N is run N)\n", f.plan, len(lines), len(runs))
	if len(left) > 0 {
		fmt.Fprintf(out, "left out: %s\n", strings.Join(left, ", "))
	}
	if len(busy) > 0 {
		fmt.Fprintf(out, "training now (another process holds their folder): %s; their lines resume them once it ends, and fail at once before\n", strings.Join(busy, ", "))
	}
	if len(lines) > 0 {
		fmt.Fprintf(out, "run it with, e.g.: parallel --jobs 2 < %s   (Slurm and Kubernetes: see the end of the file, and docs/reproducing.md)\n", shellQuote(f.plan))
	}
	fmt.Fprintf(out, "then build the report: %s\n", reportCommand(f))
	if rec, err := readRunSet(filepath.Join(f.out, runSetFile)); !wroteSet && err == nil && rec.differs(f) {
		fmt.Fprintf(out, "note: %s records another set, experiments %s × algorithms %s, which a --report without --experiments and --algorithms reports; the report command above names this plan's set\n",
			filepath.Join(f.out, runSetFile), strings.Join(rec.Experiments, ","), strings.Join(rec.Algorithms, ","))
	}
	return nil
}

// planMark begins the first of a plan's notes: --force replaces only a
// file that holds it (round 86 B8: --plan FILE --force replaced any file).
const planMark = "# flowebm reproduce plan: "

// maxPlanBytes bounds the file searched for planMark: a plan holds a line
// of a few hundred bytes per run.
const maxPlanBytes = 4 << 20

// replacesAPlan is nil where the file path does not exist (or is no
// regular file: checkNew judges those) or is a plan that reproduce wrote.
func replacesAPlan(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b, err := safefile.ReadFile(path, maxPlanBytes)
	if err == nil && (strings.HasPrefix(string(b), planMark) || strings.Contains(string(b), "\n"+planMark)) {
		return nil
	}
	return fmt.Errorf("--plan %s exists and is not a plan that reproduce wrote (it has no line beginning %q): --force replaces only a plan; give another name, or move the file away", path, strings.TrimSpace(planMark))
}

// commentText is s for a comment line of the plan: Go-quoted if it holds
// a control character, which would otherwise end the comment and start a
// command line.
func commentText(s string) string {
	if strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}

// checkPlanText refuses a path of flag holding a line break or another
// control character: a plan has one command per line.
func checkPlanText(flag, s string) error {
	if i := strings.IndexFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f }); i >= 0 {
		return fmt.Errorf("%s %q holds a control character (%q): the plan has one command per line; give a path without it", flag, s, s[i])
	}
	return nil
}

// checkPlanPath refuses a --plan file that is one of the report's files
// in --out, which --report replaces, or that is --out or OUT/runs itself,
// folders the plan's lines make.
func checkPlanPath(f reproduceFlags) error {
	// The executable the plan's lines run, or this one: even with --force,
	// the plan would replace the program (probe 18).
	bin := f.planBinary
	if !strings.ContainsRune(bin, filepath.Separator) { // found on PATH, here as where the lines may run
		bin, _ = exec.LookPath(bin)
	}
	if bin != "" && sameFile(f.plan, bin) {
		return fmt.Errorf("--plan %s is the executable that its lines run (--plan-binary %s): give the plan another path", f.plan, f.planBinary)
	}
	if exe, err := os.Executable(); err == nil && sameFile(f.plan, exe) {
		return fmt.Errorf("--plan %s is this flowebm executable: give the plan another path", f.plan)
	}
	for _, dir := range []string{f.out, filepath.Join(f.out, "runs")} {
		if sameFile(f.plan, dir) {
			return fmt.Errorf("--plan %s is the folder %s that the plan's lines make (--out %s): give the plan another path", f.plan, dir, f.out)
		}
	}
	// The runs' folders and the seed sets that --report reads (probe 19:
	// --plan OUT/seeds/NAME/seeds.json --force replaced a set).
	for _, sub := range []string{"runs", reportSeedsFolder} {
		if d := filepath.Join(f.out, sub); exists(d) && within(filepath.Dir(f.plan), d) {
			return fmt.Errorf("--plan %s is inside %s, which --report reads: give the plan another path", f.plan, d)
		}
	}
	if !sameFile(filepath.Dir(f.plan), f.out) {
		return nil
	}
	if slices.Contains(reportNames(), filepath.Base(f.plan)) {
		return fmt.Errorf("--plan %s is where --report writes its report (or a figure) in --out %s: give another name", f.plan, f.out)
	}
	return nil
}

// planLine is the shell command line of run r: make its folder, then run
// the train command that reproduce would run, its output appended to the
// folder's log.txt. A run that reproduce marked failed (error.txt) is
// retried, its error.txt removed first, as reproduce does.
func planLine(r *reproRun, f reproduceFlags) (string, error) {
	dir := r.dir
	if strings.HasPrefix(dir, "-") {
		dir = "." + string(filepath.Separator) + dir // not an option of mkdir
	}
	args, err := trainArgs(r, f)
	if err != nil {
		return "", err
	}
	if lockedByOther(r.dir) {
		// Trained now by another process: its line continues the run
		// once that ends (and refuses before), never starts it over,
		// also where the lock is shared with a copy (cp -al) and the
		// holder may train the copy (probe 44: a --force line, given to
		// a run writing its first checkpoint, started it over; a copy's
		// --resume line fails, saying why, where it has no checkpoint).
		args = []string{"train", "--plot-format", f.plotFormat.String(), "--resume", r.dir}
	}
	for i, a := range args {
		if a == r.dir {
			args[i] = dir
		}
	}
	line := "mkdir -p " + shellQuote(dir) + " && "
	if exists(filepath.Join(r.dir, "error.txt")) {
		line += "rm -f " + shellQuote(filepath.Join(dir, "error.txt")) + " && "
	}
	return line + shellJoin(append([]string{f.planBinary}, args...)) + " >> " + shellQuote(filepath.Join(dir, "log.txt")) + " 2>&1", nil
}

// sharedLockRun is "" where the lock of the run folder dir has one name,
// else words for the plan's list of runs being trained: the holder may
// train a copy that shares the lock (cp -al).
func sharedLockRun(dir string) string {
	if n := lockLinks(dir); n > 1 {
		return fmt.Sprintf(" (here or in a copy: its .lock has %d hard links)", n)
	}
	return ""
}

// planNotes are the comment lines at the end of a plan of n runs (after
// them: line N stays run N), saying how to run it and build the report.
func planNotes(f reproduceFlags, n int, left, busy []string) []string {
	plan := shellQuote(f.plan)
	notes := []string{
		fmt.Sprintf(planMark+"the %d lines above train one run each (line N is run N, longest first); %s", n, planSettings(f)),
	}
	if n == 0 {
		notes[0] = planMark + "nothing to train; every run is finished or diverged; " + planSettings(f)
	}
	if len(left) > 0 {
		notes = append(notes, "# Left out: "+strings.Join(left, ", ")+".")
	}
	if len(busy) > 0 {
		notes = append(notes, "# Training when the plan was written (another process held the folder): "+strings.Join(busy, ", ")+".")
	}
	if !filepath.IsAbs(f.out) {
		wd, _ := os.Getwd()
		notes = append(notes, fmt.Sprintf("# Its paths are relative: run the lines from the folder it was written in, %s.", commentText(wd)))
	}
	if n == 0 { // round 86 B10: no job array of the notes' lines
		return append(notes, "# Build the report: "+reportCommand(f))
	}
	notes = append(notes,
		"# Each line makes its run folder and appends the run's output to log.txt there; it exits non-zero if the run failed or diverged.",
		binaryNote(f.planBinary),
		fmt.Sprintf("# GNU parallel: parallel --jobs 2 < %s", plan),
		fmt.Sprintf("# Slurm job array: sbatch --array=1-%d --wrap %s", max(n, 1), shellQuote(`sed -n "${SLURM_ARRAY_TASK_ID}p" `+plan+" | sh")),
		fmt.Sprintf("# Kubernetes Indexed Job (completions: %d): sh -c %s", max(n, 1), shellQuote(`sed -n "$((JOB_COMPLETION_INDEX + 1))p" `+plan+" | sh")),
		"# A run stopped (a time limit, a preemption) resumes from its checkpoint: write the plan again (--force replaces it) for the lines of the runs left.",
		"# Then build the report (a partial set is marked as such): "+reportCommand(f),
	)
	return notes
}

// binaryNote says where the plan's commands find the flowebm executable.
func binaryNote(bin string) string {
	if !strings.Contains(bin, "/") {
		return fmt.Sprintf("# The lines run %s from the PATH of the machines that run them (write the plan with --plan-binary PATH for another).", shellQuote(bin))
	}
	return fmt.Sprintf("# The lines run %s: it must be there on the machines that run them (--plan-binary).", shellQuote(bin))
}

// planSettings describes the runs' settings for the plan's first note.
func planSettings(f reproduceFlags) string {
	length := "full length (the paper's settings scaled to 2 cores)"
	switch {
	case f.quick:
		length = "--quick: a tenth of the iterations"
	case f.iters > 0:
		length = fmt.Sprintf("%d iterations per run", f.iters)
	}
	return fmt.Sprintf("seed %d, %s, %s plots, into %s.", f.seed, length, f.plotFormat, shellQuote(filepath.Join(f.out, "runs")))
}

// reportCommand is the command that builds the report of the plan's runs.
func reportCommand(f reproduceFlags) string {
	args := []string{f.planBinary, "reproduce", "--report", f.out}
	exps, _ := splitList("experiments", f.experiments)
	if !slices.Equal(exps, reproduceExperiments) {
		args = append(args, "--experiments", strings.Join(exps, ","))
	}
	if algs, _ := splitList("algorithms", f.algorithms); strings.Join(algs, ",") != "flowmc,ula,nt,coopflow" {
		args = append(args, "--algorithms", strings.Join(algs, ","))
	}
	args = append(args, "--seed", strconv.FormatUint(f.seed, 10))
	switch {
	case f.quick:
		args = append(args, "--quick")
	case f.iters > 0:
		args = append(args, "--iterations", strconv.Itoa(f.iters))
	}
	if f.given["plot-format"] {
		args = append(args, "--plot-format", f.plotFormat.String())
	}
	return shellJoin(args)
}

// shellJoin writes args as one POSIX shell command line.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellQuote quotes s as one word for a POSIX shell: as it is when it
// holds only characters that no shell treats specially, else in single
// quotes (a single quote in it is ended, escaped and begun again as
// quote, backslash, quote, quote). '=' is quoted too: a first word
// NAME=VALUE would be a variable assignment.
func shellQuote(s string) string { return shellquote.Quote(s) }

// planEntry is the plan's line for run r, or why it is left out
// (leftOut), or why no plan can be written; each check of the run's
// folder (its checkpoint's SHA-256 sums among them) is made once.
func planEntry(r *reproRun, f reproduceFlags) (line, leftOut string, err error) {
	if edited := editedRun(r.dir); edited != nil { // round 85 B6: its --resume line would fail
		var e *training.ConfigEditedError
		errors.As(edited, &e)
		if e.Foreign { // round 114 B3: the cp would make it another run
			return "", fmt.Sprintf("%s (its checkpoint is another run's: field %q differs from its config.json, its evaluations from its metrics.csv; its line would fail; %s)", r.name(), e.Field, e.Remedy()), nil
		}
		return "", fmt.Sprintf("%s (its config.json was edited since its checkpoint, field %q: its line would fail; cp %s %s restores it)", r.name(), e.Field, shellQuote(e.Checkpoint), shellQuote(e.Path)), nil
	}
	if m := mismatchOf(r, f); m != "" { // round 113 B1: left out as done (or resumed), then refused by --report
		return "", fmt.Sprintf("%s (mismatched: %s)", r.name(), m), nil
	}
	damaged := damagedCheckpointOf(r.dir)
	if exists(filepath.Join(r.dir, "samples.npy")) { // written last
		metricsErr := finishedMetricsErr(r.dir)
		switch {
		case metricsErr == nil:
			return "", r.name() + " (finished)", nil
		case !hasCheckpoint(r.dir) || damaged != nil:
			why := "it has no checkpoint to write them again from"
			if damaged != nil {
				why = "nor can its checkpoint (" + withoutPackagePrefixes(damaged.Error()) + ")"
			}
			return "", "", fmt.Errorf("%w: the run %s finished (it has samples.npy, written last), but its metrics cannot be read, and %s: move its folder away to train it again", metricsErr, r.dir, why)
		}
	}
	switch {
	case divergedBefore(r.dir) != "":
		return "", r.name() + " (diverged: a result, not retried)", nil
	case damaged != nil: // round 111 B4: its --resume line failed, unsaid
		return "", fmt.Sprintf("%s (%v: its --resume line would fail; move %s away, or remove it, then write the plan again, which trains it anew)", r.name(), withoutPackagePrefixes(damaged.Error()), shellQuote(r.dir)), nil
	}
	line, err = planLine(r, f)
	return line, "", err
}

// mismatchOf says, of a run in r.dir trained with other settings than
// this reproduce's (train's defaults), which field differs and the way
// on, as --report marks it mismatched; "" otherwise, or where its
// config.json cannot be read (the plan's other checks name that).
func mismatchOf(r *reproRun, f reproduceFlags) string {
	trained := hasCheckpoint(r.dir) || exists(filepath.Join(r.dir, "samples.npy")) || divergedBefore(r.dir) != ""
	if !trained || lockedByOther(r.dir) { // a run stopped before its first checkpoint starts again with reproduce's settings; one in progress is its trainer's
		return ""
	}
	cfg, err := training.ReadRunConfig(r.dir)
	if err != nil || r.exp == nil { // an image run of a plan: its experiment is not read here
		return ""
	}
	if field, have, want := f.configDiff(r, cfg); field != "" {
		return fmt.Sprintf("%s: field %s is %s, but reproduce trains this run with %s (flowebm train's defaults): move it away, or train it again with the defaults", filepath.Join(r.dir, "config.json"), field, have, want)
	}
	return ""
}

// finishedMetricsErr is why the metrics.json of the finished run in dir
// cannot be read; nil where it reads. A run whose checkpoint reads gets a
// train --resume line, which writes it again (round 112 B2: "move its
// folder away", losing a finished run).
func finishedMetricsErr(dir string) error {
	_, err := training.ReadMetrics(filepath.Join(dir, "metrics.json"))
	return err
}

// damagedCheckpointOf is why the run in dir, which has a checkpoint
// folder and no other process holds, cannot be resumed from any: nil
// where one is complete, or it has none.
func damagedCheckpointOf(dir string) error {
	if !hasCheckpoint(dir) || lockedByOther(dir) {
		return nil
	}
	_, err := training.LatestCheckpoint(dir)
	return err
}

// editedRun is the *training.ConfigEditedError of the run in dir whose
// config.json differs from its checkpoint's copy, or nil.
func editedRun(dir string) error {
	cfg, err := training.ReadRunConfig(dir)
	if err != nil {
		return nil
	}
	return training.ConfigEdited(dir, cfg)
}

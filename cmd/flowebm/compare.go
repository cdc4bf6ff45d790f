package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/safefile"
)

func compareCmd() *cobra.Command {
	var out string
	var format plots.Format
	var force bool
	cmd := &cobra.Command{
		Use:   "compare RUN... --out DIR",
		Short: "Overlay the metrics of several runs over training, one figure per quantity",
		Long: `compare reads the evaluations of each run folder (its metrics.csv, or the
checkpoint's evaluations for a run still training or interrupted) and draws
into DIR one figure per quantity that some run has, with a curve per run
named after its folder: the EBM's mode-weight MSE, max R-hat, the median
squared log-density error, the held-out log-likelihood and the global
acceptance. DIR/summary.md tabulates each run's last evaluation beside its
experiment, algorithm and flow, and the time per iteration of finished runs.
Nothing is trained; runs of any experiment, algorithm or seed can be
overlaid. Existing figures in DIR are replaced only with --force,
which also removes the figures of an earlier comparison that this one does
not draw (those DIR/.compare-figures lists: a file of yours named like a
figure is kept), naming them.`,
		Args: positional(1, -1, "one or more run folders that flowebm train wrote", ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, out, format, force)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "folder for the figures")
	markPathFlags(cmd.Flags(), "out")
	cmd.Flags().Var(&format, "plot-format", "file format of the figures: png, svg or pdf")
	cmd.Flags().BoolVar(&force, "force", false, "replace figures already in --out")
	return cmd
}

// curveNames names each run folder's curve by as many trailing path
// elements as tell the folders apart (x/s1 and y/s1, not s1 twice); the
// same folder given twice is an error later (a single curve each). A name
// holding a character that does not show is quoted (shownName).
func curveNames(dirs []string) []string {
	names := make([]string, len(dirs))
	for k := 1; ; k++ {
		seen, clash, whole := map[string]bool{}, false, true
		for i, d := range dirs {
			parts := strings.Split(filepath.ToSlash(filepath.Clean(d)), "/")
			names[i] = strings.Join(parts[max(0, len(parts)-k):], "/")
			clash = clash || seen[names[i]]
			seen[names[i]] = true
			whole = whole && k >= len(parts)
		}
		if !clash || whole {
			for i := range names {
				names[i] = shownName(names[i])
			}
			return names
		}
	}
}

// runCompare draws the figures of the run folders dirs into out.
func runCompare(stdout, stderr io.Writer, dirs []string, out string, format plots.Format, force bool) error {
	if out == "" {
		return fmt.Errorf("give --out DIR for the figures")
	}
	for i, a := range dirs {
		for _, b := range dirs[:i] {
			if sameFile(a, b) {
				return fmt.Errorf("run %s given twice (as %s): give each run once", a, b)
			}
		}
	}
	var runs []runSummary
	names := curveNames(dirs)
	for i, dir := range dirs {
		evals, err := runEvals(dir)
		if err != nil {
			return err
		}
		s, unread := readSummary(plots.Named{Name: names[i], Evals: evals}, dir)
		if m := s.metrics; m != nil && m.GridMissed != nil {
			s.GridMissedAt = m.Final.Iter
		}
		s.ISRejectedAt = isRejectedAt(s.metrics)
		if s.diverged && s.metrics == nil { // round 113 A4: unsaid but in summary.md
			s.Name += " (diverged)"
			fmt.Fprintf(stderr, "flowebm: note: the run %s diverged (its error.txt): its curves end at its last checkpoint\n", dir)
		}
		for _, err := range unread {
			fmt.Fprintf(stderr, "flowebm: note: %v; its columns show — in the table\n", err)
		}
		_, latestErr := training.LatestCheckpoint(dir)
		if note := unwrittenOutputsNote(dir, latestErr == nil && !s.diverged && !lockedByOther(dir) && (s.metrics != nil || s.total > 0 && len(evals) > 0 && evals[len(evals)-1].Iter >= s.total)); note != "" { // round 132 B1: "train --resume writes them again" of a run it refuses
			fmt.Fprintln(stderr, note)
		}
		switch err := latestErr; {
		case err == nil || len(unread) > 0:
		case s.metrics != nil && hasCheckpointFolder(dir): // round 105 B8
			fmt.Fprintf(stderr, "flowebm: note: %s: the run's outputs, shown, cannot be checked against it%s\n", withoutPackagePrefixes(err.Error()), editedWay(err)) // the error names the run (round 124 B4: "s8: s8: …")
		case errors.As(err, new(*training.OutOfOrderError)): // its own way on (round 132 B1: "cannot be resumed" of a run resumable once a folder is moved out)
			fmt.Fprintf(stderr, "flowebm: note: %s; its curves, shown, are those its metrics.csv holds\n", withoutPackagePrefixes(err.Error()))
		case s.metrics == nil && !s.diverged && !lockedByOther(dir): // round 131 B4: shown as any unfinished run, unsaid
			fmt.Fprintf(stderr, "flowebm: note: %s: the run, unfinished, cannot be resumed (train --resume has no checkpoint to continue from); its curves, shown, are those its metrics.csv holds\n", withoutPackagePrefixes(err.Error()))
		}
		runs = append(runs, s)
	}
	if err := checkCompareOut(out, dirs); err != nil {
		return err
	}
	if err := checkFiguresNew(out, format, force); err != nil {
		return err
	}
	defer removeTempsOnSignal()()
	files, err := drawFigures(runs, out, format, force, stderr)
	if err != nil {
		return err
	}
	if note := blankGlyphsNote(names, format); note != "" {
		fmt.Fprintln(stderr, note)
	}
	if exps := experimentsOf(runs); len(exps) > 1 { // round 81 B9: a held-out LL of −957 flattened the others' curves, unsaid
		fmt.Fprintf(stderr, "flowebm: note: the runs come from %d experiments (%s): their held-out log-likelihoods and errors lie on different scales, so a figure can flatten some runs' curves; compare runs of one experiment to see those\n", len(exps), strings.Join(exps, ", "))
	}
	for _, f := range files {
		fmt.Fprintln(stdout, "wrote", f)
	}
	return nil
}

// experimentsOf are the distinct experiments of the runs, in order.
func experimentsOf(runs []runSummary) []string {
	var exps []string
	for _, r := range runs {
		if r.exp != "" && !slices.Contains(exps, r.exp) {
			exps = append(exps, r.exp)
		}
	}
	return exps
}

// checkFiguresNew refuses, unless force, an --out holding figures.
func checkFiguresNew(out string, format plots.Format, force bool) error {
	if force {
		return nil
	}
	if existing, _ := filepath.Glob(filepath.Join(out, "*"+format.Ext())); len(existing) > 0 {
		return fmt.Errorf("--out %s already holds figures (%s): give another folder, or replace them with --force", out, filepath.Base(existing[0]))
	}
	if _, err := os.Lstat(filepath.Join(out, summaryName)); err == nil {
		return fmt.Errorf("--out %s already holds a comparison's %s: give another folder, or replace it with --force", out, summaryName)
	}
	return nil
}

// drawFigures writes the runs' figures into out (creating it, locked
// against another compare) and returns their files: all of them, or on an
// error none (drawStaged).
func drawFigures(runs []runSummary, out string, format plots.Format, force bool, notes io.Writer) ([]string, error) {
	named := make([]plots.Named, len(runs))
	for i, r := range runs {
		named[i] = r.Named
	}
	earlier := false // out holds an earlier comparison (its summary.md), whose figures --force replaces
	return drawStaged(out, "--out", "compare", func() error {
		_, err := os.Lstat(filepath.Join(out, summaryName))
		earlier = err == nil
		return checkFiguresNew(out, format, force)
	},
		func(tmp string) ([]string, error) {
			drawn, err := plots.Compare(named, tmp, format)
			if err == nil && len(drawn) == 0 {
				err = nothingToPlot(named)
			}
			if err != nil {
				return drawn, err
			}
			table, err := writeSummary(tmp, runs)
			return append(drawn, table), err
		},
		func(drawn []string) error {
			var names []string
			for _, d := range drawn {
				if filepath.Base(d) != summaryName {
					names = append(names, filepath.Base(d))
				}
			}
			others, recorded, err := figureSet(out, compareRecord, names, isCompareFigure, force)
			switch {
			case err != nil:
				return err
			case !recorded: // none, or one that cannot be read (round 120 A1): an earlier compare's figures, before it recorded them, or a user's files, left (round 119 B1: deleted unsaid)
				if earlier && len(others) > 0 {
					fmt.Fprintf(notes, "flowebm: note: %s also holds %s named like compare's that no compare recorded drawing there (%s): left as they are; remove them if they are an earlier comparison's\n", out, count(len(others), "file"), listNames(others, 4))
				}
			case len(others) > 0 && force:
				fmt.Fprintf(notes, "flowebm: note: --force removed from %s the %s of an earlier compare that this one does not draw (%s)\n", out, count(len(others), "figure"), listNames(others, 4))
			case len(others) > 0:
				fmt.Fprintf(notes, "flowebm: note: %s also holds %s of an earlier compare that this one does not draw (%s); --force replaces the whole set, or give another --out\n", out, count(len(others), "figure"), listNames(others, 4))
			}
			return nil
		})
}

// compareRecord is the file in compare's --out that lists the figures it
// drew there (figureSet): --force removes those alone (round 118 B2: a
// user's held-out-ll.pdf beside a comparison in PNG was deleted unsaid).
const compareRecord = ".compare-figures"

// drawStaged draws a set of figures into out (creating it) as one piece:
// locked against another command drawing there (lockName), checking again
// under the lock that they are new (checkNew), drawn into a temporary
// folder inside out and moved into place only when all are drawn, so that
// a failure (a full disk) or a signal leaves the figures out held before;
// placed runs after the move. It returns the figures' paths.
func drawStaged(out, flag, lockName string, checkNew func() error, draw func(tmp string) ([]string, error), placed func(drawn []string) error) ([]string, error) {
	release, untrackOut, err := lockOutputFolder(out, lockName) // a signal removes the folders made for the figures
	if err != nil {
		return nil, namingFlag(flag, err)
	}
	defer release()
	// Again, locked: another command may have drawn into out meanwhile.
	if err := checkNew(); err != nil {
		return nil, err
	}
	if err := removeStaleStaging(out); err != nil {
		return nil, err
	}
	tmp, untrack, err := safefile.MkdirTempTracked(out, stagingPrefix)
	if err != nil {
		return nil, err
	}
	defer untrack()
	defer os.RemoveAll(tmp)
	drawn, err := draw(tmp)
	if err != nil {
		return nil, stagedError(err, tmp, out)
	}
	hook("compare-drawn")
	return moveFigures(drawn, out, func() error {
		untrackOut()
		return placed(drawn)
	})
}

// nothingToPlot says why the runs gave no figure: they have no
// evaluations yet, or none with a value a figure shows.
func nothingToPlot(runs []plots.Named) error {
	var names []string
	evals := 0
	for _, r := range runs {
		names = append(names, r.Name)
		evals += len(r.Evals)
	}
	// Said of one run as of one (round 80 B9: "the runs r4 have").
	subject, have, their := "the runs "+strings.Join(names, ", ")+" have", "evaluations", "their"
	if len(names) == 1 {
		subject, their = "the run "+names[0]+" has", "its"
	}
	if evals == 1 {
		have = "evaluation"
	}
	if evals > 0 {
		return fmt.Errorf("%s %d %s, but no value to plot: %s MSE, R-hat, log-density error, held-out log-likelihood and global acceptance are all NaN (or infinite, or not positive on a logarithmic axis)", subject, evals, have, their)
	}
	return fmt.Errorf("%s no evaluations to plot yet (a run evaluates every eval_every iterations)", subject)
}

// stagingPrefix names the temporary folders that compare draws in.
const stagingPrefix = ".compare-"

// removeStaleStaging removes the temporary folders (.compare-N) that a
// killed compare left in out (whose lock the caller holds). The folder's
// entries are listed: no character of out is read as a pattern.
func removeStaleStaging(out string) error {
	entries, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && safefile.IsTemp(e.Name(), stagingPrefix) {
			if err := os.RemoveAll(filepath.Join(out, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareFigures are the figures that compare draws (plots.Compare), one
// per quantity.
var compareFigures = []string{"ebm-weight-mse", "max-rhat", "log-density-error", "held-out-ll", "global-accept"}

// isCompareFigure reports whether name is one of compare's figures, in
// any plot format.
func isCompareFigure(name string) bool { return slices.Contains(figureNames(compareFigures...), name) }

// moveFigures moves the drawn figures into out, all of them before a
// signal's cleanup runs, then calls placed, and returns their paths.
func moveFigures(drawn []string, out string, placed func() error) ([]string, error) {
	for _, d := range drawn {
		if fi, err := os.Stat(filepath.Join(out, filepath.Base(d))); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s is a folder: the figure %s cannot replace it", filepath.Join(out, filepath.Base(d)), filepath.Base(d))
		}
	}
	var files []string
	err := safefile.Hold(func() error {
		for _, d := range drawn {
			f := filepath.Join(out, filepath.Base(d))
			if err := os.Rename(d, f); err != nil {
				return err
			}
			files = append(files, f)
		}
		return placed()
	})
	return files, err
}

// stagedError says err, an error writing a figure into the staging folder
// tmp, once and of the figure in out: "OUT/NAME: no space left on device",
// not the staging and temporary paths (twice).
func stagedError(err error, tmp, out string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Path, tmp+string(filepath.Separator)) {
		name := strings.TrimPrefix(filepath.Base(pe.Path), ".")
		if i := strings.LastIndex(name, ".tmp"); i > 0 {
			name = name[:i]
		}
		return fmt.Errorf("%s: %s: %w (the figures in %s are unchanged)", filepath.Join(out, name), pe.Op, pe.Err, out)
	}
	msg := strings.ReplaceAll(err.Error(), tmp, out)
	if first, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(rest, first+": ") {
		msg = rest
	}
	return errors.New(msg)
}

// checkCompareOut refuses an --out that is one of the input runs or inside
// one: the figures would be mixed with the run's own files (or, in a
// checkpoint folder, deleted by the next checkpoint).
func checkCompareOut(out string, runs []string) error { return checkFigureFolder("--out", out, runs) }

// checkFigureFolder refuses a figures folder (given by flag) that is one
// of the inputs' folders, inside one, a run's checkpoint folder, or a
// training run (or inside one).
func checkFigureFolder(flag, out string, inputs []string) error {
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s %s is a file: give a folder for the figures", flag, out)
	}
	dir := out // the nearest folder of out that exists
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	for _, r := range inputs {
		if fi, err := os.Stat(r); err == nil && fi.IsDir() && within(dir, r) {
			return fmt.Errorf("%s %s is inside the input run %s: give another folder", flag, out, r)
		}
	}
	if run := inRunCheckpoint(dir); run != "" {
		return fmt.Errorf("%s %s is inside the checkpoint folders of the run %s, whose next checkpoint deletes it: give another folder", flag, out, run)
	}
	if isTrainingRun(dir) && filepath.Clean(dir) != filepath.Clean(out) { // probe 34: "is the training run"
		return fmt.Errorf("%s %s is inside the training run %s: give another folder", flag, out, dir)
	}
	if isTrainingRun(dir) {
		return fmt.Errorf("%s %s is the training run %s: its figures would mix with the run's own; give another folder", flag, out, dir)
	}
	if run := trainingRunAbove(dir); run != "" {
		return fmt.Errorf("%s %s is inside the training run %s: give another folder", flag, out, run)
	}
	if runs := runFolders(dir); len(runs) > 0 && filepath.Clean(dir) == filepath.Clean(out) { // round 86 B6
		return fmt.Errorf("%s %s holds the runs %s: the figures would mix with them; give a folder of their own, such as %s", flag, out, listRuns(runs), filepath.Join(out, "figures"))
	}
	if filepath.Clean(dir) == filepath.Clean(out) && isReproduceFolder(out) { // round 87 B1: mixed with the report's figures
		return fmt.Errorf("%s %s is a folder that reproduce wrote (runs/, report.md and the report's figures): the figures would mix with the report's; give a folder of their own, such as %s", flag, out, filepath.Join(out, "figures"))
	}
	if err := checkHeldFolder(flag, out, "give another folder"); err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() && errors.Is(syscall.Access(dir, 4|2|1), fs.ErrPermission) { // R_OK|W_OK|X_OK (round 119 B5: listable too) // W_OK|X_OK; round 118 B5: found after the work, at the lock
		return fmt.Errorf("%s %s: this user may not read, write or enter %s (permission denied): give a folder of your own, or, yours, chmod u+rwx %s", flag, out, dir, shellQuote(dir)) // round 119 B6: u+w alone left a folder without x refused
	}
	return nil
}

// runEvals reads a run folder's evaluations: metrics.csv, or for a run
// that has not finished, its newest checkpoint's evals.csv.
func runEvals(dir string) ([]training.Eval, error) {
	if fi, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: give a run folder that flowebm train wrote", dir)
	} else if err != nil || !fi.IsDir() {
		where := fileOfRun(dir)                                                                                    // round 112 B6: no folder named, as plot names it
		if run := trainRunOf(dir); where == "" && run != filepath.Dir(filepath.Clean(dir)) && isTrainingRun(run) { // round 113 B6: a file of its checkpoint
			where = fmt.Sprintf("; it is a file of the run %s's checkpoint: give the run folder, %s", run, shellQuote(run))
		}
		if parent := filepath.Dir(filepath.Clean(dir)); where == "" {
			where = strings.NewReplacer("; it holds", "; the folder "+parent+" holds", "; it is a folder that", "; the folder "+parent+" is one that").Replace(runsWithin(parent))
		}
		return nil, fmt.Errorf("%s: not a run folder (a file)%s", dir, where)
	}
	path := filepath.Join(dir, "metrics.csv")
	evals, err := training.ReadEvalsCSVModes(path)
	if err == nil {
		err = training.CheckEvalsOfRun(dir)
	}
	if errors.Is(err, os.ErrNotExist) {
		var ckErr error
		err = training.ReadRun(dir, func() error {
			ck, err := training.LatestCheckpoint(dir)
			if err != nil {
				ckErr = err
				return nil
			}
			path = filepath.Join(ck, "evals.csv")
			evals, err = training.ReadEvalsCSVModes(path)
			return err
		})
		if ckErr != nil {
			return nil, noEvalsError(dir, ckErr)
		}
	}
	if err != nil {
		return nil, err
	}
	return evals, checkPlotIters(path, evals)
}

// maxPlotIter is the largest iteration a figure's axis shows
// (algorithms/plots refuses larger x).
const maxPlotIter = 1e15

// checkPlotIters refuses evaluations (of the file path, a row per line
// after the header) at iterations no figure can show, naming the line.
func checkPlotIters(path string, evals []training.Eval) error {
	for i, e := range evals {
		if float64(e.Iter) > maxPlotIter {
			return fmt.Errorf("%s: line %d: iter %d, want at most %g to plot (the file is not flowebm's, or was edited)", path, i+2, e.Iter, float64(maxPlotIter))
		}
	}
	return nil
}

// noEvalsError says why the folder dir, without metrics.csv, has no
// evaluations to compare: a checkpoint folder, a run being trained or one
// stopped before its first checkpoint; err is LatestCheckpoint's.
func noEvalsError(dir string, err error) error {
	switch {
	case exists(filepath.Join(dir, "spec.json")) && !isTrainingRun(dir):
		return fmt.Errorf("%s is a checkpoint (model) folder, not a training run: compare wants run folders that flowebm train wrote%s", dir, checkpointOfRun(dir))
	case notYetARun(dir, "compare") != "": // round 73 B5: a stale lock alone was "not a run folder"
		return errors.New(notYetARun(dir, "compare"))
	case lockedByOther(dir):
		return fmt.Errorf("%s: the run has no evaluations yet: it is being trained (another flowebm process holds %s%s); compare it once it has written its first checkpoint", dir, filepath.Join(dir, ".lock"), sharedLockNote(dir))
	case !isTrainingRun(dir) && !exists(filepath.Join(dir, "checkpoint.new")):
		return fmt.Errorf("%s: not a run folder (no metrics.csv, config.json or checkpoint/)%s", dir, runsWithin(dir))
	}
	why, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), dir+": "), "; nothing to resume")
	return fmt.Errorf("the run %s has no evaluations yet (no metrics.csv and no complete checkpoint): %s", dir, why)
}

// isRejectedAt is the iteration of a finished run's final evaluation
// where its importance-sampling log Z, reliable by its ESS, is rejected
// for the grid's (train and the summary give the LL by the grid:
// gridLLShown); 0 otherwise.
func isRejectedAt(m *training.Metrics) int {
	if m != nil && m.GridLogZ != nil && m.Final.LogZ.Reliable() && gridLLShown(m.Final.LogZ, *m.GridLogZ, m.GridError) {
		return m.Final.Iter
	}
	return 0
}

// editedWay is "; restore the checkpoint from a copy, or train the run
// anew" where err (LatestCheckpoint's) passed over a checkpoint whose
// records alone were edited (round 110 B1's way on, kept since round 140
// B1 passes such a folder over in every reader); "" otherwise.
func editedWay(err error) string {
	if !training.EditedCheckpoint(err) {
		return ""
	}
	return "; restore the checkpoint from a copy, or train the run anew"
}

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
)

func plotCmd() *cobra.Command {
	var format plots.Format
	cmd := &cobra.Command{
		Use:   "plot RUN...",
		Short: "Redraw a run's figures from its checkpoint and metrics (in another format, or after an upgrade)",
		Long: `plot redraws the figures of each run folder in place from what the run saved:
its metrics over training (rhat, weights), and from its last checkpoint the
EBM's density with the persistent chains and the data (2D) or the chains as
images. Nothing is trained and only the figures are written (in
--plot-format; figures in other formats are left as they are). A run being
trained is refused (its folder is locked). To overlay several runs, use
"flowebm compare".`,
		Args: positional(1, -1, "one or more run folders that flowebm train wrote", ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer removeTempsOnSignal()()
			var failed []string
			for _, dir := range args { // every run, whatever an earlier one gave (round 94 B4: those after a failure were not drawn, unsaid)
				drawn, err := redraw(dir, format, cmd.ErrOrStderr())
				if err != nil && len(args) == 1 {
					return err
				} else if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "flowebm: %s\n", withoutPackagePrefixes(err.Error()))
					failed = append(failed, dir)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "redrew the %s figures of %s\n", format, drawn)
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d runs not drawn (each said why above): %s", len(failed), len(args), strings.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().Var(&format, "plot-format", "file format of the figures: png, svg or pdf")
	return cmd
}

// redraw draws the figures of the run in dir from its checkpoint, and
// says where it drew them (notes to errOut): dir, or where the run folder is now if it was
// moved meanwhile (they are drawn in the folder locked).
func redraw(dir string, format plots.Format, errOut io.Writer) (drawn string, err error) {
	if err := unreadableFolder(dir); err != nil {
		return "", err
	}
	if !isTrainingRun(dir) {
		if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) { // round 78 B6: "is not a run folder"
			return "", fmt.Errorf("%s does not exist: give a folder that flowebm train wrote", dir)
		} else if err == nil && !fi.IsDir() {
			return "", fmt.Errorf("%s is a file, not a run folder: give a folder that flowebm train wrote%s%s", dir, checkpointOfEditedRun(dir), fileOfRun(dir))
		}
		if fi, err := os.Lstat(filepath.Join(dir, "config.json")); err == nil && !fi.Mode().IsRegular() && training.ConfigRestore(dir) != "" { // round 96 B4: a dangling link advised a cp that fails, a folder "not a run folder"
			if _, err := training.ReadRunConfig(dir); err != nil {
				return "", err
			}
		}
		if fi, err := os.Stat(filepath.Join(dir, "config.json")); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() { // round 79 B3: "no config.json", beside its FIFO
			return "", fmt.Errorf("%s: want a regular file", irregular(filepath.Join(dir, "config.json"), fi))
		}
		if restore := training.ConfigRestore(dir); restore != "" && !exists(filepath.Join(dir, "config.json")) { // probes 60, 61: "no config.json or checkpoint/" beside its checkpoint
			return "", fmt.Errorf("%s is a run folder without its config.json: %s", dir, restore)
		}
		if why := notYetARun(dir, "plot"); why != "" { // round 71 B6: a run still reading its data holds only .lock
			return "", errors.New(why)
		}
		return "", fmt.Errorf("%s is not a run folder (no config.json or checkpoint/): give a folder that flowebm train wrote%s%s", dir, runsWithin(dir), checkpointOfEditedRun(dir))
	}
	release, held, err := lockRunHeld(dir, "plot")
	if err != nil {
		return "", err
	}
	defer release()
	// The figures' temporary files that a killed plot (or train) left.
	if err := removeStaleTemps(dir, runNames()...); err != nil {
		return "", err
	}
	var figures []string
	for _, n := range plotNames {
		figures = append(figures, n+format.Ext())
	}
	if err := replaceable(dir, figures, "plot replaces it; move it away and plot again"); err != nil { // probe 19: a bare "rename: file exists" after drawing
		return "", err
	}
	// Read and drawn through the folder locked (probe 50: a folder
	// swapped in meanwhile had its figures replaced).
	check, anchor := folderGuards(dir, held)
	run, err := training.ResumeWith(dir, training.ResumeOptions{Waiting: waitingNote(errOut), Anchor: anchor, ReadOnly: true}) // read where it lies (round 131 B1: a damaged checkpoint/ was removed)
	if moved := (*folderChangedError)(nil); errors.As(err, &moved) {
		return "", plotMoved(moved)
	}
	if errors.Is(err, training.ErrNoCheckpoint) {
		if _, why := training.LatestCheckpoint(dir); why != nil {
			// The figures of its evaluations, from metrics.csv (probe 63:
			// "nothing to draw from" beside them).
			herr := redrawHistory(dir, format)
			if herr == nil {
				return fmt.Sprintf("%s, those of its evaluations only, from metrics.csv (%v: those of the model, density and samples, need a checkpoint)", dir, why), nil
			}
			return "", plotDataAdvice(dir, fmt.Errorf("%w; and its evaluations' figures cannot be drawn: %w", why, herr)) // without resume's advice
		}
	}
	if err != nil {
		return "", plotDataAdvice(dir, movedDataHint(dir, err))
	}
	for _, n := range run.Notes { // a checkpoint passed over, another build
		fmt.Fprintln(errOut, "flowebm: note:", n)
	}
	run.Diverged = run.Trainer.Iter < run.Config.Train.Iterations && divergedBefore(dir) != ""
	if it, n := run.Trainer.Iter, run.Config.Train.Iterations; it < n && !run.Diverged && exists(filepath.Join(dir, "metrics.json")) {
		return plotFinalLost(dir, format, errOut, it, n) // round 123 B4: a finished run's figures were replaced by those of an older checkpoint
	}
	if err := damagedMetricsCSV(dir); err != nil { // round 98 B1: drawn from the checkpoint's, unsaid
		fmt.Fprintf(errOut, "flowebm: note: %v; the figures of its evaluations are drawn from its checkpoint's\n", withoutPackagePrefixes(err.Error()))
	}
	if it, n := run.Trainer.Iter, run.Config.Train.Iterations; run.Diverged { // round 112 B4: called unfinished
		fmt.Fprintf(errOut, "flowebm: note: the run %s diverged (its error.txt: %s): its figures are of its last checkpoint, at iteration %d of %d\n", dir, strings.TrimPrefix(divergedBefore(dir), "flowebm: "), it, n)
	} else if it < n { // round 83 B2: as energy, sample and convert say
		fmt.Fprintf(errOut, "flowebm: note: the run %s is unfinished: its figures are of its newest checkpoint, at iteration %d of %d\n", dir, it, n)
	}
	if note := unwrittenOutputsNote(dir, run.Trainer.Iter >= run.Config.Train.Iterations); note != "" { // plot holds the run: no train writes them now
		fmt.Fprintln(errOut, note)
	} else if err := training.SamplesOfRun(run); run.Trainer.Iter >= run.Config.Train.Iterations && err != nil { // round 125 B1: edited, unsaid
		fmt.Fprintf(errOut, "flowebm: note: %v: flowebm train --resume %s writes it again from the checkpoint's chains (keep a copy of it first if the checkpoint may be the edited one)\n", err, shellQuote(dir))
	}
	hook("plot-read")
	if err := run.FillGrid(); err != nil {
		return "", err
	}
	err = training.Through(dir, anchor, func(at string) error {
		r := *run
		r.Dir = at
		return plots.WriteRun(&r, format)
	})
	if moved := (*folderChangedError)(nil); errors.As(err, &moved) {
		return "", plotMoved(moved)
	}
	if err != nil {
		return "", err
	}
	if moved := (*folderChangedError)(nil); errors.As(check(), &moved) && moved.now != "" {
		return fmt.Sprintf("the run that was at %s, now at %s", dir, moved.now), nil
	}
	if len(run.Evals) == 0 { // round 78 B5: "no evaluations yet: nothing to draw", beside its checkpoint
		return fmt.Sprintf("%s, those of its model from its checkpoint at iteration %d (it has no evaluation yet: the evaluations' figures come with the first, every eval_every iterations)", dir, run.Trainer.Iter), nil
	}
	return dir, nil
}

// plotFinalLost draws the figures of a finished run in dir whose final
// checkpoint is missing, its newest of iteration it of n: those of its
// evaluations, from metrics.csv, and not its model's, which would be an
// older model than its results'.
func plotFinalLost(dir string, format plots.Format, errOut io.Writer, it, n int) (string, error) {
	const how = "its model's figures are not drawn from it"
	if err := redrawHistory(dir, format); err != nil {
		msg := fmt.Sprintf("the run %s: its evaluations' figures cannot be drawn from metrics.csv: %v", dir, err)
		if !strings.Contains(msg, "final checkpoint is missing") { // metrics.csv's reader says it where it applies
			msg += "; " + finalCheckpointLost(dir, it, n, how)
		}
		return "", errors.New(msg)
	}
	fmt.Fprintln(errOut, "flowebm: note:", finalCheckpointLost(dir, it, n, how))
	return fmt.Sprintf("%s, those of its evaluations only, from metrics.csv (those of its model, density and samples, need its final checkpoint)", dir), nil
}

// damagedMetricsCSV is why the run in dir's metrics.csv cannot be read
// as its own; nil where it reads or the run has none (unfinished).
func damagedMetricsCSV(dir string) error {
	path := filepath.Join(dir, "metrics.csv")
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := training.ReadEvalsCSVModes(path); err != nil {
		return err
	}
	return training.CheckEvalsOfRun(dir)
}

// plotDataAdvice says, of a refusal of the run's data file as other data
// than it was trained on, what plot needs (probe 70 B5: "leave data.sha256
// out to start a new run", a train advice).
func plotDataAdvice(dir string, err error) error {
	if !errors.Is(err, config.ErrOtherData) {
		return err
	}
	return fmt.Errorf("%w (plot draws a run with the data it was trained on: put that file back, or record where a copy of it is with flowebm train --resume %s --data COPY)", err, shellQuote(dir))
}

// plotMoved says that the run folder that plot locked is no longer at
// its path, and where it is.
func plotMoved(e *folderChangedError) error {
	next := "draw the run where it is now with flowebm plot FOLDER"
	switch {
	case e.deleted:
		next = "it was deleted"
	case e.now != "":
		next = "draw it where it is now: flowebm plot " + shellQuote(e.now)
	}
	return fmt.Errorf("%s is no longer the run folder plot locked (%s): moved, replaced or deleted, or a link on its path now leads elsewhere; nothing was drawn there: %s", e.dir, e.at, next)
}

// redrawHistory draws the figures of a run's evaluations (rhat, weights,
// acceptance) from its config.json and metrics.csv, as reproduce does.
func redrawHistory(dir string, format plots.Format) error {
	cfg, err := training.ReadRunConfig(dir)
	if err != nil {
		return err
	}
	exp, err := training.RunExperiment(cfg) // a data run's modes come from its data (probe 66 B2)
	if err != nil {
		return err
	}
	evals, err := training.ReadEvalsCSV(filepath.Join(dir, "metrics.csv"), len(exp.Weights))
	if err != nil {
		return err
	}
	if len(evals) == 0 {
		return fmt.Errorf("%s holds no evaluations", filepath.Join(dir, "metrics.csv"))
	}
	return plots.History{Experiment: exp, Algorithm: cfg.Train.Algorithm, RHatChains: cfg.RHatChains, Evals: evals}.Write(dir, format)
}

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/spf13/cobra"
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
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer removeTempsOnSignal()()
			for _, dir := range args {
				if err := redraw(dir, format); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "redrew the %s figures of %s\n", format, dir)
			}
			return nil
		},
	}
	cmd.Flags().Var(&format, "plot-format", "file format of the figures: png, svg or pdf")
	return cmd
}

// redraw draws the figures of the run in dir from its checkpoint.
func redraw(dir string, format plots.Format) error {
	if err := unreadableFolder(dir); err != nil {
		return err
	}
	if !isTrainingRun(dir) {
		return fmt.Errorf("%s is not a run folder (no config.json or checkpoint/): give a folder that flowebm train wrote", dir)
	}
	release, err := lockRunAs(dir, "plot")
	if err != nil {
		return err
	}
	defer release()
	// The figures' temporary files that a killed plot (or train) left.
	if err := removeStaleTemps(dir, runNames()...); err != nil {
		return err
	}
	var figures []string
	for _, n := range plotNames {
		figures = append(figures, n+format.Ext())
	}
	if err := replaceable(dir, figures, "plot replaces it; move it away and plot again"); err != nil { // probe 19: a bare "rename: file exists" after drawing
		return err
	}
	run, err := training.ResumeWith(dir, training.ResumeOptions{Waiting: waitingNote(os.Stderr)}) // a reader holds the checkpoint a crash left half replaced
	if errors.Is(err, training.ErrNoCheckpoint) {
		if _, why := training.LatestCheckpoint(dir); why != nil {
			return fmt.Errorf("%w: nothing to draw from", why) // without resume's advice
		}
	}
	if err != nil {
		return movedDataHint(dir, err)
	}
	for _, n := range run.Notes { // a checkpoint passed over, another build
		fmt.Fprintln(os.Stderr, "flowebm: note:", n)
	}
	if len(run.Evals) == 0 {
		return fmt.Errorf("%s: no evaluations yet: nothing to draw", dir)
	}
	if err := run.FillGrid(); err != nil {
		return err
	}
	return plots.WriteRun(run, format)
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
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
acceptance. Nothing is trained; runs of any experiment, algorithm or seed
can be overlaid. Existing figures in DIR are replaced only with --force.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.OutOrStdout(), args, out, format, force)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "folder for the figures")
	cmd.Flags().Var(&format, "plot-format", "file format of the figures: png, svg or pdf")
	cmd.Flags().BoolVar(&force, "force", false, "replace figures already in --out")
	return cmd
}

// curveNames names each run folder's curve by as many trailing path
// elements as tell the folders apart (x/s1 and y/s1, not s1 twice); the
// same folder given twice is an error later (a single curve each).
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
			return names
		}
	}
}

// runCompare draws the figures of the run folders dirs into out.
func runCompare(stdout io.Writer, dirs []string, out string, format plots.Format, force bool) error {
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
	var runs []plots.Named
	names := curveNames(dirs)
	for i, dir := range dirs {
		evals, err := runEvals(dir)
		if err != nil {
			return err
		}
		runs = append(runs, plots.Named{Name: names[i], Evals: evals})
	}
	if err := checkCompareOut(out, dirs); err != nil {
		return err
	}
	if !force {
		if existing, _ := filepath.Glob(filepath.Join(out, "*"+format.Ext())); len(existing) > 0 {
			return fmt.Errorf("--out %s already holds figures (%s): give another folder, or replace them with --force", out, filepath.Base(existing[0]))
		}
	}
	files, err := drawFigures(runs, out, format)
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintln(stdout, "wrote", f)
	}
	return nil
}

// drawFigures writes the runs' figures into out (creating it, locked
// against another compare) and returns their files: all of them, or on an
// error none. They are drawn into a temporary folder inside out and moved
// into place only when all are drawn, so that a failure (a full disk)
// leaves the figures out held before.
func drawFigures(runs []plots.Named, out string, format plots.Format) ([]string, error) {
	release, err := lockRun(out)
	if err != nil {
		return nil, err
	}
	defer release()
	tmp, err := os.MkdirTemp(out, ".compare-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	drawn, err := plots.Compare(runs, tmp, format)
	if err == nil && len(drawn) == 0 {
		var names []string
		for _, r := range runs {
			names = append(names, r.Name)
		}
		err = fmt.Errorf("the runs %s have no evaluations to plot yet (a run evaluates every eval_every iterations)", strings.Join(names, ", "))
	}
	if err != nil {
		return nil, err
	}
	for _, d := range drawn {
		if fi, err := os.Stat(filepath.Join(out, filepath.Base(d))); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s is a folder: the figure %s cannot replace it", filepath.Join(out, filepath.Base(d)), filepath.Base(d))
		}
	}
	var files []string
	for _, d := range drawn {
		f := filepath.Join(out, filepath.Base(d))
		if err := os.Rename(d, f); err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}

// checkCompareOut refuses an --out that is one of the input runs or inside
// one: the figures would be mixed with the run's own files (or, in a
// checkpoint folder, deleted by the next checkpoint).
func checkCompareOut(out string, runs []string) error {
	dir := out // the nearest folder of out that exists
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	for _, r := range runs {
		if within(dir, r) {
			return fmt.Errorf("--out %s is inside the input run %s: give another folder", out, r)
		}
	}
	if run := inRunCheckpoint(dir); run != "" {
		return fmt.Errorf("--out %s is inside the checkpoint folders of the run %s, whose next checkpoint deletes it: give another folder", out, run)
	}
	if isTrainingRun(dir) {
		return fmt.Errorf("--out %s is the training run %s: its figures would mix with the run's own; give another folder", out, dir)
	}
	if run := trainingRunAbove(dir); run != "" {
		return fmt.Errorf("--out %s is inside the training run %s: give another folder", out, run)
	}
	return nil
}

// runEvals reads a run folder's evaluations: metrics.csv, or for a run
// that has not finished, its newest checkpoint's evals.csv.
func runEvals(dir string) ([]training.Eval, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a run folder", dir)
	}
	evals, err := training.ReadEvalsCSVModes(filepath.Join(dir, "metrics.csv"))
	if !errors.Is(err, os.ErrNotExist) {
		return evals, err
	}
	ck, err := training.LatestCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: no metrics.csv and %w", dir, err)
	}
	return training.ReadEvalsCSVModes(filepath.Join(ck, "evals.csv"))
}

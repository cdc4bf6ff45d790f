package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

type trainFlags struct {
	experiment, config, out, resume string
	algorithm                       algorithms.Algorithm
	iterations, epochs              int
	seed                            uint64
	quiet, force                    bool
	data                            config.Data
	plotFormat                      plots.Format
	seeds                           string
	forceSeed                       bool             // set by --seeds for each run
	finishedLine                    string           // what --seeds says of a finished seed it passes over (set with resume)
	flow                            config.FlowFiles // --flow, --flow-density, --flow-base-sigma
	dataDir                         string           // --data-dir
	printConfig                     bool             // --print-config
}

func trainCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train an EBM on one of the paper's experiments (default: flowMC-EBM on two-modes)",
		Long: `train runs one of the paper's experiments with one of the four algorithms:

  flowmc    flowMC-EBM (Alg. 1): i-SIR global moves from the companion flow, MALA local moves
  ula       ULA-EBM: persistent contrastive divergence with unadjusted Langevin
  nt        NT-EBM: MALA in the flow's latent space (NeuTra)
  coopflow  CoopFlow: flow pretrained on data starts short noise-free Langevin chains

Defaults follow the paper's App. C for each experiment, scaled where the
paper's settings exceed 2 CPU cores (the scaling is printed). --config takes a
JSON file with the fields of config.json (written into every run folder) and
replaces the defaults entirely: fields it leaves out take the trainer's
generic defaults. The paper's unscaled settings for every experiment and
algorithm are in algorithms/configs/. Flags given explicitly override the
file.

DIR receives config.json, metrics.csv (evaluations over training),
metrics.json (the final evaluation) and checkpoint/ (spec.json, weights.npz,
state.json, state.npz), rewritten atomically every checkpoint_every
iterations. --resume DIR continues an interrupted run from its checkpoint and
reaches the same result as an uninterrupted run, its figures in the format the
run was started with (config.json's plot_format) unless --plot-format is given.

--data FILE trains on your own data instead of an experiment: .npy of shape
(n, d) in float32/float64, .npz (the member --key, default the first), or .csv
(numeric columns, optional header row). A fraction --holdout of the rows is
held out for the held-out log-likelihood. The data are centred and scaled
(--standardize dimension: each coordinate to unit variance, the default;
global: one common scale; none) and the base σ follows App. C.5's rule on the
standardised data. The checkpoint records the scaling, so everything you get
back is in your units: samples.npy (the persistent chains at the end), the
held-out log-likelihood, and "flowebm energy". --modes FILE gives k mode
centres (k, d) in your units: mode weights by nearest-centre zones are then
tracked against the data's own fractions. In 2D the density plot and the
EBM's weights by grid quadrature are made as for the built-in targets. Rows
with NaN or Inf are refused unless --drop-nonfinite; constant columns and
fewer rows than the batch are refused before training starts.

--flow SAMPLE.onnx --flow-density DENSITY.onnx starts the flow of flowmc,
nt or coopflow from a flow trained elsewhere (its sampling and density
graphs, as io/onnx/crosscheck/export_flow.py exports a PyTorch flow)
instead of the identity RealNVP; its base N(0, σ²) (the files' metadata,
or --flow-base-sigma) becomes the EBM's tilt. The checkpoint keeps the flow
as ONNX with its trained weights.

The flow built otherwise is a RealNVP; a --config file's "model": {"flow":
"spline"} makes it a neural spline flow (rational-quadratic couplings,
"flow_bins" bins on [−"flow_tail_bound", "flow_tail_bound"], defaults 8 and
5), sized by flow_blocks, flow_hidden and flow_mask as the RealNVP is.

The image experiments mnist28, fashion-mnist and cifar10 train convolutional
models by default ("model": {"ebm": "conv", "flow": "conv-realnvp"}: a
ResNet energy of stage widths ebm_channels, a RealNVP of checkerboard and
channel couplings with conv conditioners, flow_blocks couplings of each kind
per scale of flow_hidden channels), scaled to about an hour on 2 cores.
--data-dir DIR reads their files from DIR (MNIST's or Fashion-MNIST's IDX
files, CIFAR-10's cifar-10-batches-bin) and is recorded in config.json.

Experiments (--experiment): ` + strings.Join(experiments.Names(), ", ") + `.`,
		Args: positional(0, 0, "no arguments", "the experiment goes in --experiment, a data file in --data, a run to continue in --resume"), // round 85 B11: "unknown command"
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrain(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.experiment, "experiment", "two-modes", "experiment: "+strings.Join(experiments.Names(), ", "))
	f.algorithm = algorithms.FlowMC
	fl.Var(&f.algorithm, "algorithm", "flowmc, ula, nt or coopflow")
	fl.StringVar(&f.config, "config", "", "JSON run configuration, replacing the defaults: fields it leaves out take the trainer's generic ones, not the experiment's (start from --print-config)")
	fl.IntVar(&f.iterations, "iterations", 0, "training iterations (0: the experiment's default); the learning-rate decay interval and the averaging window are scaled in proportion, rounded down to at least 1 (a run shorter than the schedule's number of decays, 20 in most settings, decays once an iteration: more in total)")
	fl.IntVar(&f.epochs, "epochs", 0, "training epochs (passes over the training data), instead of --iterations")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed")
	fl.StringVar(&f.seeds, "seeds", "", "train one run per seed (a range 1-5 or a list 1,3,7) into --out/sSEED and write the spread over seeds to --out/seeds.json")
	fl.StringVar(&f.out, "out", "", "output folder (default runs/EXPERIMENT-ALGORITHM-sSEED)")
	fl.StringVar(&f.resume, "resume", "", "continue the run in this folder from its checkpoint")
	fl.BoolVar(&f.force, "force", false, "replace the run already in --out")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fl.Var(&f.plotFormat, "plot-format", "file format of the plots: png, svg or pdf")
	fl.StringVar(&f.data.File, "data", "", "train on this data file (.npy, .npz or .csv) instead of an experiment")
	fl.StringVar(&f.data.Key, "key", "", "member of an .npz data file (default the first)")
	fl.Float64Var(&f.data.HoldOut, "holdout", 0.1, "fraction of the data held out for the held-out log-likelihood")
	fl.StringVar(&f.data.Standardize, "standardize", "dimension", "dimension, global or none")
	fl.StringVar(&f.data.Modes, "modes", "", "file of mode centres (k, d) in the data's units")
	fl.BoolVar(&f.data.DropNonFinite, "drop-nonfinite", false, "drop rows holding NaN or Inf instead of refusing the data")
	fl.StringVar(&f.flow.Sample, "flow", "", "start the flow from this ONNX sampling graph (with --flow-density) instead of the identity RealNVP (or spline flow)")
	fl.StringVar(&f.flow.Density, "flow-density", "", "the ONNX density graph of the flow of --flow")
	fl.Float64Var(&f.flow.BaseSigma, "flow-base-sigma", 0, "σ of the --flow's base N(0, σ² I) (0: the files' metadata, else 1)")
	fl.BoolVar(&f.printConfig, "print-config", false, "print the configuration the other flags give (defaults included) as JSON for --config, and train nothing")
	fl.StringVar(&f.dataDir, "data-dir", "", "folder of an image experiment's files: MNIST's IDX files (mnist, mnist28), Fashion-MNIST's (fashion-mnist), CIFAR-10's cifar-10-batches-bin (cifar10); recorded in config.json as data_dir")
	markPathFlags(fl, "config", "out", "resume", "data", "modes", "flow", "flow-density", "data-dir")
	return cmd
}

func runTrain(cmd *cobra.Command, f trainFlags) (err error) {
	defer func() {
		for _, in := range [][2]string{{"--config", f.config}, {"--data", f.data.File}, {"--modes", f.data.Modes}} {
			err = namedInput(err, in[0], in[1], false)
		}
		if unknown := (*experiments.UnknownError)(nil); errors.As(err, &unknown) && cmd.Flags().Changed("experiment") && unknown.Name == f.experiment {
			err = fmt.Errorf("--experiment %s: unknown experiment (%s)", f.experiment, unknown.Known())
		}
		if f.config != "" && f.data.File == "" {
			err = configDataError(err, f.config, f.data.Key)
		}
		if inner := filepath.Join(f.config, "config.json"); err != nil && f.config != "" && isDir(f.config) && exists(inner) { // round 80 B9
			err = fmt.Errorf("%w; a run's configuration is its config.json: --config %s", err, shellQuote(inner))
		}
		if f.data.File != "" {
			err = missingKey(err, f.data.Key, "--data "+f.data.File)
		} else {
			err = missingKey(err, f.data.Key, "")
		}
	}()
	if f.printConfig {
		return printConfig(cmd, f)
	}
	if f.seeds != "" {
		err = trainSeeds(cmd, f)
	} else {
		err = trainOneRun(cmd, f)
	}
	if ffe := (*training.FlowFilesError)(nil); f.flow.Sample != "" && errors.As(err, &ffe) { // probe 50: the flags' flow was named by its config field
		return fmt.Errorf("--flow %s, --flow-density %s: %w", f.flow.Sample, f.flow.Density, ffe.Err)
	} else if f.config != "" && errors.As(err, &ffe) && errors.Is(err, fs.ErrNotExist) { // round 101 B5: neither the file nor a way named
		return fmt.Errorf("--config %s: %w: give the flow's files at the paths model.flow_onnx.sample and .density name, or --flow FILE --flow-density FILE to start from others", f.config, err)
	}
	return err
}

// printConfig writes the configuration that the flags (and --config) give
// a new run to stdout, as config.json holds it: a file to edit and give
// back with --config.
func printConfig(cmd *cobra.Command, f trainFlags) error {
	for _, name := range []string{"resume", "seeds", "out", "force"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--print-config trains nothing: give it without --%s", name)
		}
	}
	if err := checkDataFlags(cmd, f); err != nil {
		return err
	}
	if err := f.validate(cmd); err != nil {
		return err
	}
	plan, err := f.plan(cmd)
	if err != nil {
		return err
	}
	// Resolved: checked as a run's start checks it (the data loaded), its
	// defaults filled in as config.json holds them.
	cfg, err := plan.Resolved()
	over, few := (*sysmem.OverError)(nil), (*config.TooFewRowsError)(nil)
	if errors.As(err, &over) || errors.As(err, &few) { // printed, to be edited (probe 54, round 89 A4: refused, no file to edit)
		fmt.Fprintf(cmd.ErrOrStderr(), "flowebm: note: as printed, the run would be refused: %s\n", withoutPackagePrefixes(err.Error()))
	} else if err != nil {
		return err
	}
	if cfg.Epochs > 0 { // the length is the epochs', which a --config may not give twice
		cfg.Train.Iterations = 0
	}
	if cmd.Flags().Changed("plot-format") { // as startRun records it (round 92 A1: left out)
		cfg.PlotFormat = recordedFormat(f.plotFormat)
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	cfg.ResolvePaths(wd) // absolute: a --config file's are read from its own folder
	// The flow's files are read only when a run starts: checked here.
	if fo := cfg.Model.FlowONNX; fo != nil {
		for _, p := range []string{fo.Sample, fo.Density} {
			f, err := safefile.Open(p)
			if err != nil {
				return fmt.Errorf("model.flow_onnx: %w", err)
			}
			f.Close()
		}
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(jsonfile.Safe(cfg))
}

// trainSeeds trains one run per seed of --seeds into --out/sSEED (keeping
// those already finished with that seed) and writes the spread of their
// final metrics to --out/seeds.json.
func trainSeeds(cmd *cobra.Command, f trainFlags) error {
	if f.resume != "" || cmd.Flags().Changed("seed") {
		return fmt.Errorf("--seeds trains several runs: give it without --resume or --seed (resume one seed's run with --resume OUT/sSEED, then run --seeds again)")
	}
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return err
	}
	base, err := seedsFolder(cmd, f)
	if err != nil {
		return err
	}
	if isTrainingRun(base) || trainingRunAbove(base) != "" {
		return fmt.Errorf("--out %s is or is inside a training run: --seeds writes OUT/sSEED and OUT/seeds.json; give another folder", base)
	}
	if err := checkHeldFolder("--out", base, "give another folder"); err != nil {
		return err
	}
	if err := checkSeedsFolder(base, f.force); err != nil {
		return err
	}
	if err := replaceable(base, []string{"seeds.json"}, "train --seeds writes its summary there: move it away"); err != nil { // round 95 B10: a raw rename error after training
		return err
	}
	// One handler for the whole set, from before the lock to the summary
	// (probe 37: between seeds and before the summary no handler was
	// installed, and a signal killed the process without a word, leaving
	// a base folder that held only .lock). Until a seed's run starts, a
	// signal stops the set once the step under way ends; the lock and the
	// folders made are removed as the command returns.
	sig := watchSignals()
	sig.inSeeds = true
	defer sig.stop()
	release, _, err := lockOutputFolder(base, "train")
	if err != nil {
		return namingFlag("--out", err)
	}
	defer release()
	defer ownLock(base)() // the seeds' runs write OUT/sSEED
	// Every seed's folder is checked before any trains.
	var dirs []string
	runs := make([]trainFlags, len(seeds))
	states := make([]int, len(seeds))
	var blocked []error // every seed's, at once (probe 59: one named, the next refused after it was moved)
	for i, seed := range seeds {
		dir := filepath.Join(base, fmt.Sprintf("s%d", seed))
		dirs = append(dirs, dir)
		runs[i] = f
		runs[i].seeds, runs[i].seed, runs[i].forceSeed, runs[i].out = "", seed, true, dir
		if states[i], err = seedRunState(cmd, runs[i], dir); err != nil {
			blocked = append(blocked, err)
			continue
		}
		if plan, err := training.NewPlan(runs[i].request(cmd)); err == nil {
			if err := checkInputsOutside(runs[i], plan.Config, dir); err != nil {
				return fmt.Errorf("seed %d: %w (nothing was trained)", seed, err)
			}
		}
	}
	if len(blocked) == 1 {
		return blocked[0]
	} else if len(blocked) > 1 {
		lines := make([]string, len(blocked))
		for i, e := range blocked {
			lines[i] = "  " + e.Error()
		}
		return fmt.Errorf("%d seeds' folders stop this command (nothing was trained):\n%s", len(blocked), strings.Join(lines, "\n"))
	}
	hook("seeds-checked")
	out := cmd.OutOrStdout()
	for i, seed := range seeds {
		if err := sig.seedsInterrupted(seeds, i); err != nil {
			return err
		}
		g := runs[i]
		// Again at its turn: another process may have trained it since
		// (probe 30: a seed finished meanwhile was trained again from the
		// start, by the state read before the first seed).
		if states[i], err = seedRunState(cmd, runs[i], dirs[i]); err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		switch states[i] {
		case seedFinished: // its figures drawn again where one is lost (round 97 B1)
			line := fmt.Sprintf("seed %d: already trained in %s%s", seed, dirs[i], otherFormatNote(cmd, f.plotFormat, dirs[i]))
			if lockedByOther(dirs[i]) { // a plot or compare reading it: not checked, as before
				fmt.Fprintln(out, line)
				continue
			}
			g = trainFlags{resume: dirs[i], quiet: f.quiet, plotFormat: f.plotFormat, data: f.data, forceSeed: true, finishedLine: line}
		case seedInterrupted:
			// Continue it (its outputs too, if a kill stopped their
			// writing): resume it as --resume would.
			fmt.Fprintf(out, "== seed %d: continuing %s\n", seed, dirs[i])
			g = trainFlags{resume: dirs[i], quiet: f.quiet, plotFormat: f.plotFormat, data: f.data, forceSeed: true}
		case seedRestart:
			fmt.Fprintf(out, "== seed %d → %s (its run there stopped before its first checkpoint: trained again from the start)\n", seed, dirs[i])
			g.force = true
		default:
			fmt.Fprintf(out, "== seed %d → %s\n", seed, dirs[i])
		}
		sig.beginSeed()
		if err := trainWithSignals(cmd, g, sig); err != nil {
			return seedRunError(seed, dirs[i], err)
		}
		hook("seed-trained")
	}
	// The summary is written as the other outputs are: a signal removes
	// its temporary file and says so, and one left by a kill is removed.
	note := placedNote(filepath.Join(base, "seeds.json"), "every seed's run and the summary are written: ", // probe 38: said interrupted alone
		"every seed's run is complete, seeds.json is not written: give the same --seeds command again to write it")
	sig.note.Store(&note)
	sig.enter(phaseQuit)
	if err := sig.seedsInterrupted(seeds, len(seeds)); err != nil {
		return err
	}
	if err := removeStaleTemps(base, "seeds.json"); err != nil {
		return err
	}
	return writeSeedsSummary(base, seeds, dirs, out)
}

// seedRunError is the error of seed's run in dir for train --seeds, with
// the advice that fits a set: the same --seeds command again, where the
// run's own advice (--force, --resume sN) would train the finished seeds
// again or leave the others (probe 37).
func seedRunError(seed uint64, dir string, err error) error {
	if errors.Is(err, algorithms.ErrInterrupted) {
		return fmt.Errorf("seed %d: %w (or give the same --seeds command again: it continues this seed's run, then trains the others and writes seeds.json)", seed, err)
	}
	if errors.As(err, new(stoppedError)) { // stopped in its setup
		return fmt.Errorf("seed %d: %w; give the same --seeds command again: it keeps the seeds whose runs are complete", seed, err)
	}
	if none := (training.NothingToResumeError{}); errors.As(err, &none) {
		return fmt.Errorf("seed %d: %w; nothing to resume: to train this seed again alone, move %s away and give the same --seeds command again (--force would train every seed again)", seed, none.Err, dir)
	}
	// Its run's own advice (--force, --resume sN) would retrain
	// the finished seeds or leave the others (probe 37).
	return fmt.Errorf("seed %d: %w (for train --seeds: once the cause is fixed, give the same --seeds command again: it keeps the finished seeds, continues or restarts this one, then trains the others and writes seeds.json)", seed, err)
}

// seedsFolder is --out, or runs/NAME-ALGORITHM-seedsLIST named after the
// experiment (or data file) and algorithm the flags and --config ask for.
func seedsFolder(cmd *cobra.Command, f trainFlags) (string, error) {
	if f.out != "" {
		return f.out, nil
	}
	plan, err := training.NewPlan(f.request(cmd))
	if err != nil {
		return "", err
	}
	name := plan.Config.Experiment
	if d := plan.Config.Data; d != nil {
		name = strings.TrimSuffix(filepath.Base(d.File), filepath.Ext(d.File))
	}
	return filepath.Join("runs", fmt.Sprintf("%s-%s-seeds%s", name, cmp.Or(plan.Config.Train.Algorithm, algorithms.FlowMC), strings.NewReplacer(",", "_", " ", "").Replace(f.seeds))), nil
}

func trainOneRun(cmd *cobra.Command, f trainFlags) error {
	sig := watchSignals()
	defer sig.stop()
	return trainWithSignals(cmd, f, sig)
}

// trainWithSignals is trainOneRun stopping on the signals that sig
// watches (train --seeds watches them once for all its seeds).
func trainWithSignals(cmd *cobra.Command, f trainFlags, sig *runSignals) error {
	f.out, f.resume = withoutDotDot(f.out), withoutDotDot(f.resume) // --force clears folders on the way
	if err := f.ignoredWithResume(cmd); err != nil {
		return err
	}
	if err := checkDataFlags(cmd, f); err != nil {
		return err
	}
	if err := f.validate(cmd); err != nil {
		return err
	}
	return sig.stoppedBy(trainWatched(cmd, f, sig))
}

// seedsInterrupted is the stop of train --seeds, before the run of its
// i-th seed (the summary when i is len(seeds)), by a signal received: nil
// if none was. The seeds before are complete; the others wait (probe 34:
// it trained on).
func (rs *runSignals) seedsInterrupted(seeds []uint64, i int) error {
	s := syscall.Signal(rs.received.Load())
	switch {
	case s == 0:
		return nil
	case i == 0:
		return stoppedError{sig: s, err: errors.New("interrupted before the first seed's run started: nothing was trained; give the same --seeds command again")}
	}
	next := "train the other seeds and write seeds.json"
	if i == len(seeds) { // probe 35: "the other seeds" after the last
		next = "write seeds.json"
	}
	return stoppedError{sig: s, err: fmt.Errorf("interrupted after the run of seed %d, which is complete: give the same --seeds command again to %s", seeds[i-1], next)}
}

// beginSeed enters the setup of the next seed's run of train --seeds.
func (rs *runSignals) beginSeed() {
	rs.dir.Store(nil)
	rs.enter(phaseSetup)
}

// trainWatched is trainOneRun once its flags are checked, stopping on
// the signals that sig watches.
func trainWatched(cmd *cobra.Command, f trainFlags, sig *runSignals) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx := sig.ctx
	var run *training.Run
	var release func()
	var err error
	if f.resume != "" {
		run, release, err = resumeRun(ctx, f, out, errOut)
	} else {
		run, release, err = startRun(ctx, cmd, f, out)
	}
	if err != nil {
		return err
	}
	defer release()
	var damage error // of a trained run's outputs, read back once
	done := false
	if f.resume != "" && run.Trainer.Iter >= run.Config.Train.Iterations {
		if err := training.CheckpointEvalsEdited(run.Dir); err != nil { // round 136 B3: the edit was written into metrics.json and metrics.csv
			return err
		}
		damage = damagedOutput(run)
		if errors.As(damage, new(*training.SecondsError)) { // round 139 B1: either may be the edit; neither written over the other
			return damage
		}
		done = damage == nil
	}
	if pf := run.Config.PlotFormat; !cmd.Flags().Changed("plot-format") && pf != "" { // the run's (--resume) or its --config's
		if err := f.plotFormat.Set(pf); err != nil { // round 92 B3: no way on
			return badRecordedFormat(run, err)
		}
	} else if pf := recordedFormat(f.plotFormat); f.resume != "" && cmd.Flags().Changed("plot-format") && !done && pf != run.Config.PlotFormat {
		// config.json records what the run draws (round 93 B1: an unknown
		// format kept after --plot-format, every later --resume refused).
		run.Config.PlotFormat = pf
		err := training.Through(run.Dir, run.Anchor, func(dir string) error {
			return jsonfile.Write(filepath.Join(dir, "config.json"), run.Config)
		})
		if err != nil {
			return err
		}
	}
	var missing *fs.PathError
	switch {
	case damage != nil && !errors.Is(damage, fs.ErrNotExist):
		fmt.Fprintf(errOut, "flowebm: note: %s; %s\n", withoutPackagePrefixes(damage.Error()), rewritingOutputs)
	case errors.As(damage, &missing) && exists(filepath.Join(run.Dir, "samples.npy")): // written last: the others were written, then lost (round 101 B4: unsaid)
		fmt.Fprintf(errOut, "flowebm: note: %s is missing; %s\n", missing.Path, rewritingOutputs)
	}
	if done {
		return completeFinished(run, out, f, cmd.Flags().Changed("plot-format") && !f.forceSeed) // --seeds passes over a finished seed
	}
	if f.resume != "" && damage == nil { // unfinished: its metrics.csv is written again from the checkpoint's at the next one (round 105 B5: unsaid)
		if err := unfinishedEvalsDamage(run); errors.As(err, new(*training.EvalsDisagreeError)) { // round 140 B2: the checkpoint's edit carried into metrics.csv, the true values lost
			return err
		} else if err != nil {
			fmt.Fprintf(errOut, "flowebm: note: %s; the run's own is written again from its checkpoint's evaluations at its next checkpoint\n", withoutPackagePrefixes(err.Error()))
		}
	}
	sig.enterTraining(run.Dir)
	hook("train-started")
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted before training started: nothing was trained")
	}
	return train(sig, run, out, errOut, f.quiet, f.plotFormat)
}

// The states of a seed's run folder for --seeds.
const (
	seedNew         = iota // nothing there (or --force): train it
	seedInterrupted        // a run of what is asked, unfinished: continue it
	seedRestart            // a run of what is asked, stopped before its first checkpoint: train it again
	seedFinished           // a run of what is asked with all its outputs: keep it
)

// seedRunState says what dir holds for --seeds: a run of what g asks (the
// same experiment or data file, algorithm, seed and length), finished
// (samples.npy, written last, is there) or not, or nothing; a run of
// anything else there is an error (without --force, which trains it
// again).
func seedRunState(cmd *cobra.Command, g trainFlags, dir string) (int, error) {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 { // probe 34: --force trained the seed into the run the link led to
		target, _ := os.Readlink(dir)
		return seedNew, fmt.Errorf("%s is a symbolic link (to %s): train --seeds trains each seed in a folder of its own under --out; move the link away (even --force would not follow it)", dir, target)
	} else if err == nil && !fi.IsDir() { // probe 35: "a run whose configuration cannot be read", --force advised in vain
		what := "a file"
		switch {
		case fi.Mode()&fs.ModeNamedPipe != 0: // probe 36: a FIFO was "a file"
			what = "a FIFO"
		case !fi.Mode().IsRegular():
			what = "a special file"
		}
		return seedNew, fmt.Errorf("%s is %s, not a seed's run folder: train --seeds trains each seed in a folder of its own under --out; move it away", dir, what)
	}
	have, err := training.ReadRunConfig(dir)
	switch {
	case g.force || errors.Is(err, fs.ErrNotExist):
		return seedNew, nil
	case err != nil: // --resume could not read it either (probe 15)
		return seedNew, fmt.Errorf("%s holds a run whose configuration cannot be read (%v): it cannot be continued; %s", dir, err, seedAdvice(dir))
	}
	if err := training.ConfigEdited(dir, have); err != nil { // round 80 B8: the edit was blamed on the command
		return seedNew, err
	}
	plan, err := training.NewPlan(g.request(cmd))
	if err != nil {
		return seedNew, err
	}
	want, err := plan.Resolved()
	if err != nil {
		return seedNew, err
	}
	if want.Train.StartScale == 0 { // from the models: the run's is what this configuration gave
		want.Train.StartScale = have.Train.StartScale
	}
	dataOf := func(c config.Run) string {
		if c.Data == nil {
			return ""
		}
		return c.Data.File
	}
	for _, c := range []struct {
		field, have, want string
		number            bool // said as a number, not quoted (round 80 B8)
	}{ // what names the run, first
		{"experiment", have.Experiment, want.Experiment, false},
		{"data.file", dataOf(have), dataOf(want), false},
		{"data.key", memberOf(have.Data), memberOf(want.Data), false}, // round 78 B1: seeds on two members summarised as one set
		{"data.modes", modesOf(have.Data), modesOf(want.Data), false}, // ConfigDiff leaves the path out (round 80 B7: a moved file's new path is taken)
		{"train.algorithm", string(have.Train.Algorithm), string(want.Train.Algorithm), false},
		{"seed", fmt.Sprint(have.Seed), fmt.Sprint(want.Seed), true},
		{"train.iterations", fmt.Sprint(have.Train.Iterations), fmt.Sprint(want.Train.Iterations), true},
	} {
		if c.have == c.want {
			continue
		}
		advice := seedAdvice(dir)
		if c.field == "data.file" && sameDataFile(have.Data, c.want) { // round 112 B5: a moved file; the advice lost the seeds
			advice = fmt.Sprintf("it has the SHA-256 the run recorded (data.sha256), so the file was moved: record its new place with flowebm train --resume %s --data %s, then give the same --seeds command again", shellQuote(dir), shellQuote(c.want))
		}
		if c.field == "data.key" {
			advice = fmt.Sprintf("give --key %s to continue the set on its member, or %s", shellQuote(c.have), advice)
		}
		if c.number {
			return seedNew, fmt.Errorf("%s holds a run with %s = %s, this command asks for %s: %s", dir, c.field, c.have, c.want, advice)
		}
		return seedNew, fmt.Errorf("%s holds a run with %s %q, this command asks for %q: %s", dir, c.field, c.have, c.want, advice)
	}
	// Then the whole configuration: seeds trained with other settings
	// would be summarised as one set (probe 15).
	if field, h, w := training.ConfigDiff(have, want); field != "" {
		return seedNew, fmt.Errorf("%s holds a run with %s = %s, this command asks for %s: %s", dir, field, h, w, seedAdvice(dir))
	}
	if _, err := os.Stat(filepath.Join(dir, "samples.npy")); err != nil {
		if _, err := training.LatestCheckpoint(dir); err != nil && !hasCheckpoint(dir) {
			return seedRestart, nil // nothing to resume, nothing of worth to lose (probe 29: the advice was --force, which retrains every seed)
		}
		return seedInterrupted, nil
	}
	return seedFinished, nil
}

// modesOf is the file of mode centres a run's data names ("" for none).
func modesOf(d *config.Data) string {
	if d == nil {
		return ""
	}
	return d.Modes
}

// memberOf is the .npz member a run's data reads: its key, or the
// archive's first member where none is given ("" for other files).
func memberOf(d *config.Data) string {
	if d == nil {
		return ""
	}
	return d.Member(d.File)
}

// seedAdvice is how to get past a seed's folder dir that --seeds cannot
// continue (probe 31: "--force", which trains every seed again).
func seedAdvice(dir string) string {
	return fmt.Sprintf("move %s away and give the same --seeds command again to train that seed anew (--force trains every seed again), or give another --out", dir)
}

// finished reports whether run is at its last iteration with the outputs
// written after it (metrics.json, then the plots, then samples.npy, last),
// readable and its own.
func finished(run *training.Run) bool {
	return run.Trainer.Iter >= run.Config.Train.Iterations && damagedOutput(run) == nil
}

// What train --resume says of a finished run whose outputs it writes
// again, which reproduce looks for in its output (completeFinished).
const (
	rewritingOutputs = "the run's outputs are written again from its final checkpoint"
	redrewFigures    = "redrew its figures"
)

// damagedOutput is why one of a trained run's outputs is missing or
// cannot be read back as its own (metrics.json, metrics.csv, samples.npy),
// which --resume then writes again from the final checkpoint (round 95
// B4: "nothing to do" beside a truncated samples.npy); nil where they
// read.
func damagedOutput(run *training.Run) error {
	path := filepath.Join(run.Dir, "metrics.json")
	m, err := training.ReadMetrics(path)
	if err != nil {
		return err
	}
	if cfg := run.Config; !m.OfRun(cfg) { // round 96 B1, B2: another run's kept
		return fmt.Errorf("%s is of seed %d, %s, %d iterations, but the run is of seed %d, %s, %d: it is not this run's", path, m.Seed, m.Algorithm, m.Iterations, cfg.Seed, cfg.Train.Algorithm, cfg.Train.Iterations)
	}
	if err := run.CheckMetrics(path, m); err != nil { // every field (rounds 104 B1, 105 B3, 106 B1, B2, B4)
		return err
	}
	if _, err := training.ReadEvalsCSV(filepath.Join(run.Dir, "metrics.csv"), len(run.Experiment.Weights)); err != nil {
		return err
	}
	if err := training.CheckEvalsOfRun(run.Dir); err != nil {
		return err
	}
	return training.SamplesOfRun(run)
}

// badRecordedFormat is the refusal of a run whose config.json names an
// unknown plot_format, with the ways on: --plot-format for a run still to
// train (its config.json then records it), restoring the checkpoint's copy
// of config.json, and for a finished run flowebm plot.
func badRecordedFormat(run *training.Run, err error) error {
	cfg := filepath.Join(run.Dir, "config.json")
	restore := fmt.Sprintf("cp %s %s restores the run's", shellQuote(filepath.Join(run.Dir, "checkpoint", "run-config.json")), shellQuote(cfg))
	if finished(run) {
		return fmt.Errorf("%s: plot_format: %w: %s (the run is finished: flowebm plot %s --plot-format FORMAT draws its figures)", cfg, err, restore, shellQuote(run.Dir))
	}
	return fmt.Errorf("%s: plot_format: %w: give --plot-format FORMAT, or %s", cfg, err, restore)
}

// recordedFormat is format as config.json records it ("" for png).
func recordedFormat(format plots.Format) string {
	if format == plots.PNG {
		return ""
	}
	return format.String()
}

// otherFormatNote says, of a finished run in dir passed over, that its
// figures are not in the --plot-format given and how to draw them (round
// 92 B2: unsaid); "" without the flag or where they are.
func otherFormatNote(cmd *cobra.Command, format plots.Format, dir string) string {
	if !cmd.Flags().Changed("plot-format") || hasFigures(dir, format) {
		return ""
	}
	return fmt.Sprintf(" (its figures are not in %s: flowebm plot %s --plot-format %s draws them)", format, shellQuote(dir), format)
}

// hasFigures reports whether the run in dir holds a figure in format.
func hasFigures(dir string, format plots.Format) bool {
	for _, name := range []string{"density", "weights", "rhat"} {
		if exists(filepath.Join(dir, name+format.Ext())) {
			return true
		}
	}
	return false
}

// unfinishedEvalsDamage is why an unfinished run's metrics.csv, where it
// has one, is not the run's: unreadable, or not its checkpoint's
// evaluations; nil otherwise.
func unfinishedEvalsDamage(run *training.Run) error {
	path := filepath.Join(run.Dir, "metrics.csv")
	if _, err := os.Lstat(path); err != nil {
		return nil
	}
	if _, err := training.ReadEvalsCSV(path, len(run.Experiment.Weights)); err != nil {
		return err
	}
	return training.CheckEvalsOfRun(run.Dir)
}

// imageSamplesDamage is, for a finished image run, "missing" or "damaged:
// why" where its ImageSamplesFile does not read as the run's images
// (round 105 B4: an emptied one, "nothing to do") or is not what the run
// computes again; "" otherwise.
func imageSamplesDamage(run *training.Run) string {
	if run.Experiment.Kind != experiments.KindImages || run.Experiment.Image == nil {
		return ""
	}
	err := run.CheckImageSamples() // its content too (round 106 B5: another seed's kept)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	}
	if strings.Contains(err.Error(), "is not the run's") {
		return "not its own: " + withoutPackagePrefixes(err.Error())
	}
	return "damaged: " + withoutPackagePrefixes(err.Error())
}

// completeFinished completes the outputs of a finished run that --resume
// (or --seeds, passing over it: f.finishedLine) finds: an image run that
// lost its image-samples.npz gets it written again with its figures; a
// run with a figure of its format missing, empty or cut short gets its
// figures drawn again (round 97 B1: "nothing to do" beside a deleted
// density.png); the rest of its outputs (metrics.json and its time) are
// unchanged. Otherwise there is nothing to do.
//
// A --plot-format given (formatGiven) for a run that has nothing to do is
// refused, saying how to draw its figures in it (probe 67 B8: ignored, exit
// 0, no figure drawn).
func completeFinished(run *training.Run, out io.Writer, f trainFlags, formatGiven bool) error {
	var own plots.Format // the run's format, whatever --seeds' --plot-format
	if err := own.Set(cmp.Or(run.Config.PlotFormat, "png")); err != nil {
		return badRecordedFormat(run, err)
	}
	path := filepath.Join(run.Dir, training.ImageSamplesFile)
	if damage := imageSamplesDamage(run); damage != "" {
		if err := redrawFinished(run, own, true); err != nil {
			return err
		}
		what := "its missing " + path
		if damage != "missing" {
			what = fmt.Sprintf("again its %s, %s,", path, damage)
		}
		fmt.Fprintf(out, "%s has finished its %d iterations; wrote %s and "+redrewFigures+"\n", run.Dir, run.Config.Train.Iterations, what)
		return nil
	}
	if formatGiven && !hasFigures(run.Dir, f.plotFormat) { // its figures in that format already: nothing to do (round 86 B1: a plan's line run again exited 2)
		return fmt.Errorf("%s has finished its %d iterations and written its outputs: --resume has nothing to do, and --plot-format would be ignored; to draw its figures in %s: flowebm plot %s --plot-format %s", run.Dir, run.Config.Train.Iterations, f.plotFormat, shellQuote(run.Dir), f.plotFormat)
	}
	damaged := damagedFigures(run, own)
	switch {
	case len(damaged) > 0:
		if err := redrawFinished(run, own, false); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s has finished its %d iterations; "+redrewFigures+" (%s)\n", run.Dir, run.Config.Train.Iterations, strings.Join(damaged, "; "))
	case f.finishedLine != "":
		fmt.Fprintln(out, f.finishedLine)
	default:
		fmt.Fprintf(out, "%s has finished its %d iterations and written its outputs: nothing to do\n", run.Dir, run.Config.Train.Iterations)
	}
	return nil
}

// damagedFigures says which of the figures that a finished run draws are
// missing, empty or cut short in format f (nil where all are whole).
func damagedFigures(run *training.Run, f plots.Format) []string {
	var damaged []string
	for _, name := range plots.RunFigures(run) {
		path := filepath.Join(run.Dir, name+f.Ext())
		if err := plots.FigureDamage(path, f); errors.Is(err, fs.ErrNotExist) {
			damaged = append(damaged, path+" is missing")
		} else if err != nil {
			damaged = append(damaged, err.Error())
		}
	}
	return damaged
}

// redrawFinished draws a finished run's figures in format f again (with
// images, its image-samples.npz first) through its locked folder, as
// writeOutputs does.
func redrawFinished(run *training.Run, f plots.Format, images bool) error {
	if err := run.FillGrid(); err != nil {
		return err
	}
	return training.Through(run.Dir, run.Anchor, func(dir string) error {
		at := *run
		at.Dir = dir
		if images {
			if err := training.WriteImageSamples(&at); err != nil {
				return err
			}
		}
		return plots.WriteRun(&at, f)
	})
}

// checkDataFlags refuses data-set flags without --data, --data with
// --experiment, and --key without an .npz.
func checkDataFlags(cmd *cobra.Command, f trainFlags) error {
	switch {
	case f.data.File == "" && f.resume != "" && cmd.Flags().Changed("key"):
		return resumeKeyError(f.resume) // probe 25: it asked for --data, which an experiment's run then refused
	case f.data.File == "":
		for _, name := range []string{"key", "holdout", "standardize", "modes", "drop-nonfinite"} {
			switch {
			case cmd.Flags().Changed(name) && f.config == "":
				return fmt.Errorf("--%s applies to a data set: give --data FILE (or a --config with a data section)", name)
			case cmd.Flags().Changed(name) && name == "key": // round 78 B4: told to give the --config it was given
				return fmt.Errorf("--key chooses the member of an .npz given with --data: give --data FILE --key %s (with --config, its data file again)", shellQuote(f.data.Key))
			}
		}
	case cmd.Flags().Changed("experiment"):
		return fmt.Errorf("give --experiment or --data, not both")
	case f.data.Key != "" && strings.ToLower(filepath.Ext(f.data.File)) != ".npz":
		return fmt.Errorf("--key %q selects a member of an .npz file; --data %s is not one", f.data.Key, f.data.File)
	}
	return nil
}

// resumeKeyError is the refusal of --key without --data on --resume dir:
// what the run reads says which flag to change.
func resumeKeyError(dir string) error {
	if err := checkResumable(dir); err != nil {
		return err // no run there (probe 26: it was told to give --data)
	}
	if cfg, err := training.ReadRunConfig(dir); err == nil && cfg.Data == nil {
		return fmt.Errorf("%s: the run trains on the experiment %q, not on a data file: resume it without --key", dir, cfg.Experiment)
	}
	return fmt.Errorf("--key selects the member of the .npz file that --data gives, where the run's data file has moved: give --data NEWFILE.npz too, or drop --key")
}

// runSignals turns SIGINT and SIGTERM into ctx's cancellation, with what
// the run does about it by phase: during setup training does not start and
// a second signal quits at once; during training the iteration under way
// finishes, a checkpoint is written and the command says how to go on;
// while the outputs are written they are finished (a second signal quits:
// --resume writes them again).
type runSignals struct {
	ctx      context.Context
	received atomic.Int32           // the first signal received, 0 before one
	phase    atomic.Int32           // phaseSetup, phaseTraining, phaseOutputs
	dir      atomic.Pointer[string] // the run's folder, once it is known
	// inSeeds: the run is a seed's of train --seeds, which the same
	// command continues (--force would train every seed again).
	inSeeds bool
	// note says, in phaseQuit, what stands and how to go on.
	note atomic.Pointer[func() string]
	stop func()
}

const (
	phaseSetup = iota
	phaseTraining
	phaseOutputs
	phaseDone // the outputs are all written
	// phaseQuit: a signal quits at once, the partial files being written
	// removed (train --seeds' summary).
	phaseQuit
)

func watchSignals() *runSignals {
	ctx, cancel := context.WithCancel(context.Background())
	rs := &runSignals{ctx: ctx}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP) // SIGHUP: the terminal closed
	ignoreBrokenPipes()
	stopped, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var s os.Signal
		select {
		case s = <-sigs:
			rs.received.Store(int32(s.(syscall.Signal)))
		case <-stopped:
			return
		}
		cancel()
		switch phase := rs.phase.Load(); {
		case phase == phaseQuit:
			safefile.RemoveTemps()
			fmt.Fprintf(os.Stderr, "flowebm: interrupted (%v): the partial files being written were removed; outputs already in place are complete%s\n", s, rs.quitNote())
			os.Exit(128 + int(s.(syscall.Signal)))
		case phase == phaseSetup:
			fmt.Fprintln(os.Stderr, "flowebm: interrupted; stopping once the setup under way ends (interrupt again to quit now)")
			// A second signal quits at once, after the cleanup (probe 36:
			// the default action left the folders made and said nothing).
		case phase == phaseTraining:
			fmt.Fprintln(os.Stderr, "flowebm: interrupted; stopping after the iteration under way and writing a checkpoint (if that iteration was the last, the run's outputs are written instead; interrupt again to quit at once: the run then resumes from its last checkpoint, if it has one)")
		case phase == phaseOutputs && rs.inSeeds: // probe 38: --resume was advised
			fmt.Fprintln(os.Stderr, "flowebm: interrupted while the seed's outputs are written; finishing them (interrupt again to quit at once: the same --seeds command writes them again)")
		case phase == phaseOutputs:
			fmt.Fprintln(os.Stderr, "flowebm: interrupted while the outputs are written; finishing them (interrupt again to quit at once: --resume writes them again)")
		default:
			fmt.Fprintln(os.Stderr, "flowebm: interrupted as the run ends: its outputs are all written")
		}
		select {
		case s := <-sigs:
			safefile.RemoveTemps() // the file being written, if any
			fmt.Fprintf(os.Stderr, "flowebm: interrupted again (%v): quitting now; %s\n", s, rs.standing())
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-stopped:
		}
	}()
	// stop waits for the handler: one quitting the process exits before
	// the command's end can exit 0 (probe 38: "interrupted" after the
	// summary was written, the status 0 or 130 by the race).
	rs.stop = func() { signal.Stop(sigs); cancel(); close(stopped); <-finished }
	return rs
}

// quitNote is what the message of a signal in phaseQuit adds: note's
// text, or nothing.
func (rs *runSignals) quitNote() string {
	if f := rs.note.Load(); f != nil {
		return (*f)()
	}
	return ""
}

func (rs *runSignals) enter(phase int32) { rs.phase.Store(phase) }

// stoppedBy is err, the run's end, marked as stopped by the signal
// received, if one was and err is not nil: the command then exits with
// 128 + the signal's number, as the shell reports a process it stopped
// (reproduce tells an interrupted train by it, not by its wording).
func (rs *runSignals) stoppedBy(err error) error {
	if s := syscall.Signal(rs.received.Load()); err != nil && s != 0 {
		return stoppedError{sig: s, err: err}
	}
	return err
}

// enterTraining enters phaseTraining of the run in dir.
func (rs *runSignals) enterTraining(dir string) {
	rs.dir.Store(&dir)
	rs.enter(phaseTraining)
}

// standing says what a run quit at once leaves, and how to go on: its
// last complete checkpoint, or none (probe 30: a checkpoint was promised
// before the first one, and the advised --resume failed).
func (rs *runSignals) standing() string {
	dir := rs.dir.Load()
	switch {
	case dir == nil && rs.inSeeds: // between seeds, or before the first
		return "no seed's run was under way: give the same --seeds command again (it keeps the seeds whose runs are complete)"
	case dir == nil:
		return "nothing was trained"
	case rs.phase.Load() == phaseDone: // probe 34: told to resume a finished run
		return fmt.Sprintf("the run is complete: its outputs are all written in %s", *dir)
	}
	// Folders, not their checksums: quitting at once must not read a
	// model's weights.
	complete := hasCheckpoint(*dir)
	switch {
	case rs.inSeeds && complete:
		return fmt.Sprintf("the run's last complete checkpoint stands: give the same --seeds command again to continue it (or flowebm train --resume %s)", shellQuote(*dir))
	case rs.inSeeds: // probe 31: --force trained the finished seeds again
		return fmt.Sprintf("%s has no complete checkpoint yet: give the same --seeds command again, which trains this seed again from the start and keeps the others", *dir)
	case complete:
		return fmt.Sprintf("the run's last complete checkpoint stands: continue with: flowebm train --resume %s", shellQuote(*dir))
	}
	return fmt.Sprintf("%s has no complete checkpoint yet: start the run again (the same command, with --force to replace what it holds)", *dir)
}

// resumeRun reopens the run of --resume (on a moved data file with
// --data, a moved image folder with --data-dir), locked; a wait for a
// process reading its checkpoint is told on errOut and cut short by ctx.
func resumeRun(ctx context.Context, f trainFlags, out, errOut io.Writer) (*training.Run, func(), error) {
	if fi, err := os.Stat(f.resume); err != nil || !fi.IsDir() {
		return nil, nil, checkResumable(f.resume)
	}
	if msg := divergedBefore(f.resume); msg != "" { // round 112 B4: resumed, it diverged again
		return nil, nil, fmt.Errorf("--resume %s: the run diverged (its error.txt: %s): resumed from its last checkpoint it diverges again, training being deterministic; train a new run with other settings (a smaller learning rate, a larger max_energy), or remove error.txt to try anyway", f.resume, strings.TrimPrefix(msg, "flowebm: "))
	}
	// The lock first: a run still training before its first checkpoint
	// is busy, not missing. A lock file made here for a folder that holds
	// no run is removed again.
	lock := filepath.Join(f.resume, ".lock")
	_, statErr := os.Stat(lock)
	holder := lockHolder(lock) // the command that left it, which taking it overwrites
	release, held, err := lockRunHeld(f.resume, commandName())
	if err != nil {
		return nil, nil, err
	}
	guard, anchor := folderGuards(f.resume, held)
	if err := outputsReplaceable(f.resume, f.plotFormat); err != nil { // found now, not at the next checkpoint
		release()
		return nil, nil, err
	}
	if err := checkResumable(f.resume); err != nil {
		if errors.Is(statErr, os.ErrNotExist) {
			os.Remove(lock)
		} else if holder != "" && holder != commandName() { // another command's lock: said as its own (round 103 B1: a killed convert's became train's)
			os.WriteFile(lock, []byte(holder+"\n"), 0o644)
			err = checkResumable(f.resume)
		}
		release()
		return nil, nil, err
	}
	if err := removeStaleTemps(f.resume, runNames()...); err != nil {
		release()
		return nil, nil, err
	}
	run, err := training.ResumeWith(f.resume, training.ResumeOptions{
		DataFile: f.data.File, DataKey: f.data.Key, DataDir: f.dataDir,
		Context: ctx, Waiting: waitingNote(errOut), Anchor: anchor,
	})
	if err != nil {
		release()
		if f.dataDir == "" && errors.Is(err, config.ErrOtherData) {
			given := f.data
			if given.File == "" { // the run's own path, overwritten (round 80 B6: "leave data.sha256 out", refused by the checkpoint)
				if cfg, cfgErr := training.ReadRunConfig(f.resume); cfgErr == nil && cfg.Data != nil {
					given = *cfg.Data
				}
			}
			if given.File != "" {
				return nil, nil, otherDataResume(f.resume, given, err)
			}
		}
		if f.dataDir != "" && errors.Is(err, config.ErrOtherData) { // round 78 B2: "or start a new run", no command
			return nil, nil, fmt.Errorf("%w: a new run with the run's settings on these files: flowebm train --config %s --data-dir %s --out NEW", err, shellQuote(filepath.Join(f.resume, "config.json")), shellQuote(f.dataDir))
		}
		if f.data.File != "" || f.dataDir != "" {
			return nil, nil, err // the path given is wrong: no advice to give one
		}
		if none := (training.NothingToResumeError{}); errors.As(err, &none) && !none.Restorable() && finishedOutputs(f.resume) { // round 111 B5: "start the run again with --force", losing a finished run
			return nil, nil, finishedUnreadableError{none, modelUsable(filepath.Join(f.resume, "checkpoint"))}
		}
		return nil, nil, movedDataHint(f.resume, err)
	}
	run.Guard = guard
	if f.finishedLine == "" || run.Trainer.Iter < run.Config.Train.Iterations {
		fmt.Fprintf(out, "resuming %s at iteration %d of %d\n", f.resume, run.Trainer.Iter, run.Config.Train.Iterations)
	}
	if it, n := run.Trainer.Iter, run.Config.Train.Iterations; it < n && exists(filepath.Join(f.resume, "metrics.json")) { // round 124 B2: metrics.csv cut as it went, unsaid
		fmt.Fprintf(out, "note: the run finished (its metrics.json) but its final checkpoint is missing: training again from iteration %d to %d writes it, and metrics.csv is rewritten as the run goes (the same rows again); if this is interrupted, give the same command again\n", it, n)
	}
	for _, n := range run.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	return run, release, nil
}

// otherDataResume is the refusal of --resume dir --data file where file
// holds other data than the run was trained on (round 76 B1: the advice
// was a configuration's, to leave data.sha256 out, which the run's
// checkpoint then refused).
func otherDataResume(dir string, given config.Data, err error) error {
	cfg, cfgErr := training.ReadRunConfig(dir)
	if cfgErr != nil || cfg.Data == nil {
		return err
	}
	dataArgs := shellQuote(given.File)
	key := given.Key
	if key == "" && strings.EqualFold(filepath.Ext(given.File), ".npz") { // round 79 B1: the run's own member, one of its settings
		if names, err := data.NPZNames(given.File); err == nil && slices.Contains(names, cfg.Data.Key) { // round 80 B1: not a member the file lacks
			key = cfg.Data.Key
		}
	}
	if key != "" { // round 77 B1: the advised run read the first member
		dataArgs += " --key " + shellQuote(key)
	}
	was := cfg.Data.SHA256[:min(16, len(cfg.Data.SHA256))]
	// Round 81 B11: re-saved copies of the same values were "other data", unexplained.
	const byBytes = "; files are compared by the SHA-256 of their bytes, so the same values saved in another dtype, byte order or format count as other data"
	if samePathName(given.File, cfg.Data.File) { // round 80 B6: overwritten in place; the advised --config kept the recorded SHA-256 for the same path
		return fmt.Errorf("%s holds other data than the run in %s was trained on (SHA-256 %s…, then%s): %w; put the run's file back there to continue it (flowebm train --resume %s, or --resume %s --data PATH where a copy of it lies), or train a new run on the file as it is: with the run's settings, give a copy of %s without its data.sha256 field as --config (and --out NEW), or with the defaults: flowebm train --data %s --out NEW%s",
			given.File, dir, was, byBytes, config.ErrOtherData, shellQuote(dir), shellQuote(dir), filepath.Join(dir, "config.json"), dataArgs, modesAdvice(cfg.Data.Modes))
	}
	return fmt.Errorf("--data %s holds other data than the run in %s was trained on (%s, SHA-256 %s…%s): %w; continue it on that file (flowebm train --resume %s, with --data PATH where a copy of it lies elsewhere), or train a new run with the run's settings on this file: flowebm train --config %s --data %s --out NEW%s",
		given.File, dir, cfg.Data.File, was, byBytes, config.ErrOtherData, shellQuote(dir), shellQuote(filepath.Join(dir, "config.json")), dataArgs, modesAdvice(cfg.Data.Modes))
}

// modesAdvice is what otherDataResume adds for a run whose configuration
// names mode centres: they are the old data's (round 77 B5: the advised
// run refused them, for a --modes the user never gave).
func modesAdvice(modes string) string {
	if modes == "" {
		return ""
	}
	return fmt.Sprintf(" (its data.modes, %s, are the centres of the run's data: give --modes FILE with this data's, or delete data.modes from a copy of the configuration)", modes)
}

// movedDataHint adds to err, when the run in dir was trained on a data
// file that is no longer where its configuration says, how to resume on
// the file where it is now.
func movedDataHint(dir string, err error) error {
	cfg, cfgErr := training.ReadRunConfig(dir)
	if cfgErr == nil && cfg.DataDir != "" {
		if fi, statErr := os.Stat(cfg.DataDir); statErr != nil || !fi.IsDir() {
			return fmt.Errorf("%w: the run's data folder %s is gone; if it was moved, continue with flowebm train --resume %s --data-dir NEWFOLDER (its files' SHA-256 are checked)", err, cfg.DataDir, shellQuote(dir))
		}
	}
	if cfgErr != nil || cfg.Data == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, statErr := os.Stat(cfg.Data.File); !errors.Is(statErr, fs.ErrNotExist) {
		return err
	}
	return fmt.Errorf("%w: the run's data file %s is gone; if it was moved, record where it is with flowebm train --resume %s --data NEWPATH (its SHA-256 is checked; a finished run only records it)", err, cfg.Data.File, shellQuote(dir)) // the command in full: plot gave the advice too (probe 70 B5)
}

// request is what the flags ask of a new run: only the flags given (and
// --seed under --seeds) override a --config file.
func (f trainFlags) request(cmd *cobra.Command) training.Request {
	req := training.Request{ConfigFile: f.config, Iterations: f.iterations, Epochs: f.epochs, DataDir: f.dataDir}
	changed := cmd.Flags().Changed
	for _, flag := range []string{"holdout", "standardize", "modes", "drop-nonfinite"} {
		if changed(flag) {
			req.DataGiven = append(req.DataGiven, strings.ReplaceAll(flag, "-", "_"))
		}
	}
	if f.data.File != "" || len(req.DataGiven) > 0 { // without --data: the --config file's data
		data := f.data
		req.Data = &data
	} else if changed("experiment") || f.config == "" {
		req.Experiment = f.experiment
	}
	if changed("algorithm") || f.config == "" {
		req.Algorithm = f.algorithm
	}
	if changed("seed") || f.config == "" || f.forceSeed {
		seed := f.seed
		req.Seed = &seed
	}
	if f.flow.Sample != "" || f.flow.Density != "" {
		flow := f.flow
		req.FlowONNX = &flow
	}
	return req
}

// runFolder is --out, or runs/EXPERIMENT-ALGORITHM-sSEED.
func runFolder(f trainFlags, cfg config.Run) string {
	if f.out != "" {
		return f.out
	}
	name := cfg.Experiment
	if cfg.Data != nil {
		name = strings.TrimSuffix(filepath.Base(cfg.Data.File), filepath.Ext(cfg.Data.File))
	}
	return filepath.Join("runs", fmt.Sprintf("%s-%s-s%d", name, cfg.Train.Algorithm, cfg.Seed))
}

// replacedFiles are the files a run replaces (atomically) in its folder
// as it trains and ends: its outputs and its figures in format (config.json:
// its reader refuses it first).
func replacedFiles(format plots.Format) []string {
	files := []string{"metrics.csv", "metrics.json", "samples.npy", "image-samples.npz"}
	for _, n := range plotNames {
		files = append(files, n+format.Ext())
	}
	return files
}

// outputsReplaceable refuses a run folder where one of replacedFiles is not a
// regular file (a folder, a FIFO, a link): its replacement would fail, but
// only at the next checkpoint or at the end of training (probes 17, 18).
func outputsReplaceable(dir string, format plots.Format) error {
	return replaceable(dir, replacedFiles(format), "the run replaces it as it trains; move it away and resume again")
}

// replaceable refuses a folder dir where one of the files names, which a
// command is to replace, is not a regular file, saying why with what.
func replaceable(dir string, names []string, what string) error {
	for _, name := range names {
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err == nil {
			if err := safefile.Regular(p, fi); err != nil {
				return fmt.Errorf("%v: %s", err, what)
			}
		}
	}
	return nil
}

// plan resolves the flags (and --config) into a new run's plan, with the
// data folder it reads recorded as data_dir.
func (f trainFlags) plan(cmd *cobra.Command) (*training.Plan, error) {
	dataDir, err := f.useDataDir(cmd)
	if err != nil {
		return nil, err
	}
	plan, err := training.NewPlan(f.request(cmd))
	if err != nil {
		return nil, err
	}
	if dataDir != "" {
		if _, ok := dataDirEnv(plan.Config.Experiment); !ok || plan.Config.Data != nil {
			return nil, fmt.Errorf("--data-dir %s: %s reads no data folder: only mnist, mnist28, fashion-mnist and cifar10 do", f.dataDir, plan.Config.Source())
		}
		if old := plan.Config.DataDir; plan.Config.DataDirSHA256 != nil && old != dataDir { // round 78 B2: refused as other data, for a new run
			fmt.Fprintf(cmd.ErrOrStderr(), "flowebm: note: --data-dir %s replaces the configuration's data_dir %s: the SHA-256 it records of that folder's files (data_dir_sha256) are dropped, and those of this one recorded\n", f.dataDir, old)
			plan.Config.DataDirSHA256 = nil
		}
		plan.Config.DataDir = dataDir
	} else if plan.Config.DataDir == "" && plan.Config.Data == nil {
		// A folder named by the experiment's variable is recorded as if
		// given with --data-dir: its files' checksums guard a resume, and
		// the run resumes without the variable.
		dir, err := imageDataDir(plan.Config.Experiment)
		if err != nil {
			return nil, err
		}
		plan.Config.DataDir = dir
	}
	return plan, nil
}

// startRun builds a new run in its folder, locked, refusing to replace a
// run without --force or to write where its inputs are.
func startRun(ctx context.Context, cmd *cobra.Command, f trainFlags, out io.Writer) (*training.Run, func(), error) {
	plan, err := f.plan(cmd)
	if err != nil {
		return nil, nil, err
	}
	if pf := plan.Config.PlotFormat; cmd.Flags().Changed("plot-format") || pf == "" {
		plan.Config.PlotFormat = recordedFormat(f.plotFormat) // recorded for --resume
	} else if err := new(plots.Format).Set(pf); err != nil { // a --config's
		return nil, nil, fmt.Errorf("%s: plot_format: %w", f.config, err)
	}
	cfg := plan.Config
	dir := runFolder(f, cfg)
	if err := checkInputsOutside(f, cfg, dir); err != nil {
		return nil, nil, err
	}
	if run := trainingRunAbove(dir); run != "" {
		return nil, nil, fmt.Errorf("--out %s is inside the training run %s, whose checkpoints would replace it: give another folder", dir, run)
	}
	if err := checkHeldFolder("--out", dir, "give another folder"); err != nil {
		return nil, nil, err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, nil, fmt.Errorf("--out %s is a file: give a folder for the run", dir)
	}
	if exists(filepath.Join(dir, "spec.json")) && !exists(filepath.Join(dir, "config.json")) {
		return nil, nil, fmt.Errorf("--out %s is a model folder (spec.json and weights.npz, as convert writes them), not a run: give another folder", dir)
	}
	if err := checkNoRunFiles("--out", dir, f.force); err != nil {
		return nil, nil, err
	}
	// The lock first: a folder another process trains in is busy. A
	// signal removes the folders made for it while they hold only it.
	release, held, err := lockOutputFolderHeld(dir, "train")
	if err != nil {
		return nil, nil, namingFlag("--out", err)
	}
	if err := heldRunOutputs(dir); err != nil {
		release()
		return nil, nil, err
	}
	if exists(filepath.Join(dir, "spec.json")) && !exists(filepath.Join(dir, "config.json")) { // again, locked: a convert may have written it since (probe 47: then --force was advised, and refused)
		release()
		return nil, nil, fmt.Errorf("--out %s is a model folder (spec.json and weights.npz, as convert writes them), not a run: give another folder", dir)
	}
	guard, anchor := folderGuards(dir, held)
	if foreign := foreignInCheckpointNew(dir); foreign != "" && !f.force { // probe 48: compare's figures there were taken for a killed run's and deleted
		release()
		return nil, nil, fmt.Errorf("%s holds %s, which is not a checkpoint a run was writing (%s is no checkpoint's file), and no run (no config.json): give another --out, or replace it with --force", dir, filepath.Join(dir, checkpointPrefix+".new"), foreign)
	}
	if isRun(dir) && !f.force {
		release()
		if _, err := training.LatestCheckpoint(dir); err != nil && !exists(filepath.Join(dir, "samples.npy")) && !hasCheckpoint(dir) { // a damaged one: --resume names the damage (probe 28)
			// Probe 27: --resume then said there was nothing to resume.
			return nil, nil, fmt.Errorf("%s holds a run that stopped before its first checkpoint was complete, so there is nothing to resume: start it again with --force, which replaces it", dir)
		}
		if !exists(filepath.Join(dir, "config.json")) { // probe 47: compare's figures in DIR/checkpoint were "a run" to --resume
			return nil, nil, fmt.Errorf("%s holds %s, which a run writes, but no run (no config.json): give another --out, or replace them with --force", dir, strings.Join(presentIn(dir, runOutputs), ", "))
		}
		if exists(filepath.Join(dir, "samples.npy")) && exists(filepath.Join(dir, "metrics.json")) { // round 83 B3: told to continue a finished run
			return nil, nil, fmt.Errorf("%s already holds a finished run (its outputs written): give another --out, or replace it with --force", dir)
		}
		if _, err := training.LatestCheckpoint(dir); err != nil { // round 125 B2: --resume, advised, then said there was nothing to resume
			return nil, nil, fmt.Errorf("%s already holds a run, but no checkpoint of it can be resumed from (%v): put back a whole copy of its checkpoint if you keep one, or replace the run with --force", dir, withoutPackagePrefixes(err.Error()))
		}
		return nil, nil, fmt.Errorf("%s already holds a run: continue it with --resume %s, or replace it with --force", dir, shellQuote(dir))
	}
	t0 := time.Now()
	run, err := startReplacing(ctx, plan, dir, guard, anchor)
	if err != nil {
		release()
		return nil, nil, err
	}
	run.Guard, run.Anchor = guard, anchor
	for _, n := range run.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	ebm, flow := run.Trainer.EBM.Params.Count(), 0
	if run.Trainer.Flow != nil {
		flow = run.Trainer.Flow.Params.Count()
	}
	chains := fmt.Sprintf("persistent %d", run.Config.Train.Persistent)
	if !run.Config.Train.PersistentChains() { // CoopFlow: no bank
		chains = "chains from the flow"
	}
	what := run.Config.Experiment // as the run resolved it (round 81 B6: blank for a --config of data.file without experiment)
	if d := run.Config.Data; d != nil {
		what = "data " + filepath.Base(d.File)
		if m := d.Member(d.File); m != "" {
			what += " (" + m + ")"
		}
	}
	fmt.Fprintf(out, "%s with %s, seed %d: %d iterations, batch %d, %s; EBM %d parameters, flow %d; set up in %.1fs; writing %s\n",
		what, run.Config.Train.Algorithm, run.Config.Seed, run.Config.Train.Iterations, run.Config.Train.BatchSize, chains,
		ebm, flow, time.Since(t0).Seconds(), dir)
	return run, release, nil
}

// dataDirEnv is the environment variable through which the image
// experiment name finds its files (false: the experiment reads none).
func dataDirEnv(name string) (string, bool) {
	switch name {
	case "mnist", "mnist28":
		return "FLOWEBM_MNIST", true
	case "fashion-mnist":
		return experiments.FashionMNISTEnv, true
	case "cifar10":
		return experiments.CIFAR10Env, true
	}
	return "", false
}

// useDataDir checks --data-dir and returns its absolute path ("" when not
// given). The plan's request passes the folder to the experiment's
// lookup; the run's configuration records it as data_dir
// (experiments.ByNameIn reads it when the run starts or resumes).
func (f trainFlags) useDataDir(cmd *cobra.Command) (string, error) {
	if f.dataDir == "" {
		return "", nil
	}
	if f.data.File != "" {
		return "", fmt.Errorf("--data-dir names an image experiment's folder, --data a data set to train on: give one")
	}
	dir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return "", fmt.Errorf("--data-dir %s: %w", f.dataDir, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if target, lerr := os.Readlink(f.dataDir); err != nil && lerr == nil { // round 80 B2: a dangling link, or a missing folder, was called "not a folder"
			return "", fmt.Errorf("--data-dir %s is a link to %s, which does not exist", f.dataDir, target)
		} else if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("--data-dir %s: no such folder: want the folder of the experiment's files", f.dataDir)
		} else if err != nil {
			return "", fmt.Errorf("--data-dir %s: %w", f.dataDir, err)
		}
		return "", fmt.Errorf("--data-dir %s is not a folder: want the folder of the experiment's files", f.dataDir)
	}
	if f.config != "" && !cmd.Flags().Changed("experiment") {
		return dir, nil // the file names the experiment; checked once planned
	}
	if _, ok := dataDirEnv(f.experiment); !ok {
		return "", fmt.Errorf("--data-dir %s: experiment %s reads no data folder: only mnist, mnist28, fashion-mnist and cifar10 do", f.dataDir, f.experiment)
	}
	return dir, nil
}

// startReplacing starts the planned run in dir, then clears what dir
// held (a run --force replaces, or debris): only a run that could start,
// and was not interrupted meanwhile, replaces the old one.
func startReplacing(ctx context.Context, plan *training.Plan, dir string, guard func() error, anchor training.Anchor) (*training.Run, error) {
	run, err := plan.StartContext(ctx, dir) // writes nothing yet; a signal stops pretraining
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted before training started: nothing was trained, and %s was left as it was", dir)
	}
	hook("train-set-up")
	if err := guard(); err != nil { // probe 48: a folder put in its place during the setup was cleared
		return nil, withoutCheckpoint(err)
	}
	if err := training.Through(dir, anchor, clearRun); err != nil { // cleared through the locked folder itself
		return nil, withoutCheckpoint(err)
	}
	return run, nil
}

// validate checks the flags' values, and that none given with --resume
// would be ignored (a resumed run keeps its own configuration).
func (f trainFlags) validate(cmd *cobra.Command) error {
	switch {
	case f.iterations < 0: // each named alone (probe 68 B6: "--iterations 0" beside --epochs -1)
		return fmt.Errorf("--iterations %d: want a count ≥ 0 (unset: the default)", f.iterations)
	case f.epochs < 0:
		return fmt.Errorf("--epochs %d: want a count ≥ 0 (unset: the default)", f.epochs)
	case f.iterations > 0 && f.epochs > 0:
		return fmt.Errorf("give --iterations or --epochs, not both")
	case !(f.data.HoldOut > 0 && f.data.HoldOut < 1):
		return fmt.Errorf("--holdout %v: want a fraction strictly between 0 and 1: the rows held out give the run's held-out log-likelihood; to train on all rows but one, give a fraction below 1/(2n), e.g. --holdout 1e-9 (at least one row is held out)", f.data.HoldOut) // round 104 A3: no way named to train on (nearly) all rows
	case !slices.Contains([]string{"dimension", "global", "none"}, f.data.Standardize):
		return fmt.Errorf("--standardize %q: want dimension, global or none", f.data.Standardize)
	case (f.flow.Sample == "") != (f.flow.Density == ""):
		return fmt.Errorf("give a flow as --flow SAMPLE.onnx and --flow-density DENSITY.onnx (its two graphs), not one of them")
	case f.flow.BaseSigma != 0 && f.flow.Sample == "":
		return fmt.Errorf("--flow-base-sigma applies to a flow given with --flow")
	case !(f.flow.BaseSigma >= 0 && f.flow.BaseSigma <= checkpoint.MaxBaseSigma) || (f.flow.BaseSigma != 0 && !checkpoint.ValidBaseSigma(f.flow.BaseSigma)):
		return fmt.Errorf("--flow-base-sigma %v: want σ in %s, or 0 for the files' metadata", f.flow.BaseSigma, checkpoint.BaseSigmaRange)
	case f.flow.Sample != "" && cmd.Flags().Changed("algorithm") && !f.algorithm.TrainsFlow():
		return fmt.Errorf("--flow with --algorithm %s, which has no flow: --flow applies to flowmc, nt and coopflow", f.algorithm)
	}
	return nil
}

// ignoredWithResume refuses the flags that --resume would ignore, first:
// the data flags' own checks asked for --data, which it then refused too
// (probe 24).
func (f trainFlags) ignoredWithResume(cmd *cobra.Command) error {
	if f.resume == "" || f.forceSeed { // --seeds continues a seed's run with its own flags checked
		return nil
	}
	var ignored []string
	for _, name := range []string{"experiment", "algorithm", "config", "iterations", "epochs", "seed", "out", "force", "holdout", "standardize", "modes", "drop-nonfinite", "flow", "flow-density", "flow-base-sigma"} {
		if cmd.Flags().Changed(name) {
			ignored = append(ignored, "--"+name)
		}
	}
	if len(ignored) > 0 {
		them := "them"
		if len(ignored) == 1 {
			them = "it"
		}
		return fmt.Errorf("--resume continues the run with the configuration it was started with; %s would be ignored: drop %s", strings.Join(ignored, ", "), them)
	}
	return nil
}

// waitingNote tells errOut that the run waits for a process reading its
// checkpoint (training.Run.Waiting).
func waitingNote(errOut io.Writer) func(msg string) {
	return func(msg string) { fmt.Fprintf(errOut, "\nflowebm: note: %s\n", msg) }
}

func train(sig *runSignals, run *training.Run, out, errOut io.Writer, quiet bool, format plots.Format) error {
	cfg := run.Config
	total := cfg.Train.Iterations
	bar, lines := newProgress(run, errOut, quiet)
	run.Waiting = waitingNote(errOut)
	t0 := time.Now()
	start := run.Trainer.Iter
	err := run.TrainContext(sig.ctx, func(it int) {
		if bar != nil {
			bar.Set(it)
		}
		if lines != nil {
			lines.update(it)
		}
	})
	if err != nil {
		if gerr := run.Guarded(); gerr != nil { // probe 48: a write failed as the folder changed, and the advice named the path
			err = gerr
		}
	}
	if changed := (*folderChangedError)(nil); errors.As(err, &changed) {
		if !run.Checkpointed() {
			return withoutCheckpoint(err)
		}
		return err // it says where to continue
	}
	if errors.Is(err, algorithms.ErrInterrupted) {
		if bar != nil {
			bar.Exit()
		}
		return fmt.Errorf("%w; continue with: flowebm train --resume %s", err, shellQuote(run.Dir))
	}
	if err != nil {
		return trainingFailed(run, err)
	}
	sig.enter(phaseOutputs)
	if bar != nil {
		bar.Finish()
	}
	elapsed := time.Since(t0)
	if len(run.Evals) == 0 {
		return fmt.Errorf("%s: the run ended with no evaluation to report (its checkpoint's evals.csv holds none): train it again with --force", run.Dir)
	}
	final := run.Evals[len(run.Evals)-1]
	if err := writeOutputs(run, format); err != nil {
		if gerr := run.Guarded(); gerr != nil {
			return gerr
		}
		if changed := (*folderChangedError)(nil); errors.As(err, &changed) {
			return err
		}
		return fmt.Errorf("training finished, but writing its outputs failed: %w; once the cause is fixed, flowebm train --resume %s writes them again", err, shellQuote(run.Dir))
	}
	sig.enter(phaseDone)
	hook("train-done")
	printSummary(out, run, final, total-start, elapsed)
	return nil
}

// writeOutputs writes a finished run's metrics.json, the image
// experiments' final chains and energies (image-samples.npz), the plots
// and, last, samples.npy.
func writeOutputs(run *training.Run, format plots.Format) error {
	hook("train-outputs")
	return training.Through(run.Dir, run.Anchor, func(dir string) error {
		at := *run // the same run, its outputs written through the locked folder (probe 49)
		at.Dir = dir
		hook("train-outputs-anchored")
		for _, write := range []func() error{
			func() error { return training.WriteMetrics(filepath.Join(at.Dir, "metrics.json"), &at) },
			func() error { return training.WriteImageSamples(&at) },
			func() error { return plots.WriteRun(&at, format) },
			func() error { return redrawOtherFormats(&at, format) },
			func() error { return training.WriteSamples(&at) },
		} {
			if err := write(); err != nil {
				return err
			}
		}
		return nil
	})
}

// redrawOtherFormats draws again, at the run's end, its figures in the
// formats other than its own that its folder holds: a plot of the run
// before it finished drew them (round 103 B3: PNGs of iteration 280 left
// beside the SVGs of iteration 400, unsaid).
func redrawOtherFormats(run *training.Run, own plots.Format) error {
	for _, f := range []plots.Format{plots.PNG, plots.SVG, plots.PDF} {
		if f == own || !slices.ContainsFunc(plots.RunFigures(run), func(name string) bool { return exists(filepath.Join(run.Dir, name+f.Ext())) }) {
			continue
		}
		if err := plots.WriteRun(run, f); err != nil {
			return err
		}
	}
	return nil
}

// trainingFailed adds to a training error other than an interruption
// what is left and how to go on (a divergence's error says so already).
func trainingFailed(run *training.Run, err error) error {
	if errors.Is(err, algorithms.ErrDiverged) {
		// Recorded in the run's folder as reproduce records it (round 112
		// B4: plot and compare called the run unfinished, inviting a
		// resume that diverges again); a failure to write it leaves the
		// error as it is.
		if _, ckErr := training.LatestCheckpoint(run.Dir); ckErr != nil {
			return err // diverged before its first checkpoint: nothing of the run is left, the same command starts it again (round 113 B2: the error.txt alone made its folder "not a run")
		}
		msg := "flowebm: " + err.Error()
		_ = training.Through(run.Dir, run.Anchor, func(dir string) error {
			return safefile.Write(filepath.Join(dir, "error.txt"), func(w io.Writer) error { _, werr := fmt.Fprintln(w, msg); return werr })
		})
		return err
	}
	ck, ckErr := training.LatestCheckpoint(run.Dir)
	if ckErr != nil {
		return fmt.Errorf("%w; no complete checkpoint was written: start the run again once the cause is fixed (with --force if its folder is left)", err)
	}
	return fmt.Errorf("%w; the last complete checkpoint, %s, stands: continue with: flowebm train --resume %s once the cause is fixed", err, ck, shellQuote(run.Dir))
}

// newProgress shows training's progress on errOut: a bar on a terminal,
// periodic lines elsewhere (CI logs, files), nothing when quiet.
func newProgress(run *training.Run, errOut io.Writer, quiet bool) (*progressbar.ProgressBar, *progressLines) {
	total := run.Config.Train.Iterations
	var bar *progressbar.ProgressBar
	var lines *progressLines
	if f, ok := errOut.(*os.File); !quiet && (!ok || !term.IsTerminal(int(f.Fd()))) {
		// Not a terminal (CI logs, files): periodic lines instead of a bar.
		lines = &progressLines{w: errOut, total: total, start: run.Trainer.Iter, t0: time.Now()}
	} else if !quiet {
		bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(errOut),
			progressbar.OptionSetDescription("training"),
			progressbar.OptionShowIts(),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("it"),
			progressbar.OptionThrottle(500*time.Millisecond),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionFullWidth(),
			progressbar.OptionClearOnFinish(),
		)
		bar.Set(run.Trainer.Iter)
	}
	return bar, lines
}

// boxNote is, where the fraction m of the EBM's mass lying beyond a
// built-in experiment's quadrature box is counted (Run.GridLogZ), a note
// that the grid's weights are over the box; "" otherwise.
func boxNote(run *training.Run, m float64) string {
	if !(m > 0) {
		return ""
	}
	bx, by := run.Grid().HalfWidths()
	return fmt.Sprintf(" (over the experiment's box ±%g × ±%g: %.1f%% of the EBM's mass lies beyond it, on a grid twice as wide)", bx, by, 100*m)
}

// chainsStart is where the evaluation's chains start: the persistent
// bank, or the flow for CoopFlow, which keeps none (round 88 A3).
func chainsStart(run *training.Run) string {
	if !run.Config.Train.PersistentChains() {
		return "the flow's samples"
	}
	return "the persistent bank"
}

// printSummary prints what the run reached: the time per iteration, the
// weights against the truth, the density error, the held-out
// log-likelihood, R-hat and acceptance.
func printSummary(out io.Writer, run *training.Run, final training.Eval, trained int, elapsed time.Duration) {
	if trained == 0 {
		fmt.Fprintf(out, "the run had finished training; its outputs are now complete\n")
	} else {
		fmt.Fprintf(out, "trained %s in %s (%.1f ms/iteration)\n", count(trained, "iteration"), elapsed.Round(time.Second), float64(elapsed.Milliseconds())/float64(trained))
	}
	exp := run.Experiment
	gridZ, m, _ := run.GridLogZ()
	beyond := boxNote(run, m)
	if exp.Weights != nil && final.EBMWeights != nil {
		how, ebm := "EBM by grid quadrature"+beyond, "EBM"
		if run.Grid() == nil {
			how = fmt.Sprintf("EBM from the final states of %d chains of %d steps", run.Config.RHatChains, run.Config.RHatSteps)
			if !(final.MaxRHat < 1.01) { // round 85 A1, round 86 A1: the chains' weights, taken for the EBM's with R-hat 2.6, row by row
				how = fmt.Sprintf("the final states of %d chains of %d steps, which have not mixed (R-hat %.3f): the sampler's weights, not the EBM's", run.Config.RHatChains, run.Config.RHatSteps, final.MaxRHat)
				ebm = "chains"
			}
		}
		kind := "mode"
		if exp.Kind == experiments.KindImages {
			kind = "class"
		}
		fmt.Fprintf(out, "\n%s weights (%s; negatives by nearest %s):\n", kind, how, map[string]string{"mode": "mode", "class": "neighbours"}[kind])
		for k := range exp.Weights {
			where := ""
			switch {
			case exp.ClassNames != nil:
				where = " " + exp.ClassNames[k]
			case exp.Modes != nil:
				where = fmt.Sprintf(" %d at %s", k+1, fmtPoint(exp.Modes[k]))
			}
			fmt.Fprintf(out, "  %s%s: %s %.3f, negatives %s, truth %.3f%s\n", kind, where, ebm, final.EBMWeights[k], negWeight(final, k), exp.Weights[k], chainWeight(final, k))
		}
		if ebm == "EBM" {
			fmt.Fprintf(out, "  weight MSE of the EBM against the truth: %.2e\n", final.EBMWeightMSE)
		} else {
			fmt.Fprintf(out, "  weight MSE of those chains' weights against the truth (metrics.json's ebm_weight_mse): %.2e\n", final.EBMWeightMSE)
		}
		if final.ChainWeights != nil {
			caveat := ""
			if final.MaxRHat >= 1.01 { // round 106 A3: sample --modes says so, train did not
				caveat = fmt.Sprintf("; R-hat %.3f: those chains have not mixed, so these are not to be trusted", final.MaxRHat)
			}
			fmt.Fprintf(out, "  sampler: the weights among the draws of %d chains of %d steps of the algorithm's kernel from %s, ± MCSE [95%% interval]%s\n", run.Config.RHatChains, run.Config.RHatSteps, chainsStart(run), caveat)
		}
	}
	if !isNaN(final.LogDensityMedSE) {
		fmt.Fprintf(out, "median squared log-density error over held-out data: %.3f\n", final.LogDensityMedSE)
	}
	exact := "unknown"
	if !isNaN(run.TrueHeldOutLL) {
		exact = fixed3(run.TrueHeldOutLL)
	}
	quad := ""
	if g := run.Grid(); g != nil {
		// The box's log Z with the mass beyond it (round 89 A1: the box's
		// alone, 2% short, was set against the right IS estimate).
		// Its own error: a few per cent of the mass beyond the box, which a
		// coarse grid measures (round 90 A3: 6e-5 off, called 3.6 standard
		// errors away).
		quad = gridLogZNote(final.LogZ, gridZ, -0.05*math.Log1p(-m), final.HeldOutLL)
		if m > 0 {
			quad += fmt.Sprintf(" (the box's %s with the %.1f%% of the mass beyond it)", sig3(g.LogZ), 100*m)
		}
	}
	if z := final.LogZ; !z.Reliable() && !isNaN(z.ESS) {
		off := unreliableISNote(z.LogZ, gridZ, run.Grid() != nil)
		fmt.Fprintf(out, "held-out log-likelihood: %s, unreliable (exact density: %s): log Z by importance sampling %s rests on an ESS of %s of the %d draws, below %.0f%%, %s%s\n",
			fixed3(final.HeldOutLL), exact, withError(z.LogZ, z.SE), essPercent(z.ESS), run.Config.LogZSamples, 100*metrics.ReliableESS, off, quad)
	} else {
		fmt.Fprintf(out, "held-out log-likelihood: %s (exact density: %s; log Z by importance sampling %s, ESS %s%s)\n",
			fixed3(final.HeldOutLL), exact, withError(z.LogZ, z.SE), essPercent(z.ESS), quad)
	}
	if missed, err := run.MissedMass(); err == nil && missed != nil {
		fmt.Fprintf(out, "warning: %s\n", missedNote(missed))
	}
	if e := run.GridError(); e > 0 { // round 99 A1; round 100 A3: the advice of a larger grid_size did not work
		fmt.Fprintf(out, "warning: the EBM has features finer than the quadrature grid's cells (%d per axis%s): its subgrids of every other cell, with cells twice as wide, differ from it by %.2g of the mass, so the EBM's weights and log Z by the grid may be off by up to about a third of that, %.1g (less where the density is smooth between its sharp features)\n", run.Grid().N, finestNote(run), 3*e, e)
	}
	fmt.Fprintf(out, "max R-hat over dimensions of %d chains from %s: rank-normalised %.3f, classic %.3f\n",
		run.Config.RHatChains, chainsStart(run), final.MaxRHat, final.MaxRHatClassic)
	local := fmtAccept(final.Stats.LocalAccept)
	if !run.Config.Train.Algorithm.AcceptsLocally() { // probe 67 B7: "local 1.00", as the report's "—"
		local = "n/a (unadjusted Langevin: no accept step)"
	}
	fmt.Fprintf(out, "acceptance: local %s, global %s\n", local, fmtAccept(final.Stats.GlobalAccept))
	fmt.Fprintf(out, "outputs in %s\n", run.Dir)
}

func isNaN(v float64) bool { return v != v }

// finestNote says, of a data set's final grid, that it has the most cells
// the final evaluation takes ("" for an experiment's, the paper's).
func finestNote(run *training.Run) string {
	if run.Experiment.Kind != experiments.KindDataSet || run.Grid().N < metrics.MaxResolvedN {
		return ""
	}
	return ", the finest its final evaluation tries"
}

// missedNote says where the quadrature grid misses the EBM's mass.
func missedNote(m *training.MissedMass) string {
	return fmt.Sprintf("beyond the quadrature grid, at %s (a training point or persistent chain), the EBM's density is e^%.4g times its largest on the grid: the grid misses mass there, so the EBM's weights, log Z and held-out log-likelihoods above are those of the grid's part (the EBM has a mode far from the data's bulk: outliers in the data, or training not converged)", fmtPoint(m.At), m.LogExcess)
}

// fmtAccept writes an acceptance rate, n/a (as sample writes it) for a
// kernel without such moves.
func fmtAccept(v float64) string {
	if isNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtPoint writes a mode centre; runs of equal coordinates are written
// once with their count ("1.39×8, −1.39×8"), so that the long centres of
// four-gaussians stay short and distinguishable.
// fmtCoord is a mode centre's coordinate: two decimals, or three
// significant digits from 1e6 on (a centre at 1e299 printed 300 digits).
func fmtCoord(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.3g", v)
	case a < 0.1 && a > 0: // probe 69 B5: 0.002, −0.001 and 0.003 all read 0.00 or -0.00; round 96 A3: 0.012, 0.014 read 0.01
		return fmt.Sprintf("%.2g", v)
	}
	return fmt.Sprintf("%.2f", v+0) // +0: no "-0.00" for −0
}

func fmtPoint(x []float64) string {
	scale := 0.0 // the point's own (round 96 A3: a unit floor zeroed a point at 1e-152)
	for _, v := range x {
		scale = max(scale, math.Abs(v))
	}
	x = slices.Clone(x)
	for i, v := range x {
		if math.Abs(v) < 1e-12*scale && math.Abs(v) < 1e-9 { // round 91 A2: cos(π/2) printed as 6.1e-17; −2.5e7 beside 1e299 kept
			x[i] = 0
		}
	}
	var parts []string
	for i := 0; i < len(x); {
		v := fmtCoord(x[i])
		j := i + 1
		for j < len(x) && fmtCoord(x[j]) == v {
			j++
		}
		if j-i > 2 {
			parts = append(parts, fmt.Sprintf("%s×%d", v, j-i))
		} else {
			for k := i; k < j; k++ {
				parts = append(parts, v)
			}
		}
		i = j
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// progressLines prints a progress line with rate and ETA every 10% of the
// run (for output that is not a terminal).
type progressLines struct {
	w            io.Writer
	total, start int
	t0           time.Time
	next         int
}

func (p *progressLines) update(it int) {
	if p.next == 0 {
		p.next = p.start + max(1, (p.total-p.start)/10)
	}
	if it < p.next && it != p.total {
		return
	}
	p.next += max(1, (p.total-p.start)/10)
	el := time.Since(p.t0)
	rate := float64(it-p.start) / el.Seconds()
	eta := time.Duration(float64(p.total-it) / rate * float64(time.Second))
	fmt.Fprintf(p.w, "iteration %d/%d (%.0f%%), %.1f it/s, elapsed %s, ETA %s\n", it, p.total, 100*float64(it)/float64(p.total), rate, el.Round(time.Second), eta.Round(time.Second))
}

// fixed3 prints v with 3 decimals, or in %g form when that would take more
// than a dozen digits (a diverged model's log-likelihood of −2e300).
// withError writes an estimate and its standard error, "v ± se": to 3
// decimals, or with two significant digits where the error is below them
// (probe 68 B8: log Z -8.1e-05 ± 2.0e-05 read "-0.000 ± 0.000").
// gridLogZNote is, in 2D, the grid quadrature's log Z beside the
// importance-sampling estimate z (round 85 A2: 2.3 standard errors apart,
// unsaid), with the held-out log-likelihood it gives where the two are
// more than 3 standard errors apart (round 86 A2: 6.5, 0.43 nats); "" for
// a grid without a finite log Z.
func gridLogZNote(z metrics.LogZEstimate, grid, gridErr, heldOut float64) string {
	if isNaN(grid) || math.IsInf(grid, 0) {
		return ""
	}
	note := "; by grid quadrature " + sig3(grid)
	if !gridLLShown(z, grid, gridErr) {
		return note
	}
	if z.Reliable() { // round 104 A2: which to trust was unsaid
		note += fmt.Sprintf(", %.1f standard errors away: importance sampling is off by more than its standard error says (its draws miss mass the grid counts); in 2D the grid's is the better estimate", math.Abs(z.LogZ-grid)/z.SE)
	}
	return note + fmt.Sprintf(": with it the held-out log-likelihood is %s", fixed3(heldOut+z.LogZ-grid))
}

// gridLLShown reports whether the held-out log-likelihood by the grid's
// log Z is shown beside the importance-sampling one: that estimate
// unreliable (round 96 A2: its log-likelihood alone), or more than 3
// standard errors from the grid's; either way farther than the grid's own
// error gridErr.
func gridLLShown(z metrics.LogZEstimate, grid, gridErr float64) bool {
	gap := math.Abs(z.LogZ - grid)
	return gap > gridErr && (!z.Reliable() || gap > 3*z.SE)
}

// sig3 is v to 3 decimals, or to 2 significant digits where it is
// smaller than they show (round 90 A3: a grid log Z of −2e-5 read
// "-0.000" beside the importance-sampling estimate's "-2.1e-05").
func sig3(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("%.2g", v)
	}
	return fixed3(v)
}

// essPercent is an ESS fraction in per cent, with two significant
// digits below 1% (round 82 B3: 1 draw in 4,096 read "0%").
func essPercent(f float64) string {
	if f > 0 && f < 0.01 {
		return fmt.Sprintf("%.2g%%", 100*f)
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func withError(v, se float64) string {
	if se > 0 && se < 5e-4 {
		return fmt.Sprintf("%.2g ± %.2g", v, se)
	}
	return fixed3(v) + " ± " + fixed3(se)
}

// count is "n things", "1 thing" (probe 70: "trained 1 iterations").
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func fixed3(v float64) string {
	if math.Abs(v) < 1e9 || math.IsNaN(v) {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// negWeight is the negatives' weight of zone k, "w ± MCSE" where the
// evaluation has its error.
func negWeight(e training.Eval, k int) string {
	if k < len(e.NegIntervals) && !math.IsNaN(e.NegIntervals[k].MCSE) {
		return fmt.Sprintf("%.3f ± %.3f", e.NegWeights[k], e.NegIntervals[k].MCSE)
	}
	return fmt.Sprintf("%.3f", e.NegWeights[k])
}

// chainWeight is ", sampler w ± MCSE [lo, hi]" for zone k, or "".
func chainWeight(e training.Eval, k int) string {
	if k >= len(e.ChainWeights) {
		return ""
	}
	return ", sampler " + fmtWeight(e.ChainWeights[k], 3, false)
}

// fmtWeight writes a zone's weight among MCMC draws as "w ± MCSE [lo,
// hi]" with digits decimals (and "(ESS n)" with ess). Where the draws give
// no error estimate (every draw in the zone, or none: the indicator never
// varies) it says so instead of printing NaN.
func fmtWeight(w diagnostics.Weight, digits int, ess bool) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', digits, 64) }
	if math.IsNaN(w.MCSE) || math.IsNaN(w.Lo) || math.IsNaN(w.Hi) {
		switch {
		case w.Weight == 1:
			return f(1) + " (every draw in this zone: no error estimate)"
		case w.Weight == 0:
			return f(0) + " (no draw in this zone: no error estimate)"
		}
		return f(w.Weight) + " (too few draws for an error estimate)"
	}
	s := fmt.Sprintf("%s ± %s [%s, %s]", f(w.Weight), f(w.MCSE), f(w.Lo), f(w.Hi))
	if ess {
		s += fmt.Sprintf(" (ESS %.0f)", w.ESS)
	}
	return s
}

// checkInputsOutside refuses a run folder dir that holds one of the run's
// inputs (data, modes, configuration, flow): the run writes dir, and
// --force replaces it.
func checkInputsOutside(f trainFlags, cfg config.Run, dir string) error {
	inputs := []struct{ flag, path string }{{"--data", f.data.File}, {"--modes", f.data.Modes}, {"--config", f.config}}
	if d := cfg.Data; d != nil { // a --config file's (probe 47: data.file in --out was replaced with --force)
		inputs = append(inputs, struct{ flag, path string }{"data.file (--config)", d.File}, struct{ flag, path string }{"data.modes (--config)", d.Modes})
	}
	if fo := cfg.Model.FlowONNX; fo != nil {
		inputs = append(inputs, struct{ flag, path string }{"--flow (model.flow_onnx.sample)", fo.Sample}, struct{ flag, path string }{"--flow-density (model.flow_onnx.density)", fo.Density})
	}
	for _, in := range inputs {
		if in.path == "" {
			continue
		}
		p := in.path // within follows a link outside the run to a file inside it, however long its target (probe 46)
		if !exists(p) {
			p = filepath.Dir(p)
		}
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && within(p, dir) {
			return fmt.Errorf("%s %s is inside the run folder %s, which this run writes (and --force replaces): move it out first", in.flag, in.path, dir)
		}
	}
	// The image files' folder, a folder itself (probe 18: --data-dir D
	// --out D --force was accepted).
	if d := cfg.DataDir; d != "" {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && within(d, dir) {
			return fmt.Errorf("--data-dir (data_dir) %s is the run folder %s or inside it, which this run writes (and --force replaces): give the run another --out", d, dir)
		}
	}
	return nil
}

// checkSeedsFolder refuses, as train --out does for one run, a --seeds
// folder that is a reproduce folder, that holds runs other than seeds'
// (sSEED), or (without force) other files (round 86 B9: the set landed
// among reproduce's runs, and a folder of other files took it unasked).
func checkSeedsFolder(base string, force bool) error {
	if isReproduceFolder(base) {
		return fmt.Errorf("--out %s is a folder that reproduce wrote (report.md, runs/): give the set a folder of its own", base)
	}
	var others []string
	for _, name := range visibleEntries(base) {
		if name == "seeds.json" || seedRunName.MatchString(name) {
			continue
		}
		if isTrainingRun(filepath.Join(base, name)) {
			return fmt.Errorf("--out %s holds the run %s, not of a --seeds set: give the set a folder of its own", base, name)
		}
		others = append(others, name)
	}
	if len(others) > 0 && !force {
		return fmt.Errorf("--out %s holds other files (%s): --seeds writes sSEED folders and seeds.json there; give a new or empty folder, or --force to write among them", base, listNames(others, 3))
	}
	return nil
}

// finishedUnreadableHead begins train --resume's advice for a finished
// run none of whose checkpoints reads (reproduce, which gives its own
// advice, cuts its child's last line there).
const finishedUnreadableHead = ": the run finished (its metrics.json and samples.npy stand), but no checkpoint of it can be read, so train --resume can neither check nor write its outputs again; "

// finishedUnreadableError is train --resume's refusal of a finished run
// none of whose checkpoints reads; it unwraps to the NothingToResumeError,
// whose callers (train --seeds) give their own advice (round 112 B1:
// --seeds relayed the --force of one run, which trains every seed again).
type finishedUnreadableError struct {
	none training.NothingToResumeError
	// model: its checkpoint's model files are whole (wholeModel), so
	// sample, energy and convert still use them (round 114 B2: said where
	// its COMPLETE was gone, and they refused it).
	model bool
}

func (e finishedUnreadableError) Error() string {
	use := "flowebm sample, energy and convert still use its model, whose own files are whole (a note says so); "
	if !e.model {
		use = "nor can flowebm sample, energy or convert use its model, whose files its checkpoint no longer vouches for: put back a whole copy of its checkpoint/ if you keep one; "
	}
	return e.none.Err.Error() + finishedUnreadableHead + use + strings.TrimPrefix(editedWay(e.none.Err), "; ") + map[bool]string{true: "; ", false: ""}[editedWay(e.none.Err) != ""] + "--force on the command line would train a new run in its place, and this one would be lost"
}

func (e finishedUnreadableError) Unwrap() error { return e.none }

// finishedOutputs reports whether the run folder dir holds a finished
// run's outputs: samples.npy (written last) and a metrics.json that reads.
func finishedOutputs(dir string) bool {
	if !exists(filepath.Join(dir, "samples.npy")) {
		return false
	}
	_, err := training.ReadMetrics(filepath.Join(dir, "metrics.json"))
	return err == nil
}

// sameDataFile reports whether the file at path has the SHA-256 that the
// run's data d records (the run's data file, moved there).
func sameDataFile(d *config.Data, path string) bool {
	if d == nil || d.SHA256 == "" || path == "" {
		return false
	}
	sum, err := safefile.SHA256(path)
	return err == nil && strings.EqualFold(sum, d.SHA256)
}

// unreliableISNote says which way an unreliable importance-sampling log Z
// (logZ) may be off: too low (mass its draws missed), or, where the grid's
// (gridZ, hasGrid) is lower, above it (round 113 A2: said too low where
// the grid's was lower).
func unreliableISNote(logZ, gridZ float64, hasGrid bool) string {
	if hasGrid && gridZ < logZ {
		return "so log Z may be far off: here it is above the grid's, and the log-likelihood it gives below"
	}
	return "so log Z may be far too low and the log-likelihood too high"
}

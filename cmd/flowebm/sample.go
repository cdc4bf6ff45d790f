package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

type sampleFlags struct {
	notes                      io.Writer // where notes go (the command's stderr; nil: os.Stderr)
	ranOff                     bool      // ULA's chains ran off (divergedNote)
	noted                      string    // R-hat's advice where strandedNote's notes say sampling longer does not help
	farFromBase                bool      // flowmc's own flow has not reached the draws, far from its base (flowBaseNote), in any global move
	cutAt                      int       // the draw from which a transient chain (strandedNote) is in the mass: R-hat's advice reads the draws from there
	model, flow, sampler, out  string
	flowDensity, flowOut       string  // ONNX flow: the density graph; where a trained flow goes
	flowBase                   float64 // ONNX flow: the base's σ (0: the files' metadata, else 1)
	trainFlow                  bool    // flowmc: train the --flow given during the warm-up
	patience                   int     // adaptive flowmc: windows without progress before the warm-up stops
	shards                     int     // row blocks of each batch (graph.Parallel)
	output                     string  // ONNX: the energy output
	logDensity                 bool    // ONNX: the output is log π
	chains, steps, warmup      int
	step, base                 float64
	leapfrog, particles, local int
	seed                       uint64
	force                      bool
	checkpoint, resume         string // the run's checkpoint file; a checkpoint to continue
	outGiven                   bool   // resumed with --out (elsewhere than recorded)
	checkpointEvery            int
	modes                      string                 // mode centres (k, d): weights with error bars
	starts                     string                 // the chains' starting points (chains, d) or (1, d)
	changed                    func(name string) bool // whether a flag was given
	args                       []string               // the flags given, for a checkpoint
	accepted                   *sysmem.Accepted       // the memory limit the run was accepted under (a resumed run: at its start)
}

func sampleCmd() *cobra.Command {
	var f sampleFlags
	cmd := &cobra.Command{
		Use:   "sample --model FILE --sampler mala|ula|hmc|flowmc|neutra --chains M --steps T --out CHAINS.npy",
		Short: "Sample an energy model with flowebm's MCMC kernels; chains ready for diagnose",
		Long: `sample runs M parallel chains on π ∝ exp(−E) and writes their T draws as a
(chains, draws, d) float64 .npy, ready for "flowebm diagnose" (a model of
images: each draw flattened in its (C, H, W) order; a.reshape(M, T, C, H, W)
restores them). It prints the acceptance and the largest rank-normalised
R-hat over dimensions.

MODEL is an .onnx energy network (π ∝ exp(−E(x)), tilted by N(0, σ² I) with
--base σ) or a flowebm checkpoint/run folder (π is its tilted EBM; draws are
written in the data's units when it was trained on standardised data).

Samplers: mala (step adapted towards acceptance 0.75 during --warmup, then
frozen), ula (no accept step: its draws are biased by --step, however long
it runs), hmc (--leapfrog steps), flowmc (one draw = one cycle of an
i-SIR move with --particles proposals from the flow, then --local MALA
moves) and neutra (MALA in the flow's latent space). neutra needs a flow:
the checkpoint's own, or --flow CHECKPOINT. flowmc without one is adaptive
(the paper's Alg. 5): a RealNVP at the identity over the chains' starting
Gaussian is trained on the chains' states during the --warmup cycles (a
maximum-likelihood step per cycle), then frozen for the draws kept; give
enough warm-up cycles for it to learn the modes. With --train-flow, the
flow of --flow is trained that way instead; --flow-out DIR writes the
trained flow as DIR/flow_sample.onnx and DIR/flow_density.onnx.

A flow exported from PyTorch is two ONNX files (docs/models-and-samplers.md,
io/onnx/crosscheck/export_flow.py): --flow SAMPLE.onnx (z → x, log q(x)
or log|det ∂x/∂z|) and --flow-density DENSITY.onnx (x → log q(x) [, z], or
x → z, log|det ∂z/∂x|: a flow library's transform as it is); its base N(0, σ²) is
the files' metadata, or --flow-base-sigma σ. Chains start from the
flow's samples when there is a flow (with mala, ula and hmc too, so --flow
sets their starts), otherwise from N(0, σ² I) (σ the base's, or 1); --starts
FILE gives them instead (an energy defined on part of the space only): an
array (chains, …) of one point per chain, or (1, …) or a 1-D array of d
values of one point for all.`,
		Args: positional(0, 0, "no arguments", "the model goes in --model, a checkpoint to continue in --resume"), // round 85 B11: "unknown command"
		RunE: func(cmd *cobra.Command, args []string) error { f.notes = cmd.ErrOrStderr(); return runSample(cmd, f) },
	}
	bindSampleFlags(cmd.Flags(), &f)
	return cmd
}

// bindSampleFlags defines sample's flags on fl, into f.
func bindSampleFlags(fl *pflag.FlagSet, f *sampleFlags) {
	fl.StringVar(&f.model, "model", "", "an .onnx energy network, or a checkpoint or run folder")
	fl.StringVar(&f.flow, "flow", "", "checkpoint whose flow proposes (flowmc, neutra) and, for every sampler, draws the chains' starts, or a flow's ONNX sampling graph (with --flow-density); default the model's own")
	fl.StringVar(&f.flowDensity, "flow-density", "", "the ONNX density graph of the flow whose sampling graph --flow gives")
	fl.Float64Var(&f.flowBase, "flow-base-sigma", 0, "σ of an ONNX flow's base N(0, σ² I) (0: the files' metadata, else 1)")
	fl.BoolVar(&f.trainFlow, "train-flow", false, "flowmc: train the flow of --flow on the chains' states during the warm-up, as without one")
	fl.IntVar(&f.patience, "patience", 5, "flowmc training its flow: stop the warm-up once global acceptance has not risen by 0.01 above its best since its lowest window for this many windows of 10 cycles (0: never stop early)")
	fl.StringVar(&f.flowOut, "flow-out", "", "flowmc trained during the warm-up: folder to write the trained flow to, as flow_sample.onnx and flow_density.onnx (a flow built here in the model's float type; one imported from ONNX in its own)")
	fl.StringVar(&f.sampler, "sampler", "mala", "mala, ula, hmc, flowmc or neutra")
	fl.StringVar(&f.out, "out", "", "output .npy (chains, draws, d)")
	fl.BoolVar(&f.force, "force", false, "replace the files of --out, --checkpoint and --flow-out that exist (a note names those besides --out)")
	fl.IntVar(&f.chains, "chains", 64, "parallel chains")
	fl.IntVar(&f.steps, "steps", 1000, "draws kept per chain")
	fl.IntVar(&f.warmup, "warmup", 200, "steps run before the kept draws (MALA adapts its step here)")
	fl.Float64Var(&f.step, "step", 0.01, "step size (Langevin η, HMC ε)")
	fl.Float64Var(&f.base, "base", 0, "σ of a Gaussian tilt N(0, σ² I) for an ONNX model (0: no tilt)")
	fl.IntVar(&f.leapfrog, "leapfrog", 10, "HMC leapfrog steps")
	fl.IntVar(&f.particles, "particles", 32, "i-SIR particles (flowmc)")
	fl.IntVar(&f.shards, "shards", config.DefaultShards, "row blocks each batch of chains is split into, evaluated on GOMAXPROCS cores at once (the draws depend on this number, never on the cores)")
	fl.IntVar(&f.local, "local", 4, "MALA moves per flowmc cycle")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed")
	fl.StringVar(&f.output, "output", "", "ONNX: the graph output holding the energy (needed when there are several)")
	fl.BoolVar(&f.logDensity, "log-density", false, "ONNX: the output is a log density; the energy is its negative")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "write the run's state to this .npz every --checkpoint-every steps (atomically), to continue it with --resume after an interruption")
	fl.IntVar(&f.checkpointEvery, "checkpoint-every", 100, "steps (or training cycles, at the end of a window of 10) between checkpoints; unless given, also at least 9 times as long as the last checkpoint took to write, so that writing takes at most a tenth of the run")
	fl.StringVar(&f.starts, "starts", "", "file of the chains' starting points, (chains, d) or one point (1, d) for all, in the draws' units (.npy, .npz, .csv): in place of normal draws or the flow's samples, for an energy defined on part of the space only")
	fl.StringVar(&f.modes, "modes", "", "file of mode centres (k, d) in the draws' units: print each mode's weight among the draws (nearest centre) with its MCSE and 95% interval")
	fl.StringVar(&f.resume, "resume", "", "continue the run whose checkpoint this is (give no other flag but --force, and --out to write the draws elsewhere), bit for bit")
	markPathFlags(fl, "model", "flow", "flow-density", "flow-out", "out", "checkpoint", "modes", "starts", "resume")
}

func runSample(cmd *cobra.Command, f sampleFlags) error {
	f.changed = cmd.Flags().Changed
	f, meta, arch, err := startFlags(cmd, f)
	if err != nil {
		return err
	}
	if arch != nil {
		defer arch.r.Close()
	}
	if err := f.checkOutputs(); err != nil {
		return err
	}
	replaced := f.forceReplaces() // named once the run is past its refusals (round 84 B3: named, then refused for another's lock)
	ck := new(sampleCheckpointState)
	var unmake atomic.Value // func(): removes the --flow-out folder made, if left empty
	defer removeTempsOnSignalNoting(func() string {
		if u, ok := unmake.Load().(func()); ok {
			u() // a signal skips the deferred removal (probe 25: an empty folder was left)
		}
		return f.resumeNote(ck, nil)
	})()
	if f.checkpoint != "" { // two runs writing one checkpoint would each lose the other's
		flag := "--checkpoint"
		if f.resume != "" { // probe 59: the lock of a resumed run named a flag not given
			flag = "--resume"
		}
		release, anchor, err := lockFileAnchored(flag, f.checkpoint, "sample")
		if err != nil {
			return err
		}
		defer release()
		ck.anchor = anchor
	}
	if meta != nil {
		if err := changedInputFiles(f.resume, meta); err != nil {
			return err
		}
	}
	m, inputs, err := f.modelsAndHashes()
	if err != nil {
		return err
	}
	if f.accepted == nil { // what it needs was checked against this limit, or a higher one just before
		f.accepted = sysmem.Accept(max(memoryLimit(maxWorkBytes), f.memoryNeed(m)))
	}
	centres, err := f.readModes(m)
	if err != nil && f.resume != "" { // round 134 B2: moved, no way on
		return fmt.Errorf("--resume %s: the run's %w (the run was started with that file: put it back there to continue)", f.resume, err)
	}
	if err != nil {
		return err
	}
	if err := f.recordModes(meta, inputs); err != nil {
		return err
	}
	if f.flowOut != "" {
		var made func()
		err := safefile.Hold(func() error { // made and registered for a signal as one step (probe 33)
			var err error
			if _, made, err = makeFolder(f.flowOut); err == nil {
				unmake.Store(made)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("--flow-out %s: %w", f.flowOut, err)
		}
		defer made() // removes the folder made if the run leaves it empty
	}
	pcg := rand.NewPCG(f.seed, 0x5a3)
	rng := rand.New(pcg)
	x, err := f.startPoints(rng, m, inputs)
	if err != nil {
		return err
	}
	where := "the chains' starts (normal draws)"
	switch {
	case f.starts != "":
		where = "the chains' starts (--starts " + f.starts + ")"
	case m.Flow != nil:
		where = "the chains' starts (the flow's samples)"
	}
	if err := checkAtPoints(m, x, where); err != nil { // a flow's samples: where the energy is defined
		return err
	}
	if len(replaced) > 0 { // round 82 B1: an interrupted run's checkpoint and a trained flow replaced unsaid
		besides := ", besides --out,"
		if !exists(f.out) { // round 131 B5: said of an --out not there
			besides = ""
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "flowebm: note: --force replaces%s %s\n", besides, strings.Join(replaced, " and "))
	}
	printUnchecked(cmd.ErrOrStderr(), m)
	if note := logDensityNote(f.model, m, onnx.Config{Output: f.output, LogDensity: f.logDensity}); note != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "flowebm: note:", note)
	}
	if meta == nil {
		if err := checkStarts(m, x); err != nil {
			return fmt.Errorf("--model %s: %w%s", f.model, err, f.startsAdvice(m, err))
		}
	}
	out := cmd.OutOrStdout()
	run, mala, err := f.newRun(rng, m, x, out)
	if err != nil {
		return err
	}
	if meta != nil {
		if err := restoreRun(f, meta, arch, inputs, pcg, run); err != nil {
			return err
		}
		if err := verifyCache(f.resume, run.state(), m.EBM, runProposal(run, m)); err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
		fmt.Fprintf(out, "resumed from %s\n", f.resume)
		if b := config.CurrentBuild(); meta.Build != nil && *meta.Build != b { // probe 59 B3: as train says
			fmt.Fprintf(cmd.ErrOrStderr(), "flowebm: note: the run was started with %s; resumed with %s: it will differ from an uninterrupted run at round-off\n", meta.Build, b)
		}
	}
	ck.outDir, _ = os.Stat(filepath.Dir(f.out)) // the --out folder, to place the draws in it and no other
	hook("sample-started")
	err = f.drive(rng, pcg, run, inputs, ck)
	if err == nil && f.sampler == "ula" { // its last draws' log density, which no step computed
		err = checkLastDraws(m, run.state())
	}
	if u := (*samplers.UndefinedError)(nil); errors.As(err, &u) { // a resume would go there again
		err := f.undefinedError(u)
		if f.checkpoint != "" && (ck.written.Load() || f.resume != "") { // probe 58: "nothing was written" beside the checkpoint it wrote
			err = fmt.Errorf("%w (the checkpoint %s holds the steps before, and a resume from it reaches the same point: ULA's steps are fixed by the seed)", err, f.checkpoint)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("%w%s", err, f.resumeNote(ck, err))
	}
	var graphs [][]byte
	if ar, ok := run.(*adaptiveRun); ok && f.flowOut != "" {
		if graphs, err = f.flowGraphs(ar.flow, m.Scaling, m.EBM.Params.Dtype() == tensor.Float32); err != nil {
			return err
		}
	}
	draws, loc, glob := run.Result()
	diverged := f.divergedNote(m, draws)
	f.ranOff = diverged != ""
	if diverged == "" {
		diverged, f.noted, f.cutAt = f.strandedNote(m, draws)
	}
	if err := f.finish(out, m, draws, loc, glob, mala, centres, graphs, ck); err != nil {
		return fmt.Errorf("%w%s", err, f.resumeNote(ck, err)) // its checkpoint holds the draws, or most of them
	}
	f.noteUndefinedGradients(cmd.ErrOrStderr(), run.gradUndefined())
	if diverged != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), diverged)
	}
	return nil
}

// strandedProbes is how many draws of each chain strandedNote evaluates.
const strandedProbes = 20

// strandedNote says which chains have draws where the energy is far above
// the lowest found among every chain's draws: any draw by more than
// 10⁴ + 10·d (round 102 A1: a MALA chain kept its 1000 draws at x < 0, a
// Gamma's outside where its energy is 1e30, unsaid, and R-hat's advice to
// sample longer could not move it), or every draw looked at by more than
// strandedStay(d) (round 103 A1: a placeholder of 1000 was not noted).
// Both are far beyond an equilibrium's fluctuations, about d/2: the
// model's density there is all but 0. It looks at strandedProbes draws of
// each chain, evenly spread; "" where none is.
func (f sampleFlags) strandedNote(m checkpoint.Models, draws []float64) (note, advice string, cut int) {
	d := m.EBM.Dim()
	if f.steps < 1 || len(draws) != f.chains*f.steps*d {
		return "", "", 0
	}
	k := min(strandedProbes, f.steps)
	pts := mat.NewDense(f.chains*k, d, nil)
	for c := range f.chains {
		for j := range k {
			i := j * (f.steps - 1) / max(k-1, 1)
			pts.SetRow(c*k+j, draws[(c*f.steps+i)*d:(c*f.steps+i+1)*d])
		}
	}
	e, grad := make([]float64, f.chains*k), mat.NewDense(f.chains*k, d, nil)
	inModel := m
	inModel.Scaling = nil                              // the draws are still in the model's coordinates (round 119 A2: taken for the data's, a standardised run's well-mixed chains were all "stranded")
	if energyInBatches(inModel, pts, e, grad) != nil { // the model's whole energy, in batches it takes
		return "", "", 0
	}
	if note := improperNote(e, pts, f.chains, k, m.EBM.Tilt == nil); note != "" { // round 133 B1: chains drifting outward, energy falling, said to have arrived, told to sample longer
		return note, "the chains are still moving outward, their energy falling or flat (said below): the density may be improper, where sampling longer takes them further", 0
	}
	mixedIn := func(j int) bool { return dimensionRHat(draws, f.chains, f.steps, d, j) < rhatMixed }
	if note := freeDimNote(grad, pts, f.chains, k, m.EBM.Tilt == nil, mixedIn); note != "" && !constant(e) { // an energy the same everywhere is a plateau, said below // round 136 A4: a free dimension beside a bound one, "sample longer"
		return note, "the chains wander along a dimension the energy does not depend on (said below): if the density is improper there, sampling longer takes them further; if it is bounded farther out than they have gone, larger steps (--step, where the warm-up does not adapt it) or sampling longer reach the bounds", 0
	}
	g := classifyChains(e, pts, f.chains, k, d, f.steps)
	still, moving := g.still, g.moving
	var notes []string
	plateau := len(still.names) == 0 && constant(e) && !math.IsNaN(e[0])
	if plateau { // round 125 A2: every chain on one plateau, nothing said
		notes = append(notes, fmt.Sprintf("flowebm: note: the energy is %.6g at every draw looked at of every chain, while they move: a plateau, where the gradient is 0 and no move is preferred; if it is a constant standing in for +Inf outside a support, the draws are not from the model: give --starts FILE with points inside the support (one per chain, or one for all), or %s, whose flow's moves jump; if the target is uniform there, the draws are from the model", e[0], flowmcAdvice(m)))
		if f.sampler == "ula" { // round 126 A3: chains started inside a support and stepped out in the warm-up were told to start inside
			notes[len(notes)-1] += "; ULA has no accept step, so its chains step out of a support as readily as into it (chains started inside leave it): --sampler mala or hmc reject such steps"
		}
	}
	for _, t := range []*transientChains{&g.came, &g.cameAbove, &g.coming} {
		if len(t.names) > 0 { // round 130 A2: one note for chains that arrived and one still coming, "not yet settled" for both
			t.warmup, t.ula = f.warmup, f.sampler == "ula"
			notes = append(notes, t.note(f.chains, f.steps, g.typ)+g.overlapNote(t))
		}
	}
	if len(still.names) > 0 {
		notes = append(notes, f.stillNote(still, strandedStay(d)))
	}
	if len(moving.names) > 0 {
		way := fmt.Sprintf("give --starts FILE with points inside the support, near the mass (one per chain, or one for all); for a shallower mode, %s, whose flow's moves jump between modes", flowmcAdvice(m))
		if f.sampler == "ula" { // round 125 A4: chains stepping out of a support and back; round 127 A3, 128 A3: either way alone failed one case
			way = "ULA has no accept step, so its chains step out of a support as readily as into it: where they started inside, --sampler mala or hmc, which reject such steps; where they started outside, --starts FILE with points inside the support too"
		}
		notes = append(notes, moving.note(f.chains, k, way))
	}
	switch { // round 140 A1: HMC's "modes apart: larger steps do not join them" of a transient on one mode
	case len(g.came.names) > 0: // R-hat of the draws after it, and its advice, in finish
		advice, cut = "a chain came in from far only after the first draws (said below), which raises R-hat: drop the draws before it came, as its note says", g.came.in
	case len(g.cameAbove.names) > 0:
		advice = "a chain came down from far only after the first draws (said below), which raises R-hat: drop the draws before it came, as its note says, and read R-hat of the rest (flowebm diagnose)"
	case len(g.coming.names) > 0:
		advice = "a chain is still coming in from far (said below), which raises R-hat: sample longer"
	}
	if len(still.names) > 0 || len(moving.names) > 0 || plateau {
		advice, cut = "the chains named below as never moving, stranded or out where the model's density is all but 0 are not set right by sampling longer: follow their note's advice", 0 // round 133 A2: beside a transient's "sample longer"
	}
	return strings.Join(notes, "\n"), advice, cut
}

// stillNote is strandedNote's line for the chains that never moved from
// their start: every proposal rejected, for a step too large there (the
// one given, or the one MALA's warm-up tuned on all the chains), at a
// start far out (more than stay above the lowest energy found) or not.
func (f sampleFlags) stillNote(still strandedChains, stay float64) string {
	step := fmt.Sprintf("the step, --step %v,", f.step)
	if f.stepAdapted() {
		step = "the step, tuned on all the chains during the warm-up,"
	}
	their := map[bool]string{true: "its", false: "their"}[len(still.names) == 1]
	from := their + " start"
	if f.warmup > 0 { // round 125 A5: a chain that moved in the warm-up, then stuck, "never moved from its start"
		from = fmt.Sprintf("where the %d warm-up steps left %s", f.warmup, map[bool]string{true: "it", false: "them"}[len(still.names) == 1])
	}
	if still.least > stay {
		return fmt.Sprintf("flowebm: note: %s never moved from %s, where the energy exceeds the lowest among the chains' draws by %.3g or more: every proposal was rejected there (%s is too large where the energy is that steep, or the start lies outside the support), so those draws are not from the model; give --starts FILE with points nearer the mass (one per chain, or one for all)", still.which(f.chains), from, still.least, step)
	}
	way := "give a smaller --step"
	if f.stepAdapted() { // round 116 A1: a smaller --step was tuned back up in the warm-up, the same chains stuck
		way = "--step only sets where the warm-up's tuning starts: give --starts FILE with points where the model has its mass (one per chain, or one for all), or --warmup 0 with a smaller --step (not tuned then: every chain takes it)"
		if f.sampler != "flowmc" {
			way += ", or --sampler flowmc, whose moves from a flow jump between modes"
		}
	}
	return fmt.Sprintf("flowebm: note: %s never moved from %s: every proposal was rejected (%s is too large for the model there), so those draws are not from the model; %s", still.which(f.chains), from, step, way)
}

// strandedChains are the chains strandedNote names, with how far above
// the lowest energy their draws looked at lie.
type strandedChains struct {
	names        []string
	share        int // draws beyond the threshold
	all          bool
	worst, least float64
	flat         bool // every such chain's energy constant
}

// add counts chain c (from 0) whose draws looked at lie gaps above the
// lowest energy, where any draw lies over far, every draw over stay, or,
// with others in the band within typ of the lowest, any over stay (a
// chain that was in the mass and stepped out of it; transients are taken
// before: transientOf).
func (s *strandedChains) add(c int, gaps []float64, far, stay, typ float64, flat bool) {
	n, over := 0, 0
	for _, g := range gaps {
		if g > far {
			n++
		}
		if g > stay {
			over++
		}
	}
	switch {
	case n > 0:
	case floats.Min(gaps) > stay || flat && floats.Min(gaps) > typ: // a plateau above the typical band is no mode (round 126 A5: 60 outside a box in d = 10, unsaid)
		n = len(gaps)
	case floats.Min(gaps) <= typ: // round 131 A4: a ULA chain 14% of its draws outside a support whose placeholder is 1000, unsaid
		n = over
	}
	if n == 0 {
		return
	}
	if s.names == nil {
		s.least, s.all, s.flat = math.Inf(1), true, true
	}
	s.names = append(s.names, strconv.Itoa(c))
	s.share += n
	s.all = s.all && n == len(gaps)
	s.worst, s.least = max(s.worst, floats.Max(gaps)), min(s.least, floats.Min(gaps))
	s.flat = s.flat && flat
}

// which is "chain 3 (of 16, …)" or "chains 0, 1, 2 (of 16, …)", of
// chains (0 or less: "chain 3", said before): indices along the draws'
// first axis, from 0 (round 116 A2: numbered from 1, a NumPy user looked
// at the wrong chains).
func (s *strandedChains) which(chains int) string {
	of := ""
	if chains > 0 { // else said before
		of = fmt.Sprintf(" (of %d, numbered from 0 as the draws' first axis)", chains)
	}
	if len(s.names) == 1 {
		return "chain " + s.names[0] + of
	}
	return "chains " + strings.Join(s.names, ", ") + of
}

// note is strandedNote's line for chains that moved (of chains, k draws
// looked at in each).
func (s *strandedChains) note(chains, k int, way string) string {
	where := fmt.Sprintf("draws where the energy exceeds the lowest among the chains' draws by up to %.3g (%d of the %d draws looked at)", s.worst, s.share, chains*k)
	if s.all {
		where = fmt.Sprintf("every draw looked at (%d a chain) where the energy exceeds the lowest among the chains' draws by %.3g or more", k, s.least)
		if s.flat {
			where += " and does not change as the chain moves: a plateau, where the gradient is 0 and no move is preferred"
		}
	}
	has := map[bool]string{true: "has", false: "have"}[len(s.names) == 1]
	// Round 130 A4: "does not move them", of a chain walking on a face
	// flat along one axis.
	longer := "sampling longer need not bring them back: the energy there need not pull them toward the mass (along a direction where it is flat, they walk at random)"
	if s.flat { // round 127 A2: on a plateau a chain walks at random, and may come back
		longer = "sampling longer brings them back only by a random walk's chance, which may take very long"
	}
	stranded := "stranded"
	if !s.all { // round 131 A4: chains stepping out and back
		stranded = "out"
	}
	// Round 132 A4: chains in a smooth mode 80 above the lowest were said
	// to be outside a support, on a placeholder.
	return fmt.Sprintf("flowebm: note: %s %s %s: %s where the model's density is all but 0 (outside its support, where an energy such as 1e30 or 1000 stands in for +Inf, or in a mode far shallower than the lowest found), those draws are not from the model's mass, and %s; %s", s.which(chains), has, where, stranded, longer, way)
}

// chainGroups are the chains strandedNote names, by what their draws
// looked at do, and the typical band it judged them by.
type chainGroups struct {
	still, moving           strandedChains
	came, cameAbove, coming transientChains
	typ                     float64
}

// improperNote says that the chains keep moving outward while their
// energy falls or stays flat: the median over chains of their mean
// distance from the origin over the second, third and last quarters of
// their draws looked at growing by a tenth from each to the next, and
// their mean energy over the last quarter not above that over the second
// (by 1), or their energy within 1.5 over all their draws looked at while
// they walk outward (flat): a density without a finite normaliser (an energy unbounded
// below, or flat far out), which no chain can sample, or a mass far out
// that the chains are still coming to (round 133 B1: an ONNX network
// exported without its base, sampled without --base: "came down, into
// the band … by draw 357", and "sample longer" took the chains further
// out; round 134 A2: a flat one, unsaid; A3: chains arrived at a far mass
// by the last quarter were called improper). untilted: the model has no
// base of its own, which --base adds. "" otherwise.
func improperNote(e []float64, pts *mat.Dense, chains, k int, untilted bool) string {
	if k < 8 || chains < 1 {
		return ""
	}
	var energy, dist [4][]float64 // each chain's mean energy, and distance from the origin, over each quarter of its draws looked at
	for c := range chains {
		for q := range 4 {
			var sum float64
			for j := q * k / 4; j < (q+1)*k/4; j++ {
				sum += floats.Norm(pts.RawRowView(c*k+j), 2)
			}
			energy[q] = append(energy[q], stat.Mean(e[c*k+q*k/4:c*k+(q+1)*k/4], nil))
			dist[q] = append(dist[q], sum/float64((q+1)*k/4-q*k/4))
		}
	}
	// Chains whose last draw looked at lies in the band above the lowest
	// energy found have arrived at a mass far out, if half of them have
	// (round 135 A4: 10 of 16 at x = 200 by the last quarter were
	// "improper … sampling longer takes them further").
	_, d := pts.Dims()
	lowest, typ, arrived := lowestEnergy(e), typicalGap(d, chains*k), 0
	for c := range chains {
		if e[c*k+k-1]-lowest <= typ {
			arrived++
		}
	}
	d2, d3, d4 := median(dist[1]), median(dist[2]), median(dist[3])
	outward := d3 > 1.1*d2 && d4 > 1.1*d3 && median(energy[3]) <= median(energy[1])+1 && 2*arrived < chains
	// Over a flat energy the chains walk at random, outward on the whole
	// but not from quarter to quarter (round 134 A2): their energy varies
	// by under 1.5 over all their draws looked at, where draws at
	// equilibrium vary by several (a Gamma(d/2, 1)'s spread), while their
	// distance from the origin grows by half from first quarter to last.
	flat := floats.Max(e)-floats.Min(e) < 1.5 && !constant(e) && d4 > 1.5*median(dist[0])
	if !outward && !flat {
		return ""
	}
	way := "check the energy further out along their way (flowebm energy): one that keeps falling, or stays flat, has no finite normaliser, and needs bounding (an added ‖x‖²/(2σ²) makes it proper)"
	if untilted {
		way = "if the model is a network exported without its base (flowebm convert's note names --base SIGMA), give --base SIGMA; else " + way
	}
	return fmt.Sprintf("flowebm: note: the chains keep moving outward, their energy falling or flat (their median distance from the origin %.3g over the first quarter of the draws looked at, %.3g over the last): the model's density may be improper, its energy unbounded below or flat far out, where no draw is at equilibrium and sampling longer takes the chains further; or its mass lies far out and they are still coming to it; %s", median(dist[0]), d4, way)
}

// freeDimNote says that the energy does not change along a dimension
// (its gradient there exactly 0 at every draw looked at, grad's rows)
// while the chains wander along it: the median over chains of their mean
// distance from their first draw looked at, in that dimension, growing by
// half from the first quarter of the draws looked at (the first itself
// left out) to the last, as a random walk's does, and the chains not
// mixed there (mixed: round 139 A2, chains spread over a box at R-hat
// 1.004 were called improper) (round 136 A4: a dimension left free beside
// a bound one, the density improper, was told to sample longer). The
// first such dimension is named; "" where none is.
func freeDimNote(grad, pts *mat.Dense, chains, k int, untilted bool, mixed func(j int) bool) string {
	if k < 8 || chains < 1 {
		return ""
	}
	_, d := pts.Dims()
	for j := range d {
		if !zeroColumn(grad, j) {
			continue
		}
		var first, last []float64
		for c := range chains {
			start := pts.At(c*k, j)
			var q1, q4 float64
			for i := range k / 4 {
				q1 += math.Abs(pts.At(c*k+i+1, j) - start)
				q4 += math.Abs(pts.At(c*k+k-1-i, j) - start)
			}
			first, last = append(first, q1), append(last, q4)
		}
		d1, d4 := median(first)/float64(k/4), median(last)/float64(k/4)
		if !(d4 > 1.5*d1 && d4 > 0) || mixed(j) {
			continue
		}
		way := "check the energy further out along it (flowebm energy): one that stays flat without end has no finite normaliser, and needs bounding (an added ‖x‖²/(2σ²) makes it proper)"
		if untilted {
			way = "if the model is a network exported without its base (flowebm convert's note names --base SIGMA), give --base SIGMA; else " + way
		}
		return fmt.Sprintf("flowebm: note: the energy does not change along dimension %d (numbered from 0; its gradient is 0 at every draw looked at) and the chains wander along it (their median distance from their first draw looked at, in it, %.3g over the first quarter of the draws looked at, %.3g over the last): the model's density may be improper in it, flat without end, where no draw is at equilibrium and sampling longer takes the chains further; or it is bounded farther out and they have not found the bounds yet; %s", j, d1, d4, way)
	}
	return ""
}

// dimensionRHat is the rank-normalised split R-hat of dimension j of the
// draws (chains × steps × d).
func dimensionRHat(draws []float64, chains, steps, d, j int) float64 {
	byChain := make([][]float64, chains)
	for c := range byChain {
		byChain[c] = make([]float64, steps)
		for i := range steps {
			byChain[c][i] = draws[(c*steps+i)*d+j]
		}
	}
	return diagnostics.RHat(byChain)
}

// zeroColumn reports whether column j of g is exactly 0 in every row.
func zeroColumn(g *mat.Dense, j int) bool {
	n, _ := g.Dims()
	for i := range n {
		if g.At(i, j) != 0 {
			return false
		}
	}
	return true
}

// lowestEnergy is the lowest of the energies e that are not NaN (+Inf
// where all are).
func lowestEnergy(e []float64) float64 {
	lowest := math.Inf(1)
	for _, v := range e {
		if !math.IsNaN(v) {
			lowest = min(lowest, v)
		}
	}
	return lowest
}

// median is the median of x (which it sorts).
func median(x []float64) float64 {
	sort.Float64s(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}

// overlapNote follows the note of chains that came into the band where
// others came down to a shallower mode above it: the band may hold such a
// mode too (round 131 A2: chains of one mode 15 above the lowest in
// d = 10, the band 19 wide, were split between both notes); "" otherwise.
func (g chainGroups) overlapNote(t *transientChains) string {
	if t.kind != arrivedInBand || len(g.cameAbove.names) == 0 {
		return ""
	}
	return fmt.Sprintf("; the band may hold a shallower mode too (%s came down to one up to %.3g above the lowest), and these chains may sit in it: R-hat and flowebm diagnose tell chains in other modes apart", g.cameAbove.which(-1), g.cameAbove.level)
}

// classifyChains sorts chains (k draws looked at in each, of steps, at
// points pts in d dimensions, energies e) into chainGroups by their gaps
// above the lowest energy among all of them.
func classifyChains(e []float64, pts *mat.Dense, chains, k, d, steps int) chainGroups {
	lowest := lowestEnergy(e)
	all := make([][]float64, chains)
	for c := range chains {
		all[c] = make([]float64, k)
		for j := range k {
			all[c][j] = e[c*k+j] - lowest
			if math.IsNaN(all[c][j]) {
				all[c][j] = math.Inf(1)
			}
		}
	}
	g := chainGroups{typ: typicalGap(d, chains*k), came: transientChains{kind: arrivedInBand},
		cameAbove: transientChains{kind: arrivedAbove}, coming: transientChains{kind: stillComing}}
	stay, far := strandedStay(d), 1e4+10*float64(d)
	for c, gaps := range all {
		if stuck(pts.Slice(c*k, (c+1)*k, 0, d).(*mat.Dense)) { // round 104 A1: a chain whose every proposal was rejected was "a plateau"; round 105 B6: named whatever its energy
			g.still.add(c, gaps, math.Inf(-1), math.Inf(-1), math.Inf(-1), false)
			continue
		}
		switch kind, from := transientOf(gaps, stay, g.typ); kind { // round 124 A1: a chain started far out and coming in was "stranded … sampling longer does not move them"
		case arrivedInBand:
			g.came.add(c, gaps, from, steps)
		case arrivedAbove:
			g.cameAbove.add(c, gaps, from, steps)
		case stillComing:
			g.coming.add(c, gaps, from, steps)
		default:
			g.moving.add(c, gaps, far, stay, g.typ, constant(e[c*k:(c+1)*k]))
		}
	}
	return g
}

// transient is what transientOf finds a chain's energy does.
type transient int

const (
	notTransient  transient = iota
	arrivedInBand           // came down into the typical band and stayed
	arrivedAbove            // came down from over strandedStay to a steady level above the band
	stillComing             // still coming down
)

// transientOf tells from a chain's draws looked at, gaps above the lowest
// energy found, whether its energy came down: from above the band within
// typ of the lowest into it, its draws looked at staying there from one
// on, the last three among them and no fall of typ over its second half
// (round 125 A1: chains 10 to 39 above the lowest, or still coming down,
// were said to have arrived); from over stay (strandedStay, all but no
// density there) to a steady level between the band and stay, another,
// shallower mode (round 130 A3: a fall from 320 to 20 in d = 2 was said
// nothing of); or along its draws (falling) by over typ (it is still
// coming down; round 125 A3: a chain falling from 1054 to 360 was
// "stranded"). from is the first draw looked at from which it stayed.
func transientOf(gaps []float64, stay, typ float64) (kind transient, from int) {
	k := len(gaps)
	if k < 4 || steppedOut(gaps, stay, typ) {
		return notTransient, 0
	}
	if from = stayedUnder(gaps, typ); gaps[0] > typ && from <= k-3 && gaps[k/2]-gaps[k-1] < typ { // round 129 A3: from under far, it was "not yet settled"
		return arrivedInBand, from
	}
	level := floats.Max(gaps[k/2:])
	if from = stayedUnder(gaps, min(level+typ, stay)); gaps[0] > stay && level <= stay && level-floats.Min(gaps[k/2:]) < typ && from <= k-3 {
		return arrivedAbove, from
	}
	if falling(gaps) && gaps[0]-gaps[k-1] > typ { // round 126: a ULA chain stepping out of a support and back is neither
		return stillComing, 0
	}
	if gaps[0] > typ && gaps[k-1] <= typ && gaps[0]-gaps[k-1] > typ { // round 135 A3: in the band by its last draws only, or still falling in it: named nowhere, beside others cut at draw 788
		return stillComing, 0
	}
	return notTransient, 0
}

// steppedOut reports whether a chain's gaps go over stay after one within
// typ: it was in the mass and left it, no transient (round 133 A2: a ULA
// chain back in a support for two draws looked at and out again was "a
// start far from the mass", told to start nearer it).
func steppedOut(gaps []float64, stay, typ float64) bool {
	in := false
	for _, g := range gaps {
		if in && g > stay {
			return true
		}
		in = in || g <= typ
	}
	return false
}

// stayedUnder is the first index from which every gap is at most bar
// (len(gaps) where the last is over it).
func stayedUnder(gaps []float64, bar float64) int {
	from := len(gaps)
	for from > 0 && gaps[from-1] <= bar {
		from--
	}
	return from
}

// transientChains are chains whose energy comes down along their draws
// from far above the lowest found: a start far from the mass, whose early
// draws are a transient, not a region they are stranded in.
type transientChains struct {
	strandedChains
	kind   transient
	warmup int     // the warm-up steps before the draws
	ula    bool    // ULA's chains (no accept step)
	in     int     // the draw from which every chain arrived stays
	first  float64 // the highest start above the lowest energy
	level  float64 // the highest level an arrivedAbove chain stays under
}

// add takes chain c (from 0), whose k draws looked at (of steps, evenly
// spaced) lie gaps above the lowest energy, arrived from draw looked at
// from on.
func (s *transientChains) add(c int, gaps []float64, from, steps int) {
	k := len(gaps)
	s.names = append(s.names, strconv.Itoa(c))
	s.first = max(s.first, gaps[0])
	s.in = max(s.in, from*(steps-1)/max(k-1, 1))
	s.level = max(s.level, floats.Max(gaps[k/2:]))
}

// falling reports whether gaps fall along a chain: at least three in four
// of the steps between draws looked at go down.
func falling(gaps []float64) bool {
	down := 0
	for i := 1; i < len(gaps); i++ {
		if gaps[i] < gaps[i-1] {
			down++
		}
	}
	return 4*down >= 3*(len(gaps)-1)
}

// typicalGap bounds how far above the lowest energy found the n draws
// looked at of chains at equilibrium lie, all but surely: the energy of a
// d-dimensional Gaussian's draw above its minimum is Gamma(d/2, 1)
// (χ²_d/2), and the band is its upper 1/(100·n) quantile, which all n lie
// under with probability 99% (round 130 A1: d/2 + 4·√(d/2) + 4, that
// quantile for n = 80, was crossed by some of 8192 chains at equilibrium,
// which were then called a transient).
func typicalGap(d, n int) float64 {
	return mathext.GammaIncRegCompInv(float64(d)/2, 0.01/float64(max(n, 1)))
}

// note is strandedNote's line for these chains (of chains, steps draws
// each; the band typ above the lowest energy).
func (s *transientChains) note(chains, steps int, typ float64) string {
	// Round 133 A2: chains started in the mass and thrown out of it in
	// ULA's warm-up were told of "a start far from the mass".
	started, far := "started", "a start far from the mass"
	if s.warmup > 0 {
		started = fmt.Sprintf("were, after the %d warm-up steps,", s.warmup)
		far = "a start far from the mass, or one the warm-up left far"
	}
	nearer := "start nearer the mass (--starts FILE)"
	if s.ula && s.warmup > 0 { // round 136 A7: said of chains started far with no warm-up
		nearer += "; chains started in the mass are thrown far by ULA's steps where the energy is steep (it has no accept step): --sampler mala or hmc, or a smaller --step"
	}
	if len(s.names) == 1 {
		started = strings.Replace(started, "were", "was", 1)
	}
	start := fmt.Sprintf("flowebm: note: %s %s where the energy exceeds the lowest among the chains' draws by up to %.3g and came down", s.which(chains), started, s.first)
	drop := fmt.Sprintf("the draws before are a transient (%s), not from the model; drop at least those (NumPy: x[:, %d:]) and check what is left with flowebm diagnose", far, s.in)
	switch s.kind {
	case stillComing:
		return fmt.Sprintf("%s along their draws, not yet settled: %s, whose draws are a transient, not from the model; sample longer (then drop the early draws), or %s", start, far, nearer)
	case arrivedAbove:
		return fmt.Sprintf("%s by draw %d of %d (of the draws looked at) to where it exceeds that lowest by up to %.3g, above the band where draws at equilibrium in the lowest mode lie (within %.3g of it): another, shallower mode, or a slow approach; %s (R-hat tells chains in other modes apart), or %s", start, s.in, steps, s.level, typ, drop, nearer)
	}
	return fmt.Sprintf("%s, into the band where draws at equilibrium lie by draw %d of %d (of the draws looked at): %s (chains in the band may not have settled yet), or %s", start, s.in, steps, drop, nearer)
}

// stuck reports whether the rows of x are all the same point.
func stuck(x *mat.Dense) bool {
	r, _ := x.Dims()
	for i := 1; i < r; i++ {
		if !floats.Equal(x.RawRowView(i), x.RawRowView(0)) {
			return false
		}
	}
	return r > 1
}

// constant reports whether the energies e are equal to round-off.
func constant(e []float64) bool {
	return floats.Max(e)-floats.Min(e) <= 1e-9*(1+math.Abs(e[0]))
}

// strandedStay is how far above the lowest energy found every draw of a
// chain must lie for strandedNote: 50 + 5·d, where a chain at equilibrium
// (energy about d/2 above its minimum, give or take √(d/2)) all but never
// goes, and a mode of other width than the lowest one's (a log volume up
// to 5 per dimension) is not taken for one.
func strandedStay(d int) float64 { return 50 + 5*float64(d) }

// divergedNote says that ULA's chains ran off: the energy at a chain's
// last draw passes its first draw's by more than 10⁴ + 10·d, far beyond
// an equilibrium's fluctuations (about d/2). ULA never rejects a step,
// and at too large a --step its chains run off while staying finite
// (round 76 B4: draws of |x| = 3e61 written at exit 0, unsaid).
func (f sampleFlags) divergedNote(m checkpoint.Models, draws []float64) string {
	d := m.EBM.Dim()
	if f.sampler != "ula" || f.steps < 2 || len(draws) != f.chains*f.steps*d {
		return ""
	}
	ends := mat.NewDense(2*f.chains, d, nil)
	for c := range f.chains {
		chain := draws[c*f.steps*d : (c+1)*f.steps*d]
		ends.SetRow(2*c, chain[:d])
		ends.SetRow(2*c+1, chain[len(chain)-d:])
	}
	e, g := make([]float64, 2*f.chains), mat.NewDense(2*f.chains, d, nil)
	inModel := m
	inModel.Scaling = nil // the draws are in the model's coordinates
	if err := energyInRows(inModel, ends, e, g, energyRows(inModel, true)); err != nil {
		return ""
	}
	worst, rise := -1, 1e4+10*float64(d)
	for c := range f.chains {
		// A last draw where the gradient is 0 stepped out of a support
		// onto a placeholder (strandedNote says so), not off to where
		// the energy keeps rising (round 132 A2: 1e30 outside a
		// half-space was "ran off: lower --step", which left 19% of the
		// draws outside).
		if r := e[2*c+1] - e[2*c]; r > rise && floats.Norm(g.RawRowView(2*c+1), 2) > 0 {
			worst, rise = c, r
		}
	}
	if worst < 0 {
		return ""
	}
	return fmt.Sprintf("flowebm: note: --sampler ula: the energy of chain %s rose by %.3g from its first draw to its last (%.4g): the chains ran off (ULA never rejects a step), and the draws are not from the model; lower --step (%v), or use an adjusted sampler (mala, hmc)", chainIndex(worst), rise, e[2*worst+1], f.step)
}

// noteUndefinedGradients says that n proposals were rejected because the
// model's gradient was NaN or infinite where its energy is finite: the
// chains never went there, and the draws leave out whatever mass that
// region has (probe 57: 76% of a target, at exit 0 and without a word).
func (f sampleFlags) noteUndefinedGradients(w io.Writer, n int) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "flowebm: note: %d proposals reached points where the energy of --model %s is finite but its gradient is NaN or infinite, and were rejected: the chains never go there, so if such points have probability mass, the draws miss it (flowebm energy --grad at them shows where)\n", n, f.model)
}

// drive runs the steps left, writing a checkpoint every --checkpoint-every
// steps (where that loses nothing) if --checkpoint is given; unless the
// flag was given, a checkpoint also waits 9 times as long as the last one
// took to write (checkpointDue). Where checkpoints fall changes no draw.
func (f sampleFlags) drive(rng *rand.Rand, pcg *rand.PCG, run sampleRun, inputs map[string]string, ck *sampleCheckpointState) error {
	since, written := 0, false
	var pace checkpointPace
	for !run.Finished() {
		if err := run.Step(rng); err != nil {
			return err
		}
		if since++; f.checkpoint != "" && since >= f.checkpointEvery && run.safe() && !run.Finished() && (f.changed("checkpoint-every") || pace.due(time.Now())) {
			pace.start(time.Now())
			// The first checkpoint replaces no file (unless --force or
			// --resume): another run given the same --checkpoint since
			// this one started is stopped, not overwritten.
			replace := written || f.force || f.resume != ""
			// Written and told as one step: a signal's note names the
			// checkpoint once it is in place (probe 35: placed, unnamed).
			if err := safefile.Hold(func() error {
				err := training.Through(filepath.Dir(f.checkpoint), ck.anchor, func(dir string) error {
					return writeSampleCheckpoint(filepath.Join(dir, filepath.Base(f.checkpoint)), replace, f.args, inputs, f.accepted, pcg, run)
				})
				if moved := (*fileFolderChangedError)(nil); errors.As(err, &moved) {
					ck.moved.Store(true)
					c := *moved
					c.noCheckpoint = !written
					if filepath.Dir(f.out) == filepath.Dir(f.checkpoint) { // --out went with it (probe 53)
						c.extra = " --out NEW.npy"
					}
					err = &c
				}
				if err != nil {
					return err
				}
				hook("sample-checkpoint-placed")
				ck.written.Store(true)
				return nil
			}); err != nil {
				return err
			}
			written = true
			pace.end(time.Now())
			hook("sample-checkpoint")
			since = 0
		}
	}
	return nil
}

// checkpointPace spaces the checkpoints of a run by the time they take:
// each rewrites every draw kept so far, so that at a fixed interval the
// writing grew with the square of the draws (probe 60: 64 chains × 60000
// steps took 125 s with --checkpoint, 17.6 s without). A checkpoint is due
// once 9 times the last one's writing time has passed since it ended: the
// writing takes at most a tenth of the run.
type checkpointPace struct {
	began, ended time.Time
	took         time.Duration
}

func (p *checkpointPace) due(now time.Time) bool {
	return p.ended.IsZero() || now.Sub(p.ended) >= 9*p.took
}
func (p *checkpointPace) start(now time.Time) { p.began = now }
func (p *checkpointPace) end(now time.Time)   { p.ended, p.took = now, now.Sub(p.began) }

// sampleCheckpointState is what a sampling run has written of its
// --checkpoint and its outputs, read by the interrupt handler.
type sampleCheckpointState struct {
	written atomic.Bool // a checkpoint of this run is in place
	placed  atomic.Bool // the outputs are all in place
	moved   atomic.Bool // the checkpoint's folder is no longer at its path
	outGone atomic.Bool // the --out folder is no longer the one it was
	// taken is the flag whose output another process wrote meanwhile
	// ("" if none).
	taken atomic.Value
	// anchor is the checkpoint's folder as it was locked: checkpoints
	// are written through it (lockFileAnchored).
	anchor training.Anchor
	// outDir is the --out folder as sampling started.
	outDir os.FileInfo
}

// resumeNote is what an interrupted or failed sampling run leaves to go on
// from: its --checkpoint, once this run wrote one (or resumed from it; a
// file that --force is to replace is another run's until then).
// Once the outputs are in place there is nothing to go on with (probe 23:
// the command printed then failed with "--out … exists"); they are put in
// place all or none. err, the failure (nil for a signal), shapes the
// advice.
func (f sampleFlags) resumeNote(ck *sampleCheckpointState, err error) string {
	switch {
	case f.checkpoint == "" || !(ck.written.Load() || f.resume != "") || ck.moved.Load(): // moved: its error says where the checkpoint is
		return ""
	case ck.placed.Load():
		return fmt.Sprintf("; the draws are all written, to %s: nothing is left to resume", f.out)
	}
	force := ""
	if f.force { // the outputs it was told to replace are still refused without it (probe 34)
		force = " --force"
	}
	taken, _ := ck.taken.Load().(string)
	if ck.outGone.Load() || taken == "--out" { // probe 52, 67 B2: the advice without it was refused
		force += " --out NEW.npy"
	}
	first := ""
	switch {
	case errors.Is(err, syscall.ENOSPC): // round 82 B2: the advice, followed on the full disk, failed the same way
		first = "free space on the disk it filled, then "
	case taken == "--flow-out" && !f.force: // --resume cannot name another
		first = fmt.Sprintf("move the files another process wrote to --flow-out %s away, then ", shellQuote(f.flowOut))
	}
	return fmt.Sprintf("; the checkpoint %s stands: %scontinue with: flowebm sample --resume %s%s", f.checkpoint, first, shellQuote(f.checkpoint), force)
}

// finish checks and writes the draws (telling ck), and prints the summary.
func (f sampleFlags) finish(out io.Writer, m checkpoint.Models, draws []float64, loc, glob float64, mala *samplers.MALA, centres [][]float64, graphs [][]byte, ck *sampleCheckpointState) error {
	d := m.EBM.Dim()
	if err := checkFinite(draws, f, d); err != nil {
		return err
	}
	scales := f.scales(m, draws, d)
	mx := mixingOf(draws, f.chains, f.steps, d, true) // in the coordinates the steps are taken in; every dimension's R-hat, for the modes-apart check (round 141 A1: MALA's too)
	if m.Scaling != nil {
		m.Scaling.ToDataInPlace(draws)
	}
	arr := &npy.Array{Shape: []int{f.chains, f.steps, d}, Data: draws}
	if err := f.writeOutputs(arr, graphs, ck); err != nil {
		return err
	}
	if graphs != nil {
		fmt.Fprintf(out, "trained flow written to %s and %s\n", f.flowOutputs()[0], f.flowOutputs()[1])
	}
	fmt.Fprintf(out, "%s: %s × %s × %s written to %s\n", f.sampler, count(f.chains, "chain"), count(f.steps, "draw"), count(d, "dim"), f.out)
	if mala != nil && !math.IsNaN(loc) { // flowMC without local moves has a MALA it never ran
		if f.warmup == 0 { // round 86 A6: "after warm-up" of none
			fmt.Fprintf(out, "MALA step size %.4g (no warm-up)\n", mala.StepSize)
		} else {
			fmt.Fprintf(out, "MALA step size %.4g after warm-up\n", mala.StepSize)
		}
	}
	local := pct(loc)
	if f.sampler == "ula" { // round 76 B5: "local 1.00", as train said before probe 67 B7
		local = "n/a (unadjusted Langevin: no accept step)"
	}
	fmt.Fprintf(out, "acceptance: local %s, global %s\n", local, pct(glob))
	if f.sampler == "ula" { // round 118 A1: sd 1.08 for 1.00 at --step 0.2, R-hat 1.006, unsaid
		in := ""
		if identityOrNil(m.Scaling) != nil { // round 119 A3: the step acts in the standardised coordinates (round 120 A3: not for --standardize none)
			in = " in the model's standardised coordinates, where the chains move"
		}
		fmt.Fprintf(out, "note: ULA's draws are biased by its step however long it runs, and R-hat cannot show it (a Gaussian of variance s²%s is sampled with variance s²/(1 − η/(2s²)), η = --step %v): for draws of the model itself use mala or hmc, or check that a smaller --step leaves the moments you need unchanged\n", in, f.step)
	}
	far := f.flowBaseNote(m, draws, d)
	f.farFromBase = far != "" && glob < 0.01 // round 139 A1: at global acceptance 0.12 a longer warm-up with --patience 0 did bring it there (R-hat 1.976 → 1.020)
	worst := printRHat(out, draws, f.chains, f.steps, d, f.afterTransient(m, loc, draws, d, f.notMixedAdvice(m, loc, mx))+scales+far)
	caveat := ""
	if far != "" && worst < rhatMixed && glob < 0.01 {
		// Round 91 A1: every chain slid into the mode nearest its start,
		// the flow never reached one, and R-hat, 1.004, could not see it.
		caveat = "; the flow's global moves were never accepted and the draws lie far from its base, so the chains may each sit in the mode nearest their start, which R-hat cannot see: these are not to be trusted"
		fmt.Fprintf(out, "note: no global move was accepted (%.2g)%s\n", glob, far)
	}
	return f.printModeWeights(out, draws, d, centres, worst, caveat)
}

// printModeWeights prints each --modes centre's weight among the draws,
// with its Monte Carlo standard error and 95% interval.
func (f sampleFlags) printModeWeights(out io.Writer, draws []float64, d int, centres [][]float64, rhat float64, caveat string) error {
	if centres == nil {
		return nil
	}
	if !(rhat < rhatMixed) { // round 83 A3: intervals beside R-hat 1.545, unsaid
		caveat = fmt.Sprintf("; R-hat %.3f: the chains have not mixed, so these are not to be trusted", rhat)
	}
	weights := diagnostics.ChainModeWeights(draws, f.chains, f.steps, d, centres)
	if caveat == "" {
		caveat = f.unreachedModes(draws, d, centres, weights)
	}
	fmt.Fprintf(out, "mode weights (nearest centre of %s; ± MCSE from the ESS of each zone's indicator or of the chains' means, whichever is smaller, 95%% interval%s):\n", f.modes, caveat)
	for k, w := range weights {
		fmt.Fprintf(out, "  mode %d at %s: %s\n", k+1, fmtPoint(centres[k]), fmtWeight(w, 4, true))
	}
	return nil
}

// unreachedModes is the caveat of mode weights where some centre's zone
// got no draw while every chain's first draw lay in one zone: R-hat, which
// compares the chains, cannot see a mode none of them reached, so a
// weight of 0 may be a mode never found rather than one without mass
// (round 136 A5: every chain started at one point, a mode at 0 unsaid);
// "" otherwise.
func (f sampleFlags) unreachedModes(draws []float64, d int, centres [][]float64, weights []diagnostics.Weight) string {
	if f.chains < 1 || f.steps < 1 || len(draws) < f.chains*f.steps*d {
		return ""
	}
	var empty []string
	for k, w := range weights {
		if w.Weight == 0 {
			empty = append(empty, strconv.Itoa(k+1))
		}
	}
	if len(empty) == 0 {
		return ""
	}
	first := diagnostics.NearestMode(draws[:d], centres)
	for c := 1; c < f.chains; c++ {
		if diagnostics.NearestMode(draws[c*f.steps*d:c*f.steps*d+d], centres) != first {
			return ""
		}
	}
	return fmt.Sprintf("; mode %s got no draw, and every chain's first draw lay in mode %d's zone: R-hat, which compares the chains, cannot see a mode none of them reached, so a weight of 0 may be a mode the chains never found rather than one without mass; start the chains spread over the modes (--starts, one point per chain) to tell", strings.Join(empty, ", "), first+1)
}

// maxModes bounds --modes' centres.
const maxModes = 1000

// readModes reads --modes: k ≤ maxModes finite, distinct centres of the
// model's dimension, from .npy, .npz or .csv (checked from its header
// first where the format has one), in any shape the model's points take
// (k, …), as --starts (round 98 A2: (k, C, H, W) refused for an image
// model); nil without --modes.
func (f sampleFlags) readModes(m checkpoint.Models) ([][]float64, error) {
	if f.modes == "" {
		return nil, nil
	}
	d := m.EBM.Dim()
	if err := oneArray(f.modes); err != nil {
		return nil, fmt.Errorf("--modes %s: %w", f.modes, err)
	}
	if shape, err := data.PointsShape(f.modes, ""); err != nil {
		return nil, fmt.Errorf("--modes %s: %w", f.modes, err)
	} else if shape != nil && (len(shape) < 2 || shape[0] > maxModes) {
		return nil, fmt.Errorf("--modes %s: shape %v, want (k, %d) with 1 ≤ k ≤ %d centres (or (k, …) in the model's point shape)", f.modes, shape, d, maxModes)
	} else if err := checkPointShape("", shape[min(1, len(shape)):], f.model, m); len(shape) > 1 && err != nil {
		return nil, fmt.Errorf("--modes %s: %w", f.modes, err)
	}
	x, _, err := data.ReadPoints(f.modes, "")
	if err != nil {
		return nil, fmt.Errorf("--modes %s: %w", f.modes, err)
	}
	if r, c := x.Dims(); c != d || r < 1 || r > maxModes {
		return nil, fmt.Errorf("--modes %s: %d centres of dimension %d, want 1 to %d of dimension %d (the model's)", f.modes, r, c, maxModes, d)
	}
	r, _ := x.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = mat.Row(nil, i, x)
		for j, v := range out[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("--modes %s: centre %d holds %v in coordinate %d, want finite values", f.modes, i+1, v, j+1)
			}
		}
		for k := 0; k < i; k++ {
			if slices.Equal(out[k], out[i]) {
				return nil, fmt.Errorf("--modes %s: centres %d and %d are equal", f.modes, k+1, i+1)
			}
		}
	}
	return out, nil
}

// recordModes records the SHA-256 of --modes among the run's inputs, so
// that --resume checks it (round 134 B2: centres edited in place were
// taken), but for a checkpoint written before it was recorded (meta, of
// --resume, without it).
func (f sampleFlags) recordModes(meta *sampleMeta, inputs map[string]string) error {
	if f.modes == "" {
		return nil
	}
	abs, err := filepath.Abs(f.modes)
	if err != nil {
		return err
	}
	if meta != nil {
		if _, ok := meta.Inputs[abs]; !ok {
			return nil
		}
	}
	return modelSums(inputs).record(f.modes, func() (string, error) { return hashFiles(f.modes) })
}

// startPoints are the chains' starting points: those of --starts (its
// SHA-256 recorded in sums, for --resume), or chainStarts' draws.
func (f sampleFlags) startPoints(rng *rand.Rand, m checkpoint.Models, sums modelSums) (*mat.Dense, error) {
	if f.starts == "" {
		return chainStarts(rng, m, f.chains)
	}
	x, err := readStarts(f.starts, f.chains, f.model, m)
	if err != nil && f.resume != "" { // the file it was started from (probe 55: moved, the message named neither)
		return nil, fmt.Errorf("--resume %s: the run's --starts %s: %w (the run was started from that file: put it back there to continue)", f.resume, f.starts, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--starts %s: %w", f.starts, err)
	}
	return x, sums.record(f.starts, func() (string, error) { return hashFiles(f.starts) })
}

// readStarts reads the chains' starting points from path: one per chain,
// or one for all; in the model's units.
func readStarts(path string, chains int, model string, m checkpoint.Models) (*mat.Dense, error) {
	d := m.EBM.Dim()
	if err := oneArray(path); err != nil {
		return nil, err
	}
	if shape, err := data.PointsShape(path, ""); err != nil {
		return nil, err
	} else if len(shape) == 1 {
		return readStartVector(path, shape[0], chains, m)
	} else if err := checkPointShape("", shape[min(1, len(shape)):], model, m); len(shape) > 1 && err != nil { // probe 55: (n, H, W, C) taken for (n, C, H, W); round 86 A6: before the count
		if len(shape) == 3 && shape[2] == d {
			return nil, fmt.Errorf("shape %v is that of draws (chains, draws, d), as sample writes them, not of points: give one point per chain, such as the last draws (NumPy: numpy.save(FILE, x[:, -1]))", shape)
		}
		return nil, err
	} else if len(shape) > 0 && shape[0] != 1 && shape[0] != chains { // before reading it
		return nil, fmt.Errorf("%d points, want one per chain (%d) or one for all", shape[0], chains)
	}
	p, _, err := data.ReadPoints(path, "")
	if err != nil {
		return nil, err
	}
	r, c := p.Dims()
	if c != d || (r != 1 && r != chains) {
		return nil, fmt.Errorf("%d points of dimension %d, want one per chain (%d) or one for all, of dimension %d (the model's)", r, c, chains, d)
	}
	return startsOf(p, chains, m)
}

// readStartVector reads a 1-D array of n values as starts (round 121 A2:
// numpy.save(FILE, x0) of one point was refused): d values are one point
// for every chain; for d = 1, n values are one per chain (n = chains) or
// one for all (n = 1).
func readStartVector(path string, n, chains int, m checkpoint.Models) (*mat.Dense, error) {
	d := m.EBM.Dim()
	rows := 0
	switch {
	case d > 1 && n == d:
		rows = 1
	case d == 1 && (n == 1 || n == chains):
		rows = n
	default:
		return nil, fmt.Errorf("shape (%d,): a 1-D array of %d values, want %d (one point of the model's dimension, for every chain), or an array of shape (chains, %d) = (%d, %d) or (1, %d)", n, n, d, d, chains, d, d)
	}
	a, err := data.ReadArray(path, "")
	if err != nil {
		return nil, err
	}
	return startsOf(mat.NewDense(rows, d, a.Data), chains, m)
}

// startsOf repeats p's single row for every chain, or takes its rows one
// per chain, checked finite, in the model's units.
func startsOf(p *mat.Dense, chains int, m checkpoint.Models) (*mat.Dense, error) {
	r, d := p.Dims()
	x := mat.NewDense(chains, d, nil)
	for i := range chains {
		row := p.RawRowView(min(i, r-1))
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("point %d holds %v in coordinate %d, want finite values", min(i, r-1)+1, v, j+1)
			}
		}
		x.SetRow(i, row)
	}
	if m.Scaling != nil {
		x = m.Scaling.FromData(x) // the draws' units are the data's
	}
	return x, nil
}

// oneArray refuses an .npz file of several arrays where a flag takes one
// array and has no --key to choose it (probe 55: --starts read the first
// of {seed, starts}).
func oneArray(path string) error {
	if strings.ToLower(filepath.Ext(path)) != ".npz" {
		return nil
	}
	names, err := data.NPZNames(path)
	if err != nil || len(names) <= 1 {
		return err
	}
	return fmt.Errorf("holds %d arrays (%s): give a file of one array (numpy.save, or numpy.savez with one)", len(names), strings.Join(names, ", "))
}

// startsAdvice follows a refusal of the chains' starting points drawn by
// flowebm: an energy defined on part of the space only needs starts
// inside it (probe 54: a logit-of-pixels energy, NaN at normal draws,
// could not be sampled, and the message blamed its weights).
func (f sampleFlags) startsAdvice(m checkpoint.Models, err error) string {
	if errors.Is(err, graph.ErrNoInputGradient) { // round 126 B3: no start helps an energy without a gradient
		return ""
	}
	if f.starts != "" { // probe 58: blamed on the model alone
		return fmt.Sprintf(". The chains start at the points of --starts %s: move that point", f.starts)
	}
	if u := (*gradUndefinedError)(nil); errors.As(err, &u) {
		return ""
	}
	from := "normal draws"
	if m.Flow != nil {
		from = "the flow's samples"
	}
	return fmt.Sprintf(". The chains start at %s: for an energy defined on part of the space only (pixels in (0, 1), x > 0), give --starts FILE with points inside it (one per chain, or one for all)", from)
}

// undefinedError says that ULA's chain u stepped where the energy is NaN
// or infinite: outside the model's domain, or (a point far out, an
// energy of +Inf) diverged; nothing is written.
func (f sampleFlags) undefinedError(u *samplers.UndefinedError) error {
	if u.GradOnly {
		at := fmtPoint(u.Point)
		if len(u.Point) > 10 { // probe 58: 784 coordinates
			at = fmtPoint(u.Point[:10]) + fmt.Sprintf(" (its first 10 of %d coordinates)", len(u.Point))
		}
		return fmt.Errorf("--sampler %s: chain %s reached the point %s, where the energy is %v but its gradient is NaN or infinite; no draws were written: an adjusted sampler (mala, hmc) rejects steps to such points, and says how many it rejected", f.sampler, chainIndex(u.Chain), at, -u.LogP)
	}
	far := math.IsInf(u.LogP, -1)
	for _, v := range u.Point {
		far = far || !(math.Abs(v) < 1e100)
	}
	if far {
		return fmt.Errorf("--sampler %s: chain %s reached a point where the energy is %v: the chains diverged, no draws were written; lower --step (%v) or use an adjusted sampler (mala, hmc)", f.sampler, chainIndex(u.Chain), -u.LogP, f.step)
	}
	return fmt.Errorf("--sampler %s: chain %s stepped to a point where the energy is %v, outside the model's domain (ULA never rejects a step, and the gradient can be finite there); no draws were written: use an adjusted sampler (mala, hmc), which rejects such steps (a smaller --step, %v here, only makes such a step rarer: over enough steps a chain near the domain's edge takes one all the same)", f.sampler, chainIndex(u.Chain), -u.LogP, f.step) // round 139 A3: --step 0.001 failed the same way at 3000 steps
}

// checkLastDraws returns an UndefinedError where the log density of a
// chain's last point s.X is NaN or ±Inf.
func checkLastDraws(m checkpoint.Models, s *samplers.State) error {
	logp := make([]float64, s.Chains())
	if err := m.EBM.LogDensity(s.X, logp); err != nil {
		return err
	}
	return samplers.CheckDefined("ULA", s.X, logp)
}

// runProposal is the flow whose densities the run's state caches.
func runProposal(run sampleRun, m checkpoint.Models) samplers.Proposal {
	if ar, ok := run.(*adaptiveRun); ok {
		return ar.flow
	}
	if m.Flow == nil {
		return nil
	}
	return m.Flow
}

// startFlags are the flags of a new run (recorded for its checkpoints),
// or those a resumed checkpoint records, with the checkpoint opened.
func startFlags(cmd *cobra.Command, f sampleFlags) (sampleFlags, *sampleMeta, *ckptReader, error) {
	if f.resume != "" {
		return resumeFlags(cmd, f)
	}
	var err error
	f.args, err = recordedArgs(cmd.Flags())
	return f, nil, nil, err
}

// pathFlags are the flags that name files: a checkpoint records them
// absolute, so that --resume works from any folder.
var pathFlags = []string{"model", "flow", "flow-density", "flow-out", "out", "checkpoint", "modes", "starts"}

// recordedArgs are the flags given (but --force), as a checkpoint
// records them.
func recordedArgs(fl *pflag.FlagSet) ([]string, error) {
	var args []string
	var err error
	fl.Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if slices.Contains(pathFlags, f.Name) && v != "" {
			var abs string
			if abs, err = filepath.Abs(v); err == nil {
				v = abs
			}
		}
		if f.Name != "force" {
			args = append(args, "--"+f.Name+"="+v)
		}
	})
	return args, err
}

// resumeFlags reads the checkpoint of --resume and the flags it was
// started with; --force and --out (the draws written elsewhere: probe 47,
// the folder recorded had become a training run's, and no way was left
// to finish) are the only other flags allowed. The run goes on writing
// its checkpoints into the file resumed.
func resumeFlags(cmd *cobra.Command, given sampleFlags) (sampleFlags, *sampleMeta, *ckptReader, error) {
	var other []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name != "resume" && fl.Name != "force" && fl.Name != "out" {
			other = append(other, "--"+fl.Name)
		}
	})
	if len(other) > 0 {
		return given, nil, nil, fmt.Errorf("--resume continues the run as its checkpoint records it: drop %s (only --force and --out may be added)", strings.Join(other, ", "))
	}
	meta, arch, err := readSampleCheckpoint(given.resume)
	if err != nil && hasMeta(given.resume) { // round 128 A5: a damaged meta.npy, no way on; round 129 A1: cut or garbled with its CRC whole
		err = fmt.Errorf("%w: the checkpoint is damaged, and the run cannot be continued from it; start it again with the command that started it and --force", err)
	}
	if lock := filepath.Join(filepath.Dir(given.resume), "."+filepath.Base(given.resume)+".lock"); errors.Is(err, fs.ErrNotExist) && exists(lock) { // round 103 B4: "no such file" alone
		return given, nil, nil, fmt.Errorf("--resume %s does not exist, but its lock %s does: a sampling run killed before its first checkpoint leaves only its lock, and nothing of it to resume (or one under way has not written it yet); start it again with the command that started it, its flags included (flowebm sample … --checkpoint %s)", given.resume, lock, shellQuote(given.resume))
	}
	if err != nil {
		return given, nil, nil, err
	}
	if err := arch.damaged(); err != nil { // before --out's checks, whose --force, followed, led to this (round 127 B1)
		arch.r.Close()
		return given, nil, nil, fmt.Errorf("%w%s", err, arch.again)
	}
	var f sampleFlags
	fs := pflag.NewFlagSet("sample", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindSampleFlags(fs, &f)
	if err := fs.Parse(meta.Args); err != nil {
		return given, nil, nil, fmt.Errorf("%s: the flags it records: %w", given.resume, err)
	}
	if err := checkPathFlags(fs); err != nil { // as given on a command line (probe 40: an edited --model L/../M)
		return given, nil, nil, fmt.Errorf("%s: the flags it records: %w", given.resume, err)
	}
	if cmd.Flags().Changed("out") {
		if err := fs.Set("out", given.out); err != nil {
			return given, nil, nil, err
		}
		f.outGiven = true
	}
	f.changed, f.resume, f.force = fs.Changed, given.resume, given.force
	abs, err := filepath.Abs(linkTarget(given.resume)) // the file continued, not a link to it (session 33: the link was replaced by a file, the file left behind)
	if err != nil {
		return given, nil, nil, err
	}
	f.checkpoint = abs
	if err := fs.Set("checkpoint", abs); err != nil { // a run resumed goes on checkpointing into it
		return given, nil, nil, err
	}
	if f.args, err = recordedArgs(fs); err != nil {
		return given, nil, nil, err
	}
	f.accepted = meta.MemoryAccepted
	return f, meta, arch, nil
}

// changedInputError refuses to resume the run of checkpoint ck on input
// p, changed since: the way on is p put back (its recorded sum rec) or
// the run started again.
func changedInputError(ck string, meta *sampleMeta, p, rec string) error {
	return fmt.Errorf("--resume %s: %s has changed since the checkpoint was written (its SHA-256 differs): the run cannot continue on other inputs (its model, flow, --starts or --modes file); put the one it started with back there to continue it%s, or%s", ck, p, fileSumNote(p, rec), strings.TrimPrefix(startAgain(meta.Args), ";"))
}

// changedInputFiles refuses, before they are read, the input files of a
// resumed run that changed since its checkpoint (round 111 B7: a model
// changed into one that cannot be read was refused for its parse error,
// unsaid that it is not the file the run started on). Folders and
// missing files are left to their readers.
func changedInputFiles(ck string, meta *sampleMeta) error {
	for _, p := range slices.Sorted(maps.Keys(meta.Inputs)) {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if h, err := safefile.SHA256(p); err == nil && h != meta.Inputs[p] {
			return changedInputError(ck, meta, p, meta.Inputs[p])
		}
	}
	return nil
}

// restoreRun checks that the inputs are those the checkpoint was taken
// with, and sets the run and the generator back to it.
func restoreRun(f sampleFlags, meta *sampleMeta, arch *ckptReader, inputs map[string]string, pcg *rand.PCG, run sampleRun) error {
	for p, h := range inputs {
		switch rec, ok := meta.Inputs[p]; {
		case !ok:
			return fmt.Errorf("--resume %s: the checkpoint records no SHA-256 of %s, so it cannot check that file", f.resume, p)
		case rec != h:
			return changedInputError(f.resume, meta, p, rec)
		}
	}
	if err := run.restore(meta, arch); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	if err := pcg.UnmarshalBinary(meta.RNG); err != nil {
		return fmt.Errorf("--resume %s: generator state: %w", f.resume, err)
	}
	return nil
}

// newRun builds the run f asks for on the chains x, and its MALA if it
// has one.
func (f sampleFlags) newRun(rng *rand.Rand, m checkpoint.Models, x *mat.Dense, out io.Writer) (sampleRun, *samplers.MALA, error) {
	if f.adaptive(m) {
		r, err := f.adaptiveRun(rng, m, x, out)
		if err != nil {
			return nil, nil, err
		}
		return r, r.MALA, nil
	}
	k, err := buildKernel(f, m)
	if err != nil {
		return nil, nil, err
	}
	var freeze func()
	if k.Local != nil {
		freeze = func() { k.Local.Frozen = true }
	}
	cr, err := samplers.NewChainRun(k.Kernel, x, f.warmup, f.steps, freeze)
	if err != nil {
		return nil, nil, err
	}
	return &chainRun{ChainRun: cr, mala: k.Local, neutra: k.NeuTra()}, k.Local, nil
}

// checkOutputs checks the flags and the output file before any work.
func (f sampleFlags) checkOutputs() error {
	var missing []string
	if f.model == "" {
		missing = append(missing, "--model FILE (an .onnx energy, a checkpoint or a run folder)")
	}
	if f.out == "" {
		missing = append(missing, "--out CHAINS.npy (where the draws go)")
	}
	if len(missing) > 0 { // probe 67 B9: --model asked for though given
		return fmt.Errorf("give %s", strings.Join(missing, " and "))
	}
	if err := f.validate(); err != nil {
		return err
	}
	if err := checkOutput("--out", f.out, f.inputs()...); err != nil {
		if f.resume != "" && !f.outGiven { // the folder recorded may have changed since (probe 47: no way was left to finish)
			return fmt.Errorf("%w (resumed, the draws can go elsewhere: flowebm sample --resume %s --out NEW.npy)", err, shellQuote(f.resume))
		}
		return err
	}
	if strings.ToLower(filepath.Ext(f.out)) != ".npy" {
		return fmt.Errorf("--out %s: want a .npy file (the chains are written as a NumPy array)", f.out)
	}
	if err := f.checkNew("--out", f.out); err != nil {
		return err
	}
	if err := checkNoReplacedLeft("--out", f.out); err != nil { // found before the draws, not after (probe 24)
		return err
	}
	if err := f.checkCheckpoint(); err != nil {
		return err
	}
	return f.checkFlowOut()
}

// forceReplaces names the existing files other than --out that --force
// replaces: --checkpoint (unless it is the one resumed: the run stopped
// there can no longer be resumed) and --flow-out's.
func (f sampleFlags) forceReplaces() []string {
	if !f.force {
		return nil
	}
	var replaced []string
	if f.checkpoint != "" && exists(f.checkpoint) && !(f.resume != "" && sameFile(f.checkpoint, f.resume)) {
		what := "the run it holds can no longer be resumed"
		if !hasMeta(f.checkpoint) { // round 130 B2: the user's draws were called a run
			what = notACheckpoint(f.checkpoint) + "; it is lost"
		}
		replaced = append(replaced, fmt.Sprintf("--checkpoint %s (%s)", f.checkpoint, what))
	}
	if f.flowOut != "" && isDir(f.flowOut) {
		for _, p := range f.flowOutputs() {
			if exists(p) {
				replaced = append(replaced, "--flow-out's "+p)
			}
		}
	}
	return replaced
}

// inputs are the files the run reads.
func (f sampleFlags) inputs() []string {
	return []string{f.model, f.flow, f.flowDensity, f.modes, f.starts}
}

// checkFlowOut checks the folder of --flow-out and the two files it will
// receive.
func (f sampleFlags) checkFlowOut() error {
	if f.flowOut == "" {
		return nil
	}
	if f.flowOut == f.checkpoint || sameFile(f.flowOut, f.checkpoint) {
		return fmt.Errorf("--flow-out %s is also --checkpoint: give the trained flow a folder of its own", f.flowOut)
	}
	if filepath.Clean(f.flowOut) == filepath.Clean(f.out) || sameFile(f.flowOut, f.out) { // probe 54: found after the warm-up, both lost
		return fmt.Errorf("--flow-out %s is also --out: give the trained flow a folder of its own (it receives flow_sample.onnx and flow_density.onnx)", f.flowOut)
	}
	if fi, err := os.Stat(f.flowOut); err == nil && !fi.IsDir() {
		return fmt.Errorf("--flow-out %s is a file: give a folder (it receives flow_sample.onnx and flow_density.onnx)", f.flowOut)
	}
	if !exists(f.flowOut) { // created before the run; a trailing / is its own (probe 34)
		return checkOutput("--flow-out", filepath.Clean(f.flowOut), f.inputs()...)
	}
	for _, p := range f.flowOutputs() {
		if sameFile(p, f.out) {
			return fmt.Errorf("--flow-out %s: %s is also --out", f.flowOut, p)
		}
		if err := checkOutput("--flow-out", p, f.inputs()...); err != nil {
			return err
		}
		if err := f.checkNew("--flow-out", p); err != nil {
			return err
		}
		if err := checkNoReplacedLeft("--flow-out", p); err != nil {
			return err
		}
	}
	return nil
}

// checkNew is checkNew with --force, and the way to replace the file when
// continuing a run (--resume takes no other name).
func (f sampleFlags) checkNew(flag, path string) error {
	err := checkNew(flag, path, f.force)
	if err != nil && f.resume != "" {
		return fmt.Errorf("%w (continuing a run with --resume: add --force to replace it)", err)
	}
	return err
}

// checkCheckpoint checks the file of --checkpoint: an .npz that is none
// of the inputs and outputs, new unless --force or it is the one resumed.
func (f sampleFlags) checkCheckpoint() error {
	if f.checkpoint == "" {
		return nil
	}
	if strings.ToLower(filepath.Ext(f.checkpoint)) != ".npz" {
		return fmt.Errorf("--checkpoint %s: want a .npz file (the run's state is written as NumPy arrays)", f.checkpoint)
	}
	if sameFile(f.checkpoint, f.out) || f.checkpoint == f.out {
		return fmt.Errorf("--checkpoint %s is also --out", f.checkpoint)
	}
	if err := checkOutput("--checkpoint", f.checkpoint, f.inputs()...); err != nil {
		return err
	}
	if f.resume != "" && sameFile(f.checkpoint, f.resume) {
		return nil
	}
	err := checkNew("--checkpoint", f.checkpoint, f.force)
	if err != nil && !f.force && f.resume == "" {
		switch ok, damage := checkpointDamage(f.checkpoint); {
		case ok && damage != nil: // this command with --force, not the recorded one (round 127 B2: that named another run's files; 128 A5, 129 A1: its meta.npy)
			return fmt.Errorf("%w; it holds the checkpoint of a sampling run, damaged, which cannot be continued: %v; this command with --force starts the run afresh in its place", err, damage)
		case ok: // round 83 B9: the same command run again after Ctrl-C
			err = fmt.Errorf("%w; it holds the checkpoint of a sampling run: if that run was interrupted, continue it with flowebm sample --resume %s", err, shellQuote(f.checkpoint))
		default: // round 130 B2: what it holds was unsaid
			err = fmt.Errorf("%w; it is %s: give --checkpoint a name of its own (--force would replace that file with this run's checkpoint)", err, notACheckpoint(f.checkpoint))
		}
	}
	return err
}

// flowOutputs are the files --flow-out asks for: the trained flow's
// sampling and density graphs.
func (f sampleFlags) flowOutputs() []string {
	if f.flowOut == "" {
		return nil
	}
	return []string{filepath.Join(f.flowOut, "flow_sample.onnx"), filepath.Join(f.flowOut, "flow_density.onnx")}
}

// writeOutputs writes the draws and the trained flow's graphs (if any) as
// one set: each staged beside its place, then all put in place together,
// so that a failure (a full disk) or a kill replaces none of them (the
// flow was put in place before the draws, which could then fail).
func (f sampleFlags) writeOutputs(draws *npy.Array, graphs [][]byte, ck *sampleCheckpointState) error {
	dir := filepath.Dir(f.out)
	changed := func() error { // probe 51: placed in a folder swapped in
		if f.checkpoint != "" && filepath.Dir(f.checkpoint) == dir {
			ck.moved.Store(true) // the checkpoint went with its folder: the note would name the path
		}
		ck.outGone.Store(true)
		return fmt.Errorf("--out %s: the folder %s is no longer the folder it was when sampling started (it was moved, replaced or deleted, or a link on its path now leads elsewhere): the draws were not written there; give --out in the folder you mean", f.out, dir)
	}
	var anchor training.Anchor
	if ck.outDir != nil {
		anchor = folderAnchor(dir, ck.outDir, changed)
	}
	// Through the folder checked, not by path (session 33: a folder
	// swapped in between the check and the placing got the draws).
	return training.Through(dir, anchor, func(at string) error {
		var set stagedOutputs
		defer set.discard()
		if err := set.stage("--out", filepath.Join(at, filepath.Base(f.out)), f.force, func(w io.Writer) error { return npy.Write(w, draws, npy.Float64) }); err != nil {
			return err
		}
		for i, b := range graphs {
			if err := set.stage("--flow-out", f.flowOutputs()[i], f.force, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
				return err
			}
		}
		set.placed = func() { ck.placed.Store(true) } // before a signal's note is made
		if err := set.place(); err != nil {
			if taken := (*takenError)(nil); errors.As(err, &taken) {
				ck.taken.Store(taken.flag)
			}
			return err
		}
		hook("sample-placed")
		return nil
	})
}

// flowGraphs are the trained flow's two graphs for --flow-out: an ONNX
// flow with its weights replaced, flowebm's RealNVP exported.
func (f sampleFlags) flowGraphs(flow *graph.Flow, scaling *data.Scaling, float32Model bool) ([][]byte, error) {
	if _, ok := flow.Net.(*onnx.FlowNet); ok {
		sb, db, err := onnx.EncodeFlowWeights(flow)
		return [][]byte{sb, db}, err
	}
	// In the model's float type (round 83 A2: a float32 model's flow was
	// written in float64, which neutra then refused beside the model).
	sb, err := onnx.FlowSample(flow, onnx.Options{Scaling: scaling, Float32: float32Model}) // the chains' units, recorded
	if err != nil {
		return nil, err
	}
	db, err := onnx.FlowDensity(flow, onnx.Options{Latent: true, Scaling: scaling, Float32: float32Model}) // with z: the pair drives NeuTra too
	return [][]byte{sb, db}, err
}

// modelsAndHashes loads the models (models) and the SHA-256 of the files
// they were loaded from, each read while its run's checkpoint was held
// still (loadCheckpointSums), so that the sums recorded for --resume are
// those of the models sampled, even while a run checkpoints at every
// iteration.
func (f sampleFlags) modelsAndHashes() (checkpoint.Models, map[string]string, error) {
	if err := f.recordedInputsExist(); err != nil {
		return checkpoint.Models{}, nil, err
	}
	sums := modelSums{}
	m, err := f.modelsRecording(sums)
	return m, sums, err
}

// recordedInputsExist refuses a resumed run whose model or flow files are
// no longer where the run read them (probe 59: "stat …: no such file",
// naming neither the flag nor what to do).
func (f sampleFlags) recordedInputsExist() error {
	if f.resume == "" {
		return nil
	}
	for _, in := range []struct{ flag, path string }{{"--model", f.model}, {"--flow", f.flow}, {"--flow-density", f.flowDensity}} {
		if in.path == "" {
			continue
		}
		fi, err := os.Stat(in.path)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--resume %s: the run's %s %s no longer exists (the run was started on it, and checks its SHA-256: put it back there to continue)", f.resume, in.flag, in.path)
		}
		if err == nil && fi.IsDir() && strings.EqualFold(filepath.Ext(in.path), ".onnx") { // round 135 B1: "neither a checkpoint nor a training run", or the flag unnamed
			return fmt.Errorf("--resume %s: the run's %s %s is a folder, want the ONNX file the run was started on (put it back there to continue)", f.resume, in.flag, in.path)
		}
	}
	return nil
}

// withBase tilts the ONNX energy m of the file model by N(0, σ² I),
// σ = base (0: none), as --base asks; a checkpoint has its own tilt, and
// flowebm's export of a whole energy has it in its graph.
func withBase(m *checkpoint.Models, base float64, model string) error {
	if base == 0 {
		return nil
	}
	if m.EBM.Tilt != nil {
		return fmt.Errorf("--base: the checkpoint %s has its own base", model)
	}
	if net, ok := m.EBM.Net.(*onnx.Net); ok && net.WholeEnergy() {
		return fmt.Errorf("--base %v: %s is flowebm's export of a whole energy (convert --what energy), whose tilt is in its graph already: drop --base (a second tilt would change the model)", base, model)
	}
	g := layers.NewIsotropic(m.EBM.Dim(), base)
	m.EBM.Tilt = &g
	return nil
}

// models loads the energy (with the --base tilt for an ONNX model) and the
// flow of --flow, checking the memory the chains need with them.
func (f sampleFlags) models() (checkpoint.Models, error) { return f.modelsRecording(nil) }

// loader is the model loader of sample, recording sums in sums, its notes
// to the command's stderr.
func (f sampleFlags) loader(sums modelSums) modelLoader {
	return modelLoader{sums: sums, notes: cmp.Or[io.Writer](f.notes, os.Stderr)}
}

// modelsRecording is models recording the sums of the files read in sums.
func (f sampleFlags) modelsRecording(sums modelSums) (checkpoint.Models, error) {
	m, err := f.loader(sums).load(f.model, onnx.Config{Output: f.output, LogDensity: f.logDensity})
	if err != nil {
		return m, namedInput(err, "--model", f.model, true)
	}
	if err := withBase(&m, f.base, f.model); err != nil {
		return m, err
	}
	if f.flow != "" {
		flow, flowScaling, err := f.readFlow(sums)
		if err != nil {
			return m, err
		}
		if note := flowUnitsNote(f.flow, m.Scaling, flowScaling); note != "" {
			fmt.Fprintln(cmp.Or[io.Writer](f.notes, os.Stderr), "flowebm: note:", note)
		}
		if flow.Dim() != m.EBM.Dim() {
			return m, fmt.Errorf("--flow %s: the flow has dimension %d, the model %d", f.flow, flow.Dim(), m.EBM.Dim())
		}
		m.Flow = flow
	}
	if f.trainFlow && m.Flow == nil {
		return m, fmt.Errorf("--train-flow: %s has no flow and --flow gives none (without a flow, flowmc trains a new RealNVP anyway): drop --train-flow", f.model)
	}
	if f.flowOut != "" && !f.adaptive(m) {
		return m, fmt.Errorf("--flow-out %s: flowmc writes the flow it trains, and the flow of %s is used frozen: add --train-flow to train it", f.flowOut, cmp.Or(f.flow, f.model))
	}
	if f.local == 0 && f.changed("local") && f.adaptive(m) { // probe 55: accepted, and 4 MALA moves a cycle ran all the same
		return m, fmt.Errorf("--local 0: flowmc training its flow moves the chains with local steps (their states train it), so it takes at least 1 (default 4); without local steps, give a trained --flow")
	}
	if f.changed("patience") && !f.adaptive(m) {
		return m, fmt.Errorf("--patience applies to flowmc training its flow; the flow of %s is used frozen: add --train-flow to train it", cmp.Or(f.flow, f.model))
	}
	m.EBM.Parallel = f.parallel()
	if m.Flow != nil {
		m.Flow.Parallel = f.parallel()
	}
	return m, f.checkMemory(m)
}

// parallel is how the models evaluate the chains: --shards blocks on
// GOMAXPROCS workers.
func (f sampleFlags) parallel() graph.Parallel {
	return graph.Parallel{Shards: f.shards, Workers: runtime.GOMAXPROCS(0)}
}

// adaptive says whether the run trains its flow during the warm-up.
func (f sampleFlags) adaptive(m checkpoint.Models) bool {
	return f.sampler == "flowmc" && (m.Flow == nil || f.trainFlow)
}

// readFlow reads the flow of --flow: a checkpoint's, or an ONNX flow's two
// graphs.
func (f sampleFlags) readFlow(sums modelSums) (*graph.Flow, *data.Scaling, error) {
	if !isONNXFile(f.flow) {
		if f.flowDensity != "" || f.flowBase != 0 {
			return nil, nil, fmt.Errorf("--flow-density and --flow-base-sigma are for a flow in ONNX (--flow SAMPLE.onnx), not the checkpoint %s", f.flow)
		}
		if fi, err := os.Stat(f.flow); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() { // probe 45: worded for --model
			return nil, nil, fmt.Errorf("--flow %s: want a checkpoint or run folder that holds a flow, or the flow's sampling graph in a regular file named .onnx", irregular(f.flow, fi))
		}
		if s, d := filepath.Join(f.flow, "flow_sample.onnx"), filepath.Join(f.flow, "flow_density.onnx"); exists(s) && exists(d) && !exists(filepath.Join(f.flow, "spec.json")) { // probe 58: the folder --flow-out wrote
			return nil, nil, fmt.Errorf("--flow %s is a folder of a flow's two graphs (as sample --flow-out writes): give them as --flow %s --flow-density %s", f.flow, s, d)
		}
		fm, err := f.loader(sums).loadCheckpoint(f.flow)
		if err != nil {
			return nil, nil, err
		}
		if fm.Flow == nil {
			return nil, nil, fmt.Errorf("--flow %s: the checkpoint has no flow: give a checkpoint with one (a flowmc run's), or an ONNX flow with --flow-density; or leave --flow out (--sampler flowmc trains its own)", f.flow)
		}
		return fm.Flow, fm.Scaling, nil
	}
	if f.flowDensity == "" {
		return nil, nil, fmt.Errorf("--flow %s is a flow's sampling graph: give its density graph with --flow-density DENSITY.onnx (see io/onnx/crosscheck/export_flow.py)", f.flow)
	}
	var sigma []float64
	if f.flowBase > 0 {
		sigma = []float64{f.flowBase}
	}
	for _, p := range []string{f.flow, f.flowDensity} {
		if err := sums.record(p, func() (string, error) { return hashFiles(p) }); err != nil {
			return nil, nil, err
		}
	}
	flow, err := onnx.ReadFlow(f.flow, f.flowDensity, onnx.FlowConfig{BaseSigma: sigma, Frozen: !f.trainFlow})
	if err != nil {
		return nil, nil, flagOfFile(err, "--flow", f.flow, "--flow-density", f.flowDensity)
	}
	fn, ok := flow.Net.(*onnx.FlowNet)
	if !ok {
		return flow, nil, nil
	}
	scaling, err := fn.Standardization() // flowebm's exports record their units (round 78 B3)
	return flow, scaling, err
}

// flagOfFile names the flag that gave the file an error is about, where
// the error starts with that file's path (round 100 B1: an unsupported
// operator in a flow's graph named the file alone).
func flagOfFile(err error, flagPath ...string) error {
	for i := 0; i+1 < len(flagPath); i += 2 {
		if strings.HasPrefix(err.Error(), flagPath[i+1]+": ") {
			return fmt.Errorf("%s %w", flagPath[i], err)
		}
	}
	return err
}

// flowUnitsNote says when the flow of --flow (a run's) lives in other
// units than the model's chains: a run trained on standardised data keeps
// its flow in those units, while an energy given in the data's units (an
// ONNX export, another run) has its chains there (probe 65: the flow
// proposed at the wrong scale, global acceptance 0.29 for 0.92, unsaid).
func flowUnitsNote(flow string, model, flowScaling *data.Scaling) string {
	if identityOrNil(model).Equal(identityOrNil(flowScaling)) {
		return ""
	}
	if model == nil { // round 86 A4: a network exported with --what ebm and converted back records no units, and is in the flow's
		return fmt.Sprintf("the flow of --flow %s records that it was trained in a run's standardised units, and --model records none: if the model's chains are in the data's units, the flow proposes (flowmc) or reparametrises (neutra) at the wrong place and scale, and the draws mix slowly; a network exported with convert --what ebm is in the flow's units, and then nothing is wrong", flow)
	}
	return fmt.Sprintf("the flow of --flow %s was trained in other units than --model's chains (a run on standardised data keeps its flow in those units): it proposes (flowmc) or reparametrises (neutra) at another place and scale than the model's chains, so the draws stay exact but may mix slowly (check the global acceptance and R-hat below); sample a run with its own flow (--model RUN, whose draws are written in the data's units)", flow)
}

// identityOrNil is s, or nil where s maps no coordinate (shift 0, scale 1:
// a run with standardize "none"), the data's own units (round 80 B3: a
// false units note).
func identityOrNil(s *data.Scaling) *data.Scaling {
	if s == nil {
		return nil
	}
	for i := range s.Shift {
		if s.Shift[i] != 0 || s.Scale[i] != 1 {
			return s
		}
	}
	return nil
}

// chainStarts draws n chain starts from the flow, or from the base (N(0, 1)
// without one).
func chainStarts(rng *rand.Rand, m checkpoint.Models, n int) (*mat.Dense, error) {
	x := mat.NewDense(n, m.EBM.Dim(), nil)
	if m.Flow != nil {
		return x, m.Flow.Sample(rng, x, make([]float64, n))
	}
	sigma := 1.0
	if m.EBM.Tilt != nil {
		sigma = m.EBM.Tilt.Sigma[0]
	}
	raw := x.RawMatrix().Data
	for i := range raw {
		raw[i] = sigma * rng.NormFloat64()
	}
	return x, nil
}

// checkStarts refuses chains that start where the energy is not finite,
// from which no move is ever accepted (probe 34: an ONNX energy with a
// Log of a negative value gave chains that never moved, and exit 0).
// Its gradient too (probe 35: NaN there froze MALA's and HMC's chains).
func checkStarts(m checkpoint.Models, x *mat.Dense) error {
	n, d := x.Dims()
	e, g := make([]float64, n), mat.NewDense(n, d, nil)
	if err := energyInRows(m, x, e, g, energyRows(m, true)); err != nil {
		return fmt.Errorf("evaluating it at the chains' starting points: %w", err)
	}
	if err := checkFiniteEnergies(e, g, nodeAt(m, x)); err != nil {
		return fmt.Errorf("the chains' starting points: %w", err)
	}
	return nil
}

// stepAdapted reports whether the sampler's MALA step is adapted during
// the warm-up: mala's, neutra's (MALA in the flow's latent space) and
// flowmc's local moves, where there is a warm-up.
func (f sampleFlags) stepAdapted() bool {
	return (f.sampler == "mala" || f.sampler == "neutra" || f.sampler == "flowmc") && f.warmup > 0
}

// notMixedAdvice is what to do where the chains have not mixed, for the
// sampler that ran and its local acceptance loc: a step that no proposal
// passes is lowered (round 85 B12: "sample longer" at acceptance 0), a
// frozen flow trained (B8), an adaptive flow's warm-up lengthened (round
// 84 B1: flowmc was told to use flowmc), ULA's step lowered where its
// chains ran off.
func (f sampleFlags) notMixedAdvice(m checkpoint.Models, loc float64, mx mixing) string {
	resonance := f.hmcResonance(m, loc, mx)
	switch {
	case f.ranOff: // round 131 A3: "sample longer" of chains growing by 5% a step
		return fmt.Sprintf("the chains ran off (said below): lower --step (%v), or use an adjusted sampler (mala, hmc)", f.step)
	case loc < 0.01 && f.sampler != "ula" && f.sampler != "flowmc":
		return fmt.Sprintf("almost no local move was accepted (%.2g): lower --step (%v)", loc, f.step)
	case f.noted != "": // round 132 A1: "sample longer" beside a chain that never moved in 4000 draws; round 135 A2: before HMC's resonance, beside an improper density
		return f.noted
	case resonance != "":
		return resonance
	case f.sampler != "hmc" && f.sampler != "flowmc" && modesApart(mx) >= 0: // round 141 A1: MALA's and ULA's chains in modes apart told "sample longer" first (10 times longer: R-hat 1.528 again)
		return apartAdvice(m, mx, modesApart(mx))
	case loc > 0.95 && (f.sampler == "hmc" || f.sampler == "mala" || f.sampler == "neutra") && !f.stepAdapted(): // round 115 B1: neutra
		// Round 114 A1: HMC at its default step, acceptance 1.00, R-hat
		// 1.54 on one mode, was told "sample longer" (16 times longer
		// still gave 1.05) "or --sampler flowmc for modes apart".
		j := mx.worstDim()
		if j >= 0 && mx.rho1[j] < 0.9 && mx.rho1[j] >= 0.7 && mx.bulk[j] >= rhatMixed { // round 140 A1: lag-1 0.89 on one mode, called "modes apart, larger steps do not join them" (--step 0.3 gave R-hat 1.009)
			return fmt.Sprintf("nearly every local move was accepted (%.2f) and in dimension %d, where R-hat is largest, the chains move slowly (lag-1 autocorrelation %.2f) while their locations differ (bulk R-hat %.3g): raise --step (%v, not adapted by %s), or sample longer; if they sit in modes apart that they rarely cross, which larger steps do not join, %s", loc, j, mx.rho1[j], mx.bulk[j], f.step, f.sampler, flowmcAdvice(m))
		}
		if j >= 0 && mx.rho1[j] < 0.7 && mx.bulk[j] >= rhatMixed { // round 138 A1: chains crossing rarely between modes apart (lag-1 0.65), "raise --step" (no better when followed)
			return fmt.Sprintf("nearly every local move was accepted (%.2f), yet in dimension %d, where R-hat is largest, the chains are not slow (lag-1 autocorrelation %.2f) while their locations differ (bulk R-hat %.3g), as chains that cross rarely between modes apart do, which larger steps do not join; %s, or sample longer", loc, j, mx.rho1[j], mx.bulk[j], flowmcAdvice(m))
		}
		return fmt.Sprintf("nearly every local move was accepted (%.2f): the steps are small for this model and the chains move slowly; raise --step (%v, not adapted by %s), or sample longer; for modes apart, %s", loc, f.step, f.sampler, flowmcAdvice(m))
	case f.sampler == "flowmc" && m.Flow != nil && !f.trainFlow:
		return "the flow is used frozen: add --train-flow to train it on the chains, or sample longer"
	case f.sampler == "flowmc" && f.farFromBase: // round 137 A4: a longer warm-up advised again after it was followed, beside the note that the flow cannot reach the draws
		return "no global move was accepted: the flow has not reached the draws, and may never reach them however long the warm-up"
	case f.sampler == "flowmc":
		// Round 90 A1: a longer --warmup alone was cut short by --patience.
		return "sample longer, with a longer --warmup and --patience 0 for the flow to learn the modes (the warm-up otherwise stops once the global acceptance stops rising)"
	}
	return "sample longer, or, for modes apart, " + flowmcAdvice(m)
}

// afterTransient is R-hat's advice where a chain came in from far only
// after the first draws (f.cutAt, strandedNote): the R-hat of the draws
// from there, and, where they have not mixed either, the advice for them
// (round 140 A1: HMC's chains on one mode beside a transient were told of
// modes apart, "larger steps do not join them", where the draws after it
// had R-hat 1.11 from small steps, and --step 0.3 gave 1.009); advice
// otherwise.
func (f sampleFlags) afterTransient(m checkpoint.Models, loc float64, draws []float64, d int, advice string) string {
	n := f.steps - f.cutAt
	if f.cutAt <= 0 || n < 4 {
		return advice
	}
	rest := make([]float64, 0, f.chains*n*d)
	for c := range f.chains {
		rest = append(rest, draws[(c*f.steps+f.cutAt)*d:(c+1)*f.steps*d]...)
	}
	r := diagnostics.MaxRHat(rest, f.chains, n, d)
	if r < rhatMixed {
		return fmt.Sprintf("a chain came in from far only after the first draws (said below); without the draws before draw %d, R-hat is %.3f: drop them (NumPy: x[:, %d:])", f.cutAt, r, f.cutAt)
	}
	g := f
	g.noted, g.cutAt = "", 0
	mx := mixingOf(rest, f.chains, n, d, true)
	return fmt.Sprintf("a chain came in from far only after the first draws (said below), and without the draws before draw %d R-hat is still %.3f: ", f.cutAt, r) + g.notMixedAdvice(m, loc, mx)
}

// mixing is what notMixedAdvice reads of the draws: each dimension's
// lag-1 autocorrelation, averaged over the chains (NaN where no chain
// varies), and its standard deviation over all draws; where that
// autocorrelation is under -0.5 or over 0.9 (hmcResonance's candidates),
// its R-hat and bulk R-hat (NaN elsewhere; every: in every dimension,
// for HMC's modes-apart check), and then the largest R-hat over all
// dimensions (worst).
type mixing struct {
	rho1, sd, rhat, bulk []float64
	worst                float64
}

// mixingOf measures the draws (chains × steps × d).
func mixingOf(draws []float64, chains, steps, d int, every bool) mixing {
	mx := mixing{rho1: make([]float64, d), sd: make([]float64, d), rhat: make([]float64, d), bulk: make([]float64, d)}
	x := make([]float64, steps)
	all := make([]float64, 0, chains*steps)
	for j := range d {
		mx.rhat[j], mx.bulk[j] = math.NaN(), math.NaN()
		var sum float64
		n := 0
		all = all[:0]
		for c := range chains {
			for i := range steps {
				x[i] = draws[(c*steps+i)*d+j]
			}
			all = append(all, x...)
			mean := stat.Mean(x, nil)
			var num, den float64
			for i, v := range x {
				den += (v - mean) * (v - mean)
				if i > 0 {
					num += (v - mean) * (x[i-1] - mean)
				}
			}
			if den > 0 {
				sum += num / den
				n++
			}
		}
		mx.rho1[j], mx.sd[j] = math.NaN(), stat.StdDev(all, nil)
		if n > 0 {
			mx.rho1[j] = sum / float64(n)
		}
		if r := mx.rho1[j]; every || r < -0.5 || r > 0.9 {
			byChain := byChainOf(all, chains, steps)
			mx.rhat[j] = diagnostics.RHat(byChain)
			if r < -0.5 || r > 0.9 {
				mx.bulk[j] = diagnostics.BulkRHat(byChain)
			}
		}
	}
	switch {
	case every: // every dimension's R-hat is at hand
		mx.worst = math.Inf(-1)
		for _, r := range mx.rhat {
			mx.worst = max(mx.worst, r)
		}
		// Bulk R-hat where the modes-apart checks read it (the dimensions
		// at the largest R-hat), not in every dimension: it doubled the
		// cost of sample's notes on images (a rank normalisation each).
		for j, r := range mx.rhat {
			if r >= mx.worst-0.005 && math.IsNaN(mx.bulk[j]) {
				col := make([]float64, 0, chains*steps)
				for i := range chains * steps {
					col = append(col, draws[i*d+j])
				}
				mx.bulk[j] = diagnostics.BulkRHat(byChainOf(col, chains, steps))
			}
		}
	case slices.ContainsFunc(mx.rhat, func(v float64) bool { return !math.IsNaN(v) }):
		mx.worst = diagnostics.MaxRHat(draws, chains, steps, d)
	}
	return mx
}

// byChainOf slices all, chains × steps values, into its chains.
func byChainOf(all []float64, chains, steps int) [][]float64 {
	byChain := make([][]float64, chains)
	for c := range byChain {
		byChain[c] = all[c*steps : (c+1)*steps]
	}
	return byChain
}

// hmcResonance is HMC's advice where a dimension that has not mixed
// (R-hat 1.01 or more) has draws that flip across its mode each draw
// (lag-1 autocorrelation under -0.5: the trajectory, step × leapfrog,
// near half a period; round 133 A1), its chains agreeing on its location
// (bulk R-hat under 1.01: round 135 A1, chains in modes apart were told
// to change --leapfrog), or that come back to where they were (over 0.9
// at acceptance over 0.9, with a trajectory at least that dimension's sd:
// near a whole number of periods; round 134 A1: "the steps are small …
// raise --step" at a step near its stability limit, which then rejected
// everything), in any dimension (A4: averaged over dimensions, a flipping
// one was hidden; round 135 A1: one that had mixed was blamed); ""
// otherwise.
func (f sampleFlags) hmcResonance(m checkpoint.Models, loc float64, mx mixing) string {
	if f.sampler != "hmc" {
		return ""
	}
	traj := f.step * float64(f.leapfrog)
	flip, back := -1, -1
	for j, r := range mx.rho1 {
		if !(mx.rhat[j] >= rhatMixed && mx.rhat[j] >= mx.worst-0.005) { // round 136 A2: a dimension other than the one behind the R-hat printed was named
			continue
		}
		if r < -0.5 && mx.bulk[j] < rhatMixed && (flip < 0 || r < mx.rho1[flip]) {
			flip = j
		}
		if r > 0.9 && loc > 0.5 && traj >= mx.sd[j] && (back < 0 || r > mx.rho1[back]) { // round 137 A5: at acceptance 0.76, a step near its limit, "sample longer" only
			back = j
		}
	}
	change := func(check string) string {
		return "change --leapfrog (or --step) so that their product moves off it, by a third say, and check that the lag-1 autocorrelation moves toward 0 (" + check + "); if the chains sit in modes apart instead, " + flowmcAdvice(m) // round 136 A2: dropped for chains in modes apart
	}
	if apart := modesApart(mx); apart >= 0 { // round 137 A1: chains each in its own mode, moving freely there, told "small steps: raise --step" (worse when followed)
		return apartAdvice(m, mx, apart)
	}
	switch {
	case flip >= 0:
		return fmt.Sprintf("the draws flip back and forth (lag-1 autocorrelation %.2f in dimension %d): the trajectory, --step %v × --leapfrog %d, is near half a period of the model's oscillation there, so each draw lands across from the last; %s", mx.rho1[flip], flip, f.step, f.leapfrog, change("flowebm diagnose's R-hat falls and its ess_tail rises; its ess_bulk, at its cap for draws that flip, need not")) // round 138 A3: ess_bulk at its cap could not rise
	case back >= 0 && f.step > mx.sd[back]: // a leapfrog step over the dimension's scale: near HMC's stability limit (2 σ for a Gaussian), where a changed --leapfrog rejected everything
		return fmt.Sprintf("each draw comes back near the last (lag-1 autocorrelation %.2f in dimension %d, whose draws' sd is %.3g, at acceptance %.2f): --step %v is near the leapfrog's stability limit for that scale (twice it, for a Gaussian), where the trajectory, × --leapfrog %d, returns near its start; lower --step, to half that sd say, and check that the lag-1 autocorrelation moves toward 0 (flowebm diagnose's ess_bulk rises)", mx.rho1[back], back, mx.sd[back], loc, f.step, f.leapfrog)
	case back >= 0:
		return fmt.Sprintf("each draw comes back near the last (lag-1 autocorrelation %.2f in dimension %d, whose draws' sd is %.3g, at acceptance %.2f): the trajectory, --step %v × --leapfrog %d = %.3g, is near a whole number of periods of the model's oscillation there, not short; %s", mx.rho1[back], back, mx.sd[back], loc, f.step, f.leapfrog, traj, change("flowebm diagnose's ess_bulk rises"))
	}
	return ""
}

// worstDim is the dimension of the largest R-hat computed, -1 where none
// was.
func (mx mixing) worstDim() int {
	j := -1
	for i, r := range mx.rhat {
		if !math.IsNaN(r) && (j < 0 || r > mx.rhat[j]) {
			j = i
		}
	}
	return j
}

// apartAdvice is R-hat's advice where the chains sit apart in dimension j
// while each moves freely there (modesApart).
func apartAdvice(m checkpoint.Models, mx mixing, j int) string {
	return fmt.Sprintf("the chains sit apart in dimension %d, each moving freely there (lag-1 autocorrelation %.2f) while their locations differ (bulk R-hat %.3g), as chains in modes apart do: longer or larger steps do not join them; %s, whose flow's moves jump between modes", j, mx.rho1[j], mx.bulk[j], flowmcAdvice(m)) // round 138 A2: flowmc's own flow refuses d = 1
}

// modesApart is the dimension with the largest R-hat where that R-hat
// comes from the chains' locations (bulk R-hat 1.01 or more) while each
// chain moves freely (lag-1 autocorrelation under 0.5): chains in modes
// apart; -1 where there is none (or no R-hat was computed).
func modesApart(mx mixing) int {
	for j, r := range mx.rho1 {
		if mx.rhat[j] >= rhatMixed && mx.rhat[j] >= mx.worst-0.005 && mx.bulk[j] >= rhatMixed && r < 0.5 {
			return j
		}
	}
	return -1
}

// flowmcAdvice is how to sample modes apart with flowmc: its own RealNVP
// needs d ≥ 2, so for d = 1 a flow of the user's (round 118 A2: the
// advice was refused for d = 1, the refusal sending the user back).
func flowmcAdvice(m checkpoint.Models) string {
	if m.Flow == nil && m.EBM != nil && m.EBM.Net != nil && m.EBM.Dim() == 1 {
		return "--sampler flowmc with a flow of your own (--flow; flowmc's own RealNVP needs d ≥ 2)"
	}
	return "--sampler flowmc"
}

// scales is scalesNote of the draws, but where the notes' chains
// (stranded, transient, improper: f.noted) set their spread, not the
// model (round 136 A4: a scale the chains grow without end; round 141 A3:
// two chains stuck at x = 30 made sd 15.3 of a mode's 3), or where a flow
// given is the advice's rescaling already (neutra with --flow was told
// "--flow with --sampler neutra").
func (f sampleFlags) scales(m checkpoint.Models, draws []float64, d int) string {
	if f.noted != "" || (f.sampler == "neutra" || f.sampler == "flowmc") && m.Flow != nil {
		return ""
	}
	return scalesNote(draws, d, identityOrNil(m.Scaling) != nil) // round 120 A3: --standardize none is no standardisation // in the coordinates the chains move in (round 119 A4: measured in the data's, of a run standardised per dimension)
}

// scalesNote says, where the chains' draws spread over dimensions of
// scales far apart (sd ratio over 100), that a local step fits the
// smallest and that a flow that whitens them helps more than sampling
// longer (round 118 A3: scales 0.01 to 100, MALA's step 1.2e-4, R-hat 5.2,
// told to sample longer; 10 times longer gave 3.0); "" otherwise.
func scalesNote(draws []float64, d int, standardised bool) string {
	if d < 2 || len(draws) < 2*d {
		return ""
	}
	lo, hi, loDim, hiDim := math.Inf(1), 0.0, 0, 0
	col := make([]float64, len(draws)/d)
	for j := range d {
		for i := range col {
			col[i] = draws[i*d+j]
		}
		sd := stat.StdDev(col, nil)
		if sd < lo {
			lo, loDim = sd, j
		}
		if sd > hi {
			hi, hiDim = sd, j
		}
	}
	if !(lo > 0) || hi/lo < 20 { // round 136 A1: unmixed draws understate the wide scale (×31 for the model's ×100, and 10 times longer still R-hat 2.27)
		return ""
	}
	how := "a flow that rescales them (--flow with --sampler neutra or flowmc), or the model's inputs standardised,"
	where := ""
	if standardised {
		how, where = "a flow that rescales them (--flow with --sampler neutra or flowmc)", " in the model's standardised coordinates, where the chains move"
	}
	return fmt.Sprintf("; the draws' scales%s differ by ×%.3g (sd %.3g in dimension %d, %.3g in dimension %d): a local step fits the smallest, so the largest moves slowly; %s helps more than sampling longer", where, hi/lo, lo, loDim, hi, hiDim, how)
}

// adaptiveBaseSigma is the σ of the base N(0, σ² I) of the RealNVP that
// flowmc trains where no flow is given: the model's tilt's largest, or 1.
func adaptiveBaseSigma(m checkpoint.Models) float64 {
	if m.EBM.Tilt != nil {
		return floats.Max(m.EBM.Tilt.Sigma)
	}
	return 1
}

// flowBaseNote is, for flowmc training its own RealNVP at the identity
// over N(0, σ² I) (no --flow), a note where the chains' draws lie far
// from that base, farther than its flow learns to reach (round 90 A1: a
// model in the data's units, its modes near y = −200, was sampled with
// global acceptance 0 however long the warm-up); "" otherwise.
func (f sampleFlags) flowBaseNote(m checkpoint.Models, draws []float64, d int) string {
	if f.sampler != "flowmc" || m.Flow != nil || m.Scaling != nil || len(draws) < d { // draws in the flow's coordinates only
		return ""
	}
	sigma := adaptiveBaseSigma(m)
	n := len(draws) / d
	far, at := 0.0, 0
	for j := range d { // root mean square: modes at ±30 average 0 (round 91 B4)
		ms := 0.0
		for i := range n {
			ms += draws[i*d+j] * draws[i*d+j] / float64(n)
		}
		if math.Sqrt(ms) > far {
			far, at = math.Sqrt(ms), j
		}
	}
	if !(far > 5*sigma) {
		return ""
	}
	return fmt.Sprintf("; the draws lie far from the flow's base N(0, %.3g² I) (dimension %d lies %.3g from 0, root mean square), far for its RealNVP, which starts at the identity over that base: it may take a long warm-up (with --patience 0) to reach them, or never reach them; a flow of your own (--flow), or the model sampled in standardised coordinates (for a flowebm run's network, the run's checkpoint as --model, or the network converted with convert --what ebm), helps more", sigma, at, far) // round 136 A6: counted from 1, where the other notes count dimensions from 0
}

// rhatMixed is the R-hat below which chains show no sign of not having
// mixed (Vehtari et al. 2021), as diagnose's verdict.
const rhatMixed = 1.01

// printRHat prints the worst rank-normalised R-hat over dimensions, with
// diagnose's verdict where it is not below rhatMixed (and advice for the
// sampler that ran), and returns it.
func printRHat(out io.Writer, draws []float64, chains, steps, d int, advice string) float64 {
	worst := diagnostics.MaxRHat(draws, chains, steps, d)
	verdict := ""
	if !(worst < rhatMixed) {
		verdict = " (not below 1.01: the chains have not mixed; " + advice + ")"
	}
	fmt.Fprintf(out, "max rank-normalised R-hat over dimensions: %.3f%s\n", worst, verdict)
	return worst
}

// chainIndex names chain c as the draws' first axis indexes it (round 118
// A5: ULA's notes counted from 1, the never-moved note from 0).
func chainIndex(c int) string {
	return fmt.Sprintf("%d (numbered from 0 as the draws' first axis)", c)
}

// checkFinite refuses draws holding NaN or Inf (an unadjusted step too
// large for the energy makes chains diverge), naming the first chain and
// draw, so that nothing is written.
func checkFinite(draws []float64, f sampleFlags, d int) error {
	for i, v := range draws {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c, t := i/(f.steps*d), (i/d)%f.steps
			return fmt.Errorf("chain %s reached %v at draw %d of %d (after %d warm-up steps): the chains diverged, nothing was written; lower --step (%v)%s",
				chainIndex(c), v, t+1, f.steps, f.warmup, f.step, map[bool]string{true: " or use an adjusted sampler (mala, hmc)", false: ""}[f.sampler == "ula"])
		}
	}
	return nil
}

// validate checks the flags' values before anything is loaded, and that
// none is given that the sampler or model would ignore.
func (f sampleFlags) validate() error {
	if err := checkRanges(f); err != nil {
		return err
	}
	switch algorithms.KernelKind(f.sampler) {
	case algorithms.KernelMALA, algorithms.KernelULA, algorithms.KernelHMC, algorithms.KernelFlowMC, algorithms.KernelNeuTra:
	default:
		return fmt.Errorf("--sampler %q, want mala, ula, hmc, flowmc or neutra", f.sampler)
	}
	onnxModel := isONNXFile(f.model)
	for _, g := range []struct {
		flag    string
		applies bool
		to      string
	}{
		{"particles", f.sampler == "flowmc", "--sampler flowmc"},
		{"local", f.sampler == "flowmc", "--sampler flowmc"},
		{"leapfrog", f.sampler == "hmc", "--sampler hmc"},
		{"output", onnxModel, "an .onnx --model"},
		{"log-density", onnxModel, "an .onnx --model"},
		{"base", onnxModel, "an .onnx --model (a checkpoint has its own base)"},
		{"step", f.sampler != "flowmc" || f.local > 0, "a sampler that takes local steps (not flowmc with --local 0)"},
		{"flow-density", isONNXFile(f.flow), "a flow in ONNX (--flow SAMPLE.onnx)"},
		{"flow-base-sigma", isONNXFile(f.flow), "a flow in ONNX (--flow SAMPLE.onnx)"},
		{"train-flow", f.sampler == "flowmc", "--sampler flowmc (it trains the flow of --flow, or the model's own)"},
		{"flow-out", f.sampler == "flowmc", "--sampler flowmc, which trains its flow during the warm-up"},
		{"patience", f.sampler == "flowmc", "--sampler flowmc, which trains its flow during the warm-up"},
		{"checkpoint-every", f.checkpoint != "", "a run with --checkpoint FILE"},
	} {
		if f.changed(g.flag) && !g.applies {
			return fmt.Errorf("--%s applies to %s only; with --sampler %s and --model %s it would be ignored: drop it", g.flag, g.to, f.sampler, f.model)
		}
	}
	return nil
}

// checkRanges refuses the flags whose values are out of range, naming
// only those.
func checkRanges(f sampleFlags) error {
	var bad []string
	for _, c := range []struct {
		ok   bool
		what string
	}{
		{f.chains >= 2, fmt.Sprintf("--chains %d (want ≥ 2)", f.chains)},
		{f.steps >= 4, fmt.Sprintf("--steps %d (want ≥ 4)", f.steps)},
		{f.warmup >= 0 && f.warmup <= maxWarmup, fmt.Sprintf("--warmup %d (want 0..%d)", f.warmup, maxWarmup)},
		{f.step >= 1e-12 && f.step <= 1e6, fmt.Sprintf("--step %v: want a step size in [1e-12, 1e6]", f.step)},
		{f.base == 0 || f.base >= 1e-150 && f.base <= 1e150, fmt.Sprintf("--base %v: want σ in [1e-150, 1e150], or 0 for no tilt", f.base)},
		{f.flowBase == 0 || f.flowBase >= 1e-150 && f.flowBase <= 1e150, fmt.Sprintf("--flow-base-sigma %v: want σ in [1e-150, 1e150], or 0 for the files' metadata", f.flowBase)},
		{f.checkpointEvery >= 1 && f.checkpointEvery <= algorithms.MaxChainSteps, fmt.Sprintf("--checkpoint-every %d (want 1..%d)", f.checkpointEvery, algorithms.MaxChainSteps)},
		{f.patience >= 0 && f.patience <= maxWarmup, fmt.Sprintf("--patience %d (want 0..%d; 0: never stop the warm-up early)", f.patience, maxWarmup)},
		{f.leapfrog >= 1 && f.leapfrog <= 10_000, fmt.Sprintf("--leapfrog %d (want 1..10000)", f.leapfrog)},
		{f.particles >= 2 && f.particles <= 1_000_000, fmt.Sprintf("--particles %d (want 2..1000000)", f.particles)},
		{f.local >= 0 && f.local <= algorithms.MaxChainSteps, fmt.Sprintf("--local %d (want 0..%d)", f.local, algorithms.MaxChainSteps)},
		{f.shards >= 1 && f.shards <= config.MaxShards, fmt.Sprintf("--shards %d (want 1..%d)", f.shards, config.MaxShards)},
	} {
		if !c.ok {
			bad = append(bad, c.what)
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// maxWarmup bounds the warm-up steps (they are run, not kept).
const maxWarmup = 10_000_000

// maxDrawBytes bounds the draws sample keeps in memory (and writes).
const maxDrawBytes = 4 << 30

// memoryNeed is the memory checkMemory counts: the draws, the working
// buffers and the models' graphs.
func (f sampleFlags) memoryNeed(m checkpoint.Models) float64 {
	work, _ := f.workMemory(m)
	return f.drawBytes(m) + work
}

// drawBytes is the draws' memory: chains × steps × d float64s.
func (f sampleFlags) drawBytes(m checkpoint.Models) float64 {
	return float64(f.chains) * float64(f.steps) * float64(m.EBM.Dim()) * 8
}

// checkMemory refuses runs whose draws (chains × steps × d float64s), or
// whose working buffers and models' graphs, would not fit, with the
// estimate, before anything is allocated.
func (f sampleFlags) checkMemory(m checkpoint.Models) error {
	d := m.EBM.Dim()
	need := f.drawBytes(m)
	if need > maxDrawBytes {
		return fmt.Errorf("--chains %d × --steps %d × %d dimensions would keep %.3g GB of draws (the limit is %d GB): use fewer chains or steps", f.chains, f.steps, d, need/1e9, maxDrawBytes>>30)
	}
	work, what := f.workMemory(m)
	if limit := f.accepted.Raise(memoryLimit(maxWorkBytes)); need+work > limit {
		fit := int(0.9 * limit / ((need + work) / float64(f.chains))) // both grow with the chains; 10% kept for the limit's own drift (probe 51: it moves with what the process maps)
		fewer, particles := "chains", ""
		if f.sampler == "flowmc" { // its proposals (probe 54: --particles was advised for mala)
			fewer, particles = "chains or particles", "fewer --particles, or "
		}
		advice := fmt.Sprintf("use fewer %s (about %d chains fit)", fewer, fit)
		if fit < 2 { // probe 53: "about 1 chains fit", and --chains 1 is refused
			advice = fmt.Sprintf("not even 2 chains fit: use %sa smaller model", particles)
		}
		if f.resume != "" { // probe 58: fewer chains, which --resume refuses
			advice = "a resumed run keeps its chains: " + f.accepted.Where()
		}
		return fmt.Errorf("%s need about %s of working memory besides %s of draws (the limit is %s: %s): %s", strings.Join(what, " + "), sysmem.Bytes(work), sysmem.Bytes(need), sysmem.Bytes(limit), sysmem.Why(maxWorkBytes), advice)
	}
	return f.checkBatch(m)
}

// checkBatch refuses chains, or flowMC's proposals, more than the
// models' graphs can be built on at once (maxBatch: an ONNX graph whose
// values for that many points would be over the size one tensor may
// hold), naming the count that fits (probe 50: refused only as the graph
// was built, by a node's shape).
func (f sampleFlags) checkBatch(m checkpoint.Models) error {
	limit := maxBatch(m)
	switch {
	case f.chains > limit:
		return fmt.Errorf("--chains %d: the model's graph can be built on at most %d points at once (one of the values it computes from them would be over the %s one tensor may hold): use at most %d chains", f.chains, limit, onnx.MaxTensorSize(), limit)
	case f.sampler == "flowmc" && f.particles*f.chains > limit:
		return fmt.Errorf("--particles %d × --chains %d: flowMC evaluates the %d proposals as one batch, and the model's graph can be built on at most %d points at once (one of the values it computes from them would be over the %s one tensor may hold): use fewer particles or chains", f.particles, f.chains, f.particles*f.chains, limit, onnx.MaxTensorSize())
	}
	return nil
}

// workMemory estimates the kernels' buffers and the models' graphs on the
// chains (and i-SIR's proposals), in bytes, with the terms that make it.
func (f sampleFlags) workMemory(m checkpoint.Models) (float64, []string) {
	d, chains := m.EBM.Dim(), float64(f.chains)
	// The kernels hold a few dozen (chains × d) buffers (states,
	// proposals, gradients, the models' values for an MLP).
	work := chains * float64(d) * 8 * workBuffers
	what := []string{fmt.Sprintf("--chains %d × %d dimensions × %d buffers", f.chains, d, workBuffers)}
	add := func(rows float64, of string, rowBytes float64, net string) {
		if rowBytes > 0 {
			work += rows * rowBytes
			what = append(what, fmt.Sprintf("%s × %.3g MB (%s)", of, rowBytes/1e6, net))
		}
	}
	ebmGrad, flowGrad := graphRowBytes(m, true)
	ebmEval, flowEval := graphRowBytes(m, false)
	of := fmt.Sprintf("--chains %d", f.chains)
	if f.sampler != "flowmc" || f.local > 0 { // the chains' gradient steps
		add(chains, of, ebmGrad, "the EBM's graph with ∇ₓE")
	}
	if f.sampler == "neutra" || f.adaptive(m) { // MALA through the flow, or its training
		add(chains, of, flowGrad, "the flow's graph differentiated")
	} else if m.Flow != nil { // the chains' starts
		add(chains, of, flowEval, "the flow's graph")
	}
	if f.sampler == "flowmc" { // i-SIR: every chain's proposals as one batch
		rows := float64(f.particles) * chains
		proposals := fmt.Sprintf("--particles %d × --chains %d proposals", f.particles, f.chains)
		perRow := f.proposalBytes(m, flowEval)
		if f.adaptive(m) && f.particles < adaptiveParticles { // the flow's training grows with the chains, not the particles (probe 53)
			perRow *= float64(adaptiveParticles) / float64(f.particles)
		}
		work += rows * perRow
		what = append(what, fmt.Sprintf("%s × %.3g KB", proposals, perRow/1e3))
		add(rows, proposals, ebmEval, "the EBM's graph")
	}
	if f.checkpoint != "" { // each checkpoint copies the draws (probe 55: out of memory writing one at the count named)
		draws := chains * float64(f.steps) * float64(d) * 8
		work += draws
		what = append(what, fmt.Sprintf("a copy of the draws for --checkpoint (%.3g GB)", draws/1e9))
	}
	if rh := diagnostics.RHatBytes(f.chains, f.steps, d); rh > work { // R-hat once the chains are done, on as many dimensions as cores (probe 55: out of memory at the count named)
		work = rh
		what = []string{fmt.Sprintf("R-hat's work on %d dimensions at once × --chains %d × --steps %d × 96 B", diagnostics.Workers(d), f.chains, f.steps)}
	}
	return work, what
}

// proposalBytes is the memory one i-SIR proposal takes through the flow
// and the model (an image EBM's graph aside): measured 8.5 KB (peak RSS of
// 20000 chains × 31 proposals, d = 2, RealNVP 4 × [2, 16, 2]), scaled
// with the coupling nets' width max(16, 2d); an image flow's graph
// (flowEval bytes a row) is its own estimate.
func (f sampleFlags) proposalBytes(m checkpoint.Models, flowEval float64) float64 {
	width := float64(max(16, 2*m.EBM.Dim())) // the RealNVP's coupling nets
	switch {
	case f.adaptive(m): // the flow trained on the proposals too (probe 52)
		return math.Max(proposalRowBytes*width/16, adaptiveRowBytes*(width/adaptiveRowWidth)*(width/adaptiveRowWidth))
	case flowEval > 0:
		return proposalRowBytes + flowEval
	}
	return proposalRowBytes * math.Max(1, width/16)
}

// adaptiveRowBytes is the memory one i-SIR proposal takes while flowMC
// trains its flow on them (AdaptiveFlowMC), at coupling nets of width
// adaptiveRowWidth: measured, a live heap of 1.20 GB at 4 chains and 2.40
// GB at 8, 32 particles, d = 784 (gctrace; probe 52: counted as 833 KB, and
// 16 chains said to fit died out of memory). It grows faster than the
// width (at d = 2, width 16, 429 MB at 2,000 chains: 6.7 KB, within
// proposalRowBytes): scaled with its square, and at least
// proposalRowBytes scaled with the width.
//
// adaptiveParticles is the particles of that measure: with fewer, the
// memory per chain is no less (probe 53: at 2 particles, the count of
// chains named died out of memory), and is counted as at 32.
const (
	adaptiveRowBytes  = 9.4e6
	adaptiveRowWidth  = 1568
	adaptiveParticles = 32
)

// proposalRowBytes is the memory one i-SIR proposal takes through the flow
// and the model at the smallest widths (see checkMemory).
const proposalRowBytes = 8.5e3

// workBuffers is about how many (chains × d) float64 buffers the kernels
// and models hold at once; maxWorkBytes bounds draws and buffers together.
const (
	workBuffers  = 32
	maxWorkBytes = 8 << 30
)

func pct(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// adaptiveRun is flowMC training its flow during the warm-up (paper
// Alg. 5): the flow of --flow, or a RealNVP at the identity over the
// chains' starting Gaussian, is trained on the chains' states during the
// warm-up cycles, then frozen for the draws kept (algorithms.AdaptiveFlowMC).
func (f sampleFlags) adaptiveRun(rng *rand.Rand, m checkpoint.Models, x *mat.Dense, out io.Writer) (*adaptiveRun, error) {
	if m.Flow == nil && m.EBM.Dim() < 2 { // probe 61: "layers: RealNVP needs Dim ≥ 2"; round 127 A5: before --warmup's refusal, which, followed, led here
		return nil, fmt.Errorf("--sampler flowmc without --flow trains a RealNVP, whose couplings split the coordinates: it needs d ≥ 2, and --model %s has d = 1; sample it with --sampler mala, hmc or ula, or give a flow of your own with --flow", f.model)
	}
	if f.warmup < 1 { // AdaptiveFlowMC would take 0 for its default length
		what := "flowmc without a flow trains one during the warm-up"
		if m.Flow != nil { // probe 68 A3: "without a flow" beside --flow
			what = "flowmc with --train-flow trains the flow during the warm-up"
		}
		return nil, fmt.Errorf("--warmup %d: %s: want ≥ 1 cycles (a hundred or more to learn the modes)", f.warmup, what)
	}
	flow := m.Flow
	if flow == nil {
		d := m.EBM.Dim()
		sigma := adaptiveBaseSigma(m)
		hidden := max(16, 2*d)
		var err error
		if flow, err = graph.NewFlow(layers.RealNVP{Dim: d, Blocks: 4, Hidden: []int{hidden}}, layers.NewIsotropic(d, sigma), tensor.Float64, rng); err != nil {
			return nil, err
		}
		flow.Parallel = f.parallel()
		if f.resume != "" { // round 83 B4: "training" announced, after the warm-up had ended
			fmt.Fprintf(out, "no flow given: the RealNVP (4 blocks of [%d, %d, %d]) over N(0, %.3g² I) trained on the chains' states during the %d warm-up cycles continues from the checkpoint's weights\n", d, hidden, d, sigma, f.warmup)
		} else {
			fmt.Fprintf(out, "no flow given: training a RealNVP (4 blocks of [%d, %d, %d]) over N(0, %.3g² I) on the chains' states during the %d warm-up cycles\n", d, hidden, d, sigma, f.warmup)
		}
	} else if f.resume != "" {
		fmt.Fprintf(out, "the flow of %s (%d parameters) trained on the chains' states during the %d warm-up cycles continues from the checkpoint's weights\n", cmp.Or(f.flow, f.model), flow.Params.Count(), f.warmup)
	} else {
		fmt.Fprintf(out, "training the flow of %s (%d parameters) on the chains' states during the %d warm-up cycles\n", cmp.Or(f.flow, f.model), flow.Params.Count(), f.warmup)
	}
	patience := f.patience
	if patience == 0 {
		patience = -1 // never
	}
	a := algorithms.AdaptiveFlowMC{Target: m.EBM, Flow: flow, TrainingCycles: f.warmup, Particles: f.particles,
		LocalSteps: f.local, StepSize: f.step, Patience: patience, Report: adaptiveProgress(out, time.Now(), f.patience)}
	r, err := a.Start(x, f.steps)
	if err != nil {
		return nil, err
	}
	return &adaptiveRun{AdaptiveRun: r, flow: flow}, nil
}

// adaptiveProgress prints each window of the training phase: acceptances,
// the flow's log-likelihood, R-hat, rate and time left, and why it stops
// early.
func adaptiveProgress(out io.Writer, start time.Time, patience int) func(algorithms.AdaptiveReport) {
	var last time.Time
	return func(r algorithms.AdaptiveReport) {
		if now := time.Now(); now.Sub(last) >= time.Second || r.Stopped || r.Cycle == r.Cycles {
			last = now
		} else {
			return // at most a line a second
		}
		el := time.Since(start).Seconds()
		rate := float64(r.Cycle) / max(el, 1e-9)
		eta := time.Duration(float64(r.Cycles-r.Cycle) / rate * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(out, "warm-up cycle %d/%d: global acceptance %s, local %s, flow log-likelihood %.4g, R-hat %.3g; %.3g cycles/s, %v left\n",
			r.Cycle, r.Cycles, pct(r.Global), pct(r.Local), r.LogLikelihood, r.RHat, rate, eta)
		if r.Stopped {
			fmt.Fprintf(out, "global acceptance has not risen by 0.01 in %s of 10 cycles (--patience %d): training stops, the flow is frozen after %d of %d warm-up cycles\n", count(patience, "window"), patience, r.Cycle, r.Cycles)
		}
	}
}

// buildKernel returns the sampler f asks for, and its MALA if it has one
// (to freeze after warm-up).
func buildKernel(f sampleFlags, m checkpoint.Models) (algorithms.Kernels, error) {
	if !(f.step > 0) {
		return algorithms.Kernels{}, fmt.Errorf("--step %v, want > 0", f.step)
	}
	kind := algorithms.KernelKind(f.sampler)
	switch kind {
	case algorithms.KernelMALA, algorithms.KernelULA, algorithms.KernelHMC:
	case algorithms.KernelFlowMC: // without a flow: sampleAdaptive
	case algorithms.KernelNeuTra:
		if m.Flow == nil {
			return algorithms.Kernels{}, fmt.Errorf("--sampler %s needs a flow, in the model's float type (%v): give --flow CHECKPOINT (a run's), or a flow's ONNX graphs as --flow SAMPLE.onnx --flow-density DENSITY.onnx (the density graph with the output z = T⁻¹(x)); or --model a checkpoint with a flow", f.sampler, m.EBM.Params.Dtype())
		}
		if fd, ed := m.Flow.Params.Dtype(), m.EBM.Params.Dtype(); fd != ed {
			promoted := ""
			if fn, ok := m.Flow.Net.(*onnx.FlowNet); ok {
				promoted = fn.Promoted()
			}
			return algorithms.Kernels{}, fmt.Errorf("--sampler neutra composes the flow and the model in one graph, which needs one float type: the flow (%s) is %v%s, the model (%s) %v: use flowmc, or a flow and a model of one type", cmp.Or(f.flow, f.model), fd, promoted, f.model, ed)
		}
		if fn, ok := m.Flow.Net.(*onnx.FlowNet); ok {
			if err := fn.NeedInverse(); err != nil {
				return algorithms.Kernels{}, fmt.Errorf("--flow-density %w (or give a flowebm flow's checkpoint as --flow CHECKPOINT, which neutra inverts itself)", err)
			}
		}
	default:
		return algorithms.Kernels{}, fmt.Errorf("--sampler %q, want mala, ula, hmc, flowmc or neutra", f.sampler)
	}
	if kind == algorithms.KernelHMC && f.leapfrog < 1 {
		return algorithms.Kernels{}, fmt.Errorf("--leapfrog %d, want ≥ 1", f.leapfrog)
	}
	if kind == algorithms.KernelFlowMC && (f.particles < 2 || f.local < 0) {
		return algorithms.Kernels{}, fmt.Errorf("--particles %d (want ≥ 2), --local %d (want ≥ 0)", f.particles, f.local)
	}
	k, err := algorithms.NewKernels(algorithms.KernelConfig{Kind: kind, StepSize: f.step, Leapfrog: f.leapfrog,
		Particles: f.particles, GlobalSteps: 1, LocalSteps: f.local, Stacked: true}, m.EBM, m.Flow)
	return k, err
}

// fileSumNote is " (its SHA-256 was SUM)" where p is a regular file
// (sha256sum checks a copy found), "" for a folder (its sum is flowebm's,
// over its model's files).
func fileSumNote(p, sum string) string {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return ""
	}
	return " (its SHA-256 was " + sum + ")"
}

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
)

func convertCmd() *cobra.Command {
	var what string
	var f32, f64, force bool
	var base float64
	cmd := &cobra.Command{
		Annotations: map[string]string{emptyArguments: "by their role"}, // which depends on the other argument
		Use:         "convert CHECKPOINT OUT.onnx | convert IN.onnx CHECKPOINT",
		Short:       "Convert between flowebm checkpoints and ONNX (IR 7, opset 13)",
		Long: `convert writes one model of a checkpoint (a folder with spec.json and
weights.npz, or a run folder holding checkpoint/) as an ONNX file with a
dynamic batch dimension, in the checkpoint's dtype unless --float32 or
--float64:

  --what ebm           input x (batch, d), output energy (batch, 1): the network's E(x),
                       as torch.onnx.export writes the same nn.Sequential (Gemm per Linear)
  --what energy        the same, with the model's whole energy in the data's units:
                       E(z) − log ρ(z) + Σ log scale, z the standardised x (as "flowebm energy")
  --what flow-sample   input z (batch, d), base draws; outputs x = T(z) and log_density (batch)
  --what flow-density  input x (batch, d), outputs log_density (batch) = log λ(x)
                       and z (batch, d) = T⁻¹(x), which NeuTra needs

A run trained on points of two axes or more (spec.json's point_shape, such
as [C, H, W] for images) gets --what ebm and energy graphs of input x
(batch, C, H, W), flattened by a first Flatten node, so that they take its
points as it does. The network (--what ebm) and the flow graphs work in the models' coordinates
(standardised, for a run on your own data; spec.json's "standardization" maps
them to your units); --what energy takes the data's units.
In float64, LeakyRelu, Softplus, Elu and SiLU are written with elementary ops
(ONNX Runtime's CPU provider has no double kernels for them, or, for SiLU's
x·Sigmoid(x), fuses it into one without at its default optimisation). Every export passes
onnx.checker.check_model(full_check=True) and runs in ONNX Runtime 1.30 with
outputs within 1e-10 (float64) and 1e-5 (float32) of flowebm's (tested),
but for a convolutional network's float64 graph: ONNX Runtime has no float64
Conv or average pooling (a note says so; --float32 runs there).
A flow the run started from an ONNX file (train --flow) is written as it
was imported, its own graph with the trained weights: it runs where the
original does (a float64 x·sigmoid(x) in it needs ONNX Runtime's graph
optimisation lowered, as the original does).

The other direction, IN.onnx → CHECKPOINT (a folder), takes an energy network
that is a chain of Linears (Gemm with transB = 1) and one hidden activation
(relu, leaky_relu, tanh, softplus, elu, silu, recognised by its values
however the file writes it), as torch.onnx.export writes an nn.Sequential
MLP (a Flatten or Reshape first, for an input of images, whose shape the
checkpoint records as its point_shape), and writes it as the EBM of a
checkpoint with the tilt N(0, σ² I), σ = --base (default 1). Other architectures are refused with the
node that does not fit: use them directly with "flowebm energy" and
"flowebm sample", which run any supported ONNX graph.`,
		Args: positional(2, 2, "two paths, the input and the output: CHECKPOINT OUT.onnx, or IN.onnx CHECKPOINT", ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, out := args[0], args[1]
			if err := checkConvertArgs(in, out); err != nil {
				return err
			}
			if isONNXFile(in) {
				for _, flag := range []string{"what", "float32", "float64"} {
					if cmd.Flags().Changed(flag) {
						return fmt.Errorf("--%s applies to CHECKPOINT → OUT.onnx; converting %s into a checkpoint would ignore it: drop it", flag, in)
					}
				}
				return onnxToCheckpointIn(cmd, in, filepath.Clean(out), base, force)
			}
			if cmd.Flags().Changed("base") {
				return fmt.Errorf("--base applies to IN.onnx → CHECKPOINT (the tilt of the checkpoint made); a checkpoint's ONNX export keeps its own")
			}
			if f32 && f64 {
				return fmt.Errorf("--float32 and --float64: give one")
			}
			return checkpointToONNX(cmd, in, out, what, onnx.Options{Float32: f32, Float64: f64}, force)
		},
	}
	cmd.Flags().StringVar(&what, "what", "ebm", "ebm, energy, flow-sample or flow-density")
	cmd.Flags().BoolVar(&f32, "float32", false, "write float32")
	cmd.Flags().BoolVar(&f64, "float64", false, "write float64")
	cmd.Flags().Float64Var(&base, "base", 1, "σ of the tilt N(0, σ² I) of a checkpoint made from ONNX")
	cmd.Flags().BoolVar(&force, "force", false, "replace the checkpoint already in CHECKPOINT, or the file OUT.onnx")
	return cmd
}

// checkConvertArgs refuses empty arguments.
func checkConvertArgs(in, out string) error {
	switch {
	case in == "":
		return fmt.Errorf("the first argument (CHECKPOINT, or IN.onnx) is empty: give the model to convert")
	case out == "":
		return fmt.Errorf("the second argument (OUT.onnx, or CHECKPOINT) is empty: give the file or folder to write")
	}
	return nil
}

// onnxToCheckpoint writes the MLP energy network of in as the EBM of a
// checkpoint in the folder out, calling placed once it is in place.
func onnxToCheckpoint(cmd *cobra.Command, in, out string, sigma float64, placed func()) error {
	if !checkpoint.ValidBaseSigma(sigma) {
		return fmt.Errorf("--base %v, want σ in %s", sigma, checkpoint.BaseSigmaRange)
	}
	net, err := onnx.ReadFile(in)
	if o := (*onnx.OutputsError)(nil); errors.As(err, &o) { // probe 57: the advice named --output, which convert has not
		return fmt.Errorf("%s: the graph has %d outputs (%s): convert turns an energy graph of one output, an MLP, into a checkpoint; a flow's graphs (x and log_density, or log_density and z) are read as they are: sample --flow SAMPLING.onnx --flow-density DENSITY.onnx", in, len(o.Names), strings.Join(o.Names, ", "))
	}
	if err != nil {
		return err
	}
	mlp, vals, err := net.MLP()
	if err != nil {
		return err
	}
	base := layers.NewIsotropic(net.Dim(), sigma)
	ebm, err := graph.NewEBM(graph.MLPEnergy{MLP: mlp}, &base, net.Dtype, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return err
	}
	for i, q := range ebm.Params.List() {
		if err := q.SetFloat64s(vals[i]); err != nil {
			return fmt.Errorf("%s: %s: %w", in, q.Name, err)
		}
	}
	if err := graphEnergiesKept(net, ebm, &base); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	models := checkpoint.Models{EBM: ebm}
	if in := net.InputShape(); len(in) >= 2 { // the graph's point shape, refused in other arrangements as the graph refuses them (round 122 A1)
		models.PointShape = in
	}
	if err := replaceCheckpoint(out, models, placed); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: EBM %v with %s, %s, tilt N(0, %g² I)\n", out, mlp.Sizes, mlp.Hidden, net.Dtype, sigma)
	return nil
}

// graphEnergiesKept checks the EBM read from net as an MLP against net itself,
// both tilted by base, at 4 points drawn from base (fewer for a graph of
// a smaller fixed batch): what MLP recognised (the activations, a Reshape
// before the first Linear) must give the graph's energies, to 1e-9 (1e-4
// in float32) relative to max(1, |E|).
func graphEnergiesKept(net *onnx.Net, ebm *graph.EBM, base *layers.Gaussian) error {
	ref, err := graph.NewEBM(net, base, net.Dtype, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return err
	}
	n, d := max(1, min(4, net.MaxBatch())), net.Dim()
	rng := rand.New(rand.NewPCG(0x5ae, 0xe7))
	x := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			x.Set(i, j, base.Sigma[j%len(base.Sigma)]*rng.NormFloat64())
		}
	}
	want, got := make([]float64, n), make([]float64, n)
	if err := ref.Energy(x, want); err != nil {
		return err
	}
	if err := ebm.Energy(x, got); err != nil {
		return err
	}
	tol := 1e-9
	if net.Dtype == tensor.Float32 {
		tol = 1e-4
	}
	for i := range n {
		if diff := math.Abs(got[i] - want[i]); !(diff <= tol*max(1, math.Abs(want[i]))) {
			return fmt.Errorf("the MLP read from the graph gives energy %v at a point where the graph gives %v: it does not convert (a node the reading took for another); give the .onnx file itself as --model (flowebm energy and sample read it)", got[i], want[i])
		}
	}
	return nil
}

// onnxToCheckpointIn converts the ONNX energy in into a checkpoint folder
// out, locked, never inside or over a training run. A checkpoint replaced
// (--force) stays whole until the new one is: see replaceCheckpoint.
func onnxToCheckpointIn(cmd *cobra.Command, in, out string, base float64, force bool) error {
	// Its own lock first: what a process writing there has put in it is
	// not a stranger's file to move out (probe 38: compare's .compare-N).
	if lockedByOther(out) && lockLinks(out) == 1 { // a hard-linked one is left to lockOutputFolder's refusal (probe 40)
		lock := filepath.Join(out, ".lock")
		return folderBusyError{dir: out, lock: lock, holder: lockHolder(lock)}
	}
	if err := checkConvertTarget(out, force); err != nil {
		return err
	}
	// Before the lock: a signal while it is taken (probe 33: the process
	// died without a word). A signal removes the folders made for the lock.
	defer removeTempsOnSignal()()
	release, untrackOut, err := lockOutputFolder(out, "convert")
	if err != nil {
		return err
	}
	defer release()
	if err := cleanSwapLeftovers(out); err != nil {
		return err
	}
	// Again, locked: another convert may have written out meanwhile.
	if err := checkConvertTarget(out, force); err != nil {
		return err
	}
	return onnxToCheckpoint(cmd, in, out, base, untrackOut)
}

// checkConvertTarget refuses a CHECKPOINT that is the working folder or
// holds it (no folder is replaced from inside), a file, a new folder
// named .onnx (which the commands would take for an ONNX file), a
// training run or inside one, or (without --force) that holds a
// checkpoint.
func checkConvertTarget(out string, force bool) error {
	if wd, err := os.Getwd(); err == nil && within(wd, out) {
		return fmt.Errorf("CHECKPOINT %s is the working folder or holds it: convert writes a checkpoint by replacing its whole folder; give a folder below it (such as %s), or run convert from elsewhere", out, filepath.Join(out, "model"))
	}
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return fmt.Errorf("CHECKPOINT %s is a file: give a folder for the checkpoint (convert IN.onnx CHECKPOINT writes a folder)", out)
	}
	if strings.ToLower(filepath.Ext(out)) == ".onnx" && !exists(filepath.Join(out, "spec.json")) {
		return fmt.Errorf("CHECKPOINT %s ends in .onnx, but convert IN.onnx CHECKPOINT writes a checkpoint folder (spec.json, weights.npz), which the commands would take for an ONNX file: give a folder name without .onnx (to re-export as ONNX, convert that checkpoint to OUT.onnx next)", out)
	}
	if isTrainingRun(out) {
		return fmt.Errorf("%s holds a training run: convert into another folder (--force replaces only a checkpoint that convert wrote)", out)
	}
	if run := trainingRunAbove(out); run != "" {
		return fmt.Errorf("%s is inside the training run %s, whose checkpoints it would replace: convert into another folder", out, run)
	}
	if err := checkHeldFolder("CHECKPOINT", out, "convert into another folder"); err != nil { // probe 32: a run setting up (.lock alone) deleted it
		return err
	}
	if fi, err := os.Lstat(out); err == nil && fi.Mode()&fs.ModeSymlink != 0 { // probe 34: the link was replaced, a lone .lock left where it led
		target, _ := os.Readlink(out)
		return fmt.Errorf("CHECKPOINT %s is a symbolic link (to %s): convert writes a checkpoint by replacing its whole folder, which would replace the link; give the folder itself", out, target)
	}
	if isRun(out) && !force {
		return fmt.Errorf("%s already holds a checkpoint or run: give another folder, or replace it with --force", out)
	}
	return checkOnlyCheckpoint(out)
}

// checkOnlyCheckpoint refuses to replace a folder that holds files other
// than a checkpoint's (spec.json, weights.npz, COMPLETE, the lock):
// --force replaces the whole folder, which would delete them.
func checkOnlyCheckpoint(out string) error {
	entries, err := os.ReadDir(out)
	if err != nil {
		return nil // no folder yet
	}
	for _, e := range entries {
		switch e.Name() {
		case "spec.json", "weights.npz", "COMPLETE", ".lock":
			continue
		}
		return fmt.Errorf("%s holds %s, which is not part of a checkpoint: convert --force replaces the whole folder and would delete it; move it out first, or convert into another folder", out, e.Name())
	}
	return nil
}

// replaceCheckpoint writes m into a temporary folder beside out (.OUT.new-N)
// and, once complete, swaps it with out (safefile.ReplaceDir), then
// removes the old checkpoint: a kill at any point leaves out holding the
// old checkpoint or the new one, whole, and leftovers that the next
// convert removes (cleanSwapLeftovers). placed is called in the swap's
// Hold, so that a signal never removes the folder once it holds the new
// checkpoint.
func replaceCheckpoint(out string, m checkpoint.Models, placed func()) error {
	tmp, untrack, err := safefile.MkdirTempTracked(filepath.Dir(out), "."+filepath.Base(out)+".new-")
	if err != nil { // probe 24: named only the hidden folder
		return fmt.Errorf("%s: the new checkpoint is written beside it, in %s, first: %w", out, filepath.Dir(out), err)
	}
	defer untrack()
	defer os.RemoveAll(tmp)
	if err := checkpoint.Save(tmp, m); err != nil {
		return errors.New(strings.ReplaceAll(err.Error(), tmp, out))
	}
	hook("convert-written")
	aside := filepath.Join(filepath.Dir(tmp), strings.Replace(filepath.Base(tmp), ".new-", ".old-", 1))
	err = safefile.Hold(func() error {
		if err := safefile.ReplaceDir(tmp, out, aside); err != nil {
			return err
		}
		placed()
		return nil
	})
	hook("convert-swapped")
	return err
}

// cleanSwapLeftovers removes what a killed replaceCheckpoint left beside
// out, first putting back the old checkpoint where the kill came between
// the two renames of a swap without atomic exchange.
func cleanSwapLeftovers(out string) error {
	entries, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		return err
	}
	var left []string
	for _, e := range entries {
		for _, kind := range []string{".new-", ".old-"} {
			// Its own names exactly, folders (probe 34: a prefix took
			// .CK.old-backup/ and the input .CK.new-1.onnx with it).
			if e.IsDir() && safefile.IsTemp(e.Name(), "."+filepath.Base(out)+kind) {
				left = append(left, filepath.Join(filepath.Dir(out), e.Name()))
			}
		}
	}
	for _, l := range left {
		if strings.Contains(filepath.Base(l), ".old-") && !exists(filepath.Join(out, "spec.json")) && exists(filepath.Join(l, "spec.json")) {
			if err := safefile.RestoreAside(l, out, "spec.json", ".lock"); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(l); err != nil {
			return err
		}
	}
	return nil
}

// checkpointToONNX exports what of the checkpoint (or run) in as the ONNX
// file out.
func checkpointToONNX(cmd *cobra.Command, in, out, what string, o onnx.Options, force bool) error {
	if fi, err := os.Stat(in); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() { // probe 44: a pipe was "a file"
		return fmt.Errorf("CHECKPOINT %s: convert CHECKPOINT OUT.onnx reads a checkpoint folder (spec.json, weights.npz) or a run folder, and convert IN.onnx CHECKPOINT a regular file named .onnx (write the model to one)", irregular(in, fi))
	}
	if fi, err := os.Stat(in); err == nil && !fi.IsDir() && !slices.Contains(checkpointFiles, filepath.Base(in)) {
		return fmt.Errorf("CHECKPOINT %s is a file: convert CHECKPOINT OUT.onnx reads a checkpoint folder (spec.json, weights.npz) or a run folder, and convert IN.onnx CHECKPOINT an .onnx file", in)
	}
	if strings.ToLower(filepath.Ext(out)) != ".onnx" {
		return fmt.Errorf("%s: want an output file ending in .onnx", out)
	}
	if err := checkOutput("OUT.onnx", out, in); err != nil {
		return err
	}
	if err := checkNew("OUT.onnx", out, force); err != nil {
		return err
	}
	defer removeTempsOnSignal()()
	m, err := modelLoader{notes: cmd.ErrOrStderr()}.loadCheckpoint(in)
	if err != nil {
		return err
	}
	var b []byte
	if what == "ebm" || what == "energy" {
		o.PointShape = m.PointShape // the points' shape, as the run took them (round 122 A1)
	}
	switch what {
	case "ebm":
		b, err = onnx.EBM(m.EBM, o)
	case "energy":
		o.Full, o.Scaling = true, m.Scaling
		b, err = onnx.EBM(m.EBM, o)
	case "flow-sample", "flow-density":
		if m.Flow == nil {
			return fmt.Errorf("%s: the checkpoint has no flow (a run trained without one, or a checkpoint converted from an ONNX energy): --what ebm or energy exports its energy network", in) // round 133 A3: no way on
		}
		o.Scaling = m.Scaling // recorded in the graphs' metadata: sample reads their units (round 78 B3)
		b, err = flowGraph(m.Flow, what == "flow-sample", o)
	default:
		return fmt.Errorf("--what %q, want ebm, energy, flow-sample or flow-density", what)
	}
	if err == nil {
		err = checkExportFinite(b, in, out, what)
	}
	if err != nil {
		return err
	}
	if err := writeOutput("OUT.onnx", out, force, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes)\n", out, len(b))
	ops, double := exportOps(b)
	if note := tiltNote(m.EBM.Tilt, ops["Conv"]); what == "ebm" && note != "" { // round 86 A3: converted back with the default --base 1, the energies moved by up to 9 nats
		fmt.Fprintln(cmd.OutOrStdout(), note)
	}
	if note := ortDoubleNote(ops, double); note != "" {
		fmt.Fprintln(cmd.OutOrStdout(), note)
	}
	if identityOrNil(m.Scaling) != nil && what != "energy" { // probe 69 B3: unsaid, energies 100 and 434 for the run's 3.95 and 4.18
		which := "its input is" // x: ebm, flow-density
		if what == "flow-sample" {
			which = "its output x is" // probe 70 A3: its input is the base draws z
		}
		fmt.Fprintf(cmd.OutOrStdout(), "note: %s in the models' standardised coordinates (the run's data scaling, spec.json's \"standardization\"), not the data's units; --what energy takes the data's units\n", which)
	}
	return nil
}

// exportOps are the operators of the ONNX graph b that convert wrote, and
// whether its input is float64.
func exportOps(b []byte) (ops map[string]bool, double bool) {
	m, err := onnx.DecodeModel(b)
	if err != nil || m.Graph == nil {
		return nil, false
	}
	ops = map[string]bool{}
	for _, n := range m.Graph.Nodes {
		ops[n.OpType] = true
	}
	return ops, len(m.Graph.Inputs) > 0 && m.Graph.Inputs[0].ElemType == onnx.TypeDouble
}

// ortNoDouble are the operators of convert's graphs for which ONNX
// Runtime's CPU provider has no float64 kernel (checked with 1.30).
var ortNoDouble = []string{"Conv", "ConvTranspose", "AveragePool", "GlobalAveragePool"}

// ortDoubleNote says where a float64 graph holds an operator that ONNX
// Runtime runs in float32 only (round 117 A1: a convolutional EBM's
// default export failed to load there, unsaid); "" otherwise.
func ortDoubleNote(ops map[string]bool, double bool) string {
	var lacking []string
	for _, op := range ortNoDouble {
		if double && ops[op] {
			lacking = append(lacking, op)
		}
	}
	if len(lacking) == 0 {
		return ""
	}
	return fmt.Sprintf("note: ONNX Runtime's CPU provider has no float64 kernel for %s, which this float64 graph holds: flowebm reads it; for ONNX Runtime write it with --float32 (within 1e-5 of flowebm's)", strings.Join(lacking, ", "))
}

// tiltNote says that --what ebm writes the network without the
// checkpoint's tilt, and how to convert it back, or, for a convolutional
// network, which converts back to no checkpoint, how to use it (round 117
// A2: "convert it back", which then failed); "" for none, or σ = 1,
// convert's default --base.
func tiltNote(t *layers.Gaussian, conv bool) string {
	if t == nil || len(t.Sigma) == 0 || !slices.ContainsFunc(t.Sigma, func(s float64) bool { return s != 1 }) {
		return ""
	}
	s := strconv.FormatFloat(t.Sigma[0], 'g', -1, 64)
	if slices.ContainsFunc(t.Sigma, func(v float64) bool { return v != t.Sigma[0] }) {
		return "note: the network alone, without the checkpoint's tilt ρ = N(0, diag σ²) (spec.json's base_sigma, per dimension): an energy of it needs that tilt"
	}
	if conv {
		return "note: the network alone, without the checkpoint's tilt ρ = N(0, σ² I), σ = " + s + ": flowebm energy and sample take it with --base " + s + " (a convolutional network converts back to no checkpoint)"
	}
	return "note: the network alone, without the checkpoint's tilt ρ = N(0, σ² I), σ = " + s + ": convert it back with --base " + s
}

// checkExportFinite refuses an export b (of --what of the checkpoint in, to
// out) holding a NaN or infinite constant, which flowebm and ONNX Runtime
// refuse to read: a value of the checkpoint that overflows in the export
// (1/σ² of a base_sigma of 5e-324, a float64 weight beyond float32's range
// with --float32).
func checkExportFinite(b []byte, in, out, what string) error {
	m, err := onnx.DecodeModel(b)
	if err != nil {
		return fmt.Errorf("OUT.onnx %s: the export does not decode: %w", out, err)
	}
	for _, t := range exportConstants(m.Graph) {
		for i, v := range t.Float {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("OUT.onnx %s: the export of %s (--what %s) would hold %v in %q (element %d of %v): a value of the checkpoint overflows there (check its spec.json base_sigma and its weights; with --float32, a value beyond float32's range); nothing was written", out, in, what, v, t.Name, i, t.Dims)
			}
		}
	}
	return nil
}

// exportConstants are the initializers of g and the tensors of its
// Constant nodes.
func exportConstants(g *onnx.Graph) []*onnx.Tensor {
	ts := append([]*onnx.Tensor(nil), g.Initializers...)
	for _, nd := range g.Nodes {
		for _, a := range nd.Attrs {
			if a.T != nil {
				ts = append(ts, a.T)
			}
		}
	}
	return ts
}

// flowGraph is a flow's sampling or density graph: flowebm's RealNVP or
// neural spline flow exported (onnx.FlowSample and FlowDensity write
// either), or a flow read from ONNX with its trained weights written back
// (its own graphs, which --float32 and --float64 cannot convert).
func flowGraph(f *graph.Flow, sample bool, o onnx.Options) ([]byte, error) {
	if _, ok := f.Net.(*onnx.FlowNet); !ok {
		if sample {
			return onnx.FlowSample(f, o)
		}
		o.Latent = true // z = T⁻¹(x) too: NeuTra (train --algorithm nt, sample --sampler neutra) needs it
		return onnx.FlowDensity(f, o)
	}
	if (o.Float32 && f.Params.Dtype() != tensor.Float32) || (o.Float64 && f.Params.Dtype() != tensor.Float64) {
		return nil, fmt.Errorf("the flow was read from ONNX in %v: it is written back as its own graphs, in their type (drop --float32/--float64)", f.Params.Dtype())
	}
	sb, db, err := onnx.EncodeFlowWeights(f)
	if sample {
		return sb, err
	}
	return db, err
}

package main

import (
	"bufio"
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
	"sync"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/shapes"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/layers"
)

func energyCmd() *cobra.Command {
	var f energyFlags
	cmd := &cobra.Command{
		Use:   "energy --model FILE --points X [--out E.npy] [--grad G.npy]",
		Short: "Evaluate an energy (and its gradient) at given points",
		Long: `energy reads points (n, d) from X (.npy float32/float64, .npz with --key, or
.csv with an optional header) and writes their energies E (n,) as float64,
and with --grad the gradients ∇ₓE in the points' shape.

MODEL is an .onnx energy network (PyTorch's torch.onnx.export of an
nn.Module mapping a batch (n, …) to (n, 1) or (n); E is its output,
squeezed), or a flowebm checkpoint. An ONNX model's input may have any
shape: an image EBM exported with input (n, C, H, W) takes points as an
(n, C, H, W) array, or flat (n, C·H·W). A graph with several outputs needs
--output NAME; --log-density reads the output as a log density (a flow's
log_prob) and writes its negative as the energy.

A flowebm checkpoint is a folder with spec.json and weights.npz, or a run
folder holding checkpoint/. For a checkpoint, E is the model's whole energy in the
data's original units: minus the log of its unnormalised density,
E(z) − log ρ(z) + Σ log scale with z the point standardised as in training
(identity for the built-in experiments) and ρ the normalised base
N(0, diag σ²), so that exp(−E) is proportional to the learned density;
summed over a grid times the cell volume it is the model's mass there times
the EBM's normaliser Z (1 at initialisation). A checkpoint takes points of
any shape (n, …) whose trailing sizes multiply to its dimension, such as
image arrays (n, C, H, W), flattened as train --data does; colour images
stored channels last (n, H, W, C) are refused (transpose them first), and
a run trained on points of two axes or more (spec.json's point_shape) takes
them in that arrangement (axes of size 1 aside) or flat. A 1-D array of d
values is one point (for d = 1: n points).

--out and --grad take .npy (float64) or .csv; without --out the energies are
printed one per line. A positional X is the same as --points X. Energies
that are not finite (+Inf where the model's density is 0, as on the edge of
a support; NaN outside its domain) and gradients that are not finite are
written as they are, a note naming how many and the first; where no
energy is finite, the points are refused.`,
		Args: positional(0, 1, "at most one, the points (the same as --points X)", "the model goes in --model"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if f.points != "" {
					return fmt.Errorf("give the points once: --points or an argument")
				}
				f.points = args[0]
			}
			return runEnergy(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "an .onnx energy network, or a checkpoint or run folder")
	fl.StringVar(&f.model, "checkpoint", "", "same as --model")
	fl.StringVar(&f.points, "points", "", "points (n, d): .npy, .npz or .csv")
	fl.StringVar(&f.key, "key", "", "member of an .npz points file (default the first)")
	fl.StringVar(&f.out, "out", "", "energies: .npy or .csv (default: print)")
	fl.StringVar(&f.gradOut, "grad", "", "also write ∇ₓE in the points' shape: .npy or .csv")
	markPathFlags(fl, "model", "checkpoint", "points", "out", "grad")
	fl.BoolVar(&f.force, "force", false, "replace the files --out and --grad if they exist")
	fl.StringVar(&f.oc.Output, "output", "", "ONNX: the graph output holding the energy (needed when there are several)")
	fl.BoolVar(&f.oc.LogDensity, "log-density", false, "ONNX: the output is a log density; the energy is its negative")
	fl.Float64Var(&f.base, "base", 0, "ONNX: σ of a Gaussian tilt N(0, σ² I), as sample --base (0: no tilt)") // round 118 B1: convert's note sent here, refused
	return cmd
}

// energyFlags are energy's flags.
type energyFlags struct {
	model, points, key, out, gradOut string
	force                            bool
	oc                               onnx.Config
	base                             float64 // σ of an ONNX model's tilt (0: none)
}

// runEnergy evaluates the model's energy (and gradient) at the points.
func runEnergy(cmd *cobra.Command, f energyFlags) error {
	if f.model == "" || f.points == "" {
		return fmt.Errorf("give --model FILE and --points X")
	}
	if fi, err := os.Stat(f.points); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// A pipe would be read twice (its header, then its data) and hang.
		return fmt.Errorf("--points %s is not a regular file (mode %v): energy reads its header before its data; write the points to a file", f.points, fi.Mode().Type())
	}
	if err := checkEnergyFlags(cmd, f.model, f.points, f.key); err != nil {
		return err
	}
	if err := checkEnergyOutputs(f); err != nil {
		return err
	}
	defer removeTempsOnSignal()()
	m, err := modelLoader{notes: cmd.ErrOrStderr()}.load(f.model, f.oc)
	if err != nil {
		return namedInput(err, "--model", f.model, true)
	}
	if err := withBase(&m, f.base, f.model); err != nil {
		return err
	}
	if err := checkEnergyMemory(f, m); err != nil {
		return err
	}
	x, shape, err := data.ReadPoints(f.points, f.key)
	if errors.Is(err, fs.ErrNotExist) { // probe 70: "open nonexist.npy: no such file", naming no flag
		return fmt.Errorf("--points %s: no such file: give the file of the points whose energies to compute", f.points)
	}
	var fe *data.FormatError
	vector := errors.As(err, &fe) && strings.HasSuffix(fe.Field, "shape") && !strings.Contains(fe.Got, " ") && fe.Got != "[]"
	if vector { // n points of d = 1 (round 71), or one point (round 122 B3)
		x, shape, err = pointsVector(f.points, f.key, f.model, m.EBM.Dim())
	}
	if n := data.MemberNote(f.points, f.key); n != "" { // before a refusal of the member read (round 138 A4: a 1-D first member refused, unnamed)
		fmt.Fprintln(cmd.ErrOrStderr(), "flowebm: note:", n)
	}
	if err != nil {
		return missingKey(flaggedPath(err, "--points", f.points), f.key, "--points "+f.points)
	}
	if err := checkPointShape(f.points, shape, f.model, m); err != nil {
		return err
	}
	if err := checkFinitePoints(f.points, x, shape); err != nil {
		return err
	}
	if err := checkFloat32Points(f.points, x, m); err != nil {
		return err
	}
	if err := checkAtPoints(m, x, "the points of --points "+f.points); err != nil {
		return err
	}
	printUnchecked(cmd.ErrOrStderr(), m)
	if note := logDensityNote(f.model, m, f.oc); note != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "flowebm: note:", note)
	}
	n, d := x.Dims()
	e := make([]float64, n)
	var g *mat.Dense
	if f.gradOut != "" {
		g = mat.NewDense(n, d, nil)
	}
	err = energyInBatches(m, x, e, g)
	if err == nil && !slices.ContainsFunc(e, isFinite) { // none finite: the model is broken there (an overflow), no file of NaN
		err = checkFiniteEnergies(e, g, nodeAt(m, x))
	}
	if err != nil {
		if strings.HasPrefix(err.Error(), f.model+": ") { // a node of the graph, named with the file (probe 38: a model named "the" was found in "the energy …")
			return err
		}
		flag := "--model"
		if cmd.Flags().Changed("checkpoint") { // as given (probe 37)
			flag = "--checkpoint"
		}
		return fmt.Errorf("%s %s at the points of %s: %w", flag, f.model, f.points, err) // probe 36: "no gradient" named no model
	}
	for _, note := range nonFiniteNotes(e, g, nodeAt(m, x)) {
		fmt.Fprintln(cmd.ErrOrStderr(), "flowebm: note:", note)
	}
	// Both outputs or neither: each is written whole beside its place
	// first, then both are put in place while a signal's cleanup waits (a
	// full disk or a Ctrl-C between them left gradients of one model
	// beside the energies of another).
	var pair stagedOutputs
	defer pair.discard()
	if g != nil {
		gradShape := append([]int{n}, shape...)
		if vector { // in the points' shape (round 123 A3: (1, d) for (d,))
			gradShape = []int{n * d}
		}
		if err := writeArray(pair.stage, f.gradOut, f.force, g, gradShape, gradColumns(f.points)); err != nil {
			return err
		}
	}
	if err := writeVector(pair.stage, cmd, f.out, f.force, e, "energy"); err != nil {
		return err
	}
	return pair.place()
}

// checkEnergyOutputs checks the files --out and --grad before any work:
// their kind first, then that they are two, write no input and replace
// nothing without --force.
func checkEnergyOutputs(f energyFlags) error {
	for _, o := range []struct{ flag, path string }{{"--out", f.out}, {"--grad", f.gradOut}} {
		if ext := strings.ToLower(filepath.Ext(o.path)); o.path != "" && ext != ".npy" && ext != ".csv" {
			return fmt.Errorf("%s %s: want a .npy or .csv file", o.flag, o.path)
		}
	}
	if f.out != "" && f.gradOut != "" && sameFile(f.out, f.gradOut) {
		return fmt.Errorf("--grad and --out name the same file (%s): give two files", f.out)
	}
	if err := checkOutput("--out", f.out, f.points, f.model); err != nil {
		return err
	}
	if err := checkOutput("--grad", f.gradOut, f.points, f.model); err != nil {
		return err
	}
	for _, o := range []struct{ flag, path string }{{"--out", f.out}, {"--grad", f.gradOut}} {
		if err := checkNew(o.flag, o.path, f.force); err != nil {
			return err
		}
		if err := checkNoReplacedLeft(o.flag, o.path); err != nil {
			return err
		}
	}
	return nil
}

// checkEnergyFlags refuses flags that would be ignored: --model and
// --checkpoint both, --key without an .npz, the ONNX-only flags with a
// checkpoint.
func checkEnergyFlags(cmd *cobra.Command, model, points, key string) error {
	fl := cmd.Flags()
	if fl.Changed("model") && fl.Changed("checkpoint") {
		return fmt.Errorf("give --model or --checkpoint (the same flag), not both")
	}
	if key != "" && strings.ToLower(filepath.Ext(points)) != ".npz" {
		return fmt.Errorf("--key %q selects a member of an .npz file; %s is not one", key, points)
	}
	if b, _ := fl.GetFloat64("base"); b != 0 && !(b >= 1e-150 && b <= 1e150) {
		return fmt.Errorf("--base %v: want σ in [1e-150, 1e150], or 0 for no tilt", b)
	}
	if !isONNXFile(model) {
		for _, name := range []string{"output", "log-density", "base"} {
			if fl.Changed(name) {
				return fmt.Errorf("--%s applies to an ONNX model; %s is a checkpoint", name, model)
			}
		}
	}
	return nil
}

// checkEnergyMemory refuses, from its header, a points file whose
// points, energies and gradients, with the graph of the model m on one
// batch of them, would not fit in memory, before any is read (a 1.5 MB
// .npz of shape (1e8, 2), all zeros, crashed the process).
func checkEnergyMemory(f energyFlags, m checkpoint.Models) error {
	shape, err := data.PointsShape(f.points, f.key)
	if err != nil || len(shape) < 2 {
		return nil // the reader says what is wrong (a .csv: its text bounds it)
	}
	grad := f.gradOut != ""
	rowBytes, _ := graphRowBytes(m, grad)
	rows := energyRows(m, grad)
	n, d := float64(max(shape[0], 0)), 1.0
	for _, s := range shape[1:] {
		d *= float64(max(s, 0))
	}
	// The read holds up to twice the points (an .npz member's raw bytes,
	// or a Fortran-order file's transposition).
	need, what := 2*n*d*8+n*8, "points (read and kept), energies"
	if grad {
		need, what = need+n*d*8, what+", gradients"
	}
	if rowBytes > 0 {
		g := graphRows(shape[0], rows) * rowBytes
		need, what = need+g, what+fmt.Sprintf(", the model's graph on batches of %d points (%.3g MB a point)", rows, rowBytes/1e6)
	}
	if limit := memoryLimit(maxWorkBytes); need > limit {
		return fmt.Errorf("--points %s: %d points of shape %v need about %.3g GB (%s), over the limit of %.3g GB (%s): split the points into smaller files", f.points, shape[0], shape[1:], need/1e9, what, limit/1e9, sysmem.Why(maxWorkBytes))
	}
	return nil
}

// graphRows is how many rows of graph values the model holds once n
// points went through it in batches of rows: a batch's graph, and the
// last partial batch's (each batch size keeps its compiled graph).
func graphRows(n, rows int) float64 {
	if n <= rows {
		return float64(n)
	}
	return float64(rows + n%rows)
}

// energyGraphShare is the share of the memory limit that one batch's
// graph may take (the points, outputs and a partial batch's graph need
// the rest).
const energyGraphShare = 0.25

// energyRows is how many points energy evaluates at once with m (and
// ∇ₓE with grad): see batchRows.
func energyRows(m checkpoint.Models, grad bool) int {
	rowBytes, _ := graphRowBytes(m, grad)
	return min(batchRows(rowBytes, memoryLimit(maxWorkBytes)*energyGraphShare), maxBatch(m))
}

// batchLimited is a network whose graph cannot be built past a batch
// size (an ONNX graph: onnx.Net.MaxBatch).
type batchLimited interface{ MaxBatch() int }

// maxBatch is the largest batch m's graphs can be built at (probe 50:
// energy ran an ONNX conv EBM on batches of 4,096 points, and its first
// convolution's output was refused from 669 points on).
func maxBatch(m checkpoint.Models) int {
	limit := math.MaxInt
	if n, ok := m.EBM.Net.(batchLimited); ok {
		limit = n.MaxBatch()
	}
	if m.Flow != nil {
		if n, ok := m.Flow.Net.(batchLimited); ok {
			limit = min(limit, n.MaxBatch())
		}
	}
	return limit
}

// batchRows is energyBatch, or fewer where the model's graph holds
// rowBytes a point, so that a batch's graph takes at most budget bytes
// (at least one point).
func batchRows(rowBytes, budget float64) int {
	if !(rowBytes > 0) {
		return energyBatch
	}
	return int(max(1, min(energyBatch, math.Floor(budget/rowBytes))))
}

// graphRowBytes is the memory the graphs of m's EBM and flow hold per
// input row, differentiated (grad) or only evaluated, as the run
// configuration's estimate sizes them (algorithms.SizesOf: an ONNX
// graph's or an image model's GraphValues; an MLP's or a RealNVP's
// widths, twice over for the collector's garbage).
func graphRowBytes(m checkpoint.Models, grad bool) (ebm, flow float64) {
	s := algorithms.SizesOf(m.EBM, m.Flow)
	ebm = netRowBytes(s.EBMNet, grad, m.EBM.Params)
	if len(s.EBMHidden) > 0 { // a checkpoint's energy MLP (probe 54: counted as nothing, 2.85 million MALA chains were said to fit and died out of memory), with the collector's garbage as much again (measured: 16 KB a chain at peak for the 11 KB estimated at d = 2, ebm_hidden [32 64 64 64])
		ebm = 2 * s.EBMRowBytes(m.EBM.Dim(), grad)
	}
	if m.Flow != nil {
		flow = netRowBytes(s.FlowNet, grad, m.Flow.Params)
		if r := s.FlowRowBytes(m.Flow.Dim()); r > 0 { // a RealNVP or spline flow, likewise
			flow = 2 * r
		}
	}
	return ebm, flow
}

// netRowBytes is the bytes per row of n's graph (0 for nil) in the float
// type of its parameters p.
func netRowBytes(n *algorithms.NetSize, grad bool, p *graph.Params) float64 {
	if n == nil {
		return 0
	}
	v := n.EvalValues
	if grad {
		v = n.Values
	}
	return v * float64(p.Dtype().Size())
}

// memoryLimit is sysmem.Limit(def), lowered to half the process's address
// space limit (ulimit -v) where one is set: past it the Go runtime stops
// the process with a fatal "out of memory".
func memoryLimit(def float64) float64 { return sysmem.Limit(def) }

// energyBatch is the most points energy evaluates at once: the models'
// intermediate values grow with the batch (1,000,000 points at once
// peaked at 3.6 GB); energyRows lowers it for the image models.
const energyBatch = 4096

// energyInBatches writes the energies of the rows of x into e, and their
// gradients into g unless it is nil, energyRows points at a time.
func energyInBatches(m checkpoint.Models, x *mat.Dense, e []float64, g *mat.Dense) error {
	return energyInRows(m, x, e, g, energyRows(m, g != nil))
}

// nonFiniteNotes say, one line for each kind, which energies (NaN, +Inf,
// −Inf) and which gradients where the energy is finite are not finite:
// the energy command writes them as they are where some energy is finite
// (round 98 A1: one point on the edge of a Gamma's support, energy +Inf,
// refused the whole file), naming how many, the first and what makes
// them (node: the node behind a gradient, nodeAt); where none is, it
// refuses the points (an overflowing model).
func nonFiniteNotes(e []float64, g *mat.Dense, node func(i int) string) []string {
	var notes []string
	add := func(what string, bad func(i int) (float64, bool), why func(v float64, i int) string) {
		n, first, v := 0, -1, 0.0
		for i := range e {
			if x, ok := bad(i); ok {
				if n == 0 {
					first, v = i, x
				}
				n++
			}
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("%s at %d of %d points (the first: point %d, counting from 1) is %v: %s; written as it is", what, n, len(e), first+1, v, why(v, first)))
		}
	}
	for _, want := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		add("the energy", func(i int) (float64, bool) {
			v := e[i]
			return v, math.IsNaN(v) && math.IsNaN(want) || v == want
		}, func(v float64, _ int) string { return notFiniteWhy(v) })
	}
	if g != nil { // each point by its gradient's first value that is not finite, one note per kind (round 101 A1: +Inf and -Inf counted as one)
		_, d := g.Dims()
		for _, want := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			add("the gradient, where the energy is finite,", func(i int) (float64, bool) {
				if math.IsNaN(e[i]) || math.IsInf(e[i], 0) {
					return 0, false
				}
				for _, v := range g.RawRowView(i)[:d] {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						return v, math.IsNaN(v) && math.IsNaN(want) || v == want
					}
				}
				return 0, false
			}, func(v float64, i int) string { return gradNotFiniteWhy(v, e[i], node(i)) })
		}
	}
	return notes
}

// energyInRows writes the energies (and gradients into g unless it is
// nil) of the rows of x, rows at a time.
func energyInRows(m checkpoint.Models, x *mat.Dense, e []float64, g *mat.Dense, rows int) error {
	n, d := x.Dims()
	for i := 0; i < n; i += rows {
		j := min(n, i+rows)
		var gb *mat.Dense
		if g != nil {
			gb = g.Slice(i, j, 0, d).(*mat.Dense)
		}
		if err := m.EnergyGrad(x.Slice(i, j, 0, d), e[i:j], gb); err != nil {
			return err
		}
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// notFiniteWhy says what makes a model's value v (NaN or ±Inf) there.
func notFiniteWhy(v float64) string {
	if math.IsNaN(v) {
		return "the model is not defined there (an operation outside its domain, such as the log or square root of a negative number, or an overflow: check its weights and activations)"
	}
	return "the model is infinite there (an overflow, or the log of 0: check its weights and activations)"
}

// gradUndefinedError is a gradient that is not finite where the energy
// is: no domain to start inside (sample gives no --starts advice).
type gradUndefinedError struct{ error }

func (e *gradUndefinedError) Unwrap() error { return e.error }

// gradNotFiniteWhy says what makes a gradient v (NaN or ±Inf) where the
// energy is e: at a finite energy, an operation whose derivative is
// infinite there (probe 57: the gradient of √s at s = 0 times that of a
// sum of squares, 0, is NaN, in PyTorch too, where x.norm() has 0).
func gradNotFiniteWhy(v, e float64, node string) string {
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return notFiniteWhy(v)
	}
	if node != "" {
		return "the model's gradient is not defined there though its energy is: its " + node
	}
	return "the model's gradient is not defined there though its energy is: an operation whose derivative is infinite there, such as a square root at 0 (torch.sqrt((h ** 2).sum(1)) where h = 0, whose PyTorch gradient is NaN too; h.norm(dim=1) has the gradient 0 there), an overflow in the backward pass, or an operation outside its domain: check its weights and activations"
}

// nodeAt names, for an ONNX model evaluated with its file's parameters in
// its own units, the node computing a NaN or an infinity at row i of x
// (onnx.Net.NonFiniteNodeAt), which mostly makes a gradient NaN where the
// energy is finite; "" otherwise (round 103 A2: a NaN in the branch
// torch.where discards named no node). The parameters are compared only
// once a node is asked for: a run whose gradients are finite copies none.
func nodeAt(m checkpoint.Models, x *mat.Dense) func(i int) string {
	net, ok := m.EBM.Net.(*onnx.Net)
	if !ok || m.Scaling != nil {
		return func(int) string { return "" }
	}
	fromFile := sync.OnceValue(func() bool { return fileParameters(net, m.EBM.Params) })
	return func(i int) string {
		if !fromFile() {
			return ""
		}
		return net.NonFiniteNodeAt(x.RawRowView(i))
	}
}

// fileParameters reports whether p holds net's file's parameter values
// (not a model trained since).
func fileParameters(net *onnx.Net, p *graph.Params) bool {
	file, err := graph.NewParams(net.ParamSpecs(), p.Dtype(), rand.New(rand.NewPCG(0, 0)))
	return err == nil && slices.Equal(file.Flatten(nil), p.Flatten(nil))
}

// checkFiniteEnergies refuses non-finite energies or gradients, naming the
// first point; node names the node behind a point's gradient (nodeAt).
func checkFiniteEnergies(e []float64, g *mat.Dense, node func(i int) string) error {
	for i, v := range e {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("the energy of point %d (counting from 1) is %v: %s; nothing was written", i+1, v, notFiniteWhy(v))
		}
	}
	if g != nil {
		_, d := g.Dims()
		for k, v := range g.RawMatrix().Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				err := fmt.Errorf("the gradient at point %d (counting from 1) is %v, where the energy is %v: %s; nothing was written", k/d+1, v, e[k/d], gradNotFiniteWhy(v, e[k/d], node(k/d)))
				if !math.IsNaN(e[k/d]) && !math.IsInf(e[k/d], 0) {
					return &gradUndefinedError{err}
				}
				return err
			}
		}
	}
	return nil
}

// checkFloat32Points refuses, for a model computing in float32, points
// beyond float32's range, which it reads as ±Inf (probe 54: a point at
// 1e39 was blamed on the model's weights).
func checkFloat32Points(file string, x *mat.Dense, m checkpoint.Models) error {
	if m.EBM.Params.Dtype() != tensor.Float32 {
		return nil
	}
	_, d := x.Dims()
	for i, v := range x.RawMatrix().Data {
		if math.Abs(v) > math.MaxFloat32 {
			return fmt.Errorf("%s: point %d, value %d is %v, beyond float32's range (±3.4e38), in which the model computes: rescale the points, or export the model in float64", file, i/d+1, i%d+1, v)
		}
	}
	return nil
}

// checkPointShape checks that points of per-point shape fit the model:
// an ONNX model's input shape, or flat with as many values; a checkpoint
// takes any shape with its dimension's values (image arrays (n, C, H, W)
// are flattened, as train --data does), but for one that records the
// shape its run was trained on (point_shape): that arrangement, or rows.
func checkPointShape(file string, shape []int, model string, m checkpoint.Models) error {
	dim, d := m.EBM.Dim(), shapes.Product(shape)
	net, isONNX := m.EBM.Net.(*onnx.Net)
	if img, ok := m.EBM.Net.(layers.ImageEnergy); ok {
		if err := notChannelsLast(file, shape, model, img.WithDefaults().Image); err != nil {
			return err
		}
	}
	trained, takes := m.PointShape, "was trained on"
	if isONNX && len(net.InputShape()) >= 2 {
		trained, takes = net.InputShape(), "takes"
	}
	_, isImage := m.EBM.Net.(layers.ImageEnergy)
	switch {
	case d != dim:
		return wrongSize(file, shape, model, dim, trained)
	case len(trained) >= 2:
		return trainedShape(file, shape, model, takes, trained)
	case looksChannelsLast(shape) && !isImage: // a model of rows: in which order was it trained? (round 123 A4: a checkpoint took them unsaid)
		return fmt.Errorf("%spoints of shape %v each look like images stored channels last (n, H, W, C); the model %s takes rows of %d values: give them flattened in the order the network was trained on: channels first (NumPy: x.transpose(0, 3, 1, 2).reshape(len(x), -1)) for a network trained on (n, C, H, W) images flattened (PyTorch's x.view(len(x), -1)), or as they are (x.reshape(len(x), -1)) for one trained on these arrays flattened", filePrefix(file), shape, model, dim)
	}
	return nil // rows, or any arrangement of a checkpoint's values (round 118 B4: an (n, 1, 28, 28) batch for a model of rows of 784)
}

// looksChannelsLast says whether a point's shape is that of an image
// stored channels last, (H, W, C) with 2 to 4 channels, fewer than H or W.
func looksChannelsLast(shape []int) bool {
	return len(shape) == 3 && shape[2] > 1 && shape[2] <= 4 && shape[2] < min(shape[0], shape[1])
}

// wrongSize refuses points of shape whose values are not the model's dim,
// naming what it takes: the arrangement it was trained on or takes (with
// x[None] where the file looks like a single such point), or any shape of
// dim values.
func wrongSize(file string, shape []int, model string, dim int, trained []int) error {
	d := shapes.Product(shape)
	if len(trained) < 2 {
		return fmt.Errorf("%spoints of shape %v each (%d values), the model %s takes %d values a point: an array of shape (n, %d), or (n, C, H, W) or any (n, …) whose trailing sizes multiply to %d (flattened)", filePrefix(file), shape, d, model, dim, dim, dim)
	}
	msg := fmt.Sprintf("%spoints of shape %v each (%d values), the model %s takes points of shape %v: an array of shape (n, %s), or rows (n, %d)", filePrefix(file), shape, d, model, trained, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(trained)), ", "), "[]"), dim)
	if slices.Equal(shape, trained[1:]) {
		msg += fmt.Sprintf("; a single point of shape %v needs its leading axis (NumPy: x[None])", trained)
	}
	return errors.New(msg)
}

// pointsVector reads the 1-D array of path (the .npz member key) as points
// of a model of dimension d: n points for d = 1, one point of d values
// otherwise (as sample --starts takes one: round 122 B3, refused here).
func pointsVector(path, key, model string, d int) (*mat.Dense, []int, error) {
	a, err := data.ReadArray(path, key)
	if err != nil {
		return nil, nil, err
	}
	switch n := len(a.Data); {
	case n == 0:
		return nil, nil, fmt.Errorf("%s: an empty array: want points, an array of shape (n, %d)", path, d)
	case d == 1:
		return mat.NewDense(n, 1, a.Data), []int{1}, nil
	case n == d:
		return mat.NewDense(1, d, a.Data), []int{d}, nil
	default:
		return nil, nil, fmt.Errorf("%s: a 1-D array of %d values, the model %s takes points of %d values: an array of shape (n, %d), or %d values for one point", path, n, model, d, d, d)
	}
}

// trainedShape refuses points of two axes or more arranged otherwise than
// the points a model takes (a checkpoint's point_shape, as its run was
// trained; an ONNX model's input): the same values in another order would
// be read silently (round 119 A1: a run trained on (n, 3, 8, 8) images
// took (n, 8, 8, 3) ones). Flat rows, and shapes equal but for axes of
// size 1 ((n, 28, 28) for (n, 1, 28, 28): round 122 A4), pass, as does
// any shape where trained has fewer than two axes.
func trainedShape(file string, shape []int, model, takes string, trained []int) error {
	if len(trained) < 2 || len(shape) < 2 || len(shapes.Squeezed(shape)) <= 1 || slices.Equal(shapes.Squeezed(shape), shapes.Squeezed(trained)) { // flat, with axes of size 1 or not (round 123 A6)
		return nil
	}
	msg := fmt.Sprintf("%spoints of shape %v each, but the model %s %s points of shape %v: give them in that shape, or flattened in its order (rows of %d values)", filePrefix(file), shape, model, takes, trained, shapes.Product(trained))
	if hint := transposeHint(shape, trained); hint != "" {
		msg += "; " + hint
	}
	return errors.New(msg)
}

// transposeHint names the transpose that puts images of shape into the
// arrangement trained, where trained is plainly channels first (C, H, W)
// and shape its channels-last (H, W, C), or the converse (C smaller than
// H and W: round 122 A3, a hint by sizes alone swapped H and W); "" for
// others.
func transposeHint(shape, trained []int) string {
	if len(shape) != 3 || len(trained) != 3 {
		return ""
	}
	if c, h, w := trained[0], trained[1], trained[2]; c < min(h, w) && slices.Equal(shape, []int{h, w, c}) {
		return "these look like its images stored channels last: transpose them first (NumPy: x.transpose(0, 3, 1, 2))"
	}
	if h, w, c := trained[0], trained[1], trained[2]; c < min(h, w) && slices.Equal(shape, []int{c, h, w}) {
		return "these look like its images stored channels first: transpose them first (NumPy: x.transpose(0, 2, 3, 1))"
	}
	return ""
}

// filePrefix is "FILE: ", or "" for a file the message's caller names.
func filePrefix(file string) string {
	if file == "" {
		return ""
	}
	return file + ": "
}

// notChannelsLast refuses images stored channels last (n, H, W, C), as
// NumPy, PIL and TensorFlow keep them, for a model of (C, H, W) images with
// C > 1: their values would be read in the wrong order, silently (probe
// 14: a CIFAR array (n, 32, 32, 3) gave wrong energies).
func notChannelsLast(file string, shape []int, model string, img layers.ImageShape) error {
	if img.C == 1 || !slices.Equal(shape, []int{img.H, img.W, img.C}) || slices.Equal(shape, []int{img.C, img.H, img.W}) {
		return nil
	}
	return fmt.Errorf("%spoints of shape %v each are images stored channels last (n, H, W, C), but the model %s takes them channels first (n, C, H, W) = (n, %d, %d, %d): transpose them first (NumPy: x.transpose(0, 3, 1, 2))", filePrefix(file), shape, model, img.C, img.H, img.W)
}

// checkFinitePoints refuses points holding NaN or Inf, naming the first
// (its non-finite energy would otherwise be blamed on the model).
func checkFinitePoints(file string, x *mat.Dense, shape []int) error {
	_, d := x.Dims()
	for i, v := range x.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: point %d, value %d (of %d, shape %v each) is %v: want finite points", file, i/d+1, i%d+1, d, shape, v)
		}
	}
	return nil
}

// modelLoader loads the models a command reads: an .onnx energy network,
// a checkpoint, a run's newest checkpoint. It records the sums of what it
// loaded in sums (unless nil) and writes its notes (a checkpoint's damaged
// training state, an interrupted replacement) to notes, the command's
// stderr (nil: discarded).
type modelLoader struct {
	sums  modelSums
	notes io.Writer
}

// note writes a note line, if the loader has somewhere to write it.
func (l modelLoader) note(format string, a ...any) {
	if l.notes != nil {
		fmt.Fprintf(l.notes, format+"\n", a...)
	}
}

// modelSums records the SHA-256 of the model files a command loaded, by
// the absolute path it was given: sample records them for --resume, which refuses changed inputs.
type modelSums map[string]string

// record sets the sum of path, if sums records any.
func (sums modelSums) record(path string, sum func() (string, error)) error {
	if sums == nil {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	v, err := sum()
	if err != nil {
		return err
	}
	sums[abs] = v
	return nil
}

// load loads an .onnx energy network (as an EBM without tilt) or a
// flowebm checkpoint.
func (l modelLoader) load(path string, oc onnx.Config) (checkpoint.Models, error) {
	if isONNXFile(path) {
		net, err := onnx.ReadFileConfig(path, oc)
		if err != nil {
			return checkpoint.Models{}, err
		}
		if err := l.sums.record(path, func() (string, error) { return hashFiles(path) }); err != nil {
			return checkpoint.Models{}, err
		}
		ebm, err := graph.NewEBM(net, nil, net.Dtype, rand.New(rand.NewPCG(0, 0)))
		if err != nil {
			return checkpoint.Models{}, fmt.Errorf("%s: %w", path, err)
		}
		return checkpoint.Models{EBM: ebm}, nil
	}
	return l.loadCheckpoint(path)
}

// unchecked is an imported network that the load checks could not run
// on (onnx.Net.Unchecked).
type unchecked interface{ Unchecked() string }

// checkAtPoints runs the load checks of m's imported energy network, if
// they could not run at their own points, at the points x (CheckAt): a
// network defined only where the user's points are is checked there.
func checkAtPoints(m checkpoint.Models, x *mat.Dense, where string) error {
	n, ok := m.EBM.Net.(interface{ CheckAt([]float64, string) error })
	if !ok {
		return nil
	}
	rows, d := x.Dims()
	flat := make([]float64, 0, min(rows, maxCheckRows)*d)
	for i := range min(rows, maxCheckRows) {
		flat = append(flat, x.RawRowView(i)...)
	}
	return n.CheckAt(flat, where)
}

// maxCheckRows is how many of the user's points checkAtPoints draws from.
const maxCheckRows = 1000

// logDensityNote says, of an ONNX model read as an energy (no
// --log-density) whose output is named as a log density ("log_density",
// "log_prob", …), that it is read as an energy, and how to read it as a
// log density; "" otherwise. Round 101 A4: a flow's density graph taken
// as an energy, unbounded below, sent MALA's chains to |x| ≈ 150.
func logDensityNote(model string, m checkpoint.Models, oc onnx.Config) string {
	net, ok := m.EBM.Net.(*onnx.Net)
	if !ok || oc.LogDensity {
		return ""
	}
	name := strings.ToLower(net.OutputName())
	for _, s := range []string{"log_density", "logdensity", "log_prob", "logprob", "log_q", "logq", "log_likelihood", "loglik"} {
		if strings.Contains(name, s) {
			return fmt.Sprintf("%s's output %q is named as a log density: it is read as an energy (E = the output); give --log-density to read it as a log density (E = −output)", model, net.OutputName())
		}
	}
	return ""
}

// printUnchecked writes, as notes, why the load checks could not run on
// m's imported networks.
func printUnchecked(w io.Writer, m checkpoint.Models) {
	nets := []any{m.EBM.Net}
	if m.Flow != nil {
		nets = append(nets, m.Flow.Net)
	}
	for _, net := range nets {
		if n, ok := net.(unchecked); ok && n.Unchecked() != "" {
			fmt.Fprintln(w, "note:", n.Unchecked())
		}
	}
}

// isONNXFile reports whether path names an ONNX model: a name ending in
// .onnx that is not a folder (a checkpoint folder so named is read as the
// checkpoint it is).
func isONNXFile(path string) bool {
	if strings.ToLower(filepath.Ext(path)) != ".onnx" {
		return false
	}
	fi, err := os.Stat(path)
	return err != nil || !fi.IsDir()
}

// gradColumns is the column names of a CSV file of points (nil for other
// files, one without a header, or one that cannot be read): the gradients'
// CSV keeps them (round 72: headed x1, x2 under points headed a, b).
func gradColumns(path string) []string {
	names, _ := data.FileColumns(path)
	return names
}

// writeArray writes the rows of x to the --grad file path (.npy float64
// of the given shape, the points' file's, or .csv of the flat rows under
// the columns' names, those of the points' CSV header where it has one),
// replacing a file only with force.
func writeArray(put outputWriter, path string, force bool, x *mat.Dense, shape []int, names []string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		a := &npy.Array{Shape: shape, Data: denseData(x)}
		return put("--grad", path, force, func(w io.Writer) error { return npy.Write(w, a, npy.Float64) })
	case ".csv":
		return put("--grad", path, force, func(w io.Writer) error { return data.WriteCSVNamed(w, x, names) })
	}
	return fmt.Errorf("--grad %s: want a .npy or .csv file", path)
}

// denseData is the values of x row by row: its own when they are
// contiguous (the gradients, as energy makes them: a copy doubled the
// memory they need), else a copy.
func denseData(x *mat.Dense) []float64 {
	raw := x.RawMatrix()
	if raw.Stride == raw.Cols && len(raw.Data) == raw.Rows*raw.Cols {
		return raw.Data
	}
	return mat.DenseCopyOf(x).RawMatrix().Data
}

// loadCheckpoint loads the models of a checkpoint folder or of a run
// folder's newest complete checkpoint. A run being trained replaces its
// checkpoint by renames: its folders are read holding them still
// (training.ReadRun), and RUN/checkpoint missing for that instant is
// loaded as RUN.
// The sums recorded are of the files loaded, read while the run's
// checkpoint is held still: those of the models loaded, even while the run
// checkpoints at every iteration.
func (l modelLoader) loadCheckpoint(dir string) (checkpoint.Models, error) {
	if run := runOfCheckpoint(dir); run != "" {
		var m checkpoint.Models
		err := training.ReadRun(run, func() (err error) {
			if !exists(filepath.Join(dir, "spec.json")) && filepath.Base(resolvedPath(dir)) != checkpointPrefix { // round 117 B5: said to be neither a checkpoint nor a run
				return fmt.Errorf("%s does not exist (now): a run keeps %s only while it replaces its checkpoint: give the run folder %s, which reads its newest checkpoint", dir, filepath.Base(resolvedPath(dir)), run)
			}
			if !exists(filepath.Join(dir, "spec.json")) {
				m, err = l.latestHeld(run, dir)
				return err
			}
			if err := unvouchedCheckpoint(dir, run); err != nil { // round 95 B7: loaded unchecked
				return err
			}
			if edited := training.RecordEdited(dir); edited != nil { // round 138 B3: used unsaid, where the run folder refused it
				l.editedRecordNote(edited)
			} else if note := givenFolderNote(run, dir); note != "" { // round 141 B4: an older folder, or an unfinished run's, used unsaid
				l.note("%s", note)
			}
			var spec checkpoint.Spec
			if m, spec, err = checkpoint.Load(dir); err != nil {
				return err
			}
			l.damagedStateNote(dir)
			return l.sums.record(dir, func() (string, error) { return folderSum(dir, spec) })
		})
		return m, err
	}
	if _, err := os.Stat(filepath.Join(dir, "spec.json")); err == nil {
		if err := unvouchedCheckpoint(dir, filepath.Dir(filepath.Clean(dir))); err != nil { // round 115 B2: a run's checkpoint.old/ given itself, edited, used unsaid
			return checkpoint.Models{}, err
		}
		m, spec, err := checkpoint.Load(dir)
		if err == nil {
			l.damagedStateNote(dir)
			err = l.sums.record(dir, func() (string, error) { return folderSum(dir, spec) })
		}
		return m, err
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return checkpoint.Models{}, fmt.Errorf("%s: want a checkpoint folder (spec.json, weights.npz) or a run folder: %w", dir, err)
	case !fi.IsDir() && slices.Contains(checkpointFiles, filepath.Base(dir)):
		return checkpoint.Models{}, fmt.Errorf("%s is a file of a checkpoint: give its folder, %s", dir, filepath.Dir(dir))
	case !fi.Mode().IsRegular() && !fi.IsDir(): // probe 43: a pipe (<(cat m.onnx)) was "a file"
		return checkpoint.Models{}, fmt.Errorf("%s: want a checkpoint or run folder here, or for --model an .onnx energy, a regular file named .onnx (write the model to one)", irregular(dir, fi))
	case !fi.IsDir():
		return checkpoint.Models{}, fmt.Errorf("%s is a file: want a checkpoint or run folder here (--model also takes an .onnx energy, --flow does not)%s", dir, fileOfRun(dir))
	}
	return l.loadRun(dir, dir)
}

// checkpointFiles are the files of a checkpoint folder.
var checkpointFiles = []string{"spec.json", "weights.npz"}

// runOfCheckpoint returns the training run whose checkpoint folder dir
// (RUN/checkpoint) is, or "".
func runOfCheckpoint(dir string) string {
	dir = resolvedPath(dir) // a link to RUN/checkpoint is read under RUN's lock too (probe 19), however long its target (probe 46)
	base := filepath.Base(dir)
	if parent := filepath.Dir(dir); (base == checkpointPrefix || base == checkpointPrefix+".old" || base == checkpointPrefix+".new") && isTrainingRunAt(parent) { // .old and .new read under the run's lock too (round 117 B5: removed while read)
		return parent
	}
	return ""
}

// loadRun loads the newest complete checkpoint of the run folder dir, holding
// its checkpoint folders still meanwhile (a run being trained replaces
// them only once it is read), recording its sum as given's.
func (l modelLoader) loadRun(dir, given string) (m checkpoint.Models, err error) {
	err = training.ReadRun(dir, func() error {
		m, err = l.latestHeld(dir, given)
		return err
	})
	return m, err
}

// unreadableFolder says so when this user may not enter dir (probe 23: its
// checkpoint was said to have no spec.json); nil otherwise.
func unreadableFolder(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%s: this user may not read the folder (%w): its owner can open it with chmod -R a+rX", dir, err)
	}
	return nil
}

// latestHeld is loadRun for a caller that holds the run (a nested ReadRun
// would wait at the gate behind a writer that waits for the caller's hold:
// probe 21's deadlock).
func (l modelLoader) latestHeld(dir, given string) (checkpoint.Models, error) {
	latest, err := training.LatestCheckpoint(dir)
	if newer := (*training.DamagedNewerError)(nil); errors.As(err, &newer) && wholeModel(newer.Folder) { // round 131 B3: its models whole, as without an older folder beside it
		// Round 132 B2: the way on of train --resume, not "start a new run".
		l.note("flowebm: note: %v; its models' own files (spec.json, weights.npz) match the sums its %s records and are used here", err, checkpoint.ManifestName)
		return l.loadModels(dir, newer.Folder, given)
	}
	if errors.As(err, new(*training.OutOfOrderError)) { // its own way on (round 124 B4)
		return checkpoint.Models{}, err
	}
	if err != nil {
		if err := unreadableFolder(dir); err != nil {
			return checkpoint.Models{}, err
		}
		if why := notYetARun(dir, "use"); why != "" {
			return checkpoint.Models{}, errors.New(why)
		}
		if !isTrainingRun(dir) {
			return checkpoint.Models{}, fmt.Errorf("%s: neither a checkpoint (no spec.json) nor a training run (no config.json or checkpoint/)%s", dir, runsWithin(dir)) // round 80 B5: a train --seeds folder, without its runs named
		}
		final := filepath.Join(dir, "checkpoint")
		if edited := training.RecordEdited(final); edited != nil { // round 138 B3: its models whole, as the folder given itself
			l.editedRecordNote(edited)
			return l.loadUnnoted(final, given) // its iteration is what the note doubts
		}
		if cfg, cerr := training.ReadRunConfig(dir); cerr == nil && training.ConfigEdited(dir, cfg) != nil {
			return checkpoint.Models{}, err // its way on names the checkpoint folder itself (round 138 B2: "else train the run again" after it)
		}
		if !wholeModel(final) {
			return checkpoint.Models{}, fmt.Errorf("%w: %s", err, noModelAdvice) // says why each checkpoint folder is incomplete
		}
		return l.damagedStateModel(dir, final, given) // its training state damaged, its models whole (round 110 B2)
	}
	switch final := filepath.Join(dir, "checkpoint"); {
	case latest == final+".new" && exists(final) && lockedByOther(dir): // probe 33: said to be a crash's
		l.note("flowebm: note: the run is replacing its checkpoint (another process holds %s%s): %s, the newer, is complete; using it", filepath.Join(dir, ".lock"), sharedLockNote(dir), latest)
	case latest == final+".new" && exists(final): // probe 22: called "incomplete or damaged"
		l.note("flowebm: note: a checkpoint replacement was interrupted: %s is newer than %s and complete; using it", latest, final)
	case latest != final && exists(final):
		l.note("flowebm: note: %s is incomplete or damaged; using %s", final, latest)
	}
	if edited := training.LastEvalEdited(latest); edited != nil { // round 139 B2: an edited last evaluation, used unsaid (the folder passed its check: not hashed again)
		l.editedRecordNote(edited)
	}
	m, spec, err := checkpoint.Load(latest)
	if err != nil {
		return m, err
	}
	if note := unfinishedNote(dir, latest); note != "" {
		l.note("%s", note)
	}
	return m, l.sums.record(given, func() (string, error) { return folderSum(latest, spec) })
}

// unvouchedCheckpoint refuses a checkpoint folder dir that a run wrote
// (it holds run-config.json; convert's checkpoints do not) without its
// COMPLETE, which vouches for its files: a checkpoint cut while written,
// or edited. The way on is the run folder run where it has a complete
// checkpoint; nil for a folder with COMPLETE or not a run's.
func unvouchedCheckpoint(dir, run string) error {
	if !exists(filepath.Join(dir, "run-config.json")) || exists(filepath.Join(dir, checkpoint.ManifestName)) {
		return nil
	}
	err := fmt.Errorf("%s is incomplete: it lacks %s, which a run writes last over its files' SHA-256 (a checkpoint cut while written, or edited)", dir, checkpoint.ManifestName)
	if !isTrainingRun(run) { // a copy made without it
		return fmt.Errorf("%w: copy a run's checkpoint folder whole (its COMPLETE with it), or give the run folder it came from", err)
	}
	if _, lerr := training.LatestCheckpoint(run); lerr != nil { // round 114 B2: sent to the run folder, which refused it
		return fmt.Errorf("%w, and its run %s has no other complete checkpoint: %s", err, run, noModelAdvice)
	}
	return fmt.Errorf("%w: give the run folder %s, which reads its newest complete checkpoint", err, run)
}

// wholeModel reports whether the checkpoint folder final, not complete,
// still holds its model whole: its COMPLETE vouches for the model's own
// files, only its other files (the training state) damaged (round 110 B2).
func wholeModel(final string) bool {
	if checkpoint.OtherFilesDamage(final) == nil {
		return false
	}
	_, _, err := checkpoint.Load(final)
	return err == nil
}

// modelUsable reports whether sample, energy and convert use the models
// of the run's checkpoint folder final although no reader takes it as the
// run's checkpoint: its training state alone damaged (wholeModel), or its
// records edited, its files matching their sums (training.RecordEdited;
// round 141 A2: train --resume said they could not).
func modelUsable(final string) bool {
	return wholeModel(final) || training.RecordEdited(final) != nil
}

// noModelAdvice is the way on where no checkpoint of a run vouches for
// its model's files.
const noModelAdvice = "no command uses a model whose files no checkpoint vouches for; put back a whole copy of the run's checkpoint/ if you keep one, else train the run again"

// givenFolderNote says, of the checkpoint folder dir of the run in run
// given itself, that the run's newest complete checkpoint is another
// folder, or that the run is unfinished (unfinishedNote); "" otherwise.
func givenFolderNote(run, dir string) string {
	latest, err := training.LatestCheckpoint(run)
	if err != nil {
		return ""
	}
	if filepath.Clean(resolvedPath(latest)) == filepath.Clean(resolvedPath(dir)) {
		return unfinishedNote(run, dir)
	}
	it, ok := training.CheckpointIter(latest)
	given, gok := training.CheckpointIter(dir)
	if !ok || !gok || it <= given {
		return ""
	}
	return fmt.Sprintf("flowebm: note: %s, used here as given, is of iteration %d; the run's newest complete checkpoint is %s, of iteration %d (the run folder %s reads it)", dir, given, latest, it, run)
}

// unfinishedNote says that the checkpoint latest of the run in dir is of
// an iteration before the run's last (round 82 B5: a run still training,
// or interrupted, was exported without a word); "" for a finished run or
// where either count cannot be read.
func unfinishedNote(dir, latest string) string {
	it, ok := training.CheckpointIter(latest)
	if !ok {
		return ""
	}
	cfg, err := training.ReadRunConfig(dir)
	if n := cfg.Train.Iterations; err != nil || it >= n {
		return ""
	}
	if msg := divergedBefore(dir); msg != "" { // round 113 A3: "unfinished", which train --resume refuses
		return fmt.Sprintf("flowebm: note: the run %s diverged (its error.txt: %s): its last checkpoint, used here, is of iteration %d of %d", dir, strings.TrimPrefix(msg, "flowebm: "), it, cfg.Train.Iterations)
	}
	if exists(filepath.Join(dir, "metrics.json")) { // round 123 B4: a finished run whose final checkpoint was lost was called unfinished
		return "flowebm: note: " + finalCheckpointLost(dir, it, cfg.Train.Iterations, "used here")
	}
	return fmt.Sprintf("flowebm: note: the run %s is unfinished: its newest checkpoint, used here, is of iteration %d of %d", dir, it, cfg.Train.Iterations)
}

// finalCheckpointLost says that the run in dir finished (it has its
// results) but its newest checkpoint, used as how says, is of iteration
// it of n: its final one is missing, and how to write it again.
func finalCheckpointLost(dir string, it, n int, how string) string {
	return fmt.Sprintf("the run %s finished (its metrics.json), but its final checkpoint is missing: its newest is of iteration %d of %d, a model from before the end its results are of (%s); flowebm train --resume %s continues from it and writes the final checkpoint again", dir, it, n, how, shellQuote(dir))
}

// writeVector writes v to the --out file path (.npy or .csv), replacing a
// file only with force, or prints it one value per line when path is
// empty.
func writeVector(put outputWriter, cmd *cobra.Command, path string, force bool, v []float64, name string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case "":
		if path != "" {
			break
		}
		w := bufio.NewWriter(cmd.OutOrStdout())
		for _, x := range v {
			w.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
			w.WriteByte('\n')
		}
		return w.Flush()
	case ".npy":
		a := &npy.Array{Shape: []int{len(v)}, Data: v}
		return put("--out", path, force, func(w io.Writer) error { return npy.Write(w, a, npy.Float64) })
	case ".csv":
		return put("--out", path, force, func(w0 io.Writer) error {
			w := bufio.NewWriter(w0)
			w.WriteString(name + "\n")
			for _, x := range v {
				w.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
				w.WriteByte('\n')
			}
			return w.Flush()
		})
	}
	return fmt.Errorf("--out %s: want a .npy or .csv file", path)
}

// outputWriter writes the output file path of flag (writeOutput, or a
// stagedOutputs' stage).
type outputWriter func(flag, path string, force bool, write func(io.Writer) error) error

// damagedStateNote notes damage in the files of checkpoint folder dir
// that its models are not loaded from (a training run's state), where its
// models loaded: they are used (round 110 B2: a finished run whose
// state.npz was cut could no longer be sampled or exported).
// damagedStateModel loads the models of the checkpoint folder ck of the
// run in dir, whose other files are damaged (wholeModel), saying so.
func (l modelLoader) damagedStateModel(dir, ck, given string) (checkpoint.Models, error) {
	l.damagedStateNote(ck)
	return l.loadModels(dir, ck, given)
}

// loadModels loads the models of the checkpoint folder ck of the run in
// dir, saying where it is not the run's last.
func (l modelLoader) loadModels(dir, ck, given string) (checkpoint.Models, error) {
	m, err := l.loadUnnoted(ck, given)
	if note := unfinishedNote(dir, ck); err == nil && note != "" {
		l.note("%s", note)
	}
	return m, err
}

// loadUnnoted loads the models of the checkpoint folder ck, recording
// their sums as given's.
func (l modelLoader) loadUnnoted(ck, given string) (checkpoint.Models, error) {
	m, spec, err := checkpoint.Load(ck)
	if err != nil {
		return checkpoint.Models{}, err
	}
	return m, l.sums.record(given, func() (string, error) { return folderSum(ck, spec) })
}

// editedRecordNote says that a checkpoint's records were edited (err,
// training.RecordEdited) and that its models are used all the same.
func (l modelLoader) editedRecordNote(err error) {
	l.note("flowebm: note: %v; the models' own files (spec.json, weights.npz) are those the run wrote (they match the sums its %s records) and are used here: only train --resume, which needs the rest, cannot continue from this checkpoint", err, checkpoint.ManifestName)
}

func (l modelLoader) damagedStateNote(dir string) {
	if err := checkpoint.OtherFilesDamage(dir); err != nil {
		l.note("flowebm: note: %v; the models' own files (spec.json, weights.npz) match the sums it records and are used: only train --resume, which needs the rest, cannot continue from this checkpoint", err)
	}
}

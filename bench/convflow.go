package main

// The conv-flow-28 experiment: the two passes training runs through the
// image experiments' convolutional RealNVP (layers.ImageRealNVP at the
// sizes settings gives mnist28, fashion-mnist and cifar10: 2 scales of 1
// checkerboard and 1 channel-wise coupling, 8 hidden channels, one residual
// block, ReLU) on 1×28×28 images at batch 64:
//
//   - sample: base draws z ~ N(0, σ²I) pushed through the flow, x = T(z)
//     and log q(x) = log ρ(z) − log|det J_T(z)| (graph.Flow.Sample: the
//     i-SIR proposals and the flow's samples);
//   - density: log q(x) = log ρ(T⁻¹(x)) + log|det J_{T⁻¹}(x)| of given
//     points (graph.Flow.LogDensity: i-SIR's weights of the current states,
//     maximum likelihood's forward pass);
//
// against bench/peer/conv_flow.py, a re-implementation of the same
// architecture with torch.nn.functional, loaded with the same weights: the
// flow's parameters, perturbed away from the identity initialisation, are
// written from Go as one .npy file per parameter with a spec.json naming
// them, their shapes and the couplings.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
)

const convFlowExperiment = "conv-flow-28"

const (
	// convFlowBatch is the batch of both passes.
	convFlowBatch = 64
	// convFlowSigma is the base's σ. The image runs take the largest
	// pixel standard deviation of their training images (App. C.5's rule);
	// this stand-in keeps the bench free of data sets, and σ does not
	// change the cost.
	convFlowSigma = 0.9
	// convFlowPerturb scales the perturbation added to every parameter:
	// perturbParams adds convFlowPerturb·N(0, 1)/√fan_in, so that the
	// heads (initialised at about 1e-6) give scales s and shifts t of order
	// 0.1 and no coupling is the identity.
	convFlowPerturb = 0.3
)

// convFlowImage is the experiments' image shape.
var convFlowImage = experiments.ImageShape{Channels: 1, Height: 28, Width: 28}

// convFlowNet is the conv RealNVP newModelsOf builds for the image
// experiments' defaults: model.flow conv-realnvp with model.flow_blocks 1
// and model.flow_hidden [8] (settings' imageScaling, convModels).
func convFlowNet() (layers.ImageRealNVP, error) {
	m := config.Model{Flow: config.FlowConvRealNVP, FlowBlocks: 1, FlowHidden: []int{8}}
	d := convFlowImage.Channels * convFlowImage.Height * convFlowImage.Width
	fn, err := m.FlowNetFor(d, &convFlowImage)
	if err != nil {
		return layers.ImageRealNVP{}, err
	}
	nvp, ok := fn.(layers.ImageRealNVP)
	if !ok {
		return layers.ImageRealNVP{}, fmt.Errorf("%s: model.flow %q built a %T, not a layers.ImageRealNVP", convFlowExperiment, config.FlowConvRealNVP, fn)
	}
	return nvp.WithDefaults(), nil
}

// newConvFlow builds the flow in dtype as newModelsOf does (seed 1's
// initialisation draws), perturbs its parameters and splits batches as a
// training run on threads cores does (model.shards' default blocks,
// threads workers).
func newConvFlow(dtype string, threads int) (*graph.Flow, layers.ImageRealNVP, error) {
	nvp, err := convFlowNet()
	if err != nil {
		return nil, nvp, err
	}
	dt := graph.Float64
	if dtype == "float32" {
		dt = graph.Float32
	}
	base := layers.NewIsotropic(nvp.Dimension(), convFlowSigma)
	f, err := graph.NewFlow(nvp, base, dt, rand.New(rand.NewPCG(1, 0x3d31)))
	if err != nil {
		return nil, nvp, err
	}
	if err := perturbParams(f.Params, nvp, rand.New(rand.NewPCG(11, 12))); err != nil {
		return nil, nvp, err
	}
	f.Parallel = graph.Parallel{Shards: config.DefaultShards, Workers: threads}
	return f, nvp, nil
}

// perturbParams adds convFlowPerturb·N(0, 1)/√fan_in to every parameter.
func perturbParams(p *graph.Params, nvp layers.ImageRealNVP, rng *rand.Rand) error {
	specs, err := nvp.ParamSpecs()
	if err != nil {
		return err
	}
	for _, s := range specs {
		q := p.Get(s.Name)
		if q == nil {
			return fmt.Errorf("%s: parameter %s not allocated", convFlowExperiment, s.Name)
		}
		v := q.Float64s()
		for i := range v {
			v[i] += convFlowPerturb * rng.NormFloat64() / math.Sqrt(float64(s.FanIn))
		}
		if err := q.SetFloat64s(v); err != nil {
			return err
		}
	}
	return nil
}

// convFlowSpec is dir/spec.json: what conv_flow.py builds and loads.
type convFlowSpec struct {
	Dtype      string              `json:"dtype"`
	Image      [3]int              `json:"image"` // C, H, W
	Sigma      float64             `json:"sigma"`
	Batch      int                 `json:"batch"`
	Activation layers.Activation   `json:"activation"`
	Couplings  []convFlowCoupling  `json:"couplings"`
	Params     []convFlowParamFile `json:"params"`
}

// convFlowCoupling is one coupling, in forward order: its kind
// (checkerboard or channel), the times its conditioner's input is
// squeezed, the half it transforms, its step dt and the parameter prefix
// of its conditioner (NAME.in, NAME.blocks.r.conv{1,2}, NAME.s, NAME.t).
type convFlowCoupling struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"`
	Squeeze int     `json:"squeeze"`
	Parity  int     `json:"parity"`
	Dt      float64 `json:"dt"`
	Hidden  int     `json:"hidden"`
	Blocks  int     `json:"blocks"`
}

// convFlowParamFile is one parameter: its name, PyTorch shape and file
// (relative to the spec's folder).
type convFlowParamFile struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	File  string `json:"file"`
}

// writeConvFlow writes spec.json and params/NAME.npy (in the flow's float
// type, so that the values are exact) into dir.
func writeConvFlow(dir string, f *graph.Flow, nvp layers.ImageRealNVP) error {
	cs, err := nvp.Couplings()
	if err != nil {
		return err
	}
	im := nvp.Image
	sp := convFlowSpec{Dtype: "float64", Image: [3]int{im.C, im.H, im.W}, Sigma: f.Base.Sigma[0], Batch: convFlowBatch, Activation: nvp.Activation}
	kind := npy.Float64
	if f.Params.Dtype() == graph.Float32 {
		sp.Dtype, kind = "float32", npy.Float32
	}
	for _, s := range f.Base.Sigma {
		if s != sp.Sigma {
			return fmt.Errorf("%s: the peer takes an isotropic base, σ has %g and %g", convFlowExperiment, sp.Sigma, s)
		}
	}
	for _, c := range cs {
		sp.Couplings = append(sp.Couplings, convFlowCoupling{Name: strings.TrimSuffix(c.In.Name, ".in"), Kind: c.Kind, Squeeze: c.Squeeze,
			Parity: c.Parity, Dt: c.Dt, Hidden: c.In.Out, Blocks: len(c.Blocks)})
	}
	if err := os.MkdirAll(filepath.Join(dir, "params"), 0o755); err != nil {
		return err
	}
	for _, p := range f.Params.List() {
		file := filepath.Join("params", p.Name+".npy")
		if err := npy.WriteFile(filepath.Join(dir, file), &npy.Array{Shape: p.Shape, Data: p.Float64s()}, kind); err != nil {
			return fmt.Errorf("%s: writing parameter %s: %w", convFlowExperiment, p.Name, err)
		}
		sp.Params = append(sp.Params, convFlowParamFile{Name: p.Name, Shape: p.Shape, File: file})
	}
	js, err := json.MarshalIndent(sp, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "spec.json"), js, 0o644)
}

// readConvFlowParams sets p's values from dir's spec.json and parameter
// files, checking that they name exactly p's parameters with p's shapes.
func readConvFlowParams(dir string, p *graph.Params) error {
	js, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err != nil {
		return err
	}
	var sp convFlowSpec
	if err := json.Unmarshal(js, &sp); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "spec.json"), err)
	}
	if len(sp.Params) != len(p.List()) {
		return fmt.Errorf("%s: spec.json lists %d parameters, the flow has %d", convFlowExperiment, len(sp.Params), len(p.List()))
	}
	for _, f := range sp.Params {
		q := p.Get(f.Name)
		if q == nil {
			return fmt.Errorf("%s: spec.json names parameter %s, which the flow lacks", convFlowExperiment, f.Name)
		}
		a, err := npy.ReadFile(filepath.Join(dir, f.File))
		if err != nil {
			return err
		}
		if fmt.Sprint(a.Shape) != fmt.Sprint(q.Shape) || fmt.Sprint(f.Shape) != fmt.Sprint(q.Shape) {
			return fmt.Errorf("%s: parameter %s has shape %v in spec.json and %v in its file, the flow %v", convFlowExperiment, f.Name, f.Shape, a.Shape, q.Shape)
		}
		if err := q.SetFloat64s(a.Data); err != nil {
			return err
		}
	}
	return nil
}

// convFlowMACs is the multiply-adds per image of one pass (either
// direction): each coupling's conditioner on its squeezed image
// (C', H', W') = (4^q·C, H/2^q, W/2^q) runs 3×3 convolutions C' → hidden,
// per residual block hidden → hidden twice, and the heads hidden → C'
// twice, each costing H'·W'·9 multiply-adds per input–output channel pair.
func convFlowMACs(nvp layers.ImageRealNVP) (float64, error) {
	cs, err := nvp.Couplings()
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, c := range cs {
		cin, h := float64(c.In.In), float64(c.In.Out)
		side := float64(c.Image.H>>c.Squeeze) * float64(c.Image.W>>c.Squeeze)
		total += side * 9 * (cin*h + float64(len(c.Blocks))*2*h*h + 2*h*cin)
	}
	return total, nil
}

// convFlowStats are a conv-flow-28 row's measurements: each side's median
// seconds per call of each pass, and how far flowebm's results are from
// PyTorch's on the same weights and inputs (‖flowebm − PyTorch‖∞ /
// ‖PyTorch‖∞).
type convFlowStats struct {
	params                                   int
	flops                                    float64 // one pass at convFlowBatch
	goSample, pySample, goDensity, pyDensity float64
	relX, relSampleLogq, relDensityLogq      float64
	move                                     float64 // ‖x − z‖∞ of the checked samples
}

// convFlowTolerance bounds the relative differences of convFlowStats:
// flowebm and PyTorch sum the convolutions in different orders, and no
// step of either pass amplifies rounding much (ReLU and tanh are
// continuous), so they agree to a few hundred ulps (measured: 3e-7 in
// float32, 5e-15 in float64).
func convFlowTolerance(dtype string) float64 {
	if dtype == "float32" {
		return 1e-5
	}
	return 1e-10
}

// measureConvFlow times both passes of flowebm's flow against PyTorch's
// after checking that both compute the same.
func (b *bench) measureConvFlow(dtype string, threads int) (row, error) {
	r := row{experiment: convFlowExperiment, dtype: dtype, threads: threads}
	dir, err := os.MkdirTemp("", "flowebm-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	st := &convFlowStats{}
	f, x, err := b.convFlowSetup(dir, dtype, threads, st)
	if err != nil {
		return r, err
	}
	r.convFlow, r.iterFLOPs = st, st.flops
	py, err := launch(b.python, threads, "conv_flow.py", "--serve", dir, "--threads", strconv.Itoa(threads))
	if err != nil {
		return r, err
	}
	defer py.close()
	r.torch = py.version
	goSide := convFlowRunner(f, x, gemmRunner(rand.New(rand.NewPCG(1, 2)), dtype == "float32", threads))
	if st.goSample, st.pySample, err = b.alternate("sample", goSide, py.run); err != nil {
		return r, fmt.Errorf("%s sample: %w", convFlowExperiment, err)
	}
	if st.goDensity, st.pyDensity, err = b.alternate("density", goSide, py.run); err != nil {
		return r, fmt.Errorf("%s density: %w", convFlowExperiment, err)
	}
	r.goGemm, r.pyGemm, err = b.gemmRates(goSide, py.run, threads)
	return r, err
}

// convFlowSetup builds the flow, writes it into dir with the check's
// inputs (z.npy: the base draws of a Sample call; x.npy: points in
// [−1, 1]^784, the image experiments' range, whose density is taken), runs
// conv_flow.py --check dir and records in st how far flowebm's samples and
// log-densities are from PyTorch's; beyond convFlowTolerance it fails. It
// returns the flow and the density pass's points.
func (b *bench) convFlowSetup(dir, dtype string, threads int, st *convFlowStats) (*graph.Flow, *mat.Dense, error) {
	f, nvp, err := newConvFlow(dtype, threads)
	if err != nil {
		return nil, nil, err
	}
	macs, err := convFlowMACs(nvp)
	if err != nil {
		return nil, nil, err
	}
	st.params, st.flops = f.Params.Count(), 2*macs*convFlowBatch
	if err := writeConvFlow(dir, f, nvp); err != nil {
		return nil, nil, err
	}
	n, d := convFlowBatch, f.Dim()
	rng := rand.New(rand.NewPCG(3, 4))
	z, xs, lqs := mat.NewDense(n, d, nil), mat.NewDense(n, d, nil), make([]float64, n)
	if err := f.SampleLatent(rng, z, xs, lqs); err != nil {
		return nil, nil, fmt.Errorf("%s: flowebm's sample pass: %w", convFlowExperiment, err)
	}
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = 2*rng.Float64() - 1
	}
	lq := make([]float64, n)
	if err := f.LogDensity(x, lq); err != nil {
		return nil, nil, fmt.Errorf("%s: flowebm's density pass: %w", convFlowExperiment, err)
	}
	for name, m := range map[string]*mat.Dense{"z": z, "x": x} {
		if err := npy.WriteFile(filepath.Join(dir, name+".npy"), &npy.Array{Shape: []int{n, d}, Data: m.RawMatrix().Data}, npy.Float64); err != nil {
			return nil, nil, err
		}
	}
	params, err := checkConvFlowPeer(b.python, dir)
	if err != nil {
		return nil, nil, err
	}
	if params != st.params {
		return nil, nil, fmt.Errorf("%s: PyTorch loaded %d parameters, flowebm has %d", convFlowExperiment, params, st.params)
	}
	var want [3][]float64
	for i, name := range []string{"sample_x", "sample_logq", "density_logq"} {
		if want[i], err = readNpy(dir, name); err != nil {
			return nil, nil, err
		}
	}
	if len(want[0]) != n*d || len(want[1]) != n || len(want[2]) != n {
		return nil, nil, fmt.Errorf("%s: sample_x.npy, sample_logq.npy, density_logq.npy: %d, %d and %d values, want %d, %d and %d",
			convFlowExperiment, len(want[0]), len(want[1]), len(want[2]), n*d, n, n)
	}
	st.relX, st.relSampleLogq, st.relDensityLogq = relInf(xs.RawMatrix().Data, want[0]), relInf(lqs, want[1]), relInf(lq, want[2])
	for i, v := range xs.RawMatrix().Data {
		st.move = math.Max(st.move, math.Abs(v-z.RawMatrix().Data[i]))
	}
	fmt.Fprintf(os.Stderr, "bench: %s: %d parameters, perturbed (the couplings move the base draws by up to %.2g); flowebm's samples within %.2g of PyTorch's, their log q within %.2g, log q of given points within %.2g (‖Δ‖∞/‖PyTorch‖∞)\n",
		convFlowExperiment, st.params, st.move, st.relX, st.relSampleLogq, st.relDensityLogq)
	if tol := convFlowTolerance(dtype); !(st.relX <= tol && st.relSampleLogq <= tol && st.relDensityLogq <= tol) {
		return nil, nil, fmt.Errorf("%s: flowebm and PyTorch disagree beyond %g: not timing different computations", convFlowExperiment, tol)
	}
	return f, x, nil
}

// checkConvFlowPeer runs conv_flow.py --check dir, which writes PyTorch's
// sample_x.npy, sample_logq.npy (from z.npy) and density_logq.npy (of
// x.npy) into dir, and returns the parameter count it loaded.
func checkConvFlowPeer(python, dir string) (int, error) {
	script, err := peerScript("conv_flow.py")
	if err != nil {
		return 0, err
	}
	var out bytes.Buffer
	cmd := exec.Command(python, script, "--check", dir)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("running the PyTorch flow on flowebm's weights with %s (is python3-torch installed?): %w", python, err)
	}
	var res struct {
		Params int `json:"params"`
	}
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil {
		return 0, fmt.Errorf("conv_flow.py --check: %w", err)
	}
	return res.Params, nil
}

// convFlowRunner returns flowebm's side: Sample of a batch of
// convFlowBatch ("sample"), LogDensity of the batch x ("density") and
// GEMMs ("gemm").
func convFlowRunner(f *graph.Flow, x *mat.Dense, gemm func()) side {
	n, d := x.Dims()
	rng := rand.New(rand.NewPCG(5, 6))
	xs, lq := mat.NewDense(n, d, nil), make([]float64, n)
	return taskRunner(convFlowExperiment, map[string]func() error{
		"sample":  func() error { return f.Sample(rng, xs, lq) },
		"density": func() error { return f.LogDensity(x, lq) },
		"gemm":    func() error { gemm(); return nil },
	})
}

// convFlowTable reports conv-flow-28 rows, one line per pass.
func convFlowTable(w io.Writer, rows []row, rounds int) {
	p := func(f string, a ...any) { fmt.Fprintf(w, f, a...) }
	st := rows[0].convFlow
	p("Sampling with log-density (base draws pushed through the flow: x and log q(x)) and log-density of given points (the inverse pass) of the image experiments' conv RealNVP (layers.ImageRealNVP: 2 scales of 1 checkerboard and 1 channel-wise affine coupling, conditioners of 8 channels with one residual block and ReLU; %d parameters, perturbed from the identity initialisation) on 1×28×28 at batch %d, ", st.params, convFlowBatch)
	p("against the same network in PyTorch (bench/peer/conv_flow.py, torch.nn.functional, no autograd) loaded with flowebm's weights. ")
	p("Median over %d alternating rounds. Ratio = flowebm / PyTorch time (below 1: flowebm faster). GFLOP/s counts the convolutions' multiply-adds (%.3f GFLOP a pass); %% is of the same side's measured %d×%d GEMM rate. ", rounds, st.flops/1e9, gemmSize, gemmSize)
	p("Δ x and Δ log q: ‖flowebm − PyTorch‖∞ / ‖PyTorch‖∞ on a fixed batch (samples from the same base draws; log q of the same points).\n\n")
	p("| experiment | pass | dtype | threads | flowebm ms/call | PyTorch ms/call | ratio | flowebm GFLOP/s (%% of GEMM) | PyTorch GFLOP/s (%% of GEMM) | GEMM GFLOP/s flowebm | GEMM GFLOP/s PyTorch | Δ x | Δ log q |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		s := r.convFlow
		for _, pass := range []struct {
			name       string
			goT, pyT   float64
			relX, relQ string
		}{
			{"sample", s.goSample, s.pySample, fmt.Sprintf("%.1e", s.relX), fmt.Sprintf("%.1e", s.relSampleLogq)},
			{"density", s.goDensity, s.pyDensity, "–", fmt.Sprintf("%.1e", s.relDensityLogq)},
		} {
			q := r
			q.goIter, q.pyIter = pass.goT, pass.pyT
			p("| %s | %s | %s | %d | %s | %.1f | %.1f | %s | %s |\n", r.experiment, pass.name, r.dtype, r.threads, timing(q), r.goGemm/1e9, r.pyGemm/1e9, pass.relX, pass.relQ)
		}
	}
	p("\n")
}

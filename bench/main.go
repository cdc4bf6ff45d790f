// Command bench times flowebm's flowMC-EBM training iteration side by side
// with an equivalent PyTorch implementation (bench/peer/flowmc_ebm.py) on the
// same machine, in one run.
//
//	go run ./bench [-experiments two-modes,four-modes,four-gaussians-64,conv-ebm-28,conv-flow-28]
//	               [-dtypes float64,float32] [-threads 1,2] [-rounds 7]
//	               [-seconds 0.5] [-python /usr/bin/python3] [-out FILE.md]
//	               [-cpuprofile FILE]
//
// For every experiment, dtype and thread count it builds the experiment's
// default flowMC-EBM run (settings.Defaults) and starts the PyTorch peer on
// the same architectures, sampler settings, batch, bank and training data.
// Both are warmed up, then timed alternately, flowebm then PyTorch, for
// -rounds rounds of about -seconds each; the table gives the median time per
// training iteration of each and their ratio, and a summary per experiment
// and dtype sets flowebm at each thread count beside PyTorch at its best.
// Three primitives are timed the same way: MALA steps on 1024 chains and
// i-SIR steps with 64 and with 128 particles on 128 chains, with the
// experiment's EBM and flow. Each side's distance to the machine's limit is
// the matrix-product FLOPs of one iteration divided by its time, against
// the measured GEMM rate of its own BLAS (1024 × 1024; for flowebm one
// single-threaded product per thread at once), and in the summary against
// the machine's peak for the cores used (the faster BLAS's rate).
//
// The experiment conv-ebm-28 (not run by default) times E + ∇ₓE of an
// IGEBM-size convolutional EBM instead, imported from PyTorch's ONNX export
// (see conv.go and bench/peer/conv_ebm.py). The experiment conv-flow-28
// (not run by default) times the image experiments' conv RealNVP's
// sampling and log-density passes against a PyTorch re-implementation on
// the same weights (see convflow.go and bench/peer/conv_flow.py).
//
// Threads: flowebm runs with GOMAXPROCS set to the thread count (OpenBLAS
// stays at its one thread, see graph.BLAS), PyTorch with
// torch.set_num_threads. FLOWEBM_BLAS=go
// times flowebm's pure-Go build (gonum's BLAS) instead of OpenBLAS.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Sizes of the primitive benchmarks.
const (
	malaChains    = 1024
	isirChains    = 128
	isirParticles = 64
	wideParticles = 128 // the wide i-SIR row (128 particles on isirChains chains)
	gemmSize      = 1024
)

func main() {
	exps := flag.String("experiments", "two-modes,four-modes,four-gaussians-64", "comma-separated experiments")
	dtypes := flag.String("dtypes", "float64,float32", "comma-separated float types")
	threads := flag.String("threads", "1,2", "comma-separated thread counts")
	rounds := flag.Int("rounds", 7, "alternating rounds per measurement")
	seconds := flag.Float64("seconds", 0.5, "target duration of one timed run")
	python := flag.String("python", "/usr/bin/python3", "Python with PyTorch")
	out := flag.String("out", "", "also write the report (Markdown) to this file")
	inputs := flag.String("inputs", "", "only write the PyTorch peer's inputs (spec.json, data.npy) for the first experiment into this folder")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (flowebm's side; PyTorch runs in its own) to this file")
	flag.Parse()
	if _, err := graph.UseBLASFromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: warning:", err)
	}
	if *cpuprofile != "" {
		stop, err := startProfile(*cpuprofile)
		if err != nil {
			fail(err)
		}
		defer stop()
	}
	if *inputs != "" {
		if err := peerInputs(strings.Split(*exps, ",")[0], *inputs); err != nil {
			fail(err)
		}
		return
	}
	b := &bench{python: *python, rounds: *rounds, seconds: *seconds}
	var ts []int
	for _, s := range strings.Split(*threads, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fail(fmt.Errorf("-threads: %q is not a positive integer", s))
		}
		ts = append(ts, n)
	}
	var rows []row
	for _, dt := range strings.Split(*dtypes, ",") {
		if dt != "float64" && dt != "float32" {
			fail(fmt.Errorf("-dtypes: %q, want float64 or float32", dt))
		}
		for _, th := range ts {
			for _, e := range strings.Split(*exps, ",") {
				r, err := b.measure(e, dt, th)
				if err != nil {
					fail(err)
				}
				rows = append(rows, r)
			}
		}
	}
	rep := report(rows, *rounds)
	fmt.Print(rep)
	if *out != "" {
		if err := safefile.Write(*out, func(w io.Writer) error { _, err := io.WriteString(w, rep); return err }); err != nil {
			fail(err)
		}
	}
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

type bench struct {
	python  string
	rounds  int
	seconds float64
}

// row is one experiment × dtype × threads measurement: median seconds per
// unit (iteration or step) of each side.
type row struct {
	experiment, dtype string
	threads           int
	goIter, pyIter    float64
	goMALA, pyMALA    float64
	goISIR, pyISIR    float64
	goWide, pyWide    float64 // i-SIR with wideParticles
	iterFLOPs         float64
	goGemm, pyGemm    float64 // FLOP/s
	torch             string
	// conv-ebm-28 rows: goIter, pyIter and iterFLOPs are one E + ∇ₓE call's;
	// relEnergy and relGrad compare flowebm's E and ∇ₓE with PyTorch's.
	conv               bool
	params             int
	relEnergy, relGrad float64
	// convFlow holds a conv-flow-28 row's measurements (nil otherwise).
	convFlow *convFlowStats
}

// side is one implementation that can run n units of a task and say how
// long they took.
type side func(task string, n int) (float64, error)

func (b *bench) measure(experiment, dtype string, threads int) (row, error) {
	r := row{experiment: experiment, dtype: dtype, threads: threads}
	prev := runtime.GOMAXPROCS(threads)
	defer runtime.GOMAXPROCS(prev)
	fmt.Fprintf(os.Stderr, "bench: %s, %s, %d thread(s)\n", experiment, dtype, threads)
	if experiment == convExperiment {
		return b.measureConv(dtype, threads)
	}
	if experiment == convFlowExperiment {
		return b.measureConvFlow(dtype, threads)
	}

	cfg, _, err := settings.Defaults(experiment, algorithms.FlowMC)
	if err != nil {
		return r, err
	}
	cfg.Model.Float32 = dtype == "float32"
	run, err := training.NewRun(cfg, "")
	if err != nil {
		return r, err
	}
	tr := run.Trainer
	dir, err := os.MkdirTemp("", "flowebm-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	sp, err := peerSpec(tr)
	if err != nil {
		return r, err
	}
	r.iterFLOPs = iterationFLOPs(sp)
	if err := writeInputs(dir, sp, tr.Data()); err != nil {
		return r, err
	}
	py, err := startPeer(b.python, dir, dtype, threads)
	if err != nil {
		return r, err
	}
	defer py.close()
	r.torch = py.version

	goSide, err := goRunner(tr, dtype == "float32", threads)
	if err != nil {
		return r, err
	}
	pySide := py.run
	for _, t := range []struct {
		task     string
		goT, pyT *float64
	}{{"iter", &r.goIter, &r.pyIter}, {"mala", &r.goMALA, &r.pyMALA}, {"isir", &r.goISIR, &r.pyISIR}, {"isirwide", &r.goWide, &r.pyWide}} {
		g, p, err := b.alternate(t.task, goSide, pySide)
		if err != nil {
			return r, fmt.Errorf("%s %s: %w", experiment, t.task, err)
		}
		*t.goT, *t.pyT = g, p
	}
	r.goGemm, r.pyGemm, err = b.gemmRates(goSide, pySide, threads)
	return r, err
}

// gemmRates times gemmSize × gemmSize products on both sides and returns
// their FLOP/s: flowebm runs threads products at once (its BLAS is
// single-threaded), PyTorch one product on its threads.
func (b *bench) gemmRates(goSide, pySide side, threads int) (float64, float64, error) {
	flops := 2 * float64(gemmSize*gemmSize*gemmSize)
	g, p, err := b.alternate("gemm", goSide, pySide)
	if err != nil {
		return 0, 0, err
	}
	return float64(threads) * flops / g, flops / p, nil
}

// alternate warms both sides up, sizes one timed run to about b.seconds,
// then times them in turn, A B A B, and returns each side's median seconds
// per unit.
func (b *bench) alternate(task string, a, c side) (float64, float64, error) {
	var med [2]float64
	var n [2]int
	sides := [2]side{a, c}
	for i, s := range sides {
		// Warm up (compiles graphs, fills caches), then calibrate.
		if _, err := s(task, 2); err != nil {
			return 0, 0, err
		}
		t, err := s(task, 3)
		if err != nil {
			return 0, 0, err
		}
		n[i] = max(1, int(b.seconds/(t/3)))
	}
	times := [2][]float64{}
	for k := 0; k < b.rounds; k++ {
		for i, s := range sides {
			t, err := s(task, n[i])
			if err != nil {
				return 0, 0, err
			}
			times[i] = append(times[i], t/float64(n[i]))
		}
	}
	for i := range times {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
	}
	return med[0], med[1], nil
}

// goRunner returns flowebm's side: training iterations of tr, MALA and
// i-SIR steps with tr's models, and GEMMs of gonum's BLAS (Gorgonia's),
// one per thread at once (OpenBLAS runs each on one thread).
func goRunner(tr *algorithms.Trainer, f32 bool, threads int) (side, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	chains := func(m int) (*samplers.State, error) {
		x := mat.NewDense(m, tr.EBM.Dim(), nil)
		if err := tr.Flow.Sample(rng, x, make([]float64, m)); err != nil {
			return nil, err
		}
		return samplers.NewState(x), nil
	}
	malaState, err := chains(malaChains)
	if err != nil {
		return nil, err
	}
	isirState, err := chains(isirChains)
	if err != nil {
		return nil, err
	}
	mala := &samplers.MALA{Target: tr.EBM, StepSize: tr.Config.Sampler.StepSize, TargetAccept: tr.Config.Sampler.TargetAccept}
	isir := &samplers.ISIR{Target: tr.EBM, Proposal: tr.Flow, Particles: isirParticles}
	wideState, err := chains(isirChains)
	if err != nil {
		return nil, err
	}
	wide := &samplers.ISIR{Target: tr.EBM, Proposal: tr.Flow, Particles: wideParticles}
	gemm := gemmRunner(rng, f32, threads)
	return func(task string, k int) (float64, error) {
		start := time.Now()
		for i := 0; i < k; i++ {
			var err error
			switch task {
			case "iter":
				_, err = tr.Step()
			case "mala":
				_, err = mala.Step(rng, malaState)
			case "isir":
				_, err = isir.Step(rng, isirState)
			case "isirwide":
				_, err = wide.Step(rng, wideState)
			case "gemm":
				gemm()
			}
			if err != nil {
				return 0, err
			}
		}
		return time.Since(start).Seconds(), nil
	}, nil
}

// gemmRunner returns a function running threads gemmSize × gemmSize
// products at once, one per goroutine, with flowebm's BLAS (gonum's
// interface: OpenBLAS or pure Go); gemmRates counts threads products per
// call.
func gemmRunner(rng *rand.Rand, f32 bool, threads int) func() {
	n := gemmSize
	fs := make([]func(), threads)
	for i := range fs {
		if f32 {
			a, b, c := randGeneral32(rng, n), randGeneral32(rng, n), randGeneral32(rng, n)
			fs[i] = func() { blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c) }
		} else {
			a, b, c := randGeneral64(rng, n), randGeneral64(rng, n), randGeneral64(rng, n)
			fs[i] = func() { blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c) }
		}
	}
	if threads == 1 {
		return fs[0]
	}
	return func() {
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Add(1)
			go func() { defer wg.Done(); f() }()
		}
		wg.Wait()
	}
}

func randGeneral64(rng *rand.Rand, n int) blas64.General {
	g := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
	for i := range g.Data {
		g.Data[i] = rng.NormFloat64()
	}
	return g
}

func randGeneral32(rng *rand.Rand, n int) blas32.General {
	g := blas32.General{Rows: n, Cols: n, Stride: n, Data: make([]float32, n*n)}
	for i := range g.Data {
		g.Data[i] = float32(rng.NormFloat64())
	}
	return g
}

// spec is what the PyTorch peer needs to build the same iteration.
type spec struct {
	Dim           int                          `json:"dim"`
	Sigma         float64                      `json:"sigma"`
	EBMSizes      []int                        `json:"ebm_sizes"`
	EBMSlope      float64                      `json:"ebm_slope"`
	FlowHidden    []int                        `json:"flow_hidden"`
	FlowMasks     [][]float64                  `json:"flow_masks"`
	FlowDt        float64                      `json:"flow_dt"`
	FlowInit      string                       `json:"flow_init"`
	Batch         int                          `json:"batch"`
	Persistent    int                          `json:"persistent"`
	Steps         int                          `json:"steps"`
	GlobalSteps   int                          `json:"global_steps"`
	LocalSteps    int                          `json:"local_steps"`
	Stacked       bool                         `json:"stacked"`
	Particles     int                          `json:"particles"`
	StepSize      float64                      `json:"step_size"`
	TargetAccept  float64                      `json:"target_accept"`
	Negatives     algorithms.NegativeSelection `json:"negatives"`
	EBMLR         float64                      `json:"ebm_lr"`
	FlowLR        float64                      `json:"flow_lr"`
	AverageWindow int                          `json:"average_window"`
	MALAChains    int                          `json:"mala_chains"`
	ISIRChains    int                          `json:"isir_chains"`
	ISIRParticles int                          `json:"isir_particles"`
	WideParticles int                          `json:"wide_particles"`
}

func peerSpec(tr *algorithms.Trainer) (spec, error) {
	c := tr.Config
	s := c.Sampler
	net, ok := tr.EBM.Net.(graph.MLPEnergy)
	if !ok || net.Hidden.Kind != "leaky_relu" {
		return spec{}, fmt.Errorf("bench: the peer implements LeakyReLU MLP energies only, have %T", tr.EBM.Net)
	}
	nvp, ok := tr.Flow.Net.(layers.RealNVP)
	if !ok {
		return spec{}, fmt.Errorf("bench: the peer implements RealNVP flows only, have %T", tr.Flow.Net)
	}
	if c.L2 != 0 || s.Global != algorithms.ISIR || (s.Negatives != algorithms.NegativesLast && s.Negatives != algorithms.NegativesAll) || nvp.BlockDepth > 1 {
		return spec{}, fmt.Errorf("bench: the peer implements i-SIR, negatives last or all, no L2 term and block depth 1")
	}
	cs, err := nvp.Couplings()
	if err != nil {
		return spec{}, err
	}
	sp := spec{
		Dim: tr.EBM.Dim(), Sigma: tr.Flow.Base.Sigma[0], EBMSizes: net.Sizes, EBMSlope: net.Hidden.Slope,
		FlowHidden: nvp.Hidden, FlowDt: cs[0].Dt, FlowInit: nvp.Init,
		Batch: c.BatchSize, Persistent: c.Persistent, Steps: s.Steps, GlobalSteps: s.GlobalSteps, LocalSteps: s.LocalSteps,
		Stacked: s.Stacked, Particles: s.Particles, StepSize: s.StepSize, TargetAccept: s.TargetAccept, Negatives: s.Negatives,
		EBMLR: c.EBMOptim.LR, FlowLR: c.FlowOptim.LR, AverageWindow: max(1, c.AverageWindow),
		MALAChains: malaChains, ISIRChains: isirChains, ISIRParticles: isirParticles, WideParticles: wideParticles,
	}
	if sp.FlowInit == "" {
		sp.FlowInit = "small"
	}
	for _, cp := range cs {
		sp.FlowMasks = append(sp.FlowMasks, cp.Mask)
	}
	return sp, nil
}

// peerInputs writes the peer's inputs for an experiment's float64 default
// run into dir, for running the peer by hand.
func peerInputs(experiment, dir string) error {
	cfg, _, err := settings.Defaults(experiment, algorithms.FlowMC)
	if err != nil {
		return err
	}
	run, err := training.NewRun(cfg, "")
	if err != nil {
		return err
	}
	sp, err := peerSpec(run.Trainer)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeInputs(dir, sp, run.Trainer.Data())
}

func writeInputs(dir string, sp spec, data *mat.Dense) error {
	js, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), js, 0o644); err != nil {
		return err
	}
	r, c := data.Dims()
	a := &npy.Array{Shape: []int{r, c}, Data: mat.DenseCopyOf(data).RawMatrix().Data}
	return npy.WriteFile(filepath.Join(dir, "data.npy"), a, npy.Float64)
}

// iterationFLOPs counts the multiply-adds (×2) of the matrix products in one
// flowMC-EBM iteration, following the trainer's caching: log π, ∇log π and
// log λ of the current points are computed only when stale. A backward pass
// for the x-gradient costs one forward pass; for the parameter gradient two.
func iterationFLOPs(sp spec) float64 {
	mlp := func(sizes []int, rows int) float64 {
		f := 0.0
		for i := 0; i+1 < len(sizes); i++ {
			f += 2 * float64(rows*sizes[i]*sizes[i+1])
		}
		return f
	}
	flowSizes := append(append([]int{sp.Dim}, sp.FlowHidden...), sp.Dim)
	ebm := func(rows int) float64 { return mlp(sp.EBMSizes, rows) }
	flow := func(rows int) float64 { return float64(2*len(sp.FlowMasks)) * mlp(flowSizes, rows) }
	m := sp.Batch
	cycle := sp.GlobalSteps + sp.LocalSteps
	moves := sp.Steps
	if sp.Stacked {
		moves *= cycle
	}
	total, negs := 0.0, m
	if sp.Negatives == algorithms.NegativesAll {
		negs = m * sp.Steps
	}
	lp, grad, lq := false, false, false
	for k := 0; k < moves; k++ {
		if k%cycle < sp.GlobalSteps {
			if !lp {
				total += ebm(m)
			}
			if !lq {
				total += flow(m)
			}
			p := m * (sp.Particles - 1)
			total += flow(p) + ebm(p)
			lp, lq, grad = true, true, false
			continue
		}
		if !grad {
			total += 2 * ebm(m)
		}
		total += 2 * ebm(m)
		lp, grad, lq = true, true, false
	}
	total += 3*ebm(sp.Batch+negs) + 3*flow(negs) + ebm(sp.Batch)
	return total
}

// peer is the PyTorch process.
type peer struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	version string
}

func startPeer(python, dir, dtype string, threads int) (*peer, error) {
	return launch(python, threads, "flowmc_ebm.py", filepath.Join(dir, "spec.json"), filepath.Join(dir, "data.npy"), dtype, strconv.Itoa(threads))
}

// launch starts bench/peer/script with args, limited to threads OpenMP
// threads, and waits for its ready line.
func launch(python string, threads int, script string, args ...string) (*peer, error) {
	path, err := peerScript(script)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(python, append([]string{path}, args...)...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS="+strconv.Itoa(threads))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the PyTorch peer with %s: %w", python, err)
	}
	p := &peer{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	var ready struct {
		Ready bool   `json:"ready"`
		Torch string `json:"torch"`
	}
	if err := p.read(&ready); err != nil {
		p.close()
		return nil, fmt.Errorf("the PyTorch peer did not start (is python3-torch installed for %s?): %w", python, err)
	}
	p.version = ready.Torch
	return p, nil
}

// peerScript finds bench/peer/name from the working directory or the module
// root above it.
func peerScript(name string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "bench", "peer", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("bench/peer/%s not found above the working directory: run from the repository", name)
		}
		dir = up
	}
}

func (p *peer) read(v any) error {
	if !p.out.Scan() {
		if err := p.out.Err(); err != nil {
			return err
		}
		return io.ErrUnexpectedEOF
	}
	return json.Unmarshal(p.out.Bytes(), v)
}

func (p *peer) run(task string, n int) (float64, error) {
	line := fmt.Sprintf("%s %d\n", task, n)
	if task == "gemm" {
		line = fmt.Sprintf("gemm %d %d\n", gemmSize, n)
	}
	if _, err := io.WriteString(p.in, line); err != nil {
		return 0, err
	}
	var res struct {
		Seconds float64 `json:"seconds"`
		Error   string  `json:"error"`
	}
	if err := p.read(&res); err != nil {
		return 0, fmt.Errorf("PyTorch peer: %w", err)
	}
	if res.Error != "" {
		return 0, fmt.Errorf("PyTorch peer: %s", res.Error)
	}
	return res.Seconds, nil
}

func (p *peer) close() {
	io.WriteString(p.in, "quit\n")
	p.in.Close()
	p.cmd.Wait()
}

func report(rows []row, rounds int) string {
	var w strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&w, f, a...) }
	var flow, conv, convFlow []row
	for _, r := range rows {
		if r.conv {
			conv = append(conv, r)
		} else if r.convFlow != nil {
			convFlow = append(convFlow, r)
		} else {
			flow = append(flow, r)
		}
	}
	torch, what := "", []string{}
	if len(rows) > 0 {
		torch = rows[0].torch
	}
	if len(flow) > 0 {
		what = append(what, "flowMC-EBM training")
	}
	if len(conv) > 0 {
		what = append(what, "E + ∇ₓE of a convolutional EBM")
	}
	if len(convFlow) > 0 {
		what = append(what, "sampling and log-density of a convolutional RealNVP")
	}
	p("## flowebm against PyTorch %s, %s (%s, %s/%s, %d CPUs)\n\n", torch, strings.Join(what, "; "), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	p("flowebm's BLAS: %s.\n\n", graph.BLAS())
	if len(flow) > 0 {
		flowTables(&w, flow, rounds)
	}
	if len(conv) > 0 {
		if len(flow) > 0 {
			p("\n")
		}
		convTable(&w, conv, rounds)
	}
	if len(convFlow) > 0 {
		if len(flow)+len(conv) > 0 {
			p("\n")
		}
		convFlowTable(&w, convFlow, rounds)
	}
	return w.String()
}

// timing formats the columns every table shares: each side's milliseconds
// per unit, their ratio, and each side's GFLOP/s (% of its GEMM rate).
func timing(r row) string {
	gf, pf := r.iterFLOPs/r.goIter/1e9, r.iterFLOPs/r.pyIter/1e9
	return fmt.Sprintf("%.2f | %.2f | %.2f | %.2f (%.1f%%) | %.2f (%.1f%%)", 1e3*r.goIter, 1e3*r.pyIter, r.goIter/r.pyIter,
		gf, 100*gf/(r.goGemm/1e9), pf, 100*pf/(r.pyGemm/1e9))
}

func flowTables(w io.Writer, rows []row, rounds int) {
	p := func(f string, a ...any) { fmt.Fprintf(w, f, a...) }
	summaryTable(w, rows)
	p("Median over %d alternating rounds. Ratio = flowebm / PyTorch time (below 1: flowebm faster). GFLOP/s counts the matrix products of one iteration; %% is of the same side's measured %d×%d GEMM rate.\n\n", rounds, gemmSize, gemmSize)
	p("| experiment | dtype | threads | flowebm ms/it | PyTorch ms/it | ratio | flowebm GFLOP/s (%% of GEMM) | PyTorch GFLOP/s (%% of GEMM) |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p("| %s | %s | %d | %s |\n", r.experiment, r.dtype, r.threads, timing(r))
	}
	p("\nPrimitives with each experiment's models: MALA on %d chains, i-SIR with %d and with %d particles on %d chains (steps per second), and the GEMM rates (flowebm: one single-threaded product per thread at once; PyTorch: one product on its threads).\n\n", malaChains, isirParticles, wideParticles, isirChains)
	p("| experiment | dtype | threads | MALA flowebm | MALA PyTorch | ratio | i-SIR flowebm | i-SIR PyTorch | ratio | i-SIR×%d flowebm | i-SIR×%d PyTorch | ratio | GEMM GFLOP/s flowebm | GEMM GFLOP/s PyTorch |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", wideParticles, wideParticles)
	for _, r := range rows {
		p("| %s | %s | %d | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %.1f | %.1f | %.2f | %.1f | %.1f |\n", r.experiment, r.dtype, r.threads,
			1/r.goMALA, 1/r.pyMALA, r.goMALA/r.pyMALA, 1/r.goISIR, 1/r.pyISIR, r.goISIR/r.pyISIR,
			1/r.goWide, 1/r.pyWide, r.goWide/r.pyWide, r.goGemm/1e9, r.pyGemm/1e9)
	}
}

// summaryTable gives, per experiment and dtype, flowebm's iteration at
// each thread count, PyTorch's at its best thread count, the ratio of the
// best times, and each side's GFLOP/s as a fraction of the machine's GEMM
// peak for the cores that side used (the faster of the two BLAS at that
// thread count).
func summaryTable(w io.Writer, rows []row) {
	p := func(f string, a ...any) { fmt.Fprintf(w, f, a...) }
	type key struct{ exp, dtype string }
	var order []key
	groups := map[key][]row{}
	for _, r := range rows {
		k := key{r.experiment, r.dtype}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	p("Summary: ms per training iteration; ratio = flowebm's best / PyTorch's best (below 1: flowebm faster); %% of peak = GFLOP/s over the machine's measured GEMM rate for the cores used.\n\n")
	p("| experiment | dtype | flowebm ms/it by threads | PyTorch best ms/it (threads) | ratio | flowebm %% of peak (threads) | PyTorch %% of peak (threads) |\n|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		g := groups[k]
		var byThreads []string
		goBest, pyBest := g[0], g[0]
		for _, r := range g {
			byThreads = append(byThreads, fmt.Sprintf("%d: %.2f", r.threads, 1e3*r.goIter))
			if r.goIter < goBest.goIter {
				goBest = r
			}
			if r.pyIter < pyBest.pyIter {
				pyBest = r
			}
		}
		peak := func(r row) float64 { return max(r.goGemm, r.pyGemm) }
		gf, pf := g[0].iterFLOPs/goBest.goIter, g[0].iterFLOPs/pyBest.pyIter
		p("| %s | %s | %s | %.2f (%d) | %.2f | %.1f%% (%d) | %.1f%% (%d) |\n", k.exp, k.dtype, strings.Join(byThreads, ", "),
			1e3*pyBest.pyIter, pyBest.threads, goBest.goIter/pyBest.pyIter, 100*gf/peak(goBest), goBest.threads, 100*pf/peak(pyBest), pyBest.threads)
	}
	p("\n")
}

package main

// The conv-ebm-28 experiment: E + ∇ₓE of an IGEBM-size convolutional EBM on
// 1×28×28 images at batch 64, written in PyTorch (bench/peer/conv_ebm.py),
// exported with torch.onnx.export and imported with io/onnx, against
// PyTorch's forward pass and autograd on the same model and input.

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
	"time"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/onnx"
	"gonum.org/v1/gonum/mat"
)

const convExperiment = "conv-ebm-28"

// convMACs is conv_ebm.py's multiply-adds per sample in a forward pass:
// each convolution's output H·W·C_out times C_in·k², then the linear energy.
const convMACs = 28*28*64*1*3*3 + 14*14*64*64*4*4 + 7*7*128*64*4*4 + 7*7*128*128*3*3 + 128*7*7

// convBatch is the batch of the peer's x.npy.
const convBatch = 64

// convFLOPs is one E + ∇ₓE call at convBatch: the backward pass to x costs
// as many multiply-adds as the forward pass.
const convFLOPs = 2 * 2 * convMACs * convBatch

// measureConv times flowebm's EBM.EnergyGrad on the imported model against
// PyTorch's E + autograd ∇ₓE, after checking that both compute the same.
func (b *bench) measureConv(dtype string, threads int) (row, error) {
	r := row{experiment: convExperiment, dtype: dtype, threads: threads, conv: true, iterFLOPs: convFLOPs}
	dir, err := os.MkdirTemp("", "flowebm-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	ebm, x, err := b.convSetup(dir, dtype, &r)
	if err != nil {
		return r, err
	}
	py, err := launch(b.python, threads, "conv_ebm.py", "--serve", dir, "--dtype", dtype, "--threads", strconv.Itoa(threads))
	if err != nil {
		return r, err
	}
	defer py.close()
	r.torch = py.version
	goSide := convRunner(ebm, x, gemmRunner(rand.New(rand.NewPCG(1, 2)), dtype == "float32", threads))
	if r.goIter, r.pyIter, err = b.alternate("grad", goSide, py.run); err != nil {
		return r, fmt.Errorf("%s grad: %w", convExperiment, err)
	}
	r.goGemm, r.pyGemm, err = b.gemmRates(goSide, py.run, threads)
	return r, err
}

// convSetup exports the peer's model into dir, imports it, and records in r
// its parameter count and how far flowebm's E and ∇ₓE are from PyTorch's.
func (b *bench) convSetup(dir, dtype string, r *row) (*graph.EBM, *mat.Dense, error) {
	params, err := exportConv(b.python, dir, dtype)
	if err != nil {
		return nil, nil, err
	}
	ebm, x, err := loadConv(dir, params)
	if err != nil {
		return nil, nil, err
	}
	r.params = params
	if r.relEnergy, r.relGrad, err = checkConv(ebm, x, dir); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "bench: %s: %d parameters; flowebm's energies within %.2g of PyTorch's, ∇ₓE within %.2g (‖Δ‖∞/‖PyTorch‖∞)\n",
		convExperiment, params, r.relEnergy, r.relGrad)
	if tol := convTolerance(dtype); !(r.relEnergy <= tol && r.relGrad <= tol) {
		return nil, nil, fmt.Errorf("%s: flowebm and PyTorch disagree beyond %g: not timing different computations", convExperiment, tol)
	}
	return ebm, x, nil
}

func convTolerance(dtype string) float64 {
	if dtype == "float32" {
		return 1e-3
	}
	return 1e-9
}

// exportConv runs conv_ebm.py --export dir and returns the model's
// parameter count.
func exportConv(python, dir, dtype string) (int, error) {
	script, err := peerScript("conv_ebm.py")
	if err != nil {
		return 0, err
	}
	var out bytes.Buffer
	cmd := exec.Command(python, script, "--export", dir, "--dtype", dtype)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("exporting the PyTorch model with %s (is python3-torch installed?): %w", python, err)
	}
	var res struct {
		Params int `json:"params"`
	}
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil {
		return 0, fmt.Errorf("conv_ebm.py --export: %w", err)
	}
	return res.Params, nil
}

// loadConv imports dir's ONNX file as an EBM in the file's float type and
// reads the input batch, flat (B, C·H·W).
func loadConv(dir string, params int) (*graph.EBM, *mat.Dense, error) {
	net, err := onnx.ReadFile(filepath.Join(dir, "conv_ebm.onnx"))
	if err != nil {
		return nil, nil, err
	}
	n := 0
	for _, s := range net.ParamSpecs() {
		n += s.Size()
	}
	if n != params {
		return nil, nil, fmt.Errorf("%s: %d parameters imported, PyTorch has %d", convExperiment, n, params)
	}
	ebm, err := graph.NewEBM(net, nil, net.Dtype, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return nil, nil, err
	}
	x, err := readNpy(dir, "x")
	if err != nil {
		return nil, nil, err
	}
	if len(x)%net.Dim() != 0 {
		return nil, nil, fmt.Errorf("x.npy has %d values, not rows of %d (input shape %v)", len(x), net.Dim(), net.InputShape())
	}
	return ebm, mat.NewDense(len(x)/net.Dim(), net.Dim(), x), nil
}

func readNpy(dir, name string) ([]float64, error) {
	a, err := npy.ReadFile(filepath.Join(dir, name+".npy"))
	if err != nil {
		return nil, err
	}
	return a.Data, nil
}

// checkConv compares flowebm's E and ∇ₓE at x with PyTorch's (energy.npy,
// grad.npy), each as ‖flowebm − PyTorch‖∞ / ‖PyTorch‖∞.
func checkConv(e *graph.EBM, x *mat.Dense, dir string) (relEnergy, relGrad float64, err error) {
	n, d := x.Dims()
	en, g := make([]float64, n), mat.NewDense(n, d, nil)
	if err := e.EnergyGrad(x, en, g); err != nil {
		return 0, 0, err
	}
	var want [2][]float64
	for i, name := range []string{"energy", "grad"} {
		if want[i], err = readNpy(dir, name); err != nil {
			return 0, 0, err
		}
	}
	if len(want[0]) != n || len(want[1]) != n*d {
		return 0, 0, fmt.Errorf("energy.npy, grad.npy: %d and %d values, want %d and %d", len(want[0]), len(want[1]), n, n*d)
	}
	return relInf(en, want[0]), relInf(g.RawMatrix().Data, want[1]), nil
}

// relInf is ‖a − b‖∞ / ‖b‖∞.
func relInf(a, b []float64) float64 {
	var diff, norm float64
	for i := range a {
		diff = math.Max(diff, math.Abs(a[i]-b[i]))
		norm = math.Max(norm, math.Abs(b[i]))
	}
	return diff / norm
}

// convRunner returns flowebm's side: E + ∇ₓE of the batch x ("grad") and
// GEMMs ("gemm").
func convRunner(e *graph.EBM, x *mat.Dense, gemm func()) side {
	n, d := x.Dims()
	en, g := make([]float64, n), mat.NewDense(n, d, nil)
	return taskRunner(convExperiment, map[string]func() error{
		"grad": func() error { return e.EnergyGrad(x, en, g) },
		"gemm": func() error { gemm(); return nil },
	})
}

// taskRunner is a side that times k calls of the named task of tasks.
func taskRunner(experiment string, tasks map[string]func() error) side {
	return func(task string, k int) (float64, error) {
		run, ok := tasks[task]
		if !ok {
			return 0, fmt.Errorf("%s: no task %q", experiment, task)
		}
		start := time.Now()
		for i := 0; i < k; i++ {
			if err := run(); err != nil {
				return 0, err
			}
		}
		return time.Since(start).Seconds(), nil
	}
}

// convTable reports conv-ebm-28 rows.
func convTable(w io.Writer, rows []row, rounds int) {
	p := func(f string, a ...any) { fmt.Fprintf(w, f, a...) }
	p("E + ∇ₓE (autograd) of an IGEBM-size convolutional EBM (bench/peer/conv_ebm.py: 4 Conv2d + LeakyReLU(0.2), Linear; %d parameters) on 1×28×28 at batch %d, PyTorch's model exported to ONNX and imported with io/onnx. ", rows[0].params, convBatch)
	p("Median over %d alternating rounds. Ratio = flowebm / PyTorch time (below 1: flowebm faster). GFLOP/s counts the multiply-adds of the forward pass and the backward pass to x (%.2f GFLOP a call); %% is of the same side's measured %d×%d GEMM rate. ", rounds, convFLOPs/1e9, gemmSize, gemmSize)
	p("Δ E and Δ ∇ₓE: ‖flowebm − PyTorch‖∞ / ‖PyTorch‖∞ on a fixed batch.\n\n")
	p("| experiment | dtype | threads | flowebm ms/call | PyTorch ms/call | ratio | flowebm GFLOP/s (%% of GEMM) | PyTorch GFLOP/s (%% of GEMM) | GEMM GFLOP/s flowebm | GEMM GFLOP/s PyTorch | Δ E | Δ ∇ₓE |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p("| %s | %s | %d | %s | %.1f | %.1f | %.1e | %.1e |\n", r.experiment, r.dtype, r.threads, timing(r), r.goGemm/1e9, r.pyGemm/1e9, r.relEnergy, r.relGrad)
	}
	p("\n")
}

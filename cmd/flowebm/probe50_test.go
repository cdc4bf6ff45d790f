package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Probe 48 N5c: train, compare and reproduce said "cannot make the folder
// ro/c: mkdir ro/c: permission denied" without naming the option that
// gave the folder.
func TestUnmakeableOutFolderNamesTheFlag(t *testing.T) {
	dir := openTempDir(t)
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Mkdir(filepath.Join(dir, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"train", "--iterations", "2", "--quiet", "--out", "ro/c"},
		{"train", "--iterations", "2", "--quiet", "--seeds", "2", "--out", "ro/c"},
		{"compare", "run", "--out", "ro/c"},
		{"reproduce", "--quick", "--experiments", "two-modes", "--out", "ro/c"},
	} {
		stderr, err := otherUser(t, dir, args...)
		if err == nil || !strings.Contains(stderr, "--out ro/c: cannot make this folder: mkdir ro/c: permission denied") {
			t.Errorf("%s: %v, %q; want the refusal naming --out", strings.Join(args, " "), err, stderr)
		}
	}
}

// tiledModel is an ONNX energy Σⱼ xⱼ² (d = 2) whose graph holds
// x.repeat(1, 20000) (320 KB a point): it can be built on at most 838
// points at once (io/onnx/crosscheck/make_pinned.py).
var tiledModel = filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "tiled_dyn.onnx")

// Probe 50: energy ran ONNX graphs on batches of 4,096 points whatever
// they held per point, and a conv EBM's first convolution was refused
// from 669 points on; the batches are now sized to the graph.
func TestEnergyBatchesFitTheGraph(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(50, 1))
	x := make([]float64, 900*2)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	pts, out := filepath.Join(dir, "p.npy"), filepath.Join(dir, "e.npy")
	if err := npy.WriteFile(pts, &npy.Array{Shape: []int{900, 2}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("energy", "--model", tiledModel, "--points", pts, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	e, err := npy.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 900 {
		want := x[2*i]*x[2*i] + x[2*i+1]*x[2*i+1]
		if math.Abs(e.Data[i]-want) > 1e-12*(1+want) {
			t.Fatalf("point %d: energy %v, want %v", i+1, e.Data[i], want)
		}
	}
}

// Probe 50: sample counted an ONNX graph's values as none (a conv EBM
// died out of memory at 1,000 chains) and ran chains past the batch its
// graph can be built at; both are refused before the work, naming what
// fits.
func TestSampleChainsFitTheGraph(t *testing.T) {
	f := memSampleFlags(tiledModel, 900)
	if _, err := f.models(); err == nil || !strings.Contains(err.Error(), "--chains 900: the model's graph can be built on at most 838 points at once") {
		t.Errorf("--chains 900: %v", err)
	}
	f.chains = 800
	m, err := f.models()
	if err != nil {
		t.Fatal(err)
	}
	if _, what := f.workMemory(m); !strings.Contains(strings.Join(what, " + "), "--chains 800 × 1.92 MB (the EBM's graph with ∇ₓE)") {
		t.Errorf("the estimate counts %q; want the graph's 1.92 MB a chain (Tile and Pow, 320 KB each, times 3)", what)
	}
}

// Probe 50: a flow given as flags (--flow, --flow-density, here swapped)
// and refused as read was named by its configuration field,
// model.flow_onnx.
func TestFlowFlagsNamedInRefusal(t *testing.T) {
	f := "../../io/onnx/testdata/flows/realnvp2_f64"
	_, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--flow", f+"_density.onnx", "--flow-density", f+"_sample.onnx", "--out", filepath.Join(t.TempDir(), "run"))
	if code == 0 || !strings.Contains(stderr, "--flow "+f+"_density.onnx, --flow-density "+f+"_sample.onnx: ") || strings.Contains(stderr, "model.flow_onnx") {
		t.Errorf("exit %d: %s; want the refusal naming the flags", code, stderr)
	}
}

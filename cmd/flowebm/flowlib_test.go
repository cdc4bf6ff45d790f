package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/flowebm/flowebm/io/npy"
)

// A flow exported as a flow library's transform is (nflows' convention:
// its inverse z → (x, logabsdet) as the sampling graph, its forward
// x → (z, logabsdet) as the density graph, one of them through a wrapper
// module that prefixes its weights' names) proposes for flowMC, trains
// with --train-flow, is written with --flow-out under each file's own
// names, and the written pair drives NeuTra: refused up to session 36.
// The target is N(0, I₃): each coordinate's mean is checked within 4
// standard errors of 0 (the chains are independent; the standard error is
// the spread of the per-chain means over √chains) and its variance within
// 10% of 1 (about 5 standard errors at 16 × 300 draws of a well-mixed
// chain).
func TestFlowLibraryTransformCLI(t *testing.T) {
	dir := t.TempDir()
	pinned := "../../io/onnx/testdata/pinned/"
	model := pinned + "quadratic_3d_dyn.onnx"
	flow := []string{"--flow", pinned + "nflowsstyle_nofold_sample.onnx", "--flow-density", pinned + "nflowsstyle_nofold_density.onnx"}
	out, fo := filepath.Join(dir, "t.npy"), filepath.Join(dir, "flow")
	args := append([]string{"sample", "--model", model, "--sampler", "flowmc", "--train-flow", "--warmup", "50", "--chains", "16", "--steps", "300", "--flow-out", fo, "--out", out}, flow...)
	if so, se, code := runCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s %s", code, so, se)
	}
	checkStandardNormal(t, out)
	sample, err := os.ReadFile(filepath.Join(fo, "flow_sample.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sample), "f.ts.0.shift") {
		t.Errorf("the written sampling graph lost its weights' names")
	}
	n := filepath.Join(dir, "n.npy")
	if so, se, code := runCLI("sample", "--model", model, "--sampler", "neutra", "--chains", "16", "--steps", "300", "--out", n,
		"--flow", filepath.Join(fo, "flow_sample.onnx"), "--flow-density", filepath.Join(fo, "flow_density.onnx")); code != 0 {
		t.Fatalf("neutra on the written pair: exit %d: %s %s", code, so, se)
	}
	checkStandardNormal(t, n)
}

// checkStandardNormal checks draws (chains, draws, d) of N(0, I).
func checkStandardNormal(t *testing.T, path string) {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, n, d := a.Shape[0], a.Shape[1], a.Shape[2]
	for j := 0; j < d; j++ {
		per, all := make([]float64, m), make([]float64, 0, m*n)
		for c := 0; c < m; c++ {
			for s := 0; s < n; s++ {
				v := a.Data[(c*n+s)*d+j]
				per[c] += v / float64(n)
				all = append(all, v)
			}
		}
		mean, sd := stat.MeanStdDev(per, nil)
		if se := sd / math.Sqrt(float64(m)); !(math.Abs(mean) <= 4*se) {
			t.Errorf("%s: coordinate %d: mean %.4f ± %.4f, want 0", path, j, mean, se)
		}
		if v := stat.Variance(all, nil); !(math.Abs(v-1) <= 0.1) {
			t.Errorf("%s: coordinate %d: variance %.4f, want 1", path, j, v)
		}
	}
}

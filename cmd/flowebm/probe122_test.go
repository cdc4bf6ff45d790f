package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// normalArray writes values drawn from N(0, 1) of the shape as an .npy file.
func normalArray(t *testing.T, path string, seed uint64, shape ...int) string {
	t.Helper()
	n := 1
	for _, s := range shape {
		n *= s
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	if err := npy.WriteFile(path, &npy.Array{Shape: shape, Data: v}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	return path
}

// Round 119 A1: a run trained with train --data on (n, 3, 4, 4) images
// took channels-last (n, 4, 4, 3) points in energy and sample --starts,
// read in the wrong order, unsaid. The checkpoint records its points'
// shape; another arrangement of it is refused, flat rows and the trained
// shape are taken.
func TestTrainedPointShapeKept(t *testing.T) {
	dir := t.TempDir()
	train := normalArray(t, filepath.Join(dir, "img.npy"), 1, 400, 3, 4, 4)
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--data", train, "--algorithm", "ula", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	spec, err := os.ReadFile(filepath.Join(run, "checkpoint", "spec.json"))
	if err != nil || !strings.Contains(string(spec), `"point_shape"`) {
		t.Fatalf("spec.json has no point_shape: %v\n%s", err, spec)
	}
	last := normalArray(t, filepath.Join(dir, "last.npy"), 2, 5, 4, 4, 3)
	_, stderr, code := runCLI("energy", "--model", run, "--points", last, "--out", filepath.Join(dir, "e.npy"))
	if code == 0 || !strings.Contains(stderr, "trained on points of shape [3 4 4]") || !strings.Contains(stderr, "x.transpose(0, 3, 1, 2)") {
		t.Errorf("energy of channels-last points: exit %d, %s", code, stderr)
	}
	_, stderr, code = runCLI("sample", "--model", run, "--sampler", "mala", "--chains", "5", "--steps", "4", "--starts", last, "--out", filepath.Join(dir, "s.npy"))
	if code == 0 || !strings.Contains(stderr, "trained on points of shape [3 4 4]") {
		t.Errorf("sample --starts of channels-last points: exit %d, %s", code, stderr)
	}
	for _, ok := range [][]int{{5, 3, 4, 4}, {5, 48}} {
		pts := normalArray(t, filepath.Join(dir, "ok.npy"), 3, ok...)
		if _, stderr, code := runCLI("energy", "--model", run, "--points", pts, "--out", filepath.Join(dir, "ok-e.npy"), "--force"); code != 0 {
			t.Errorf("energy of points of shape %v: exit %d, %s", ok, code, stderr)
		}
	}
}

// Round 121 A2: sample --starts refused a 1-D array of d values (what
// numpy.save(FILE, x0) of one point writes); it is one start for every
// chain. A 1-D array of another length is refused naming d.
func TestStartsOneDimensional(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	one := filepath.Join(dir, "x0.npy")
	if err := npy.WriteFile(one, &npy.Array{Shape: []int{2}, Data: []float64{0.5, -0.25}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "s.npy")
	if _, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--chains", "3", "--steps", "4", "--warmup", "0", "--starts", one, "--out", out); code != 0 {
		t.Fatalf("1-D start of d values: exit %d, %s", code, stderr)
	}
	a, err := npy.ReadFile(out)
	if err != nil || len(a.Shape) != 3 || a.Shape[0] != 3 {
		t.Fatalf("draws: %v, %v", err, a)
	}
	three := normalArray(t, filepath.Join(dir, "x3.npy"), 4, 3)
	_, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--chains", "3", "--steps", "4", "--starts", three, "--out", filepath.Join(dir, "s3.npy"))
	if code == 0 || !strings.Contains(stderr, "want 2 (one point of the model's dimension") {
		t.Errorf("1-D start of 3 values for d = 2: exit %d, %s", code, stderr)
	}
}

// Round 119 A6: points stored channels last for an ONNX model of images
// (n, 3, 12, 12) were refused as not "rows of 432 values": the model's
// image shape is named.
func TestONNXChannelsLastNamesImageShape(t *testing.T) {
	dir := t.TempDir()
	pts := normalArray(t, filepath.Join(dir, "cl.npy"), 5, 4, 12, 12, 3)
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "zoo", "conv_groupnorm_f64.onnx")
	_, stderr, code := runCLI("energy", "--model", model, "--points", pts, "--out", filepath.Join(dir, "e.npy"))
	if code == 0 || !strings.Contains(stderr, "takes images (n, 3, 12, 12)") || !strings.Contains(stderr, "x.transpose(0, 3, 1, 2)") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

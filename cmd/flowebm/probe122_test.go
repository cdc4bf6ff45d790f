package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// normalArray writes values drawn from N(0, 1) of the shape as an .npy
// file, from the PCG source (seed, 2).
func normalArray(t *testing.T, path string, seed uint64, shape ...int) string {
	t.Helper()
	n := 1
	for _, s := range shape {
		n *= s
	}
	rng := rand.New(rand.NewPCG(seed, 2))
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
	if code == 0 || !strings.Contains(stderr, "takes points of shape [3 12 12]") || !strings.Contains(stderr, "x.transpose(0, 3, 1, 2)") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// energiesOf runs energy on the model and points and returns the energies
// (failing the test where it exits non-zero).
func energiesOf(t *testing.T, model, points string) []float64 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "e.npy")
	if _, stderr, code := runCLI("energy", "--model", model, "--points", points, "--out", out); code != 0 {
		t.Fatalf("energy --model %s --points %s: exit %d, %s", model, points, code, stderr)
	}
	a, err := npy.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return a.Data
}

// Round 122 A1, A3, A4: convert dropped a run's point shape (its ONNX
// export took channels-last points the run refuses, energies 62.4 for
// 64.1; a checkpoint converted from an image-input graph took them too); a
// "channels first" hint for (4, 3, 4) points of a (3, 4, 4) run swapped H
// and W; (n, 5, 5) points of a (n, 1, 5, 5) run, in its order, were
// refused.
func TestPointShapeThroughConvert(t *testing.T) {
	dir := t.TempDir()
	train := normalArray(t, filepath.Join(dir, "img.npy"), 1, 300, 3, 4, 4)
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--data", train, "--algorithm", "ula", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	chw := normalArray(t, filepath.Join(dir, "chw.npy"), 2, 5, 3, 4, 4)
	hwc := normalArray(t, filepath.Join(dir, "hwc.npy"), 2, 5, 4, 4, 3)
	want := energiesOf(t, run, chw)
	for _, what := range []string{"energy", "ebm"} {
		file := filepath.Join(dir, what+".onnx")
		if _, stderr, code := runCLI("convert", run, file, "--what", what); code != 0 {
			t.Fatalf("convert --what %s: %s", what, stderr)
		}
		_, stderr, code := runCLI("energy", "--model", file, "--points", hwc)
		if code == 0 || !strings.Contains(stderr, "takes points of shape [3 4 4]") || !strings.Contains(stderr, "x.transpose(0, 3, 1, 2)") {
			t.Errorf("--what %s export of channels-last points: exit %d, %s", what, code, stderr)
		}
	}
	if got := energiesOf(t, filepath.Join(dir, "energy.onnx"), chw); !closeTo(got, want, 1e-9) {
		t.Errorf("the export's energies %v, the run's %v", got, want)
	}
	back := filepath.Join(dir, "back")
	if _, stderr, code := runCLI("convert", filepath.Join(dir, "ebm.onnx"), back); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("energy", "--model", back, "--points", hwc); code == 0 || !strings.Contains(stderr, "trained on points of shape [3 4 4]") {
		t.Errorf("a checkpoint converted from the export, channels-last points: exit %d, %s", code, stderr)
	}
	swapped := normalArray(t, filepath.Join(dir, "434.npy"), 2, 5, 4, 3, 4)
	if _, stderr, code := runCLI("energy", "--model", run, "--points", swapped); code == 0 || strings.Contains(stderr, "channels") {
		t.Errorf("(4, 3, 4) points of a (3, 4, 4) run: exit %d, %s", code, stderr)
	}

	grey := filepath.Join(dir, "grey")
	if _, stderr, code := runCLI("train", "--data", normalArray(t, filepath.Join(dir, "g.npy"), 3, 300, 1, 5, 5), "--algorithm", "ula", "--iterations", "2", "--out", grey, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	g4 := normalArray(t, filepath.Join(dir, "g4.npy"), 4, 3, 1, 5, 5)
	g3 := normalArray(t, filepath.Join(dir, "g3.npy"), 4, 3, 5, 5)
	if a, b := energiesOf(t, grey, g4), energiesOf(t, grey, g3); !closeTo(a, b, 0) {
		t.Errorf("(n, 1, 5, 5): %v, (n, 5, 5): %v", a, b)
	}
}

// closeTo reports whether a and b have the same length and agree to tol
// relative to max(1, |b|).
func closeTo(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > tol*max(1, b[i], -b[i]) || -d > tol*max(1, b[i], -b[i]) {
			return false
		}
	}
	return true
}

// Round 122 A2: points (n, 14, 14, 4) for an ONNX model of rows of 784
// were told "give them channels first, flattened … as the network was
// trained on", which flowebm cannot know (a run trained on channels-last
// data exported so took them flat as they are): both orders are named.
func TestRowsModelNamesBothOrders(t *testing.T) {
	dir := t.TempDir()
	pts := normalArray(t, filepath.Join(dir, "p.npy"), 5, 2, 14, 14, 4)
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "zoo", "igebm_flat_f64.onnx")
	_, stderr, code := runCLI("energy", "--model", model, "--points", pts)
	if code == 0 || !strings.Contains(stderr, "x.transpose(0, 3, 1, 2).reshape(len(x), -1)") || !strings.Contains(stderr, "as they are (x.reshape(len(x), -1))") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 122 A5, B3: train --modes refused (k, C, H, W) centres for
// (n, C, H, W) data (sample --modes takes them); energy refused a 1-D array
// of d values (sample --starts takes it as one point).
func TestModesAndVectorsInDataShape(t *testing.T) {
	dir := t.TempDir()
	train := normalArray(t, filepath.Join(dir, "img.npy"), 1, 300, 3, 4, 4)
	modes := normalArray(t, filepath.Join(dir, "m.npy"), 2, 2, 3, 4, 4)
	if _, stderr, code := runCLI("train", "--data", train, "--modes", modes, "--algorithm", "ula", "--iterations", "2", "--out", filepath.Join(dir, "run"), "--quiet"); code != 0 {
		t.Errorf("(k, C, H, W) centres: exit %d, %s", code, stderr)
	}
	last := normalArray(t, filepath.Join(dir, "ml.npy"), 2, 2, 4, 4, 3)
	if _, stderr, code := runCLI("train", "--data", train, "--modes", last, "--algorithm", "ula", "--iterations", "2", "--out", filepath.Join(dir, "run2"), "--quiet"); code == 0 || !strings.Contains(stderr, "the data's points are of shape [3 4 4]") {
		t.Errorf("(k, H, W, C) centres: exit %d, %s", code, stderr)
	}
	run := finishedULARun(t, dir, "two", "1")
	one := filepath.Join(dir, "x0.npy")
	if err := npy.WriteFile(one, &npy.Array{Shape: []int{2}, Data: []float64{0.5, -0.25}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	row := filepath.Join(dir, "x0row.npy")
	if err := npy.WriteFile(row, &npy.Array{Shape: []int{1, 2}, Data: []float64{0.5, -0.25}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if a, b := energiesOf(t, run, one), energiesOf(t, run, row); !closeTo(a, b, 0) {
		t.Errorf("a 1-D point: %v, a row: %v", a, b)
	}
}

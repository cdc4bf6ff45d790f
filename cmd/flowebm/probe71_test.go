package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 71 A3: an energy whose ONNX input is a vector of points (n,) was
// refused; it is read as d = 1, its energies PyTorch's, and points given
// as a vector of n values are told to be stored as (n, 1).
func TestVectorInputEnergy(t *testing.T) {
	const model = "../../io/onnx/testdata/pinned/vector_input_dyn.onnx"
	ref, err := npz.OpenReader(strings.TrimSuffix(model, ".onnx") + ".npz")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	x, err := ref.Get("x5")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Get("energy5")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	points, vector, out := filepath.Join(dir, "p.npy"), filepath.Join(dir, "v.npy"), filepath.Join(dir, "e.npy")
	if err := npy.WriteFile(points, &npy.Array{Shape: []int{5, 1}, Data: x.Data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(vector, &npy.Array{Shape: []int{5}, Data: x.Data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("energy", "--model", model, "--points", points, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, err := npy.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got.Data {
		if math.Abs(e-want.Data[i]) > 1e-12*math.Max(1, math.Abs(want.Data[i])) {
			t.Errorf("energy %d: %v, PyTorch %v", i, e, want.Data[i])
		}
	}
	_, stderr, code := runCLI("energy", "--model", model, "--points", vector, "--out", filepath.Join(dir, "e2.npy"))
	if code == 0 || !strings.Contains(stderr, "has d = 1: store its n points as an array of shape (n, 1) (numpy: x[:, None])") {
		t.Errorf("vector of points: exit %d: %s", code, stderr)
	}
}

package onnx

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/npy"
)

// Session 38: Resize and Upsample in linear and cubic modes were refused.
// PyTorch's energies and gradients are checked in
// TestBatchPinnedByTheExport (opsets 11 and 14); here every resize
// interpolation, with those PyTorch cannot check (opsets 9 and 10, whose
// asymmetric coordinates differ from PyTorch's own interpolation; a scale
// float32 cannot hold; cubic with exclude_outside or another
// cubic_coeff_a; linear with half_pixel and align_corners, written with
// python3-onnx), runs in ONNX Runtime at flowebm's inputs. ONNX Runtime
// has no float64 Resize: the fixtures are float32 (*_ort32, and opset 9's
// nearest Upsample), within ort_check's 1e-5 relative; a wrong coordinate
// or weight moves the energies by 1e-2 or more.
func TestResizeMatchesONNXRuntime(t *testing.T) {
	checkInONNXRuntime(t, "Resize/Upsample against ONNX Runtime", func(t *testing.T, dir string) []fixture {
		var names []string
		for _, glob := range []string{"*_ort32.onnx", "upsample_o9_*_b4_f32.onnx"} {
			m, err := filepath.Glob(filepath.Join("testdata", "pinned", glob))
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, m...)
		}
		if len(names) < 18 {
			t.Fatalf("%d resize fixtures, want at least 18: %v", len(names), names)
		}
		rng := rand.New(rand.NewPCG(38, 1))
		var fx []fixture
		for _, path := range names {
			fx = append(fx, resizeFixture(t, dir, path, rng))
		}
		writeManifest(t, dir, fx)
		return fx
	})
}

// resizeFixture copies the model at path into dir with 6 points of N(0, 1)
// (or its fixed batch)
// and flowebm's energies at them.
func resizeFixture(t *testing.T, dir, path string, rng *rand.Rand) fixture {
	t.Helper()
	net, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".onnx")
	if err := os.WriteFile(filepath.Join(dir, name+".onnx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	n := 6
	if net.batch > 0 {
		n = net.batch
	}
	x := mat.NewDense(n, net.Dim(), nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = rng.NormFloat64()
	}
	ebm, err := graph.NewEBM(net, nil, net.Dtype, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	e, g := make([]float64, n), mat.NewDense(n, net.Dim(), nil)
	if err := ebm.EnergyGrad(x, e, g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tag, dt := dtypeTag(net.Dtype)
	return fixture{Model: name + ".onnx", Dtype: tag,
		Inputs:  map[string]string{net.input: writeNpy(t, filepath.Join(dir, name+"_x.npy"), append([]int{n}, net.inShape...), x.RawMatrix().Data, dt)},
		Outputs: map[string]string{net.outputName: writeNpy(t, filepath.Join(dir, name+"_energy.npy"), []int{n}, e, npy.Float64)}}
}

// What Resize does not support is refused by name, without advice about
// the batch: tf_crop_and_resize coordinates, antialiased downsampling
// (opset 18) and modes ONNX does not define.
func TestResizeRefusalsSayWhy(t *testing.T) {
	str := func(name, v string) msg {
		var f msg
		f.str(4, v)
		return mdAttr(name, AttrString, f)
	}
	scales := mdTensor("sc", TypeFloat, []int64{2}, mdRawF32(1, 0.5))
	for _, c := range []struct {
		attrs []msg
		want  string
	}{
		{[]msg{str("mode", "linear"), str("coordinate_transformation_mode", "tf_crop_and_resize")}, `coordinate_transformation_mode "tf_crop_and_resize" is not supported`},
		{[]msg{str("mode", "cubic"), intAttr("antialias", 1).encode()}, "antialias when downsampling is not supported"},
		{[]msg{str("mode", "area")}, `mode "area": ONNX defines "nearest", "linear" and "cubic"`},
	} {
		ns, inits := hgEnergy("r", mdNode("r", "Resize", []string{"x", "", "sc"}, []string{"r"}, c.attrs...))
		b := modelWithOpset(hgGraph(ns, append(inits, scales), "y"), 18)
		hgRefused(t, c.want, b, Config{}, c.want)
		if _, err := DecodeConfig(b, "m.onnx", Config{}); err != nil && strings.Contains(err.Error(), "batch of") {
			t.Errorf("batch advice: %v", err)
		}
	}
}

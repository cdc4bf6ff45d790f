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
		{[]msg{str("mode", "linear"), str("coordinate_transformation_mode", "tf_crop_and_resize")}, `coordinate_transformation_mode "tf_crop_and_resize" is not supported: flowebm computes half_pixel, pytorch_half_pixel, align_corners and asymmetric`},
		{[]msg{str("mode", "cubic"), intAttr("antialias", 1).encode()}, "antialias when downsampling is not supported"},
		{[]msg{str("mode", "area")}, `mode "area": ONNX defines "nearest", "linear" and "cubic"`},
		// Round 72 A3: these carried advice about the batch, and said
		// nothing of what was expected.
		{[]msg{str("nearest_mode", "round")}, `nearest_mode "round": ONNX defines round_prefer_floor, round_prefer_ceil, floor and ceil`},
	} {
		ns, inits := hgEnergy("r", mdNode("r", "Resize", []string{"x", "", "sc"}, []string{"r"}, c.attrs...))
		b := modelWithOpset(hgGraphBatch("N", ns, append(inits, scales), "y"), 18) // a dynamic batch, where batch advice is given
		hgRefused(t, c.want, b, Config{}, c.want)
		if _, err := DecodeConfig(b, "m.onnx", Config{}); err != nil && strings.Contains(err.Error(), "batch of") {
			t.Errorf("batch advice: %v", err)
		}
	}
}

// Round 72 A1, A2, A3: a Resize given both scales and sizes used the
// scales, unsaid (ONNX Runtime refuses it); an axis resized to 0 values
// ended in an internal error (a nil pointer); a negative scale or a wrong
// number of them carried advice about the batch.
func TestResizeTargetsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		inputs []string
		inits  []msg
		want   string
	}{
		{"both", []string{"x", "", "sc", "sz"}, []msg{mdTensor("sc", TypeFloat, []int64{2}, mdRawF32(1, 2)), hgInt64s("sz", []int64{2}, 2, 6)},
			"both scales and sizes are given: ONNX takes one of them, the other empty or left out ('')"},
		{"zero scale", []string{"x", "", "sc"}, []msg{mdTensor("sc", TypeFloat, []int64{2}, mdRawF32(1, 0.1))},
			"axis 1 of 3 values is resized to 0 values (scale 0.1): want at least 1 along every axis"},
		{"zero size", []string{"x", "", "", "sz"}, []msg{hgInt64s("sz", []int64{2}, 2, 0)},
			"sizes [2 0]: 0 on axis 1, want at least 1 and at most 33554432"},
		// Round 73 A5: these said nothing of what was expected.
		{"negative size", []string{"x", "", "", "sz"}, []msg{hgInt64s("sz", []int64{2}, 2, -8)},
			"sizes [2 -8]: -8 on axis 1, want at least 1 and at most 33554432"},
		{"short sizes", []string{"x", "", "", "sz"}, []msg{hgInt64s("sz", []int64{1}, 2)},
			"sizes must be 2 constant integers, one per axis of its input (of rank 2): got 1"},
		{"negative scale", []string{"x", "", "sc"}, []msg{mdTensor("sc", TypeFloat, []int64{2}, mdRawF32(1, -2))},
			"scale -2 on axis 1 (of 3 values): want a positive scale giving at most 33554432 values"},
		{"short scales", []string{"x", "", "sc"}, []msg{mdTensor("sc", TypeFloat, []int64{1}, mdRawF32(2))},
			"scales must be 2 constants, one per axis of its input (of rank 2): got 1"},
		{"neither", []string{"x", "", ""}, nil, "neither scales nor sizes are given: give one of them, 2 values, one per axis of the input"},
	} {
		ns, inits := hgEnergy("r", mdNode("r", "Resize", c.inputs, []string{"r"}))
		b := mdModel(hgGraphBatch("N", ns, append(inits, c.inits...), "y")) // a dynamic batch, where batch advice is given
		hgRefused(t, c.name, b, Config{}, `node "r" (Resize): `+c.want)
		if _, err := DecodeConfig(b, "m.onnx", Config{}); err != nil && strings.Contains(err.Error(), "a batch of") {
			t.Errorf("%s: batch advice: %v", c.name, err)
		}
	}
}

// Round 72 A2: a nearest Resize whose result (165 MiB a point) passes the
// 256 MiB one tensor may hold at the load check's batch of 2 had its
// error shadowed: "output 0 of node ... is not supported".
func TestResizeTooLargeNamed(t *testing.T) {
	_, err := ReadFile(filepath.Join("testdata", "pinned", "resize_large_nearest_dyn.onnx"))
	if err == nil || !strings.Contains(err.Error(), `node "r" (Resize): result of shape [2 2 3000 3600] takes 330 MiB, more than the 256 MiB one tensor may hold (at a batch of 2 points, 165 MiB a point: flowebm checks a graph at batches of 2 and 3 points`) || strings.Contains(err.Error(), "dynamic_axes") {
		t.Errorf("%v", err)
	}
}

// Round 72 A5: convert of an energy of input shape (batch) said "input of
// shape [] per sample"; it says how to export it as an MLP's (batch, 1).
func TestVectorInputIsNoMLP(t *testing.T) {
	n, err := ReadFile(filepath.Join("testdata", "pinned", "vector_input_dyn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.MLP(); err == nil || !strings.Contains(err.Error(), `input "x" of shape (batch), one value per point: an MLP takes vectors, (batch, d); export it with an input of shape (batch, 1)`) {
		t.Errorf("%v", err)
	}
}

// Round 73 A3: a graph of 99 MiB a point, too large at the load check's
// batch of 3 only, was refused as one whose outputs depend on the batch,
// with advice to export it otherwise.
func TestTooLargeAtTheCheckNotBound(t *testing.T) {
	_, err := ReadFile(filepath.Join("testdata", "pinned", "resize_large3_nearest_dyn.onnx"))
	if err == nil || !strings.Contains(err.Error(), "(at a batch of 3 points, 98.9 MiB a point: flowebm checks a graph at batches of 2 and 3 points") || strings.Contains(err.Error(), "depend on the batch") {
		t.Errorf("%v", err)
	}
}

// Round 74 A2: a Resize to sizes (F.interpolate(size=N)) of 85.3 MiB a
// point was refused at the load check's batch of 3 as a graph bound to its
// batch (its sizes counted in float64 at the batch, by another check than
// the scales'); it is said to be too large a point for the check.
func TestResizeSizesTooLargeAPoint(t *testing.T) {
	_, err := ReadFile(filepath.Join("testdata", "pinned", "interp_size_large3_dyn.onnx"))
	if err == nil || !strings.Contains(err.Error(), "(at a batch of 3 points, 85.3 MiB a point: flowebm checks a graph at batches of 2 and 3 points") || strings.Contains(err.Error(), "depend on the batch") {
		t.Errorf("%v", err)
	}
}

// Round 74 A3: a size just over the limit read "takes 256 MiB, more than
// the 256 MiB one tensor may hold".
func TestTooLargeSizeReadsApart(t *testing.T) {
	e := &tensorTooLarge{shape: []int{3, 11184811}, bytes: 3 * 11184811 * 8, batch: 3}
	if got := e.Error(); !strings.Contains(got, "takes 268435464 bytes, more than the 256 MiB") {
		t.Errorf("%s", got)
	}
}

// Round 75 A1: values of 275 MiB a point in all were refused with advice
// about the batch (exporting without dynamic_axes was refused alike).
func TestPointTotalRefusedWithoutBatchAdvice(t *testing.T) {
	_, err := ReadFile(filepath.Join("testdata", "pinned", "interp_point_total_dyn.onnx"))
	if err == nil || !strings.Contains(err.Error(), "per point with this node's, more than the 256 MiB allowed: the model is too large to evaluate") || strings.Contains(err.Error(), "dynamic_axes") {
		t.Errorf("%v", err)
	}
}

// Round 75 A2: a model of 44 MiB a point, which runs at batches 2 and 3,
// is too large for the batch-mixing check's batch of 7; the note said the
// checks "could not compute it at their points".
func TestCouplingCheckTooLargeNoted(t *testing.T) {
	n, err := ReadFile(filepath.Join("testdata", "pinned", "resize_large7_nearest_dyn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if note := n.Unchecked(); !strings.Contains(note, "runs it at a batch of 7 points, where one of its values is larger than one tensor may hold (43.9 MiB a point") || strings.Contains(note, "could not compute") {
		t.Errorf("note %q", note)
	}
}

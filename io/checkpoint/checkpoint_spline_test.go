package checkpoint

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// splineModels are an EBM and a neural spline flow away from the identity
// (InitScale 1) in d dimensions.
func splineModels(t *testing.T, dt tensor.Dtype, net layers.SplineFlow) Models {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	return buildModels(t, graph.ToyEnergyNet(net.Dim, false), net, layers.NewIsotropic(net.Dim, 1.3), dt, rng)
}

// A spline flow is saved with its kind and spline in spec.json and loads
// with the same parameters, by name and value, and the same log-density
// on a batch (points beyond the tail bound included), bit for bit (float32
// weights are stored as float32).
func TestSplineSaveLoadRoundTrip(t *testing.T) {
	net := layers.SplineFlow{Dim: 3, Blocks: 2, Hidden: []int{8, 8}, Mask: layers.MaskCheckerboard, InitScale: 1,
		Spline: layers.RQSpline{Bins: 5, TailBound: 3}}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		m := splineModels(t, dt, net)
		got, spec := saveLoad(t, m)
		f := spec.Flow
		if f == nil || f.Kind != FlowKindSpline || f.Bins != 5 || f.TailBound != 3 || f.MinBinWidth != layers.DefaultSplineMinBin ||
			f.MinDerivative != layers.DefaultSplineMinBin || f.BlockDepth != 0 || f.Name != "splines" || f.Mask != layers.MaskCheckerboard {
			t.Fatalf("%v: flow spec %+v", dt, f)
		}
		sf, ok := got.Flow.Net.(layers.SplineFlow)
		if !ok {
			t.Fatalf("%v: loaded flow %T, want layers.SplineFlow", dt, got.Flow.Net)
		}
		if sf.Spline != net.Spline.WithDefaults() || sf.Blocks != 2 || !slices.Equal(sf.Hidden, net.Hidden) {
			t.Errorf("%v: loaded %+v", dt, sf)
		}
		if !slices.Equal(got.Flow.Params.Names(), m.Flow.Params.Names()) {
			t.Fatalf("%v: parameters %v, saved %v", dt, got.Flow.Params.Names(), m.Flow.Params.Names())
		}
		if a, b := m.Flow.Params.Flatten(nil), got.Flow.Params.Flatten(nil); !slices.Equal(a, b) {
			t.Errorf("%v: flow parameters differ after loading", dt)
		}
		if n, err := spec.ParamCount(); err != nil || n != m.EBM.Params.Count()+m.Flow.Params.Count() {
			t.Errorf("%v: ParamCount %d, %v; the models have %d", dt, n, err, m.EBM.Params.Count()+m.Flow.Params.Count())
		}
		x := mat.NewDense(6, 3, []float64{0, 0, 0, 1, -1, 0.5, 2, 0.5, -2.5, -3, 1, 2.9, 0.1, 0.2, 7, -8, 3.5, 0})
		l1, l2 := make([]float64, 6), make([]float64, 6)
		if err := m.Flow.LogDensity(x, l1); err != nil {
			t.Fatal(err)
		}
		if err := got.Flow.LogDensity(x, l2); err != nil {
			t.Fatal(err)
		}
		for i := range l1 {
			if l1[i] != l2[i] {
				t.Errorf("%v row %d: log λ %v saved, %v loaded", dt, i, l1[i], l2[i])
			}
		}
		// The flow is not the identity: its density differs from the base's.
		if l1[0] == m.Flow.Base.LogProb(x.RawRowView(0)) {
			t.Errorf("%v: the flow's density equals its base's at 0: the test's flow is the identity", dt)
		}
	}
}

// ParamCount, which bounds a spec before anything is built, counts a
// spline flow's parameters exactly for every mask and dimension.
func TestSplineParamCount(t *testing.T) {
	for _, c := range []struct {
		d     int
		mask  string
		width int
	}{{2, "", 0}, {3, layers.MaskHalf, 0}, {5, layers.MaskHalf, 0}, {5, layers.MaskCheckerboard, 0},
		{6, layers.MaskCheckerboard2D, 3}, {6, layers.MaskCheckerboard2D, 2}, {15, layers.MaskCheckerboard2D, 5}, {4, layers.MaskCheckerboard2D, 1}} {
		net := layers.SplineFlow{Dim: c.d, Blocks: 3, Hidden: []int{7}, Mask: c.mask, MaskWidth: c.width, Spline: layers.RQSpline{Bins: 4}}
		m := splineModels(t, tensor.Float64, net)
		spec, err := SpecOf(m)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := spec.ParamCount(); err != nil || n != m.EBM.Params.Count()+m.Flow.Params.Count() {
			t.Errorf("d %d, mask %q width %d: ParamCount %d, %v; the models have %d", c.d, c.mask, c.width, n, err, m.EBM.Params.Count()+m.Flow.Params.Count())
		}
	}
}

// A RealNVP's spec.json is written as before the spline flow (no kind, no
// spline fields), and a checkpoint written then (no kind; here PyTorch's
// RealNVP with block_depth 2) loads as a RealNVP.
func TestOldRealNVPCheckpointLoadsUnchanged(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, models(t, tensor.Float64)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"kind"`, `"bins"`, `"tail_bound"`, `"min_bin_width"`} {
		if strings.Contains(string(b), field) {
			t.Errorf("a RealNVP's spec.json holds %s:\n%s", field, b)
		}
	}
	if !strings.Contains(string(b), `"block_depth": 1`) {
		t.Errorf("a RealNVP's spec.json lost its block_depth:\n%s", b)
	}
	m, spec, err := Load("testdata/torch_flow")
	if err != nil {
		t.Fatal(err)
	}
	nvp, ok := m.Flow.Net.(layers.RealNVP)
	if !ok || spec.Flow.Kind != "" || nvp.BlockDepth != 2 || nvp.Blocks != 2 {
		t.Errorf("old checkpoint: flow %T %+v, spec %+v", m.Flow.Net, m.Flow.Net, spec.Flow)
	}
}

// A flow of an unknown kind, spline fields on a RealNVP and a spline's
// settings out of range are refused, naming spec.json and the field.
func TestSplineSpecErrorsNameFileAndField(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, splineModels(t, tensor.Float64, layers.SplineFlow{Dim: 2, Blocks: 1, Hidden: []int{4}})); err != nil {
		t.Fatal(err)
	}
	spec, _ := os.ReadFile(filepath.Join(dir, "spec.json"))
	weights, _ := os.ReadFile(filepath.Join(dir, "weights.npz"))
	nvpDir := t.TempDir()
	if err := Save(nvpDir, models(t, tensor.Float64)); err != nil {
		t.Fatal(err)
	}
	nvpSpec, _ := os.ReadFile(filepath.Join(nvpDir, "spec.json"))
	nvpWeights, _ := os.ReadFile(filepath.Join(nvpDir, "weights.npz"))
	for _, c := range []struct {
		spec, weights []byte
		from, to      string
		want          []string
	}{
		{spec, weights, `"kind": "spline"`, `"kind": "glow"`, []string{`field "flow.kind" is "glow"`, `want "realnvp" or "spline"`}},
		{spec, weights, `"kind": "spline"`, `"kind": "realnvp"`, []string{`field "flow.bins" is a spline flow's`, `"flow.kind" is "realnvp"`}},
		{spec, weights, `"bins": 8`, `"bins": 1`, []string{`field "flow.bins" is 1`, "2..65536"}},
		{spec, weights, `"tail_bound": 5`, `"tail_bound": -5`, []string{`field "flow.tail_bound" is -5`}},
		{spec, weights, `"min_derivative": 0.001`, `"min_derivative": 1.5`, []string{`field "flow.min_derivative" is 1.5`}},
		{spec, weights, `"min_bin_width": 0.001`, `"min_bin_width": 0.2`, []string{`field "flow.min_bin_width" is 0.2`, "8 bins"}},
		{spec, weights, `"mask": "half"`, `"mask": "diagonal"`, []string{`field "flow.mask" is "diagonal"`}},
		{spec, weights, `"blocks": 1,`, `"blocks": 1, "block_depth": 3,`, []string{`field "flow.block_depth" is 3`}},
		{nvpSpec, nvpWeights, `"dim": 2,`, `"dim": 2, "tail_bound": 4,`, []string{`field "flow.tail_bound" is a spline flow's`}},
		{nvpSpec, nvpWeights, `"dim": 2,`, `"kind": "maf", "dim": 2,`, []string{`field "flow.kind" is "maf"`}},
	} {
		if !strings.Contains(string(c.spec), c.from) {
			t.Fatalf("spec.json has no %s:\n%s", c.from, c.spec)
		}
		bad := t.TempDir()
		os.WriteFile(filepath.Join(bad, "spec.json"), []byte(strings.Replace(string(c.spec), c.from, c.to, 1)), 0o644)
		os.WriteFile(filepath.Join(bad, "weights.npz"), c.weights, 0o644)
		_, _, err := Load(bad)
		if err == nil {
			t.Errorf("%s → %s: loaded", c.from, c.to)
			continue
		}
		t.Logf("%s → %s: %v", c.from, c.to, err)
		for _, w := range append(c.want, filepath.Join(bad, "spec.json")) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s → %s: error %v, want it to name %q", c.from, c.to, err, w)
			}
		}
	}
}

package onnx

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Probe 59 A1: a flow exported with torch.onnx.export's defaults has
// exp(−logs) folded into a weight of its density graph only. Training
// would move it apart from logs, which the sampling graph reads: refused,
// naming it; frozen, the flow loads and samples. A flow whose graphs no
// longer agree is not written: EncodeFlowWeights checks them as they are.
func TestFoldedFlowNotTrained(t *testing.T) {
	s := filepath.Join("testdata", "pinned", "folded_flow_sample.onnx")
	d := filepath.Join("testdata", "pinned", "folded_flow_density.onnx")
	_, err := ReadFlow(s, d, FlowConfig{})
	if err == nil || !strings.Contains(err.Error(), `weight "onnx::Exp_17" of the density graph is not read by the sampling graph`) ||
		!strings.Contains(err.Error(), "do_constant_folding=False") || !strings.Contains(err.Error(), "flowebm sample --flow without --train-flow") {
		t.Fatalf("trainable: %v", err)
	}
	f, err := ReadFlow(s, d, FlowConfig{Frozen: true})
	if err != nil {
		t.Fatalf("frozen: %v", err)
	}
	if _, _, err := EncodeFlowWeights(f); err != nil {
		t.Fatalf("as read: %v", err)
	}
	logs := f.Params.Get("f.logs")
	v := logs.Float64s()
	v[0] += 0.1 // as a training step would move it, without the folded copy
	if err := logs.SetFloat64s(v); err != nil {
		t.Fatal(err)
	}
	if _, _, err := EncodeFlowWeights(f); err == nil || !strings.Contains(err.Error(), "are not one flow") {
		t.Errorf("moved apart: %v", err)
	}
}

// Probe 59 A4: outputs named otherwise (nflows' and normflows' log_det,
// log_prob, ldj) are told apart by shape, and the sampling graph's value
// is read as log λ or as log|det J_T|, whichever makes the two graphs one
// flow: the flow read so gives the densities of the flow read with the
// names given. Where the shapes cannot tell (three outputs), the message
// says which names flowebm reads and how to export them.
func TestFlowOutputNames(t *testing.T) {
	pinned := func(name string) string { return filepath.Join("testdata", "pinned", name+".onnx") }
	d := pinned("othernames_flow_density")
	named, err := ReadFlow(pinned("othernames_flow_sample"), d, FlowConfig{SampleLogDensity: "log_det", DensityOutput: "log_prob", DensityLatent: "z"})
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(5, 2, []float64{0, 0, 1, -2, 3, 0.5, -1, 4, 2, -1})
	want := make([]float64, 5)
	if err := named.LogDensity(x, want); err != nil {
		t.Fatal(err)
	}
	for _, sample := range []string{"othernames_flow_sample", "othernames_ldj_sample", "othernames_column_sample"} {
		f, err := ReadFlow(pinned(sample), d, FlowConfig{})
		if err != nil {
			t.Errorf("%s: %v", sample, err)
			continue
		}
		got := make([]float64, 5)
		if err := f.LogDensity(x, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
				t.Errorf("%s: log λ %v, named %v", sample, got, want)
				break
			}
		}
		if !f.Net.(*FlowNet).Invertible() {
			t.Errorf("%s: z was not read", sample)
		}
	}
	// Probe 61 A2: a log-det of the inverse map under another name: no
	// reading is one flow, and the message says so with the check's
	// numbers.
	_, err = ReadFlow(pinned("othernames_inverse_sample"), d, FlowConfig{})
	// Probe 65 (cosmetic): the sampling graph whose log-det has the wrong
	// sign is named, with its own map's Jacobian.
	if err == nil || !strings.Contains(err.Error(), "; and "+pinned("othernames_inverse_sample")+": at a draw z of the base") {
		t.Errorf("inverse log-det, the file named: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "are not one flow") || !strings.Contains(err.Error(), `the outputs were read by their shapes (the sampling graph's x = "x", and "logabsdet" as log q(x), then as log|det ∂x/∂z|; the density graph's z = "z", and "log_prob" as log q(x), then as log|det ∂z/∂x|), and no reading passes the checks: this is the reading that came closest, the sampling graph's "logabsdet" as log|det ∂x/∂z| and the density graph's "log_prob" as log q(x)`) {
		t.Errorf("inverse log-det: %v", err)
	}
	_, err = ReadFlow(pinned("othernames_three_sample"), d, FlowConfig{})
	if err == nil || !strings.Contains(err.Error(), `(outputs: "x", "log_det", "twice"): export it with those names, torch.onnx.export(..., output_names=["x", "logdet"])`) {
		t.Errorf("three outputs: %v", err)
	}
	// The sampling graph's output named, the density graph's read by
	// shape (refused up to session 36: "no graph output named
	// log_density").
	f, err := ReadFlow(pinned("othernames_flow_sample"), d, FlowConfig{SampleLogDensity: "log_det"})
	if err != nil {
		t.Fatalf("density graph by shape: %v", err)
	}
	got := make([]float64, 5)
	if err := f.LogDensity(x, got); err != nil {
		t.Fatal(err)
	}
	if r := relInf(got, want); !(r <= 1e-12) {
		t.Errorf("density graph by shape: log λ %v, named %v", got, want)
	}
}

// Probe 61 A1: the folded pair with its weights listed in
// flowebm.parameters: the folded exp(−logs) is then a constant, the two
// graphs agree as read, and trained they drifted apart. Refused for
// training (the weights moved by up to 5% break the agreement), naming the
// folded initializer; frozen, it loads; a well-exported flow with listed
// weights still trains.
func TestFoldedListedFlowNotTrained(t *testing.T) {
	s := filepath.Join("testdata", "pinned", "folded_listed_flow_sample.onnx")
	d := filepath.Join("testdata", "pinned", "folded_listed_flow_density.onnx")
	_, err := ReadFlow(s, d, FlowConfig{})
	if err == nil || !strings.Contains(err.Error(), "once the weights are moved by up to 5% as training moves them, though they agree as read") ||
		!strings.Contains(err.Error(), `"onnx::Exp_17" (`+d+` only) is read by one graph and not listed as weights`) {
		t.Fatalf("trainable: %v", err)
	}
	if _, err := ReadFlow(s, d, FlowConfig{Frozen: true}); err != nil {
		t.Fatalf("frozen: %v", err)
	}
	// A flow exported by export_flow.py (nflows' MAF, weights listed)
	// trains, its weights put back as read after the check.
	ms, md := "testdata/flows/maf_f32_sample.onnx", "testdata/flows/maf_f32_density.onnx"
	trained, err := ReadFlow(ms, md, FlowConfig{})
	if err != nil {
		t.Fatalf("MAF: %v", err)
	}
	frozen, err := ReadFlow(ms, md, FlowConfig{Frozen: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range trained.Params.List() {
		if q := frozen.Params.Get(p.Name); q == nil || !slices.Equal(p.Float64s(), q.Float64s()) {
			t.Errorf("MAF weight %s differs from the file's after the check", p.Name)
		}
	}
}

// The training check moves weights by a factor, so that a small positive
// scale under a log (1e-4) keeps its sign: the flow trains.
func TestSmallScaleFlowTrains(t *testing.T) {
	s := filepath.Join("testdata", "pinned", "smallscale_flow_sample.onnx")
	d := filepath.Join("testdata", "pinned", "smallscale_flow_density.onnx")
	if _, err := ReadFlow(s, d, FlowConfig{}); err != nil {
		t.Errorf("%v", err)
	}
}

// A flow as flow libraries write their transforms (nflows: forward(x) =
// (z, logabsdet), inverse(z) = (x, logabsdet)), exported the plain way:
// numbered outputs, the sampling graph through a wrapper module (weights
// "f.ts.0.shift"), the density graph from the transform ("ts.0.shift").
// Refused up to session 36 (the density graph's logabsdet was read as
// log q, and the names did not tie). Now its log q(x), x = T(z) and
// z = T⁻¹(x) are PyTorch's; with constant folding it samples (frozen);
// without, it trains, and is written back under its own names.
func TestFlowLibraryTransforms(t *testing.T) {
	pinned := func(name string) string { return filepath.Join("testdata", "pinned", name+".onnx") }
	arrays := pinnedArrays(t, "nflowsstyle")
	z, x := mat.NewDense(6, 3, arrays["z"]), mat.NewDense(6, 3, arrays["x"])
	for _, c := range []struct {
		tag    string
		frozen bool
	}{{"folded", true}, {"nofold", false}} {
		f, err := ReadFlow(pinned("nflowsstyle_"+c.tag+"_sample"), pinned("nflowsstyle_"+c.tag+"_density"), FlowConfig{Frozen: c.frozen})
		if err != nil {
			t.Fatalf("%s: %v", c.tag, err)
		}
		lq, ld := make([]float64, 6), make([]float64, 6)
		if err := f.LogDensity(x, lq); err != nil {
			t.Fatal(err)
		}
		gotX, gotZ := mat.NewDense(6, 3, nil), mat.NewDense(6, 3, nil)
		if err := f.Forward(z, gotX, ld); err != nil {
			t.Fatal(err)
		}
		if err := f.Inverse(x, gotZ, ld); err != nil {
			t.Fatal(err)
		}
		for name, pair := range map[string][2][]float64{"log q": {lq, arrays["log_q"]}, "x": {gotX.RawMatrix().Data, arrays["x"]},
			"z": {gotZ.RawMatrix().Data, arrays["z"]}} {
			if r := relInf(pair[0], pair[1]); !(r <= 1e-10) {
				t.Errorf("%s: %s rel. error %.2e", c.tag, name, r)
			}
		}
	}
	// Refused for training, naming a value PyTorch folded (probe 63: an
	// innocent weight, named under another prefix, was blamed).
	if _, err := ReadFlow(pinned("nflowsstyle_folded_sample"), pinned("nflowsstyle_folded_density"), FlowConfig{}); err == nil ||
		!strings.Contains(err.Error(), "flowebm sample --flow without --train-flow") || !strings.Contains(err.Error(), `weight "onnx::`) {
		t.Errorf("folded, trainable: %v", err)
	}
	f, err := ReadFlow(pinned("nflowsstyle_nofold_sample"), pinned("nflowsstyle_nofold_density"), FlowConfig{})
	if err != nil {
		t.Fatal(err)
	}
	shift := f.Params.Get("ts.0.shift")
	if shift == nil || f.Params.Get("f.ts.0.shift") != nil {
		t.Fatalf("weights not tied by name: %v", f.Params.List())
	}
	v := shift.Float64s()
	v[1] += 0.25 // as a training step moves it, in both graphs
	if err := shift.SetFloat64s(v); err != nil {
		t.Fatal(err)
	}
	sb, db, err := EncodeFlowWeights(f)
	if err != nil {
		t.Fatal(err)
	}
	// The moved density graph beside the file as it was: the weight that
	// differs is named in each file by its own name (probe 64 A4: the
	// sampling file's was given the density file's).
	moved := filepath.Join(t.TempDir(), "d.onnx")
	if err := os.WriteFile(moved, db, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFlow(pinned("nflowsstyle_nofold_sample"), moved, FlowConfig{}); err == nil || !strings.Contains(err.Error(), `weight "f.ts.0.shift" differs from "ts.0.shift" in`) {
		t.Errorf("one file moved: %v", err)
	}
	for _, w := range []struct {
		b    []byte
		name string
	}{{sb, "f.ts.0.shift"}, {db, "ts.0.shift"}} {
		m, err := DecodeModel(w.b)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(m.Graph.Initializers, func(t *Tensor) bool { return t.Name == w.name })
		if i < 0 || !slices.Equal(m.Graph.Initializers[i].Float, v) {
			t.Errorf("written %s: not the trained value %v", w.name, v)
		}
	}
}

// Weights are tied across a module prefix, name by name, one to one, at
// module boundaries; a name outside the prefix is left as it is, for tie
// to name (probe 63: an innocent weight was named).
func TestAlignNames(t *testing.T) {
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	dense := set("ts.0.w", "ts.1.w", "ts.2.w")
	for _, c := range []struct {
		name string
		from map[string]bool
		want map[string]string
	}{
		{"wrapper prefix", set("f.ts.0.w", "f.ts.1.w", "f.ts.2.w"), map[string]string{"f.ts.0.w": "ts.0.w", "f.ts.1.w": "ts.1.w", "f.ts.2.w": "ts.2.w"}},
		{"one name outside it", set("f.ts.0.w", "f.ts.1.w", "g.ts.2.w"), map[string]string{"f.ts.0.w": "ts.0.w", "f.ts.1.w": "ts.1.w"}},
		{"one of two", set("f.ts.0.w", "g.ts.1.w"), map[string]string{}},
		{"no module path in common", set("a.u", "a.v"), map[string]string{}},
		{"one path for another", set("xts0.w", "xts1.w"), map[string]string{}},
		{"two onto one", set("f.ts.0.w", "ts.0.w", "ts.2.w"), map[string]string{}},
		{"prefix on the density's side", set("0.w", "1.w", "2.w"), map[string]string{"0.w": "ts.0.w", "1.w": "ts.1.w", "2.w": "ts.2.w"}},
		{"a prefix on each side", set("s.0.w", "s.1.w", "s.2.w"), map[string]string{"s.0.w": "ts.0.w", "s.1.w": "ts.1.w", "s.2.w": "ts.2.w"}},
		{"one weight, its wrapper", set("f.ts.1.w"), map[string]string{"f.ts.1.w": "ts.1.w"}},
	} {
		best := bestRename(c.from, dense)
		if !maps.Equal(best, c.want) {
			t.Errorf("%s: %v, want %v", c.name, best, c.want)
		}
	}
	// Probe 65 A2: the wrapper's module holds one named like the flow's
	// (flow.scale is the wrapper's own, flow.flow.scale its flow's): the
	// exact names paired the wrong weights; the whole prefix is dropped.
	// Probe 66 A1: a module inserted after a shared root (flow. for
	// flow.nf.), and a single module for a path (f. for lit.model.).
	inserted := bestRename(set("flow.c.0.w", "flow.c.1.w"), set("flow.nf.c.0.w", "flow.nf.c.1.w"))
	if !maps.Equal(inserted, map[string]string{"flow.c.0.w": "flow.nf.c.0.w", "flow.c.1.w": "flow.nf.c.1.w"}) {
		t.Errorf("inserted module: %v", inserted)
	}
	lightning := bestRename(set("f.c.0.w", "f.c.1.w"), set("lit.model.c.0.w", "lit.model.c.1.w"))
	if !maps.Equal(lightning, map[string]string{"f.c.0.w": "lit.model.c.0.w", "f.c.1.w": "lit.model.c.1.w"}) {
		t.Errorf("a module for a path: %v", lightning)
	}
	nested := bestRename(set("flow.shift", "flow.scale", "flow.flow.shift", "flow.flow.scale"), set("shift", "scale", "flow.shift", "flow.scale"))
	want := map[string]string{"flow.shift": "shift", "flow.scale": "scale", "flow.flow.shift": "flow.shift", "flow.flow.scale": "flow.scale"}
	if !maps.Equal(nested, want) {
		t.Errorf("nested: %v, want %v", nested, want)
	}
}

// Probe 63 A3: a volume-preserving flow (NICE's additive couplings and a
// permutation, each returning a log-determinant of zeros, as flow
// libraries write them) was refused: "output does not depend on the
// input". Its log-determinants are read as the constant 0 they are: log q,
// T and T⁻¹ are PyTorch's.
func TestVolumePreservingFlow(t *testing.T) {
	pinned := func(name string) string { return filepath.Join("testdata", "pinned", name+".onnx") }
	arrays := pinnedArrays(t, "nice")
	f, err := ReadFlow(pinned("nice_sample"), pinned("nice_density"), FlowConfig{Frozen: true})
	if err != nil {
		t.Fatal(err)
	}
	z, x := mat.NewDense(6, 4, arrays["z"]), mat.NewDense(6, 4, arrays["x"])
	lq, ld := make([]float64, 6), make([]float64, 6)
	gotX, gotZ := mat.NewDense(6, 4, nil), mat.NewDense(6, 4, nil)
	if err := f.LogDensity(x, lq); err != nil {
		t.Fatal(err)
	}
	if err := f.Forward(z, gotX, ld); err != nil {
		t.Fatal(err)
	}
	if err := f.Inverse(x, gotZ, ld); err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2][]float64{"log q": {lq, arrays["log_q"]}, "x": {gotX.RawMatrix().Data, arrays["x"]}, "z": {gotZ.RawMatrix().Data, arrays["z"]}} {
		if r := relInf(pair[0], pair[1]); !(r <= 1e-10) {
			t.Errorf("%s rel. error %.2e", name, r)
		}
	}
	if slices.ContainsFunc(ld, func(v float64) bool { return v != 0 }) {
		t.Errorf("log|det| %v, want 0", ld)
	}
}

// Probe 64 A1: exported in evaluation mode, PyTorch merged weights of
// equal values (two ActNorms at their zero initialisation) into one
// initializer read through Identities named after the others; training
// moved them as one. Refused for training, naming them; frozen, it loads.
func TestMergedWeightsNotTrained(t *testing.T) {
	s := filepath.Join("testdata", "pinned", "merged_flow_sample.onnx")
	d := filepath.Join("testdata", "pinned", "merged_flow_density.onnx")
	_, err := ReadFlow(s, d, FlowConfig{})
	if err == nil || !strings.Contains(err.Error(), "merged weights of equal values") || !strings.Contains(err.Error(), `is read as "f.ts.0.log_scale"`) {
		t.Errorf("trainable: %v", err)
	}
	if _, err := ReadFlow(s, d, FlowConfig{Frozen: true}); err != nil {
		t.Errorf("frozen: %v", err)
	}
	// Probe 65 A1: with the module's named_parameters() listed, the
	// merged names are no initializers: refused even frozen, with advice
	// about constant folding. They are read as the weight they were
	// merged into.
	s = filepath.Join("testdata", "pinned", "merged_listed_flow_sample.onnx")
	d = filepath.Join("testdata", "pinned", "merged_listed_flow_density.onnx")
	if _, err := ReadFlow(s, d, FlowConfig{Frozen: true}); err != nil {
		t.Errorf("listed, frozen: %v", err)
	}
	if _, err := ReadFlow(s, d, FlowConfig{}); err == nil || !strings.Contains(err.Error(), "merged weights of equal values") {
		t.Errorf("listed, trainable: %v", err)
	}
}

// Probe 64 A2: a density graph whose log-determinant has the wrong sign was
// refused blaming "the base declared, a weight, or the map"; the sampling
// graph's log-density agrees with its own map's Jacobian, so the message
// names the density file.
func TestWrongSignDensityNamed(t *testing.T) {
	d := filepath.Join("testdata", "pinned", "wrongsign_density.onnx")
	_, err := ReadFlow(filepath.Join("testdata", "pinned", "nflowsstyle_nofold_sample.onnx"), d, FlowConfig{Frozen: true})
	if err == nil || !strings.Contains(err.Error(), "so "+d+"'s is the one that differs: a log-determinant of the wrong sign") {
		t.Errorf("%v", err)
	}
}

// Probe 65 (cosmetic): a coupling's mask flipped in one file only was not
// named by the refusal (parameters that differ are).
func TestDifferingMaskNamed(t *testing.T) {
	_, err := ReadFlow(filepath.Join("testdata", "pinned", "flippedmask_sample.onnx"), filepath.Join("testdata", "pinned", "flippedmask_density.onnx"), FlowConfig{Frozen: true})
	if err == nil || !strings.Contains(err.Error(), `the initializers "f.cs.0.mask", read by both graphs and not weights`) {
		t.Errorf("%v", err)
	}
}

// Probe 69 A1: PyTorch's default constant folding names each folded W.t()
// onnx::MatMul_NNN, numbered in each file, so that one name was a
// different tensor in the sampling and the density graph: the frozen pair
// was refused as "not the same flow". Frozen, each file keeps its own
// tensor and the one-flow check decides: the flow's log q is PyTorch's
// within 1e-10; for training, the refusal says the name is the exporter's.
func TestFlowNamesReusedAcrossFiles(t *testing.T) {
	s, d := filepath.Join("testdata", "pinned", "reusednames_sample.onnx"), filepath.Join("testdata", "pinned", "reusednames_density.onnx")
	f, err := ReadFlow(s, d, FlowConfig{Frozen: true})
	if err != nil {
		t.Fatal(err)
	}
	arrays := pinnedArrays(t, "reusednames")
	x := mat.NewDense(7, 2, arrays["x"])
	lq := make([]float64, 7)
	if err := f.LogDensity(x, lq); err != nil {
		t.Fatal(err)
	}
	if r := relInf(lq, arrays["logq"]); !(r <= 1e-10) {
		t.Errorf("log q %.2e off PyTorch's", r)
	}
	if _, err := ReadFlow(s, d, FlowConfig{}); err == nil || !strings.Contains(err.Error(), `(a name the exporter generates, numbered in each file: "onnx::MatMul_179" may be a different tensor in each)`) && !strings.Contains(err.Error(), "is not read by the sampling graph") {
		t.Errorf("for training: %v", err)
	}
}

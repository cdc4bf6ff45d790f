package onnx

import (
	"math"
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
	if err == nil || !strings.Contains(err.Error(), "are not one flow") || !strings.Contains(err.Error(), `the outputs were read by their shapes (x = "x", and "logabsdet" as log q(x), then as log|det ∂x/∂z|; the density graph's log q(x) = "log_prob"), and neither reading makes the two graphs one flow`) {
		t.Errorf("inverse log-det: %v", err)
	}
	_, err = ReadFlow(pinned("othernames_three_sample"), d, FlowConfig{})
	if err == nil || !strings.Contains(err.Error(), `(outputs: "x", "log_det", "twice"): export it with those names, torch.onnx.export(..., output_names=["x", "logdet"])`) {
		t.Errorf("three outputs: %v", err)
	}
	_, err = ReadFlow(pinned("othernames_flow_sample"), d, FlowConfig{SampleLogDensity: "log_det"})
	if err == nil || !strings.Contains(err.Error(), `no graph output named "log_density" (outputs: "log_prob", "z")`) ||
		!strings.Contains(err.Error(), `export it with output_names=["log_density", "z"]`) {
		t.Errorf("density graph: %v", err)
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

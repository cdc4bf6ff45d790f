package onnx

import (
	"path/filepath"
	"strings"
	"testing"
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
		!strings.Contains(err.Error(), "do_constant_folding=False") {
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

// Probe 59 A4: outputs named log_det and log_prob (nflows, normflows) are
// not read; the messages say which names are, and how to export them. In
// Go, FlowConfig names them, and the same files load.
func TestFlowOutputNames(t *testing.T) {
	s := filepath.Join("testdata", "pinned", "othernames_flow_sample.onnx")
	d := filepath.Join("testdata", "pinned", "othernames_flow_density.onnx")
	_, err := ReadFlow(s, d, FlowConfig{})
	if err == nil || !strings.Contains(err.Error(), `(outputs: "x", "log_det"): export it with those names, torch.onnx.export(..., output_names=["x", "logdet"])`) {
		t.Errorf("sampling graph: %v", err)
	}
	// The sampling graph's log_det is log λ here (base minus log-det).
	_, err = ReadFlow(s, d, FlowConfig{SampleLogDensity: "log_det"})
	if err == nil || !strings.Contains(err.Error(), `no graph output named "log_density" (outputs: "log_prob", "z")`) ||
		!strings.Contains(err.Error(), `export it with output_names=["log_density", "z"]`) {
		t.Errorf("density graph: %v", err)
	}
	if _, err := ReadFlow(s, d, FlowConfig{SampleLogDensity: "log_det", DensityOutput: "log_prob"}); err != nil {
		t.Errorf("named: %v", err)
	}
}

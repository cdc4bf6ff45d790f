package onnx

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
)

// Round 81 A1: a float64 SiLU network was exported as x·Sigmoid(x),
// which ONNX Runtime's default optimisation fuses into QuickGelu, an
// operator without a double kernel (the file did not run); it is written
// x/(1 + exp(−x)) and still converts back as silu. (TestExportRunsInONNXRuntime
// runs the exports at ONNX Runtime's default optimisation.)
func TestFloat64SiLUExportConvertsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 1))
	net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{3, 8, 1}, Hidden: layers.SiLU, Layout: layers.Sequential}}
	ebm, err := graph.NewEBM(net, nil, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EBM(ebm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeModel(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range m.Graph.Nodes {
		if node.OpType == "Sigmoid" {
			t.Errorf("node %q is a Sigmoid in a float64 export", node.Name)
		}
	}
	n, err := Decode(b, "silu.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if mlp, _, err := n.MLP(); err != nil || mlp.Hidden.Kind != layers.SiLU.Kind {
		t.Errorf("converted back: %+v, %v; want silu", mlp.Hidden, err)
	}
}

// Round 81 A3: an activation that is none of a checkpoint's was refused
// without the nodes that compute it or the way on.
func TestUnknownActivationNamed(t *testing.T) {
	n, err := ReadFile(filepath.Join("testdata", "pinned", "celu05_mlp_f32.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = n.MLP()
	for _, want := range []string{"(Celu, alpha 0.5) between node ", "give the .onnx file itself as --model"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CELU(0.5): %v, want %q", err, want)
		}
	}
}

// Round 81 A2: PyTorch's opset-9 export of avg_pool2d with ceil_mode and
// count_include_pad writes a negative pad; the refusal called it a size
// out of range, without the way on.
func TestNegativePoolPadsAdvised(t *testing.T) {
	_, err := ReadFile(filepath.Join("testdata", "pinned", "avgpool_ceil_o9_dyn.onnx"))
	for _, want := range []string{"a negative pad (-1) would crop the input", "export at opset ≥ 10"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want %q", err, want)
		}
	}
}

// Session 39's review: the refusal of bad flowebm.standardization
// metadata (written by convert and sample --flow-out) was tried by hand
// only. Each bad value is refused naming the file and the key; a good
// one is read.
func TestFlowStandardizationMetadata(t *testing.T) {
	sample := filepath.Join("testdata", "flows", "maf_f32_sample.onnx")
	flow, err := ReadFlow(sample, filepath.Join("testdata", "flows", "maf_f32_density.onnx"), FlowConfig{})
	if err != nil {
		t.Fatal(err)
	}
	fn := flow.Net.(*FlowNet)
	if s, err := fn.Standardization(); s != nil || err != nil {
		t.Fatalf("no metadata: %v, %v", s, err)
	}
	d := fn.Dimension()
	ones := strings.TrimSuffix(strings.Repeat("1, ", d), ", ")
	good := `{"shift": [` + ones + `], "scale": [` + ones + `]}`
	meta := map[string]string{}
	fn.Sample.model.Metadata = meta
	meta[StandardizationKey] = good
	if s, err := fn.Standardization(); err != nil || len(s.Scale) != d || s.Scale[0] != 1 {
		t.Errorf("%s: %+v, %v", good, s, err)
	}
	for _, bad := range []string{
		"", "null", "{}", "[1, 2]", `{"shift": [1], "scale": [1]}`,
		`{"shift": [` + ones + `], "scale": [` + strings.Replace(ones, "1", "0", 1) + `]}`,
		`{"shift": [` + ones + `], "scale": [` + strings.Replace(ones, "1", "-2", 1) + `]}`,
		`{"shift": [` + strings.Replace(ones, "1", "1e999", 1) + `], "scale": [` + ones + `]}`,
		`{"shift": [` + ones + `], "scale": [` + ones + `]`,
	} {
		meta[StandardizationKey] = bad
		s, err := fn.Standardization()
		if err == nil || !strings.Contains(err.Error(), sample) || !strings.Contains(err.Error(), `"flowebm.standardization"`) {
			t.Errorf("%q: %+v, %v", bad, s, err)
		}
	}
}

// Round 78 A3 (left then): an energy of two inputs (x, t) was refused
// without a way on; the refusal says to export it with t fixed.
func TestTwoInputEnergyAdvised(t *testing.T) {
	var g msg
	g.bytes(1, mdNode("a", "Add", []string{"x", "t"}, []string{"a"}))
	g.bytes(1, mdNode("y", "ReduceSum", []string{"a", "ax1"}, []string{"y"}, intAttr("keepdims", 0).encode()))
	g.str(2, "g")
	g.bytes(5, hgInt64s("ax1", []int64{1}, 1))
	g.bytes(11, valueInfo("x", typeFloat, "N", 3))
	g.bytes(11, valueInfo("t", typeFloat, "N", 3))
	g.bytes(12, valueInfo("y", typeFloat, "N"))
	_, err := Decode(mdModel(g), "xt.onnx")
	for _, want := range []string{`graph has 2 inputs (not counting initializers): "x", "t"`, "export a module that fixes them"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want %q", err, want)
		}
	}
}

// Round 82 A4: "is a Erf".
func TestWithArticle(t *testing.T) {
	for op, want := range map[string]string{"Erf": "an Erf", "Softplus": "a Softplus", "LSTM": "an LSTM", "GRU": "a GRU", "Upsample": "an Upsample", "Conv": "a Conv", "RNN": "an RNN"} {
		if got := withArticle(op); got != want {
			t.Errorf("%s: %q, want %q", op, got, want)
		}
	}
}

// Round 82 A1: ArgMax (torch.gather at h.argmax) was refused with the
// list of supported operators; the refusal gives the rewrite.
func TestArgMaxAdvised(t *testing.T) {
	b := hgModel("c", nil,
		mdNode("am", "ArgMax", []string{"x"}, []string{"am"}, intAttr("axis", 1).encode()),
		mdNode("c", "Cast", []string{"am"}, []string{"c"}, intAttr("to", int64(TypeFloat)).encode()))
	_, err := Decode(b, "argmax.onnx")
	if err == nil || !strings.Contains(err.Error(), "operator ArgMax is not supported: an energy reads the largest (smallest) value itself") || !strings.Contains(err.Error(), "torch.amax") {
		t.Errorf("%v", err)
	}
}

package onnx

import (
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// A convolutional EBM (exported by flowebm itself) is not taken for an
// MLP: the refusal names its first Conv node and says to use the .onnx
// file as it is, not a Gemm that "does not read the input".
func TestMLPRefusesConvNaming(t *testing.T) {
	for name, net := range imageTestNets() {
		b, err := EBM(imageEBMFor(t, net, tensor.Float64, 1), Options{})
		if err != nil {
			t.Fatal(err)
		}
		n, err := Decode(b, name+".onnx")
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = n.MLP()
		if err == nil || !strings.Contains(err.Error(), "is a Conv: a convolutional network is not an MLP") {
			t.Errorf("%s: %v; want the Conv node named", name, err)
		}
	}
}

// Probe 15 and 16: MLPs that a checkpoint cannot hold are refused, saying
// why: by their operators (a Clip), or by their values where the
// operators could make an activation (ReLU6 as relu(x) − relu(x − 6); a
// per-unit scale).
// PyTorch's ReLU6 and Hardtanh(−5, 5) equal ReLU and the identity on
// [−4, 4], where the activation was recognised, and were converted as
// those (energies off by up to 44 at points of scale 50); a BatchNorm1d
// and a Linear without bias got messages about other things. Fixtures:
// crosscheck/make_refused_mlps.py.
func TestMLPRefusals(t *testing.T) {
	for name, want := range map[string]string{
		"relu6":          `node "/1/Clip" between two Linears is a Clip: a checkpoint's MLP holds one of relu`,
		"hardtanh5":      `node "/1/Clip" between two Linears is a Clip`,
		"relu6_by_relus": "one written with these operators that is clipped, such as relu(x) − relu(x − 6), is none of them",
		"per_unit":       "the activation before it differs between hidden units",
		"batchnorm":      "is a BatchNormalization: a checkpoint's MLP holds Linears and activations only; fold the batch norm",
		"nobias":         "is a MatMul by a weight, which PyTorch writes for an nn.Linear without bias",
		// Probe 67 A2: blamed on a missing bias; a refusal with no way on.
		"spectral_norm":        `node "/0/Gemm": the Linear's weight "/Div_output_0" is computed in the graph (by node "/Div", Div), as PyTorch exports torch.nn.utils.spectral_norm and weight_norm: a checkpoint's MLP holds plain weights; call torch.nn.utils.remove_spectral_norm`,
		"weight_norm_unfolded": "is computed in the graph",
		// Probe 68 A2: float64 CELU blamed on a Cast with no way on.
		"celu_f64": "the activation is computed in another float type than the Linears (PyTorch 1.13 exports a float64 nn.CELU as Cast to float32, Celu, Cast back), which a checkpoint's MLP does not hold; for CELU(1) export nn.ELU()",
		// Probe 109 A2: no way on.
		"mixed_act": "activation tanh differs from the first hidden one, relu: a checkpoint's MLP has one activation throughout; give the .onnx file itself as --model",
		// Round 119 A5: the Gemm named, not the Add after it; no way on.
		"quadratic_tail": `not the last Linear's (node "/net/net.2/Gemm") output: node "/Add" (an Add) computes on from it; a checkpoint's MLP ends at its last Linear: give the .onnx file itself as --model`,
	} {
		n, err := ReadFile("testdata/refused/" + name + ".onnx")
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = n.MLP()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a refusal with %q", name, err, want)
		}
	}
}

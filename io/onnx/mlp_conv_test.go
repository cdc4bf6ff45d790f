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

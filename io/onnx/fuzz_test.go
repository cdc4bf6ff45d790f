package onnx

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// No input makes Decode panic, and what it accepts builds an EBM that
// evaluates a batch without error.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{2, 4, 1}, Hidden: layers.Tanh, Layout: layers.Sequential}}
	ebm, err := graph.NewEBM(net, nil, tensor.Float64, rng)
	if err != nil {
		f.Fatal(err)
	}
	b, err := EBM(ebm, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if t, err := os.ReadFile("testdata/torch/relu_f32.onnx"); err == nil {
		f.Add(t)
	}
	f.Add([]byte{0x08, 0x07, 0x3a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Decode(b, "fuzz.onnx")
		if err != nil {
			return
		}
		e, err := graph.NewEBM(n, nil, n.Dtype, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			return
		}
		x := mat.NewDense(2, n.Dim(), nil)
		out := make([]float64, 2)
		_ = e.Energy(x, out)
	})
}

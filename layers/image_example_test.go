package layers_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// The default image EBM for 28×28 MNIST digits, as a graph.EBM: batches
// are rows of 784 pixels, reshaped to 1×28×28 images inside the graph.
// Its last layer starts at zero, so E ≡ 0 and ∇ₓE ≡ 0 before training.
func ExampleImageEnergy() {
	net := layers.ImageEnergy{} // 1×28×28, channels 32, 64, 64, SiLU
	ebm, err := graph.NewEBM(net, nil, tensor.Float32, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	x := mat.NewDense(2, net.Dim(), nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = float64(i%7) / 7
	}
	energy, grad := make([]float64, 2), mat.NewDense(2, net.Dim(), nil)
	if err := ebm.EnergyGrad(x, energy, grad); err != nil {
		panic(err)
	}
	fmt.Println("dimension:", ebm.Dim())
	fmt.Println("parameters:", ebm.Params.Count())
	fmt.Println("E at start:", energy, "max |∇ₓE|:", mat.Norm(grad, math.Inf(1)))
	// Output:
	// dimension: 784
	// parameters: 222017
	// E at start: [0 0] max |∇ₓE|: 0
}

// The default image flow for 28×28 images: a RealNVP with convolutional
// couplings on checkerboard and channel masks at two scales, starting as
// the identity up to the 1e-6 scale of its output layers.
func ExampleImageRealNVP() {
	net := layers.ImageRealNVP{}
	flow, err := graph.NewFlow(net, layers.NewIsotropic(net.Dimension(), 1), tensor.Float64, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		panic(err)
	}
	cs, _ := net.Couplings()
	for _, c := range cs[:4] {
		fmt.Printf("%s coupling on images squeezed %d times\n", c.Kind, c.Squeeze)
	}
	x, logq := mat.NewDense(2, net.Dimension(), nil), make([]float64, 2)
	if err := flow.Sample(rand.New(rand.NewPCG(5, 6)), x, logq); err != nil {
		panic(err)
	}
	fmt.Println("parameters:", flow.Params.Count())
	// At start λ is the base ρ = N(0, I) up to the heads' 1e-6 scale.
	base := layers.NewIsotropic(net.Dimension(), 1)
	for i, lq := range logq {
		fmt.Printf("draw %d: |log λ(x) − log ρ(x)| < 1e-3: %v\n", i, math.Abs(lq-base.LogProb(x.RawRowView(i))) < 1e-3)
	}
	// Output:
	// checkerboard coupling on images squeezed 0 times
	// checkerboard coupling on images squeezed 0 times
	// channel coupling on images squeezed 1 times
	// channel coupling on images squeezed 1 times
	// parameters: 191524
	// draw 0: |log λ(x) − log ρ(x)| < 1e-3: true
	// draw 1: |log λ(x) − log ρ(x)| < 1e-3: true
}

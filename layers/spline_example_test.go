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

// A neural spline flow: two blocks of rational-quadratic spline couplings
// (8 bins on [−5, 5], identity tails) with 16-unit conditioners. It starts
// as the identity, so the forward pass returns z with log|det J| = 0, and
// points beyond the tail bound pass through unchanged at any parameters.
func ExampleSplineFlow() {
	net := layers.SplineFlow{Dim: 2, Blocks: 2, Hidden: []int{16}}
	flow, err := graph.NewFlow(net, layers.NewIsotropic(2, 1), tensor.Float64, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	z := mat.NewDense(2, 2, []float64{0.5, -1.25, 7, -6})
	x := mat.NewDense(2, 2, nil)
	logdet := make([]float64, 2)
	if err := flow.Forward(z, x, logdet); err != nil {
		panic(err)
	}
	fmt.Println("parameters:", flow.Params.Count())
	for i := 0; i < 2; i++ {
		fmt.Printf("T(%v) = [%.4f %.4f], log|det J| = %.4f\n", z.RawRowView(i), x.At(i, 0), x.At(i, 1), round4(logdet[i]))
	}
	// Output:
	// parameters: 1692
	// T([0.5 -1.25]) = [0.5000 -1.2500], log|det J| = 0.0000
	// T([7 -6]) = [7.0000 -6.0000], log|det J| = 0.0000
}

// round4 rounds to 4 decimals, and −0 to 0 (the identity's log-det is 0 up
// to rounding of either sign).
func round4(v float64) float64 { return math.Round(v*1e4)/1e4 + 0 }

package graph_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// An EBM tilted by the flow's base: the paper's toy energy starts at E ≡ 0,
// so the model starts as the base itself.
func ExampleNewEBM() {
	rng := rand.New(rand.NewPCG(1, 1))
	base := layers.NewIsotropic(2, 1)
	ebm, err := graph.NewEBM(graph.ToyEnergyNet(2, true), &base, tensor.Float64, rng)
	if err != nil {
		panic(err)
	}
	x := mat.NewDense(2, 2, []float64{0, 0, 1, -1})
	logp := make([]float64, 2)
	grad := mat.NewDense(2, 2, nil)
	if err := ebm.LogDensityGrad(x, logp, grad); err != nil {
		panic(err)
	}
	fmt.Println("parameters:", ebm.Params.Count())
	fmt.Printf("log p̃: %.4f %.4f\n", logp[0], logp[1])
	fmt.Println("∇ log p̃ at (1,−1):", grad.RawRowView(1))
	// Output:
	// parameters: 10593
	// log p̃: -1.8379 -2.8379
	// ∇ log p̃ at (1,−1): [-1 1]
}

// A RealNVP flow starts at the identity; sampling returns points and their
// log-density under the flow.
func ExampleNewFlow() {
	rng := rand.New(rand.NewPCG(2, 2))
	net := layers.RealNVP{Dim: 2, Blocks: 4, Hidden: []int{16}}
	flow, err := graph.NewFlow(net, layers.NewIsotropic(2, 1), tensor.Float64, rng)
	if err != nil {
		panic(err)
	}
	x := mat.NewDense(3, 2, nil)
	logq := make([]float64, 3)
	if err := flow.Sample(rng, x, logq); err != nil {
		panic(err)
	}
	check := make([]float64, 3)
	if err := flow.LogDensity(x, check); err != nil {
		panic(err)
	}
	fmt.Println("parameters:", flow.Params.Count())
	fmt.Printf("log λ agrees with T⁻¹: %v\n", math32Close(logq, check))
	// Output:
	// parameters: 1312
	// log λ agrees with T⁻¹: true
}

func math32Close(a, b []float64) bool {
	for i := range a {
		if d := a[i] - b[i]; d > 1e-9 || d < -1e-9 {
			return false
		}
	}
	return true
}

// A target written as a Gorgonia expression: Neal's funnel in d = 2,
// log π(v, x) = −v²/18 − x²/(2eᵛ) − v/2. Its gradient is Gorgonia's, and
// the target drives every kernel of package samplers (MALA, HMC, flowMC).
func ExampleNewTarget() {
	funnel := graph.Expression{D: 2, LogDensity: func(z *G.Node) (*G.Node, error) {
		v := G.Must(G.Slice(z, nil, G.S(0)))
		x := G.Must(G.Slice(z, nil, G.S(1)))
		prior := G.Must(G.Mul(G.Must(G.Square(v)), G.NewConstant(-1.0/18)))
		cond := G.Must(G.Mul(G.Must(G.Div(G.Must(G.Square(x)), G.Must(G.Exp(v)))), G.NewConstant(-0.5)))
		return G.Add(G.Must(G.Add(prior, cond)), G.Must(G.Mul(v, G.NewConstant(-0.5))))
	}}
	target, err := graph.NewTarget(funnel, tensor.Float64)
	if err != nil {
		panic(err)
	}
	z := mat.NewDense(1, 2, []float64{1, 1})
	logp, grad := make([]float64, 1), mat.NewDense(1, 2, nil)
	if err := target.LogDensityGrad(z, logp, grad); err != nil {
		panic(err)
	}
	fmt.Printf("log π(1, 1) = %.4f, ∇ = (%.4f, %.4f)\n", logp[0], grad.At(0, 0), grad.At(0, 1))
	// Output:
	// log π(1, 1) = -0.7395, ∇ = (-0.4272, -0.3679)
}

package samplers_test

import (
	"math"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// flowebm's Gorgonia models plug into the kernels directly.
var (
	_ samplers.Target       = (*graph.EBM)(nil)
	_ samplers.Target       = (*graph.Target)(nil)
	_ samplers.Proposal     = (*graph.Flow)(nil)
	_ samplers.LatentTarget = (*graph.Latent)(nil)
)

func randomFlow(t testing.TB, seed uint64) *graph.Flow {
	t.Helper()
	f, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}, Activation: layers.Tanh, InitScale: 1},
		layers.NewIsotropic(2, 1), tensor.Float64, rng(seed))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestNeuTraLeavesTargetInvariant: the target is a second random flow, whose
// exact draws start the chains; NeuTra preconditions with a different flow.
// Final states are iid under the target, so their means are within 4.5
// standard errors (sample sd/√M) of the target's mean, estimated from
// 200,000 exact draws (whose own error is 10× smaller and is added).
func TestNeuTraLeavesTargetInvariant(t *testing.T) {
	target, precond := randomFlow(t, 40), randomFlow(t, 41)
	lat, err := graph.NewLatent(precond, target)
	if err != nil {
		t.Fatal(err)
	}
	r := rng(42)
	const m = 3000
	s := samplers.NewState(exactDraws(t, target, r, m))
	k := &samplers.NeuTra{Latent: lat, Local: samplers.MALA{StepSize: 0.05, Frozen: true}}
	acc := 0.0
	for step := 0; step < 30; step++ {
		st, err := k.Step(r, s)
		if err != nil {
			t.Fatal(err)
		}
		acc += st.Local / 30
	}
	if acc < 0.3 {
		t.Fatalf("latent acceptance %.2f too low to exercise the kernel", acc)
	}
	ref := exactDraws(t, target, r, 200000)
	for j := 0; j < 2; j++ {
		got, sd := stat.MeanStdDev(mat.Col(nil, j, s.X), nil)
		want, sdRef := stat.MeanStdDev(mat.Col(nil, j, ref), nil)
		se := math.Hypot(sd/math.Sqrt(m), sdRef/math.Sqrt(200000))
		if math.Abs(got-want) > 4.5*se {
			t.Errorf("coordinate %d: NeuTra mean %.4f, target %.4f ± %.4f", j, got, want, 4.5*se)
		}
		if math.Abs(sd/sdRef-1) > 4.5/math.Sqrt(2*m) {
			t.Errorf("coordinate %d: NeuTra sd %.4f, target %.4f", j, sd, sdRef)
		}
	}
}

// gaussianExpression is log N(μ, diag σ²) up to a constant, written as a
// Gorgonia expression of the batch x, one column at a time.
func gaussianExpression(mu, sigma []float64) graph.Expression {
	return graph.Expression{D: len(mu), LogDensity: func(x *G.Node) (*G.Node, error) {
		var sum *G.Node
		for j := range mu {
			col, err := G.Slice(x, nil, G.S(j))
			if err != nil {
				return nil, err
			}
			d, err := G.Sub(col, G.NewConstant(mu[j]))
			if err != nil {
				return nil, err
			}
			term, err := G.Mul(G.Must(G.Square(d)), G.NewConstant(-0.5/(sigma[j]*sigma[j])))
			if err != nil {
				return nil, err
			}
			if sum == nil {
				sum = term
			} else if sum, err = G.Add(sum, term); err != nil {
				return nil, err
			}
		}
		return sum, nil
	}}
}

// A target written as a Gorgonia expression drives MALA with the gradient
// Gorgonia derives, and MALA leaves it invariant (checkMALAKeepsNormal).
func TestExpressionTargetMALAInvariant(t *testing.T) {
	mu, sigma := []float64{1, -2}, []float64{0.5, 2}
	target, err := graph.NewTarget(gaussianExpression(mu, sigma), tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	checkMALAKeepsNormal(t, target, mu, sigma, 0.05, 7)
}

// checkMALAKeepsNormal runs 30 frozen MALA steps of size step on 3,000
// chains started from exact draws of N(μ, diag σ²), the law of target:
// the final states are exact draws too, so each coordinate's mean is
// within 4.5 standard errors (sample sd/√M) of μ and its sd within 4.5
// standard errors (σ/√(2M)) of σ.
func checkMALAKeepsNormal(t *testing.T, target samplers.Target, mu, sigma []float64, step float64, seed uint64) {
	t.Helper()
	r := rng(seed)
	const m = 3000
	d := len(mu)
	x := mat.NewDense(m, d, nil)
	for i := range m {
		for j := range d {
			x.Set(i, j, mu[j]+sigma[j]*r.NormFloat64())
		}
	}
	s := samplers.NewState(x)
	k := &samplers.MALA{Target: target, StepSize: step, Frozen: true}
	acc := 0.0
	for range 30 {
		st, err := k.Step(r, s)
		if err != nil {
			t.Fatal(err)
		}
		acc += st.Local / 30
	}
	if acc < 0.3 {
		t.Fatalf("acceptance %.2f too low to exercise the kernel", acc)
	}
	for j := range d {
		got, sd := stat.MeanStdDev(mat.Col(nil, j, s.X), nil)
		if se := sd / math.Sqrt(m); math.Abs(got-mu[j]) > 4.5*se {
			t.Errorf("dimension %d: mean %.4f, want %.4f ± %.4f (4.5 SE)", j, got, mu[j], 4.5*se)
		}
		if math.Abs(sd/sigma[j]-1) > 4.5/math.Sqrt(2*m) {
			t.Errorf("dimension %d: sd %.4f, want %.4f (4.5 SE)", j, sd, sigma[j])
		}
	}
}

package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// banana is the twisted Gaussian log π(x) = −x₁²/(2·4) − (x₂ − b x₁² + 4b)²/2
// with b = 0.1, as a Gorgonia expression.
func banana(x *G.Node) (*G.Node, error) {
	n := x.Shape()[0]
	x1, err := G.Slice(x, nil, G.S(0))
	if err != nil {
		return nil, err
	}
	x2, err := G.Slice(x, nil, G.S(1))
	if err != nil {
		return nil, err
	}
	sq, err := G.Square(x1)
	if err != nil {
		return nil, err
	}
	a, err := G.Mul(sq, G.NewConstant(-1.0/8))
	if err != nil {
		return nil, err
	}
	t, err := G.Sub(x2, G.Must(G.Mul(sq, G.NewConstant(0.1))))
	if err != nil {
		return nil, err
	}
	t, err = G.Add(t, G.NewConstant(0.4))
	if err != nil {
		return nil, err
	}
	b, err := G.Mul(G.Must(G.Square(t)), G.NewConstant(-0.5))
	if err != nil {
		return nil, err
	}
	_ = n
	return G.Add(a, b)
}

func bananaLogDensity(x []float64) float64 {
	t := x[1] - 0.1*x[0]*x[0] + 0.4
	return -x[0]*x[0]/8 - t*t/2
}

// The expression target's log-density is the formula's, and its gradient,
// derived by Gorgonia, agrees with central finite differences (gonum
// diff/fd, 1e-6 relative).
func TestExpressionTargetGradient(t *testing.T) {
	target, err := NewTarget(Expression{D: 2, LogDensity: banana}, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 5
	x := mat.NewDense(n, 2, nil)
	for i := range n {
		x.Set(i, 0, 3*rng.NormFloat64())
		x.Set(i, 1, 3*rng.NormFloat64())
	}
	logp, grad := make([]float64, n), mat.NewDense(n, 2, nil)
	if err := target.LogDensityGrad(x, logp, grad); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		row := mat.Row(nil, i, x)
		if want := bananaLogDensity(row); math.Abs(logp[i]-want) > 1e-12*(1+math.Abs(want)) {
			t.Errorf("log π(x_%d) = %v, want %v", i, logp[i], want)
		}
		want := fd.Gradient(nil, bananaLogDensity, row, &fd.Settings{Formula: fd.Central})
		for j := range 2 {
			if g := grad.At(i, j); math.Abs(g-want[j]) > 1e-6*(1+math.Abs(want[j])) {
				t.Errorf("∂/∂x_%d log π(x_%d) = %v, finite differences %v", j, i, g, want[j])
			}
		}
	}
}

// An expression whose value is not one number per point is refused.
func TestExpressionTargetShape(t *testing.T) {
	target, err := NewTarget(Expression{D: 2, LogDensity: func(x *G.Node) (*G.Node, error) { return x, nil }}, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	if err := target.LogDensity(mat.NewDense(3, 2, nil), make([]float64, 3)); err == nil {
		t.Error("a (3, 2) log-density accepted")
	}
	// A single point of the wrong width is an error, not a panic.
	bt, _ := NewTarget(Expression{D: 2, LogDensity: banana}, tensor.Float64)
	if err := bt.LogDensityGrad(mat.NewDense(1, 3, nil), make([]float64, 1), mat.NewDense(1, 3, nil)); err == nil {
		t.Error("a point of 3 coordinates accepted by a target of 2")
	}
}

// Evaluated again, the expression's gradient is the same: the gradient of
// Slice adds into its buffer, which the executor reused between runs, so
// an expression slicing its input twice had ∇ = 4, 12, 24 on three calls
// at one point.
func TestExpressionTargetRepeatable(t *testing.T) {
	target, err := NewTarget(Expression{D: 2, LogDensity: banana}, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(3, 2, []float64{0, 0, 1, -1, 2, 0.5})
	var first []float64
	for run := range 3 {
		logp, grad := make([]float64, 3), mat.NewDense(3, 2, nil)
		if err := target.LogDensityGrad(x, logp, grad); err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			first = grad.RawMatrix().Data
			continue
		}
		for k, g := range grad.RawMatrix().Data {
			if g != first[k] {
				t.Fatalf("run %d: gradient %v, first run %v", run+1, grad.RawMatrix().Data, first)
			}
		}
	}
}

package samplers_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/flowebm/flowebm/samplers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
)

// rosenbrock is a banana-shaped density: log π(a, b) = −(1−a)²/2 − 5(b−a²)²
// with its gradient written by hand.
var rosenbrock = samplers.Func{D: 2,
	LogDensity: func(x []float64) float64 { return -(1-x[0])*(1-x[0])/2 - 5*(x[1]-x[0]*x[0])*(x[1]-x[0]*x[0]) },
	Grad: func(x, g []float64) float64 {
		t := x[1] - x[0]*x[0]
		g[0] = (1 - x[0]) + 20*t*x[0]
		g[1] = -10 * t
		return -(1-x[0])*(1-x[0])/2 - 5*t*t
	}}

// A Func target's batch values are its functions' row by row, and the
// hand-written gradient agrees with central finite differences (gonum
// diff/fd, 1e-6 relative), which is what a user should check of theirs.
func TestFuncTarget(t *testing.T) {
	target, err := rosenbrock.Target()
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(3, 2, []float64{0, 0, 1, 1, -0.5, 2})
	logp, grad := make([]float64, 3), mat.NewDense(3, 2, nil)
	if err := target.LogDensityGrad(x, logp, grad); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		row := mat.Row(nil, i, x)
		if logp[i] != rosenbrock.LogDensity(row) {
			t.Errorf("row %d: log π %v, want %v", i, logp[i], rosenbrock.LogDensity(row))
		}
		want := fd.Gradient(nil, rosenbrock.LogDensity, row, &fd.Settings{Formula: fd.Central})
		for j := range 2 {
			if math.Abs(grad.At(i, j)-want[j]) > 1e-6*(1+math.Abs(want[j])) {
				t.Errorf("row %d: ∂%d = %v, finite differences %v", i, j, grad.At(i, j), want[j])
			}
		}
	}
	bad := samplers.Func{D: 2, Grad: func(x, g []float64) float64 { g[0] = math.NaN(); return 0 }}
	bt, _ := bad.Target()
	if err := bt.LogDensityGrad(x, logp, grad); err == nil {
		t.Error("a NaN gradient accepted")
	}
	if _, err := (samplers.Func{D: 0}).Target(); err == nil {
		t.Error("dimension 0 accepted")
	}
}

// MALA on a Func target leaves it invariant (checkMALAKeepsNormal).
func TestFuncTargetMALAInvariant(t *testing.T) {
	mu, sigma := []float64{-1, 3}, []float64{1.5, 0.3}
	gauss := samplers.Func{D: 2, Grad: func(x, g []float64) float64 {
		lp := 0.0
		for j := range x {
			d := (x[j] - mu[j]) / sigma[j]
			g[j] = -d / sigma[j]
			lp -= d * d / 2
		}
		return lp
	}}
	target, err := gauss.Target()
	if err != nil {
		t.Fatal(err)
	}
	checkMALAKeepsNormal(t, target, mu, sigma, 0.02, 11)
}

// A hand-written density and gradient as a target for every kernel.
func ExampleFunc() {
	target, err := rosenbrock.Target()
	if err != nil {
		panic(err)
	}
	x := mat.NewDense(1, 2, []float64{0, 1})
	logp, grad := make([]float64, 1), mat.NewDense(1, 2, nil)
	if err := target.LogDensityGrad(x, logp, grad); err != nil {
		panic(err)
	}
	fmt.Printf("log π(0, 1) = %.2f, ∇ = %v\n", logp[0], grad.RawRowView(0))
	// Output:
	// log π(0, 1) = -5.50, ∇ = [1 -10]
}

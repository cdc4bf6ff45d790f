package graph

import (
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// fdRelTol is the bound on the norm-wise relative error between analytic and
// central finite-difference gradients in float64. Central differences with
// gonum's default step h ≈ 6e-6 have truncation error O(h²) ≈ 4e-11 and
// round-off O(ε/h) ≈ 4e-11 relative to the function's scale, so 1e-6 leaves
// four orders of magnitude of margin while still catching any wrong term.
const fdRelTol = 1e-6

// relErr is ‖a − b‖∞ / max(‖a‖∞, ‖b‖∞), the norm-wise relative error.
func relErr(a, b []float64) float64 { return relErrInf(a, b) }

func fdGrad(f func([]float64) float64, x []float64) []float64 {
	g := make([]float64, len(x))
	fd.Gradient(g, f, x, &fd.Settings{Formula: fd.Central})
	return g
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func randMatrix(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m.Set(i, j, scale*rng.NormFloat64())
		}
	}
	return m
}

func mustEBM(t testing.TB, net EnergyNet, tilt *layers.Gaussian, dt tensor.Dtype, seed uint64) *EBM {
	t.Helper()
	e, err := NewEBM(net, tilt, dt, newRNG(seed))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// randomFlow returns a flow whose weights are far from the identity, so
// that tests exercise a non-trivial map.
func randomFlow(t testing.TB, net layers.RealNVP, sigma float64, dt tensor.Dtype, seed uint64) *Flow {
	t.Helper()
	net.InitScale = 1
	f, err := NewFlow(net, layers.NewIsotropic(net.Dim, sigma), dt, newRNG(seed))
	if err != nil {
		t.Fatal(err)
	}
	// Non-zero biases too.
	rng := newRNG(seed + 1)
	flat := f.Params.Flatten(nil)
	for i := range flat {
		if flat[i] == 0 {
			flat[i] = 0.3 * rng.NormFloat64()
		}
	}
	f.Params.SetFlat(flat)
	return f
}

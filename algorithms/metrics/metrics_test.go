package metrics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/samplers"
	"gonum.org/v1/gonum/mat"
)

// The grid quadrature of an exact mixture recovers its weights; the
// misassignment between zones of the two-modes target is below 1e-6 and the
// 200² grid's quadrature error of the order of 1e-4, so 1e-3 is safe.
func TestGridWeightsOfExactTargets(t *testing.T) {
	for _, exp := range []*experiments.Experiment{experiments.TwoModes(), experiments.FourModes(), experiments.EightGaussians()} {
		g := NewGrid(exp.Box, 200)
		if err := g.Fill(exp.Target.LogDensity); err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.LogZ) > 1e-3 {
			t.Errorf("%s: normalised target has log Z = %v on the grid, want 0 ± 1e-3", exp.Name, g.LogZ)
		}
		w := g.ZoneWeights(exp.Zones(g.Points), len(exp.Weights))
		for k := range w {
			if math.Abs(w[k]-exp.Weights[k]) > 1e-3 {
				t.Errorf("%s: zone %d weight %v, want %v", exp.Name, k, w[k], exp.Weights[k])
			}
		}
	}
}

// The rings density p_r(|x|)/(2π|x|) integrates to 1 (quadrature 1e-3 on a
// 400² grid of [−5, 5]², where the outer ring's mass beyond 5 is 1e-9).
func TestRingsDensityIsNormalised(t *testing.T) {
	g := NewGrid(5, 400)
	if err := g.Fill(experiments.Rings{}.LogDensity); err != nil {
		t.Fatal(err)
	}
	if math.Abs(g.LogZ) > 1e-3 {
		t.Errorf("rings: log ∫p = %v, want 0 ± 1e-3", g.LogZ)
	}
}

func TestMedianSquaredError(t *testing.T) {
	if m := MedianSquaredError([]float64{1, 2, 3, math.NaN()}, []float64{0, 0, 0, 0}); m != 4 {
		t.Errorf("median of {1, 4, 9} = %v", m)
	}
}

// EstimateLogZ on an unnormalised N(0, I₂)·e^c with a wider Gaussian
// proposal recovers c within 4.5 of its own standard errors.
func TestEstimateLogZ(t *testing.T) {
	const c = 2.5
	logp := func(x mat.Matrix, out []float64) error {
		r, _ := x.Dims()
		for i := 0; i < r; i++ {
			a, b := x.At(i, 0), x.At(i, 1)
			out[i] = c - (a*a+b*b)/2 - math.Log(2*math.Pi)
		}
		return nil
	}
	q, err := samplers.NewNormal([]float64{0, 0}, mat.NewSymDense(2, []float64{2.25, 0, 0, 2.25}))
	if err != nil {
		t.Fatal(err)
	}
	est, err := EstimateLogZ(logp, q, rand.New(rand.NewPCG(1, 2)), 20000)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(est.LogZ-c) > 4.5*est.SE {
		t.Errorf("log Z %v ± %v, want %v", est.LogZ, est.SE, c)
	}
	// ESS fraction for N(0,1) target, N(0, s²) proposal in d dims:
	// (s²/√(2s²−1))^(−d) = (2.25/√3.5)^(−2) ≈ 0.69.
	if math.Abs(est.ESS-0.69) > 0.05 {
		t.Errorf("importance ESS fraction %v, want about 0.69", est.ESS)
	}
}

package graph

import (
	"math"
	"testing"
)

// At a point 2e-6 from a LeakyReLU kink the default central difference
// straddles it and is off by half the jump in slope; finiteDiff takes the
// smaller step's estimate there, while a wrong gradient stays far from
// both estimates.
func TestFiniteDiffAtKink(t *testing.T) {
	leaky := func(v []float64) float64 {
		if v[0] < 0 {
			return 0.05 * v[0]
		}
		return v[0]
	}
	x := []float64{2e-6}
	if want := finiteDiff([]float64{1}, leaky, x); math.Abs(want[0]-1) > 1e-6 {
		t.Errorf("right slope 1: finite difference %v", want[0])
	}
	if want := finiteDiff([]float64{0.5}, leaky, x); relErrInf([]float64{0.5}, want) < 0.1 {
		t.Errorf("a wrong slope 0.5 passed: finite difference %v", want[0])
	}
}

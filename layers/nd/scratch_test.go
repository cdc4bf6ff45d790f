package nd

import (
	"math"
	"testing"
)

// Test helpers of slice_test.go … pool_test.go.

// gradTol is the relative tolerance of the gradient checks: the operations
// are linear (or bilinear, or piecewise linear for MaxPool) in each
// differentiated input, so central differences with gonum's step of 6e-6
// have no truncation error and only rounding error, about 1e-16·|L|/6e-6
// ≈ 1e-10 relative for these sizes; 1e-6 leaves a wide margin while still
// catching any wrong index or factor.
const gradTol = 1e-6

// wantClose fails t unless got and want agree to tol relative to the
// largest magnitude in want (at least 1).
func wantClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); d > tol*scale || math.IsNaN(got[i]) != math.IsNaN(want[i]) {
			t.Fatalf("%s: value %d = %v, want %v\n got  %v\n want %v", what, i, got[i], want[i], got, want)
		}
	}
}

// unravel returns the coordinates of flat index i in shape.
func unravel(i int, shape []int) []int {
	c := make([]int, len(shape))
	for a := len(shape) - 1; a >= 0; a-- {
		c[a] = i % shape[a]
		i /= shape[a]
	}
	return c
}

// ravel returns the flat index of coordinates c in shape.
func ravel(c, shape []int) int {
	i := 0
	for a := range shape {
		i = i*shape[a] + c[a]
	}
	return i
}

// indexInput is a non-differentiated input holding integer values.
func indexInput(shape []int, vals ...int) input {
	v := make([]float64, len(vals))
	for i, x := range vals {
		v[i] = float64(x)
	}
	return input{shape: shape, vals: v}
}

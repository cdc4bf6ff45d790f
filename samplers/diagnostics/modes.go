package diagnostics

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ModeWeights returns the fraction of rows of x whose nearest mean (Euclidean) is
// each of means: the paper's zone histogram (App. C.3).
func ModeWeights(x mat.Matrix, means [][]float64) []float64 {
	r, _ := x.Dims()
	w := make([]float64, len(means))
	row := make([]float64, len(means[0]))
	for i := 0; i < r; i++ {
		w[NearestMode(mat.Row(row, i, x), means)]++
	}
	for k := range w {
		w[k] /= float64(r)
	}
	return w
}

// NearestMode returns the index of the mean nearest to x (Euclidean; the
// first on ties): the zone x belongs to.
func NearestMode(x []float64, means [][]float64) int {
	best, bd := 0, math.Inf(1)
	for k, mu := range means {
		if d := floats.Distance(x, mu, 2); d < bd {
			best, bd = k, d
		}
	}
	return best
}

// WeightMSE is the mean squared error between estimated and reference weights.
func WeightMSE(est, ref []float64) float64 {
	s := 0.0
	for k := range est {
		s += (est[k] - ref[k]) * (est[k] - ref[k])
	}
	return s / float64(len(est))
}

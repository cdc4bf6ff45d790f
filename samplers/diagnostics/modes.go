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

// Weight is an estimated mode weight with its Monte Carlo standard error
// and a 95% interval (the estimate ± 1.96 MCSE, clipped to [0, 1]).
type Weight struct {
	Weight, MCSE, Lo, Hi float64
	// ESS is the effective sample size the MCSE rests on.
	ESS float64
}

func newWeight(w, mcse, ess float64) Weight {
	return Weight{Weight: w, MCSE: mcse, ESS: ess, Lo: math.Max(0, w-1.96*mcse), Hi: math.Min(1, w+1.96*mcse)}
}

// ChainModeWeights returns the weight of each zone (nearest of means)
// among MCMC draws laid out chains × draws × d (Summarize's layout), each
// with the MCSE of a mean: the zone indicator's standard deviation over the
// square root of its ESS (ESSMean over the chains). A zone no draw visits,
// or one every draw is in, has MCSE NaN: its indicator does not vary.
func ChainModeWeights(data []float64, chains, draws, d int, means [][]float64) []Weight {
	zones := make([][]int, chains)
	row := make([]float64, d)
	for c := range zones {
		zones[c] = make([]int, draws)
		for n := range zones[c] {
			copy(row, data[(c*draws+n)*d:])
			zones[c][n] = NearestMode(row, means)
		}
	}
	out := make([]Weight, len(means))
	ind := make([][]float64, chains)
	for k := range out {
		sum := 0.0
		for c := range ind {
			ind[c] = make([]float64, draws)
			for n, z := range zones[c] {
				if z == k {
					ind[c][n] = 1
					sum++
				}
			}
		}
		w := sum / float64(chains*draws)
		ess := ESSMean(ind)
		sd := math.Sqrt(w * (1 - w) * float64(chains*draws) / float64(chains*draws-1))
		out[k] = newWeight(w, sd/math.Sqrt(ess), ess)
	}
	return out
}

// WeightedModeWeights returns the weight of each zone among importance-
// weighted draws (the rows of x with log-weights logw: an i-SIR or IMH
// pool, a flow's importance sampling), self-normalised, each with the
// delta-method standard error sqrt(Σ w̃ᵢ² (1ᵢ − ŵ)²) of a ratio estimator
// (w̃ the normalised weights) and the weights' ESS (Σw)²/Σw².
func WeightedModeWeights(x mat.Matrix, logw []float64, means [][]float64) []Weight {
	r, d := x.Dims()
	mx := floats.Max(logw)
	w := make([]float64, r)
	for i, v := range logw {
		w[i] = math.Exp(v - mx)
	}
	total := floats.Sum(w)
	floats.Scale(1/total, w)
	ess := 1 / floats.Dot(w, w)
	zones := make([]int, r)
	row := make([]float64, d)
	for i := range zones {
		zones[i] = NearestMode(mat.Row(row, i, x), means)
	}
	out := make([]Weight, len(means))
	for k := range out {
		est := 0.0
		for i, z := range zones {
			if z == k {
				est += w[i]
			}
		}
		v := 0.0
		for i, z := range zones {
			ind := 0.0
			if z == k {
				ind = 1
			}
			v += w[i] * w[i] * (ind - est) * (ind - est)
		}
		out[k] = newWeight(est, math.Sqrt(v), ess)
	}
	return out
}

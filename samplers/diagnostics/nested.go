package diagnostics

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// NestedRHat is the nested R-hat of Margossian, Hoffman, Sountsov,
// Riou-Durand, Vehtari and Gelman (2024), "Nested R-hat: assessing the
// convergence of Markov chain Monte Carlo when running many short chains",
// Bayesian Analysis, doi:10.1214/24-BA1453, for the len(x) chains grouped
// consecutively into k superchains of M = len(x)/k chains each (chains
// 0 … M−1 form superchain 0, and so on), the chains of a superchain having
// started from one point. With N draws per chain, f̄.mk the mean of chain
// m of superchain k and f̄..k that of superchain k (Eq. 4), it is
// (Eq. 8)
//
//	R̂ν = √(1 + B̂ν/Ŵν),  B̂ν = 1/(K−1) Σₖ (f̄..k − f̄...)²  (Eq. 6),
//	Ŵν = 1/K Σₖ (B̃ₖ + W̃ₖ),  B̃ₖ = 1/(M−1) Σₘ (f̄.mk − f̄..k)²,
//	W̃ₖ = 1/M Σₘ 1/(N−1) Σₙ (f_nmk − f̄.mk)²  (Eq. 7),
//
// with B̃ₖ = 0 for M = 1 and W̃ₖ = 0 for N = 1; equation numbers of the
// published version as posterior's rhat_nested (1.7) cites them. This
// matches posterior's rhat_nested: unsplit chains, no rank normalisation. R̂ν ≥ 1, so with M = 1 it is not
// the classic R-hat (the paper's footnote). Single-draw chains are allowed
// (the many-short-chains regime). NaN for fewer than 2 superchains, a
// chain count not a multiple of k, ragged or empty chains, M = N = 1, a
// NaN or infinite draw, or all draws equal; +Inf when every chain is
// constant but superchains differ.
func NestedRHat(x [][]float64, k int) float64 {
	if !validNested(x, k) {
		return math.NaN()
	}
	// On a copy scaled and centred as Summarize's draws (probe 60: at
	// 1e12 ± 1e-4 the superchain means rounded together, R̂ν = 1 for
	// 1.0498; at 1e±200 the squares overflowed or underflowed to NaN).
	x = centredCopy(x)
	m, n := len(x)/k, len(x[0])
	chainMean := make([]float64, len(x))
	chainVar := make([]float64, len(x))
	for c, ch := range x {
		chainMean[c] = stat.Mean(ch, nil)
		if n > 1 {
			chainVar[c] = stat.Variance(ch, nil)
		}
	}
	superMean := make([]float64, k)
	within := 0.0
	for s := range superMean {
		means := chainMean[s*m : (s+1)*m]
		superMean[s] = stat.Mean(means, nil)
		if m > 1 {
			within += stat.Variance(means, nil) / float64(k) // B̃ₖ
		}
		within += stat.Mean(chainVar[s*m:(s+1)*m], nil) / float64(k) // W̃ₖ
	}
	between := stat.Variance(superMean, nil)
	return math.Sqrt(1 + between/within)
}

// centredCopy is a copy of x divided by its largest magnitude where that
// is beyond 1e±150 (rescale) and centred by its mean (centre): a
// statistic invariant to shifts and scales computed on it keeps its
// digits.
func centredCopy(x [][]float64) [][]float64 {
	y := make([][]float64, len(x))
	for c, ch := range x {
		y[c] = append([]float64(nil), ch...)
	}
	rescale(y)
	centre(y)
	return y
}

// validNested reports whether x is rectangular, finite, non-empty, not all
// equal, and splits into k ≥ 2 superchains of equal size with M > 1 or
// N > 1.
func validNested(x [][]float64, k int) bool {
	if k < 2 || len(x) == 0 || len(x)%k != 0 || len(x[0]) == 0 {
		return false
	}
	if len(x) == k && len(x[0]) == 1 {
		return false
	}
	return rectangularFinite(x) && spread(x)
}

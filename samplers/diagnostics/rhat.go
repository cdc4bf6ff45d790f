// Package diagnostics computes MCMC convergence diagnostics on chains from
// any source: rank-normalised split R-hat and classic R-hat, bulk and tail
// effective sample sizes, with the definitions of ArviZ 0.21 and Stan's
// posterior package (Vehtari et al. 2021); the ESS of the mean, the SD and
// quantiles and the Monte Carlo standard errors of those estimates (as
// posterior 1.7, see mcse.go); nested R-hat for many short chains
// (Margossian et al. 2024); and mode weights of samples.
//
// Chains are given as x[c][n]: chain c, draw n, one scalar quantity. Every
// function returns NaN where the diagnostic is undefined: a NaN or infinite
// draw, fewer than 2 chains (R-hat) or 1 chain (ESS), fewer than 4 draws
// (NestedRHat takes chains of any length), or zero variance.
package diagnostics

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// valid reports whether x is rectangular with at least minChains chains of
// at least 4 finite draws.
func valid(x [][]float64, minChains int) bool {
	if len(x) < minChains || len(x) == 0 {
		return false
	}
	return len(x[0]) >= 4 && rectangularFinite(x)
}

// rectangularFinite reports whether every chain of x has len(x[0]) draws,
// all finite.
func rectangularFinite(x [][]float64) bool {
	for _, c := range x {
		if len(c) != len(x[0]) {
			return false
		}
		for _, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

// Split halves each chain: chain c gives x[c][0:h] and x[c][n−h:n] with
// h = ⌊n/2⌋ (an odd n drops the middle draw). The halves share x's memory.
func Split(x [][]float64) [][]float64 {
	out := make([][]float64, 0, 2*len(x))
	for _, c := range x {
		h := len(c) / 2
		out = append(out, c[:h], c[len(c)-h:])
	}
	return out
}

// RankNormalize replaces every value by Φ⁻¹((r − 3/8)/(S + 1/4)), r its rank
// among all S values (ties get their average rank).
func RankNormalize(x [][]float64) [][]float64 {
	r := Ranks(x)
	s := 0.0
	for _, ch := range x {
		s += float64(len(ch))
	}
	for _, ch := range r {
		for i, v := range ch {
			ch[i] = distuv.UnitNormal.Quantile((v - 0.375) / (s + 0.25))
		}
	}
	return r
}

// Ranks replaces every value by its rank 1…S among all S values of x (ties
// get their average rank), as the rank plots of Vehtari et al. (2021) use.
func Ranks(x [][]float64) [][]float64 {
	type item struct {
		v    float64
		c, n int32 // 16 bytes an item (probe 55: R-hat at the end of sample ran out of memory)
	}
	total := 0
	for _, ch := range x {
		total += len(ch)
	}
	all := make([]item, 0, total)
	for c, ch := range x {
		for n, v := range ch {
			all = append(all, item{v, int32(c), int32(n)})
		}
	}
	slices.SortFunc(all, func(a, b item) int { return cmp.Compare(a.v, b.v) }) // ties get one rank: the order among them does not matter
	out := make([][]float64, len(x))
	for c, ch := range x {
		out[c] = make([]float64, len(ch))
	}
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // average of ranks i+1 … j
		for k := i; k < j; k++ {
			out[all[k].c][all[k].n] = rank
		}
		i = j
	}
	return out
}

// rhat is the potential scale reduction √((B/W + N − 1)/N) of y[M][N].
func rhat(y [][]float64) float64 {
	m, n := len(y), len(y[0])
	means := make([]float64, m)
	w := 0.0
	for c, ch := range y {
		mu, v := stat.MeanVariance(ch, nil)
		means[c] = mu
		w += v / float64(m)
	}
	b := float64(n) * stat.Variance(means, nil)
	if w == 0 { // chains each constant: apart (b > 0) they have not mixed at all
		if b > 0 {
			return math.Inf(1) // as ArviZ gives
		}
		return math.NaN()
	}
	return math.Sqrt((b/w + float64(n) - 1) / float64(n))
}

// ClassicRHat is the Gelman–Rubin R-hat on the raw, unsplit chains (what the
// paper's companion code reports).
func ClassicRHat(x [][]float64) float64 {
	if !valid(x, 2) {
		return math.NaN()
	}
	return rhat(x)
}

// RHat is the rank-normalised split R-hat of Vehtari et al. (2021): the
// larger of the R-hats of the rank-normalised split chains and of their
// rank-normalised absolute deviations from the median of all draws (as
// posterior's fold_draws; ArviZ takes the median of the split chains,
// which for chains of an odd length leave out each chain's middle draw:
// probe 63, 1.0115 for posterior's 1.0085 at 4 × 101 draws). Of one
// chain it compares the chain's two halves; ClassicRHat needs two.
func RHat(x [][]float64) float64 {
	if !valid(x, 1) { // one chain: its halves, as ArviZ and posterior compare them
		return math.NaN()
	}
	bulk := rhat(RankNormalize(Split(x)))
	tail := rhat(RankNormalize(Split(Fold(x))))
	if math.IsNaN(bulk) || math.IsNaN(tail) {
		return math.NaN()
	}
	return math.Max(bulk, tail)
}

// BulkRHat is RHat's bulk part alone: the R-hat of the rank-normalised
// split chains, which sees chains that disagree on their location, not
// those that agree on it but not on their spread (which RHat's folded
// part sees). NaN where RHat is.
func BulkRHat(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	return rhat(RankNormalize(Split(x)))
}

// Fold is x's absolute deviations from the median of all its draws
// (posterior's fold_draws), the draws whose rank-normalised R-hat is RHat's
// tail part.
func Fold(x [][]float64) [][]float64 {
	med := quantile(flatten(x), 0.5)
	f := make([][]float64, len(x))
	for c, ch := range x {
		f[c] = make([]float64, len(ch))
		for n, v := range ch {
			f[c][n] = math.Abs(v - med)
		}
	}
	return f
}

func flatten(x [][]float64) []float64 {
	var all []float64
	for _, c := range x {
		all = append(all, c...)
	}
	return all
}

// quantile is the type-7 (linear interpolation) sample quantile, NumPy's default.
func quantile(v []float64, p float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	h := p * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

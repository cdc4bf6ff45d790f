package diagnostics

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ESS of a mean, a standard deviation and quantiles, and the Monte Carlo
// standard errors (MCSE) built on them, as Stan's posterior 1.7
// (R/convergence.R: ess_mean, ess_sd, ess_quantile, ess_median,
// mcse_mean, mcse_sd, mcse_quantile, mcse_median) and ArviZ 0.21–0.23
// (arviz/stats/diagnostics.py: _ess_mean, _ess_sd, _ess_quantile,
// _ess_median, _mcse_mean, _mcse_sd, _mcse_quantile, _mcse_median),
// following Vehtari et al. (2021), sections 4.3–4.4. None of them
// rank-normalises: they are the ESS and MCSE of the estimates on the
// draws' own scale. The raw ESS (unsplit, un-normalised: ArviZ's method
// "identity", posterior's ess_basic(split = FALSE)) is ESS.
//
// Where ArviZ and posterior differ, these follow posterior:
//   - draws all equal: NaN (posterior's NA); ArviZ's _ess returns the
//     number of draws for constant input, so its ESS of constant draws is
//     S and its MCSE of the mean and of quantiles 0 (of the SD NaN). Both
//     call draws constant when their range is below an absolute tolerance
//     (2.2e-16 in posterior, 1e-15 in ArviZ); here only equal draws are;
//   - ESSQuantile(x, 1): posterior takes the quantile at (S − ½)/S, so
//     that not every draw is ≤ it; ArviZ's indicator is constant (ESS S);
//   - MCSEQuantile with an undefined ESS: NaN (posterior's NA); ArviZ's
//     nanmax/nanmin fall back to half the range of the draws.
//
// The SD definitions changed: posterior 1.2.2 (2022) dropped mcse_sd's
// normality assumption and took the ESS of |x − x̄| for ess_sd, posterior
// 1.6.1 (December 2024) that of (x − x̄)², and ArviZ 0.21 (December 2024)
// made both changes at once. These are the current ones (posterior
// ≥ 1.6.1, ArviZ ≥ 0.21), on which the two agree.

// ESSMean is the effective sample size of the mean: the ESS of the split
// chains on their own scale (posterior's ess_mean, ArviZ's method "mean").
func ESSMean(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	return ess(Split(x))
}

// ESSSD is the effective sample size of the standard deviation: the ESS
// of the split chains of (x − x̄)², x̄ the mean of all draws (posterior
// ≥ 1.6.1 and ArviZ ≥ 0.21, method "sd"; posterior 1.2.2–1.6.0 used
// |x − x̄|, and posterior ≤ 1.2.1 and ArviZ ≤ 0.20 the smaller of the
// split ESS of x and of x²).
func ESSSD(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	return ess(Split(centredSquares(x)))
}

// ESSQuantile is the effective sample size of the p-quantile estimate:
// the ESS of the split chains of the indicators 1[x ≤ q̂ₚ], q̂ₚ the type-7
// sample quantile of all S draws; for p = 1 it uses q̂ at (S − ½)/S, as
// posterior's ess_quantile does. NaN for p outside [0, 1].
func ESSQuantile(x [][]float64, p float64) float64 {
	if !valid(x, 1) || !(p >= 0 && p <= 1) {
		return math.NaN()
	}
	return essQuantile(x, p)
}

// ESSMedian is ESSQuantile(x, 0.5).
func ESSMedian(x [][]float64) float64 { return ESSQuantile(x, 0.5) }

// essQuantile is ESSQuantile for valid x and p.
func essQuantile(x [][]float64, p float64) float64 {
	all := flatten(x)
	if p == 1 {
		s := float64(len(all))
		p = (s - 0.5) / s
	}
	q := quantile(all, p)
	ind := make([][]float64, len(x))
	for c, ch := range x {
		ind[c] = make([]float64, len(ch))
		for n, v := range ch {
			if v <= q {
				ind[c][n] = 1
			}
		}
	}
	return ess(Split(ind))
}

// MCSEMean is the Monte Carlo standard error of the mean, sd/√ESSMean
// with sd the standard deviation (divisor S − 1) of all draws.
func MCSEMean(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	return stat.StdDev(flatten(x), nil) / math.Sqrt(ess(Split(x)))
}

// MCSESD is the Monte Carlo standard error of the standard deviation
// without a normality assumption (posterior ≥ 1.2.2, ArviZ ≥ 0.21): with
// d = (x − x̄)², Var(σ̂²) ≈ (mean(d²) − mean(d)²)/ESS(d) (Kenney and
// Keeping 1951, p. 141), ESS(d) = ESSSD(x), and by the delta method
// MCSE(σ̂) = √(Var(σ̂²)/(4 mean(d))). Older versions (posterior ≤ 1.2.1,
// ArviZ ≤ 0.20) assumed normal draws: sd·√(e(1 − 1/E)^(E−1) − 1), E the
// old ESS of the sd.
func MCSESD(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	d := centredSquares(x)
	return mcseSD(d, ess(Split(d)))
}

// mcseSD is MCSESD from the centred squares d and their split ESS.
func mcseSD(d [][]float64, essD float64) float64 {
	all := flatten(d)
	ev := stat.Mean(all, nil)
	ev2 := 0.0
	for _, v := range all {
		ev2 += v * v
	}
	ev2 /= float64(len(all))
	varVar := (ev2 - ev*ev) / essD
	return math.Sqrt(varVar / ev / 4)
}

// MCSEQuantile is the Monte Carlo standard error of the p-quantile
// estimate (Vehtari et al. 2021, section 4.4): with E = ESSQuantile(x, p)
// and a₁, a₂ the 0.1586553 and 0.8413447 quantiles (±1σ of a normal) of
// Beta(Ep + 1, E(1 − p) + 1), it is half the distance between the sorted
// draws θ₍⌊a₁S⌋₎ and θ₍⌈a₂S⌉₎ (1-based order statistics, clamped to 1 … S),
// as posterior's mcse_quantile and ArviZ's _mcse_quantile. NaN for p
// outside [0, 1] or an undefined ESS.
func MCSEQuantile(x [][]float64, p float64) float64 {
	if !valid(x, 1) || !(p >= 0 && p <= 1) {
		return math.NaN()
	}
	return mcseQuantile(x, p, essQuantile(x, p))
}

// MCSEMedian is MCSEQuantile(x, 0.5).
func MCSEMedian(x [][]float64) float64 { return MCSEQuantile(x, 0.5) }

// mcseQuantile is MCSEQuantile given E = ESSQuantile(x, p).
func mcseQuantile(x [][]float64, p, e float64) float64 {
	if math.IsNaN(e) {
		return math.NaN()
	}
	lo, hi := quantileOrderStats(e, p, len(x)*len(x[0]))
	s := flatten(x)
	sort.Float64s(s)
	return (s[hi] - s[lo]) / 2
}

// quantileOrderStats returns the 0-based indices ⌊a₁S⌋ − 1 and ⌈a₂S⌉ − 1,
// clamped to 0 … S − 1, of the order statistics bracketing the p-quantile
// at ±1σ given its ESS e (see MCSEQuantile).
func quantileOrderStats(e, p float64, s int) (lo, hi int) {
	b := distuv.Beta{Alpha: e*p + 1, Beta: e*(1-p) + 1}
	a1, a2 := b.Quantile(0.1586553), b.Quantile(0.8413447)
	lo = max(int(math.Floor(a1*float64(s))), 1) - 1
	hi = min(int(math.Ceil(a2*float64(s))), s) - 1
	return lo, hi
}

// centredSquares returns (x − x̄)², x̄ the mean of all draws of x.
func centredSquares(x [][]float64) [][]float64 {
	mu := stat.Mean(flatten(x), nil)
	out := make([][]float64, len(x))
	for c, ch := range x {
		out[c] = make([]float64, len(ch))
		for n, v := range ch {
			out[c][n] = (v - mu) * (v - mu)
		}
	}
	return out
}

package diagnostics

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/stat"
)

// autocov returns the biased (1/N) autocovariances of x at lags 0…N−1,
// computed by FFT.
func autocov(x []float64) []float64 {
	n := len(x)
	mu := stat.Mean(x, nil)
	m := 1
	for m < 2*n {
		m <<= 1
	}
	seq := make([]float64, m)
	for i, v := range x {
		seq[i] = v - mu
	}
	fft := fourier.NewFFT(m)
	coef := fft.Coefficients(nil, seq)
	for i, c := range coef {
		coef[i] = complex(real(c)*real(c)+imag(c)*imag(c), 0)
	}
	back := fft.Sequence(nil, coef) // unnormalised: m × the autocorrelation sums
	out := make([]float64, n)
	for t := range out {
		out[t] = back[t] / float64(m) / float64(n)
	}
	return out
}

// Autocorrelation returns the autocorrelations of the chain x at lags
// 0…maxLag (fewer if x is shorter), from its biased (1/N) autocovariances
// as the ESS uses them; NaN if x does not vary.
func Autocorrelation(x []float64, maxLag int) []float64 {
	if len(x) == 0 || maxLag < 0 {
		return nil
	}
	c := autocov(x)
	out := make([]float64, min(maxLag+1, len(c)))
	for t := range out {
		out[t] = c[t] / c[0]
	}
	return out
}

// MinESSDraws is the fewest draws per chain from which an ESS is
// estimated: split chains (ess_bulk, ess_tail, ess_mean, …) of fewer
// than 2·MinESSDraws draws, and raw ones (ess_raw) of fewer than
// MinESSDraws, give NaN. Shorter, Geyer's sequence reads no lag beyond 1,
// τ̂ = 0 before its floor 1/log10(S), and ArviZ (and posterior, but at
// the shortest) report S·log10(S) for S draws in all whatever the draws:
// 3,083 for 128 near-constant chains of 8 draws (R-hat 23.6), three times
// the draws, with an MCSE a fifth of the true one (round 93 A1).
const MinESSDraws = 5

// ess is the effective sample size of y[M][N] with Geyer's initial positive
// and initial monotone sequences, as ArviZ's _ess. Two details follow
// ArviZ rather than posterior's .ess, and matter only for short or
// strongly autocorrelated chains: the positive sequence reads the pair of
// lags (2k, 2k+1) while 2k + 2 < N, where posterior stops at 2k + 3 < N
// (a different ESS when N is odd and the pair sums stay positive to the
// end). Chains of fewer than MinESSDraws draws give NaN (see there).
func ess(y [][]float64) float64 {
	m, n := len(y), len(y[0])
	if n < MinESSDraws {
		return math.NaN()
	}
	acov := make([][]float64, m)
	means := make([]float64, m)
	meanVar := 0.0
	for c, ch := range y {
		acov[c] = autocov(ch)
		means[c] = stat.Mean(ch, nil)
		meanVar += acov[c][0] / float64(m)
	}
	meanVar *= float64(n) / float64(n-1)
	varPlus := meanVar * float64(n-1) / float64(n)
	if m > 1 {
		varPlus += stat.Variance(means, nil)
	}
	if !(varPlus > 0) {
		return math.NaN()
	}
	rhoAt := func(t int) float64 {
		s := 0.0
		for c := range acov {
			s += acov[c][t]
		}
		return 1 - (meanVar-s/float64(m))/varPlus
	}
	rho := make([]float64, n)
	rhoEven, rhoOdd := 1.0, rhoAt(1)
	rho[0], rho[1] = rhoEven, rhoOdd
	t := 1
	for t < n-3 && rhoEven+rhoOdd > 0 {
		rhoEven, rhoOdd = rhoAt(t+1), rhoAt(t+2)
		if rhoEven+rhoOdd >= 0 {
			rho[t+1], rho[t+2] = rhoEven, rhoOdd
		}
		t += 2
	}
	maxT := t - 2
	if rhoEven > 0 {
		rho[maxT+1] = rhoEven
	}
	for t = 1; t <= maxT-2; t += 2 {
		if rho[t+1]+rho[t+2] > rho[t-1]+rho[t] {
			rho[t+1] = (rho[t-1] + rho[t]) / 2
			rho[t+2] = rho[t+1]
		}
	}
	total := float64(m * n)
	tau := -1.0
	for _, r := range rho[:maxT+1] {
		tau += 2 * r
	}
	if maxT+1 < n {
		tau += rho[maxT+1]
	}
	tau = math.Max(tau, 1/math.Log10(total))
	return total / tau
}

// ESS is the effective sample size of the raw chains, unsplit and on their
// own scale: ess_raw, ArviZ's method "identity" and posterior's
// ess_basic(x, split = FALSE).
func ESS(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	return ess(x)
}

// BulkESS is the ESS of the rank-normalised split chains.
func BulkESS(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	return ess(RankNormalize(Split(x)))
}

// TailESS is the smaller of ESSQuantile at 0.05 and 0.95: the ESS of the
// split indicators 1[x ≤ q₀.₀₅] and 1[x ≤ q₀.₉₅] (type-7 quantiles over all
// draws).
func TailESS(x [][]float64) float64 {
	if !valid(x, 1) {
		return math.NaN()
	}
	lo, hi := essQuantile(x, 0.05), essQuantile(x, 0.95)
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return math.NaN()
	}
	return math.Min(lo, hi)
}

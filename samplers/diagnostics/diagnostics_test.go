package diagnostics

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func normalChains(rng *rand.Rand, m, n int, mu func(c int) float64) [][]float64 {
	x := make([][]float64, m)
	for c := range x {
		x[c] = make([]float64, n)
		for i := range x[c] {
			x[c][i] = mu(c) + rng.NormFloat64()
		}
	}
	return x
}

func ar1(rng *rand.Rand, m, n int, rho float64) [][]float64 {
	x := make([][]float64, m)
	s := math.Sqrt(1 - rho*rho)
	for c := range x {
		x[c] = make([]float64, n)
		v := rng.NormFloat64() // stationary start
		for i := range x[c] {
			x[c][i] = v
			v = rho*v + s*rng.NormFloat64()
		}
	}
	return x
}

func TestAutocovMatchesDirectSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := ar1(rng, 1, 37, 0.7)[0]
	got := autocov(x)
	mu := 0.0
	for _, v := range x {
		mu += v / 37
	}
	for lag := 0; lag < 37; lag++ {
		want := 0.0
		for i := 0; i+lag < 37; i++ {
			want += (x[i] - mu) * (x[i+lag] - mu) / 37
		}
		if math.Abs(got[lag]-want) > 1e-12 {
			t.Fatalf("lag %d: FFT %v, direct %v", lag, got[lag], want)
		}
	}
}

func TestQuantileIsType7(t *testing.T) {
	v := []float64{4, 1, 3, 2}
	for _, c := range []struct{ p, want float64 }{{0.5, 2.5}, {0.05, 1.15}, {0.95, 3.85}, {0, 1}, {1, 4}} {
		if got := quantile(v, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestRankNormalizeTies(t *testing.T) {
	z := RankNormalize([][]float64{{1, 2, 2}, {3, 2, 0}})
	// Ranks: 0→1, 1→2, 2→(3+4+5)/3 = 4, 3→6; S = 6.
	if z[0][1] != z[0][2] || z[0][1] != z[1][1] {
		t.Errorf("tied values got different scores: %v", z)
	}
	// rank 4 of 6: Φ⁻¹((4 − 3/8)/6.25) = Φ⁻¹(0.58)
	if math.Abs(z[0][1]-0.2018934791418508) > 1e-9 {
		t.Errorf("score of rank 4 of 6 = %v, want Φ⁻¹(0.58) ≈ 0.20189", z[0][1])
	}
}

// For independent chains from one law, B/W of the 8 split chains is about
// χ²₇/7, whose 99.9% quantile is 3.5, so R-hat − 1 ≈ (B/W − 1)/(2N) stays
// below 2.5/(2·500) = 0.0025 with probability 0.999; the bound 1.01 leaves
// room for the fold (tail) R-hat as well.
func TestRHatNearOneForIndependentChains(t *testing.T) {
	x := normalChains(rand.New(rand.NewPCG(2, 2)), 4, 1000, func(int) float64 { return 0 })
	for name, r := range map[string]float64{"rank split": RHat(x), "classic": ClassicRHat(x)} {
		if !(r > 0.99 && r < 1.01) {
			t.Errorf("%s R-hat = %v for iid chains, want 1 ± 0.01", name, r)
		}
	}
}

// Ranks bound the rank-normalised R-hat: for chains split into two fully
// separated equal groups, the group means of the normal scores are ±0.798 and
// the within-group variance 1 − 0.637 = 0.363, so the bulk R-hat tends to
// √(1 + 0.637/0.363) ≈ 1.66, far above the 1.01 convergence threshold. The
// classic R-hat is unbounded (√(1 + 9/1) ≈ 3.2 here): that is why the paper's
// Table 2 can show values of 20–90.
func TestRHatLargeForChainsInDifferentModes(t *testing.T) {
	x := normalChains(rand.New(rand.NewPCG(3, 3)), 4, 500, func(c int) float64 { return 6 * float64(c%2) })
	if r := RHat(x); !(r > 1.5) {
		t.Errorf("rank R-hat = %v for chains stuck 6σ apart, want ≈ 1.66 (> 1.5)", r)
	}
	if r := ClassicRHat(x); !(r > 2) {
		t.Errorf("classic R-hat = %v for chains stuck 6σ apart, want > 2", r)
	}
	// A chain that drifts within itself is caught by splitting but not by
	// the classic R-hat when all chains drift alike.
	drift := make([][]float64, 4)
	rng := rand.New(rand.NewPCG(4, 4))
	for c := range drift {
		drift[c] = make([]float64, 400)
		for i := range drift[c] {
			drift[c][i] = float64(i)/40 + rng.NormFloat64()
		}
	}
	if r := RHat(drift); !(r > 1.5) {
		t.Errorf("rank split R-hat = %v on drifting chains, want > 1.5", r)
	}
	if r := ClassicRHat(drift); !(r < 1.05) {
		t.Errorf("classic R-hat = %v on identically drifting chains, want ≈ 1", r)
	}
}

// For iid draws the Geyer estimate of τ = 1 + 2Σρ̂ sums a few autocorrelations
// each with standard error 1/√S (S = 4,000 draws, 0.016), so τ̂ has a
// standard error of about 0.06; 20% is over three standard errors.
func TestESSOfIndependentDraws(t *testing.T) {
	x := normalChains(rand.New(rand.NewPCG(5, 5)), 4, 1000, func(int) float64 { return 0 })
	for name, e := range map[string]float64{"ESS": ESS(x), "bulk": BulkESS(x), "tail": TailESS(x)} {
		if r := e / 4000; !(r > 0.8 && r < 1.2) {
			t.Errorf("%s = %v for 4,000 iid draws, want 4,000 ± 20%%", name, e)
		}
	}
}

// AR(1) with ρ = 0.95 has τ = (1+ρ)/(1−ρ) = 39. Sokal's approximation of the
// variance of τ̂ with a window of about 5τ, 2(2·195+1)/S with S = 200,000
// draws, gives a relative standard error of 6%; the bound 20% is over three.
func TestESSOfAR1(t *testing.T) {
	x := ar1(rand.New(rand.NewPCG(6, 6)), 4, 50000, 0.95)
	want := 200000.0 / 39
	for name, e := range map[string]float64{"ESS": ESS(x), "bulk": BulkESS(x)} {
		if r := e / want; !(r > 0.8 && r < 1.2) {
			t.Errorf("%s = %.0f for AR(1) ρ = 0.95, closed form %.0f (ratio %.3f)", name, e, want, r)
		}
	}
	if e := TailESS(x); !(e < 0.2*200000) {
		t.Errorf("tail ESS = %.0f, want ≪ 200,000 draws", e)
	}
}

func TestUndefinedCasesAreNaN(t *testing.T) {
	good := normalChains(rand.New(rand.NewPCG(7, 7)), 3, 10, func(int) float64 { return 0 })
	withNaN := normalChains(rand.New(rand.NewPCG(7, 7)), 3, 10, func(int) float64 { return 0 })
	withNaN[1][4] = math.NaN()
	withInf := normalChains(rand.New(rand.NewPCG(7, 7)), 3, 10, func(int) float64 { return 0 })
	withInf[2][0] = math.Inf(1)
	constant := [][]float64{{1, 1, 1, 1}, {1, 1, 1, 1}}
	cases := map[string][][]float64{
		"NaN draw":   withNaN,
		"Inf draw":   withInf,
		"3 draws":    {good[0][:3], good[1][:3]},
		"ragged":     {good[0], good[1][:9]},
		"constant":   constant,
		"no chains":  nil,
		"one chain*": {good[0]},
	}
	for name, x := range cases {
		fns := map[string]func([][]float64) float64{"RHat": RHat, "ClassicRHat": ClassicRHat, "ESS": ESS, "BulkESS": BulkESS, "TailESS": TailESS}
		for fname, f := range fns {
			if name == "one chain*" && fname != "ClassicRHat" {
				continue // ESS and split R-hat (its halves) are defined for one chain
			}
			if v := f(x); !math.IsNaN(v) {
				t.Errorf("%s of %s = %v, want NaN", fname, name, v)
			}
		}
	}
	if v := RHat(good); math.IsNaN(v) {
		t.Error("R-hat of valid chains is NaN")
	}
	// Round 130 A5: one chain's split R-hat compares its halves, as
	// posterior's and ArviZ's do (it was NaN, and diagnose refused one
	// chain); a chain whose halves differ gets a large one.
	if v := RHat(good[:1]); math.IsNaN(v) || v > 1.5 {
		t.Errorf("R-hat of one well-mixed chain = %v, want its halves' (≈ 1)", v)
	}
	trend := make([]float64, 40)
	for i := range trend {
		trend[i] = float64(i) + good[0][i%10]
	}
	if v := RHat([][]float64{trend}); !(v > 2) {
		t.Errorf("R-hat of one trending chain = %v, want > 2 (its halves differ)", v)
	}
}

func TestModeWeights(t *testing.T) {
	x := mat.NewDense(5, 2, []float64{-1, -1, 1, 1, 0.9, 1.2, -0.2, 0.1, 3, 3})
	w := ModeWeights(x, [][]float64{{-1, -1}, {1, 1}})
	// (−0.2, 0.1) is nearer (−1,−1)? distances √(0.64+1.21)=1.36 and √(1.44+0.81)=1.5: yes.
	if w[0] != 0.4 || w[1] != 0.6 {
		t.Errorf("weights %v, want [0.4 0.6]", w)
	}
	if e := WeightMSE([]float64{0.4, 0.6}, []float64{1.0 / 3, 2.0 / 3}); math.Abs(e-(1.0/15)*(1.0/15)) > 1e-15 {
		t.Errorf("MSE %v, want (1/15)²", e)
	}
}

// BulkRHat sees chains apart in location (as RHat does) but not chains
// that agree on it and differ in spread, which RHat's folded part sees
// (chains of ±r each, r differing by chain: HMC's draws flipping across
// a mode at half a period).
func TestBulkRHatSeesLocationNotSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(135, 1))
	apart := normalChains(rng, 4, 200, func(c int) float64 { return 3 * float64(c) })
	if b := BulkRHat(apart); !(b > 1.5) {
		t.Errorf("chains apart: bulk R-hat %v, want > 1.5", b)
	}
	flip := make([][]float64, 4)
	for c := range flip {
		flip[c] = make([]float64, 200)
		for i := range flip[c] {
			flip[c][i] = float64(1-2*(i%2)) * (0.5 + float64(c)) * (1 + 0.01*rng.NormFloat64())
		}
	}
	if b, r := BulkRHat(flip), RHat(flip); b > 1.05 || !(r > 1.5) {
		t.Errorf("chains flipping at their own radius: bulk R-hat %v (want ≈ 1), R-hat %v (want > 1.5)", b, r)
	}
}

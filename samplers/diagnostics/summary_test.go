package diagnostics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// interleave lays out per-dimension chains x[d][c][n] as chains × draws × dims.
func interleave(x [][][]float64) []float64 {
	dims, chains, draws := len(x), len(x[0]), len(x[0][0])
	out := make([]float64, 0, dims*chains*draws)
	for c := 0; c < chains; c++ {
		for n := 0; n < draws; n++ {
			for d := 0; d < dims; d++ {
				out = append(out, x[d][c][n])
			}
		}
	}
	return out
}

func TestSummarizeMatchesPerDimensionDiagnostics(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	dimChains := [][][]float64{
		normalChains(rng, 4, 300, func(int) float64 { return 2 }),
		ar1(rng, 4, 300, 0.9),
		normalChains(rng, 4, 300, func(c int) float64 { return 5 * float64(c%2) }),
	}
	got, err := Summarize(interleave(dimChains), 4, 300, 3)
	if err != nil {
		t.Fatal(err)
	}
	for d, x := range dimChains {
		var all []float64
		for _, c := range x {
			all = append(all, c...)
		}
		mean, sd := 0.0, 0.0
		for _, v := range all {
			mean += v
		}
		mean /= float64(len(all))
		for _, v := range all {
			sd += (v - mean) * (v - mean)
		}
		sd = math.Sqrt(sd / float64(len(all)-1))
		want := Summary{Dim: d, RHat: RHat(x), RHatClassic: ClassicRHat(x), ESSBulk: BulkESS(x), ESSTail: TailESS(x), Mean: mean, SD: sd}
		g := got[d]
		// Summarize computes from centred draws: round-off apart (1e-12
		// relative), the same numbers.
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
		if g.Dim != d || !near(g.RHat, want.RHat) || !near(g.RHatClassic, want.RHatClassic) || !near(g.ESSBulk, want.ESSBulk) ||
			!near(g.ESSTail, want.ESSTail) || !near(g.Mean, want.Mean) || !near(g.SD, want.SD) {
			t.Errorf("dim %d: %+v, want %+v", d, g, want)
		}
	}
	if got[2].RHat < 1.5 || got[0].RHat > 1.02 {
		t.Errorf("R-hat %v for the mixed-up dimension and %v for the iid one", got[2].RHat, got[0].RHat)
	}
}

func TestSummarizeErrors(t *testing.T) {
	ok := make([]float64, 2*4*1)
	nan := append([]float64(nil), ok...)
	nan[5] = math.NaN()
	cases := []struct {
		data                []float64
		chains, draws, dims int
		msg                 string
	}{
		{nil, 0, 4, 1, "no chains, need at least 1"},
		{ok[:3], 1, 3, 1, "3 draws per chain, need at least 4"},
		{ok[:6], 2, 3, 1, "3 draws per chain, need at least 4"},
		{ok[:7], 2, 4, 1, "7 values for 2 chains × 4 draws × 1 dims"},
		{nan, 2, 4, 1, "non-finite value NaN at chain 1, draw 1, dim 0"},
	}
	for _, c := range cases {
		_, err := Summarize(c.data, c.chains, c.draws, c.dims)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Summarize(%d×%d×%d): error %v, want %q", c.chains, c.draws, c.dims, err, c.msg)
		}
	}
}

// Four chains of an AR(1) process with ρ = 0.9: the chains agree (R-hat
// near 1) but carry about (1 − ρ)/(1 + ρ) ≈ 5% of their 8,000 draws' worth of
// information (ESS ≈ 420), and R-hat is within its sampling noise of 1.
func ExampleSummarize() {
	rng := rand.New(rand.NewPCG(1, 2))
	const chains, draws = 4, 2000
	data := make([]float64, 0, chains*draws)
	for c := 0; c < chains; c++ {
		v := rng.NormFloat64()
		for n := 0; n < draws; n++ {
			data = append(data, v)
			v = 0.9*v + math.Sqrt(1-0.81)*rng.NormFloat64()
		}
	}
	s, err := Summarize(data, chains, draws, 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("R-hat %.2f, bulk ESS %.0f of %d draws\n", s[0].RHat, s[0].ESSBulk, chains*draws)
	// Output:
	// R-hat 1.02, bulk ESS 382 of 8000 draws
}

// The mean and standard deviation of finite draws near ±1e308 are finite:
// their plain sum overflowed and diagnose printed "mean": null.
func TestSummaryOfHugeDraws(t *testing.T) {
	const chains, draws = 2, 50
	for _, size := range []float64{1e308, 2e-320} { // overflowing sums, underflowing squares
		for _, sign := range []int{0, 1} { // one sign (the sum overflows), alternating (the squares do)
			data := make([]float64, chains*draws)
			for i := range data {
				data[i] = size * float64(1-2*(i%2*sign)) * (0.5 + 0.01*float64(i%7))
			}
			checkHugeSummary(t, data, chains, draws)
		}
	}
}

// checkHugeSummary checks the mean and sd of data against sums scaled by
// its largest magnitude, to 1e-12 relative, or 1e-2 for subnormal draws
// (they hold about 12 significant bits at 2e-320).
func checkHugeSummary(t *testing.T, data []float64, chains, draws int) {
	t.Helper()
	s, err := Summarize(data, chains, draws, 1)
	if err != nil {
		t.Fatal(err)
	}
	scale := 0.0
	for _, v := range data {
		scale = math.Max(scale, math.Abs(v))
	}
	mean, sd := 0.0, 0.0
	for _, v := range data {
		mean += v / scale / float64(len(data))
	}
	for _, v := range data {
		sd += (v/scale - mean) * (v/scale - mean)
	}
	mean, sd = scale*mean, scale*math.Sqrt(sd/float64(len(data)-1))
	tol := 1e-12
	if scale < 1e-300 {
		tol = 1e-2
	}
	if math.IsInf(s[0].Mean, 0) || math.IsNaN(s[0].Mean) || math.Abs(s[0].Mean-mean) > tol*sd || math.Abs(s[0].SD-sd) > tol*sd {
		t.Errorf("mean %v, sd %v; want %v, %v", s[0].Mean, s[0].SD, mean, sd)
	}
	// R-hat and ESS do not depend on the scale: those of the draws
	// divided by their largest magnitude.
	scaled := make([]float64, len(data))
	for i, v := range data {
		scaled[i] = v / scale
	}
	ref, err := Summarize(scaled, chains, draws, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(s[0].RHat) || math.Abs(s[0].RHat-ref[0].RHat) > 1e-9 || math.Abs(s[0].RHatClassic-ref[0].RHatClassic) > 1e-9 || math.Abs(s[0].ESSBulk-ref[0].ESSBulk) > 1e-6 {
		t.Errorf("R-hat %v, classic %v, bulk ESS %v; scaled draws give %v, %v, %v", s[0].RHat, s[0].RHatClassic, s[0].ESSBulk, ref[0].RHat, ref[0].RHatClassic, ref[0].ESSBulk)
	}
}

// Chains each constant but apart have not mixed at all: R-hat is +Inf, as
// ArviZ gives (it was NaN, which diagnose called "every draw equal").
func TestRHatOfConstantChainsApart(t *testing.T) {
	x := [][]float64{{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}}
	if r := ClassicRHat(x); !math.IsInf(r, 1) {
		t.Errorf("classic R-hat %v, want +Inf", r)
	}
	if r := RHat(x); !math.IsInf(r, 1) {
		t.Errorf("rank-normalised R-hat %v, want +Inf", r)
	}
	if r := RHat([][]float64{{1, 1, 1, 1}, {1, 1, 1, 1}}); !math.IsNaN(r) {
		t.Errorf("all equal: R-hat %v, want NaN", r)
	}
}

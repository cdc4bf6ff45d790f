package diagnostics

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// AR(1) with ρ = 0.9 has τ = (1+ρ)/(1−ρ) = 19 for the mean, and its square
// (a Gaussian AR(1) has corr(x²ₜ, x²ₜ₊ₖ) = ρ²ᵏ) τ = (1+ρ²)/(1−ρ²) ≈ 9.53 for
// the SD. Sokal's variance of τ̂ with a window of about 5τ, 2(2·5τ+1)/S with
// S = 200,000, gives relative standard errors of 4% and 3%; 15% is over
// three of them.
func TestESSMeanAndSDOfAR1(t *testing.T) {
	const rho, s = 0.9, 200000.0
	x := ar1(rand.New(rand.NewPCG(8, 8)), 4, 50000, rho)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"ESSMean", ESSMean(x), s * (1 - rho) / (1 + rho)},
		{"ESSSD", ESSSD(x), s * (1 - rho*rho) / (1 + rho*rho)},
	} {
		if r := c.got / c.want; !(r > 0.85 && r < 1.15) {
			t.Errorf("%s = %.0f for AR(1) ρ = %g, closed form %.0f (ratio %.3f)", c.name, c.got, rho, c.want, r)
		}
	}
}

// For S = 4,000 iid N(0, 1) draws the standard errors of the mean, the SD
// and the median are 1/√S, 1/√(2S) and √(π/2)/√S. The MCSEs estimate them
// through ESS estimates (relative noise about 3%, halved by the square
// root) and, for the median, order statistics about 60 draws apart (a few
// per cent more): 15% bounds are wide of both.
func TestMCSEOfIndependentDraws(t *testing.T) {
	x := normalChains(rand.New(rand.NewPCG(9, 9)), 4, 1000, func(int) float64 { return 0 })
	s := 4000.0
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"MCSEMean", MCSEMean(x), 1 / math.Sqrt(s)},
		{"MCSESD", MCSESD(x), 1 / math.Sqrt(2*s)},
		{"MCSEMedian", MCSEMedian(x), math.Sqrt(math.Pi/2) / math.Sqrt(s)},
		{"MCSEQuantile(0.5)", MCSEQuantile(x, 0.5), math.Sqrt(math.Pi/2) / math.Sqrt(s)},
	} {
		if r := c.got / c.want; !(r > 0.85 && r < 1.15) {
			t.Errorf("%s = %.5f for 4,000 iid N(0,1) draws, want %.5f (ratio %.3f)", c.name, c.got, c.want, r)
		}
	}
	if ESSMedian(x) != ESSQuantile(x, 0.5) || MCSEMedian(x) != MCSEQuantile(x, 0.5) {
		t.Error("median diagnostics differ from the 0.5-quantile ones")
	}
}

func TestNewDiagnosticsUndefined(t *testing.T) {
	good := normalChains(rand.New(rand.NewPCG(7, 7)), 3, 10, func(int) float64 { return 0 })
	withNaN := normalChains(rand.New(rand.NewPCG(7, 7)), 3, 10, func(int) float64 { return 0 })
	withNaN[1][4] = math.NaN()
	cases := map[string][][]float64{
		"NaN draw":  withNaN,
		"3 draws":   {good[0][:3], good[1][:3]},
		"ragged":    {good[0], good[1][:9]},
		"constant":  {{2, 2, 2, 2}, {2, 2, 2, 2}},
		"no chains": nil,
	}
	fns := map[string]func([][]float64) float64{
		"ESSMean": ESSMean, "ESSSD": ESSSD, "ESSMedian": ESSMedian,
		"MCSEMean": MCSEMean, "MCSESD": MCSESD, "MCSEMedian": MCSEMedian,
		"ESSQuantile(0.9)":  func(x [][]float64) float64 { return ESSQuantile(x, 0.9) },
		"MCSEQuantile(0.1)": func(x [][]float64) float64 { return MCSEQuantile(x, 0.1) },
	}
	for name, x := range cases {
		for fname, f := range fns {
			if v := f(x); !math.IsNaN(v) {
				t.Errorf("%s of %s = %v, want NaN", fname, name, v)
			}
		}
	}
	for _, p := range []float64{-0.1, 1.1, math.NaN()} {
		if v := ESSQuantile(good, p); !math.IsNaN(v) {
			t.Errorf("ESSQuantile(p = %v) = %v, want NaN", p, v)
		}
		if v := MCSEQuantile(good, p); !math.IsNaN(v) {
			t.Errorf("MCSEQuantile(p = %v) = %v, want NaN", p, v)
		}
	}
	for fname, f := range fns {
		if v := f([][]float64{good[0]}); math.IsNaN(v) {
			t.Errorf("%s of one chain is NaN", fname)
		}
	}
}

// With one chain per superchain, R̂ν² = 1 + var(chain means)/W while the
// classic R̂² = (N−1)/N + var(chain means)/W: they differ by exactly 1/N
// (the paper's footnote on R̂ν ≥ 1).
func TestNestedRHatWithOneChainPerSuperchain(t *testing.T) {
	x := ar1(rand.New(rand.NewPCG(10, 10)), 6, 40, 0.5)
	nu, classic := NestedRHat(x, 6), ClassicRHat(x)
	if d := nu*nu - classic*classic; math.Abs(d-1.0/40) > 1e-12 {
		t.Errorf("R̂ν² − R̂² = %v, want 1/N = %v", d, 1.0/40)
	}
}

// Many short chains: 16 superchains of 32 AR(1) chains (ρ = 0.5, τ = 3) of
// 10 draws. Started at the target, R̂ν² − 1 is about τ/(MN)·χ²₁₅/15, mean
// 3/320 ≈ 0.009 and 99.9% quantile 0.024: R̂ν < 1.015. Superchains shifted
// alternately by 0 and 3 have B̂ν ≈ 2.4 and Ŵν ≈ 1: R̂ν ≈ 1.8.
func TestNestedRHatSeparatesStarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	const k, m, n = 16, 32, 10
	mixed := ar1(rng, k*m, n, 0.5)
	stuck := ar1(rng, k*m, n, 0.5)
	for c := range stuck {
		for i := range stuck[c] {
			stuck[c][i] += 3 * float64((c/m)%2)
		}
	}
	if r := NestedRHat(mixed, k); !(r >= 1 && r < 1.015) {
		t.Errorf("nested R-hat %v for chains started at the target, want in [1, 1.015)", r)
	}
	if r := NestedRHat(stuck, k); !(r > 1.5) {
		t.Errorf("nested R-hat %v for superchains 3σ apart, want > 1.5", r)
	}
}

func TestNestedRHatUndefined(t *testing.T) {
	x := normalChains(rand.New(rand.NewPCG(12, 12)), 8, 5, func(int) float64 { return 0 })
	withInf := normalChains(rand.New(rand.NewPCG(12, 12)), 8, 5, func(int) float64 { return 0 })
	withInf[3][2] = math.Inf(-1)
	single := [][]float64{{1}, {2}, {3}, {4}}
	for _, c := range []struct {
		name string
		x    [][]float64
		k    int
	}{
		{"1 superchain", x, 1},
		{"0 superchains", x, 0},
		{"8 chains in 3", x, 3},
		{"Inf draw", withInf, 4},
		{"ragged", [][]float64{x[0], x[1][:4]}, 2},
		{"empty chains", [][]float64{{}, {}}, 2},
		{"no chains", nil, 2},
		{"M = N = 1", single, 4},
		{"all equal", [][]float64{{1, 1}, {1, 1}}, 2},
	} {
		if v := NestedRHat(c.x, c.k); !math.IsNaN(v) {
			t.Errorf("%s: nested R-hat %v, want NaN", c.name, v)
		}
	}
	if v := NestedRHat(single, 2); math.IsNaN(v) {
		t.Error("single-draw chains, 2 per superchain: NaN")
	}
	if v := NestedRHat([][]float64{{1, 1}, {1, 1}, {2, 2}, {2, 2}}, 2); !math.IsInf(v, 1) {
		t.Errorf("constant chains, superchains apart: %v, want +Inf", v)
	}
}

func TestSummarizeEfficiencyFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	dimChains := [][][]float64{ar1(rng, 4, 301, 0.8), normalChains(rng, 4, 301, func(c int) float64 { return float64(c) })}
	got, err := Summarize(interleave(dimChains), 4, 301, 2)
	if err != nil {
		t.Fatal(err)
	}
	for d, x := range dimChains {
		g := got[d]
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"ESSMean", g.ESSMean, ESSMean(x)}, {"ESSSD", g.ESSSD, ESSSD(x)}, {"ESSMedian", g.ESSMedian, ESSMedian(x)},
			{"ESSRaw", g.ESSRaw, ESS(x)}, {"MCSEMean", g.MCSEMean, MCSEMean(x)}, {"MCSESD", g.MCSESD, MCSESD(x)},
			{"MCSEMedian", g.MCSEMedian, MCSEMedian(x)},
		} {
			if !(math.Abs(c.got-c.want) <= 1e-12*math.Abs(c.want)) { // Summarize centres the draws first: round-off apart
				t.Errorf("dim %d: %s %v, function gives %v", d, c.name, c.got, c.want)
			}
		}
	}
	var short, long []map[string]any
	b, _ := json.Marshal(got)
	if err := json.Unmarshal(b, &short); err != nil || len(short[0]) != 7 {
		t.Errorf("Summary JSON %s: want its 7 keys (err %v)", b, err)
	}
	detailed := []Detailed{Detailed(got[0]), Detailed(got[1])}
	b, _ = json.Marshal(detailed)
	if err := json.Unmarshal(b, &long); err != nil || len(long[0]) != 14 {
		t.Fatalf("Detailed JSON %s: want 14 keys (err %v)", b, err)
	}
	for _, k := range []string{"ess_mean", "ess_sd", "ess_median", "ess_raw", "mcse_mean", "mcse_sd", "mcse_median"} {
		if long[1][k] == nil {
			t.Errorf("Detailed JSON lacks %q: %v", k, long[1])
		}
	}
	if long[1]["mcse_sd"] != got[1].MCSESD {
		t.Errorf("mcse_sd %v in JSON, %v in the Summary", long[1]["mcse_sd"], got[1].MCSESD)
	}
}

// Summarize divides draws beyond 1e±150 by their largest magnitude for
// R-hat and ESS; the MCSEs, in the draws' units, are multiplied back.
func TestSummarizeMCSEOfHugeDraws(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	data := make([]float64, 2*50)
	for i := range data {
		data[i] = rng.NormFloat64()
	}
	ref, err := Summarize(data, 2, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, scale := range []float64{1e300, 1e-300} {
		big := make([]float64, len(data))
		for i, v := range data {
			big[i] = v * scale
		}
		s, err := Summarize(big, 2, 50, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range [][2]float64{{s[0].MCSEMean, ref[0].MCSEMean}, {s[0].MCSESD, ref[0].MCSESD}, {s[0].MCSEMedian, ref[0].MCSEMedian}} {
			if relDiff(c[0]/scale, c[1]) > 1e-9 {
				t.Errorf("scale %g: MCSE %v, want %v × scale", scale, c[0], c[1])
			}
		}
		if relDiff(s[0].ESSSD, ref[0].ESSSD) > 1e-9 || relDiff(s[0].ESSMean, ref[0].ESSMean) > 1e-9 {
			t.Errorf("scale %g: ESS mean %v, sd %v; unscaled %v, %v", scale, s[0].ESSMean, s[0].ESSSD, ref[0].ESSMean, ref[0].ESSSD)
		}
	}
}

// Many short chains: 8 superchains of 64 AR(1) chains (ρ = 0.5), the
// chains of a superchain started together from a point drawn with spread
// 10, each keeping 20 draws after a warmup. Without warmup the starts
// stay in the draws and nested R-hat flags them; after 30 steps they are
// forgotten (0.5³⁰ ≈ 1e-9) and it is within the paper's 1.01 threshold.
func ExampleNestedRHat() {
	rng := rand.New(rand.NewPCG(3, 4))
	const k, m, n, rho = 8, 64, 20, 0.5
	run := func(warmup int) [][]float64 {
		x := make([][]float64, k*m)
		for s := 0; s < k; s++ {
			start := 10 * rng.NormFloat64()
			for c := s * m; c < (s+1)*m; c++ {
				x[c] = make([]float64, n)
				v := start
				for i := -warmup; i < n; i++ {
					v = rho*v + math.Sqrt(1-rho*rho)*rng.NormFloat64()
					if i >= 0 {
						x[c][i] = v
					}
				}
			}
		}
		return x
	}
	fmt.Printf("no warmup: nested R-hat %.3f\n", NestedRHat(run(0), k))
	fmt.Printf("warmup 30: nested R-hat %.3f\n", NestedRHat(run(30), k))
	// Output:
	// no warmup: nested R-hat 1.061
	// warmup 30: nested R-hat 1.002
}

// Probe 50: draws near 1e-160 have subnormal squares, which hold fewer
// digits; their sd was off by 1.2e-4 (NumPy's is exact to round-off). The
// mean and sd of the draws times 1e-160 are those of the draws times
// 1e-160, to 1e-12.
func TestSummarizeSDWithSubnormalSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 160))
	data := make([]float64, 4*100)
	for i := range data {
		data[i] = rng.NormFloat64()
	}
	ref, err := Summarize(data, 4, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, scale := range []float64{1e-160, 1e-154, 1e155} {
		small := make([]float64, len(data))
		for i, v := range data {
			small[i] = v * scale
		}
		s, err := Summarize(small, 4, 100, 1)
		if err != nil {
			t.Fatal(err)
		}
		if relDiff(s[0].SD/scale, ref[0].SD) > 1e-12 || relDiff(s[0].Mean/scale, ref[0].Mean) > 1e-12 {
			t.Errorf("scale %g: mean %v, sd %v; want %v, %v × scale", scale, s[0].Mean, s[0].SD, ref[0].Mean, ref[0].SD)
		}
	}
}

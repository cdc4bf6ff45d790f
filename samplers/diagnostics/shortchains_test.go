package diagnostics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Round 93 A1: chains of 4 to 9 draws got an ESS of S·log10(S) for S draws
// in all whatever their values (Geyer's sequence reads no lag beyond 1):
// 3,083 for 128 near-constant chains of 8 draws whose R-hat is 23.6. Split
// chains of fewer than 2·MinESSDraws draws (raw ones of fewer than
// MinESSDraws) have no ESS; from there on it is estimated.
func TestESSOfShortChainsUndefined(t *testing.T) {
	rng := rand.New(rand.NewPCG(93, 1))
	walk := func(draws int) [][]float64 {
		x := make([][]float64, 128)
		for c := range x {
			v := rng.NormFloat64()
			x[c] = make([]float64, draws)
			for n := range x[c] {
				v += 0.01 * rng.NormFloat64()
				x[c][n] = v
			}
		}
		return x
	}
	for draws := 4; draws < 2*MinESSDraws; draws++ {
		x := walk(draws)
		for name, v := range map[string]float64{"bulk": BulkESS(x), "tail": TailESS(x), "mean": ESSMean(x), "sd": ESSSD(x)} {
			if !math.IsNaN(v) {
				t.Errorf("%d draws: %s ESS %v, want NaN", draws, name, v)
			}
		}
		if raw := ESS(x); (draws < MinESSDraws) != math.IsNaN(raw) {
			t.Errorf("%d draws: raw ESS %v", draws, raw)
		}
	}
	x := walk(2 * MinESSDraws)
	if b := BulkESS(x); !(b > 0 && b < float64(128*2*MinESSDraws)) { // estimated, fewer than the draws (near-constant chains apart)
		t.Errorf("%d draws: bulk ESS %v", 2*MinESSDraws, b)
	}
}

// Zone weights among chains of a sticky two-state chain (stay 0.9,
// weight 0.3, started from the weight), over 400 replications each:
//   - 128 chains of 8 draws (train's R-hat chains): the ±1.96 MCSE
//     intervals cover 0.3 in 95% ± 3.3% (3 binomial standard deviations
//     of the coverage, 1.1%). With the capped ESS (S·log10 S = 3,083 for
//     1,024 draws), they covered it in 37% (round 93 A1).
//   - 16 chains of 10 draws: the chains' means give a t interval of 15
//     degrees of freedom read at 1.96, of coverage 93.1%: 93.1% ± 3.8%.
//     With the split-chain ESS alone, 79% (round 94 A1).
func TestShortChainZoneIntervalsCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(93, 2))
	for _, c := range []struct {
		chains, draws int
		want, tol     float64
	}{{128, 8, 0.95, 0.033}, {16, 10, 0.931, 0.038}} {
		const reps = 400
		cover := 0.0
		for range reps {
			zones := make([][]int, c.chains)
			for k := range zones {
				z := bern(rng, 0.3)
				zones[k] = make([]int, c.draws)
				for n := range zones[k] {
					if n > 0 && rng.Float64() >= 0.9 {
						z = bern(rng, 0.3)
					}
					zones[k][n] = z
				}
			}
			w := ZoneWeights(zones, 2)[0]
			if w.Lo <= 0.3 && 0.3 <= w.Hi {
				cover++
			}
			if !(w.ESS < float64(c.chains*c.draws)) {
				t.Fatalf("%d × %d: ESS %v of %d sticky draws", c.chains, c.draws, w.ESS, c.chains*c.draws)
			}
		}
		t.Logf("%d × %d: coverage %.3f", c.chains, c.draws, cover/reps)
		if cv := cover / reps; math.Abs(cv-c.want) > c.tol {
			t.Errorf("%d × %d: coverage %.3f, want %.3f ± %.3f", c.chains, c.draws, cv, c.want, c.tol)
		}
	}
}

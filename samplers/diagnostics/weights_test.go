package diagnostics

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Mode weights with error bars: over 200 replications of iid draws from
// two zones with weight 0.3, the ±1.96 MCSE intervals of chains (ESS of the
// indicator) and of importance-weighted draws (delta method) cover 0.3 in
// 95% ± 4% of the replications (the binomial spread of the coverage over
// 200 replications is 1.5%); autocorrelated chains (sticky switching)
// keep that coverage because their ESS is smaller.
func TestModeWeightIntervalsCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	means := [][]float64{{-1}, {1}}
	const reps, chains, draws = 200, 4, 250
	var coverIID, coverSticky, coverIS float64
	for r := 0; r < reps; r++ {
		iid, sticky := make([]float64, chains*draws), make([]float64, chains*draws)
		for c := 0; c < chains; c++ {
			state := -1.0
			if rng.Float64() >= 0.3 {
				state = 1
			}
			for n := 0; n < draws; n++ {
				iid[c*draws+n] = 1
				if rng.Float64() < 0.3 {
					iid[c*draws+n] = -1
				}
				if rng.Float64() < 0.1 { // redraw the zone with probability 0.1
					state = 1
					if rng.Float64() < 0.3 {
						state = -1
					}
				}
				sticky[c*draws+n] = state
			}
		}
		if w := ChainModeWeights(iid, chains, draws, 1, means)[0]; w.Lo <= 0.3 && 0.3 <= w.Hi {
			coverIID++
		}
		if w := ChainModeWeights(sticky, chains, draws, 1, means)[0]; w.Lo <= 0.3 && 0.3 <= w.Hi {
			coverSticky++
		}
		// Draws from N(0, 2²), weighted to the mixture 0.3 N(−1, 0.5²) + 0.7 N(1, 0.5²):
		// the zone x < 0 has weight 0.3·Φ(2) + 0.7·Φ(−2) = 0.30910.
		x := mat.NewDense(1000, 1, nil)
		lw := make([]float64, 1000)
		for i := range lw {
			v := 2 * rng.NormFloat64()
			x.Set(i, 0, v)
			p := 0.3*math.Exp(-(v+1)*(v+1)/0.5) + 0.7*math.Exp(-(v-1)*(v-1)/0.5)
			lw[i] = math.Log(p) + v*v/8
		}
		if w := WeightedModeWeights(x, lw, means)[0]; w.Lo <= 0.30910 && 0.30910 <= w.Hi {
			coverIS++
		}
	}
	for name, c := range map[string]float64{"iid chains": coverIID, "sticky chains": coverSticky, "importance sampling": coverIS} {
		cov := c / reps
		if math.Abs(cov-0.95) > 0.04 {
			t.Errorf("%s: 95%% intervals cover the weight in %.3f of replications", name, cov)
		}
		t.Logf("%s: coverage %.3f", name, cov)
	}
	w := ChainModeWeights([]float64{1, 1, 1, 1, 1, 1, 1, 1}, 2, 4, 1, means)
	if w[0].Weight != 0 || !math.IsNaN(w[0].MCSE) {
		t.Errorf("an unvisited zone: %+v, want weight 0 and MCSE NaN", w[0])
	}
}

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

// BatchWeights' intervals cover too: over 200 replications of 50 batches
// of 64 draws (the negatives of one evaluation window), with batches iid
// and with batches from sticky persistent chains (each chain keeps its
// zone with probability 0.5 from one batch to the next: integrated
// autocorrelation time 3 batches). iid batches: the ±1.96 MCSE intervals
// cover the true weight 0.3 in 95% ± 5% of the replications (binomial
// spread of the coverage over 200 replications 1.5%). Correlated batches:
// the ESS estimated from 50 correlated batches is too large often enough
// that coverage drops (measured 89%), as BatchWeights documents; the test
// holds it to at least 85%. Where the correlation time nears the window's
// length the interval is too narrow (probability 0.9, time 19 batches:
// 76%).
func TestBatchWeightIntervalsCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const reps, batches, size = 200, 50, 64
	for _, c := range []struct{ stick, floor float64 }{{0, 0.90}, {0.5, 0.85}} {
		stick := c.stick
		cover := 0.0
		for r := 0; r < reps; r++ {
			zone := make([]int, size)
			for i := range zone {
				zone[i] = bern(rng, 0.3)
			}
			fracs := make([][]float64, batches)
			for b := range fracs {
				for i := range zone {
					if rng.Float64() >= stick {
						zone[i] = bern(rng, 0.3)
					}
				}
				fracs[b] = make([]float64, 2)
				for _, z := range zone {
					fracs[b][z] += 1.0 / size
				}
			}
			w := BatchWeights(fracs, 2)
			if math.Abs(w[0].Weight+w[1].Weight-1) > 1e-12 {
				t.Fatalf("weights %v do not sum to 1", w)
			}
			if w[0].Lo <= 0.3 && 0.3 <= w[0].Hi {
				cover++
			}
		}
		t.Logf("stick %.1f: coverage %.3f", stick, cover/reps)
		if cv := cover / reps; cv < c.floor || cv > 1 {
			t.Errorf("stick %.1f: coverage %.3f, want at least %.2f", stick, cv, c.floor)
		}
	}
	short := BatchWeights([][]float64{{0.5, 0.5}, {0.25, 0.75}}, 2)
	if short[0].Weight != 0.375 || !math.IsNaN(short[0].MCSE) {
		t.Errorf("2 batches: %+v, want weight 0.375 without an MCSE", short[0])
	}
	same := BatchWeights([][]float64{{1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}}, 2)
	if same[0].Weight != 1 || same[0].MCSE != 0 || same[1].Hi != 0 {
		t.Errorf("identical batches: %+v, want weights 1 and 0 with MCSE 0", same)
	}
}

func bern(rng *rand.Rand, p float64) int {
	if rng.Float64() < p {
		return 0
	}
	return 1
}

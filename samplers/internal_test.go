package samplers

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Hand computation for π = N(0,1) (log π = −x²/2, ∇ = −x), x = 1, y = 0.5,
// η = 0.1: log q(x|y) = −(1 − 0.5 + 0.05)²/0.4 = −0.75625,
// log q(y|x) = −(0.5 − 1 + 0.1)²/0.4 = −0.4, log π(y) − log π(x) = 0.375,
// so log α = 0.375 − 0.75625 + 0.4 = 0.01875.
func TestMALALogAlphaByHand(t *testing.T) {
	got := malaLogAlpha([]float64{1}, []float64{0.5}, []float64{-1}, []float64{-0.5}, -0.5, -0.125, 0.1)
	if math.Abs(got-0.01875) > 1e-15 {
		t.Errorf("log α = %v, want 0.01875", got)
	}
}

func TestAdaptStep(t *testing.T) {
	for _, c := range []struct{ rate, want float64 }{{0.9, 1.05}, {0.5, 1 / 1.05}, {0.76, 1}, {0.73, 1}, {0.77, 1}} {
		if got := adaptStep(1, c.rate, 0); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("rate %v: step %v, want %v", c.rate, got, c.want)
		}
	}
	if got := adaptStep(1, 0.5, 0.574); got != 1/1.05 {
		t.Errorf("target 0.574, rate 0.5: %v", got)
	}
}

// TestCategoricalLog: frequencies match the weights (4.5 standard errors
// over 100,000 draws), NaN weights are never picked, all-zero weights stay.
func TestCategoricalLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	logw := []float64{math.Log(1), math.NaN(), math.Log(3), math.Inf(-1), math.Log(6)}
	counts := make([]float64, len(logw))
	const n = 100000
	for i := 0; i < n; i++ {
		counts[categoricalLog(rng, logw)]++
	}
	want := []float64{0.1, 0, 0.3, 0, 0.6}
	for k, p := range want {
		se := math.Sqrt(p * (1 - p) / n)
		if math.Abs(counts[k]/n-p) > 4.5*se+1e-12 {
			t.Errorf("slot %d picked %.4f, want %.2f", k, counts[k]/n, p)
		}
	}
	if got := categoricalLog(rng, []float64{math.Inf(-1), math.NaN()}); got != 0 {
		t.Errorf("no valid weight: picked %d, want 0 (stay)", got)
	}
}

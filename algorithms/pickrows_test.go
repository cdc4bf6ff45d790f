package algorithms

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Probe 54 B2: pickRows draws distinct rows; up to maxPermRows the rows
// rand.Perm's first m (what runs drew before), beyond without a
// permutation of all of them. Each of 10 rows drawn 3 at a time by
// Floyd's algorithm is drawn with frequency 0.3 (20,000 draws: within
// 0.3 ± 0.015, 4.6 standard errors).
func TestPickRows(t *testing.T) {
	a, b := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	if got, want := pickRows(a, 1000, 7), b.Perm(1000)[:7]; !slices.Equal(got, want) {
		t.Errorf("pickRows(1000, 7) = %v, want rand.Perm's %v", got, want)
	}
	big := pickRows(a, maxPermRows+5, 128)
	seen := map[int]bool{}
	for _, i := range big {
		if i < 0 || i >= maxPermRows+5 || seen[i] {
			t.Fatalf("row %d drawn twice or out of range", i)
		}
		seen[i] = true
	}
	counts := make([]int, 10)
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	for range n {
		for _, i := range floyd(rng, 10, 3) {
			counts[i]++
		}
	}
	for i, c := range counts {
		if f := float64(c) / n; f < 0.285 || f > 0.315 {
			t.Errorf("row %d drawn with frequency %.4f, want 0.3", i, f)
		}
	}
}

package nd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Det (round 100 B1: a Glow flow's torch.det refused): its gradient, the
// cofactors times the incoming one, against finite differences for one
// matrix and a batch of them; at a singular matrix (rank 2 of 3) the
// cofactors from the singular value decomposition are finite and checked the same way; values
// against closed forms.
func TestDet(t *testing.T) {
	rng := rand.New(rand.NewPCG(100, 1))
	checkOp(t, Det{Rank: 2}, smoothTol, randInput(rng, 3, 3))
	checkOp(t, Det{Rank: 3}, smoothTol, randInput(rng, 2, 4, 4))
	checkOp(t, Det{Rank: 2}, smoothTol, randInput(rng, 1, 1))
	singular := input{shape: []int{3, 3}, vals: []float64{1, 2, 3, 2, 4, 6, 0.5, -1, 2}, diff: true}
	checkOp(t, Det{Rank: 2}, smoothTol, singular)
	for _, c := range []struct {
		in   input
		want []float64
	}{
		{vals([]int{2, 2}, 3, 1, 4, 2), []float64{2}},
		{vals([]int{2, 2, 2}, 1, 0, 0, 1, 0, 1, 1, 0), []float64{1, -1}},
		{vals([]int{3, 3}, 2, 0, 0, 0, 3, 0, 0, 0, 4), []float64{24}},
	} {
		y, err := Eval(Det{Rank: len(c.in.shape)}, dense64(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := y.Data().([]float64); len(got) != len(c.want) {
			t.Fatalf("det of %v: %d values, want %d", c.in.vals, len(got), len(c.want))
		}
		for i, v := range y.Data().([]float64) {
			if math.Abs(v-c.want[i]) > 1e-12 {
				t.Errorf("det of %v: %v, want %v", c.in.vals, y.Data(), c.want)
			}
		}
	}
}

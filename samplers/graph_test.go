package samplers_test

import (
	"math"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gorgonia.org/tensor"
)

// flowebm's Gorgonia models plug into the kernels directly.
var (
	_ samplers.Target       = (*graph.EBM)(nil)
	_ samplers.Proposal     = (*graph.Flow)(nil)
	_ samplers.LatentTarget = (*graph.Latent)(nil)
)

func randomFlow(t testing.TB, seed uint64) *graph.Flow {
	t.Helper()
	f, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}, Activation: layers.Tanh, InitScale: 1},
		layers.NewIsotropic(2, 1), tensor.Float64, rng(seed))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestNeuTraLeavesTargetInvariant: the target is a second random flow, whose
// exact draws start the chains; NeuTra preconditions with a different flow.
// Final states are iid under the target, so their means are within 4.5
// standard errors (sample sd/√M) of the target's mean, estimated from
// 200,000 exact draws (whose own error is 10× smaller and is added).
func TestNeuTraLeavesTargetInvariant(t *testing.T) {
	target, precond := randomFlow(t, 40), randomFlow(t, 41)
	lat, err := graph.NewLatent(precond, target)
	if err != nil {
		t.Fatal(err)
	}
	r := rng(42)
	const m = 3000
	s := samplers.NewState(exactDraws(t, target, r, m))
	k := &samplers.NeuTra{Latent: lat, Local: samplers.MALA{StepSize: 0.05, Frozen: true}}
	acc := 0.0
	for step := 0; step < 30; step++ {
		st, err := k.Step(r, s)
		if err != nil {
			t.Fatal(err)
		}
		acc += st.Local / 30
	}
	if acc < 0.3 {
		t.Fatalf("latent acceptance %.2f too low to exercise the kernel", acc)
	}
	ref := exactDraws(t, target, r, 200000)
	for j := 0; j < 2; j++ {
		got, sd := stat.MeanStdDev(mat.Col(nil, j, s.X), nil)
		want, sdRef := stat.MeanStdDev(mat.Col(nil, j, ref), nil)
		se := math.Hypot(sd/math.Sqrt(m), sdRef/math.Sqrt(200000))
		if math.Abs(got-want) > 4.5*se {
			t.Errorf("coordinate %d: NeuTra mean %.4f, target %.4f ± %.4f", j, got, want, 4.5*se)
		}
		if math.Abs(sd/sdRef-1) > 4.5/math.Sqrt(2*m) {
			t.Errorf("coordinate %d: NeuTra sd %.4f, target %.4f", j, sd, sdRef)
		}
	}
}

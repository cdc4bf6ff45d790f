package algorithms

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/stat"
	"gorgonia.org/tensor"
)

// smallTrainer is a trainer of algorithm alg on 512 points of two-modes
// with small models (an EBM of widths 16, 16 and a RealNVP of 2 blocks),
// batch 16 and a bank of 64, initialised: it steps in milliseconds.
func smallTrainer(t *testing.T, alg Algorithm) *Trainer {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 1))
	train, _ := experiments.TwoModes().Split(rng, 512, 64)
	net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{2, 16, 16, 1}, Hidden: layers.LeakyReLU(0.05),
		Layout: layers.Sequential, LastWeightInit: layers.Zeros, LastBiasInit: layers.Zeros}}
	ebm, flow := newModels(t, rng, net, layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{16}})
	c := TrainConfig{Algorithm: alg, Iterations: 10, BatchSize: 16, Persistent: 64, Sampler: SamplerConfig{Particles: 8}}
	tr, err := NewTrainer(&c, ebm, flow, train, NewStreams(5))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Init(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// newModels builds an EBM of net tilted by N(0, I) and a flow of nvp on
// that base, in two dimensions.
func newModels(t *testing.T, rng *rand.Rand, net graph.EnergyNet, nvp layers.RealNVP) (*graph.EBM, *graph.Flow) {
	t.Helper()
	base := layers.NewIsotropic(2, 1)
	ebm, err := graph.NewEBM(net, &base, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := graph.NewFlow(nvp, base, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	return ebm, flow
}

// averagedParams are the averaged EBM's parameters.
func averagedParams(t *testing.T, tr *Trainer) []float64 {
	t.Helper()
	var v []float64
	if err := tr.WithAveraged(func() error { v = tr.EBM.Params.Flatten(nil); return nil }); err != nil {
		t.Fatal(err)
	}
	return v
}

// The averaged EBM is the exponential moving average of the iterates,
// computed here by hand from the parameters after each step; outside
// WithAveraged the EBM holds the current iterate.
func TestAverageWindowIsMovingAverage(t *testing.T) {
	tr := smallTrainer(t, FlowMC)
	tr.Config.AverageWindow = 4
	tr.thetaAvg = tr.EBM.Params.Flatten(nil)
	want := tr.EBM.Params.Flatten(nil)
	for i := 0; i < 10; i++ {
		if _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
		cur := tr.EBM.Params.Flatten(nil)
		for j := range want {
			want[j] = 0.75*want[j] + 0.25*cur[j]
		}
	}
	cur := tr.EBM.Params.Flatten(nil)
	got := averagedParams(t, tr)
	differs := false
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-12*(1+math.Abs(want[j])) {
			t.Fatalf("averaged parameter %d = %v, want %v", j, got[j], want[j])
		}
		differs = differs || got[j] != cur[j]
	}
	if !differs {
		t.Error("the averaged parameters equal the current ones")
	}
	after := tr.EBM.Params.Flatten(nil)
	for j := range cur {
		if after[j] != cur[j] {
			t.Fatalf("WithAveraged left parameter %d at %v, want the current %v", j, after[j], cur[j])
		}
	}
}

// FlowSteps makes that many maximum-likelihood steps of the flow on one
// iteration's negatives: Adam's step count says how many were taken, and
// the steps raise the flow's likelihood of those negatives (a small step
// of Adam on a fixed batch of 64 points; the flow starts at the identity,
// far from them).
func TestFlowStepsPerIteration(t *testing.T) {
	for _, k := range []int{1, 3} {
		tr := smallTrainer(t, FlowMC)
		tr.Config.FlowSteps = k
		st, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.optFlow.State()["t"][0]; got != float64(k) {
			t.Errorf("flow_steps %d: Adam took %v steps", k, got)
		}
		ll := make([]float64, tr.Negatives().RawMatrix().Rows)
		if err := tr.Flow.LogDensity(tr.Negatives(), ll); err != nil {
			t.Fatal(err)
		}
		if after := stat.Mean(ll, nil); !(after > st.FlowLL) {
			t.Errorf("flow_steps %d: log-likelihood of the negatives %v before, %v after", k, st.FlowLL, after)
		}
	}
}

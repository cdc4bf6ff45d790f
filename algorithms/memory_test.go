package algorithms

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// NewTrainer's own memory check counts the models' graphs on the batches
// it trains them on, as the run configuration's does: coopflow's
// pretraining batch of 1e8 rows (22.7 GB, killed) and ULA's 400,000 chains
// (about 10 GB) were accepted, only their raw points counted; the same
// models at sizes that fit are accepted.
func TestNewTrainerCountsTrainingBatches(t *testing.T) {
	for _, c := range []struct {
		cfg  TrainConfig
		rows int
		want string
	}{
		{TrainConfig{Algorithm: CoopFlow, BatchSize: 16, Persistent: 32, Pretrain: PretrainConfig{Steps: 2, BatchSize: 1e8}}, 512,
			"the flow's intermediate values for pretrain.batch_size 100000000 points"},
		{TrainConfig{Algorithm: ULA, BatchSize: 400_000, Persistent: 400_000, Sampler: SamplerConfig{Steps: 2}}, 400_000,
			"the EBM's intermediate values for batch_size 400000 points"},
		{TrainConfig{Algorithm: CoopFlow, BatchSize: 16, Persistent: 32, Pretrain: PretrainConfig{Steps: 2, BatchSize: 200_000}}, 512, ""},
		{TrainConfig{Algorithm: ULA, BatchSize: 50_000, Persistent: 50_000, Sampler: SamplerConfig{Steps: 2}}, 50_000, ""},
	} {
		rng := rand.New(rand.NewPCG(5, 1))
		ebm, flow := newModels(t, rng, graph.ToyEnergyNet(2, true), layers.RealNVP{Dim: 2, Blocks: 4, Hidden: []int{16}})
		cfg := c.cfg
		cfg.Iterations = 2
		_, err := NewTrainer(&cfg, ebm, flow, mat.NewDense(c.rows, 2, nil), NewStreams(5))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s, batch %d, pretrain batch %d: %v", c.cfg.Algorithm, c.cfg.BatchSize, c.cfg.Pretrain.BatchSize, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), "algorithms: the configuration needs about") || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want the memory message naming %q", c.cfg.Algorithm, err, c.want)
		}
	}
}

// The trainer reads the sizes the estimate needs from its models: the toy
// EBM's hidden widths and the RealNVP's blocks (with their depth) and
// widths; an architecture it does not know counts as its input alone.
func TestSizesOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	ebm, flow := newModels(t, rng, graph.ToyEnergyNet(2, true), layers.RealNVP{Dim: 2, Blocks: 3, BlockDepth: 2, Hidden: []int{16, 8}})
	m := SizesOf(ebm, flow)
	if !slices.Equal(m.EBMHidden, []int{32, 64, 64, 64}) || m.FlowBlocks != 6 || !slices.Equal(m.FlowHidden, []int{16, 8}) {
		t.Errorf("SizesOf = %+v, want EBM hidden [32 64 64 64], 6 flow blocks of hidden [16 8]", m)
	}
	if m := SizesOf(ebm, nil); m.FlowBlocks != 0 || m.FlowHidden != nil {
		t.Errorf("no flow: %+v, want no flow blocks", m)
	}
}

// sampler.negatives "subsample" without sampler.subsample asks for it on
// the Go API's path too (the message read "sampler.subsample 0 must divide
// batch_size 64 and sampler.steps 10").
func TestSubsampleWithoutK(t *testing.T) {
	c := TrainConfig{Iterations: 2, Sampler: SamplerConfig{Negatives: NegativesSubsample}}
	_, err := c.Resolved()
	if err == nil || !strings.Contains(err.Error(), `algorithms: sampler.negatives "subsample" without sampler.subsample: give it, k,`) || strings.Contains(err.Error(), "subsample 0") {
		t.Errorf("subsample without k: %v", err)
	}
	c.Sampler.Subsample = 2
	if _, err := c.Resolved(); err != nil {
		t.Errorf("subsample 2: %v", err)
	}
}

// The memory estimate counts the flow's parameters exactly, for a RealNVP
// and for a spline flow, whose conditioners output 3·bins − 1 values per
// transformed coordinate, from the identity coordinates (odd dimension:
// each coupling is counted with the larger half on both sides, an upper
// bound within 30%).
func TestFlowParamsEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	for _, net := range []graph.FlowNet{
		layers.RealNVP{Dim: 6, Blocks: 2, Hidden: []int{7}},
		layers.SplineFlow{Dim: 6, Blocks: 2, Hidden: []int{7}, Spline: layers.RQSpline{Bins: 4}},
		layers.SplineFlow{Dim: 5, Blocks: 3, Hidden: []int{8, 4}},
	} {
		d := net.Dimension()
		ebm, err := graph.NewEBM(graph.ToyEnergyNet(d, true), nil, tensor.Float64, rng)
		if err != nil {
			t.Fatal(err)
		}
		flow, err := graph.NewFlow(net, layers.NewIsotropic(d, 1), tensor.Float64, rng)
		if err != nil {
			t.Fatal(err)
		}
		m := SizesOf(ebm, flow)
		got := TrainConfig{}.flowTerms(net.Dimension(), m)[0].Bytes
		want := float64(flow.Params.Count() * 8 * paramCopies)
		if _, odd := net.(layers.SplineFlow); odd && net.Dimension()%2 == 1 {
			if !(got >= want && got < 1.3*want) {
				t.Errorf("%T: estimate %g B, want at least the %g B of the parameters (and within 30%%)", net, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%T: estimate %g B, parameters take %g B", net, got, want)
		}
	}
}

package algorithms

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// The bank's flow start is pushed through the flow in chunks (one pass over
// a bank of 16,384 images needed about 24 GB): the bank is bit for bit
// the one pass's, for a RealNVP and a conv RealNVP split into shards, with
// chunks that divide the bank or not, and through initChains.
func TestBankStartChunked(t *testing.T) {
	shape := layers.ImageShape{C: 1, H: 8, W: 8}
	for _, net := range []graph.FlowNet{
		layers.RealNVP{Dim: 3, Blocks: 2, Hidden: []int{8}},
		layers.ImageRealNVP{Image: shape, Hidden: 4, Checkerboard: 1, ChannelWise: 1, InitScale: 0.3},
	} {
		d := net.Dimension()
		flow, err := graph.NewFlow(net, layers.NewIsotropic(d, 1), tensor.Float64, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		flow.Parallel = graph.Parallel{Shards: 4}
		tr := &Trainer{Config: &TrainConfig{}, Flow: flow}
		const rows = 70
		want := mat.NewDense(rows, d, nil)
		if err := flow.Sample(rand.New(rand.NewPCG(7, 8)), want, make([]float64, rows)); err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{rows + 1, rows, 35, 16, 7, 1} {
			got := mat.NewDense(rows, d, nil)
			if err := tr.sampleInChunks(rand.New(rand.NewPCG(7, 8)), got, chunk); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.RawMatrix().Data, want.RawMatrix().Data) {
				t.Errorf("%T, chunks of %d rows: the bank differs from one pass's", net, chunk)
			}
		}
		got := mat.NewDense(rows, d, nil)
		if err := tr.initChains(rand.New(rand.NewPCG(7, 8)), got, StartFlow); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.RawMatrix().Data, want.RawMatrix().Data) {
			t.Errorf("%T: initChains's bank differs from one pass's", net)
		}
	}
}

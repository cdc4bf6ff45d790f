package samplers_test

import (
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// benchModels: the toy EBM (tilted) and the App. C.2 flow, float64, with
// random last-layer weights so the energy is not trivially 0.
func benchModels(b *testing.B) (*graph.EBM, *graph.Flow) {
	base := layers.NewIsotropic(2, 1)
	e, err := graph.NewEBM(graph.ToyEnergyNet(2, false), &base, tensor.Float64, rng(1))
	if err != nil {
		b.Fatal(err)
	}
	f, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 4, Hidden: []int{16}}, base, tensor.Float64, rng(2))
	if err != nil {
		b.Fatal(err)
	}
	return e, f
}

func benchState(b *testing.B, f *graph.Flow, m int) *samplers.State {
	x := mat.NewDense(m, 2, nil)
	if err := f.Sample(rng(3), x, make([]float64, m)); err != nil {
		b.Fatal(err)
	}
	return samplers.NewState(x)
}

// BenchmarkMALAStep: one MALA step of 1,024 chains on the toy EBM.
func BenchmarkMALAStep(b *testing.B) {
	e, f := benchModels(b)
	s := benchState(b, f, 1024)
	benchSteps(b, &samplers.MALA{Target: e, StepSize: 0.01}, s, 4)
}

// BenchmarkISIRStep: one i-SIR step with N = 64 particles for 1,024 chains
// (64,512 flow draws and energies per step, in one batch).
func BenchmarkISIRStep(b *testing.B) {
	e, f := benchModels(b)
	s := benchState(b, f, 1024)
	benchSteps(b, &samplers.ISIR{Target: e, Proposal: f, Particles: 64}, s, 5)
}

// benchSteps times k.Step after one untimed step (which compiles the graphs).
func benchSteps(b *testing.B, k samplers.Kernel, s *samplers.State, seed uint64) {
	r := rng(seed)
	if _, err := k.Step(r, s); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := k.Step(r, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

package graph

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// outputs is everything a model computes on one batch, for comparing
// evaluations under different Parallel settings.
type outputs struct {
	energy, energyG, lossG, loss                       []float64
	gradX, fwd, inv, latentG                           []float64
	logdetF, logdetI, logq, mlG, rklG, latent, scalars []float64
}

// models are an EBM and a flow evaluated under several Parallel settings:
// the same models each time, so that only the setting differs (two
// float32 models built apart may differ in the last bit where gonum's
// pure-Go kernels sum in an order that depends on memory alignment).
type models struct {
	e *EBM
	f *Flow
}

func newModels(t *testing.T, dt tensor.Dtype) models {
	tilt := layers.NewIsotropic(5, 1.3)
	return models{mustEBM(t, ToyEnergyNet(5, false), &tilt, dt, 3), randomFlow(t, layers.RealNVP{Dim: 5, Blocks: 2, Hidden: []int{12}}, 1.1, dt, 4)}
}

func evaluateAll(t *testing.T, m models, par Parallel, n int) outputs {
	t.Helper()
	e, f := m.e, m.f
	e.Parallel, f.Parallel = par, par
	rng := newRNG(9)
	x := randMatrix(rng, n, 5, 1)
	neg := randMatrix(rng, n/2+3, 5, 1)
	var o outputs
	o.energy = make([]float64, n)
	must(t, e.Energy(x, o.energy))
	o.energyG = make([]float64, n)
	g := mat.NewDense(n, 5, nil)
	must(t, e.EnergyGrad(x, o.energyG, g))
	o.gradX = g.RawMatrix().Data
	o.lossG = make([]float64, e.Params.Count())
	loss, err := e.LossGrad(x, neg, 0.1, o.lossG)
	must(t, err)
	out := mat.NewDense(n, 5, nil)
	o.logdetF = make([]float64, n)
	must(t, f.Forward(x, out, o.logdetF))
	o.fwd = slices.Clone(out.RawMatrix().Data)
	o.logdetI = make([]float64, n)
	must(t, f.Inverse(x, out, o.logdetI))
	o.inv = slices.Clone(out.RawMatrix().Data)
	o.logq = make([]float64, n)
	must(t, f.LogDensity(x, o.logq))
	o.mlG = make([]float64, f.Params.Count())
	ml, err := f.MLGrad(x, o.mlG)
	must(t, err)
	o.rklG = make([]float64, f.Params.Count())
	kl, err := f.ReverseKLGrad(x, e, o.rklG)
	must(t, err)
	lat, err := NewLatent(f, e)
	must(t, err)
	o.latent = make([]float64, n)
	must(t, lat.LogDensityGrad(x, o.latent, g))
	o.latentG = g.RawMatrix().Data
	o.scalars = []float64{loss, ml, kl}
	return o
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (o outputs) fields() map[string][]float64 {
	return map[string][]float64{
		"energy": o.energy, "energy (EnergyGrad)": o.energyG, "∇ₓE": o.gradX,
		"loss gradient": o.lossG, "T(x)": o.fwd, "T⁻¹(x)": o.inv,
		"log-det T": o.logdetF, "log-det T⁻¹": o.logdetI, "log λ": o.logq,
		"ML gradient": o.mlG, "reverse-KL gradient": o.rklG,
		"log π_T": o.latent, "∇ log π_T": o.latentG, "loss, ML, KL": o.scalars,
	}
}

// TestParallelResultsIndependentOfWorkers: with a fixed number of shards,
// every quantity a model computes is bit-identical whatever the number of
// workers evaluating the shards (1, 2, or more workers than shards), in
// float64 and float32, with batch sizes that split evenly and unevenly.
// Run with -race, it also checks that concurrent shards share no mutable
// state.
func TestParallelResultsIndependentOfWorkers(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, n := range []int{64, 101} {
			t.Run(fmt.Sprintf("%v/n=%d", dt, n), func(t *testing.T) {
				m := newModels(t, dt)
				ref := evaluateAll(t, m, Parallel{Shards: 4, Workers: 1}, n).fields()
				for _, w := range []int{2, 3, 8} {
					got := evaluateAll(t, m, Parallel{Shards: 4, Workers: w}, n).fields()
					for name, v := range ref {
						if !slices.Equal(got[name], v) {
							t.Errorf("%d workers: %s differs from 1 worker", w, name)
						}
					}
				}
			})
		}
	}
}

// TestParallelMatchesWhole: splitting a batch changes only the rounding of
// the parameter gradients' sums (row-wise values may differ in the last
// bits where the BLAS blocks a product differently by its row count):
// every quantity agrees with the whole-batch evaluation to 1e-12 relative
// in float64.
func TestParallelMatchesWhole(t *testing.T) {
	for _, n := range []int{64, 101} {
		m := newModels(t, tensor.Float64)
		whole := evaluateAll(t, m, Parallel{}, n).fields()
		split := evaluateAll(t, m, Parallel{Shards: 4, Workers: 2}, n).fields()
		for name, v := range whole {
			if e := relErr(split[name], v); !(e < 1e-12) {
				t.Errorf("n=%d: %s: relative difference %.3g between 4 shards and the whole batch", n, name, e)
			}
		}
	}
}

func TestParallelBlocks(t *testing.T) {
	cases := []struct{ shards, n, want int }{
		{0, 100, 1}, {1, 100, 1}, {4, 100, 4}, {4, 63, 3}, {4, 15, 1}, {8, 16, 1}, {8, 32, 2},
	}
	for _, c := range cases {
		k := Parallel{Shards: c.shards}.blocks(c.n)
		if k != c.want {
			t.Errorf("Shards %d, %d rows: %d blocks, want %d", c.shards, c.n, k, c.want)
		}
		covered := 0
		for s := 0; s < k; s++ {
			lo, hi := span(c.n, k, s)
			if lo != covered || hi-lo < min(MinShardRows, c.n) || hi-lo > c.n/k+1 {
				t.Errorf("Shards %d, %d rows: block %d is [%d, %d)", c.shards, c.n, s, lo, hi)
			}
			covered = hi
		}
		if covered != c.n {
			t.Errorf("Shards %d, %d rows: blocks cover %d rows", c.shards, c.n, covered)
		}
	}
	if err := (Parallel{Shards: -1}).Validate(); err == nil {
		t.Error("negative shards accepted")
	}
}

// TestParallelErrorsAndPanics: a failing or panicking block is reported as
// an error (the first in block order), never a crash.
func TestParallelErrorsAndPanics(t *testing.T) {
	p := Parallel{Workers: 3}
	err := p.each(5, make([]error, 5), func(s int) error {
		if s == 3 {
			panic("boom")
		}
		if s == 4 {
			return fmt.Errorf("block four")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "block 3") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("got %v, want the panic of block 3", err)
	}
}

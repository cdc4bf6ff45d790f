package graph

import (
	"fmt"
	"testing"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// evaluation is one model call writing its results into a flat slice.
type evaluation func(x *mat.Dense) ([]float64, error)

// modelCalls builds fresh models (same seeds every time) and returns every
// kind of evaluation the package compiles, on inputs of dimension d.
func modelCalls(t *testing.T, dt tensor.Dtype) (map[string]evaluation, int) {
	const d = 4
	tilt := layers.NewIsotropic(d, 1.5)
	e := mustEBM(t, ToyEnergyNet(d, false), &tilt, dt, 3)
	f := randomFlow(t, layers.RealNVP{Dim: d, Blocks: 2, Hidden: []int{8, 8}, Mask: layers.MaskCheckerboard}, 1.2, dt, 4)
	lat, err := NewLatent(f, e)
	if err != nil {
		t.Fatal(err)
	}
	rows := func(x *mat.Dense) int { r, _ := x.Dims(); return r }
	return map[string]evaluation{
		"EBM.EnergyGrad": func(x *mat.Dense) ([]float64, error) {
			en, g := make([]float64, rows(x)), mat.NewDense(rows(x), d, nil)
			err := e.EnergyGrad(x, en, g)
			return append(en, g.RawMatrix().Data...), err
		},
		"EBM.LogDensity": func(x *mat.Dense) ([]float64, error) {
			lp := make([]float64, rows(x))
			return lp, e.LogDensity(x, lp)
		},
		"EBM.LossGrad": func(x *mat.Dense) ([]float64, error) {
			grad := make([]float64, e.Params.Count())
			neg := mat.NewDense(rows(x), d, nil)
			neg.Scale(-0.5, x)
			l, err := e.LossGrad(x, neg, 0.1, grad)
			return append(grad, l), err
		},
		"Flow.Forward": func(x *mat.Dense) ([]float64, error) {
			y, ld := mat.NewDense(rows(x), d, nil), make([]float64, rows(x))
			err := f.Forward(x, y, ld)
			return append(ld, y.RawMatrix().Data...), err
		},
		"Flow.LogDensity": func(x *mat.Dense) ([]float64, error) {
			lq := make([]float64, rows(x))
			return lq, f.LogDensity(x, lq)
		},
		"Flow.MLGrad": func(x *mat.Dense) ([]float64, error) {
			grad := make([]float64, f.Params.Count())
			ll, err := f.MLGrad(x, grad)
			return append(grad, ll), err
		},
		"Flow.ReverseKLGrad": func(x *mat.Dense) ([]float64, error) {
			grad := make([]float64, f.Params.Count())
			kl, err := f.ReverseKLGrad(x, e, grad)
			return append(grad, kl), err
		},
		"Latent.LogDensityGrad": func(x *mat.Dense) ([]float64, error) {
			lp, g := make([]float64, rows(x)), mat.NewDense(rows(x), d, nil)
			err := lat.LogDensityGrad(x, lp, g)
			return append(lp, g.RawMatrix().Data...), err
		},
	}, d
}

// TestExecutorMatchesTapeMachine runs every compiled evaluation on the
// executor (values kept and overwritten between calls) and on Gorgonia's
// TapeMachine (everything reallocated every call) for a sequence of
// different inputs, including a repeat of the first and a second batch
// size: the results must be identical bit for bit, since both run the same
// operations in the same order. A stale or aliased preallocated value would
// show up as a difference on the second or later call.
func TestExecutorMatchesTapeMachine(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		execCalls, d := modelCalls(t, dt)
		useTapeMachine = true
		tapeCalls, _ := modelCalls(t, dt)
		rng := newRNG(7)
		a, b, c := randMatrix(rng, 16, d, 1), randMatrix(rng, 16, d, 1), randMatrix(rng, 5, d, 1)
		inputs := []*mat.Dense{a, b, a, c, b}
		for name := range execCalls {
			for k, x := range inputs {
				useTapeMachine = true
				want, err := tapeCalls[name](x)
				useTapeMachine = false
				if err != nil {
					t.Fatalf("%v %s call %d on the TapeMachine: %v", dt, name, k, err)
				}
				got, err := execCalls[name](x)
				if err != nil {
					t.Fatalf("%v %s call %d: %v", dt, name, k, err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%v %s call %d: executor %v, TapeMachine %v", dt, name, k, got, want)
				}
			}
		}
		useTapeMachine = false
	}
}

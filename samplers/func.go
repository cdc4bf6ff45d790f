package samplers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Func is a target given by Go functions of one point: LogDensity returns
// log π(x) up to a constant, and Grad writes ∇ log π(x) into grad and
// returns log π(x). It evaluates batches row by row, so any hand-written
// density (a posterior, a physics potential) drives every kernel; for a
// gradient derived automatically, write the density as a Gorgonia
// expression instead (graph.Expression).
type Func struct {
	D          int
	LogDensity func(x []float64) float64
	Grad       func(x, grad []float64) float64
}

// Target returns f as a Target, checking its fields.
func (f Func) Target() (Target, error) {
	switch {
	case f.D < 1:
		return nil, fmt.Errorf("samplers: Func dimension %d, want ≥ 1", f.D)
	case f.LogDensity == nil && f.Grad == nil:
		return nil, fmt.Errorf("samplers: Func has neither LogDensity nor Grad")
	}
	return &funcTarget{f: f, row: make([]float64, f.D), g: make([]float64, f.D)}, nil
}

// funcTarget evaluates a Func row by row in buffers of its own (a
// sampler calls it every step; not for concurrent use).
type funcTarget struct {
	f      Func
	row, g []float64
}

func (t *funcTarget) Dim() int { return t.f.D }

func (t *funcTarget) LogDensity(x mat.Matrix, logp []float64) error {
	if t.f.LogDensity == nil {
		return t.LogDensityGrad(x, logp, nil)
	}
	r, err := t.check(x, logp)
	if err != nil {
		return err
	}
	for i := range r {
		mat.Row(t.row, i, x)
		logp[i] = t.f.LogDensity(t.row)
	}
	return nil
}

// LogDensityGrad writes log π and, where grad is not nil, its gradient;
// a gradient that is not finite where log π is finite is an error (a
// hand-written gradient with a bug).
func (t *funcTarget) LogDensityGrad(x mat.Matrix, logp []float64, grad *mat.Dense) error {
	if t.f.Grad == nil {
		return fmt.Errorf("samplers: Func has no Grad: gradient-based kernels (MALA, HMC) need it")
	}
	r, err := t.check(x, logp)
	if err != nil {
		return err
	}
	row, g := t.row, t.g
	for i := range r {
		mat.Row(row, i, x)
		logp[i] = t.f.Grad(row, g)
		for j, v := range g {
			if math.IsNaN(v) || (math.IsInf(v, 0) && !math.IsInf(logp[i], 0)) {
				return fmt.Errorf("samplers: Func's gradient at row %d is %v in coordinate %d, where log π is %v", i+1, v, j+1, logp[i])
			}
		}
		if grad != nil {
			grad.SetRow(i, g)
		}
	}
	return nil
}

func (t *funcTarget) check(x mat.Matrix, logp []float64) (int, error) {
	r, c := x.Dims()
	if c != t.f.D {
		return 0, fmt.Errorf("samplers: points have %d coordinates, the Func %d", c, t.f.D)
	}
	if len(logp) != r {
		return 0, fmt.Errorf("samplers: logp has length %d for %d points", len(logp), r)
	}
	return r, nil
}

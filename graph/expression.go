package graph

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/layers"
)

// Expression is a target density written as a Gorgonia expression: a
// model of one's own (a posterior, a physics potential) whose gradient
// Gorgonia derives, so that no one writes ∇ log π by hand. LogDensity
// maps the batch x (n × Dim) to the n values log π(x_i), up to a
// constant; it may use any Gorgonia operation that has a gradient.
//
// NewTarget wraps an Expression into an EBM without parameters or tilt
// (E = −log π), which every kernel of package samplers takes as its
// samplers.Target.
type Expression struct {
	D          int
	LogDensity func(x *G.Node) (*G.Node, error)
}

// Dim is the dimension of the target.
func (e Expression) Dim() int { return e.D }

// ParamSpecs is empty: the expression has no trainable parameters.
func (e Expression) ParamSpecs() []layers.ParamSpec { return nil }

// Energy is −LogDensity(x), checked to be one value per row.
func (e Expression) Energy(_ layers.Binder, x *G.Node) (*G.Node, error) {
	if e.LogDensity == nil {
		return nil, fmt.Errorf("graph: Expression has no LogDensity")
	}
	lp, err := e.LogDensity(x)
	if err != nil {
		return nil, err
	}
	if s := lp.Shape(); len(s) == 2 && s[1] == 1 {
		if lp, err = G.Reshape(lp, tensor.Shape{s[0]}); err != nil {
			return nil, err
		}
	}
	if s := lp.Shape(); len(s) != 1 || s[0] != x.Shape()[0] {
		return nil, fmt.Errorf("graph: Expression's LogDensity has shape %v for a batch of %d, want (%d)", s, x.Shape()[0], x.Shape()[0])
	}
	return G.Neg(lp)
}

// Target is the target of an Expression (NewTarget): log π and its
// gradient for batches of points, a samplers.Target.
type Target struct {
	ebm *EBM
	// A batch of one point is evaluated as two: its rows, values and
	// gradients (allocated once; a sampler with one chain calls every step).
	one, oneGrad *mat.Dense
	oneLogp      []float64
}

// NewTarget builds the target of expression e in dtype (the zero Dtype
// means float64).
func NewTarget(e Expression, dtype tensor.Dtype) (*Target, error) {
	if e.D < 1 {
		return nil, fmt.Errorf("graph: Expression dimension %d, want ≥ 1", e.D)
	}
	ebm, err := NewEBM(e, nil, dtype, nil)
	if err != nil {
		return nil, err
	}
	return &Target{ebm: ebm, one: mat.NewDense(2, e.D, nil), oneGrad: mat.NewDense(2, e.D, nil), oneLogp: make([]float64, 2)}, nil
}

// Dim is the dimension of the target.
func (t *Target) Dim() int { return t.ebm.Dim() }

// LogDensity writes log π(x_i) for each row of x into logp.
func (t *Target) LogDensity(x mat.Matrix, logp []float64) error {
	return t.LogDensityGrad(x, logp, nil)
}

// LogDensityGrad writes log π(x_i) into logp and, if grad is not nil,
// ∇ log π(x_i) into the rows of grad. A single point is evaluated as a
// batch of two: Gorgonia turns the columns of a one-row batch into
// scalars, which most expressions do not expect.
func (t *Target) LogDensityGrad(x mat.Matrix, logp []float64, grad *mat.Dense) error {
	if n, _ := x.Dims(); n != 1 {
		if grad == nil {
			return t.ebm.LogDensity(x, logp)
		}
		return t.ebm.LogDensityGrad(x, logp, grad)
	}
	if _, err := checkBatch("x", x, t.Dim()); err != nil {
		return err
	}
	if err := checkLen("logp", logp, 1); err != nil {
		return err
	}
	if grad != nil {
		if _, err := checkBatch("grad", grad, t.Dim()); err != nil {
			return err
		}
	}
	mat.Row(t.one.RawRowView(0), 0, x)
	t.one.SetRow(1, t.one.RawRowView(0))
	var g *mat.Dense
	if grad != nil {
		g = t.oneGrad
	}
	if err := t.LogDensityGrad(t.one, t.oneLogp, g); err != nil {
		return err
	}
	logp[0] = t.oneLogp[0]
	if grad != nil {
		grad.SetRow(0, g.RawRowView(0))
	}
	return nil
}

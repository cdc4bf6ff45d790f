package graph

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
)

// Latent is the NeuTra target in the flow's latent space: for a target π on
// x-space and the flow's map T,
//
//	log π_T(z) = log π(T(z)) + log|det J_T(z)|,
//
// one graph composing the flow and the target, with its z-gradient. It
// splits batches as the flow's Parallel says.
type Latent struct {
	Flow   *Flow
	Target LogDensityBuilder

	grad programs
}

// NewLatent pairs a flow with a target of the same dimension.
func NewLatent(f *Flow, target LogDensityBuilder) (*Latent, error) {
	if f == nil || target == nil {
		return nil, fmt.Errorf("graph: latent target needs a flow and a target")
	}
	if target.Dim() != f.Dim() {
		return nil, fmt.Errorf("graph: target has dimension %d, flow %d", target.Dim(), f.Dim())
	}
	return &Latent{Flow: f, Target: target}, nil
}

// Dim is the dimension.
func (l *Latent) Dim() int { return l.Flow.Dim() }

// LogDensityGrad writes log π_T(z) and ∇_z log π_T(z) for each row of z.
func (l *Latent) LogDensityGrad(z mat.Matrix, logp []float64, grad *mat.Dense) error {
	n, err := checkBatch("z", z, l.Dim())
	if err != nil {
		return err
	}
	if err := checkLen("logp", logp, n); err != nil {
		return err
	}
	if err := checkDims("grad", grad, n, l.Dim()); err != nil {
		return err
	}
	build := func(g *G.ExprGraph, in []*G.Node) ([]*G.Node, error) {
		x, ld, err := l.Flow.Net.Forward(newScope(g, l.Flow.Params), in[0])
		if err != nil {
			return nil, err
		}
		lp, err := l.Target.BuildLogDensity(x)
		if err != nil {
			return nil, err
		}
		tot, err := G.Add(lp, ld)
		if err != nil {
			return nil, err
		}
		cost, err := sumOf(tot)
		if err != nil {
			return nil, err
		}
		dz, err := G.Grad(cost, in[0])
		if err != nil {
			return nil, err
		}
		return []*G.Node{tot, dz[0]}, nil
	}
	return sharded(l.Flow.Parallel, &l.grad, n, l.Flow.Params.dtype, [][]int{{n, l.Dim()}}, build, func(_ int, p *program, lo, hi int) error {
		p.setRows(0, z, lo, hi)
		if err := p.run(); err != nil {
			return err
		}
		p.vector(0, logp[lo:hi])
		p.matrixRows(1, grad, lo, hi)
		return nil
	})
}

// LogDensity writes log π_T(z) for each row of z.
func (l *Latent) LogDensity(z mat.Matrix, logp []float64) error {
	n, _ := z.Dims()
	return l.LogDensityGrad(z, logp, mat.NewDense(max(n, 1), l.Dim(), nil))
}

// Pull writes z = T⁻¹(x) for each row of x.
func (l *Latent) Pull(x mat.Matrix, z *mat.Dense) error {
	n, _ := x.Dims()
	return l.Flow.Inverse(x, z, make([]float64, max(n, 1)))
}

// Push writes x = T(z) for each row of z (the NeuTra state in x-space).
func (l *Latent) Push(z mat.Matrix, x *mat.Dense) error {
	n, _ := z.Dims()
	return l.Flow.Forward(z, x, make([]float64, max(n, 1)))
}

// Invalidate drops the compiled graphs.
func (l *Latent) Invalidate() { l.grad.reset() }

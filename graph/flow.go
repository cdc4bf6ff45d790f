package graph

import (
	"fmt"
	"math/rand/v2"
	"reflect"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FlowNet is a flow's map T inside a graph: flowebm's layers.RealNVP, or a
// flow read from ONNX (package io/onnx). Parameters are bound through the
// Binder by name, so that both directions share them.
type FlowNet interface {
	// Dimension is d, the dimension of both z and x.
	Dimension() int
	ParamSpecs() ([]layers.ParamSpec, error)
	// Forward adds x = T(z) and log|det J_T(z)| (B) to z's graph.
	Forward(b layers.Binder, z *G.Node) (x, logdet *G.Node, err error)
	// Inverse adds z = T⁻¹(x) and log|det J_{T⁻¹}(x)| (B) to x's graph.
	Inverse(b layers.Binder, x *G.Node) (z, logdet *G.Node, err error)
}

// DensityNet is implemented by a FlowNet that computes log λ(x) directly
// (a density graph read from ONNX) rather than as log ρ(T⁻¹(x)) +
// log|det J_{T⁻¹}(x)|; Flow uses it for LogDensity and MLGrad.
type DensityNet interface {
	// LogDensity adds log λ(x) (B) to x's graph.
	LogDensity(b layers.Binder, x *G.Node) (*G.Node, error)
}

// Flow is a normalizing flow λ = T#ρ: a map T (a RealNVP, or a flow read
// from ONNX) and a Gaussian base ρ. Its density is
// log λ(x) = log ρ(T⁻¹(x)) + log|det J_{T⁻¹}(x)|.
type Flow struct {
	Net    FlowNet
	Base   layers.Gaussian
	Params *Params

	// Parallel splits batches into blocks evaluated concurrently; the
	// zero value evaluates them whole on the calling goroutine.
	Parallel Parallel

	forward, inverse, ml programs
	density              programs // a DensityNet's log λ
	rkl                  map[LogDensityBuilder]*programs
	grads                gradSum
	z                    *mat.Dense // LogDensity's latent buffer
	vals                 []float64  // per-sample values of MLGrad and ReverseKLGrad
}

// NewFlow allocates and initialises the flow's parameters (a RealNVP near
// the identity; an imported flow at the file's values) in dtype (the zero
// Dtype means float64) with rng.
func NewFlow(net FlowNet, base layers.Gaussian, dtype tensor.Dtype, rng *rand.Rand) (*Flow, error) {
	if dtype == (tensor.Dtype{}) {
		dtype = tensor.Float64
	}
	if err := base.Validate(); err != nil {
		return nil, err
	}
	if net == nil {
		return nil, fmt.Errorf("graph: flow needs a FlowNet")
	}
	if base.Dim() != net.Dimension() {
		return nil, fmt.Errorf("graph: flow base has dimension %d, flow %d", base.Dim(), net.Dimension())
	}
	specs, err := net.ParamSpecs()
	if err != nil {
		return nil, err
	}
	p, err := NewParams(specs, dtype, rng)
	if err != nil {
		return nil, err
	}
	return &Flow{Net: net, Base: base, Params: p}, nil
}

// Dim is the dimension.
func (f *Flow) Dim() int { return f.Net.Dimension() }

func (f *Flow) pass(inverse bool) buildFunc {
	return func(g *G.ExprGraph, in []*G.Node) ([]*G.Node, error) {
		s := newScope(g, f.Params)
		var y, ld *G.Node
		var err error
		if inverse {
			y, ld, err = f.Net.Inverse(s, in[0])
		} else {
			y, ld, err = f.Net.Forward(s, in[0])
		}
		return []*G.Node{y, ld}, err
	}
}

func (f *Flow) run(c *programs, inverse bool, in mat.Matrix, out *mat.Dense, logdet []float64) error {
	n, err := checkBatch("input", in, f.Dim())
	if err != nil {
		return err
	}
	if err := checkDims("output", out, n, f.Dim()); err != nil {
		return err
	}
	if err := checkLen("logdet", logdet, n); err != nil {
		return err
	}
	return sharded(f.Parallel, c, n, f.Params.dtype, [][]int{{n, f.Dim()}}, f.pass(inverse), func(_ int, p *program, lo, hi int) error {
		p.setRows(0, in, lo, hi)
		if err := p.run(); err != nil {
			return err
		}
		p.matrixRows(0, out, lo, hi)
		p.vector(1, logdet[lo:hi])
		return nil
	})
}

// Forward writes x = T(z) and log|det J_T(z)| for each row of z.
func (f *Flow) Forward(z mat.Matrix, x *mat.Dense, logdet []float64) error {
	return f.run(&f.forward, false, z, x, logdet)
}

// Inverse writes z = T⁻¹(x) and log|det J_{T⁻¹}(x)| for each row of x.
func (f *Flow) Inverse(x mat.Matrix, z *mat.Dense, logdet []float64) error {
	return f.run(&f.inverse, true, x, z, logdet)
}

// LogDensity writes log λ(x) for each row of x.
func (f *Flow) LogDensity(x mat.Matrix, logq []float64) error {
	if d, ok := f.Net.(DensityNet); ok {
		return f.directDensity(d, x, logq)
	}
	n, _ := x.Dims()
	if n == 0 {
		return f.Inverse(x, nil, logq) // reports the empty batch
	}
	if r, _ := dimsOf(f.z); r != n {
		f.z = mat.NewDense(n, f.Dim(), nil)
	}
	if err := f.Inverse(x, f.z, logq); err != nil {
		return err
	}
	c := f.Base.LogNorm()
	for i := range logq {
		logq[i] += f.Base.LogProbNormed(c, f.z.RawRowView(i))
	}
	return nil
}

func (f *Flow) directDensity(d DensityNet, x mat.Matrix, logq []float64) error {
	n, err := checkBatch("x", x, f.Dim())
	if err != nil {
		return err
	}
	if err := checkLen("logq", logq, n); err != nil {
		return err
	}
	build := func(g *G.ExprGraph, in []*G.Node) ([]*G.Node, error) {
		lq, err := d.LogDensity(newScope(g, f.Params), in[0])
		return []*G.Node{lq}, err
	}
	return sharded(f.Parallel, &f.density, n, f.Params.dtype, [][]int{{n, f.Dim()}}, build, func(_ int, p *program, lo, hi int) error {
		p.setRows(0, x, lo, hi)
		if err := p.run(); err != nil {
			return err
		}
		p.vector(0, logq[lo:hi])
		return nil
	})
}

// Sample draws z ~ ρ with rng, writes x = T(z) and log λ(x) for each row of
// x (it implements samplers.Proposal).
func (f *Flow) Sample(rng *rand.Rand, x *mat.Dense, logq []float64) error {
	return f.SampleLatent(rng, nil, x, logq)
}

// SampleLatent is Sample that also returns the latent draws in z (nil: not
// needed).
func (f *Flow) SampleLatent(rng *rand.Rand, z, x *mat.Dense, logq []float64) error {
	n, _ := x.Dims()
	if z == nil {
		z = mat.NewDense(n, f.Dim(), nil)
	} else if err := checkDims("z", z, n, f.Dim()); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		f.Base.Sample(rng, z.RawRowView(i))
	}
	if err := f.Forward(z, x, logq); err != nil {
		return err
	}
	c := f.Base.LogNorm()
	for i := range logq {
		logq[i] = f.Base.LogProbNormed(c, z.RawRowView(i)) - logq[i]
	}
	return nil
}

// BuildLogDensity adds log λ(x) to x's graph.
func (f *Flow) BuildLogDensity(x *G.Node) (*G.Node, error) {
	if x.Dtype() != f.Params.dtype {
		return nil, fmt.Errorf("graph: flow is %v, graph input is %v", f.Params.dtype, x.Dtype())
	}
	s := newScope(x.Graph(), f.Params)
	return f.logDensity(s, x)
}

func (f *Flow) logDensity(s *scope, x *G.Node) (*G.Node, error) {
	if d, ok := f.Net.(DensityNet); ok {
		return d.LogDensity(s, x)
	}
	z, ld, err := f.Net.Inverse(s, x)
	if err != nil {
		return nil, err
	}
	lr, err := f.Base.Apply(s, z)
	if err != nil {
		return nil, err
	}
	return G.Add(lr, ld)
}

// MLGrad writes into grad (len Params.Count()) the gradient of
// mean_i log λ(x_i) with respect to the flow parameters (maximum likelihood
// on the rows of x; ascend it) and returns the mean log-likelihood.
func (f *Flow) MLGrad(x mat.Matrix, grad []float64) (float64, error) {
	n, err := checkBatch("x", x, f.Dim())
	if err != nil {
		return 0, err
	}
	if err := checkLen("grad", grad, f.Params.Count()); err != nil {
		return 0, err
	}
	build := func(g *G.ExprGraph, in []*G.Node) ([]*G.Node, error) {
		s := newScope(g, f.Params)
		lq, err := f.logDensity(s, in[0])
		if err != nil {
			return nil, err
		}
		cost, err := G.Mean(lq)
		if err != nil {
			return nil, err
		}
		gs, err := paramGrads(cost, s)
		if err != nil {
			return nil, err
		}
		return append([]*G.Node{lq}, gs...), nil
	}
	lq := f.values(n)
	err = f.meanGrad(&f.ml, n, build, grad, func(p *program, lo, hi int) {
		p.setRows(0, x, lo, hi)
	}, lq)
	if err != nil {
		return 0, err
	}
	return mean(lq), nil
}

// meanGrad runs a per-block program whose outputs are per-row values (into
// vals) and the parameter gradient of their block mean; the gradient of
// the batch mean is the blocks' gradients weighted by their share of the
// rows.
func (f *Flow) meanGrad(c *programs, n int, build buildFunc, grad []float64, set func(p *program, lo, hi int), vals []float64) error {
	k := f.Parallel.blocks(n)
	f.grads.buffers(k, len(grad))
	err := sharded(f.Parallel, c, n, f.Params.dtype, [][]int{{n, f.Dim()}}, build, func(s int, p *program, lo, hi int) error {
		set(p, lo, hi)
		if err := p.run(); err != nil {
			return err
		}
		p.vector(0, vals[lo:hi])
		p.readFlat(1, f.grads.dst(s, grad))
		return nil
	})
	if err != nil {
		return err
	}
	f.grads.add(k, grad, true, n)
	return nil
}

// ReverseKLGrad writes into grad the gradient with respect to the flow
// parameters of the Monte Carlo reverse KL
//
//	KL(λ‖π) ≈ mean_i [log λ(T(z_i)) − log π(T(z_i))],  z_i the rows of z (draws from ρ),
//
// for an unnormalised differentiable target π, and returns the estimate
// (KL up to the target's log normaliser). The target must be comparable (a
// pointer, typically): compiled graphs are cached per target.
func (f *Flow) ReverseKLGrad(z mat.Matrix, target LogDensityBuilder, grad []float64) (float64, error) {
	n, err := checkBatch("z", z, f.Dim())
	if err != nil {
		return 0, err
	}
	if err := checkLen("grad", grad, f.Params.Count()); err != nil {
		return 0, err
	}
	if target == nil || !reflect.TypeOf(target).Comparable() {
		return 0, fmt.Errorf("graph: reverse-KL target %T must be non-nil and comparable (use a pointer)", target)
	}
	if target.Dim() != f.Dim() {
		return 0, fmt.Errorf("graph: target has dimension %d, flow %d", target.Dim(), f.Dim())
	}
	build := func(g *G.ExprGraph, in []*G.Node) ([]*G.Node, error) {
		s := newScope(g, f.Params)
		x, ld, err := f.Net.Forward(s, in[0])
		if err != nil {
			return nil, err
		}
		lr, err := f.Base.Apply(s, in[0])
		if err != nil {
			return nil, err
		}
		lq, err := G.Sub(lr, ld)
		if err != nil {
			return nil, err
		}
		lp, err := target.BuildLogDensity(x)
		if err != nil {
			return nil, err
		}
		diff, err := G.Sub(lq, lp)
		if err != nil {
			return nil, err
		}
		cost, err := G.Mean(diff)
		if err != nil {
			return nil, err
		}
		gs, err := paramGrads(cost, s)
		if err != nil {
			return nil, err
		}
		return append([]*G.Node{diff}, gs...), nil
	}
	if f.rkl == nil {
		f.rkl = make(map[LogDensityBuilder]*programs)
	}
	c := f.rkl[target]
	if c == nil {
		c = new(programs)
		f.rkl[target] = c
	}
	diff := f.values(n)
	err = f.meanGrad(c, n, build, grad, func(p *program, lo, hi int) {
		p.setRows(0, z, lo, hi)
	}, diff)
	if err != nil {
		return 0, err
	}
	return mean(diff), nil
}

func (f *Flow) values(n int) []float64 {
	if cap(f.vals) < n {
		f.vals = make([]float64, n)
	}
	return f.vals[:n]
}

func dimsOf(m *mat.Dense) (int, int) {
	if m == nil {
		return 0, 0
	}
	return m.Dims()
}

// Invalidate drops the compiled graphs.
func (f *Flow) Invalidate() {
	f.forward.reset()
	f.inverse.reset()
	f.ml.reset()
	f.rkl = nil
	f.density.reset()
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

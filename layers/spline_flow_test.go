package layers_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// newSplineFlow builds a graph.Flow of net in dtype and, with perturb > 0,
// moves every parameter by perturb·N(0, 1) (seeded), so that the flow is
// far from the identity.
func newSplineFlow(t *testing.T, net layers.SplineFlow, dtype tensor.Dtype, perturb float64, seed uint64) *graph.Flow {
	t.Helper()
	f, err := graph.NewFlow(net, layers.NewIsotropic(net.Dim, 1), dtype, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if perturb > 0 {
		rng := rand.New(rand.NewPCG(seed, 2))
		v := f.Params.Flatten(nil)
		for i := range v {
			v[i] += perturb * rng.NormFloat64()
		}
		f.Params.SetFlat(v)
	}
	return f
}

// specialRows is how many of testPoints' first rows hold a special value.
const specialRows = 6

// testPoints returns n points in dimension d: Gaussian draws of scale
// sigma, with a few coordinates placed in both tails and on the tail
// bounds ±b (every spline's outer knots).
func testPoints(rng *rand.Rand, n, d int, sigma, b float64) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, sigma*rng.NormFloat64())
		}
	}
	special := []float64{b, -b, 1.7 * b, -2.2 * b, 0, b * (1 - 1e-13)} // specialRows of them
	for k, v := range special {
		if k < n {
			x.Set(k, k%d, v)
		}
	}
	return x
}

// smoothPoints returns n Gaussian points of scale sigma in dimension d.
func smoothPoints(rng *rand.Rand, n, d int, sigma float64) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = sigma * rng.NormFloat64()
	}
	return x
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

// At initialisation (InitScale 0) the flow is the identity: T(z) = z and
// log|det J| = 0 to rounding, in float64 and float32.
func TestSplineFlowIdentityAtInit(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, net := range []layers.SplineFlow{
			{Dim: 5, Blocks: 2, Hidden: []int{8, 8}},
			{Dim: 4, Blocks: 1, Mask: layers.MaskCheckerboard, Spline: layers.RQSpline{Bins: 3, TailBound: 3}},
		} {
			f := newSplineFlow(t, net, dt, 0, 1)
			z := testPoints(rand.New(rand.NewPCG(1, 2)), 9, net.Dim, 3, 5)
			x := mat.NewDense(9, net.Dim, nil)
			ld := make([]float64, 9)
			if err := f.Forward(z, x, ld); err != nil {
				t.Fatal(err)
			}
			tol := 1e-13
			if dt == tensor.Float32 {
				tol = 1e-5
			}
			if e := maxAbsDiff(x.RawMatrix().Data, z.RawMatrix().Data); e > tol*5 {
				t.Errorf("%v %+v: |T(z) − z| = %.2e at init", dt, net, e)
			}
			if e := maxAbsDiff(ld, make([]float64, 9)); e > tol {
				t.Errorf("%v %+v: |log det| = %.2e at init", dt, net, e)
			}
		}
	}
}

// T⁻¹(T(z)) = z and T(T⁻¹(x)) = x to 1e-10 in float64 for flows far from
// the identity (points moved by about 2), points in the tails and on the
// tail bounds included; the two log-determinants cancel. A wilder flow
// (parameters moved by 0.3·N(0, 1): points moved by about 6, derivatives
// down to e⁻²⁰) inverts to 1e-8: the error of z is the rounding of x
// divided by the flow's derivative.
func TestSplineFlowInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		net          layers.SplineFlow
		perturb, tol float64
	}{
		{layers.SplineFlow{Dim: 5, Blocks: 2, Hidden: []int{16}, Activation: layers.Tanh}, 0.1, 1e-10},
		{layers.SplineFlow{Dim: 6, Blocks: 2, Hidden: []int{8}, Mask: layers.MaskCheckerboard2D, MaskWidth: 3, Spline: layers.RQSpline{Bins: 4, TailBound: 3}}, 0.1, 1e-10},
		{layers.SplineFlow{Dim: 5, Blocks: 2, Hidden: []int{16}, Activation: layers.Tanh}, 0.3, 1e-8},
	} {
		net := c.net
		f := newSplineFlow(t, net, tensor.Float64, c.perturb, 5)
		n, d := 40, net.Dim
		z := testPoints(rng, n, d, 2.5, net.Spline.WithDefaults().TailBound)
		x, back := mat.NewDense(n, d, nil), mat.NewDense(n, d, nil)
		ld, ldBack := make([]float64, n), make([]float64, n)
		if err := f.Forward(z, x, ld); err != nil {
			t.Fatal(err)
		}
		if err := f.Inverse(x, back, ldBack); err != nil {
			t.Fatal(err)
		}
		moved := maxAbsDiff(x.RawMatrix().Data, z.RawMatrix().Data)
		e := maxAbsDiff(back.RawMatrix().Data, z.RawMatrix().Data)
		for i := range ld {
			ldBack[i] = -ldBack[i]
		}
		el := maxAbsDiff(ld, ldBack)
		// The other way round.
		if err := f.Inverse(z, x, ld); err != nil {
			t.Fatal(err)
		}
		if err := f.Forward(x, back, ldBack); err != nil {
			t.Fatal(err)
		}
		e2 := maxAbsDiff(back.RawMatrix().Data, z.RawMatrix().Data)
		t.Logf("%d-d, %d bins, perturbation %v: max |T(z) − z| = %.2f; |T⁻¹(T(z)) − z| ≤ %.2e, |T(T⁻¹(x)) − x| ≤ %.2e, |ld + ld⁻¹| ≤ %.2e",
			d, net.Spline.WithDefaults().Bins, c.perturb, moved, e, e2, el)
		if moved < 1 || e > c.tol || e2 > c.tol || el > c.tol {
			t.Errorf("%+v: flow moved points by %v; inverse errors %.2e, %.2e; log-det mismatch %.2e (tolerance %g)", net, moved, e, e2, el, c.tol)
		}
	}
}

// transport is f.Forward (inverse: f.Inverse) of in.
func transport(f *graph.Flow, inverse bool, in, out *mat.Dense, ld []float64) error {
	if inverse {
		return f.Inverse(in, out, ld)
	}
	return f.Forward(in, out, ld)
}

// logDetFD is log|det ∂T/∂z| at z from a central finite-difference
// Jacobian (gonum diff/fd) and an LU factorisation.
func logDetFD(t *testing.T, f *graph.Flow, z []float64, inverse bool) float64 {
	d := len(z)
	in, out := mat.NewDense(1, d, nil), mat.NewDense(1, d, nil)
	ld := make([]float64, 1)
	jac := mat.NewDense(d, d, nil)
	fd.Jacobian(jac, func(y, x []float64) {
		in.SetRow(0, x)
		if err := transport(f, inverse, in, out, ld); err != nil {
			t.Fatal(err)
		}
		copy(y, out.RawRowView(0))
	}, z, &fd.JacobianSettings{Formula: fd.Central})
	var lu mat.LU
	lu.Factorize(jac)
	l, _ := lu.LogDet()
	return l
}

// The flow's log|det J| agrees with the log-determinant of a
// finite-difference Jacobian, forward and inverse, to 1e-7 (relative,
// or absolute below 1).
func TestSplineFlowLogDetFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	net := layers.SplineFlow{Dim: 5, Blocks: 2, Hidden: []int{16}, Activation: layers.Tanh}
	f := newSplineFlow(t, net, tensor.Float64, 0.1, 9)
	n := 12
	// Tail points, but none on the bounds ±B: the spline is C¹ there, not
	// C², and a central difference across a bound errs by O(step).
	z := smoothPoints(rng, n, net.Dim, 2)
	z.Set(0, 4, 6.5)
	z.Set(1, 0, -5.5)
	ld := make([]float64, n)
	worst := 0.0
	for _, inverse := range []bool{false, true} {
		out := mat.NewDense(n, net.Dim, nil)
		if err := transport(f, inverse, z, out, ld); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			want := logDetFD(t, f, z.RawRowView(i), inverse)
			e := math.Abs(ld[i]-want) / math.Max(1, math.Abs(want))
			worst = math.Max(worst, e)
			if e > 1e-7 {
				t.Errorf("inverse %v, point %v: log det %v, finite differences %v", inverse, z.RawRowView(i), ld[i], want)
			}
		}
	}
	t.Logf("log|det J| vs finite-difference Jacobian: relative error ≤ %.2e", worst)
}

// flowEnergy is −log λ(x) of a spline flow as a graph.EnergyNet, so that
// graph.CheckEBM checks ∇ₓ log λ and the parameter gradient of the
// density through the flow's inverse.
type flowEnergy struct {
	net  layers.SplineFlow
	base layers.Gaussian
}

func (e flowEnergy) Dim() int { return e.net.Dim }
func (e flowEnergy) ParamSpecs() []layers.ParamSpec {
	s, err := e.net.ParamSpecs()
	if err != nil {
		panic(err)
	}
	return s
}
func (e flowEnergy) Energy(b layers.Binder, x *G.Node) (*G.Node, error) {
	z, ld, err := e.net.Inverse(b, x)
	if err != nil {
		return nil, err
	}
	lr, err := e.base.Apply(b, z)
	if err != nil {
		return nil, err
	}
	lq, err := G.Add(lr, ld)
	if err != nil {
		return nil, err
	}
	return G.Neg(lq)
}

// Gradients against central finite differences (norm-wise relative error,
// ∞-norm, < 1e-6 in float64):
//   - ∇ₓ log λ(x) and the parameter gradient of an energy built from
//     log λ (graph.CheckEBM on flowEnergy): the inverse pass;
//   - the maximum-likelihood gradient (graph.CheckFlow, Flow.MLGrad);
//   - the reverse-KL gradient (Flow.ReverseKLGrad): the forward pass;
//   - ∇_z of the NeuTra pull-back log π(T(z)) + log|det J_T(z)|
//     (graph.Latent): the forward pass with respect to its input.
func TestSplineFlowGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	net := layers.SplineFlow{Dim: 4, Blocks: 2, Hidden: []int{8}, Activation: layers.Tanh, Spline: layers.RQSpline{Bins: 5, TailBound: 3}}
	base := layers.NewIsotropic(4, 1)
	n := 6
	// Points in the tails but none on the tail bounds ±B: there ∂ log|det J|
	// jumps (the spline's curvature does), and central differences across
	// the bound are off by half the jump.
	x := smoothPoints(rng, n, net.Dim, 1.5)
	x.Set(0, 0, 4)
	x.Set(1, 3, -3.5)

	ebm, err := graph.NewEBM(flowEnergy{net, base}, nil, tensor.Float64, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	f := newSplineFlow(t, net, tensor.Float64, 0.3, 11)
	ebm.Params.SetFlat(f.Params.Flatten(nil))
	checks, err := graph.CheckEBM(ebm, x, x, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := graph.CheckFlow(f, x)
	if err != nil {
		t.Fatal(err)
	}
	checks = append(checks, fc)

	// Reverse KL against the toy EBM as target.
	target, err := graph.NewEBM(graph.ToyEnergyNet(4, false), &base, tensor.Float64, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	z := smoothPoints(rng, n, net.Dim, 1.5)
	z.Set(1, 2, -3.5)
	z.Set(2, 0, 3.2)
	grad := make([]float64, f.Params.Count())
	if _, err := f.ReverseKLGrad(z, target, grad); err != nil {
		t.Fatal(err)
	}
	theta := f.Params.Flatten(nil)
	xs, ld, lp := mat.NewDense(n, net.Dim, nil), make([]float64, n), make([]float64, n)
	kl := func(v []float64) float64 {
		f.Params.SetFlat(v)
		defer f.Params.SetFlat(theta)
		if err := f.Forward(z, xs, ld); err != nil {
			t.Fatal(err)
		}
		if err := target.LogDensity(xs, lp); err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i := range ld {
			s += (base.LogProb(z.RawRowView(i)) - ld[i] - lp[i]) / float64(n)
		}
		return s
	}
	want := fd.Gradient(nil, kl, theta, &fd.Settings{Formula: fd.Central})
	checks = append(checks, graph.GradCheck{What: "∇α reverse KL (flow forward pass)", Coords: len(theta), RelErr: graph.RelErrInf(grad, want)})

	// NeuTra's latent gradient.
	lat, err := graph.NewLatent(f, target)
	if err != nil {
		t.Fatal(err)
	}
	lg := mat.NewDense(n, net.Dim, nil)
	if err := lat.LogDensityGrad(z, lp, lg); err != nil {
		t.Fatal(err)
	}
	one, oneLp := mat.NewDense(1, net.Dim, nil), make([]float64, 1)
	zc := graph.GradCheck{What: "∇z log π(T(z)) + log|det J_T(z)|"}
	for i := 0; i < n; i++ {
		w := fd.Gradient(nil, func(v []float64) float64 {
			one.SetRow(0, v)
			if err := lat.LogDensity(one, oneLp); err != nil {
				t.Fatal(err)
			}
			return oneLp[0]
		}, z.RawRowView(i), &fd.Settings{Formula: fd.Central})
		zc.Coords += net.Dim
		zc.RelErr = math.Max(zc.RelErr, graph.RelErrInf(lg.RawRowView(i), w))
	}
	checks = append(checks, zc)
	for _, c := range checks {
		t.Log(c)
		if c.RelErr > 1e-6 {
			t.Errorf("%s: relative error %.2e > 1e-6", c.What, c.RelErr)
		}
	}
}

// A float32 flow with the same (float32-rounded) parameters agrees with
// the float64 one to float32 accuracy: samples, log-densities and the
// maximum-likelihood gradient.
func TestSplineFlowFloat32(t *testing.T) {
	net := layers.SplineFlow{Dim: 5, Blocks: 2, Hidden: []int{16}}
	f32 := newSplineFlow(t, net, tensor.Float32, 0.1, 13)
	f64 := newSplineFlow(t, net, tensor.Float64, 0, 13)
	f64.Params.SetFlat(f32.Params.Flatten(nil))
	rng := rand.New(rand.NewPCG(5, 6))
	n := 50
	z := testPoints(rng, n, net.Dim, 2, 5)
	for i, v := range z.RawMatrix().Data {
		z.RawMatrix().Data[i] = float64(float32(v))
	}
	var xs [2]*mat.Dense
	var ld, lq [2][]float64
	var grads [2][]float64
	for k, f := range []*graph.Flow{f64, f32} {
		xs[k], ld[k], lq[k] = mat.NewDense(n, net.Dim, nil), make([]float64, n), make([]float64, n)
		if err := f.Forward(z, xs[k], ld[k]); err != nil {
			t.Fatal(err)
		}
		if err := f.LogDensity(z, lq[k]); err != nil {
			t.Fatal(err)
		}
		grads[k] = make([]float64, f.Params.Count())
		if _, err := f.MLGrad(z, grads[k]); err != nil {
			t.Fatal(err)
		}
	}
	ex := maxAbsDiff(xs[0].RawMatrix().Data, xs[1].RawMatrix().Data)
	el := math.Max(maxAbsDiff(ld[0], ld[1]), maxAbsDiff(lq[0], lq[1]))
	eg := graph.RelErrInf(grads[1], grads[0])
	t.Logf("float32 vs float64: |Δx| ≤ %.2e, |Δ log det|, |Δ log λ| ≤ %.2e, ML gradient relative %.2e", ex, el, eg)
	if ex > 1e-5 || el > 1e-4 || eg > 1e-4 {
		t.Errorf("float32 vs float64: |Δx| %.2e, |Δ log| %.2e, gradient %.2e", ex, el, eg)
	}
}

// Two flows sharing one SplineFlow value (so the same operation values
// and column slices), evaluated concurrently, give the sequential results.
func TestSplineFlowConcurrent(t *testing.T) {
	net := layers.SplineFlow{Dim: 4, Blocks: 2, Hidden: []int{8}}
	var flows [4]*graph.Flow
	for i := range flows {
		flows[i] = newSplineFlow(t, net, tensor.Float64, 0.3, 17)
	}
	x := testPoints(rand.New(rand.NewPCG(1, 9)), 32, 4, 2, 5)
	want := make([]float64, 32)
	if err := flows[0].LogDensity(x, want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(flows))
	for i, f := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := make([]float64, 32)
			grad := make([]float64, f.Params.Count())
			for r := 0; r < 20; r++ {
				if _, err := f.MLGrad(x, grad); err != nil {
					errs[i] = err
					return
				}
				if err := f.LogDensity(x, got); err != nil {
					errs[i] = err
					return
				}
				if maxAbsDiff(got, want) != 0 {
					errs[i] = fmt.Errorf("flow %d run %d: log λ differs by %v", i, r, maxAbsDiff(got, want))
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestSplineFlowErrors(t *testing.T) {
	for _, net := range []layers.SplineFlow{
		{Dim: 1, Blocks: 1},
		{Dim: 4, Blocks: 0},
		{Dim: 4, Blocks: 1, Mask: "spiral"},
		{Dim: 4, Blocks: 1, Hidden: []int{0}},
		{Dim: 4, Blocks: 1, InitScale: -1},
		{Dim: 4, Blocks: 1, Spline: layers.RQSpline{Bins: 4, MinBinWidth: 0.3}},
		{Dim: 5, Blocks: 1, Mask: layers.MaskCheckerboard2D, MaskWidth: 2},
	} {
		if _, err := net.ParamSpecs(); err == nil {
			t.Errorf("%+v: no error", net)
		}
	}
	specs, err := layers.SplineFlow{Dim: 3, Blocks: 1, Hidden: []int{4}, Name: "nsf"}.ParamSpecs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range specs {
		names = append(names, fmt.Sprintf("%s%v", p.Name, p.Shape))
	}
	// Coupling 0 transforms coordinate 0 from (1, 2); coupling 1 transforms
	// (1, 2) from 0; 23 = 3·8 − 1 parameters per transformed coordinate.
	want := "[nsf.0.net.0.weight[4 2] nsf.0.net.0.bias[4] nsf.0.net.1.weight[23 4] nsf.0.net.1.bias[23] nsf.1.net.0.weight[4 1] nsf.1.net.0.bias[4] nsf.1.net.1.weight[46 4] nsf.1.net.1.bias[46]]"
	if fmt.Sprint(names) != want {
		t.Errorf("parameters %v\nwant %v", names, want)
	}
}

// torchReference is the PyTorch side of TestSplineFlowMatchesPyTorch: the
// couplings written out in plain torch, the spline being nflows'
// unconstrained_rational_quadratic_spline (linear tails) as published.
const torchReference = `
import json, sys
import numpy as np
import torch
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)
cfg = json.load(open(sys.argv[1]))
K, B = cfg["bins"], cfg["tail_bound"]
mw, mh, md = cfg["min_bin_width"], cfg["min_bin_height"], cfg["min_derivative"]
params = {k: torch.tensor(v["data"]).reshape(v["shape"]).requires_grad_() for k, v in cfg["params"].items()}

def searchsorted(bin_locations, inputs, eps=1e-6):
    bin_locations = bin_locations.clone()
    bin_locations[..., -1] += eps
    return torch.sum(inputs[..., None] >= bin_locations, dim=-1) - 1

def rational_quadratic_spline(inputs, unnormalized_widths, unnormalized_heights, unnormalized_derivatives, inverse=False,
                              left=0., right=1., bottom=0., top=1., min_bin_width=1e-3, min_bin_height=1e-3, min_derivative=1e-3):
    num_bins = unnormalized_widths.shape[-1]
    widths = F.softmax(unnormalized_widths, dim=-1)
    widths = min_bin_width + (1 - min_bin_width * num_bins) * widths
    cumwidths = torch.cumsum(widths, dim=-1)
    cumwidths = F.pad(cumwidths, pad=(1, 0), mode='constant', value=0.0)
    cumwidths = (right - left) * cumwidths + left
    cumwidths[..., 0] = left
    cumwidths[..., -1] = right
    widths = cumwidths[..., 1:] - cumwidths[..., :-1]
    derivatives = min_derivative + F.softplus(unnormalized_derivatives)
    heights = F.softmax(unnormalized_heights, dim=-1)
    heights = min_bin_height + (1 - min_bin_height * num_bins) * heights
    cumheights = torch.cumsum(heights, dim=-1)
    cumheights = F.pad(cumheights, pad=(1, 0), mode='constant', value=0.0)
    cumheights = (top - bottom) * cumheights + bottom
    cumheights[..., 0] = bottom
    cumheights[..., -1] = top
    heights = cumheights[..., 1:] - cumheights[..., :-1]
    if inverse:
        bin_idx = searchsorted(cumheights, inputs)[..., None]
    else:
        bin_idx = searchsorted(cumwidths, inputs)[..., None]
    input_cumwidths = cumwidths.gather(-1, bin_idx)[..., 0]
    input_bin_widths = widths.gather(-1, bin_idx)[..., 0]
    input_cumheights = cumheights.gather(-1, bin_idx)[..., 0]
    delta = heights / widths
    input_delta = delta.gather(-1, bin_idx)[..., 0]
    input_derivatives = derivatives.gather(-1, bin_idx)[..., 0]
    input_derivatives_plus_one = derivatives[..., 1:].gather(-1, bin_idx)[..., 0]
    input_heights = heights.gather(-1, bin_idx)[..., 0]
    if inverse:
        a = (((inputs - input_cumheights) * (input_derivatives + input_derivatives_plus_one - 2 * input_delta)
              + input_heights * (input_delta - input_derivatives)))
        b = (input_heights * input_derivatives - (inputs - input_cumheights)
             * (input_derivatives + input_derivatives_plus_one - 2 * input_delta))
        c = - input_delta * (inputs - input_cumheights)
        discriminant = b.pow(2) - 4 * a * c
        assert (discriminant >= 0).all()
        root = (2 * c) / (-b - torch.sqrt(discriminant))
        outputs = root * input_bin_widths + input_cumwidths
        theta_one_minus_theta = root * (1 - root)
        denominator = input_delta + ((input_derivatives + input_derivatives_plus_one - 2 * input_delta) * theta_one_minus_theta)
        derivative_numerator = input_delta.pow(2) * (input_derivatives_plus_one * root.pow(2)
                                                     + 2 * input_delta * theta_one_minus_theta
                                                     + input_derivatives * (1 - root).pow(2))
        logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
        return outputs, -logabsdet
    theta = (inputs - input_cumwidths) / input_bin_widths
    theta_one_minus_theta = theta * (1 - theta)
    numerator = input_heights * (input_delta * theta.pow(2) + input_derivatives * theta_one_minus_theta)
    denominator = input_delta + ((input_derivatives + input_derivatives_plus_one - 2 * input_delta) * theta_one_minus_theta)
    outputs = input_cumheights + numerator / denominator
    derivative_numerator = input_delta.pow(2) * (input_derivatives_plus_one * theta.pow(2)
                                                 + 2 * input_delta * theta_one_minus_theta
                                                 + input_derivatives * (1 - theta).pow(2))
    logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
    return outputs, logabsdet

def unconstrained_rational_quadratic_spline(inputs, uw, uh, ud, inverse=False, tail_bound=1.):
    inside = (inputs >= -tail_bound) & (inputs <= tail_bound)
    outside = ~inside
    outputs = torch.zeros_like(inputs)
    logabsdet = torch.zeros_like(inputs)
    ud = F.pad(ud, pad=(1, 1))
    constant = np.log(np.exp(1 - md) - 1)
    ud[..., 0] = constant
    ud[..., -1] = constant
    outputs[outside] = inputs[outside]
    logabsdet[outside] = 0
    if inside.any():
        outputs[inside], logabsdet[inside] = rational_quadratic_spline(
            inputs[inside], uw[inside, :], uh[inside, :], ud[inside, :], inverse=inverse,
            left=-tail_bound, right=tail_bound, bottom=-tail_bound, top=tail_bound,
            min_bin_width=mw, min_bin_height=mh, min_derivative=md)
    return outputs, logabsdet

def coupling(c, x, inverse):
    h = x[:, c["identity"]]
    names = c["layers"]
    for i, name in enumerate(names):
        h = F.linear(h, params[name + ".weight"], params[name + ".bias"])
        if i < len(names) - 1:
            h = torch.tanh(h)
    tr = c["transformed"]
    theta = h.reshape(x.shape[0], len(tr), 3 * K - 1)
    y, ld = unconstrained_rational_quadratic_spline(x[:, tr], theta[..., :K], theta[..., K:2 * K], theta[..., 2 * K:], inverse, B)
    out = x.clone()
    out[:, tr] = y
    return out, ld.sum(-1)

def flow(x, inverse):
    total = torch.zeros(x.shape[0])
    cs = cfg["couplings"][::-1] if inverse else cfg["couplings"]
    for c in cs:
        x, ld = coupling(c, x, inverse)
        total = total + ld
    return x, total

def log_normal(z):
    return -0.5 * (z ** 2).sum(-1) - 0.5 * z.shape[1] * np.log(2 * np.pi)

z = torch.tensor(cfg["z"])
x, ld = flow(z, False)
xin = torch.tensor(cfg["x"]).requires_grad_()
zi, ldi = flow(xin, True)
logq = log_normal(zi) + ldi
logq.mean().backward()
out = {"x": x.detach().flatten().tolist(), "logdet": ld.detach().tolist(), "z": zi.detach().flatten().tolist(),
       "log_density": logq.detach().tolist(), "grad_x": (xin.grad * len(cfg["x"])).flatten().tolist(),
       "grad_params": {k: v.grad.flatten().tolist() for k, v in params.items()}}
json.dump(out, open(sys.argv[2], "w"))
`

// The flow matches a plain-torch transcription of nflows' spline coupling
// (PyTorch 1.13 under /usr/bin/python3), forward and inverse, log-density
// and its gradients with respect to x and to every parameter. Skipped
// without torch.
func TestSplineFlowMatchesPyTorch(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import torch, numpy").Run() != nil {
		t.Skip("PyTorch cross-check of the spline flow skipped: no torch and numpy under /usr/bin/python3 (apt-get install python3-torch)")
	}
	net := layers.SplineFlow{Dim: 5, Blocks: 2, Hidden: []int{12}, Activation: layers.Tanh, Spline: layers.RQSpline{Bins: 6, TailBound: 3}}
	f := newSplineFlow(t, net, tensor.Float64, 0.4, 19)
	sp := net.Spline.WithDefaults()
	cs, err := net.Couplings()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 24))
	n := 30
	z := testPoints(rng, n, net.Dim, 2, 3)
	x := testPoints(rng, n, net.Dim, 2, 3)
	type coupling struct {
		Identity    []int    `json:"identity"`
		Transformed []int    `json:"transformed"`
		Layers      []string `json:"layers"`
	}
	type param struct {
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	}
	cfg := map[string]any{"bins": sp.Bins, "tail_bound": sp.TailBound, "min_bin_width": sp.MinBinWidth,
		"min_bin_height": sp.MinBinHeight, "min_derivative": sp.MinDerivative}
	var cc []coupling
	for _, c := range cs {
		var names []string
		for _, l := range c.Net.Linears() {
			names = append(names, l.Name)
		}
		cc = append(cc, coupling{c.Identity, c.Transformed, names})
	}
	ps := map[string]param{}
	for _, p := range f.Params.List() {
		ps[p.Name] = param{p.Shape, p.Float64s()}
	}
	rows := func(m *mat.Dense) [][]float64 {
		r, _ := m.Dims()
		out := make([][]float64, r)
		for i := range out {
			out[i] = m.RawRowView(i)
		}
		return out
	}
	cfg["couplings"], cfg["params"], cfg["z"], cfg["x"] = cc, ps, rows(z), rows(x)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(script, []byte(torchReference), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command(py, script, in, out).CombinedOutput(); err != nil {
		t.Fatalf("torch reference: %v\n%s", err, o)
	}
	var ref struct {
		X, Logdet, Z, LogDensity, GradX []float64
		GradParams                      map[string][]float64 `json:"grad_params"`
	}
	b, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(strings.NewReplacer(`"log_density"`, `"LogDensity"`, `"grad_x"`, `"GradX"`).Replace(string(b))), &ref); err != nil {
		t.Fatal(err)
	}
	xs, ld := mat.NewDense(n, net.Dim, nil), make([]float64, n)
	if err := f.Forward(z, xs, ld); err != nil {
		t.Fatal(err)
	}
	zs, lq, ldi := mat.NewDense(n, net.Dim, nil), make([]float64, n), make([]float64, n)
	if err := f.Inverse(x, zs, ldi); err != nil {
		t.Fatal(err)
	}
	if err := f.LogDensity(x, lq); err != nil {
		t.Fatal(err)
	}
	ebm, err := graph.NewEBM(flowEnergy{net, layers.NewIsotropic(net.Dim, 1)}, nil, tensor.Float64, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	ebm.Params.SetFlat(f.Params.Flatten(nil))
	gx, lp := mat.NewDense(n, net.Dim, nil), make([]float64, n)
	if err := ebm.LogDensityGrad(x, lp, gx); err != nil {
		t.Fatal(err)
	}
	grad := make([]float64, f.Params.Count())
	if _, err := f.MLGrad(x, grad); err != nil {
		t.Fatal(err)
	}
	var refGrad []float64
	for _, p := range f.Params.List() {
		refGrad = append(refGrad, ref.GradParams[p.Name]...)
	}
	for _, c := range []struct {
		what      string
		got, want []float64
		tol       float64
	}{
		{"x = T(z)", xs.RawMatrix().Data, ref.X, 1e-12},
		{"log|det J_T(z)|", ld, ref.Logdet, 1e-12},
		{"z = T⁻¹(x)", zs.RawMatrix().Data, ref.Z, 1e-12},
		{"log λ(x)", lq, ref.LogDensity, 1e-12},
		// ∇ₓ log λ jumps where a coupling's input lies on the tail bound
		// (the spline's log-derivative has a slope there, the identity
		// tail none): testPoints' first rows put x on ±b, whose image
		// through the first coupling lands within an ULP of ±b, on either
		// side by the rounding of the machine's vector math (3.2e-2 apart
		// from PyTorch's with glibc's libmvec on an AMD EPYC, 1e-13 with
		// pure Go). The gradient is compared at the other, random points;
		// its finite-difference checks cover the rest.
		{"∇ₓ log λ(x)", gx.RawMatrix().Data[specialRows*net.Dim:], ref.GradX[specialRows*net.Dim:], 1e-10},
		{"∇α mean log λ(x)", grad, refGrad, 1e-10},
	} {
		if len(c.got) != len(c.want) {
			t.Fatalf("%s: %d values, PyTorch %d", c.what, len(c.got), len(c.want))
		}
		e := graph.RelErrInf(c.got, c.want)
		t.Logf("%-18s vs PyTorch: relative error %.2e", c.what, e)
		if e > c.tol {
			t.Errorf("%s: relative error %.2e against PyTorch (tolerance %g)", c.what, e, c.tol)
		}
	}
}

// BenchmarkFlowMLGrad times one maximum-likelihood gradient (the density
// pass and its backward pass) of a spline flow beside a RealNVP of the same
// blocks and hidden widths: batch 256, d = 8, 4 blocks, hidden [64 64].
func BenchmarkFlowMLGrad(b *testing.B) {
	for _, c := range []struct {
		name string
		net  graph.FlowNet
	}{
		{"spline", layers.SplineFlow{Dim: 8, Blocks: 4, Hidden: []int{64, 64}}},
		{"realnvp", layers.RealNVP{Dim: 8, Blocks: 4, Hidden: []int{64, 64}, InitScale: 1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, err := graph.NewFlow(c.net, layers.NewIsotropic(8, 1), tensor.Float64, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				b.Fatal(err)
			}
			x := smoothPoints(rand.New(rand.NewPCG(3, 4)), 256, 8, 1.5)
			grad := make([]float64, f.Params.Count())
			if _, err := f.MLGrad(x, grad); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.MLGrad(x, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

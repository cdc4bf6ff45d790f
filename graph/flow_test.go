package graph

import (
	"fmt"
	"math"
	"testing"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

func flowCases() []layers.RealNVP {
	return []layers.RealNVP{
		{Dim: 2, Blocks: 2, Hidden: []int{16}},
		{Dim: 2, Blocks: 1, BlockDepth: 2, Hidden: []int{8, 8}, Activation: layers.Tanh},
		{Dim: 6, Blocks: 2, Hidden: []int{10, 10}, Mask: layers.MaskCheckerboard, Activation: layers.SiLU},
		{Dim: 6, Blocks: 2, BlockDepth: 2, Hidden: []int{12}, Mask: layers.MaskHalf},
		{Dim: 5, Blocks: 1, Hidden: []int{7}, Activation: layers.ELU},
	}
}

func caseName(r layers.RealNVP) string {
	return fmt.Sprintf("d%d-b%d-depth%d-%s-%s", r.Dim, r.Blocks, r.BlockDepth, r.Mask, r.Activation)
}

func TestFlowParameterNames(t *testing.T) {
	f, err := NewFlow(layers.RealNVP{Dim: 4, Blocks: 2, Hidden: []int{16, 16}}, layers.NewIsotropic(4, 1), tensor.Float64, newRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Params.Get("couplings.3.s.1.bias")
	if p == nil || fmt.Sprint(p.Shape) != "[16]" {
		t.Fatalf("couplings.3.s.1.bias = %+v, want a 16-vector", p)
	}
	if p := f.Params.Get("couplings.0.t.2.weight"); p == nil || fmt.Sprint(p.Shape) != "[4 16]" {
		t.Fatalf("couplings.0.t.2.weight = %+v, want shape [4 16]", p)
	}
	// App. C.2 sizes (REFERENCE §2): 8 couplings of [2,16,2] have 1,312 parameters.
	g, err := NewFlow(layers.RealNVP{Dim: 2, Blocks: 4, Hidden: []int{16}}, layers.NewIsotropic(2, 1), tensor.Float64, newRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	if n := g.Params.Count(); n != 1312 {
		t.Errorf("4 blocks of [2,16,2]: %d parameters, want 1,312", n)
	}
}

func TestFlowStartsAtIdentity(t *testing.T) {
	for _, r := range flowCases() {
		r.Blocks += 1 // deeper than the cases, to be strict
		f, err := NewFlow(r, layers.NewIsotropic(r.Dim, 2), tensor.Float64, newRNG(2))
		if err != nil {
			t.Fatal(err)
		}
		z := randMatrix(newRNG(3), 64, r.Dim, 3)
		x := mat.NewDense(64, r.Dim, nil)
		ld := make([]float64, 64)
		if err := f.Forward(z, x, ld); err != nil {
			t.Fatal(err)
		}
		x.Sub(x, z)
		if d := mat.Norm(x, math.Inf(1)); d >= 1e-5 {
			t.Errorf("%s: max |T(z) − z| = %.3g at initialisation, want < 1e-5", caseName(r), d)
		}
	}
}

func TestFlowInverse(t *testing.T) {
	for _, r := range flowCases() {
		t.Run(caseName(r), func(t *testing.T) {
			f := randomFlow(t, r, 1, tensor.Float64, 4)
			const n = 50
			z := randMatrix(newRNG(5), n, r.Dim, 1)
			x, back := mat.NewDense(n, r.Dim, nil), mat.NewDense(n, r.Dim, nil)
			ldF, ldI := make([]float64, n), make([]float64, n)
			if err := f.Forward(z, x, ldF); err != nil {
				t.Fatal(err)
			}
			if err := f.Inverse(x, back, ldI); err != nil {
				t.Fatal(err)
			}
			diff := mat.NewDense(n, r.Dim, nil)
			diff.Sub(back, z)
			if d := mat.Norm(diff, math.Inf(1)); d > 1e-10 {
				t.Errorf("max |T⁻¹(T(z)) − z| = %.3g, want ≤ 1e-10", d)
			}
			diff.Sub(x, z)
			if d := mat.Norm(diff, math.Inf(1)); d < 1e-2 {
				t.Errorf("random flow is too close to the identity (%.3g) for this test to mean anything", d)
			}
			for i := range ldF {
				if math.Abs(ldF[i]+ldI[i]) > 1e-10 {
					t.Fatalf("log|J_T(z)| = %v but log|J_T⁻¹(T(z))| = %v", ldF[i], ldI[i])
				}
			}
		})
	}
}

// TestFlowLogDetMatchesJacobian compares log|det J_T| with the log-determinant
// of the central finite-difference Jacobian; its entries carry errors of
// about 1e-10, so the log-determinant agrees to about cond(J)·1e-10 ≪ 1e-6.
func TestFlowLogDetMatchesJacobian(t *testing.T) {
	for _, r := range flowCases() {
		t.Run(caseName(r), func(t *testing.T) {
			f := randomFlow(t, r, 1, tensor.Float64, 6)
			z := randMatrix(newRNG(7), 3, r.Dim, 1)
			x := mat.NewDense(3, r.Dim, nil)
			ld := make([]float64, 3)
			if err := f.Forward(z, x, ld); err != nil {
				t.Fatal(err)
			}
			one, oneLd := mat.NewDense(1, r.Dim, nil), make([]float64, 1)
			for i := 0; i < 3; i++ {
				jac := mat.NewDense(r.Dim, r.Dim, nil)
				fd.Jacobian(jac, func(y, v []float64) {
					if err := f.Forward(mat.NewDense(1, r.Dim, v), one, oneLd); err != nil {
						t.Fatal(err)
					}
					copy(y, one.RawRowView(0))
				}, z.RawRowView(i), &fd.JacobianSettings{Formula: fd.Central})
				logdet, sign := mat.LogDet(jac)
				if sign <= 0 || math.Abs(logdet-ld[i]) > 1e-6 {
					t.Errorf("row %d: log|det J_T| = %v, finite differences give %v (sign %v)", i, ld[i], logdet, sign)
				}
			}
		})
	}
}

// TestFlowDensityIntegratesToOne integrates exp(log λ) of a random
// non-identity flow on a grid in d = 2 with the midpoint rule.
func TestFlowDensityIntegratesToOne(t *testing.T) {
	f := randomFlow(t, layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{16}, Activation: layers.Tanh}, 1, tensor.Float64, 8)
	const (
		lim = 14.0
		m   = 700
	)
	h := 2 * lim / m
	const batch = 4900
	x := mat.NewDense(batch, 2, nil)
	lq := make([]float64, batch)
	total, k := 0.0, 0
	flush := func(rows int) {
		if err := f.LogDensity(x.Slice(0, rows, 0, 2), lq[:rows]); err != nil {
			t.Fatal(err)
		}
		for _, v := range lq[:rows] {
			total += math.Exp(v) * h * h
		}
	}
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			x.Set(k, 0, -lim+(float64(i)+0.5)*h)
			x.Set(k, 1, -lim+(float64(j)+0.5)*h)
			if k++; k == batch {
				flush(k)
				k = 0
			}
		}
	}
	if k > 0 {
		flush(k)
	}
	if math.Abs(total-1) > 1e-3 {
		t.Errorf("∫ λ = %v, want 1 ± 1e-3", total)
	}
}

func TestFlowSampleDensityConsistent(t *testing.T) {
	f := randomFlow(t, layers.RealNVP{Dim: 3, Blocks: 2, Hidden: []int{9}}, 1.7, tensor.Float64, 9)
	const n = 40
	x, z := mat.NewDense(n, 3, nil), mat.NewDense(n, 3, nil)
	lq, lq2 := make([]float64, n), make([]float64, n)
	if err := f.SampleLatent(newRNG(10), z, x, lq); err != nil {
		t.Fatal(err)
	}
	if err := f.LogDensity(x, lq2); err != nil {
		t.Fatal(err)
	}
	if r := relErr(lq, lq2); r > 1e-10 {
		t.Errorf("log λ from sampling and from T⁻¹ differ (rel. %.2g)", r)
	}
}

func TestFlowMLGradMatchesFiniteDifferences(t *testing.T) {
	for _, r := range flowCases() {
		t.Run(caseName(r), func(t *testing.T) {
			f := randomFlow(t, r, 1.3, tensor.Float64, 11)
			x := randMatrix(newRNG(12), 7, r.Dim, 1)
			grad := make([]float64, f.Params.Count())
			ll, err := f.MLGrad(x, grad)
			if err != nil {
				t.Fatal(err)
			}
			lq := make([]float64, 7)
			theta := f.Params.Flatten(nil)
			obj := func(v []float64) float64 {
				f.Params.SetFlat(v)
				defer f.Params.SetFlat(theta)
				if err := f.LogDensity(x, lq); err != nil {
					t.Fatal(err)
				}
				return mean(lq)
			}
			if ref := obj(theta); math.Abs(ref-ll) > 1e-12*math.Max(1, math.Abs(ref)) {
				t.Errorf("mean log λ %v, reference %v", ll, ref)
			}
			if e := relErr(grad, fdGrad(obj, theta)); e > fdRelTol {
				t.Errorf("∇_α mean log λ rel. error %.2g", e)
			}
		})
	}
}

func TestFlowReverseKLGradMatchesFiniteDifferences(t *testing.T) {
	r := layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}, Activation: layers.Tanh}
	f := randomFlow(t, r, 1, tensor.Float64, 13)
	base := layers.NewIsotropic(2, 1)
	target := mustEBM(t, ToyEnergyNet(2, false), &base, tensor.Float64, 14)
	z := randMatrix(newRNG(15), 9, 2, 1)
	grad := make([]float64, f.Params.Count())
	kl, err := f.ReverseKLGrad(z, target, grad)
	if err != nil {
		t.Fatal(err)
	}
	theta := f.Params.Flatten(nil)
	x := mat.NewDense(9, 2, nil)
	ld, lp := make([]float64, 9), make([]float64, 9)
	obj := func(v []float64) float64 {
		f.Params.SetFlat(v)
		defer f.Params.SetFlat(theta)
		if err := f.Forward(z, x, ld); err != nil {
			t.Fatal(err)
		}
		if err := target.LogDensity(x, lp); err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i := range ld {
			s += f.Base.LogProb(z.RawRowView(i)) - ld[i] - lp[i]
		}
		return s / 9
	}
	if ref := obj(theta); math.Abs(ref-kl) > 1e-10 {
		t.Errorf("reverse KL %v, reference %v", kl, ref)
	}
	if e := relErr(grad, fdGrad(obj, theta)); e > fdRelTol {
		t.Errorf("reverse-KL gradient rel. error %.2g", e)
	}
	// The target is not trained: its parameters are untouched.
	if _, err := f.ReverseKLGrad(z, struct{ *EBM }{target}, grad); err != nil {
		t.Errorf("pointer-holding struct target rejected: %v", err)
	}
}

func TestLatentTarget(t *testing.T) {
	r := layers.RealNVP{Dim: 3, Blocks: 2, Hidden: []int{8}, Activation: layers.Softplus}
	f := randomFlow(t, r, 1, tensor.Float64, 16)
	base := layers.NewIsotropic(3, 1)
	e := mustEBM(t, ToyEnergyNet(3, false), &base, tensor.Float64, 17)
	lat, err := NewLatent(f, e)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	z := randMatrix(newRNG(18), n, 3, 1)
	lp := make([]float64, n)
	grad := mat.NewDense(n, 3, nil)
	if err := lat.LogDensityGrad(z, lp, grad); err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(n, 3, nil)
	ld, lpx := make([]float64, n), make([]float64, n)
	if err := f.Forward(z, x, ld); err != nil {
		t.Fatal(err)
	}
	if err := e.LogDensity(x, lpx); err != nil {
		t.Fatal(err)
	}
	for i := range lp {
		if math.Abs(lp[i]-(lpx[i]+ld[i])) > 1e-10 {
			t.Errorf("log π_T(z) = %v, want log π(T(z)) + log|J| = %v", lp[i], lpx[i]+ld[i])
		}
	}
	one, oneX, oneLd, oneLp := mat.NewDense(1, 3, nil), mat.NewDense(1, 3, nil), make([]float64, 1), make([]float64, 1)
	for i := 0; i < n; i++ {
		obj := func(v []float64) float64 {
			one.SetRow(0, v)
			if err := f.Forward(one, oneX, oneLd); err != nil {
				t.Fatal(err)
			}
			if err := e.LogDensity(oneX, oneLp); err != nil {
				t.Fatal(err)
			}
			return oneLp[0] + oneLd[0]
		}
		if r := relErr(grad.RawRowView(i), fdGrad(obj, mat.Row(nil, i, z))); r > fdRelTol {
			t.Errorf("row %d: ∇_z log π_T rel. error %.2g", i, r)
		}
	}
	pushed := mat.NewDense(n, 3, nil)
	if err := lat.Push(z, pushed); err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(pushed, x, 0) {
		t.Error("Push differs from Forward")
	}
}

func TestFlowFloat32MatchesFloat64(t *testing.T) {
	// Same bound and reasoning as TestFloat32MatchesFloat64.
	const tol = 1e-4
	r := layers.RealNVP{Dim: 4, Blocks: 2, Hidden: []int{16}}
	f32 := randomFlow(t, r, 1, tensor.Float32, 19)
	f64 := randomFlow(t, r, 1, tensor.Float64, 19)
	f64.Params.SetFlat(f32.Params.Flatten(nil))
	x := randMatrix(newRNG(20), 30, 4, 1)
	for i, v := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = float64(float32(v))
	}
	g32, g64 := make([]float64, f32.Params.Count()), make([]float64, f64.Params.Count())
	l32, err := f32.MLGrad(x, g32)
	if err != nil {
		t.Fatal(err)
	}
	l64, err := f64.MLGrad(x, g64)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l32-l64) > tol*math.Abs(l64) {
		t.Errorf("float32 mean log λ %v, float64 %v", l32, l64)
	}
	if e := relErr(g32, g64); e > tol {
		t.Errorf("float32 flow gradient rel. error %.2g", e)
	}
}

// TestLatentWithFlowTarget composes two flows with identical parameter names
// in one graph (NeuTra on a flow target); they must stay distinct.
func TestLatentWithFlowTarget(t *testing.T) {
	r := layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}, Activation: layers.Tanh}
	pre, target := randomFlow(t, r, 1, tensor.Float64, 30), randomFlow(t, r, 1, tensor.Float64, 31)
	lat, err := NewLatent(pre, target)
	if err != nil {
		t.Fatal(err)
	}
	z := randMatrix(newRNG(32), 6, 2, 1)
	lp := make([]float64, 6)
	if err := lat.LogDensity(z, lp); err != nil {
		t.Fatal(err)
	}
	x, ld, lt := mat.NewDense(6, 2, nil), make([]float64, 6), make([]float64, 6)
	if err := pre.Forward(z, x, ld); err != nil {
		t.Fatal(err)
	}
	if err := target.LogDensity(x, lt); err != nil {
		t.Fatal(err)
	}
	for i := range lp {
		if math.Abs(lp[i]-(lt[i]+ld[i])) > 1e-10 {
			t.Fatalf("row %d: latent log-density %v, want log λ_target(T(z)) + log|J| = %v", i, lp[i], lt[i]+ld[i])
		}
	}
}

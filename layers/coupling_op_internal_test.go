package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The coupling's fused operations (coupling_op.go) against the formulas
// they replace, written with Gorgonia's own operations as Coupling had them
// (legacyCouplingApply, legacyRealNVPPass), and their gradients against
// central finite differences.

// legacyCouplingApply is Coupling.Forward (inverse: Inverse) as it was
// before the fused operations: products with (B, d) constants, exp, Sum.
func legacyCouplingApply(c Coupling, b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error) {
	bsz, d, err := batchOf(x)
	if err != nil {
		return nil, nil, err
	}
	keep := make([]float64, bsz*d)
	mdt := make([]float64, bsz*d)
	for i := 0; i < bsz; i++ {
		for j, m := range c.Mask {
			keep[i*d+j], mdt[i*d+j] = 1-m, m*c.Dt
		}
	}
	xc, err := G.HadamardProd(x, Constant(b, "1−mask", keep, bsz, d))
	if err != nil {
		return nil, nil, err
	}
	mdtN := Constant(b, "mask·dt", mdt, bsz, d)
	sRaw, err := c.S.Apply(b, xc)
	if err != nil {
		return nil, nil, err
	}
	if sRaw, err = applyMath(fnTanh, sRaw); err != nil {
		return nil, nil, err
	}
	s, err := G.HadamardProd(sRaw, mdtN)
	if err != nil {
		return nil, nil, err
	}
	tRaw, err := c.T.Apply(b, xc)
	if err != nil {
		return nil, nil, err
	}
	t, err := G.HadamardProd(tRaw, mdtN)
	if err != nil {
		return nil, nil, err
	}
	logdet, err := G.Sum(s, 1)
	if err != nil {
		return nil, nil, err
	}
	if !inverse {
		xt, err := G.Add(x, t)
		if err != nil {
			return nil, nil, err
		}
		es, err := applyMath(fnExp, s)
		if err != nil {
			return nil, nil, err
		}
		y, err := G.HadamardProd(xt, es)
		return y, logdet, err
	}
	ens, err := applyMath(fnExpNeg, s)
	if err != nil {
		return nil, nil, err
	}
	ye, err := G.HadamardProd(x, ens)
	if err != nil {
		return nil, nil, err
	}
	y, err := G.Sub(ye, t)
	if err != nil {
		return nil, nil, err
	}
	logdet, err = G.Neg(logdet)
	return y, logdet, err
}

// legacyRealNVPPass is RealNVP.pass on legacyCouplingApply.
func legacyRealNVPPass(r RealNVP, b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error) {
	cs, err := r.Couplings()
	if err != nil {
		return nil, nil, err
	}
	var order []int
	for blk := 0; blk < r.Blocks; blk++ {
		for rep := 0; rep < r.depth(); rep++ {
			order = append(order, 2*blk, 2*blk+1)
		}
	}
	if inverse {
		for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
			order[i], order[j] = order[j], order[i]
		}
	}
	var total *G.Node
	for _, k := range order {
		var ld *G.Node
		if x, ld, err = legacyCouplingApply(cs[k], b, x, inverse); err != nil {
			return nil, nil, err
		}
		if total == nil {
			total = ld
		} else if total, err = G.Add(total, ld); err != nil {
			return nil, nil, err
		}
	}
	return x, total, nil
}

// couplingBinder binds parameters to float64 values it keeps by name, so that
// several graphs share them and finite differences can move them.
type couplingBinder struct {
	g     *G.ExprGraph
	dtype tensor.Dtype
	vals  map[string][]float64 // shared between graphs
	order *[]string            // parameter names in first-use order, shared
	rng   *rand.Rand
	nodes map[string]*G.Node
	bound map[string]*tensor.Dense
}

func newCouplingBinder(dtype tensor.Dtype, vals map[string][]float64, order *[]string, rng *rand.Rand) *couplingBinder {
	return &couplingBinder{g: G.NewGraph(), dtype: dtype, vals: vals, order: order, rng: rng, nodes: map[string]*G.Node{}, bound: map[string]*tensor.Dense{}}
}

func (b *couplingBinder) Graph() *G.ExprGraph { return b.g }
func (b *couplingBinder) Dtype() tensor.Dtype { return b.dtype }

func (b *couplingBinder) Param(name string, shape ...int) (*G.Node, error) {
	if n, ok := b.nodes[name]; ok {
		return n, nil
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	v, ok := b.vals[name]
	if !ok {
		v = make([]float64, n)
		for i := range v {
			v[i] = 0.8 * b.rng.NormFloat64() / math.Sqrt(float64(shape[len(shape)-1]))
		}
		b.vals[name] = v
		*b.order = append(*b.order, name)
	}
	t := couplingTensor(b.dtype, v, shape...)
	node := G.NewTensor(b.g, b.dtype, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(t))
	b.nodes[name], b.bound[name] = node, t
	return node, nil
}

// sync copies the shared values into the bound tensors.
func (b *couplingBinder) sync() {
	for name, t := range b.bound {
		setCouplingTensor(t, b.vals[name])
	}
}

func couplingTensor(dtype tensor.Dtype, v []float64, shape ...int) *tensor.Dense {
	t := tensor.New(tensor.WithShape(shape...), tensor.Of(dtype))
	setCouplingTensor(t, v)
	return t
}

func setCouplingTensor(t *tensor.Dense, v []float64) {
	if t.Dtype() == tensor.Float32 {
		for i, x := range v {
			t.Float32s()[i] = float32(x)
		}
		return
	}
	copy(t.Float64s(), v)
}

func couplingValues(v G.Value) []float64 {
	switch s := v.(type) {
	case *G.F64:
		return []float64{float64(*s)}
	case *G.F32:
		return []float64{float64(*s)}
	}
	t := v.(*tensor.Dense)
	if t.Dtype() == tensor.Float32 {
		out := make([]float64, len(t.Float32s()))
		for i, x := range t.Float32s() {
			out[i] = float64(x)
		}
		return out
	}
	return append([]float64(nil), t.Float64s()...)
}

// couplingCase is a flow (or one of its couplings) to build.
type couplingCase struct {
	name     string
	r        RealNVP
	coupling int // ≥ 0: that coupling alone; −1: the whole RealNVP
}

func couplingCases() []couplingCase {
	return []couplingCase{
		{"half d=6 coupling 0", RealNVP{Dim: 6, Blocks: 1, Hidden: []int{7}}, 0},
		{"half d=6 coupling 1", RealNVP{Dim: 6, Blocks: 1, Hidden: []int{7}}, 1},
		{"checkerboard d=5 coupling 0", RealNVP{Dim: 5, Blocks: 1, Hidden: []int{6, 6}, Mask: MaskCheckerboard, Activation: Tanh}, 0},
		{"checkerboard d=5 coupling 1", RealNVP{Dim: 5, Blocks: 1, Hidden: []int{6, 6}, Mask: MaskCheckerboard, Activation: Tanh}, 1},
		{"half d=4 depth 1", RealNVP{Dim: 4, Blocks: 2, Hidden: []int{8}, Activation: Tanh}, -1},
		{"checkerboard d=6 depth 2", RealNVP{Dim: 6, Blocks: 2, BlockDepth: 2, Hidden: []int{5}, Mask: MaskCheckerboard, Activation: SiLU}, -1},
		{"half d=5 depth 2", RealNVP{Dim: 5, Blocks: 1, BlockDepth: 2, Hidden: []int{9, 4}, Activation: LeakyReLU(0.1)}, -1},
	}
}

// build adds the case's map (legacy: the old formulas) of x to b's graph.
func (c couplingCase) build(b Binder, x *G.Node, inverse, legacy bool) (*G.Node, *G.Node, error) {
	if c.coupling < 0 {
		if legacy {
			return legacyRealNVPPass(c.r, b, x, inverse)
		}
		return c.r.pass(b, x, inverse)
	}
	cs, err := c.r.Couplings()
	if err != nil {
		return nil, nil, err
	}
	if legacy {
		return legacyCouplingApply(cs[c.coupling], b, x, inverse)
	}
	if inverse {
		return cs[c.coupling].Inverse(b, x)
	}
	return cs[c.coupling].Forward(b, x)
}

// couplingRun is a built graph: its input, outputs and machine.
type couplingRun struct {
	b    *couplingBinder
	x    *tensor.Dense
	outs []*G.Node
	vm   G.VM
}

func (r *couplingRun) run(t *testing.T, x []float64) [][]float64 {
	t.Helper()
	r.b.sync()
	setCouplingTensor(r.x, x)
	r.vm.Reset()
	if err := r.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	vals := make([][]float64, len(r.outs))
	for i, o := range r.outs {
		vals[i] = couplingValues(o.Value())
	}
	return vals
}

// newCouplingRun builds c on a (bsz, d) input; with w and v, it also adds
// the cost Σ w⊙y + Σ v⊙logdet and its gradient with respect to x and every
// parameter (outputs y, logdet, cost, ∂x, ∂params in b's order).
func newCouplingRun(t *testing.T, c couplingCase, dtype tensor.Dtype, bsz int, inverse, legacy bool, vals map[string][]float64, order *[]string, w, v []float64) *couplingRun {
	t.Helper()
	b := newCouplingBinder(dtype, vals, order, rand.New(rand.NewPCG(7, 8)))
	xv := tensor.New(tensor.WithShape(bsz, c.r.Dim), tensor.Of(dtype))
	x := G.NewTensor(b.g, dtype, 2, G.WithShape(bsz, c.r.Dim), G.WithName("x"), G.WithValue(xv))
	y, ld, err := c.build(b, x, inverse, legacy)
	if err != nil {
		t.Fatal(err)
	}
	outs := []*G.Node{y, ld}
	if w != nil {
		wy, err := G.HadamardProd(y, G.NewConstant(couplingTensor(dtype, w, bsz, c.r.Dim), G.WithName("w")))
		if err != nil {
			t.Fatal(err)
		}
		vl, err := G.HadamardProd(ld, G.NewConstant(couplingTensor(dtype, v, bsz), G.WithName("v")))
		if err != nil {
			t.Fatal(err)
		}
		s1, err := G.Sum(wy)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := G.Sum(vl)
		if err != nil {
			t.Fatal(err)
		}
		cost, err := G.Add(s1, s2)
		if err != nil {
			t.Fatal(err)
		}
		wrt := G.Nodes{x}
		for _, name := range *order {
			wrt = append(wrt, b.nodes[name])
		}
		grads, err := G.Grad(cost, wrt...)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(append(outs, cost), grads...)
	}
	return &couplingRun{b: b, x: xv, outs: outs, vm: G.NewTapeMachine(b.g)}
}

func couplingRandom(rng *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * rng.NormFloat64()
	}
	return v
}

// couplingMaxRelErr is max_i |a_i − b_i| / max(max_i |b_i|, tiny): a norm-wise
// relative error.
func couplingMaxRelErr(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range a {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) {
			return math.Inf(1)
		}
	}
	if den == 0 {
		return num
	}
	return num / den
}

// TestCouplingMatchesFormulas compares the fused couplings and flows with
// the Gorgonia formulas they replace, both directions, float64 and
// float32. The fused loops perform the formulas' operations in the same
// order (a·m·dt, x + t, a product, exp, a left-to-right row sum), so they
// agree to the last bit; the bounds are float rounding: 1e-14 (float64)
// and 1e-6 (float32), norm-wise.
func TestCouplingMatchesFormulas(t *testing.T) {
	for _, c := range couplingCases() {
		for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, inverse := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/inverse=%v", c.name, dtype, inverse), func(t *testing.T) {
					const bsz = 9
					vals, order := map[string][]float64{}, new([]string)
					rng := rand.New(rand.NewPCG(1, 2))
					x := couplingRandom(rng, bsz*c.r.Dim, 1.5)
					got := newCouplingRun(t, c, dtype, bsz, inverse, false, vals, order, nil, nil).run(t, x)
					want := newCouplingRun(t, c, dtype, bsz, inverse, true, vals, order, nil, nil).run(t, x)
					tol := 1e-14
					if dtype == tensor.Float32 {
						tol = 1e-6
					}
					for i, what := range []string{"y", "log-determinant"} {
						if e := couplingMaxRelErr(got[i], want[i]); e > tol {
							t.Errorf("%s: relative error %.3g\ngot  %v\nwant %v", what, e, got[i], want[i])
						}
					}
					if couplingMaxRelErr(got[0], x) < 1e-3 {
						t.Errorf("the map is too close to the identity for the test to mean anything")
					}
				})
			}
		}
	}
}

// TestCouplingRoundTrip checks T⁻¹(T(z)) = z and that the log-determinants
// of the two directions cancel.
func TestCouplingRoundTrip(t *testing.T) {
	for _, c := range couplingCases() {
		for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", c.name, dtype), func(t *testing.T) {
				const bsz = 11
				vals, order := map[string][]float64{}, new([]string)
				z := couplingRandom(rand.New(rand.NewPCG(3, 4)), bsz*c.r.Dim, 1.5)
				fwd := newCouplingRun(t, c, dtype, bsz, false, false, vals, order, nil, nil).run(t, z)
				inv := newCouplingRun(t, c, dtype, bsz, true, false, vals, order, nil, nil).run(t, fwd[0])
				tol := 1e-13
				if dtype == tensor.Float32 {
					tol = 1e-5
				}
				if e := couplingMaxRelErr(inv[0], z); e > tol {
					t.Errorf("T⁻¹(T(z)) − z: relative error %.3g", e)
				}
				for i := range fwd[1] {
					if d := math.Abs(fwd[1][i] + inv[1][i]); d > tol*math.Max(1, math.Abs(fwd[1][i])) {
						t.Errorf("row %d: log|J_T| = %v, log|J_T⁻¹| = %v", i, fwd[1][i], inv[1][i])
					}
				}
			})
		}
	}
}

// couplingFDTol is the repository's bound on the norm-wise relative error of a
// gradient against central finite differences in float64 (see
// graph/helpers_test.go).
const couplingFDTol = 1e-6

// TestCouplingGradients checks the gradient of Σ w⊙y + Σ v⊙logdet with
// respect to x and to every weight of S and T, through a coupling and
// through flows of depth 1 and 2, in both directions, against central
// finite differences, and against the gradient of the old formulas.
func TestCouplingGradients(t *testing.T) {
	for _, c := range couplingCases() {
		for _, inverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/inverse=%v", c.name, inverse), func(t *testing.T) {
				const bsz = 4
				rng := rand.New(rand.NewPCG(5, 6))
				vals, order := map[string][]float64{}, new([]string)
				x := couplingRandom(rng, bsz*c.r.Dim, 1.2)
				w, v := couplingRandom(rng, bsz*c.r.Dim, 1), couplingRandom(rng, bsz, 1)
				run := newCouplingRun(t, c, tensor.Float64, bsz, inverse, false, vals, order, w, v)
				legacy := newCouplingRun(t, c, tensor.Float64, bsz, inverse, true, vals, order, w, v)
				got, want := run.run(t, x), legacy.run(t, x)
				// The gradient with respect to x, then each parameter.
				cost := func(xv []float64) float64 { return run.run(t, xv)[2][0] }
				if e := couplingRelErr(got[3], fd.Gradient(nil, cost, x, &fd.Settings{Formula: fd.Central})); e > couplingFDTol {
					t.Errorf("∂/∂x: relative error %.3g against finite differences", e)
				}
				if e := couplingMaxRelErr(got[3], want[3]); e > 1e-12 {
					t.Errorf("∂/∂x: relative error %.3g against the old formulas", e)
				}
				for k, name := range *order {
					theta := append([]float64(nil), vals[name]...)
					f := func(p []float64) float64 {
						copy(vals[name], p)
						defer copy(vals[name], theta)
						return run.run(t, x)[2][0]
					}
					g := got[4+k]
					if e := couplingRelErr(g, fd.Gradient(nil, f, theta, &fd.Settings{Formula: fd.Central})); e > couplingFDTol {
						t.Errorf("∂/∂%s: relative error %.3g against finite differences", name, e)
					}
					if e := couplingMaxRelErr(g, want[4+k]); e > 1e-12 {
						t.Errorf("∂/∂%s: relative error %.3g against the old formulas", name, e)
					}
				}
			})
		}
	}
}

func couplingRelErr(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range a {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Max(math.Abs(a[i]), math.Abs(b[i])))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// couplingOpGraph is a small graph of one fused operation's use: inputs x, sRaw and
// tRaw, a = tanh(sRaw), E, and the operation under test.
type couplingOpGraph struct {
	g           *G.ExprGraph
	in          []*tensor.Dense // x, sRaw, tRaw
	nodes       []*G.Node
	cost, out   *G.Node
	grads       G.Nodes
	vm          G.VM
	bsz, d      int
	inverse     bool
	kind        couplingKind
	weights     []float64
	differented []int // indices into in of the inputs the gradient is taken with respect to
}

// newCouplingOpGraph builds cost = Σ w⊙op(…) for kind (couplingMask, couplingTanh,
// couplingExp, couplingAffine or couplingLogDet) and its gradient with
// respect to the inputs the coupling differentiates.
func newCouplingOpGraph(t *testing.T, spec *couplingSpec, kind couplingKind, inverse bool, bsz int, rng *rand.Rand) *couplingOpGraph {
	t.Helper()
	o := &couplingOpGraph{g: G.NewGraph(), bsz: bsz, d: spec.d, inverse: inverse, kind: kind}
	for i, name := range []string{"x", "sRaw", "tRaw"} {
		v := tensor.New(tensor.WithShape(bsz, spec.d), tensor.Of(tensor.Float64))
		o.in = append(o.in, v)
		o.nodes = append(o.nodes, G.NewTensor(o.g, tensor.Float64, 2, G.WithShape(bsz, spec.d), G.WithName(name), G.WithValue(v)))
		_ = i
	}
	op := couplingOp{spec: spec, inverse: inverse}
	must := func(n *G.Node, err error) *G.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := must(G.ApplyOp(op.with(couplingTanh), o.nodes[1]))
	e := must(G.ApplyOp(op.with(couplingExp), a))
	switch kind {
	case couplingMask:
		o.out, o.differented = must(G.ApplyOp(op.with(couplingMask), o.nodes[0])), []int{0}
	case couplingTanh:
		o.out = a
	case couplingExp:
		o.out = e
	case couplingAffine:
		o.out, o.differented = must(G.ApplyOp(op.with(couplingAffine), o.nodes[0], o.nodes[1], o.nodes[2], e, a)), []int{0, 1, 2}
	case couplingLogDet:
		o.out, o.differented = must(G.ApplyOp(op.with(couplingLogDet), o.nodes[1], a)), []int{1}
	}
	n := o.out.Shape().TotalSize()
	o.weights = couplingRandom(rng, n, 1)
	wt := tensor.New(tensor.WithShape(o.out.Shape().Clone()...), tensor.WithBacking(append([]float64(nil), o.weights...)))
	o.cost = must(G.Sum(must(G.HadamardProd(o.out, G.NewConstant(wt, G.WithName("w"))))))
	if len(o.differented) > 0 {
		var wrt G.Nodes
		for _, i := range o.differented {
			wrt = append(wrt, o.nodes[i])
		}
		grads, err := G.Grad(o.cost, wrt...)
		if err != nil {
			t.Fatal(err)
		}
		o.grads = grads
	}
	o.vm = G.NewTapeMachine(o.g)
	return o
}

func (o *couplingOpGraph) run(t *testing.T, in [][]float64) {
	t.Helper()
	for i, v := range in {
		copy(o.in[i].Float64s(), v)
	}
	o.vm.Reset()
	if err := o.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

// couplingMasks are masks of 0s and 1s and one of general values.
func couplingMasks() [][]float64 {
	return [][]float64{{0, 0, 0, 1, 1, 1}, {1, 0, 1, 0, 1}, {0, 1, 0, 1, 0, 1, 1}, {0.3, 1, -0.5, 0, 2}}
}

// TestCouplingOpGradients checks each differentiable fused operation's
// gradient (built from the gradient operations) against central finite
// differences, with tanh and exp recomputed from the moved sRaw.
func TestCouplingOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, mask := range couplingMasks() {
		spec := newCouplingSpec(mask, 0.37)
		for _, kind := range []couplingKind{couplingMask, couplingAffine, couplingLogDet} {
			for _, inverse := range []bool{false, true} {
				o := newCouplingOpGraph(t, spec, kind, inverse, 3, rng)
				in := [][]float64{couplingRandom(rng, 3*spec.d, 1.3), couplingRandom(rng, 3*spec.d, 1.3), couplingRandom(rng, 3*spec.d, 1.3)}
				for k, i := range o.differented {
					o.run(t, in) // the finite differences leave the last moved input's values
					got := couplingValues(o.grads[k].Value())
					f := func(v []float64) float64 {
						saved := in[i]
						in[i] = v
						defer func() { in[i] = saved }()
						o.run(t, in)
						return couplingValues(o.cost.Value())[0]
					}
					want := fd.Gradient(nil, f, in[i], &fd.Settings{Formula: fd.Central})
					if e := couplingRelErr(got, want); e > couplingFDTol {
						t.Errorf("%v, mask %v: gradient with respect to input %d: relative error %.3g\ngot  %v\nwant %v", couplingOp{spec: spec, kind: kind, inverse: inverse}, mask, i, e, got, want)
					}
				}
			}
		}
	}
}

// couplingOpInputs returns random inputs of every kind of fused operation, with
// cached factors computed from sRaw as the coupling does.
func couplingOpInputs(t testing.TB, spec *couplingSpec, kind couplingKind, inverse bool, dtype tensor.Dtype, bsz int, rng *rand.Rand) []G.Value {
	t.Helper()
	mat := func() *tensor.Dense { return couplingTensor(dtype, couplingRandom(rng, bsz*spec.d, 1.3), bsz, spec.d) }
	op := couplingOp{spec: spec, inverse: inverse}
	do := func(k couplingKind, in ...G.Value) G.Value {
		v, err := op.with(k).Do(in...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	x, sRaw, tRaw, g := mat(), mat(), mat(), mat()
	a := do(couplingTanh, sRaw)
	e := do(couplingExp, a)
	y := do(couplingAffine, x, sRaw, tRaw, e, a)
	switch kind {
	case couplingMask:
		return []G.Value{x}
	case couplingTanh:
		return []G.Value{sRaw}
	case couplingExp:
		return []G.Value{a}
	case couplingAffine:
		return []G.Value{x, sRaw, tRaw, e, a}
	case couplingLogDet:
		return []G.Value{sRaw, a}
	case couplingGradX:
		return []G.Value{g, e}
	case couplingGradS:
		if inverse {
			return []G.Value{g, x, e, a}
		}
		return []G.Value{g, y, a}
	case couplingGradT:
		return []G.Value{g}
	default: // couplingGradLogDet
		return []G.Value{couplingTensor(dtype, couplingRandom(rng, bsz, 1), bsz), a}
	}
}

var allCouplingKinds = []couplingKind{couplingMask, couplingTanh, couplingExp, couplingAffine, couplingLogDet, couplingGradX, couplingGradS, couplingGradT, couplingGradLogDet}

// TestCouplingOpsNoAllocation: with its previous result given, every fused
// operation computes without allocating, in both float types.
func TestCouplingOpsNoAllocation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	spec := newCouplingSpec([]float64{0, 1, 0, 1, 0, 1, 1, 0}, 0.25)
	for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, kind := range allCouplingKinds {
			for _, inverse := range []bool{false, true} {
				op := couplingOp{spec: spec, kind: kind, inverse: inverse}
				in := couplingOpInputs(t, spec, kind, inverse, dtype, 16, rng)
				prev, err := op.Do(in...)
				if err != nil {
					t.Fatal(err)
				}
				n := testing.AllocsPerRun(20, func() {
					v, err := op.UsePreallocDo(prev, in...)
					if err != nil || v != prev {
						t.Fatalf("%v: %v, %v (previous result not reused)", op, v, err)
					}
				})
				if n != 0 {
					t.Errorf("%v %v: %v allocations per call", op, dtype, n)
				}
			}
		}
	}
}

// TestCouplingOpsRowsAlone: each row's result depends on that row's values
// alone, not on the batch it is computed in (a batch split across graphs
// gives the same values), and one operation value serves concurrent
// callers.
func TestCouplingOpsRowsAlone(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, mask := range couplingMasks() {
		spec := newCouplingSpec(mask, 0.3)
		for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, kind := range allCouplingKinds {
				for _, inverse := range []bool{false, true} {
					op := couplingOp{spec: spec, kind: kind, inverse: inverse}
					const bsz = 37
					in := couplingOpInputs(t, spec, kind, inverse, dtype, bsz, rng)
					whole, err := op.Do(in...)
					if err != nil {
						t.Fatal(err)
					}
					want := couplingValues(whole)
					var wg sync.WaitGroup
					errs := make([]error, bsz)
					for i := 0; i < bsz; i++ {
						wg.Add(1)
						go func(i int) {
							defer wg.Done()
							row := make([]G.Value, len(in))
							for k, v := range in {
								row[k] = couplingRowOf(v.(*tensor.Dense), i)
							}
							got, err := op.Do(row...)
							if err != nil {
								errs[i] = err
								return
							}
							w := len(couplingValues(got))
							for j, v := range couplingValues(got) {
								if u := want[i*w+j]; v != u && !(math.IsNaN(v) && math.IsNaN(u)) {
									errs[i] = fmt.Errorf("row %d, column %d: %v alone, %v in the batch", i, j, v, u)
									return
								}
							}
						}(i)
					}
					wg.Wait()
					for _, err := range errs {
						if err != nil {
							t.Errorf("%v %v: %v", op, dtype, err)
							break
						}
					}
				}
			}
		}
	}
}

// couplingRowOf returns row i of a matrix (1, d), or element i of a vector (1).
func couplingRowOf(t *tensor.Dense, i int) *tensor.Dense {
	if t.Dims() == 1 {
		if t.Dtype() == tensor.Float32 {
			return tensor.New(tensor.WithShape(1), tensor.WithBacking([]float32{t.Float32s()[i]}))
		}
		return tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{t.Float64s()[i]}))
	}
	d := t.Shape()[1]
	if t.Dtype() == tensor.Float32 {
		return tensor.New(tensor.WithShape(1, d), tensor.WithBacking(append([]float32(nil), t.Float32s()[i*d:(i+1)*d]...)))
	}
	return tensor.New(tensor.WithShape(1, d), tensor.WithBacking(append([]float64(nil), t.Float64s()[i*d:(i+1)*d]...)))
}

// TestCouplingOpNames: operations of different masks, steps, directions
// or kinds have different names and hashes, so that Gorgonia does not
// merge their nodes; the same coupling built twice has equal ones.
func TestCouplingOpNames(t *testing.T) {
	seen := map[string]bool{}
	hashes := map[uint32]string{}
	for _, m := range [][]float64{{0, 1, 0, 1}, {1, 0, 1, 0}, {0, 0, 1, 1}, {0, 1, 0, 1, 0}} {
		for _, dt := range []float64{0.25, 0.125} {
			spec := newCouplingSpec(m, dt)
			for _, kind := range allCouplingKinds {
				for _, inverse := range []bool{false, true} {
					op := couplingOp{spec: spec, kind: kind, inverse: inverse}
					s := op.String()
					if seen[s] {
						t.Errorf("name %q repeated", s)
					}
					seen[s] = true
					if other, ok := hashes[op.Hashcode()]; ok {
						t.Errorf("%q and %q have the same hash", s, other)
					}
					hashes[op.Hashcode()] = s
					again := couplingOp{spec: newCouplingSpec(append([]float64(nil), m...), dt), kind: kind, inverse: inverse}
					if again.String() != s || again.Hashcode() != op.Hashcode() {
						t.Errorf("%q built twice: %q", s, again.String())
					}
				}
			}
		}
	}
}

// TestCouplingOpErrors: inputs of the wrong shape or type are errors, not
// panics.
func TestCouplingOpErrors(t *testing.T) {
	spec := newCouplingSpec([]float64{0, 1, 1}, 0.5)
	op := couplingOp{spec: spec, kind: couplingAffine}
	m := func(r, c int) *tensor.Dense { return tensor.New(tensor.WithShape(r, c), tensor.Of(tensor.Float64)) }
	for _, in := range [][]G.Value{
		{m(2, 3), m(2, 3), m(2, 3), m(2, 3)},
		{m(2, 3), m(2, 3), m(2, 3), m(2, 3), m(2, 4)},
		{m(2, 3), m(2, 3), m(3, 3), m(2, 3), m(2, 3)},
		{m(2, 3), m(2, 3), tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float32)), m(2, 3), m(2, 3)},
	} {
		if _, err := op.Do(in...); err == nil {
			t.Errorf("inputs %v: no error", in)
		}
	}
	if _, err := op.InferShape(tensor.Shape{2, 3}, tensor.Shape{2, 3}, tensor.Shape{2, 4}, tensor.Shape{2, 3}, tensor.Shape{2, 3}); err == nil {
		t.Error("InferShape with a (2, 4) input: no error")
	}
	if _, err := (couplingOp{spec: spec, kind: couplingGradLogDet}).Do(m(2, 1), m(2, 3)); err == nil {
		t.Error("log-determinant gradient with a matrix gradient: no error")
	}
}

// BenchmarkCouplingOps times each fused operation on its previous result
// for the d = 64 flow's checkerboard mask.
func BenchmarkCouplingOps(b *testing.B) {
	mask := make([]float64, 64)
	for j := 1; j < 64; j += 2 {
		mask[j] = 1
	}
	spec := newCouplingSpec(mask, 0.125)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, bsz := range []int{1024} {
			for _, kind := range allCouplingKinds {
				for _, inverse := range []bool{false, true} {
					op := couplingOp{spec: spec, kind: kind, inverse: inverse}
					in := couplingOpInputs(b, spec, kind, inverse, dtype, bsz, rng)
					prev, err := op.Do(in...)
					if err != nil {
						b.Fatal(err)
					}
					b.Run(fmt.Sprintf("%v/%v/B=%d", op, dtype, bsz), func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							if _, err := op.UsePreallocDo(prev, in...); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}

// TestCouplingKernelsMatchGo: the kernels in use (with cgo, the vectorised
// C loops) give the Go loops' results to the last bit, for every row
// length, alignment and remainder, with special values among the data.
func TestCouplingKernelsMatchGo(t *testing.T) {
	checkCouplingKernels(t, &couplingKernels64, &couplingGoKernels64)
	checkCouplingKernels(t, &couplingKernels32, &couplingGoKernels32)
}

func checkCouplingKernels[T float32 | float64](t *testing.T, k, ref *couplingKernels[T]) {
	rng := rand.New(rand.NewPCG(17, 18))
	special := []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN(), 1e-310, 1e300, 3e38}
	val := func() T {
		if rng.IntN(8) == 0 {
			return T(special[rng.IntN(len(special))])
		}
		return T(2 * rng.NormFloat64())
	}
	vec := func(n, off int) []T {
		v := make([]T, n+off)
		for i := range v {
			v[i] = val()
		}
		return v[off:]
	}
	same := func(a, b []T) bool {
		for i := range a {
			u, v := float64(a[i]), float64(b[i])
			if math.IsNaN(u) && math.IsNaN(v) {
				continue
			}
			if u != v || math.Signbit(u) != math.Signbit(v) {
				return false
			}
		}
		return true
	}
	for _, d := range []int{1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 64, 65} {
		for _, rows := range []int{1, 3, 10} {
			off := rng.IntN(4)
			n := rows * d
			x, tt, e, a, g, f := vec(n, off), vec(n, 1), vec(n, 2), vec(n, 3), vec(n, off), vec(d, 1)
			gl := vec(rows, 0)
			outs := [2][]T{make([]T, n+3)[3:], make([]T, n)}
			for name, run := range map[string]func(k *couplingKernels[T], out []T){
				"mulCols":    func(k *couplingKernels[T], out []T) { k.mulCols(out, x, f) },
				"mul":        func(k *couplingKernels[T], out []T) { k.mul(out, x, e) },
				"affineFwd":  func(k *couplingKernels[T], out []T) { k.affineFwd(out, x, tt, e, f) },
				"affineInv":  func(k *couplingKernels[T], out []T) { k.affineInv(out, x, tt, e, f) },
				"gradSFwd":   func(k *couplingKernels[T], out []T) { k.gradSFwd(out, g, x, a, f) },
				"gradSInv":   func(k *couplingKernels[T], out []T) { k.gradSInv(out, g, x, e, a, f) },
				"gradLogDet": func(k *couplingKernels[T], out []T) { k.gradLogDet(out, gl, a, f) },
			} {
				run(k, outs[0])
				run(ref, outs[1])
				if !same(outs[0], outs[1]) {
					t.Errorf("%T %s, d = %d, %d rows: kernel %v, Go %v", T(0), name, d, rows, outs[0], outs[1])
				}
			}
		}
	}
}

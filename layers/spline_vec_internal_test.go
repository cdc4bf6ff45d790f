package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"

	"gorgonia.org/tensor"
)

// rqEvalFn is a scalar evaluation of a spline, as RQSpline.eval.
type rqEvalFn func(s RQSpline, kn *rqKnots, v float64, raw []float64, inverse bool, e *rqEval, grads bool)

// rqEvalGoMath is RQSpline.eval: the scalar reference, with Go's math.
func rqEvalGoMath(s RQSpline, kn *rqKnots, v float64, raw []float64, inverse bool, e *rqEval, grads bool) {
	s.eval(kn, v, raw, inverse, e, grads)
}

// rqOne is f of one value.
func rqOne(f func(dst, src []float64), x float64) float64 {
	in, out := []float64{x}, []float64{0}
	f(out, in)
	return out[0]
}

// rqEvalKernelFns is RQSpline.eval with the batched kernel's exp, log1p
// and log (libmvec's with cgo, Go's without) in place of Go's math,
// element by element: rqSoftmax, rqSoftplus, rqSigmoid and the
// log-derivative written out with them.
func rqEvalKernelFns(s RQSpline, kn *rqKnots, v float64, raw []float64, inverse bool, e *rqEval, grads bool) {
	b := s.TailBound
	if !(v >= -b && v <= b) {
		*e = rqEval{out: v, dOut: 1}
		return
	}
	k := s.Bins
	softmax := func(u, p []float64) {
		m := u[0]
		for _, x := range u[1:] {
			if x > m || x != x {
				m = x
			}
		}
		sum := 0.0
		for i, x := range u {
			p[i] = rqOne(rqExpMap, x-m)
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
	}
	softmax(raw[:k], kn.sw)
	softmax(raw[k:2*k], kn.sh)
	rqCumKnots(kn.sw, s.MinBinWidth, b, kn.x)
	rqCumKnots(kn.sh, s.MinBinHeight, b, kn.y)
	bin := rqSearch(kn.x, v)
	if inverse {
		bin = rqSearch(kn.y, v)
	}
	derivative := func(i int) (d, sig float64) {
		if i == 0 || i == k {
			return 1, 0
		}
		u := raw[2*k+i-1]
		ex := rqOne(rqExpMap, -math.Abs(u))
		if u >= 0 {
			sig = 1 / (1 + ex)
		} else {
			sig = ex / (1 + ex)
		}
		return s.MinDerivative + (rqMax0(u) + rqOne(rqLog1pMap, ex)), sig
	}
	l := rqLocal{x0: kn.x[bin], w: kn.x[bin+1] - kn.x[bin], y0: kn.y[bin], h: kn.y[bin+1] - kn.y[bin]}
	var sig0, sig1 float64
	l.d0, sig0 = derivative(bin)
	l.d1, sig1 = derivative(bin + 1)
	pt := l.point(v, inverse)
	ell := rqOne(rqLogMap, pt.sl*pt.sl*pt.q) - 2*rqOne(rqLogMap, pt.m)
	*e = rqEval{inside: true, k: bin, sig: [2]float64{sig0, sig1}, out: l.out(&pt, inverse), ld: ell}
	if inverse {
		e.ld = -ell
	}
	if grads {
		l.grads(&pt, inverse, e)
	}
}

// rqsRefValues is an rqsOp's output on float64 inputs from the scalar
// evaluation ev, element by element (the operations' evaluation before
// the batched one).
func rqsRefValues(op rqsOp, x, th []float64, rows, d int, ev rqEvalFn) []float64 {
	p, n := op.spline.ParamsPerCoord(), len(op.cols)
	w := op.outWidth(d)
	out := make([]float64, rows*max(w, 1))
	kn := newRQKnots(op.spline.Bins)
	var e rqEval
	for r := 0; r < rows; r++ {
		if w > 0 {
			copy(out[r*w:r*w+d], x[r*d:(r+1)*d])
		}
		ld := 0.0
		for j, c := range op.cols {
			ev(op.spline, kn, x[r*d+c], th[(r*n+j)*p:(r*n+j+1)*p], op.inverse, &e, false)
			ld += e.ld
			if w > 0 {
				out[r*w+c] = e.out
			}
		}
		switch {
		case op.joint:
			out[r*w+d] = ld
		case op.logdet:
			out[r] = ld
		}
	}
	return out
}

// rqsRefGrad is an rqsGrad's output on float64 inputs from the scalar
// evaluation ev (a joint op's upstream gradients weigh the derivatives
// together, as the operation does); bins, if not nil, gets each
// element's bin (−1 in the tails).
func rqsRefGrad(op rqsGrad, x, th, g []float64, rows, d int, ev rqEvalFn, bins []int) []float64 {
	o := op.op
	p, n := o.spline.ParamsPerCoord(), len(o.cols)
	w := o.outWidth(d)
	var out []float64
	if op.wrt == 0 {
		out = make([]float64, rows*d)
	} else {
		out = make([]float64, rows*n*p)
	}
	kn := newRQKnots(o.spline.Bins)
	var e rqEval
	for r := 0; r < rows; r++ {
		if op.wrt == 0 && w > 0 {
			copy(out[r*d:(r+1)*d], g[r*w:r*w+d])
		}
		for j, c := range o.cols {
			ev(o.spline, kn, x[r*d+c], th[(r*n+j)*p:(r*n+j+1)*p], o.inverse, &e, true)
			if bins != nil {
				bins[r*n+j] = -1
				if e.inside {
					bins[r*n+j] = e.k
				}
			}
			var gy, gl float64
			switch {
			case o.joint:
				gy, gl = g[r*w+c], g[r*w+d]
			case o.logdet:
				gl = g[r]
			default:
				gy = g[r*w+c]
			}
			if op.wrt == 0 {
				switch {
				case o.joint:
					out[r*d+c] = gy*e.dOut + gl*e.dLd
				case o.logdet:
					out[r*d+c] = gl * e.dLd
				default:
					out[r*d+c] = gy * e.dOut
				}
				continue
			}
			if !e.inside {
				continue
			}
			var gp [6]float64
			for i := range gp {
				switch {
				case o.joint:
					gp[i] = gy*e.dOutP[i] + gl*e.dLdP[i]
				case o.logdet:
					gp[i] = e.dLdP[i] * gl
				default:
					gp[i] = e.dOutP[i] * gy
				}
			}
			o.spline.rawGrad(kn.sw, kn.sh, e.k, &e.sig, &gp, out[(r*n+j)*p:(r*n+j+1)*p])
		}
	}
	return out
}

// rqsVecCase is a batch of inputs of the spline operations.
type rqsVecCase struct {
	name    string
	s       RQSpline
	rows, d int
	cols    []int
	x, th   []float64
	special bool // points at the knots, ±B, ±0 and NaN
}

// rqsVecCases are batches of the default spline and of 2, 3, 4, 16 and
// 64 bins (27 elements a chunk), with raw parameters drawn N(0, σ²) for σ = 0.5 to 2 (from 1.5:
// bins 1e-3 wide, slopes to 1e4), inputs N(0, s²) for s up to 3 (tails
// included) and, but for the last case (the benchmark's 4 bins and
// distributions), in one coordinate of every row a knot of either grid,
// its floating-point neighbour, ±B, 0, −0 or NaN; batch sizes that leave
// partial chunks.
func rqsVecCases() []rqsVecCase {
	rng := rand.New(rand.NewPCG(71, 72))
	var cs []rqsVecCase
	for _, c := range []struct {
		s         RQSpline
		rows, d   int
		cols      []int
		sigma, xs float64
		special   bool
	}{
		{RQSpline{}, 97, 5, []int{4, 0, 2}, 1, 3, true},
		{RQSpline{Bins: 4}, 300, 8, []int{1, 3, 5, 7}, 1, 2, true},
		{RQSpline{Bins: 2, TailBound: 3}, 41, 3, []int{1}, 1.5, 2, true},
		{RQSpline{Bins: 3, TailBound: 2}, 130, 2, []int{0, 1}, 2, 1.5, true},
		{RQSpline{Bins: 16, TailBound: 1}, 33, 4, []int{0, 1, 2, 3}, 1.5, 0.7, true},
		{RQSpline{Bins: 8}, 200, 3, []int{2, 0}, 2, 3, true},
		{RQSpline{Bins: 64, TailBound: 4}, 40, 2, []int{1, 0}, 1, 2, true},
		{RQSpline{Bins: 4}, 64, 6, []int{0, 2, 4}, 0.5, 1.5, false},
		{RQSpline{Bins: 4}, 1000, 4, []int{0, 2}, 1, 1.5, false},
	} {
		s := c.s.WithDefaults()
		p, n := s.ParamsPerCoord(), len(c.cols)
		x, th := make([]float64, c.rows*c.d), make([]float64, c.rows*n*p)
		for i := range th {
			th[i] = c.sigma * rng.NormFloat64()
		}
		for i := range x {
			x[i] = c.xs * rng.NormFloat64()
		}
		if c.special {
			kn := newRQKnots(s.Bins)
			for r := 0; r < c.rows; r++ {
				j := r % n
				s.knots(th[(r*n+j)*p:(r*n+j+1)*p], kn)
				grid := kn.x
				if r%2 == 1 {
					grid = kn.y
				}
				v := grid[rng.IntN(len(grid))]
				switch r % 5 {
				case 1:
					v = math.Nextafter(v, math.Inf(1))
				case 2:
					v = math.Nextafter(v, math.Inf(-1))
				case 3:
					v = []float64{-s.TailBound, s.TailBound, 0, math.Copysign(0, -1), math.NaN()}[rng.IntN(5)]
				}
				x[r*c.d+c.cols[j]] = v
			}
		}
		name := fmt.Sprintf("K=%d,B=%v,σ=%v,%d×%d", s.Bins, s.TailBound, c.sigma, c.rows, n)
		cs = append(cs, rqsVecCase{name, s, c.rows, c.d, c.cols, x, th, c.special})
	}
	return cs
}

// rqsOps are the value, log-determinant and joint operations of both
// directions on c's columns.
func (c rqsVecCase) ops() []rqsOp {
	var ops []rqsOp
	for _, inverse := range []bool{false, true} {
		for _, mode := range []int{rqModeValue, rqModeLogDet, rqModeJoint} {
			ops = append(ops, rqsOp{spline: c.s, cols: c.cols, inverse: inverse, logdet: mode == rqModeLogDet, joint: mode == rqModeJoint})
		}
	}
	return ops
}

// upstream returns an upstream gradient for op's output and its shape.
func (c rqsVecCase) upstream(op rqsOp, seed uint64) ([]float64, []int) {
	w := op.outWidth(c.d)
	shape := []int{c.rows, w}
	if w == 0 {
		shape, w = []int{c.rows}, 1
	}
	rng := rand.New(rand.NewPCG(seed, 6))
	g := make([]float64, c.rows*w)
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	return g, shape
}

func rqsRound32(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(float32(x))
	}
	return out
}

// rqsSame reports whether a and b are the same float64 (NaN matching NaN).
func rqsSame(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

// The batched operations are the scalar evaluation, operation for
// operation: every output of every variant (forward, inverse; value,
// log-determinant, joint; the gradients with respect to x and θ), in
// float64 and float32, equals to the last bit that of the scalar
// evaluation with the kernel's elementwise exp, log1p and log
// (rqEvalKernelFns), on batches with knots, their floating-point
// neighbours, the tail bounds, ±0, NaN and points in the tails. The joint
// operation's parts are the value and log-determinant operations'
// outputs, bit for bit, and its gradients their gradients' sums to
// rounding.
func TestRQSVecMatchesScalarBitwise(t *testing.T) {
	for _, c := range rqsVecCases() {
		n, p := len(c.cols), c.s.ParamsPerCoord()
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			x, th := c.x, c.th
			if dt == tensor.Float32 {
				x, th = rqsRound32(x), rqsRound32(th)
			}
			round := func(v []float64) []float64 {
				if dt == tensor.Float32 {
					return rqsRound32(v)
				}
				return v
			}
			xin, thin := splineDense(dt, []int{c.rows, c.d}, x), splineDense(dt, []int{c.rows, n * p}, th)
			outputs := map[string][]float64{}
			for _, op := range c.ops() {
				want := round(rqsRefValues(op, x, th, c.rows, c.d, rqEvalKernelFns))
				got, err := op.Do(xin, thin)
				if err != nil {
					t.Fatal(err)
				}
				gv := splineFloats(got)
				outputs[op.String()] = gv
				for i := range want {
					if !rqsSame(gv[i], want[i]) {
						t.Errorf("%s %v %v: output %d = %v, scalar %v", c.name, op, dt, i, gv[i], want[i])
						break
					}
				}
				g, gshape := c.upstream(op, 5)
				g = round(g)
				for wrt := 0; wrt < 2; wrt++ {
					gop := rqsGrad{op: op, wrt: wrt}
					want := round(rqsRefGrad(gop, x, th, g, c.rows, c.d, rqEvalKernelFns, nil))
					got, err := gop.Do(xin, thin, splineDense(dt, gshape, g))
					if err != nil {
						t.Fatal(err)
					}
					gv := splineFloats(got)
					outputs[gop.String()] = gv
					for i := range want {
						if !rqsSame(gv[i], want[i]) {
							t.Errorf("%s %v %v: output %d = %v, scalar %v", c.name, gop, dt, i, gv[i], want[i])
							break
						}
					}
				}
			}
			// The joint operation against the value and log-det ones.
			for _, inverse := range []bool{false, true} {
				val := rqsOp{spline: c.s, cols: c.cols, inverse: inverse}
				ld, joint := val, val
				ld.logdet, joint.joint = true, true
				y, l, yl := outputs[val.String()], outputs[ld.String()], outputs[joint.String()]
				for r := 0; r < c.rows; r++ {
					for j := 0; j < c.d; j++ {
						if !rqsSame(yl[r*(c.d+1)+j], y[r*c.d+j]) {
							t.Fatalf("%s %v: joint value (%d, %d) %v, value op %v", c.name, dt, r, j, yl[r*(c.d+1)+j], y[r*c.d+j])
						}
					}
					if !rqsSame(yl[r*(c.d+1)+c.d], l[r]) {
						t.Fatalf("%s %v: joint log-det %d %v, log-det op %v", c.name, dt, r, yl[r*(c.d+1)+c.d], l[r])
					}
				}
				// With the joint op's upstream gradient split between the
				// two ops, its gradient with respect to x is the sum of
				// theirs, the same products and sum (to float32 rounding in
				// float32; TestRQSJointOpGradients checks both gradients
				// against finite differences).
				gj, gshape := c.upstream(joint, 9)
				gj = round(gj)
				gy, gl := make([]float64, c.rows*c.d), make([]float64, c.rows)
				for r := 0; r < c.rows; r++ {
					copy(gy[r*c.d:(r+1)*c.d], gj[r*(c.d+1):r*(c.d+1)+c.d])
					gl[r] = gj[r*(c.d+1)+c.d]
				}
				a, err := rqsGrad{op: val}.Do(xin, thin, splineDense(dt, []int{c.rows, c.d}, gy))
				if err != nil {
					t.Fatal(err)
				}
				b, err := rqsGrad{op: ld}.Do(xin, thin, splineDense(dt, []int{c.rows}, gl))
				if err != nil {
					t.Fatal(err)
				}
				j, err := rqsGrad{op: joint}.Do(xin, thin, splineDense(dt, gshape, gj))
				if err != nil {
					t.Fatal(err)
				}
				av, bv, jv := splineFloats(a), splineFloats(b), splineFloats(j)
				for i := range av {
					sum := av[i] + bv[i]
					if dt == tensor.Float64 && !rqsSame(jv[i], sum) || math.Abs(jv[i]-sum) > 2.4e-7*(math.Abs(av[i])+math.Abs(bv[i])) {
						t.Errorf("%s %v inverse %v: joint x-gradient %d = %v, value and log-det ones %v + %v", c.name, dt, inverse, i, jv[i], av[i], bv[i])
						break
					}
				}
			}
		}
	}
}

// The joint operation's gradients with respect to x and θ against central
// finite differences of ⟨g, op(x, θ)⟩ (as TestRQSOpGradients for the value
// and log-determinant operations): norm-wise relative error below 1e-7.
func TestRQSJointOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	s := RQSpline{Bins: 5, TailBound: 3}.WithDefaults()
	p := s.ParamsPerCoord()
	rows, d := 6, 4
	cols := []int{3, 0, 2}
	n := len(cols)
	for _, inverse := range []bool{false, true} {
		op := rqsOp{spline: s, cols: cols, inverse: inverse, joint: true}
		x, th, g := make([]float64, rows*d), make([]float64, rows*n*p), make([]float64, rows*(d+1))
		for i := range th {
			th[i] = rng.NormFloat64()
		}
		for i := range x {
			x[i] = 2.5 * rng.NormFloat64()
		}
		x[0*d+3], x[1*d+0], x[2*d+2] = 7, -4, 0.3 // the tails and an interior point
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		for wrt := 0; wrt < 2; wrt++ {
			got, want := rqsGradFD(t, op, wrt, x, th, g, []int{rows, d + 1}, rows, d, n*p)
			if e := splineRelErr(got, want); e > 1e-7 {
				t.Errorf("%v wrt %d: relative error %.2e", op, wrt, e)
			} else {
				t.Logf("%v wrt %d: relative error %.2e", op, wrt, e)
			}
		}
	}
}

// rqsBlockErr is the largest difference of a and b in blocks of size
// block relative to the block's largest magnitude (at least 1), NaN
// matching NaN.
func rqsBlockErr(a, b []float64, block int) float64 {
	worst := 0.0
	for b0 := 0; b0 < len(a); b0 += block {
		scale := 1.0
		for _, v := range b[b0:min(b0+block, len(b))] {
			if !math.IsNaN(v) {
				scale = math.Max(scale, math.Abs(v))
			}
		}
		for i := b0; i < min(b0+block, len(a)); i++ {
			if math.IsNaN(a[i]) != math.IsNaN(b[i]) {
				return math.Inf(1)
			}
			if !math.IsNaN(a[i]) {
				worst = math.Max(worst, math.Abs(a[i]-b[i])/scale)
			}
		}
	}
	return worst
}

// rqCond returns the condition numbers of the value and the
// log-derivative of the spline of raw at v, evaluated in the bin that ev
// finds: Σ_j |∂/∂p_j|·|p_j| over the bin's local parameters p = (X_k, W,
// Y_k, H, δ_k, δ_{k+1}), taking B as the magnitude of the knots, and for
// ℓ also the magnitudes of its two logarithms. The knots come from sums
// of K softmax terms, each exponential rounded to a few ulp, so the
// rounding of the output is of order K·ε·(1 + κ) (measured: at most 3.6
// times that, over 128000 draws of 2 to 16 bins, parameters N(0, σ²) for
// σ up to 2).
func rqCond(s RQSpline, v float64, raw []float64, inverse bool, ev rqEvalFn) (cy, cl float64) {
	kn := newRQKnots(s.Bins)
	var e rqEval
	ev(s, kn, v, raw, inverse, &e, true)
	if !e.inside {
		return 0, 0
	}
	k := e.k
	l := rqLocal{x0: kn.x[k], w: kn.x[k+1] - kn.x[k], y0: kn.y[k], h: kn.y[k+1] - kn.y[k]}
	l.d0, _ = s.derivative(raw, k, false)
	l.d1, _ = s.derivative(raw, k+1, false)
	pt := l.point(v, inverse)
	b := s.TailBound
	mag := [6]float64{b, b, b, b, l.d0, l.d1}
	for j := range mag {
		cy += math.Abs(e.dOutP[j]) * mag[j]
		cl += math.Abs(e.dLdP[j]) * mag[j]
	}
	cl += math.Abs(math.Log(pt.sl*pt.sl*pt.q)) + 2*math.Abs(math.Log(pt.m))
	return cy, cl
}

// The batched float64 operations against the scalar reference
// RQSpline.eval (Go's math): they differ only where libmvec's exp, log1p
// and log round differently from Go's math, a few ulp. On the
// benchmark's distribution (4 bins, parameters N(0, 1), inputs N(0,
// 1.5²)) the values and log-determinants agree to 1e-13 relative to
// max(1, |value|) but at a few ill-conditioned points; everywhere, every
// output agrees to 16·K·ε·(1 + κ) relative to max(1, |value|), κ the
// output's condition number (rqCond; for a gradient, κ of its element's
// value and log-derivative together, relative to the largest magnitude of
// its element's block). The bins are the reference's but for points at a
// knot or its floating-point neighbour, whose knot moved by an ulp (the
// value and log-derivative are continuous there, the log-derivative's
// derivative is not: those elements' gradients are not compared).
func TestRQSVecMatchesScalar(t *testing.T) {
	eps := 0x1p-52
	for _, c := range rqsVecCases() {
		n, p := len(c.cols), c.s.ParamsPerCoord()
		kf := float64(c.s.Bins)
		xin, thin := splineDense(tensor.Float64, []int{c.rows, c.d}, c.x), splineDense(tensor.Float64, []int{c.rows, n * p}, c.th)
		for _, op := range c.ops() {
			// Each element's condition numbers, in the larger of the
			// reference's and the kernel's bin where a knot moved past it.
			cy, cl := make([]float64, c.rows*n), make([]float64, c.rows*n)
			for r := 0; r < c.rows; r++ {
				for j, col := range c.cols {
					v, raw := c.x[r*c.d+col], c.th[(r*n+j)*p:(r*n+j+1)*p]
					a, b := rqCond(c.s, v, raw, op.inverse, rqEvalGoMath)
					a2, b2 := rqCond(c.s, v, raw, op.inverse, rqEvalKernelFns)
					cy[r*n+j], cl[r*n+j] = math.Max(a, a2), math.Max(b, b2)
				}
			}
			want := rqsRefValues(op, c.x, c.th, c.rows, c.d, rqEvalGoMath)
			got, err := op.Do(xin, thin)
			if err != nil {
				t.Fatal(err)
			}
			gv := splineFloats(got)
			w := op.outWidth(c.d)
			plain, worst := 0.0, 0.0 // relative error; error in units of the tolerance
			check := func(i int, kappa float64) {
				if math.IsNaN(want[i]) || math.IsNaN(gv[i]) {
					if !(math.IsNaN(want[i]) && math.IsNaN(gv[i])) {
						t.Errorf("%s %v: output %d = %v, scalar %v", c.name, op, i, gv[i], want[i])
					}
					return
				}
				scale := math.Max(1, math.Abs(want[i]))
				e := math.Abs(gv[i]-want[i]) / scale
				plain = math.Max(plain, e)
				if u := e / (16 * kf * eps * (1 + kappa)); u > worst {
					worst = u
				}
			}
			for r := 0; r < c.rows; r++ {
				ldk := 0.0
				for j, col := range c.cols {
					if w > 0 {
						check(r*w+col, cy[r*n+j])
					}
					ldk += cl[r*n+j]
				}
				switch {
				case op.joint:
					check(r*w+c.d, ldk)
				case op.logdet:
					check(r, ldk)
				}
			}
			if worst > 1 {
				t.Errorf("%s %v: values differ from the scalar reference by %.2f times the tolerance (relative %.2e)", c.name, op, worst, plain)
			}
			if !c.special && plain > 1e-13 {
				t.Logf("%s %v: values differ by %.2e relative (%.2f of the conditioned tolerance)", c.name, op, plain, worst)
			}
			// The gradients, element by element.
			g, gshape := c.upstream(op, 5)
			for wrt := 0; wrt < 2; wrt++ {
				gop := rqsGrad{op: op, wrt: wrt}
				refBins, vecBins := make([]int, c.rows*n), make([]int, c.rows*n)
				want := rqsRefGrad(gop, c.x, c.th, g, c.rows, c.d, rqEvalGoMath, refBins)
				rqsRefGrad(gop, c.x, c.th, g, c.rows, c.d, rqEvalKernelFns, vecBins)
				got, err := gop.Do(xin, thin, splineDense(tensor.Float64, gshape, g))
				if err != nil {
					t.Fatal(err)
				}
				gv := splineFloats(got)
				moved, worstG, plainG := 0, 0.0, 0.0
				for r := 0; r < c.rows; r++ {
					for j, col := range c.cols {
						el := r*n + j
						if refBins[el] != vecBins[el] {
							moved++
							continue
						}
						var a, b []float64
						if wrt == 0 {
							a, b = gv[r*c.d+col:r*c.d+col+1], want[r*c.d+col:r*c.d+col+1]
						} else {
							a, b = gv[el*p:(el+1)*p], want[el*p:(el+1)*p]
						}
						e := rqsBlockErr(a, b, len(b))
						plainG = math.Max(plainG, e)
						worstG = math.Max(worstG, e/(16*kf*eps*(1+cy[el]+cl[el])))
					}
				}
				if worstG > 1 {
					t.Errorf("%s %v: gradients differ from the scalar reference by %.2f times the tolerance (relative %.2e)", c.name, gop, worstG, plainG)
				}
				if moved > 0 && !c.special {
					t.Errorf("%s %v: %d elements changed bins without a point at a knot", c.name, gop, moved)
				}
				if op.joint && wrt == 1 {
					t.Logf("%s %v: values %.2e relative (%.2f of the tolerance), gradients %.2e (%.2f); %d elements at a knot changed bins",
						c.name, op, plain, worst, plainG, worstG, moved)
				}
			}
		}
	}
}

// The float32 operations agree with the float64 reference on
// float32-rounded inputs to float32 rounding.
func TestRQSVecFloat32(t *testing.T) {
	for _, c := range rqsVecCases() {
		if c.special {
			continue
		}
		n, p := len(c.cols), c.s.ParamsPerCoord()
		x, th := rqsRound32(c.x), rqsRound32(c.th)
		for _, op := range c.ops() {
			want := rqsRefValues(op, x, th, c.rows, c.d, rqEvalGoMath)
			got, err := op.Do(splineDense(tensor.Float32, []int{c.rows, c.d}, x), splineDense(tensor.Float32, []int{c.rows, n * p}, th))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range splineFloats(got) {
				if math.Abs(v-want[i]) > 1.2e-7*math.Max(1, math.Abs(want[i])) {
					t.Errorf("%s %v float32: output %d = %v, float64 %v", c.name, op, i, v, want[i])
					break
				}
			}
		}
	}
}

// The operations allocate no buffers per call: with preallocated outputs
// a forward and a gradient call allocate a few hundred bytes (the input
// checks' small values), whatever the batch size. (A collection empties
// the scratch's sync.Pool, and a goroutine that moves to another P may
// find that P's pool empty: either way the next call allocates its
// scratch again, which 500 calls amortise.)
func TestRQSOpAllocations(t *testing.T) {
	if rqRaceDetector {
		t.Skip("the race detector's sync.Pool drops scratch")
	}
	for _, c := range rqsVecCases()[7:] {
		n, p := len(c.cols), c.s.ParamsPerCoord()
		x, th := splineDense(tensor.Float64, []int{c.rows, c.d}, c.x), splineDense(tensor.Float64, []int{c.rows, n * p}, c.th)
		op := rqsOp{spline: c.s, cols: c.cols, joint: true}
		out, err := op.Do(x, th)
		if err != nil {
			t.Fatal(err)
		}
		g := splineDense(tensor.Float64, []int{c.rows, c.d + 1}, make([]float64, c.rows*(c.d+1)))
		dth, err := rqsGrad{op: op, wrt: 1}.Do(x, th, g)
		if err != nil {
			t.Fatal(err)
		}
		call := func() {
			if _, err := op.UsePreallocDo(out, x, th); err != nil {
				t.Fatal(err)
			}
			if _, err := (rqsGrad{op: op, wrt: 1}).UsePreallocDo(dth, x, th, g); err != nil {
				t.Fatal(err)
			}
		}
		call()
		// No collection, which would empty the scratch's sync.Pool.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 500
		for range runs {
			call()
		}
		runtime.ReadMemStats(&after)
		bytes := float64(after.TotalAlloc-before.TotalAlloc) / runs
		t.Logf("%s: %.0f bytes allocated per forward and gradient call", c.name, bytes)
		if bytes > 1024 {
			t.Errorf("%s: %.0f bytes allocated per forward and gradient call", c.name, bytes)
		}
	}
}

// BenchmarkRQSOp times the spline operations of one coupling of the
// d = 64 checkerboard spline flow (4 bins, 32 transformed columns):
// the joint value and log-determinant on 2048 rows and the gradients
// with respect to x and θ on 512, batched, and, as "scalar", the
// reference evaluation element by element (RQSpline.eval, once for both
// the value and the log-derivative; the operations before the batched
// evaluation ran it once for each).
func BenchmarkRQSOp(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := RQSpline{Bins: 4}.WithDefaults()
	d := 64
	var cols []int
	for c := 0; c < d; c += 2 {
		cols = append(cols, c)
	}
	p, n := s.ParamsPerCoord(), len(cols)
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, inverse := range []bool{false, true} {
			for _, rows := range []int{2048, 512} {
				xv, tv := make([]float64, rows*d), make([]float64, rows*n*p)
				for i := range xv {
					xv[i] = 1.5 * rng.NormFloat64()
				}
				for i := range tv {
					tv[i] = rng.NormFloat64()
				}
				x, th := splineDense(dt, []int{rows, d}, xv), splineDense(dt, []int{rows, n * p}, tv)
				op := rqsOp{spline: s, cols: cols, inverse: inverse, joint: true}
				dir := "forward"
				if inverse {
					dir = "inverse"
				}
				if rows == 2048 {
					out, _ := op.Do(x, th)
					b.Run(fmt.Sprintf("joint/%s/%v/B=%d", dir, dt, rows), func(b *testing.B) {
						for b.Loop() {
							if _, err := op.UsePreallocDo(out, x, th); err != nil {
								b.Fatal(err)
							}
						}
					})
					if dt == tensor.Float64 {
						b.Run(fmt.Sprintf("joint-scalar/%s/%v/B=%d", dir, dt, rows), func(b *testing.B) {
							for b.Loop() {
								rqsRefValues(op, xv, tv, rows, d, rqEvalGoMath)
							}
						})
					}
					continue
				}
				g := splineDense(dt, []int{rows, d + 1}, make([]float64, rows*(d+1)))
				for wrt := 0; wrt < 2; wrt++ {
					gop := rqsGrad{op: op, wrt: wrt}
					out, _ := gop.Do(x, th, g)
					b.Run(fmt.Sprintf("grad%d/%s/%v/B=%d", wrt, dir, dt, rows), func(b *testing.B) {
						for b.Loop() {
							if _, err := gop.UsePreallocDo(out, x, th, g); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}

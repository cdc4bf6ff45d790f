package layers

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the fused Gorgonia operations of the spline couplings:
//
//   - rqsOp: the rational-quadratic splines of one coupling, forward or
//     inverse, from (x (B, d), θ (B, n·(3K−1))) to y (B, d) (the
//     transformed columns through their splines, the others copied) or to
//     the summed log-derivative (B);
//   - rqsGrad: its gradient with respect to x or to θ, for an upstream
//     gradient g (not differentiated further);
//   - splineColumns / splineColumnsGrad: the conditioner's input
//     x[:, cols] and the scatter of its gradient back into (B, d).
//
// The operations are plain values: the scratch of an evaluation lives on
// its goroutine's stack or in the call's own small buffers, so one value
// may serve several compiled graphs run concurrently. Everything is
// computed in float64 (float32 tensors are widened per element).

// rqKnots holds one coordinate's spline as computed from its raw
// parameters: knots x and y (K+1 each) and the softmax values the
// gradient needs. (The derivatives are computed for the bin found only:
// a softplus per interior knot was half of the operations' time.)
type rqKnots struct {
	x, y   []float64
	sw, sh []float64 // softmax of the raw widths and heights (K)
	grad   []float64 // a raw gradient (3K−1), for float32 outputs
}

func newRQKnots(k int) *rqKnots {
	p := 3*k - 1
	buf := make([]float64, 2*(k+1)+2*k+p)
	kn := &rqKnots{}
	kn.x, buf = buf[:k+1], buf[k+1:]
	kn.y, buf = buf[:k+1], buf[k+1:]
	kn.sw, buf = buf[:k], buf[k:]
	kn.sh, buf = buf[:k], buf[k:]
	kn.grad = buf[:p]
	return kn
}

// rqEval is one coordinate's evaluation: the output and log-derivative
// of the direction evaluated (for the inverse, x and log dx/dy) and, if
// asked, their derivatives with respect to the input and to the bin's
// local parameters (X_k, W, Y_k, H, δ_k, δ_{k+1}).
type rqEval struct {
	inside  bool
	k       int
	sig     [2]float64 // σ(u_d) at the bin's two ends (0 at the boundary knots)
	out, ld float64
	dOut    float64
	dOutP   [6]float64
	dLd     float64
	dLdP    [6]float64
}

func rqSoftmax(u, p []float64) {
	m := u[0]
	for _, v := range u[1:] {
		if v > m || v != v { // NaN propagates
			m = v
		}
	}
	sum := 0.0
	for i, v := range u {
		p[i] = math.Exp(v - m)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
}

func rqSoftplus(u float64) float64 { return math.Max(u, 0) + math.Log1p(math.Exp(-math.Abs(u))) }

func rqSigmoid(u float64) float64 {
	if u >= 0 {
		return 1 / (1 + math.Exp(-u))
	}
	e := math.Exp(u)
	return e / (1 + e)
}

// rqCumKnots writes the K+1 knots of bins with minimum size m and relative
// sizes p (a softmax) on [−B, B], as nflows computes them.
func rqCumKnots(p []float64, m, b float64, knots []float64) {
	k := len(p)
	scale := 1 - m*float64(k)
	cum := 0.0
	knots[0] = -b
	for i := 0; i < k-1; i++ {
		cum += m + scale*p[i]
		knots[i+1] = 2*b*cum - b
	}
	knots[k] = b
}

// knots computes the knots of raw parameters raw (3K−1) into kn.
func (s RQSpline) knots(raw []float64, kn *rqKnots) {
	k := s.Bins
	rqSoftmax(raw[:k], kn.sw)
	rqSoftmax(raw[k:2*k], kn.sh)
	rqCumKnots(kn.sw, s.MinBinWidth, s.TailBound, kn.x)
	rqCumKnots(kn.sh, s.MinBinHeight, s.TailBound, kn.y)
}

// derivative returns δ_i (1 at the boundary knots i = 0, K) and, with
// grads, σ(u_d[i−1]) = ∂δ_i/∂u_d[i−1] (0 at the boundary).
func (s RQSpline) derivative(raw []float64, i int, grads bool) (d, sig float64) {
	if i == 0 || i == s.Bins {
		return 1, 0
	}
	u := raw[2*s.Bins+i-1]
	if grads {
		sig = rqSigmoid(u)
	}
	return s.MinDerivative + rqSoftplus(u), sig
}

// rqSearch returns the bin of v: the largest k < K with knots[k] ≤ v (0 if
// none), as nflows' searchsorted for v in [knots[0], knots[K]].
func rqSearch(knots []float64, v float64) int {
	lo, hi := 0, len(knots)-2
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if knots[mid] <= v {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// eval evaluates the spline of raw at v, forward or inverse, into e; with
// grads it also fills the derivatives.
func (s RQSpline) eval(kn *rqKnots, v float64, raw []float64, inverse bool, e *rqEval, grads bool) {
	b := s.TailBound
	if !(v >= -b && v <= b) { // the identity tails (and NaN)
		*e = rqEval{out: v, dOut: 1}
		return
	}
	s.knots(raw, kn)
	k := 0
	if inverse {
		k = rqSearch(kn.y, v)
	} else {
		k = rqSearch(kn.x, v)
	}
	x0, w := kn.x[k], kn.x[k+1]-kn.x[k]
	y0, h := kn.y[k], kn.y[k+1]-kn.y[k]
	d0, sig0 := s.derivative(raw, k, grads)
	d1, sig1 := s.derivative(raw, k+1, grads)
	sl := h / w
	a := d0 + d1 - 2*sl
	var xi float64
	if inverse {
		dy := v - y0
		qa := dy*a + h*(sl-d0)
		qb := h*d0 - dy*a
		qc := -sl * dy
		disc := math.Max(qb*qb-4*qa*qc, 0)
		xi = 2 * qc / (-qb - math.Sqrt(disc))
	} else {
		xi = (v - x0) / w
	}
	t := xi * (1 - xi)
	m := sl + a*t
	q := d1*xi*xi + 2*sl*t + d0*(1-xi)*(1-xi)
	ell := math.Log(sl*sl*q) - 2*math.Log(m)
	n := sl*xi*xi + d0*t
	e.inside, e.k, e.sig = true, k, [2]float64{sig0, sig1}
	if inverse {
		e.out, e.ld = xi*w+x0, -ell
	} else {
		e.out, e.ld = y0+h*n/m, ell
	}
	if !grads {
		return
	}
	// Derivatives of the forward map F(x; X, W, Y, H, δ_k, δ_{k+1}) and of
	// ℓ = log ∂F/∂x at ξ.
	fx := sl * sl * q / (m * m)
	r := n / m
	rxi := fx / sl
	ms := 1 - 2*t
	rs := (xi*xi - r*ms) / m
	rd0 := (t - r*t) / m
	rd1 := -r * t / m
	fp := [6]float64{-fx, -h * (rxi*xi + rs*sl) / w, 1, r + sl*rs, h * rd0, h * rd1}
	mxi := a * (1 - 2*xi)
	qxi := 2*d1*xi + 2*sl*(1-2*xi) - 2*d0*(1-xi)
	lxi := qxi/q - 2*mxi/m
	ls := 2/sl + 2*t/q - 2*ms/m
	lx := lxi / w
	lp := [6]float64{-lx, -(lxi*xi + ls*sl) / w, 0, ls / w, (1-xi)*(1-xi)/q - 2*t/m, xi*xi/q - 2*t/m}
	if !inverse {
		e.dOut, e.dOutP, e.dLd, e.dLdP = fx, fp, lx, lp
		return
	}
	// x = G(y, p) with F(G(y, p), p) = y: G_y = 1/F_x, G_p = −F_p/F_x; the
	// inverse log-derivative −ℓ(G(y, p), p) has ∂_y = −ℓ_x/F_x and
	// ∂_p = −ℓ_p + ℓ_x F_p/F_x.
	e.dOut, e.dLd = 1/fx, -lx/fx
	for i := range fp {
		e.dOutP[i] = -fp[i] / fx
		e.dLdP[i] = -lp[i] + lx*fp[i]/fx
	}
}

// rawGrad writes into du (3K−1) the gradient with respect to the raw
// parameters of a function whose gradient with respect to bin k's local
// parameters (X_k, W, Y_k, H, δ_k, δ_{k+1}) is gp. With X_k = −B +
// 2B·Σ_{i<k} w_i, W = 2B·w_k (the same function of the raw widths as
// X_{k+1} − X_k, since Σ w = 1), w = m + (1 − K·m)·softmax(u), and
// δ = m_δ + softplus(u_d).
func (s RQSpline) rawGrad(kn *rqKnots, e *rqEval, gp *[6]float64, du []float64) {
	k := e.k
	nb := s.Bins
	cw := 2 * s.TailBound * (1 - s.MinBinWidth*float64(nb))
	ch := 2 * s.TailBound * (1 - s.MinBinHeight*float64(nb))
	rqSoftmaxBack(kn.sw, k, cw*gp[0], cw*gp[1], du[:nb])
	rqSoftmaxBack(kn.sh, k, ch*gp[2], ch*gp[3], du[nb:2*nb])
	dd := du[2*nb:]
	clear(dd)
	if k >= 1 {
		dd[k-1] += gp[4] * e.sig[0]
	}
	if k+1 <= nb-1 {
		dd[k] += gp[5] * e.sig[1]
	}
}

// rqSoftmaxBack writes ∂/∂u for p = softmax(u) given ∂/∂p_i = a for i < k,
// b for i = k, 0 above.
func rqSoftmaxBack(p []float64, k int, a, b float64, du []float64) {
	below := 0.0
	for _, v := range p[:k] {
		below += v
	}
	dot := a*below + b*p[k]
	for i, v := range p {
		g := 0.0
		switch {
		case i < k:
			g = a
		case i == k:
			g = b
		}
		du[i] = v * (g - dot)
	}
}

// rqsOp applies the splines of one coupling: for x (B, d) and raw
// parameters θ (B, len(cols)·(3K−1)), the columns cols of x go through
// their splines (forward or inverse) and the others are copied, giving y
// (B, d); with logdet the output is instead the row sums of the
// log-derivatives (B).
type rqsOp struct {
	pure
	spline  RQSpline
	cols    []int
	inverse bool
	logdet  bool
}

// rqsGrad is the gradient of an rqsOp with respect to its input x (wrt 0)
// or θ (wrt 1), for inputs (x, θ, g), g the upstream gradient ((B, d), or
// (B) for logdet).
type rqsGrad struct {
	pure
	op  rqsOp
	wrt int
}

func rqMatType() G.TensorType { return G.TensorType{Dims: 2, Of: hm.TypeVariable('a')} }
func rqVecType() G.TensorType { return G.TensorType{Dims: 1, Of: hm.TypeVariable('a')} }

func (op rqsOp) Arity() int { return 2 }
func (op rqsOp) Type() hm.Type {
	if op.logdet {
		return hm.NewFnType(rqMatType(), rqMatType(), rqVecType())
	}
	return hm.NewFnType(rqMatType(), rqMatType(), rqMatType())
}

func (op rqsOp) checkShapes(x, th tensor.Shape) error {
	if len(x) != 2 || len(th) != 2 || x[0] != th[0] || th[1] != len(op.cols)*op.spline.ParamsPerCoord() {
		return fmt.Errorf("layers: %v with x %v and parameters %v, want (B, d) and (B, %d)", op, x, th, len(op.cols)*op.spline.ParamsPerCoord())
	}
	for _, c := range op.cols {
		if c < 0 || c >= x[1] {
			return fmt.Errorf("layers: %v: column %d out of range for x %v", op, c, x)
		}
	}
	return nil
}

func (op rqsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapes(in, 2)
	if err != nil {
		return nil, err
	}
	if err := op.checkShapes(s[0], s[1]); err != nil {
		return nil, err
	}
	if op.logdet {
		return tensor.Shape{s[0][0]}, nil
	}
	return s[0].Clone(), nil
}

func (op rqsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String(), op.cols) }
func (op rqsOp) Hashcode() uint32      { return hashOf(op) }
func (op rqsOp) String() string {
	s := op.spline
	name := "RQSpline"
	if op.inverse {
		name += "⁻¹"
	}
	if op.logdet {
		name += "LogDet"
	}
	return fmt.Sprintf("%s(K=%d,B=%v,%v,%v,%v)", name, s.Bins, s.TailBound, s.MinBinWidth, s.MinBinHeight, s.MinDerivative)
}
func (op rqsOp) DiffWRT(int) []bool { return []bool{true, true} }

func (op rqsOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(rqsGrad{op: op, wrt: 0}, in[0], in[1], grad)
	if err != nil {
		return nil, err
	}
	dth, err := G.ApplyOp(rqsGrad{op: op, wrt: 1}, in[0], in[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dth}, nil
}

func (op rqsOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op rqsOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := denseInputs(op, in, 2)
	if err != nil {
		return nil, err
	}
	x, th := ts[0], ts[1]
	if err := op.checkShapes(x.Shape(), th.Shape()); err != nil {
		return nil, err
	}
	rows, d := x.Shape()[0], x.Shape()[1]
	var out *tensor.Dense
	if op.logdet {
		out = splineOutputVector(prealloc, x.Dtype(), rows)
	} else {
		out = output(prealloc, x.Dtype(), rows, d)
	}
	switch xd := x.Data().(type) {
	case []float64:
		rqsRun(op, xd, th.Data().([]float64), out.Data().([]float64), rows, d)
	case []float32:
		rqsRun(op, xd, th.Data().([]float32), out.Data().([]float32), rows, d)
	}
	return out, nil
}

func rqsRun[F float32 | float64](op rqsOp, x, th, out []F, rows, d int) {
	p, n := op.spline.ParamsPerCoord(), len(op.cols)
	kn := newRQKnots(op.spline.Bins)
	raw := make([]float64, p)
	var e rqEval
	for r := 0; r < rows; r++ {
		xr := x[r*d : (r+1)*d]
		if !op.logdet {
			copy(out[r*d:(r+1)*d], xr)
		}
		ld := 0.0
		for j, c := range op.cols {
			for i, v := range th[(r*n+j)*p : (r*n+j+1)*p] {
				raw[i] = float64(v)
			}
			op.spline.eval(kn, float64(xr[c]), raw, op.inverse, &e, false)
			if op.logdet {
				ld += e.ld
			} else {
				out[r*d+c] = F(e.out)
			}
		}
		if op.logdet {
			out[r] = F(ld)
		}
	}
}

func (op rqsGrad) Arity() int { return 3 }
func (op rqsGrad) Type() hm.Type {
	g := rqMatType()
	if op.op.logdet {
		g = rqVecType()
	}
	return hm.NewFnType(rqMatType(), rqMatType(), g, rqMatType())
}

func (op rqsGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 3 {
		return nil, fmt.Errorf("layers: %v takes 3 inputs, have %d", op, len(in))
	}
	s, err := shapes(in[:2], 2)
	if err != nil {
		return nil, err
	}
	if err := op.op.checkShapes(s[0], s[1]); err != nil {
		return nil, err
	}
	return s[op.wrt].Clone(), nil
}

func (op rqsGrad) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String(), op.op.cols) }
func (op rqsGrad) Hashcode() uint32      { return hashOf(op) }
func (op rqsGrad) String() string        { return fmt.Sprintf("∂%v/∂%d", op.op, op.wrt) }

func (op rqsGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op rqsGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 3 {
		return nil, fmt.Errorf("layers: %v takes 3 inputs, have %d", op, len(in))
	}
	ts, err := denseInputs(op, in[:2], 2)
	if err != nil {
		return nil, err
	}
	x, th := ts[0], ts[1]
	if err := op.op.checkShapes(x.Shape(), th.Shape()); err != nil {
		return nil, err
	}
	g, err := contiguous(op, in[2])
	if err != nil {
		return nil, err
	}
	rows, d := x.Shape()[0], x.Shape()[1]
	want := tensor.Shape{rows, d}
	if op.op.logdet {
		want = tensor.Shape{rows}
	}
	if g.Dtype() != x.Dtype() || g.Shape().TotalSize() != want.TotalSize() {
		return nil, fmt.Errorf("layers: %v: gradient %v %v, want %v %v", op, g.Dtype(), g.Shape(), x.Dtype(), want)
	}
	sh := ts[op.wrt].Shape()
	out := output(prealloc, x.Dtype(), sh[0], sh[1])
	switch xd := x.Data().(type) {
	case []float64:
		rqsGradRun(op, xd, th.Data().([]float64), g.Data().([]float64), out.Data().([]float64), rows, d)
	case []float32:
		rqsGradRun(op, xd, th.Data().([]float32), g.Data().([]float32), out.Data().([]float32), rows, d)
	}
	return out, nil
}

func rqsGradRun[F float32 | float64](op rqsGrad, x, th, g, out []F, rows, d int) {
	o := op.op
	p, n := o.spline.ParamsPerCoord(), len(o.cols)
	kn := newRQKnots(o.spline.Bins)
	raw := make([]float64, p)
	var e rqEval
	for r := 0; r < rows; r++ {
		if op.wrt == 0 {
			orow := out[r*d : (r+1)*d]
			if o.logdet {
				clear(orow)
			} else {
				copy(orow, g[r*d:(r+1)*d])
			}
		}
		for j, c := range o.cols {
			for i, v := range th[(r*n+j)*p : (r*n+j+1)*p] {
				raw[i] = float64(v)
			}
			o.spline.eval(kn, float64(x[r*d+c]), raw, o.inverse, &e, true)
			var gv float64
			if o.logdet {
				gv = float64(g[r])
			} else {
				gv = float64(g[r*d+c])
			}
			if op.wrt == 0 {
				dv := e.dOut
				if o.logdet {
					dv = e.dLd
				}
				out[r*d+c] = F(gv * dv)
				continue
			}
			du := out[(r*n+j)*p : (r*n+j+1)*p]
			if !e.inside {
				clear(du)
				continue
			}
			gp := e.dOutP
			if o.logdet {
				gp = e.dLdP
			}
			for i := range gp {
				gp[i] *= gv
			}
			o.spline.rawGrad(kn, &e, &gp, kn.grad)
			for i, v := range kn.grad {
				du[i] = F(v)
			}
		}
	}
}

// splineColumns is x[:, cols] for x (B, d).
type splineColumns struct {
	pure
	cols []int
}

// splineColumnsGrad scatters g (B, len(cols)) into the columns cols of a
// zero (B, d) matrix: splineColumns's gradient, not differentiated
// further.
type splineColumnsGrad struct {
	pure
	cols []int
	d    int
}

func (op splineColumns) Arity() int    { return 1 }
func (op splineColumns) Type() hm.Type { return fnType(1) }
func (op splineColumns) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapes(in, 1)
	if err != nil {
		return nil, err
	}
	for _, c := range op.cols {
		if c < 0 || c >= s[0][1] {
			return nil, fmt.Errorf("layers: %v of a %v matrix", op, s[0])
		}
	}
	return tensor.Shape{s[0][0], len(op.cols)}, nil
}
func (op splineColumns) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op splineColumns) Hashcode() uint32      { return hashOf(op) }
func (op splineColumns) String() string        { return fmt.Sprintf("Columns%v", op.cols) }
func (op splineColumns) DiffWRT(int) []bool    { return []bool{true} }

func (op splineColumns) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(splineColumnsGrad{cols: op.cols, d: in[0].Shape()[1]}, grad)
	return G.Nodes{d}, err
}

func (op splineColumns) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op splineColumns) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := denseInputs(op, in, 1)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	if _, err := op.InferShape(x.Shape()); err != nil {
		return nil, err
	}
	rows, d, n := x.Shape()[0], x.Shape()[1], len(op.cols)
	out := output(prealloc, x.Dtype(), rows, n)
	switch xd := x.Data().(type) {
	case []float64:
		splineGather(xd, out.Data().([]float64), op.cols, rows, d)
	case []float32:
		splineGather(xd, out.Data().([]float32), op.cols, rows, d)
	}
	return out, nil
}

func splineGather[F float32 | float64](x, out []F, cols []int, rows, d int) {
	n := len(cols)
	for r := 0; r < rows; r++ {
		for j, c := range cols {
			out[r*n+j] = x[r*d+c]
		}
	}
}

func (op splineColumnsGrad) Arity() int    { return 1 }
func (op splineColumnsGrad) Type() hm.Type { return fnType(1) }
func (op splineColumnsGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapes(in, 1)
	if err != nil {
		return nil, err
	}
	if s[0][1] != len(op.cols) {
		return nil, fmt.Errorf("layers: %v of a %v matrix", op, s[0])
	}
	return tensor.Shape{s[0][0], op.d}, nil
}
func (op splineColumnsGrad) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op splineColumnsGrad) Hashcode() uint32      { return hashOf(op) }
func (op splineColumnsGrad) String() string {
	return fmt.Sprintf("ScatterColumns%v→%d", op.cols, op.d)
}

func (op splineColumnsGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op splineColumnsGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := denseInputs(op, in, 1)
	if err != nil {
		return nil, err
	}
	g := ts[0]
	if _, err := op.InferShape(g.Shape()); err != nil {
		return nil, err
	}
	rows := g.Shape()[0]
	out := output(prealloc, g.Dtype(), rows, op.d)
	switch gd := g.Data().(type) {
	case []float64:
		splineScatter(gd, out.Data().([]float64), op.cols, rows, op.d)
	case []float32:
		splineScatter(gd, out.Data().([]float32), op.cols, rows, op.d)
	}
	return out, nil
}

func splineScatter[F float32 | float64](g, out []F, cols []int, rows, d int) {
	n := len(cols)
	clear(out[:rows*d])
	for r := 0; r < rows; r++ {
		for j, c := range cols {
			out[r*d+c] += g[r*n+j]
		}
	}
}

// splineOutputVector returns prealloc if it is an n-vector of type dt,
// else a new one.
func splineOutputVector(prealloc G.Value, dt tensor.Dtype, n int) *tensor.Dense {
	if p, ok := prealloc.(*tensor.Dense); ok && p.Dtype() == dt && p.Shape().Eq(tensor.Shape{n}) && !p.IsMaterializable() {
		return p
	}
	return tensor.New(tensor.WithShape(n), tensor.Of(dt))
}

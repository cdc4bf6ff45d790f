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
//     transformed columns through their splines, the others copied), to
//     the summed log-derivative (B), or (SplineCoupling's node) to both
//     from one evaluation, (B, d+1), split by splinePart;
//   - rqsGrad: its gradient with respect to x or to θ, for an upstream
//     gradient g (not differentiated further);
//   - splineColumns / splineColumnsGrad: the conditioner's input
//     x[:, cols] and the scatter of its gradient back into (B, d).
//
// The operations evaluate the splines in batches (spline_vec.go); the
// scalar RQSpline.eval below, RQSpline.Forward and Inverse, is their
// reference, with which they share the per-bin arithmetic (rqLocal). The
// operations are plain values: the scratch of an evaluation comes from a
// sync.Pool, so one value may serve several compiled graphs run
// concurrently. Everything is computed in float64 (float32 tensors are
// widened per element).

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
// grads it also fills the derivatives. It is the scalar evaluation of
// RQSpline.Forward and Inverse, and the reference of the batched one of
// the operations (spline_vec.go), which computes the same knots and
// derivatives with array exp, log1p and log and shares rqLocal's
// arithmetic.
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
	l := rqLocal{x0: kn.x[k], w: kn.x[k+1] - kn.x[k], y0: kn.y[k], h: kn.y[k+1] - kn.y[k]}
	var sig0, sig1 float64
	l.d0, sig0 = s.derivative(raw, k, grads)
	l.d1, sig1 = s.derivative(raw, k+1, grads)
	pt := l.point(v, inverse)
	ell := math.Log(pt.sl*pt.sl*pt.q) - 2*math.Log(pt.m)
	e.inside, e.k, e.sig = true, k, [2]float64{sig0, sig1}
	e.out = l.out(&pt, inverse)
	if inverse {
		e.ld = -ell
	} else {
		e.ld = ell
	}
	if grads {
		l.grads(&pt, inverse, e)
	}
}

// rqLocal is the bin of a point: its knots X_k and Y_k, width W = X_{k+1}
// − X_k, height H = Y_{k+1} − Y_k and end derivatives δ_k, δ_{k+1}.
type rqLocal struct {
	x0, w, y0, h, d0, d1 float64
}

// rqPoint is the rational-quadratic formula at a point of a bin: ξ, the
// slope s = H/W, a = δ_k + δ_{k+1} − 2s, t = ξ(1−ξ), the denominator
// m = s + a·t, q = δ_{k+1}ξ² + 2s·t + δ_k(1−ξ)² (dy/dx = s²q/m²) and the
// value's numerator n = sξ² + δ_k·t (y = Y_k + H·n/m).
type rqPoint struct {
	xi, sl, a, t, m, q, n float64
}

// rqMax0 is math.Max(v, 0), NaN and signed zeros included, inlined.
func rqMax0(v float64) float64 {
	if v > 0 || v != v {
		return v
	}
	return 0
}

// point returns the formula's terms at the input v of the bin (x
// forward, y inverse, whose ξ is nflows' root of the quadratic).
func (l *rqLocal) point(v float64, inverse bool) rqPoint {
	h, d0, d1 := l.h, l.d0, l.d1
	sl := h / l.w
	a := d0 + d1 - 2*sl
	var xi float64
	if inverse {
		dy := v - l.y0
		qa := dy*a + h*(sl-d0)
		qb := h*d0 - dy*a
		qc := -sl * dy
		disc := rqMax0(qb*qb - 4*qa*qc)
		xi = 2 * qc / (-qb - math.Sqrt(disc))
	} else {
		xi = (v - l.x0) / l.w
	}
	t := xi * (1 - xi)
	return rqPoint{
		xi: xi, sl: sl, a: a, t: t,
		m: sl + a*t,
		q: d1*xi*xi + 2*sl*t + d0*(1-xi)*(1-xi),
		n: sl*xi*xi + d0*t,
	}
}

// out is the output at the point: y forward, x inverse.
func (l *rqLocal) out(p *rqPoint, inverse bool) float64 {
	if inverse {
		return p.xi*l.w + l.x0
	}
	return l.y0 + l.h*p.n/p.m
}

// grads fills e's derivatives at the point (e.inside, e.k and e.sig set).
func (l *rqLocal) grads(p *rqPoint, inverse bool, e *rqEval) {
	w, h, d0, d1 := l.w, l.h, l.d0, l.d1
	xi, sl, a, t, m, q, n := p.xi, p.sl, p.a, p.t, p.m, p.q, p.n
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
// parameters (X_k, W, Y_k, H, δ_k, δ_{k+1}) is gp, for the softmaxes sw
// and sh of the raw widths and heights and sig = σ(u_d) at the bin's ends
// (rqEval.sig). With X_k = −B + 2B·Σ_{i<k} w_i, W = 2B·w_k (the same
// function of the raw widths as X_{k+1} − X_k, since Σ w = 1), w = m +
// (1 − K·m)·softmax(u), and δ = m_δ + softplus(u_d).
func (s RQSpline) rawGrad(sw, sh []float64, k int, sig *[2]float64, gp *[6]float64, du []float64) {
	nb := s.Bins
	cw := 2 * s.TailBound * (1 - s.MinBinWidth*float64(nb))
	ch := 2 * s.TailBound * (1 - s.MinBinHeight*float64(nb))
	rqSoftmaxBack(sw, k, cw*gp[0], cw*gp[1], du[:nb])
	rqSoftmaxBack(sh, k, ch*gp[2], ch*gp[3], du[nb:2*nb])
	dd := du[2*nb:]
	clear(dd)
	if k >= 1 {
		dd[k-1] += gp[4] * sig[0]
	}
	if k+1 <= nb-1 {
		dd[k] += gp[5] * sig[1]
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
// log-derivatives (B); with joint (logdet ignored) it is both, y and then
// the log-derivatives' sum in a last column (B, d+1), from one evaluation
// of the splines (SplineCoupling's node, split by splinePart).
type rqsOp struct {
	pure
	spline  RQSpline
	cols    []int
	inverse bool
	logdet  bool
	joint   bool
}

// rqsGrad is the gradient of an rqsOp with respect to its input x (wrt 0)
// or θ (wrt 1), for inputs (x, θ, g), g the upstream gradient ((B, d), (B)
// for logdet, (B, d+1) for joint).
type rqsGrad struct {
	pure
	op  rqsOp
	wrt int
}

func rqMatType() G.TensorType { return G.TensorType{Dims: 2, Of: hm.TypeVariable('a')} }
func rqVecType() G.TensorType { return G.TensorType{Dims: 1, Of: hm.TypeVariable('a')} }

// outWidth is the number of columns of the output for x with d columns,
// 0 for the log-determinant vector.
func (op rqsOp) outWidth(d int) int {
	switch {
	case op.joint:
		return d + 1
	case op.logdet:
		return 0
	}
	return d
}

func (op rqsOp) Arity() int { return 2 }
func (op rqsOp) Type() hm.Type {
	if op.logdet && !op.joint {
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
	if w := op.outWidth(s[0][1]); w > 0 {
		return tensor.Shape{s[0][0], w}, nil
	}
	return tensor.Shape{s[0][0]}, nil
}

func (op rqsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String(), op.cols) }
func (op rqsOp) Hashcode() uint32      { return hashOf(op) }
func (op rqsOp) String() string {
	s := op.spline
	name := "RQSpline"
	if op.inverse {
		name += "⁻¹"
	}
	switch {
	case op.joint:
		name += "WithLogDet"
	case op.logdet:
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
	if w := op.outWidth(d); w > 0 {
		out = output(prealloc, x.Dtype(), rows, w)
	} else {
		out = splineOutputVector(prealloc, x.Dtype(), rows)
	}
	switch xd := x.Data().(type) {
	case []float64:
		rqsRun(op, xd, th.Data().([]float64), out.Data().([]float64), rows, d)
	case []float32:
		rqsRun(op, xd, th.Data().([]float32), out.Data().([]float32), rows, d)
	}
	return out, nil
}

// rqsCursor walks the elements of a coupling, the transformed columns of
// each row in turn: element e is row e / n, column cols[e mod n].
type rqsCursor struct {
	r, j int
}

func (c *rqsCursor) next(n int) {
	if c.j++; c.j == n {
		c.r, c.j = c.r+1, 0
	}
}

// rqsInputs gathers into sc.v the inputs of the m elements from c (c is
// not moved).
func rqsInputs[F float32 | float64](x []F, cols []int, d int, c rqsCursor, sc *rqScratch, m int) {
	n := len(cols)
	for i := range sc.v[:m] {
		sc.v[i] = float64(x[c.r*d+cols[c.j]])
		c.next(n)
	}
}

func rqsRun[F float32 | float64](op rqsOp, x, th, out []F, rows, d int) {
	s := op.spline
	p, n := s.ParamsPerCoord(), len(op.cols)
	w := op.outWidth(d)
	values, logdets := w > 0, op.logdet || op.joint
	if values {
		for r := 0; r < rows; r++ {
			copy(out[r*w:r*w+d], x[r*d:(r+1)*d])
		}
	}
	ldAt := func(r int) int { return r*w + w - 1 } // the log-determinant of row r
	if !values {
		ldAt = func(r int) int { return r }
	}
	if logdets && n == 0 {
		for r := 0; r < rows; r++ {
			out[ldAt(r)] = 0
		}
	}
	sc := rqGetScratch(s.Bins)
	defer rqPutScratch(sc)
	var c rqsCursor
	ld := 0.0
	for e0 := 0; e0 < rows*n; e0 += sc.chunk {
		m := min(sc.chunk, rows*n-e0)
		rqsInputs(x, op.cols, d, c, sc, m)
		rqKernel(s, op.inverse, logdets, th[e0*p:(e0+m)*p], sc, m)
		ys, ells := sc.row(rqRowOut, m), sc.row(rqRowLG0, m)
		for i := range m {
			if values {
				out[c.r*w+op.cols[c.j]] = F(ys[i])
			}
			if logdets {
				if op.inverse {
					ld += -ells[i]
				} else {
					ld += ells[i]
				}
				if c.j == n-1 {
					out[ldAt(c.r)] = F(ld)
					ld = 0
				}
			}
			c.next(n)
		}
	}
}

func (op rqsGrad) Arity() int { return 3 }
func (op rqsGrad) Type() hm.Type {
	g := rqMatType()
	if op.op.logdet && !op.op.joint {
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
	want := tensor.Shape{rows}
	if w := op.op.outWidth(d); w > 0 {
		want = tensor.Shape{rows, w}
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
	s := o.spline
	p, n := s.ParamsPerCoord(), len(o.cols)
	w := o.outWidth(d) // g's columns, 0 for a vector
	mode := rqModeValue
	switch {
	case o.joint:
		mode = rqModeJoint
	case o.logdet:
		mode = rqModeLogDet
	}
	if op.wrt == 0 {
		for r := 0; r < rows; r++ {
			if w == 0 {
				clear(out[r*d : (r+1)*d])
			} else {
				copy(out[r*d:(r+1)*d], g[r*w:r*w+d])
			}
		}
	}
	sc := rqGetScratch(s.Bins)
	defer rqPutScratch(sc)
	var c rqsCursor
	for e0 := 0; e0 < rows*n; e0 += sc.chunk {
		m := min(sc.chunk, rows*n-e0)
		rqsInputs(x, o.cols, d, c, sc, m)
		rqKernel(s, o.inverse, false, th[e0*p:(e0+m)*p], sc, m)
		// The upstream gradients of the value (gy) and of the
		// log-derivative (gl).
		gy, gl := sc.row(rqRowGY, m), sc.row(rqRowGL, m)
		cc := c
		for i := range m {
			r, col := cc.r, o.cols[cc.j]
			switch mode {
			case rqModeJoint:
				gy[i], gl[i] = float64(g[r*w+col]), float64(g[r*w+w-1])
			case rqModeLogDet:
				gy[i], gl[i] = 0, float64(g[r])
			default:
				gy[i], gl[i] = float64(g[r*w+col]), 0
			}
			cc.next(n)
		}
		if op.wrt == 1 {
			rqGradKernel(s, o.inverse, 1, mode, sc, m, out[e0*p:(e0+m)*p])
			c = cc
			continue
		}
		rqGradKernel(s, o.inverse, 0, mode, sc, m, []F(nil))
		for _, v := range sc.row(rqRowDX, m) {
			out[c.r*d+o.cols[c.j]] = F(v)
			c.next(n)
		}
	}
}

// splinePart is a part of a joint rqsOp's output (B, d+1): y, its first d
// columns (B, d), or with logdet the log-determinant, its last column (B).
type splinePart struct {
	pure
	d      int
	logdet bool
}

// splinePartGrad puts g, the gradient of y (B, d) or with logdet of the
// log-determinant (B), into its part of an otherwise zero (B, d+1)
// matrix: splinePart's gradient, not differentiated further.
type splinePartGrad struct {
	pure
	d      int
	logdet bool
}

func (op splinePart) Arity() int { return 1 }
func (op splinePart) Type() hm.Type {
	if op.logdet {
		return hm.NewFnType(rqMatType(), rqVecType())
	}
	return hm.NewFnType(rqMatType(), rqMatType())
}
func (op splinePart) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapes(in, 1)
	if err != nil {
		return nil, err
	}
	if s[0][1] != op.d+1 {
		return nil, fmt.Errorf("layers: %v of a %v matrix", op, s[0])
	}
	if op.logdet {
		return tensor.Shape{s[0][0]}, nil
	}
	return tensor.Shape{s[0][0], op.d}, nil
}
func (op splinePart) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op splinePart) Hashcode() uint32      { return hashOf(op) }
func (op splinePart) String() string {
	if op.logdet {
		return fmt.Sprintf("SplineLogDetOf%d", op.d+1)
	}
	return fmt.Sprintf("SplineValueOf%d", op.d+1)
}
func (op splinePart) DiffWRT(int) []bool { return []bool{true} }

func (op splinePart) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(splinePartGrad(op), grad)
	return G.Nodes{d}, err
}

func (op splinePart) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op splinePart) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("layers: %v takes 1 input, have %d", op, len(in))
	}
	v, err := contiguous(op, in[0])
	if err != nil {
		return nil, err
	}
	if _, err := op.InferShape(v.Shape()); err != nil {
		return nil, err
	}
	rows := v.Shape()[0]
	var out *tensor.Dense
	if op.logdet {
		out = splineOutputVector(prealloc, v.Dtype(), rows)
	} else {
		out = output(prealloc, v.Dtype(), rows, op.d)
	}
	switch vd := v.Data().(type) {
	case []float64:
		splineSplit(vd, out.Data().([]float64), rows, op.d, op.logdet)
	case []float32:
		splineSplit(vd, out.Data().([]float32), rows, op.d, op.logdet)
	}
	return out, nil
}

func splineSplit[F float32 | float64](v, out []F, rows, d int, logdet bool) {
	for r := 0; r < rows; r++ {
		if logdet {
			out[r] = v[r*(d+1)+d]
		} else {
			copy(out[r*d:(r+1)*d], v[r*(d+1):r*(d+1)+d])
		}
	}
}

func (op splinePartGrad) Arity() int { return 1 }
func (op splinePartGrad) Type() hm.Type {
	if op.logdet {
		return hm.NewFnType(rqVecType(), rqMatType())
	}
	return hm.NewFnType(rqMatType(), rqMatType())
}
func (op splinePartGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("layers: %v takes 1 input, have %d", op, len(in))
	}
	s, ok := in[0].(tensor.Shape)
	if !ok || (op.logdet && len(s) != 1) || (!op.logdet && (len(s) != 2 || s[1] != op.d)) {
		return nil, fmt.Errorf("layers: %v of shape %v", op, in[0])
	}
	return tensor.Shape{s[0], op.d + 1}, nil
}
func (op splinePartGrad) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op splinePartGrad) Hashcode() uint32      { return hashOf(op) }
func (op splinePartGrad) String() string        { return "∂" + splinePart(op).String() }

func (op splinePartGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op splinePartGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("layers: %v takes 1 input, have %d", op, len(in))
	}
	g, err := contiguous(op, in[0])
	if err != nil {
		return nil, err
	}
	sh, err := op.InferShape(g.Shape())
	if err != nil {
		return nil, err
	}
	out := output(prealloc, g.Dtype(), sh[0], sh[1])
	switch gd := g.Data().(type) {
	case []float64:
		splineUnsplit(gd, out.Data().([]float64), sh[0], op.d, op.logdet)
	case []float32:
		splineUnsplit(gd, out.Data().([]float32), sh[0], op.d, op.logdet)
	}
	return out, nil
}

func splineUnsplit[F float32 | float64](g, out []F, rows, d int, logdet bool) {
	for r := 0; r < rows; r++ {
		o := out[r*(d+1) : (r+1)*(d+1)]
		if logdet {
			clear(o[:d])
			o[d] = g[r]
		} else {
			copy(o[:d], g[r*d:(r+1)*d])
			o[d] = 0
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

//go:build !cgo

package layers

import "math"

// rqKernel evaluates the chunk's m elements (inputs sc.v, raw parameters
// th, (m, 3K−1)) into sc.buf and sc.bin (spline_vec.go); with logs also
// the log-derivatives. It computes what the C kernel of spline_vec_cgo.go
// computes, operation for operation, with Go's math.
func rqKernel[F float32 | float64](s RQSpline, inverse, logs bool, th []F, sc *rqScratch, m int) {
	if m == 0 {
		return
	}
	k, p, bound := s.Bins, s.ParamsPerCoord(), s.TailBound
	buf, v, bin := sc.buf, sc.v[:m], sc.bin[:m]
	e := buf[:2*k*m]
	kx, ky := buf[2*k*m:(3*k+1)*m], buf[(3*k+1)*m:(4*k+2)*m]
	row := func(r int) []float64 { return sc.row(r, m) }
	// 1. Raw widths and heights less their maxima; 0 in the tails.
	for i, vi := range v {
		if !(vi >= -bound && vi <= bound) {
			for j := range 2 * k {
				e[j*m+i] = 0
			}
			continue
		}
		for h := range 2 {
			u := th[i*p+h*k : i*p+(h+1)*k]
			mx := float64(u[0])
			for _, x := range u[1:] {
				if x := float64(x); x > mx || x != x {
					mx = x
				}
			}
			for j, x := range u {
				e[(h*k+j)*m+i] = float64(x) - mx
			}
		}
	}
	// 2.
	rqExpMap(e, e)
	// 3. Softmaxes, knots, bins.
	tmp := row(rqRowTmp)
	rqKnotRows(k, m, s.MinBinWidth, bound, e[:k*m], kx, tmp)
	rqKnotRows(k, m, s.MinBinHeight, bound, e[k*m:], ky, tmp)
	grid := kx
	if inverse {
		grid = ky
	}
	clear(bin)
	for j := 1; j < k; j++ {
		gj := grid[j*m : (j+1)*m]
		for i, vi := range v {
			if gj[i] <= vi {
				bin[i]++
			}
		}
	}
	x0, w, y0, h := row(rqRowX0), row(rqRowW), row(rqRowY0), row(rqRowH)
	u0, u1, sp0, sp1 := row(rqRowU0), row(rqRowU1), row(rqRowSP0), row(rqRowSP1)
	for i, vi := range v {
		b := int(bin[i])
		if !(vi >= -bound && vi <= bound) {
			bin[i], b = -1, 0
		}
		x0[i] = kx[b*m+i]
		w[i] = kx[(b+1)*m+i] - kx[b*m+i]
		y0[i] = ky[b*m+i]
		h[i] = ky[(b+1)*m+i] - ky[b*m+i]
		ud := th[i*p+2*k : (i+1)*p]
		u0[i], u1[i] = 0, 0
		if b >= 1 {
			u0[i] = float64(ud[b-1])
		}
		if b+1 <= k-1 {
			u1[i] = float64(ud[b])
		}
		sp0[i], sp1[i] = -math.Abs(u0[i]), -math.Abs(u1[i])
	}
	// 4.
	sp := buf[(rqRows(k)+rqRowSP0)*m : (rqRows(k)+rqRowSP1+1)*m]
	rqExpMap(sp, sp)
	rqLog1pMap(buf[(rqRows(k)+rqRowSPL0)*m:(rqRows(k)+rqRowSPL1+1)*m], sp)
	// 5.
	d0, d1, spl0, spl1 := row(rqRowD0), row(rqRowD1), row(rqRowSPL0), row(rqRowSPL1)
	xis, sls, as, ts := row(rqRowXI), row(rqRowSL), row(rqRowA), row(rqRowT)
	ms, qs, ns := row(rqRowM), row(rqRowQ), row(rqRowN)
	lg0, lg1, out := row(rqRowLG0), row(rqRowLG1), row(rqRowOut)
	for i, vi := range v {
		b := int(bin[i])
		l := rqLocal{x0: x0[i], w: w[i], y0: y0[i], h: h[i], d0: 1, d1: 1}
		if b >= 1 {
			l.d0 = s.MinDerivative + (rqMax0(u0[i]) + spl0[i])
		}
		if b >= 0 && b+1 <= k-1 {
			l.d1 = s.MinDerivative + (rqMax0(u1[i]) + spl1[i])
		}
		d0[i], d1[i] = l.d0, l.d1
		pt := l.point(vi, inverse)
		xis[i], sls[i], as[i], ts[i], ms[i], qs[i], ns[i] = pt.xi, pt.sl, pt.a, pt.t, pt.m, pt.q, pt.n
		out[i] = vi
		if b >= 0 {
			out[i] = l.out(&pt, inverse)
		}
		if logs {
			lg0[i], lg1[i] = 1, 1
			if b >= 0 {
				lg0[i], lg1[i] = pt.sl*pt.sl*pt.q, pt.m
			}
		}
	}
	if logs {
		lg := buf[(rqRows(k)+rqRowLG0)*m : (rqRows(k)+rqRowLG1+1)*m]
		rqLogMap(lg, lg)
		for i := range lg0 {
			lg0[i] = lg0[i] - 2*lg1[i]
		}
	}
}

// rqGradKernel evaluates, after rqKernel, the chunk's gradient: with wrt
// 0 the gradient with respect to the inputs into the row rqRowDX, with wrt
// 1 the raw gradients into out (m, 3K−1); the upstream gradients are in
// the rows rqRowGY and rqRowGL, weighted as mode says. It is the C
// kernel's arithmetic, element by element with rqLocal.grads and
// RQSpline.rawGrad.
func rqGradKernel[F float32 | float64](s RQSpline, inverse bool, wrt, mode int, sc *rqScratch, m int, out []F) {
	p := s.ParamsPerCoord()
	gys, gls, dx := sc.row(rqRowGY, m), sc.row(rqRowGL, m), sc.row(rqRowDX, m)
	var e rqEval
	for i := range m {
		gy, gl := gys[i], gls[i]
		bin := int(sc.bin[i])
		if bin < 0 { // the identity tails
			if wrt == 1 {
				clear(out[i*p : (i+1)*p])
				continue
			}
			e = rqEval{dOut: 1}
		} else {
			l, pt := sc.local(i, m)
			l.grads(&pt, inverse, &e)
		}
		if wrt == 0 {
			switch mode {
			case rqModeJoint:
				dx[i] = gy*e.dOut + gl*e.dLd
			case rqModeLogDet:
				dx[i] = gl * e.dLd
			default:
				dx[i] = gy * e.dOut
			}
			continue
		}
		var gp [6]float64
		for j := range gp {
			switch mode {
			case rqModeJoint:
				gp[j] = gy*e.dOutP[j] + gl*e.dLdP[j]
			case rqModeLogDet:
				gp[j] = e.dLdP[j] * gl
			default:
				gp[j] = e.dOutP[j] * gy
			}
		}
		sc.softmaxes(i, m)
		sig := sc.sigmoids(i, m)
		s.rawGrad(sc.sw, sc.sh, bin, &sig, &gp, sc.grad)
		for j, v := range sc.grad {
			out[i*p+j] = F(v)
		}
	}
}

// softmaxes gathers element i's softmaxes of a chunk of m elements into
// sc.sw and sc.sh.
func (sc *rqScratch) softmaxes(i, m int) {
	k := sc.bins
	for j := range k {
		sc.sw[j] = sc.buf[j*m+i]
		sc.sh[j] = sc.buf[(k+j)*m+i]
	}
}

// local returns element i's bin and formula terms of a chunk of m
// elements.
func (sc *rqScratch) local(i, m int) (rqLocal, rqPoint) {
	r := func(q int) float64 { return sc.buf[(rqRows(sc.bins)+q)*m+i] }
	return rqLocal{x0: r(rqRowX0), w: r(rqRowW), y0: r(rqRowY0), h: r(rqRowH), d0: r(rqRowD0), d1: r(rqRowD1)},
		rqPoint{xi: r(rqRowXI), sl: r(rqRowSL), a: r(rqRowA), t: r(rqRowT), m: r(rqRowM), q: r(rqRowQ), n: r(rqRowN)}
}

// sigmoids returns σ(u_d) at element i's bin ends (0 at the boundary
// knots), of a chunk of m elements.
func (sc *rqScratch) sigmoids(i, m int) [2]float64 {
	var sig [2]float64
	b := int(sc.bin[i])
	if b >= 1 {
		sig[0] = rqSigmoidOf(sc.row(rqRowU0, m)[i], sc.row(rqRowSP0, m)[i])
	}
	if b+1 <= sc.bins-1 {
		sig[1] = rqSigmoidOf(sc.row(rqRowU1, m)[i], sc.row(rqRowSP1, m)[i])
	}
	return sig
}

// rqSigmoidOf is rqSigmoid(u) from e = exp(−|u|).
func rqSigmoidOf(u, e float64) float64 {
	if u >= 0 {
		return 1 / (1 + e)
	}
	return e / (1 + e)
}

// rqKnotRows normalises the K rows e (m each) by their sum (into tmp) and
// writes the K+1 rows of knots (rqCumKnots).
func rqKnotRows(k, m int, minb, bound float64, e, knots, tmp []float64) {
	clear(tmp)
	for j := range k {
		for i, x := range e[j*m : (j+1)*m] {
			tmp[i] += x
		}
	}
	for j := range k {
		ej := e[j*m : (j+1)*m]
		for i := range ej {
			ej[i] /= tmp[i]
		}
	}
	scale := 1 - minb*float64(k)
	clear(tmp)
	for i := range m {
		knots[i] = -bound
		knots[k*m+i] = bound
	}
	for j := 0; j < k-1; j++ {
		ej, kj := e[j*m:(j+1)*m], knots[(j+1)*m:(j+2)*m]
		for i := range ej {
			tmp[i] += minb + scale*ej[i]
			kj[i] = 2*bound*tmp[i] - bound
		}
	}
}

// The elementwise functions of the kernel (also the tests' reference).

func rqExpMap(dst, src []float64) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = math.Exp(x)
	}
}

func rqLogMap(dst, src []float64) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = math.Log(x)
	}
}

func rqLog1pMap(dst, src []float64) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = math.Log1p(x)
	}
}

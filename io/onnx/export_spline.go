package onnx

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/layers"
)

// The export of layers.SplineFlow (FlowSample and FlowDensity dispatch
// here). Each coupling is written with standard ONNX operators, as nflows'
// unconstrained_rational_quadratic_spline computes it:
//
//	x_c = Gather(x, Identity), θ = MLP(x_c) reshaped (B, n, 3K−1), sliced
//	into u_w, u_h, u_d;
//	w = m_w + (1 − K·m_w)·Softmax(u_w); left knots X = 2B·CumSum(w,
//	exclusive) − B, right knots 2B·CumSum(w) − B, W their difference;
//	likewise Y, H; interior derivatives m_δ + Softplus(u_d);
//	v = Clip(x_t, −B, B); the bin's one-hot vector
//	Equal(ReduceSum(v ≥ knots), 1…K), and each bin quantity its
//	ReduceSum against it;
//	the rational-quadratic formula (forward) or the root of its quadratic
//	(inverse), the log-derivative, Where(−B ≤ x_t ≤ B, spline, identity),
//	and Concat + Gather to put the columns back in order.
//
// The one-hot gathers (no GatherElements) keep every operator one that
// flowebm's importer differentiates, so an imported spline flow trains;
// the clipped v keeps the unused branch of Where finite, so its gradient
// is not NaN. Softplus in float64 is written with elementary operators
// (ONNX Runtime has no double kernel), as the MLP activations are.

// int64Scalar adds a 0-d int64 initializer (CumSum's axis).
func (b *builder) int64Scalar(name string, v int) string {
	return b.initializer(name, nil, typeInt64, []float64{float64(v)})
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, "_")
}

// splineCoupling adds one coupling's pass; it returns the output (B, d)
// and its log-determinant (B).
func (b *builder) splineCoupling(c layers.SplineCoupling, x string, inverse bool) (string, string, error) {
	sp := c.Spline
	k, n := sp.Bins, len(c.Transformed)
	p := sp.ParamsPerCoord()
	bound := sp.TailBound
	cast := func(v string) string { return b.node("Cast", []string{v}, intAttr("to", int64(b.dtype))) }
	mul := func(u, v string) string { return b.node("Mul", []string{u, v}) }
	add := func(u, v string) string { return b.node("Add", []string{u, v}) }
	sub := func(u, v string) string { return b.node("Sub", []string{u, v}) }
	div := func(u, v string) string { return b.node("Div", []string{u, v}) }
	slice3 := func(v string, lo, hi int) string {
		return b.node("Slice", []string{v, b.int64s("start_"+strconv.Itoa(lo), lo), b.int64s("end_"+strconv.Itoa(hi), hi), b.int64s("axis_2", 2)})
	}
	// pick sums a (B, n, K') tensor against a one-hot (B, n, K') one: (B, n).
	pick := func(onehot, v string) string {
		return b.node("ReduceSum", []string{mul(onehot, v), b.int64s("axis_2", 2)}, intAttr("keepdims", 0))
	}
	gather := func(v string, cols []int) string {
		return b.node("Gather", []string{v, b.int64s("cols_"+joinInts(cols), cols...)}, intAttr("axis", 1))
	}

	xc := gather(x, c.Identity)
	theta, err := b.mlp(c.Net, xc)
	if err != nil {
		return "", "", err
	}
	theta = b.node("Reshape", []string{theta, b.int64s(fmt.Sprintf("shape_batch_%d_%d", n, p), -1, n, p)})
	xt := gather(x, c.Transformed)
	inside := b.node("And", []string{
		b.node("GreaterOrEqual", []string{xt, b.scalar(-bound)}),
		b.node("LessOrEqual", []string{xt, b.scalar(bound)})})
	v := b.node("Clip", []string{xt, b.scalar(-bound), b.scalar(bound)})

	// Knots (B, n, K): left ends and widths of the bins in x and y.
	knots := func(u string, minSize float64) (left, size string) {
		w := add(mul(b.node("Softmax", []string{u}, intAttr("axis", 2)), b.scalar(1-minSize*float64(k))), b.scalar(minSize))
		axis := b.int64Scalar("axis_scalar_2", 2)
		ex := b.node("CumSum", []string{w, axis}, intAttr("exclusive", 1))
		in := b.node("CumSum", []string{w, axis})
		left = sub(mul(ex, b.scalar(2*bound)), b.scalar(bound))
		right := sub(mul(in, b.scalar(2*bound)), b.scalar(bound))
		return left, sub(right, left)
	}
	xl, wid := knots(slice3(theta, 0, k), sp.MinBinWidth)
	yl, hei := knots(slice3(theta, k, 2*k), sp.MinBinHeight)

	// The bin: one-hot (B, n, K) where the count of left knots ≤ v is k+1.
	grid := xl
	if inverse {
		grid = yl
	}
	ge := cast(b.node("GreaterOrEqual", []string{b.node("Unsqueeze", []string{v, b.int64s("axis_2", 2)}), grid}))
	count := b.node("ReduceSum", []string{ge, b.int64s("axis_2", 2)}, intAttr("keepdims", 1))
	ks := make([]float64, k)
	for i := range ks {
		ks[i] = float64(i + 1)
	}
	onehot := cast(b.node("Equal", []string{count, b.constant("bins_1_to_"+strconv.Itoa(k), []int{1, 1, k}, ks)}))
	x0, w, y0, h := pick(onehot, xl), pick(onehot, wid), pick(onehot, yl), pick(onehot, hei)
	// Derivatives at the bin's ends: δ_0 = δ_K = 1, interior
	// m_δ + softplus(u_d) (K ≥ 2: Couplings validates the spline).
	soft, err := b.activation(layers.Softplus, slice3(theta, 2*k, p))
	if err != nil {
		return "", "", err
	}
	dint := add(soft, b.scalar(sp.MinDerivative))
	first := b.node("ReduceSum", []string{slice3(onehot, 0, 1), b.int64s("axis_2", 2)}, intAttr("keepdims", 0))
	last := b.node("ReduceSum", []string{slice3(onehot, k-1, k), b.int64s("axis_2", 2)}, intAttr("keepdims", 0))
	d0 := add(first, pick(slice3(onehot, 1, k), dint))
	d1 := add(pick(slice3(onehot, 0, k-1), dint), last)

	s := div(h, w)
	a := sub(add(d0, d1), mul(b.scalar(2), s))
	var xi, out string
	if inverse {
		dy := sub(v, y0)
		qa := add(mul(dy, a), mul(h, sub(s, d0)))
		qb := sub(mul(h, d0), mul(dy, a))
		qc := b.node("Neg", []string{mul(s, dy)})
		disc := b.node("Relu", []string{sub(mul(qb, qb), mul(b.scalar(4), mul(qa, qc)))})
		xi = div(mul(b.scalar(2), qc), sub(b.node("Neg", []string{qb}), b.node("Sqrt", []string{disc})))
		out = add(mul(xi, w), x0)
	} else {
		xi = div(sub(v, x0), w)
	}
	one := b.scalar(1)
	omx := sub(one, xi)
	t := mul(xi, omx)
	m := add(s, mul(a, t))
	if !inverse {
		num := add(mul(s, mul(xi, xi)), mul(d0, t))
		out = add(y0, div(mul(h, num), m))
	}
	q := add(add(mul(d1, mul(xi, xi)), mul(mul(b.scalar(2), s), t)), mul(d0, mul(omx, omx)))
	ell := sub(b.node("Log", []string{mul(mul(s, s), q)}), mul(b.scalar(2), b.node("Log", []string{m})))
	if inverse {
		ell = b.node("Neg", []string{ell})
	}
	yt := b.node("Where", []string{inside, out, xt})
	ld := b.node("Where", []string{inside, ell, b.scalar(0)})
	logdet := b.node("ReduceSum", []string{ld, b.int64s("axis_1", 1)}, intAttr("keepdims", 0))

	// Back into column order: Concat(x_c, y_t) holds Identity ++ Transformed.
	order := append(append([]int(nil), c.Identity...), c.Transformed...)
	perm := make([]int, c.Dim)
	for pos, col := range order {
		perm[col] = pos
	}
	y := b.node("Gather", []string{b.node("Concat", []string{xc, yt}, intAttr("axis", 1)), b.int64s("cols_"+joinInts(perm), perm...)}, intAttr("axis", 1))
	return y, logdet, nil
}

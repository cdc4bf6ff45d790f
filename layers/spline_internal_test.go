package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// splineRandomRaw returns 3K−1 raw spline parameters drawn N(0, scale²).
func splineRandomRaw(rng *rand.Rand, s RQSpline, scale float64) []float64 {
	raw := make([]float64, s.ParamsPerCoord())
	for i := range raw {
		raw[i] = scale * rng.NormFloat64()
	}
	return raw
}

// splinePoints returns test points of a spline: every knot of both
// directions' grids, points just beside them, the tail bounds, points in
// the tails and random points inside.
func splinePoints(rng *rand.Rand, s RQSpline, raw []float64, inverse bool) []float64 {
	kn := newRQKnots(s.Bins)
	s.knots(raw, kn)
	grid := kn.x
	if inverse {
		grid = kn.y
	}
	b := s.TailBound
	pts := []float64{-b, b, 0, -b - 1e-9, b + 1e-9, -3 * b, 2.5 * b, -b * (1 - 1e-12)}
	for _, k := range grid {
		pts = append(pts, k, math.Nextafter(k, math.Inf(1)), math.Nextafter(k, math.Inf(-1)), k+1e-7, k-1e-7)
	}
	for i := 0; i < 40; i++ {
		pts = append(pts, b*(2*rng.Float64()-1))
	}
	return pts
}

// With raw parameters drawn N(0, 1.5²) (bins from 1e-3 wide, slopes from
// about 1e-4 to 1e4) the spline inverts to 1e-11 (absolute, B ≤ 5)
// everywhere, every knot, its floating-point neighbours and the tails
// included; its log-derivative matches a finite-difference derivative;
// and the inverse's log-derivative is minus the forward's to 1e-7 (the
// steepest bins amplify the rounding of the recovered ξ).
func TestRQSplineScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, s := range []RQSpline{{}, {Bins: 2}, {Bins: 3, TailBound: 3}, {Bins: 16, TailBound: 1}} {
		s = s.WithDefaults()
		worstInv, worstLd := 0.0, 0.0
		for trial := 0; trial < 20; trial++ {
			raw := splineRandomRaw(rng, s, 1.5)
			for _, inverse := range []bool{false, true} {
				for _, v := range splinePoints(rng, s, raw, inverse) {
					var y, ld, back, ldBack float64
					if inverse {
						y, ld = s.Inverse(v, raw)
						back, ldBack = s.Forward(y, raw)
					} else {
						y, ld = s.Forward(v, raw)
						back, ldBack = s.Inverse(y, raw)
					}
					worstInv = math.Max(worstInv, math.Abs(back-v))
					worstLd = math.Max(worstLd, math.Abs(ld+ldBack))
					if math.Abs(v) > s.TailBound && (y != v || ld != 0) {
						t.Errorf("%+v: tail point %v maps to %v (log-derivative %v)", s, v, y, ld)
					}
				}
			}
			// log-derivative against a Richardson-extrapolated central
			// difference (step 1e-5), at points at least 1e-4 from a knot.
			kn := newRQKnots(s.Bins)
			s.knots(raw, kn)
			fwd := func(v float64) float64 { y, _ := s.Forward(v, raw); return y }
			for i := 0; i < 20; i++ {
				x := s.TailBound * (2*rng.Float64() - 1)
				if k := rqSearch(kn.x, x); x-kn.x[k] < 1e-4 || kn.x[k+1]-x < 1e-4 {
					continue
				}
				_, ld := s.Forward(x, raw)
				d1 := fd.Derivative(fwd, x, &fd.Settings{Formula: fd.Central, Step: 2e-5})
				d2 := fd.Derivative(fwd, x, &fd.Settings{Formula: fd.Central, Step: 1e-5})
				d := (4*d2 - d1) / 3
				if math.Abs(math.Exp(ld)-d) > 1e-6*math.Max(d, 1e-2) {
					t.Errorf("%+v: at %v, exp(log-derivative) %v, finite difference %v", s, x, math.Exp(ld), d)
				}
			}
		}
		if worstInv > 1e-11 || worstLd > 1e-7 {
			t.Errorf("%+v: inverse error %.2e, log-derivative sum %.2e", s, worstInv, worstLd)
		}
		t.Logf("K=%d B=%v: |s⁻¹(s(x)) − x| ≤ %.2e, |ℓ + ℓ⁻¹| ≤ %.2e", s.Bins, s.TailBound, worstInv, worstLd)
	}
}

// With equal width and height parameters and derivative parameters at
// DerivativeOffset the spline is the identity (to rounding).
func TestRQSplineIdentity(t *testing.T) {
	s := RQSpline{}.WithDefaults()
	raw := make([]float64, s.ParamsPerCoord())
	for i := 2 * s.Bins; i < len(raw); i++ {
		raw[i] = s.DerivativeOffset()
	}
	for x := -6.0; x <= 6; x += 0.01 {
		y, ld := s.Forward(x, raw)
		if math.Abs(y-x) > 1e-14 || math.Abs(ld) > 1e-14 {
			t.Fatalf("identity spline at %v: %v, log-derivative %v", x, y, ld)
		}
	}
}

func TestRQSplineValidate(t *testing.T) {
	for _, s := range []RQSpline{{Bins: -1}, {Bins: 1}, {TailBound: -1}, {TailBound: math.Inf(1)}, {Bins: 8, MinBinWidth: 0.2}, {MinBinHeight: 1}, {MinDerivative: 1}, {MinBinWidth: math.NaN()}} {
		if err := s.WithDefaults().Validate(); err == nil {
			t.Errorf("%+v validates", s)
		}
	}
	if err := (RQSpline{}).WithDefaults().Validate(); err != nil {
		t.Error(err)
	}
}

func splineDense(dt tensor.Dtype, shape []int, v []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(toFloat32(v)))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
}

func splineFloats(v G.Value) []float64 {
	switch d := v.(*tensor.Dense).Data().(type) {
	case []float32:
		f := make([]float64, len(d))
		for i, x := range d {
			f[i] = float64(x)
		}
		return f
	case []float64:
		return append([]float64(nil), d...)
	}
	return nil
}

// The gradient operations of every rqsOp variant (forward, inverse; value,
// log-determinant) against central finite differences of ⟨g, op(x, θ)⟩,
// with respect to x and θ, on points that include the tails and knots:
// norm-wise relative error below 1e-7.
func TestRQSOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	s := RQSpline{Bins: 5, TailBound: 3}.WithDefaults()
	p := s.ParamsPerCoord()
	rows, d := 6, 4
	cols := []int{3, 0, 2}
	n := len(cols)
	for _, inverse := range []bool{false, true} {
		for _, logdet := range []bool{false, true} {
			op := rqsOp{spline: s, cols: cols, inverse: inverse, logdet: logdet}
			x := make([]float64, rows*d)
			th := make([]float64, rows*n*p)
			for i := range th {
				th[i] = rng.NormFloat64()
			}
			for i := range x {
				x[i] = 2.5 * rng.NormFloat64()
			}
			x[0*d+3] = 7   // upper tail
			x[1*d+0] = -4  // lower tail
			x[2*d+2] = 0.3 // fixed interior point
			gsize := rows * d
			if logdet {
				gsize = rows
			}
			g := make([]float64, gsize)
			for i := range g {
				g[i] = rng.NormFloat64()
			}
			gshape := []int{rows, d}
			if logdet {
				gshape = []int{rows}
			}
			for wrt := 0; wrt < 2; wrt++ {
				got, want := rqsGradFD(t, op, wrt, x, th, g, gshape, rows, d, n*p)
				if e := splineRelErr(got, want); e > 1e-7 {
					t.Errorf("%v wrt %d: relative error %.2e\n got %v\nwant %v", op, wrt, e, got, want)
				} else {
					t.Logf("%v wrt %d: relative error %.2e", op, wrt, e)
				}
			}
		}
	}
}

// rqsGradFD returns rqsGrad{op, wrt}'s gradient of ⟨g, op(x, θ)⟩ (g of
// shape gshape) with respect to x (wrt 0; rows×d) or θ (wrt 1; rows×tw),
// and its central finite differences (gonum diff/fd).
func rqsGradFD(t *testing.T, op rqsOp, wrt int, x, th, g []float64, gshape []int, rows, d, tw int) (got, want []float64) {
	t.Helper()
	obj := func(xv, tv []float64) float64 {
		out, err := op.Do(splineDense(tensor.Float64, []int{rows, d}, xv), splineDense(tensor.Float64, []int{rows, tw}, tv))
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for i, v := range splineFloats(out) {
			sum += g[i] * v
		}
		return sum
	}
	gt, err := rqsGrad{op: op, wrt: wrt}.Do(splineDense(tensor.Float64, []int{rows, d}, x), splineDense(tensor.Float64, []int{rows, tw}, th), splineDense(tensor.Float64, gshape, g))
	if err != nil {
		t.Fatal(err)
	}
	if wrt == 0 {
		want = fd.Gradient(nil, func(v []float64) float64 { return obj(v, th) }, x, &fd.Settings{Formula: fd.Central})
	} else {
		want = fd.Gradient(nil, func(v []float64) float64 { return obj(x, v) }, th, &fd.Settings{Formula: fd.Central})
	}
	return splineFloats(gt), want
}

// splineRelErr is ‖a − b‖₂ / max(‖a‖₂, ‖b‖₂).
func splineRelErr(a, b []float64) float64 {
	num, na, nb := 0.0, 0.0, 0.0
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	den := math.Sqrt(math.Max(na, nb))
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num) / den
}

// splineOpInputs is the default spline and, drawn from PCG(seed,
// seed+1), the inputs of an rqsOp on the columns cols of rows × d: x of
// scale 3, then θ (rows, len(cols)·(3K−1)) of scale 1, rounded to
// float32 with round32.
func splineOpInputs(seed uint64, rows, d int, cols []int, round32 bool) (s RQSpline, x, th []float64) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	s = RQSpline{}.WithDefaults()
	x, th = make([]float64, rows*d), make([]float64, rows*len(cols)*s.ParamsPerCoord())
	for i := range x {
		x[i] = 3 * rng.NormFloat64()
	}
	for i := range th {
		th[i] = rng.NormFloat64()
	}
	if round32 {
		for _, v := range [][]float64{x, th} {
			for i := range v {
				v[i] = float64(float32(v[i]))
			}
		}
	}
	return s, x, th
}

// The float32 operations agree with the float64 ones to float32 rounding,
// the preallocated path overwrites its output fully, and the columns
// operations gather and scatter.
func TestRQSOpFloat32AndPrealloc(t *testing.T) {
	rows, d, cols := 5, 3, []int{1, 2}
	s, x, th := splineOpInputs(31, rows, d, cols, true)
	p := s.ParamsPerCoord()
	for _, op := range []rqsOp{{spline: s, cols: cols}, {spline: s, cols: cols, inverse: true, logdet: true}} {
		want, err := op.Do(splineDense(tensor.Float64, []int{rows, d}, x), splineDense(tensor.Float64, []int{rows, len(cols) * p}, th))
		if err != nil {
			t.Fatal(err)
		}
		got, err := op.Do(splineDense(tensor.Float32, []int{rows, d}, x), splineDense(tensor.Float32, []int{rows, len(cols) * p}, th))
		if err != nil {
			t.Fatal(err)
		}
		w, g := splineFloats(want), splineFloats(got)
		for i := range w {
			if math.Abs(w[i]-g[i]) > 1e-6*math.Max(1, math.Abs(w[i])) {
				t.Errorf("%v: float32 %v, float64 %v", op, g[i], w[i])
			}
		}
		// A dirty preallocated output is overwritten.
		dirty := want.(*tensor.Dense).Clone().(*tensor.Dense)
		for i := range dirty.Data().([]float64) {
			dirty.Data().([]float64)[i] = math.NaN()
		}
		again, err := op.UsePreallocDo(dirty, splineDense(tensor.Float64, []int{rows, d}, x), splineDense(tensor.Float64, []int{rows, len(cols) * p}, th))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range splineFloats(again) {
			if v != w[i] {
				t.Fatalf("%v with a preallocated output: %v, want %v", op, v, w[i])
			}
		}
	}
	c, err := splineColumns{cols: []int{2, 0}}.Do(splineDense(tensor.Float64, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))
	if err != nil {
		t.Fatal(err)
	}
	if got := splineFloats(c); got[0] != 3 || got[1] != 1 || got[2] != 6 || got[3] != 4 {
		t.Errorf("columns [2 0]: %v", got)
	}
	sc, err := splineColumnsGrad{cols: []int{2, 0}, d: 3}.Do(splineDense(tensor.Float32, []int{2, 2}, []float64{1, 2, 3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	if got := splineFloats(sc); got[0] != 2 || got[1] != 0 || got[2] != 1 || got[3] != 4 || got[5] != 3 {
		t.Errorf("scatter into columns [2 0]: %v", got)
	}
	if _, err := (rqsOp{spline: s, cols: []int{5}}).Do(splineDense(tensor.Float64, []int{1, 3}, []float64{0, 0, 0}), splineDense(tensor.Float64, []int{1, p}, make([]float64, p))); err == nil {
		t.Error("column out of range: no error")
	}
}

// Gorgonia's own machinery takes the operations: type inference (the
// log-determinant is a vector), symbolic differentiation (G.Grad) and the
// TapeMachine give the values and gradients of the operations called
// directly.
func TestRQSOpOnTapeMachine(t *testing.T) {
	rows, d, cols := 4, 3, []int{0, 2}
	s, xv, tv := splineOpInputs(41, rows, d, cols, false)
	p := s.ParamsPerCoord()
	for _, inverse := range []bool{false, true} {
		g := G.NewGraph()
		x := G.NewMatrix(g, tensor.Float64, G.WithShape(rows, d), G.WithName("x"), G.WithValue(splineDense(tensor.Float64, []int{rows, d}, xv)))
		th := G.NewMatrix(g, tensor.Float64, G.WithShape(rows, len(cols)*p), G.WithName("θ"), G.WithValue(splineDense(tensor.Float64, []int{rows, len(cols) * p}, tv)))
		xc, err := G.ApplyOp(splineColumns{cols: []int{1}}, x)
		if err != nil {
			t.Fatal(err)
		}
		op := rqsOp{spline: s, cols: cols, inverse: inverse}
		y, err := G.ApplyOp(op, x, th)
		if err != nil {
			t.Fatal(err)
		}
		op.logdet = true
		ld, err := G.ApplyOp(op, x, th)
		if err != nil {
			t.Fatal(err)
		}
		if ld.Dims() != 1 || ld.Shape()[0] != rows {
			t.Fatalf("log-det node has shape %v", ld.Shape())
		}
		// cost = Σ y + Σ ld + Σ x[:, 1]
		sy, err := G.Sum(y)
		if err != nil {
			t.Fatal(err)
		}
		sl, err := G.Sum(ld)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := G.Sum(xc)
		if err != nil {
			t.Fatal(err)
		}
		cost := G.Must(G.Add(G.Must(G.Add(sy, sl)), sc))
		grads, err := G.Grad(cost, x, th)
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		ones := make([]float64, rows*d)
		for i := range ones {
			ones[i] = 1
		}
		xin, tin := splineDense(tensor.Float64, []int{rows, d}, xv), splineDense(tensor.Float64, []int{rows, len(cols) * p}, tv)
		var want [2][]float64
		for wrt := 0; wrt < 2; wrt++ {
			a, err := rqsGrad{op: rqsOp{spline: s, cols: cols, inverse: inverse}, wrt: wrt}.Do(xin, tin, splineDense(tensor.Float64, []int{rows, d}, ones))
			if err != nil {
				t.Fatal(err)
			}
			b, err := rqsGrad{op: op, wrt: wrt}.Do(xin, tin, splineDense(tensor.Float64, []int{rows}, ones[:rows]))
			if err != nil {
				t.Fatal(err)
			}
			want[wrt] = splineFloats(a)
			for i, v := range splineFloats(b) {
				want[wrt][i] += v
			}
		}
		for r := 0; r < rows; r++ {
			want[0][r*d+1]++ // the columns op's gradient
		}
		wantY, err := rqsOp{spline: s, cols: cols, inverse: inverse}.Do(xin, tin)
		if err != nil {
			t.Fatal(err)
		}
		if e := splineRelErr(splineFloats(y.Value()), splineFloats(wantY)); e != 0 {
			t.Errorf("inverse %v: TapeMachine value differs by %.2e", inverse, e)
		}
		for wrt, gn := range grads {
			if e := splineRelErr(splineFloats(gn.Value()), want[wrt]); e > 1e-15 {
				t.Errorf("inverse %v: TapeMachine gradient %d differs by %.2e", inverse, wrt, e)
			}
		}
	}
}

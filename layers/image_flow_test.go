package layers_test

import (
	"math"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// imgFlow returns a flow of net; with perturb > 0 the heads start at
// InitScale 1 and every parameter is moved by N(0, perturb²), so the map
// is far from the identity.
func imgFlow(t testing.TB, net layers.ImageRealNVP, dt tensor.Dtype, perturb float64, seed uint64) *graph.Flow {
	t.Helper()
	if perturb > 0 {
		net.InitScale = 1
	}
	f, err := graph.NewFlow(net, layers.NewIsotropic(net.Dimension(), 1), dt, imgRNG(seed))
	if err != nil {
		t.Fatal(err)
	}
	if perturb > 0 {
		rng := imgRNG(seed + 1)
		th := f.Params.Flatten(nil)
		for i := range th {
			th[i] += perturb * rng.NormFloat64()
		}
		f.Params.SetFlat(th)
	}
	return f
}

// The default flow for 28×28 images has 191,524 parameters and starts as
// the identity (up to the 1e-6 scale of its heads).
func TestImageRealNVPDefault(t *testing.T) {
	net := layers.ImageRealNVP{}
	cs, err := net.Couplings()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 8 || cs[0].Dt != 0.25 {
		t.Errorf("%d couplings with dt %v, want 8 and 1/4", len(cs), cs[0].Dt)
	}
	f := imgFlow(t, net, tensor.Float64, 0, 1)
	if n := f.Params.Count(); n != 191524 {
		t.Errorf("default image flow has %d parameters, want 191,524", n)
	}
	n := 2
	z := imgRandMatrix(imgRNG(2), n, 784, 1)
	x, ld := mat.NewDense(n, 784, nil), make([]float64, n)
	if err := f.Forward(z, x, ld); err != nil {
		t.Fatal(err)
	}
	moved, lmax := maxAbsDiff(x.RawMatrix().Data, z.RawMatrix().Data), math.Max(math.Abs(ld[0]), math.Abs(ld[1]))
	t.Logf("at start: max |T(z) − z| = %.2e, max |log det J| = %.2e", moved, lmax)
	if moved > 1e-4 || lmax > 1e-3 {
		t.Errorf("at start max |T(z) − z| = %.2e, |log det| = %.2e; want the identity", moved, lmax)
	}
}

// Masks: each coupling transforms half the coordinates, and consecutive
// couplings of one kind and scale transform complementary halves.
func TestImageRealNVPMasks(t *testing.T) {
	net := layers.ImageRealNVP{Image: layers.ImageShape{C: 2, H: 8, W: 4}, Scales: 2, Checkerboard: 3, ChannelWise: 2}
	cs, err := net.Couplings()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 10 {
		t.Fatalf("%d couplings, want 10", len(cs))
	}
	for k, c := range cs {
		on := 0.0
		for _, m := range c.Mask {
			on += m
		}
		if on != 32 {
			t.Errorf("coupling %d (%s, squeeze %d) transforms %v of 64 coordinates", k, c.Kind, c.Squeeze, on)
		}
		if k > 0 && cs[k-1].Kind == c.Kind && cs[k-1].Squeeze == c.Squeeze {
			for j := range c.Mask {
				if c.Mask[j]+cs[k-1].Mask[j] != 1 {
					t.Fatalf("couplings %d and %d are not complementary", k-1, k)
				}
			}
		}
	}
	// The first checkerboard mask is the pixel checkerboard of each channel.
	for j, m := range cs[0].Mask {
		i, w := j%32/4, j%4
		if want := float64(1 - (i+w)%2); m != want {
			t.Fatalf("checkerboard mask at %d = %v, want %v", j, m, want)
		}
	}
	for _, bad := range []layers.ImageRealNVP{
		{Image: layers.ImageShape{C: 1, H: 6, W: 6}, Scales: 2},
		{Image: layers.ImageShape{C: 1, H: 4, W: 4}, Checkerboard: -1, ChannelWise: -1},
		{Image: layers.ImageShape{C: 0, H: 4, W: 4}},
	} {
		if _, err := bad.Couplings(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// With random non-identity weights, T⁻¹(T(z)) = z and T(T⁻¹(x)) = x to
// 1e-10, and the log-determinants of the two directions cancel.
func TestImageRealNVPInverse(t *testing.T) {
	for _, net := range []layers.ImageRealNVP{
		{Image: layers.ImageShape{C: 1, H: 4, W: 4}, Hidden: 4},
		{Image: layers.ImageShape{C: 2, H: 8, W: 4}, Hidden: 6, Scales: 1, Checkerboard: 3, ChannelWise: 1, Activation: layers.SiLU},
	} {
		f := imgFlow(t, net, tensor.Float64, 0.2, 3)
		n, d := 6, net.Dimension()
		z := imgRandMatrix(imgRNG(4), n, d, 1)
		x, zb, xb := mat.NewDense(n, d, nil), mat.NewDense(n, d, nil), mat.NewDense(n, d, nil)
		ld, ldi, ld2 := make([]float64, n), make([]float64, n), make([]float64, n)
		if err := f.Forward(z, x, ld); err != nil {
			t.Fatal(err)
		}
		if err := f.Inverse(x, zb, ldi); err != nil {
			t.Fatal(err)
		}
		if err := f.Forward(zb, xb, ld2); err != nil {
			t.Fatal(err)
		}
		moved := maxAbsDiff(x.RawMatrix().Data, z.RawMatrix().Data)
		e1, e2 := maxAbsDiff(zb.RawMatrix().Data, z.RawMatrix().Data), maxAbsDiff(xb.RawMatrix().Data, x.RawMatrix().Data)
		el := 0.0
		for i := range ld {
			el = math.Max(el, math.Abs(ld[i]+ldi[i]))
		}
		t.Logf("%v: max |T(z) − z| = %.2f; |T⁻¹(T(z)) − z| ≤ %.2e, |T(T⁻¹(x)) − x| ≤ %.2e, |ld + ld⁻¹| ≤ %.2e", net.Image, moved, e1, e2, el)
		if moved < 0.1 || e1 > 1e-10 || e2 > 1e-10 || el > 1e-10 {
			t.Errorf("%v: flow moved points by %v; inverse errors %.2e, %.2e; log-det mismatch %.2e", net.Image, moved, e1, e2, el)
		}
	}
}

// log|det J| agrees with the log-determinant of a central finite-difference
// Jacobian (gonum diff/fd) on 1×4×4 images, forward and inverse, to 1e-7.
func TestImageRealNVPLogDetFD(t *testing.T) {
	net := layers.ImageRealNVP{Image: layers.ImageShape{C: 1, H: 4, W: 4}, Hidden: 4, Activation: layers.SiLU}
	f := imgFlow(t, net, tensor.Float64, 0.2, 5)
	n, d := 4, 16
	z := imgRandMatrix(imgRNG(6), n, d, 1)
	worst := 0.0
	for _, inverse := range []bool{false, true} {
		run := func(in *mat.Dense, out *mat.Dense, ld []float64) {
			var err error
			if inverse {
				err = f.Inverse(in, out, ld)
			} else {
				err = f.Forward(in, out, ld)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		out, ld := mat.NewDense(n, d, nil), make([]float64, n)
		run(z, out, ld)
		in1, out1, ld1 := mat.NewDense(1, d, nil), mat.NewDense(1, d, nil), make([]float64, 1)
		for i := 0; i < n; i++ {
			jac := mat.NewDense(d, d, nil)
			fd.Jacobian(jac, func(y, v []float64) {
				in1.SetRow(0, v)
				run(in1, out1, ld1)
				copy(y, out1.RawRowView(0))
			}, z.RawRowView(i), &fd.JacobianSettings{Formula: fd.Central})
			var lu mat.LU
			lu.Factorize(jac)
			want, _ := lu.LogDet()
			e := math.Abs(ld[i]-want) / math.Max(1, math.Abs(want))
			worst = math.Max(worst, e)
			if e > 1e-7 {
				t.Errorf("inverse %v, row %d: log det %v, finite differences %v", inverse, i, ld[i], want)
			}
		}
	}
	t.Logf("log|det J| vs finite-difference Jacobian: relative error ≤ %.2e", worst)
}

// The maximum-likelihood gradient (graph.Flow.MLGrad) agrees with central
// finite differences of mean log λ(x) to 1e-6 relative (graph.CheckFlow).
func TestImageRealNVPMLGrad(t *testing.T) {
	for _, net := range []layers.ImageRealNVP{
		{Image: layers.ImageShape{C: 1, H: 4, W: 4}, Hidden: 4, Scales: 1, Activation: layers.SiLU},
		{Image: layers.ImageShape{C: 1, H: 4, W: 4}, Hidden: 3, Scales: 2, Checkerboard: 1, ChannelWise: 1, ResBlocks: -1},
	} {
		f := imgFlow(t, net, tensor.Float64, 0.2, 7)
		x := imgRandMatrix(imgRNG(8), 3, 16, 1)
		c, err := graph.CheckFlow(f, x)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(c)
		if c.RelErr > 1e-6 {
			t.Errorf("%s: relative error %.2e > 1e-6", c.What, c.RelErr)
		}
	}
}

// Float32 and float64 flows with the same weights agree on T(z), log|det
// J| and log λ(x) to float32 round-off.
func TestImageRealNVPFloat32(t *testing.T) {
	net := layers.ImageRealNVP{Image: layers.ImageShape{C: 1, H: 8, W: 8}, Hidden: 8}
	f64 := imgFlow(t, net, tensor.Float64, 0.1, 9)
	f32, err := graph.NewFlow(net, layers.NewIsotropic(64, 1), tensor.Float32, imgRNG(9))
	if err != nil {
		t.Fatal(err)
	}
	f32.Params.SetFlat(f64.Params.Flatten(nil))
	n := 4
	z := imgRandMatrix(imgRNG(10), n, 64, 1)
	x64, x32 := mat.NewDense(n, 64, nil), mat.NewDense(n, 64, nil)
	l64, l32 := make([]float64, n), make([]float64, n)
	if err := f64.Forward(z, x64, l64); err != nil {
		t.Fatal(err)
	}
	if err := f32.Forward(z, x32, l32); err != nil {
		t.Fatal(err)
	}
	q64, q32 := make([]float64, n), make([]float64, n)
	if err := f64.LogDensity(x64, q64); err != nil {
		t.Fatal(err)
	}
	if err := f32.LogDensity(x64, q32); err != nil {
		t.Fatal(err)
	}
	ex, el, eq := graph.RelErrInf(x32.RawMatrix().Data, x64.RawMatrix().Data), graph.RelErrInf(l32, l64), graph.RelErrInf(q32, q64)
	t.Logf("float32 vs float64: T(z) %.2e, log det %.2e, log λ %.2e", ex, el, eq)
	if ex > 1e-4 || el > 1e-4 || eq > 1e-4 {
		t.Errorf("float32 vs float64: T(z) %.2e, log det %.2e, log λ %.2e (tolerance 1e-4)", ex, el, eq)
	}
}

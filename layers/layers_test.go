package layers_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distmv"
)

func TestParseActivationRoundTrip(t *testing.T) {
	for _, a := range []layers.Activation{layers.Identity, layers.ReLU, layers.SiLU, layers.Softplus, layers.Tanh, layers.ELU, layers.LeakyReLU(0.05), layers.LeakyReLU(0.2)} {
		got, err := layers.ParseActivation(a.String())
		if err != nil || got != a {
			t.Errorf("ParseActivation(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
	}
	if a, err := layers.ParseActivation("leaky_relu"); err != nil || a.Slope != 0.01 {
		t.Errorf("bare leaky_relu = %v, %v; want PyTorch's default slope 0.01", a, err)
	}
	for _, bad := range []string{"gelu", "leaky_relu(x)", "leaky_relu(nan)", "leaky_relu(-inf)", "leaky_relu0.1", "relu6"} {
		if _, err := layers.ParseActivation(bad); err == nil {
			t.Errorf("ParseActivation(%q): no error", bad)
		}
	}
}

func TestMasks(t *testing.T) {
	cases := []struct {
		r    layers.RealNVP
		want string
	}{
		{layers.RealNVP{Dim: 5, Blocks: 1}, "[0 0 1 1 1]"},
		{layers.RealNVP{Dim: 5, Blocks: 1, Mask: layers.MaskCheckerboard}, "[0 1 0 1 0]"},
		{layers.RealNVP{Dim: 6, Blocks: 1, Mask: layers.MaskCheckerboard2D, MaskWidth: 3}, "[0 1 0 1 0 1]"},
		{layers.RealNVP{Dim: 4, Blocks: 1, Mask: layers.MaskCheckerboard2D, MaskWidth: 2}, "[0 1 1 0]"},
	}
	for _, c := range cases {
		m, err := c.r.BaseMask()
		if err != nil || fmt.Sprint(m) != c.want {
			t.Errorf("%+v: mask %v (%v), want %v", c.r, m, err, c.want)
		}
		cs, err := c.r.Couplings()
		if err != nil {
			t.Fatal(err)
		}
		// The two couplings of a block transform complementary coordinates.
		for i := range m {
			if cs[0].Mask[i]+cs[1].Mask[i] != 1 {
				t.Errorf("%+v: couplings 0 and 1 are not complementary at %d", c.r, i)
			}
		}
	}
	if _, err := (layers.RealNVP{Dim: 5, Blocks: 1, Mask: layers.MaskCheckerboard2D, MaskWidth: 2}).BaseMask(); err == nil {
		t.Error("2D mask with a width not dividing the dimension: no error")
	}
	if _, err := (layers.RealNVP{Dim: 4, Blocks: 1, Mask: "spiral"}).BaseMask(); err == nil {
		t.Error("unknown mask: no error")
	}
}

func TestMLPNames(t *testing.T) {
	seq := layers.MLP{Name: "net", Sizes: []int{2, 3, 1}, Layout: layers.Sequential}
	list := layers.MLP{Name: "s", Sizes: []int{2, 3, 4, 1}}
	var got []string
	for _, p := range append(seq.ParamSpecs(), list.ParamSpecs()...) {
		got = append(got, fmt.Sprintf("%s%v", p.Name, p.Shape))
	}
	want := "[net.0.weight[3 2] net.0.bias[3] net.2.weight[1 3] net.2.bias[1] s.0.weight[3 2] s.0.bias[3] s.1.weight[4 3] s.1.bias[4] s.2.weight[1 4] s.2.bias[1]]"
	if fmt.Sprint(got) != want {
		t.Errorf("names %v\nwant %v", got, want)
	}
}

func TestGaussianMatchesGonum(t *testing.T) {
	sigma := []float64{0.5, 1, 2.5}
	g := layers.NewDiagonal(sigma)
	cov := mat.NewSymDense(3, nil)
	for i, s := range sigma {
		cov.SetSym(i, i, s*s)
	}
	ref, ok := distmv.NewNormal([]float64{0, 0, 0}, cov, nil)
	if !ok {
		t.Fatal("bad covariance")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x, grad := make([]float64, 3), make([]float64, 3)
	for k := 0; k < 20; k++ {
		for i := range x {
			x[i] = 3 * rng.NormFloat64()
		}
		if got, want := g.LogProb(x), ref.LogProb(x); math.Abs(got-want) > 1e-12 {
			t.Errorf("LogProb = %v, gonum %v", got, want)
		}
		g.GradLogProb(x, grad)
		want := make([]float64, 3)
		fd.Gradient(want, g.LogProb, x, &fd.Settings{Formula: fd.Central})
		for i := range grad {
			if math.Abs(grad[i]-want[i]) > 1e-6*math.Max(1, math.Abs(want[i])) {
				t.Errorf("GradLogProb %v, finite differences %v", grad, want)
			}
		}
	}
	if err := layers.NewIsotropic(2, 0).Validate(); err == nil {
		t.Error("σ = 0 validates")
	}
}

// TestGaussianSample checks draws against N(0, σ²) per coordinate: with
// n = 20,000 draws the sample standard deviation has relative standard error
// 1/√(2n) = 0.5%, so a 3% bound is six standard errors.
func TestGaussianSample(t *testing.T) {
	g := layers.NewDiagonal([]float64{0.3, 2})
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	cols := [2][]float64{make([]float64, n), make([]float64, n)}
	z := make([]float64, 2)
	for i := 0; i < n; i++ {
		g.Sample(rng, z)
		cols[0][i], cols[1][i] = z[0], z[1]
	}
	for j, s := range g.Sigma {
		if sd := stat.StdDev(cols[j], nil); math.Abs(sd/s-1) > 0.03 {
			t.Errorf("coordinate %d: sample sd %v, want %v", j, sd, s)
		}
	}
}

// TestInitialisers checks the bounds and spread of the initialisers; the
// normal's sample sd over 40,000 values has relative standard error 0.35%.
func TestInitialisers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	v := make([]float64, 40000)
	layers.TorchUniform(rng, 16, v)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if lo < -0.25 || hi > 0.25 || lo > -0.24 || hi < 0.24 {
		t.Errorf("TorchUniform(fan_in 16) range [%v, %v], want ≈ [−0.25, 0.25]", lo, hi)
	}
	layers.ScaledNormal(1e-6)(rng, 4, v)
	if sd := stat.StdDev(v, nil); math.Abs(sd/5e-7-1) > 0.02 {
		t.Errorf("ScaledNormal(1e-6), fan_in 4: sd %v, want 5e-7", sd)
	}
}

// InitSmallLast draws the hidden layers of s and t at PyTorch's scale and only
// the output layers at InitScale; InitSmall (the default) draws all at
// InitScale; anything else is an error.
func TestRealNVPInit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, init := range []string{"", layers.InitSmall, layers.InitSmallLast} {
		specs, err := layers.RealNVP{Dim: 4, Blocks: 1, Hidden: []int{8}, Init: init}.ParamSpecs()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range specs {
			v := make([]float64, p.Size())
			f := p.Init
			if f == nil {
				f = layers.TorchUniform
			}
			f(rng, p.FanIn, v)
			big := floats.Norm(v, math.Inf(1))
			// [4, 8, 4] MLPs: layer 1 is the output layer.
			output := strings.HasSuffix(p.Name, ".1.weight") || strings.HasSuffix(p.Name, ".1.bias")
			wantBig := init == layers.InitSmallLast && !output
			if wantBig && big < 0.05 {
				t.Errorf("init %q: %s has largest |value| %v, want PyTorch's scale (≈ 1/√fan_in)", init, p.Name, big)
			}
			if !wantBig && big > 1e-5 {
				t.Errorf("init %q: %s has largest |value| %v, want ≤ 1e-5", init, p.Name, big)
			}
		}
	}
	if _, err := (layers.RealNVP{Dim: 4, Blocks: 1, Hidden: []int{8}, Init: "xavier"}).ParamSpecs(); err == nil || !strings.Contains(err.Error(), "xavier") {
		t.Errorf("unknown init: error %v, want one naming it", err)
	}
}

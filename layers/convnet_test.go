package layers_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// imgProbe is an energy Σ w⊙f(image(x)) for a building block f, with fixed
// random weights w: its value checks f's output against a reference, and
// graph.CheckEBM its gradients.
type imgProbe struct {
	shape layers.ImageShape
	specs []layers.ParamSpec
	out   int // number of outputs of f per sample
	w     []float64
	f     func(b layers.Binder, h *G.Node) (*G.Node, error)
}

func (p imgProbe) Dim() int                       { return p.shape.Dim() }
func (p imgProbe) ParamSpecs() []layers.ParamSpec { return p.specs }
func (p imgProbe) Energy(b layers.Binder, x *G.Node) (*G.Node, error) {
	h, err := layers.ToImage(x, p.shape)
	if err != nil {
		return nil, err
	}
	if h, err = p.f(b, h); err != nil {
		return nil, err
	}
	if h, err = layers.Flatten(h); err != nil {
		return nil, err
	}
	bsz := x.Shape()[0]
	w := make([]float64, 0, bsz*p.out)
	for i := 0; i < bsz; i++ {
		w = append(w, p.w...)
	}
	if h, err = G.HadamardProd(h, layers.Constant(b, "probe", w, bsz, p.out)); err != nil {
		return nil, err
	}
	return G.Sum(h, 1)
}

func imgRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)) }

func imgRandMatrix(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := range m.RawMatrix().Data {
		m.RawMatrix().Data[i] = scale * rng.NormFloat64()
	}
	return m
}

func imgRandVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// imgConvRef is a direct 2-d convolution (cross-correlation) of one image
// x (cin, h, w) with weights (cout, cin, k, k) and bias.
func imgConvRef(x []float64, cin, h, w int, wt, bias []float64, cout, k, stride, pad int) ([]float64, int, int) {
	oh, ow := (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	y := make([]float64, cout*oh*ow)
	for o := 0; o < cout; o++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				s := 0.0
				if bias != nil {
					s = bias[o]
				}
				for c := 0; c < cin; c++ {
					for a := 0; a < k; a++ {
						for bb := 0; bb < k; bb++ {
							r, q := i*stride-pad+a, j*stride-pad+bb
							if r >= 0 && r < h && q >= 0 && q < w {
								s += wt[((o*cin+c)*k+a)*k+bb] * x[(c*h+r)*w+q]
							}
						}
					}
				}
				y[(o*oh+i)*ow+j] = s
			}
		}
	}
	return y, oh, ow
}

func imgDot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Conv2d, AvgPool2d, GlobalAvgPool, the residual block and activations
// on (B, C, H, W) tensors compute what direct loops compute, and their
// x- and parameter gradients agree with finite differences.
func TestConvNetBlocks(t *testing.T) {
	shape := layers.ImageShape{C: 2, H: 6, W: 5}
	conv := layers.Conv2d{Name: "conv", In: 2, Out: 3, Kernel: 3, Stride: 2, Padding: 1}
	oh, ow, err := conv.OutSize(6, 5)
	if err != nil || oh != 3 || ow != 3 {
		t.Fatalf("OutSize = %d, %d, %v; want 3, 3", oh, ow, err)
	}
	rb := layers.ResBlock{Name: "rb", Channels: 2, Activation: layers.SiLU}
	c1, c2 := rb.Convs()
	silu := func(v float64) float64 { return v / (1 + math.Exp(-v)) }
	rng := imgRNG(1)
	cases := []struct {
		name  string
		specs []layers.ParamSpec
		out   int
		f     func(b layers.Binder, h *G.Node) (*G.Node, error)
		ref   func(x []float64, p *graph.Params) []float64
	}{
		{"conv stride 2 pad 1", conv.ParamSpecs(), 3 * 3 * 3, conv.Apply, func(x []float64, p *graph.Params) []float64 {
			y, _, _ := imgConvRef(x, 2, 6, 5, p.Get("conv.weight").Float64s(), p.Get("conv.bias").Float64s(), 3, 3, 2, 1)
			return y
		}},
		{"conv 1x1 no bias", layers.Conv2d{Name: "c", In: 2, Out: 4, Kernel: 1, NoBias: true}.ParamSpecs(), 4 * 30,
			layers.Conv2d{Name: "c", In: 2, Out: 4, Kernel: 1, NoBias: true}.Apply, func(x []float64, p *graph.Params) []float64 {
				y, _, _ := imgConvRef(x, 2, 6, 5, p.Get("c.weight").Float64s(), nil, 4, 1, 1, 0)
				return y
			}},
		{"avgpool 2", nil, 2 * 3 * 2, layers.AvgPool2d{Kernel: 2}.Apply, func(x []float64, _ *graph.Params) []float64 {
			var y []float64
			for c := 0; c < 2; c++ {
				for i := 0; i < 3; i++ {
					for j := 0; j < 2; j++ {
						s := 0.0
						for a := 0; a < 2; a++ {
							for bb := 0; bb < 2; bb++ {
								s += x[(c*6+2*i+a)*5+2*j+bb]
							}
						}
						y = append(y, s/4)
					}
				}
			}
			return y
		}},
		{"global average", nil, 2, func(_ layers.Binder, h *G.Node) (*G.Node, error) { return layers.GlobalAvgPool(h) },
			func(x []float64, _ *graph.Params) []float64 {
				y := make([]float64, 2)
				for i, v := range x {
					y[i/30] += v / 30
				}
				return y
			}},
		{"leaky relu rank 4", nil, 60, func(b layers.Binder, h *G.Node) (*G.Node, error) { return layers.LeakyReLU(0.2).Apply(b, h) },
			func(x []float64, _ *graph.Params) []float64 {
				y := make([]float64, len(x))
				for i, v := range x {
					y[i] = math.Max(v, 0) + 0.2*math.Min(v, 0)
				}
				return y
			}},
		{"silu rank 4", nil, 60, func(b layers.Binder, h *G.Node) (*G.Node, error) { return layers.SiLU.Apply(b, h) },
			func(x []float64, _ *graph.Params) []float64 {
				y := make([]float64, len(x))
				for i, v := range x {
					y[i] = silu(v)
				}
				return y
			}},
		{"residual block", rb.ParamSpecs(), 60, rb.Apply, func(x []float64, p *graph.Params) []float64 {
			a := make([]float64, len(x))
			for i, v := range x {
				a[i] = silu(v)
			}
			h, _, _ := imgConvRef(a, 2, 6, 5, p.Get(c1.Name+".weight").Float64s(), p.Get(c1.Name+".bias").Float64s(), 2, 3, 1, 1)
			for i, v := range h {
				h[i] = silu(v)
			}
			h, _, _ = imgConvRef(h, 2, 6, 5, p.Get(c2.Name+".weight").Float64s(), p.Get(c2.Name+".bias").Float64s(), 2, 3, 1, 1)
			for i := range h {
				h[i] += x[i]
			}
			return h
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := imgProbe{shape: shape, specs: c.specs, out: c.out, w: imgRandVec(rng, c.out), f: c.f}
			e, err := graph.NewEBM(p, nil, tensor.Float64, imgRNG(2))
			if err != nil {
				t.Fatal(err)
			}
			x := imgRandMatrix(rng, 3, shape.Dim(), 1)
			en := make([]float64, 3)
			if err := e.Energy(x, en); err != nil {
				t.Fatal(err)
			}
			for i := range en {
				y := c.ref(x.RawRowView(i), e.Params)
				if len(y) != c.out {
					t.Fatalf("reference has %d outputs, want %d", len(y), c.out)
				}
				if want := imgDot(p.w, y); math.Abs(en[i]-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("row %d: Σ w·f(x) = %v, direct loops %v", i, en[i], want)
				}
			}
			if e.Params.Count() == 0 {
				// CheckEBM's parameter check needs parameters: x-gradient only.
				checkXGrad(t, e, x)
				return
			}
			checks, err := graph.CheckEBM(e, imgRandMatrix(rng, 2, shape.Dim(), 1), x, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range checks {
				t.Log(ch)
				if ch.RelErr > 1e-6 {
					t.Errorf("%s: relative error %.2e > 1e-6", ch.What, ch.RelErr)
				}
			}
		})
	}
}

// checkXGrad compares ∇ₓE with central finite differences.
func checkXGrad(t *testing.T, e *graph.EBM, x *mat.Dense) {
	t.Helper()
	n, d := x.Dims()
	en, g := make([]float64, n), mat.NewDense(n, d, nil)
	if err := e.EnergyGrad(x, en, g); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		f := func(v []float64) float64 {
			one := []float64{0}
			if err := e.Energy(mat.NewDense(1, d, v), one); err != nil {
				t.Fatal(err)
			}
			return one[0]
		}
		want := imgFD(g.RawRowView(i), f, mat.Row(nil, i, x))
		r := imgRelErr(g.RawRowView(i), want)
		t.Logf("row %d: ∇ₓE rel. error %.2e", i, r)
		if r > 1e-6 {
			t.Errorf("row %d: ∇ₓE rel. error %.2e > 1e-6", i, r)
		}
	}
}

// The blocks refuse inputs they cannot take with an error.
func TestConvNetErrors(t *testing.T) {
	p := imgProbe{shape: layers.ImageShape{C: 2, H: 4, W: 4}, out: 1, w: []float64{1}}
	bad := []struct {
		name string
		f    func(b layers.Binder, h *G.Node) (*G.Node, error)
	}{
		{"channels", layers.Conv2d{Name: "c", In: 3, Out: 1, Kernel: 3}.Apply},
		{"kernel too large", layers.Conv2d{Name: "c", In: 2, Out: 1, Kernel: 5}.Apply},
		{"pool too large", layers.AvgPool2d{Kernel: 5}.Apply},
		{"even residual kernel", layers.ResBlock{Name: "r", Channels: 2, Kernel: 2}.Apply},
	}
	for _, c := range bad {
		p.f, p.specs = c.f, nil
		if c.name == "even residual kernel" {
			p.specs = layers.ResBlock{Name: "r", Channels: 2, Kernel: 2}.ParamSpecs()
		}
		e, err := graph.NewEBM(p, nil, tensor.Float64, imgRNG(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Energy(mat.NewDense(1, 32, nil), []float64{0}); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, err := layers.ToImage(G.NewMatrix(G.NewGraph(), tensor.Float64, G.WithShape(2, 31)), layers.ImageShape{C: 2, H: 4, W: 4}); err == nil {
		t.Error("ToImage of 31 coordinates as 2×4×4: no error")
	}
}

package layers_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// imgFD is central finite differences of f at x (gonum diff/fd): per
// coordinate, from the default step or from a step of 1e-7, whichever is
// closer to got (as graph.CheckEBM: a step straddling a LeakyReLU kink is
// off by the jump in slope; the smaller one rarely straddles it, while a
// real error shows at both).
func imgFD(got []float64, f func([]float64) float64, x []float64) []float64 {
	coarse := fd.Gradient(nil, f, x, &fd.Settings{Formula: fd.Central})
	fine := fd.Gradient(nil, f, x, &fd.Settings{Formula: fd.Central, Step: 1e-7})
	for i := range coarse {
		if math.Abs(got[i]-fine[i]) < math.Abs(got[i]-coarse[i]) {
			coarse[i] = fine[i]
		}
	}
	return coarse
}

// imgRelErr is graph.RelErrInf, ‖a − b‖∞ / max(‖a‖∞, ‖b‖∞) (convnet_test.go).
var imgRelErr = graph.RelErrInf

// imgTinyEnergy is a small ImageEnergy on 1×6×6 images for gradient checks:
// channels 4, 6, one residual block per stage (1,225 parameters).
func imgTinyEnergy(act layers.Activation, down string) layers.ImageEnergy {
	return layers.ImageEnergy{Image: layers.ImageShape{C: 1, H: 6, W: 6}, Channels: []int{4, 6}, Activation: act, Downsample: down}
}

// imgPerturbed returns an EBM of net whose parameters (the zero last layer
// included) are moved by N(0, scale²) each, so that every term of the
// gradients is exercised.
func imgPerturbed(t testing.TB, net graph.EnergyNet, dt tensor.Dtype, scale float64, seed uint64) *graph.EBM {
	t.Helper()
	e, err := graph.NewEBM(net, nil, dt, imgRNG(seed))
	if err != nil {
		t.Fatal(err)
	}
	rng := imgRNG(seed + 1)
	th := e.Params.Flatten(nil)
	for i := range th {
		th[i] += scale * rng.NormFloat64()
	}
	e.Params.SetFlat(th)
	return e
}

// The default model: 222,017 parameters named as the PyTorch module's
// state_dict, PyTorch's default initialisation, E ≡ 0 and ∇ₓE ≡ 0 at start.
func TestImageEnergyDefault(t *testing.T) {
	net := layers.ImageEnergy{}
	if net.Dim() != 784 {
		t.Fatalf("Dim = %d, want 784", net.Dim())
	}
	e, err := graph.NewEBM(net, nil, tensor.Float64, imgRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	if n := e.Params.Count(); n != 222017 {
		t.Errorf("default image EBM has %d parameters, want 222,017", n)
	}
	want := []string{"stem.weight", "stem.bias",
		"blocks.0.conv1.weight", "blocks.0.conv1.bias", "blocks.0.conv2.weight", "blocks.0.conv2.bias",
		"down.0.weight", "down.0.bias",
		"blocks.1.conv1.weight", "blocks.1.conv1.bias", "blocks.1.conv2.weight", "blocks.1.conv2.bias",
		"down.1.weight", "down.1.bias",
		"blocks.2.conv1.weight", "blocks.2.conv1.bias", "blocks.2.conv2.weight", "blocks.2.conv2.bias",
		"out.weight", "out.bias"}
	if got := e.Params.Names(); !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	if s := e.Params.Get("down.0.weight").Shape; fmt.Sprint(s) != "[64 32 3 3]" {
		t.Errorf("down.0.weight has shape %v, want PyTorch's (out, in, k, k) = [64 32 3 3]", s)
	}
	// PyTorch's default: U(±1/√(in·k²)).
	for _, name := range []string{"down.0.weight", "down.0.bias", "blocks.1.conv2.weight"} {
		p := e.Params.Get(name)
		fanIn := float64(p.Shape[len(p.Shape)-1])
		if name != "down.0.bias" {
			fanIn = float64(p.Shape[1] * p.Shape[2] * p.Shape[3])
		} else {
			fanIn = 32 * 9
		}
		bound, m := 1/math.Sqrt(fanIn), 0.0
		for _, v := range p.Float64s() {
			m = math.Max(m, math.Abs(v))
		}
		if m > bound || m < 0.9*bound {
			t.Errorf("%s: max |w| = %v, want just under 1/√%v = %v", name, m, fanIn, bound)
		}
	}
	x := imgRandMatrix(imgRNG(2), 2, 784, 1)
	en, g := make([]float64, 2), mat.NewDense(2, 784, nil)
	if err := e.EnergyGrad(x, en, g); err != nil {
		t.Fatal(err)
	}
	if en[0] != 0 || en[1] != 0 || mat.Norm(g, math.Inf(1)) != 0 {
		t.Errorf("at start E = %v, ‖∇ₓE‖∞ = %v; want exactly 0", en, mat.Norm(g, math.Inf(1)))
	}
}

// ∇ₓE and the parameter gradient of the training loss (graph.EBM.LossGrad)
// agree with central finite differences (gonum diff/fd) to 1e-6 relative
// (fdRelTol of package graph), with perturbed weights, for both
// activations and both downsamplings.
func TestImageEnergyGradients(t *testing.T) {
	for _, c := range []struct {
		act  layers.Activation
		down string
	}{{layers.SiLU, layers.DownConv}, {layers.LeakyReLU(0.2), layers.DownConv}, {layers.SiLU, layers.DownAvgPool}, {layers.LeakyReLU(0.05), layers.DownAvgPool}} {
		t.Run(c.act.String()+"/"+c.down, func(t *testing.T) {
			net := imgTinyEnergy(c.act, c.down)
			e0, err := graph.NewEBM(net, nil, tensor.Float64, imgRNG(3))
			if err != nil {
				t.Fatal(err)
			}
			x := imgRandMatrix(imgRNG(4), 2, 36, 1)
			en := make([]float64, 2)
			if err := e0.Energy(x, en); err != nil || en[0] != 0 || en[1] != 0 {
				t.Fatalf("E at start = %v (%v), want 0", en, err)
			}
			e := imgPerturbed(t, net, tensor.Float64, 0.1, 5)
			checks, err := graph.CheckEBM(e, imgRandMatrix(imgRNG(6), 2, 36, 1), x, 0.3)
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

// Float32 and float64 models with the same weights agree on E and ∇ₓE to
// float32 round-off (1e-4 relative, norm-wise).
func TestImageEnergyFloat32(t *testing.T) {
	net := layers.ImageEnergy{Image: layers.ImageShape{C: 1, H: 12, W: 12}, Channels: []int{8, 16, 16}}
	e64 := imgPerturbed(t, net, tensor.Float64, 0.05, 7)
	e32, err := graph.NewEBM(net, nil, tensor.Float32, imgRNG(7))
	if err != nil {
		t.Fatal(err)
	}
	e32.Params.SetFlat(e64.Params.Flatten(nil))
	n := 5
	x := imgRandMatrix(imgRNG(8), n, 144, 1)
	for i, v := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = float64(float32(v))
	}
	en64, en32 := make([]float64, n), make([]float64, n)
	g64, g32 := mat.NewDense(n, 144, nil), mat.NewDense(n, 144, nil)
	if err := e64.EnergyGrad(x, en64, g64); err != nil {
		t.Fatal(err)
	}
	if err := e32.EnergyGrad(x, en32, g32); err != nil {
		t.Fatal(err)
	}
	re, rg := graph.RelErrInf(en32, en64), graph.RelErrInf(g32.RawMatrix().Data, g64.RawMatrix().Data)
	t.Logf("float32 vs float64: E rel. error %.2e, ∇ₓE %.2e", re, rg)
	if re > 1e-4 || rg > 1e-4 {
		t.Errorf("float32 vs float64: E rel. error %.2e, ∇ₓE %.2e (tolerance 1e-4)", re, rg)
	}
}

// With graph.Parallel{Shards: 4}, energies, x-gradients and the loss
// gradient of a model are the same bits on 2 workers as on 1 (run with
// -race), and agree with the whole-batch evaluation to round-off.
//
// One model is evaluated under each setting: two separately allocated
// float32 models with equal weights can differ in the last bit, because
// gonum's float32 kernels sum in an order that depends on the alignment of
// the operands (a 6-float weight of 24 bytes lands 8- or 16-byte aligned;
// measured: 25 of 39 fresh float32 copies of a model whose last layer has
// 6 inputs differed from the first in one energy by 1 ulp, none with 8).
func TestImageEnergyParallel(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		net := imgTinyEnergy(layers.SiLU, layers.DownConv)
		e := imgPerturbed(t, net, dt, 0.1, 11)
		n := 64
		x := imgRandMatrix(imgRNG(9), n, 36, 1)
		neg := imgRandMatrix(imgRNG(10), n, 36, 1)
		type result struct {
			en, g, pg []float64
			loss      float64
		}
		run := func(par graph.Parallel) result {
			e.Parallel = par
			var r result
			r.en = make([]float64, n)
			g := mat.NewDense(n, 36, nil)
			if err := e.EnergyGrad(x, r.en, g); err != nil {
				t.Fatal(err)
			}
			r.g = g.RawMatrix().Data
			r.pg = make([]float64, e.Params.Count())
			var err error
			if r.loss, err = e.LossGrad(x, neg, 0.1, r.pg); err != nil {
				t.Fatal(err)
			}
			return r
		}
		a, b, a2 := run(graph.Parallel{Shards: 4, Workers: 1}), run(graph.Parallel{Shards: 4, Workers: 2}), run(graph.Parallel{Shards: 4, Workers: 1})
		for _, o := range []result{b, a2} {
			if !slices.Equal(a.en, o.en) || !slices.Equal(a.g, o.g) || !slices.Equal(a.pg, o.pg) || a.loss != o.loss {
				t.Errorf("%v: results on 2 workers differ from 1 worker: same E %v, ∇ₓE %v, ∇θ %v, loss %v", dt,
					slices.Equal(a.en, o.en), slices.Equal(a.g, o.g), slices.Equal(a.pg, o.pg), a.loss == o.loss)
			}
		}
		w := run(graph.Parallel{})
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		re, rg, rp := graph.RelErrInf(w.en, a.en), graph.RelErrInf(w.g, a.g), graph.RelErrInf(w.pg, a.pg)
		t.Logf("%v: 4 shards vs whole batch: E %.2e, ∇ₓE %.2e, ∇θ %.2e", dt, re, rg, rp)
		if re > tol || rg > tol || rp > tol {
			t.Errorf("%v: sharded vs whole batch: E %.2e, ∇ₓE %.2e, ∇θ %.2e (tolerance %g)", dt, re, rg, rp, tol)
		}
	}
}

// Invalid configurations are errors.
func TestImageEnergyErrors(t *testing.T) {
	for _, net := range []layers.ImageEnergy{
		{Image: layers.ImageShape{C: 1, H: 0, W: 4}},
		{Channels: []int{}},
		{Channels: []int{8, -1}},
		{Downsample: "max"},
		{Image: layers.ImageShape{C: 1, H: 2, W: 2}, Channels: []int{2, 2, 2, 2}, Downsample: layers.DownAvgPool},
	} {
		if _, err := net.Layers(); err == nil {
			t.Errorf("%+v: no error", net)
		}
	}
}

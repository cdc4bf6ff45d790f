package onnx

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
)

// relDiff is max_i |a_i − b_i| / max(1, |b_i|).
func relDiff(a, b []float64) float64 {
	w := 0.0
	for i := range a {
		w = math.Max(w, math.Abs(a[i]-b[i])/math.Max(1, math.Abs(b[i])))
	}
	return w
}

// Exporting an EBM and importing the file gives the same energies and
// x-gradients, for every activation, in float64 (1e-12) and float32 (1e-5:
// the import computes in another order).
func TestRoundTripEBM(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	n, d := 6, 3
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = 1.5 * rng.NormFloat64()
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		for _, act := range []layers.Activation{layers.LeakyReLU(0.05), layers.ReLU, layers.SiLU, layers.Softplus, layers.Tanh, layers.ELU} {
			net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{d, 16, 8, 1}, Hidden: act, Layout: layers.Sequential}}
			orig, err := graph.NewEBM(net, nil, dt, rng)
			if err != nil {
				t.Fatal(err)
			}
			b, err := EBM(orig, Options{})
			if err != nil {
				t.Fatal(err)
			}
			imp, err := Decode(b, act.String()+".onnx")
			if err != nil {
				t.Fatalf("%v %v: %v", dt, act, err)
			}
			if imp.Dtype != dt || imp.Dim() != d {
				t.Fatalf("imported dtype %v, dim %d", imp.Dtype, imp.Dim())
			}
			back, err := graph.NewEBM(imp, nil, dt, rng)
			if err != nil {
				t.Fatal(err)
			}
			e1, e2 := make([]float64, n), make([]float64, n)
			g1, g2 := mat.NewDense(n, d, nil), mat.NewDense(n, d, nil)
			if err := orig.EnergyGrad(x, e1, g1); err != nil {
				t.Fatal(err)
			}
			if err := back.EnergyGrad(x, e2, g2); err != nil {
				t.Fatal(err)
			}
			if r := relDiff(e2, e1); r > tol {
				t.Errorf("%v %v: energies differ by %.2g relative", dt, act, r)
			}
			if r := relDiff(g2.RawMatrix().Data, g1.RawMatrix().Data); r > tol {
				t.Errorf("%v %v: gradients differ by %.2g relative", dt, act, r)
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := layers.NewIsotropic(2, 1)
	flow, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 1, Hidden: []int{4}}, base, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	sample, err := FlowSample(flow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	density, err := FlowDensity(flow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bld := newBuilder(typeDouble, nil)
	bld.rename("x", "energy")
	huge := model(bld.graph("g", []msg{valueInfo("x", typeDouble, 1<<20, 1<<20)}, []msg{valueInfo("energy", typeDouble, 1)}), "")
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"garbage", []byte("not a model"), "garbage:"},
		{"huge", huge, `input "x" has shape (1048576, 1048576): more than 33554432 values`},
		{"two outputs", sample, `graph has 2 outputs ("x", "log_density"): choose the energy output by name (flowebm energy and sample: --output NAME`},
		{"no such output", density, `no graph output named "energy"`},
	}
	for _, c := range cases {
		cfg := Config{}
		if c.name == "no such output" {
			cfg.Output = "energy"
		}
		_, err := DecodeConfig(c.b, c.name, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// PyTorch's own exports (torch.onnx.export with its defaults; regenerate
// with crosscheck/make_torch_fixtures.py) import, and their energies and
// x-gradients match PyTorch's within 1e-10 relative in float64 and 1e-5 in
// float32 (the bounds). The toy EBM is the paper's, exported with a
// dynamic and with a fixed batch; the fixed one is evaluated at another
// batch size too.
func TestImportPyTorchExports(t *testing.T) {
	var manifest []struct {
		Name  string `json:"name"`
		Dtype string `json:"dtype"`
		Dim   int    `json:"dim"`
	}
	b, err := os.ReadFile("testdata/torch/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, m := range manifest {
		dir := "testdata/torch/" + m.Name
		net, err := ReadFile(dir + ".onnx")
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		ebm, err := graph.NewEBM(net, nil, net.Dtype, rng)
		if err != nil {
			t.Fatal(err)
		}
		xa, _ := npy.ReadFile(dir + "_x.npy")
		ea, _ := npy.ReadFile(dir + "_energy.npy")
		ga, _ := npy.ReadFile(dir + "_grad.npy")
		n := xa.Shape[0]
		x := mat.NewDense(n, m.Dim, xa.Data)
		e, g := make([]float64, n), mat.NewDense(n, m.Dim, nil)
		if err := ebm.EnergyGrad(x, e, g); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		tol := 1e-10
		if m.Dtype == "f32" {
			tol = 1e-5
		}
		re, rg := relDiff(e, ea.Data), relDiff(g.RawMatrix().Data, ga.Data)
		if re > tol || rg > tol {
			t.Errorf("%s: energies differ from PyTorch's by %.2g, gradients by %.2g (tolerance %g)", m.Name, re, rg, tol)
		}
		t.Logf("%s: energies %.1e, gradients %.1e relative to PyTorch", m.Name, re, rg)
		// Another batch size: the first 3 rows.
		e3 := make([]float64, 3)
		if err := ebm.Energy(x.Slice(0, 3, 0, m.Dim), e3); err != nil {
			t.Fatalf("%s at batch 3: %v", m.Name, err)
		}
		if r := relDiff(e3, ea.Data[:3]); r > tol {
			t.Errorf("%s at batch 3: energies differ by %.2g", m.Name, r)
		}
	}
}

// The paper's toy EBM as PyTorch exports it (Gemm + LeakyRelu) samples
// under flowebm's MALA, tilted by a Gaussian base, and trains further:
// gradient steps on the contrastive loss with data at (1.5, 1.5) lower the
// data's energy relative to the chains'. The trained weights are written
// back into the ONNX file, which then gives the trained energies.
func TestPyTorchEBMSamplesAndTrains(t *testing.T) {
	net, err := ReadFile("testdata/torch/toy_f64.onnx")
	if err != nil {
		t.Fatal(err)
	}
	base := layers.NewIsotropic(2, 1.5)
	rng := rand.New(rand.NewPCG(4, 4))
	ebm, err := graph.NewEBM(net, &base, net.Dtype, rng)
	if err != nil {
		t.Fatal(err)
	}
	m := 256
	x := mat.NewDense(m, 2, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = 1.5 * rng.NormFloat64()
	}
	st := samplers.NewState(x)
	mala := &samplers.MALA{Target: ebm, StepSize: 0.05}
	acc := 0.0
	for k := 0; k < 50; k++ {
		s, err := mala.Step(rng, st)
		if err != nil {
			t.Fatal(err)
		}
		acc += s.Local / 50
	}
	if !(acc > 0.3 && acc < 1) {
		t.Errorf("MALA mean acceptance %.2f on the imported EBM, want in (0.3, 1)", acc)
	}

	pos := mat.NewDense(m, 2, nil)
	for i := 0; i < m; i++ {
		pos.Set(i, 0, 1.5+0.3*rng.NormFloat64())
		pos.Set(i, 1, 1.5+0.3*rng.NormFloat64())
	}
	gap := func() float64 {
		ep, en := make([]float64, m), make([]float64, m)
		ebm.Energy(pos, ep)
		ebm.Energy(st.X, en)
		return stat.Mean(ep, nil) - stat.Mean(en, nil)
	}
	before := gap()
	theta := ebm.Params.Flatten(nil)
	grad := make([]float64, len(theta))
	for k := 0; k < 30; k++ {
		if _, err := ebm.LossGrad(pos, st.X, 0, grad); err != nil {
			t.Fatal(err)
		}
		for i, g := range grad {
			theta[i] -= 0.05 * g // gradient descent
		}
		ebm.Params.SetFlat(theta)
	}
	after := gap()
	t.Logf("MALA acceptance %.2f; E(data) − E(chains) %.3f before, %.3f after training", acc, before, after)
	if !(after < before-1) {
		t.Errorf("E(data) − E(chains): %.3f before, %.3f after 30 gradient steps; want a drop of more than 1", before, after)
	}

	orig, err := os.ReadFile("testdata/torch/toy_f64.onnx")
	if err != nil {
		t.Fatal(err)
	}
	updated, err := UpdateWeights(orig, ebm.Params)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(updated, "updated.onnx")
	if err != nil {
		t.Fatal(err)
	}
	again, err := graph.NewEBM(back, &base, back.Dtype, rng)
	if err != nil {
		t.Fatal(err)
	}
	e1, e2 := make([]float64, m), make([]float64, m)
	ebm.Energy(pos, e1)
	again.Energy(pos, e2)
	if r := relDiff(e2, e1); r != 0 {
		t.Errorf("the written-back model's energies differ by %.2g from the trained model's", r)
	}
}

// Every flowebm export imports back with the same values, in both dtypes
// and for every kind (the network, the whole energy in the data's units,
// the flow's density and its sampling map's log-density), and the
// import's x-gradients agree with central finite differences of the
// original model's values (float64: 1e-6 relative, fd's step error).
func TestExportsImportBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n, d := 5, 3
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = 1.5 * rng.NormFloat64()
	}
	base := layers.NewDiagonal([]float64{1.5, 0.7, 1.1})
	sc := &data.Scaling{Shift: []float64{1, -2, 0.5}, Scale: []float64{2, 0.5, 1.5}}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		type kind struct {
			name string
			b    []byte
			cfg  Config
			f    func(row []float64) float64 // the original model's energy
		}
		var kinds []kind
		for _, act := range []layers.Activation{layers.LeakyReLU(0.05), layers.ReLU, layers.SiLU, layers.Softplus, layers.Tanh, layers.ELU} {
			net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{d, 8, 8, 1}, Hidden: act, Layout: layers.Sequential}}
			ebm, err := graph.NewEBM(net, &base, dt, rng)
			if err != nil {
				t.Fatal(err)
			}
			b1, err1 := EBM(ebm, Options{})
			b2, err2 := EBM(ebm, Options{Full: true, Scaling: sc})
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			kinds = append(kinds,
				kind{"ebm " + act.String(), b1, Config{}, func(r []float64) float64 {
					e := []float64{0}
					ebm.Energy(mat.NewDense(1, d, r), e)
					return e[0]
				}},
				kind{"energy " + act.String(), b2, Config{}, func(r []float64) float64 {
					lp := []float64{0}
					ebm.LogDensity(sc.FromData(mat.NewDense(1, d, r)), lp)
					return sc.LogDet() - lp[0]
				}})
		}
		flow, err := graph.NewFlow(layers.RealNVP{Dim: d, Blocks: 2, BlockDepth: 2, Hidden: []int{8}, InitScale: 1}, base, dt, rng)
		if err != nil {
			t.Fatal(err)
		}
		bd, err1 := FlowDensity(flow, Options{})
		bs, err2 := FlowSample(flow, Options{})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		kinds = append(kinds,
			kind{"flow-density", bd, Config{LogDensity: true}, func(r []float64) float64 {
				lq := []float64{0}
				flow.LogDensity(mat.NewDense(1, d, r), lq)
				return -lq[0]
			}},
			kind{"flow-sample", bs, Config{Output: "log_density", LogDensity: true}, func(r []float64) float64 {
				xs, ld := mat.NewDense(1, d, nil), []float64{0}
				flow.Forward(mat.NewDense(1, d, r), xs, ld)
				return ld[0] - base.LogProb(r)
			}})
		for _, k := range kinds {
			net, err := DecodeConfig(k.b, k.name+".onnx", k.cfg)
			if err != nil {
				t.Fatalf("%v %s: %v", dt, k.name, err)
			}
			imp, err := graph.NewEBM(net, nil, dt, rng)
			if err != nil {
				t.Fatal(err)
			}
			e, g := make([]float64, n), mat.NewDense(n, d, nil)
			if err := imp.EnergyGrad(x, e, g); err != nil {
				t.Fatalf("%v %s: %v", dt, k.name, err)
			}
			tol := 1e-12
			if dt == tensor.Float32 {
				tol = 1e-5 // float32 round-off; finite differences of float32 values are too noisy to compare
			}
			for i := 0; i < n; i++ {
				row := x.RawRowView(i)
				want := k.f(row)
				if r := math.Abs(e[i]-want) / math.Max(1, math.Abs(want)); r > tol {
					t.Errorf("%v %s row %d: imported energy %v, original %v", dt, k.name, i, e[i], want)
				}
				if dt == tensor.Float32 {
					continue
				}
				fg := make([]float64, d)
				fd.Gradient(fg, k.f, row, &fd.Settings{Formula: fd.Central})
				if r := relDiff(g.RawRowView(i), fg); r > 1e-6 {
					t.Errorf("%v %s row %d: imported gradient %v, finite differences of the original %v", dt, k.name, i, g.RawRowView(i), fg)
				}
			}
		}
	}
}

// modelWithOpset encodes a one-graph model at the given opset.
func modelWithOpset(g msg, opset int64) []byte {
	var os msg
	os.str(1, "")
	os.varint(2, opset)
	var m msg
	m.varint(1, 8)
	m.bytes(7, g)
	m.bytes(8, os)
	return m
}

// Malformed and unsupported models are refused with the file, the node,
// and what was expected; none panics.
func TestImportRefusals(t *testing.T) {
	in := []msg{valueInfo("x", typeDouble, "batch", 3)}
	out := []msg{valueInfo("energy", typeDouble, "batch")}
	graphOf := func(build func(b *builder) string) msg {
		b := newBuilder(typeDouble, nil)
		b.rename(build(b), "energy")
		return b.graph("g", in, out)
	}
	sum := func(b *builder, x string) string {
		return b.node("ReduceSum", []string{x, b.int64s("axes", 1)}, intAttr("keepdims", 0))
	}
	ok := graphOf(func(b *builder) string { return sum(b, "x") })
	cycle := func() msg {
		b := newBuilder(typeDouble, nil)
		var a, c msg
		a.str(1, "x")
		a.str(1, "c_out")
		a.str(2, "a_out")
		a.str(3, "A")
		a.str(4, "Add")
		c.str(1, "a_out")
		c.str(2, "c_out")
		c.str(3, "C")
		c.str(4, "Neg")
		b.nodes = append(b.nodes, a, c)
		b.rename(sum(b, "a_out"), "energy")
		return b.graph("g", in, out)
	}()
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"opset 8", modelWithOpset(ok, 8), "opset 8 (ai.onnx): supported opsets are 9 to 18"},
		{"opset 19", modelWithOpset(ok, 19), "opset 19 (ai.onnx): supported opsets are 9 to 18"},
		{"unsupported", modelWithOpset(graphOf(func(b *builder) string { return sum(b, b.node("LSTM", []string{"x"})) }), 14),
			`node "LSTM_1" (LSTM): operator LSTM is not supported (supported: Abs, Acos, Acosh, Add`},
		{"noise in forward", modelWithOpset(graphOf(func(b *builder) string { return sum(b, b.node("RandomNormalLike", []string{"x"})) }), 14),
			"operator RandomNormalLike is not supported: the graph draws random numbers"},
		{"mask indexing", modelWithOpset(graphOf(func(b *builder) string { return sum(b, b.node("NonZero", []string{"x"})) }), 14),
			"data-dependent output shape"},
		{"missing input", modelWithOpset(graphOf(func(b *builder) string { return sum(b, b.node("Neg", []string{"nowhere"})) }), 14),
			`node "Neg_1" (Neg): input "nowhere" is not a graph input, an initializer or any node's output`},
		{"cycle", modelWithOpset(cycle, 14), "is part of a cycle"},
		{"huge ConstantOfShape", modelWithOpset(graphOf(func(b *builder) string {
			c := b.node("ConstantOfShape", []string{b.int64s("big", 1<<20, 1<<20)})
			return sum(b, b.node("Add", []string{"x", c}))
		}), 14), `node "ConstantOfShape_1" (ConstantOfShape): shape [1048576 1048576] has 1.1e+12 values (8.19e+03 GiB as float64), more than the 33554432 (256 MiB) one tensor may hold`},
		{"bad reshape", modelWithOpset(graphOf(func(b *builder) string {
			return b.node("Reshape", []string{"x", b.int64s("s", 7, -1)})
		}), 14), `node "Reshape_1" (Reshape): cannot reshape [2 3] to [7 -1]`},
		{"output not per sample", modelWithOpset(graphOf(func(b *builder) string { return b.node("Neg", []string{"x"}) }), 14),
			`output "energy" has shape [2 3] for a batch of 2, want one value per sample`},
	}
	for _, c := range cases {
		_, err := Decode(c.b, c.name+".onnx")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), c.name+".onnx: ") {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Decode(modelWithOpset(ok, 14), "ok.onnx"); err != nil {
		t.Errorf("the valid model: %v", err)
	}
}

// README quotes the number of operators the importer builds.
func TestReadmeOperatorCount(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(\d+) operators, opsets 9–18`).FindSubmatch(b)
	if m == nil || string(m[1]) != strconv.Itoa(len(Supported())) {
		t.Errorf("README quotes %q operators, the importer builds %d", m, len(Supported()))
	}
}

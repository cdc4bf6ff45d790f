package onnx

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	gfloats "gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

type flowFixture struct {
	Name  string  `json:"name"`
	Dtype string  `json:"dtype"`
	Dim   int     `json:"dim"`
	Sigma float64 `json:"base_sigma"`
}

func flowFixtures(t *testing.T) []flowFixture {
	t.Helper()
	var m []flowFixture
	b, err := os.ReadFile("testdata/flows/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func readFixtureFlow(t *testing.T, name string, cfg FlowConfig) *graph.Flow {
	t.Helper()
	f, err := ReadFlow("testdata/flows/"+name+"_sample.onnx", "testdata/flows/"+name+"_density.onnx", cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

func fixtureMatrix(t *testing.T, name, what string, d int) *mat.Dense {
	t.Helper()
	a, err := npy.ReadFile("testdata/flows/" + name + "_" + what + ".npy")
	if err != nil {
		t.Fatal(err)
	}
	return mat.NewDense(len(a.Data)/d, d, a.Data)
}

func fixtureVector(t *testing.T, name, what string) []float64 {
	t.Helper()
	a, err := npy.ReadFile("testdata/flows/" + name + "_" + what + ".npy")
	if err != nil {
		t.Fatal(err)
	}
	return a.Data
}

// Flows trained in PyTorch (flowebm's reference RealNVP, and nflows' MAF
// and RealNVP, exported by crosscheck/export_flow.py) give PyTorch's
// x = T(z), log|det J_T(z)|, log q(x) and T⁻¹(x): to 1e-10 in float64 and
// 1e-5 in float32 (relative to max(1, |value|); the import computes in
// another order), with the base read from the files' metadata.
func TestImportedFlowsMatchPyTorch(t *testing.T) {
	for _, m := range flowFixtures(t) {
		f := readFixtureFlow(t, m.Name, FlowConfig{})
		if s := f.Base.Sigma[0]; s != m.Sigma {
			t.Errorf("%s: base σ %v, want %v (metadata)", m.Name, s, m.Sigma)
		}
		tol := 1e-10
		if m.Dtype == "f32" {
			tol = 1e-5
		}
		d, worst := m.Dim, 0.0
		z := fixtureMatrix(t, m.Name, "z", d)
		n, _ := z.Dims()
		x, ld := mat.NewDense(n, d, nil), make([]float64, n)
		if err := f.Forward(z, x, ld); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		pts := fixtureMatrix(t, m.Name, "points", d)
		lq, zp := make([]float64, n), mat.NewDense(n, d, nil)
		if err := f.LogDensity(pts, lq); err != nil {
			t.Fatal(err)
		}
		ldInv := make([]float64, n)
		if err := f.Inverse(pts, zp, ldInv); err != nil {
			t.Fatal(err)
		}
		lqx := make([]float64, n)
		if err := f.LogDensity(x, lqx); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what      string
			got, want []float64
		}{
			{"x", x.RawMatrix().Data, fixtureMatrix(t, m.Name, "x", d).RawMatrix().Data},
			{"logdet", ld, fixtureVector(t, m.Name, "logdet")},
			{"log q(T(z))", lqx, fixtureVector(t, m.Name, "logq_x")},
			{"log q(points)", lq, fixtureVector(t, m.Name, "logq_points")},
			{"T⁻¹(points)", zp.RawMatrix().Data, fixtureMatrix(t, m.Name, "z_points", d).RawMatrix().Data},
		} {
			r := relDiff(c.got, c.want)
			if !(r <= tol) {
				t.Errorf("%s: %s differs from PyTorch's by %.2g (tolerance %g)", m.Name, c.what, r, tol)
			}
			worst = max(worst, r)
		}
		t.Logf("%s: largest relative difference from PyTorch %.2g", m.Name, worst)
	}
}

// modeWeight is the fraction of rows nearer to mean a than to mean b.
func modeWeight(x *mat.Dense, a, b []float64) float64 {
	n, _ := x.Dims()
	c := 0
	for i := 0; i < n; i++ {
		if gfloats.Distance(x.RawRowView(i), a, 2) < gfloats.Distance(x.RawRowView(i), b, 2) {
			c++
		}
	}
	return float64(c) / float64(n)
}

// nflows' MAF, imported, drives i-SIR and IMH as their proposal, and both
// leave an unequal two-component mixture invariant: 3000 chains started
// at exact draws, after 20 steps, have the mixture's mode weight and
// coordinate means. The chains are independent and each is exactly
// π-distributed under a correct kernel, so the tolerance is 4.5 standard
// errors of the difference with 200,000 exact draws (false alarm ≈ 7e-6
// per comparison).
func TestImportedFlowProposalLeavesMixtureInvariant(t *testing.T) {
	flow := readFixtureFlow(t, "maf_f64", FlowConfig{})
	means := [][]float64{{-1, 0, 0.5}, {1.5, 1, 0.5}}
	target, err := samplers.NewMixture([]float64{0.3, 0.7}, means, []float64{0.6, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const m, nRef = 3000, 200000
	ref := mat.NewDense(nRef, 3, nil)
	if err := target.Sample(rng, ref, make([]float64, nRef)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name   string
		kernel samplers.Kernel
	}{
		{"i-SIR", &samplers.ISIR{Target: target, Proposal: flow, Particles: 8}},
		{"IMH", &samplers.IMH{Target: target, Proposal: flow}},
	} {
		x0 := mat.NewDense(m, 3, nil)
		if err := target.Sample(rng, x0, make([]float64, m)); err != nil {
			t.Fatal(err)
		}
		s := samplers.NewState(x0)
		acc := 0.0
		for step := 0; step < 20; step++ {
			st, err := k.kernel.Step(rng, s)
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			acc += st.Global / 20
		}
		if acc < 0.05 {
			t.Fatalf("%s: global acceptance %.3f too low to exercise the kernel", k.name, acc)
		}
		w, wRef := modeWeight(s.X, means[0], means[1]), modeWeight(ref, means[0], means[1])
		if se := math.Sqrt(wRef * (1 - wRef) * (1.0/m + 1.0/nRef)); math.Abs(w-wRef) > 4.5*se {
			t.Errorf("%s: weight of the first mode %.4f, target %.4f ± %.4f", k.name, w, wRef, 4.5*se)
		}
		for j := 0; j < 3; j++ {
			got, sd := stat.MeanStdDev(mat.Col(nil, j, s.X), nil)
			want, sdRef := stat.MeanStdDev(mat.Col(nil, j, ref), nil)
			if se := math.Hypot(sd/math.Sqrt(m), sdRef/math.Sqrt(nRef)); math.Abs(got-want) > 4.5*se {
				t.Errorf("%s: coordinate %d mean %.4f, target %.4f ± %.4f", k.name, j, got, want, 4.5*se)
			}
		}
		t.Logf("%s with nflows' MAF: global acceptance %.3f, first-mode weight %.4f (target %.4f)", k.name, acc, w, wRef)
	}
}

// trainImported takes 30 steps of gradient ascent on the mean
// log-likelihood (graph.Flow.MLGrad) of draws from N((1, −1, …), 1.5²)
// with the imported flow name and returns it with the likelihood before
// and after.
func trainImported(t *testing.T, name string) (f *graph.Flow, before, after float64) {
	t.Helper()
	f = readFixtureFlow(t, name, FlowConfig{})
	d := f.Dim()
	rng := rand.New(rand.NewPCG(8, 9))
	x := mat.NewDense(256, d, nil)
	for i := 0; i < 256; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, 1.5*rng.NormFloat64()+1-2*float64(j%2))
		}
	}
	grad, theta := make([]float64, f.Params.Count()), f.Params.Flatten(nil)
	for step := 0; step <= 30; step++ {
		ll, err := f.MLGrad(x, grad)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if step == 0 {
			before = ll
		}
		after = ll
		gfloats.AddScaled(theta, 0.02, grad)
		f.Params.SetFlat(theta)
	}
	return f, before, after
}

// An imported flow trains further in flowebm: maximum-likelihood steps on
// its density graph raise the likelihood; only the module's parameters move
// (not RealNVP's masks, MADE's masks and degrees or the permutations, which
// PyTorch keeps as buffers); the sampling graph moves with the density
// graph (tied by initializer name); and the trained weights written back
// into the two files read again as the same flow, with the files'
// other bytes unchanged.
func TestImportedFlowTrainsAndWritesBack(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"realnvp_f64", "maf_f64", "nvp_f32", "glowdet_f64"} { // glowdet: through Det's gradient (round 100 B1)
		f, before, after := trainImported(t, name)
		if !(after > before+0.05) {
			t.Errorf("%s: log-likelihood %.4f → %.4f after 30 steps, want an increase", name, before, after)
		}
		for _, p := range f.Params.Names() {
			if strings.Contains(p, "mask") || strings.Contains(p, "degrees") || strings.Contains(p, "permutation") {
				t.Errorf("%s: buffer %q is trained", name, p)
			}
		}
		sp, dp := filepath.Join(dir, name+"_sample.onnx"), filepath.Join(dir, name+"_density.onnx")
		if err := WriteFlowWeights(f, sp, dp); err != nil {
			t.Fatal(err)
		}
		g, err := ReadFlow(sp, dp, FlowConfig{}) // checks that the two graphs still agree
		if err != nil {
			t.Fatalf("%s written back: %v", name, err)
		}
		pts := fixtureMatrix(t, name, "points", f.Dim())
		n, _ := pts.Dims()
		a, b := make([]float64, n), make([]float64, n)
		if err := f.LogDensity(pts, a); err != nil {
			t.Fatal(err)
		}
		if err := g.LogDensity(pts, b); err != nil {
			t.Fatal(err)
		}
		if r := relDiff(b, a); r != 0 {
			t.Errorf("%s: the written-back flow's log q differs from the trained one by %.2g", name, r)
		}
		for _, which := range []string{"sample", "density"} {
			orig, _ := os.ReadFile("testdata/flows/" + name + "_" + which + ".onnx")
			back, _ := os.ReadFile(filepath.Join(dir, name+"_"+which+".onnx"))
			if len(orig) != len(back) {
				t.Errorf("%s %s: written back with %d bytes, the original has %d", name, which, len(back), len(orig))
			}
		}
		t.Logf("%s: log-likelihood %.4f → %.4f", name, before, after)
	}
}

// trainedFlowFixtures trains PyTorch-exported flows further in flowebm,
// writes their weights back into dir and lists flowebm's outputs of both
// graphs for exportFixtures' checks (ONNX Runtime, onnx.checker). The MAF
// runs in float32: ONNX Runtime has no float64 Softplus kernel.
func trainedFlowFixtures(t *testing.T, dir string) []fixture {
	var fx []fixture
	for _, name := range []string{"realnvp_f64", "maf_f32", "nvp_f64"} {
		f, _, _ := trainImported(t, name)
		sp, dp := name+"_trained_sample.onnx", name+"_trained_density.onnx"
		if err := WriteFlowWeights(f, filepath.Join(dir, sp), filepath.Join(dir, dp)); err != nil {
			t.Fatal(err)
		}
		tag, ndt := "f64", npy.Float64
		if strings.HasSuffix(name, "f32") {
			tag, ndt = "f32", npy.Float32
		}
		d := f.Dim()
		z, pts := fixtureMatrix(t, name, "z", d), fixtureMatrix(t, name, "points", d)
		n, _ := z.Dims()
		x, lq := mat.NewDense(n, d, nil), make([]float64, n)
		if err := f.Forward(z, x, lq); err != nil {
			t.Fatal(err)
		}
		for i := range lq {
			lq[i] = f.Base.LogProb(z.RawRowView(i)) - lq[i]
		}
		lp, zp, ld := make([]float64, n), mat.NewDense(n, d, nil), make([]float64, n)
		if err := f.LogDensity(pts, lp); err != nil {
			t.Fatal(err)
		}
		if err := f.Inverse(pts, zp, ld); err != nil {
			t.Fatal(err)
		}
		w := func(file string, shape []int, v []float64, dt npy.Dtype) string {
			return writeNpy(t, filepath.Join(dir, name+"_"+file+".npy"), shape, v, dt)
		}
		fx = append(fx,
			fixture{Model: sp, Dtype: tag, Inputs: map[string]string{"z": w("z", []int{n, d}, z.RawMatrix().Data, ndt)},
				Outputs: map[string]string{"x": w("x", []int{n, d}, x.RawMatrix().Data, npy.Float64), "log_density": w("logq_x", []int{n}, lq, npy.Float64)}, WrittenBack: true},
			fixture{Model: dp, Dtype: tag, Inputs: map[string]string{"x": w("points", []int{n, d}, pts.RawMatrix().Data, ndt)},
				Outputs: map[string]string{"log_density": w("logq_points", []int{n}, lp, npy.Float64), "z": w("z_points", []int{n, d}, zp.RawMatrix().Data, npy.Float64)}, WrittenBack: true})
	}
	return fx
}

// Two files that are not one flow, a sampling graph with no log-density, or
// a flow without its inverse where the inverse is needed are refused with
// an error that names the file and what differs.
func TestReadFlowRefusals(t *testing.T) {
	dir := t.TempDir()
	tr, _, _ := trainImported(t, "realnvp_f64")
	if err := WriteFlowWeights(tr, filepath.Join(dir, "s.onnx"), filepath.Join(dir, "d.onnx")); err != nil {
		t.Fatal(err)
	}
	fx := func(name string) string { return "testdata/flows/" + name + ".onnx" }
	for _, c := range []struct {
		name, sample, density string
		cfg                   FlowConfig
		want                  string
	}{
		{"dimensions", fx("realnvp_f64_sample"), fx("nvp_f64_density"), FlowConfig{}, "dimension 3, the density graph's x"},
		{"float types", fx("realnvp_f64_sample"), fx("realnvp_f32_density"), FlowConfig{}, "export both in one float type"},
		{"weights", fx("realnvp_f64_sample"), filepath.Join(dir, "d.onnx"), FlowConfig{}, `weight "flow.couplings.0.s.0.bias" differs from "flow.couplings.0.s.0.bias" in`},
		// Frozen, each file keeps its own tensors (probe 69 A1), and the
		// one-flow check refuses them.
		{"weights, frozen", fx("realnvp_f64_sample"), filepath.Join(dir, "d.onnx"), FlowConfig{Frozen: true}, "are not one flow"},
		{"base", fx("realnvp_f64_sample"), fx("realnvp_f64_density"), FlowConfig{BaseSigma: []float64{2}}, "the base declared is not the one it was exported with"},
		{"base length", fx("realnvp_f64_sample"), fx("realnvp_f64_density"), FlowConfig{BaseSigma: []float64{1, 2}}, "base σ has 2 values, want 1 or 3"},
		{"no log-density", "testdata/torch/tanh_f64.onnx", fx("realnvp_f64_density"), FlowConfig{}, `no output "log_density"`},
		{"no x", fx("realnvp_f64_sample"), fx("realnvp_f64_density"), FlowConfig{SampleX: "y"}, `no graph output named "y"`},
		{"no latent", fx("realnvp_f64_sample"), fx("realnvp_f64_density"), FlowConfig{DensityLatent: "u"}, `no graph output named "u" for z`},
		// Probe 15: the sampling graph given twice read as two flows that disagree.
		{"one graph twice", fx("realnvp_f64_sample"), fx("realnvp_f64_sample"), FlowConfig{}, "hold the same graph: a flow is read from two"},
	} {
		_, err := ReadFlow(c.sample, c.density, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// flowebm's own export has no z output: it samples and gives densities,
	// and refuses the inverse with the reason.
	rng := rand.New(rand.NewPCG(2, 3))
	own, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}, InitScale: 1}, layers.NewIsotropic(2, 1), tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	sb, err1 := FlowSample(own, Options{})
	db, err2 := FlowDensity(own, Options{})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	f, err := DecodeFlow(sb, db, "own_sample.onnx", "own_density.onnx", FlowConfig{})
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(3, 2, []float64{0.1, 0.2, -1, 0.5, 2, -0.3})
	a, b := make([]float64, 3), make([]float64, 3)
	if err := own.LogDensity(x, a); err != nil {
		t.Fatal(err)
	}
	if err := f.LogDensity(x, b); err != nil {
		t.Fatal(err)
	}
	if r := relDiff(b, a); r > 1e-12 {
		t.Errorf("flowebm's exported flow read back: log q differs by %.2g", r)
	}
	if err := f.Inverse(x, mat.NewDense(3, 2, nil), a); err == nil || !strings.Contains(err.Error(), `the density graph has no output "z" = T⁻¹(x)`) {
		t.Errorf("inverse of a flow without z output: %v", err)
	}
}

// No pair of inputs makes DecodeFlow panic, and a flow it accepts samples
// and gives densities without error.
func FuzzDecodeFlow(f *testing.F) {
	for _, name := range []string{"realnvp_f64", "maf_f32"} {
		s, err1 := os.ReadFile("testdata/flows/" + name + "_sample.onnx")
		d, err2 := os.ReadFile("testdata/flows/" + name + "_density.onnx")
		if err1 == nil && err2 == nil {
			f.Add(s, d)
		}
	}
	f.Fuzz(func(t *testing.T, s, d []byte) {
		fl, err := DecodeFlow(s, d, "s.onnx", "d.onnx", FlowConfig{})
		if err != nil {
			return
		}
		x := mat.NewDense(2, fl.Dim(), nil)
		lq := make([]float64, 2)
		_ = fl.Sample(rand.New(rand.NewPCG(1, 2)), x, lq)
		_ = fl.LogDensity(x, lq)
	})
}

// withMetadata appends a metadata_props entry to an encoded model (a later
// entry of a key replaces an earlier one).
func withMetadata(b []byte, key, value string) []byte {
	var e msg
	e.str(1, key)
	e.str(2, value)
	var m msg
	m.bytes(14, e)
	return append(append([]byte(nil), b...), m...)
}

// A flow whose metadata lists no trainable weights is refused for
// training, with the reason, and loads frozen for sampling (round-9 probe:
// a raw Gorgonia error at the first training step).
func TestFlowWithoutWeights(t *testing.T) {
	sb, _ := os.ReadFile("testdata/flows/realnvp2_f64_sample.onnx")
	db, _ := os.ReadFile("testdata/flows/realnvp2_f64_density.onnx")
	sb, db = withMetadata(sb, ParametersKey, "[]"), withMetadata(db, ParametersKey, "[]")
	if _, err := DecodeFlow(sb, db, "s.onnx", "d.onnx", FlowConfig{}); err == nil || !strings.Contains(err.Error(), "no trainable weights") {
		t.Errorf("training a flow without weights: %v", err)
	}
	if _, err := DecodeFlow(sb, db, "s.onnx", "d.onnx", FlowConfig{Frozen: true}); err != nil {
		t.Errorf("sampling with it: %v", err)
	}
}

// NeuTra runs MALA in the latent space of a flow exported from PyTorch
// (the reference RealNVP, whose density graph gives z = T⁻¹(x)) with the
// z-gradient through its sampling graph, and leaves a Gaussian target
// N(μ, diag σ²) invariant: 2000 chains started at exact draws keep its
// means and standard deviations after 30 steps, within 4.5 standard errors
// (means) and 4.5/√(2m) (sd ratio).
func TestImportedFlowDrivesNeuTra(t *testing.T) {
	flow := readFixtureFlow(t, "realnvp_f64", FlowConfig{Frozen: true})
	mu, sigma := []float64{0.5, -1, 1.5}, []float64{1.2, 0.7, 2}
	expr := graph.Expression{D: 3, LogDensity: func(x *G.Node) (*G.Node, error) {
		var sum *G.Node
		for j := range mu {
			col := G.Must(G.Slice(x, nil, G.S(j)))
			d := G.Must(G.Sub(col, G.NewConstant(mu[j])))
			term := G.Must(G.Mul(G.Must(G.Square(d)), G.NewConstant(-0.5/(sigma[j]*sigma[j]))))
			if sum == nil {
				sum = term
			} else {
				sum = G.Must(G.Add(sum, term))
			}
		}
		return sum, nil
	}}
	target, err := graph.NewEBM(expr, nil, tensor.Float64, nil)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := graph.NewLatent(flow, target)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 5))
	const m = 2000
	x := mat.NewDense(m, 3, nil)
	for i := 0; i < m; i++ {
		for j := range mu {
			x.Set(i, j, mu[j]+sigma[j]*rng.NormFloat64())
		}
	}
	s := samplers.NewState(x)
	k := &samplers.NeuTra{Latent: lat, Local: samplers.MALA{StepSize: 0.05, Frozen: true}}
	acc := 0.0
	for step := 0; step < 30; step++ {
		st, err := k.Step(rng, s)
		if err != nil {
			t.Fatal(err)
		}
		acc += st.Local / 30
	}
	if acc < 0.3 {
		t.Fatalf("latent acceptance %.2f too low to exercise the kernel", acc)
	}
	for j := range mu {
		got, sd := stat.MeanStdDev(mat.Col(nil, j, s.X), nil)
		if math.Abs(got-mu[j]) > 4.5*sigma[j]/math.Sqrt(m) {
			t.Errorf("coordinate %d: NeuTra mean %.4f, target %.4f ± %.4f", j, got, mu[j], 4.5*sigma[j]/math.Sqrt(m))
		}
		if math.Abs(sd/sigma[j]-1) > 4.5/math.Sqrt(2*m) {
			t.Errorf("coordinate %d: NeuTra sd %.4f, target %.4f", j, sd, sigma[j])
		}
	}
	t.Logf("NeuTra with the PyTorch RealNVP: latent acceptance %.2f", acc)
}

// Probe 55 A3: a float64 flow whose base term PyTorch traces partly in
// float32 (z.shape[1] * log(2π)) differs between its two graphs by
// 1.6e-7 in log q, and was refused as "not one flow" at float64's
// tolerance; a graph computing values in float32 is checked at
// float32's.
func TestFlowWithAFloat32StepReads(t *testing.T) {
	if _, err := ReadFlow("testdata/pinned/affine_shapeconst_sample.onnx", "testdata/pinned/affine_shapeconst_density.onnx", FlowConfig{}); err != nil {
		t.Errorf("%v", err)
	}
}

// Probe 57 A3: a hand-written RealNVP whose coupling masks are buffers,
// exported by PyTorch with do_constant_folding=False but without the
// metadata that lists its weights, was trained masks and all (a mode
// weight of 0.38 for 0.30 at exit 0). Training it is refused, naming a
// mask; frozen it loads; with its weights listed it trains.
func TestFlowMasksNotTrained(t *testing.T) {
	sb, _ := os.ReadFile("testdata/pinned/nometa_realnvp_sample.onnx")
	db, _ := os.ReadFile("testdata/pinned/nometa_realnvp_density.onnx")
	_, err := DecodeFlow(sb, db, "s.onnx", "d.onnx", FlowConfig{})
	if err == nil || !strings.Contains(err.Error(), `d.onnx: initializer "f.cs.0.mask" holds only 0s and 1s, as a coupling's or a MADE's mask does`) {
		t.Errorf("training a flow with masks and no parameter list: %v", err)
	}
	if _, err := DecodeFlow(sb, db, "s.onnx", "d.onnx", FlowConfig{Frozen: true}); err != nil {
		t.Errorf("frozen: %v", err)
	}
	var weights []string
	for _, c := range []string{"0", "1"} {
		for _, l := range []string{"0", "2"} {
			weights = append(weights, `"f.cs.`+c+`.net.`+l+`.weight"`, `"f.cs.`+c+`.net.`+l+`.bias"`)
		}
	}
	list := "[" + strings.Join(weights, ", ") + "]"
	fl, err := DecodeFlow(withMetadata(sb, ParametersKey, list), withMetadata(db, ParametersKey, list), "s.onnx", "d.onnx", FlowConfig{})
	if err != nil {
		t.Fatalf("with its weights listed: %v", err)
	}
	if n := fl.Params.Count(); n != 2*(2*16+16+16*4+4) {
		t.Errorf("%d trainable values, want the two nets' %d", n, 2*(2*16+16+16*4+4))
	}
}

// Probe 67 A6: a flow's two files given the other way round were refused
// with the one-flow check's numbers, or "no graph output named x", and
// nothing of their order; the refusal says they are swapped. (A pair
// whose outputs are told apart by shape alone, swapped, can be a flow, the
// inverse's, and loads as such: nflows-style files do.)
func TestFlowFilesSwapped(t *testing.T) {
	for _, pair := range [][2]string{
		{"testdata/flows/realnvp2_f64_sample.onnx", "testdata/flows/realnvp2_f64_density.onnx"},
		{"testdata/flows/maf_f64_sample.onnx", "testdata/flows/maf_f64_density.onnx"},
	} {
		if _, err := ReadFlow(pair[0], pair[1], FlowConfig{}); err != nil {
			t.Fatalf("in order: %v", err)
		}
		_, err := ReadFlow(pair[1], pair[0], FlowConfig{})
		if want := "are a flow given the other way round: " + pair[0] + " is its sampling graph"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("swapped: %v; want %q", err, want)
		}
	}
}

// Round 101 A2: a Glow flow whose invertible 1×1 layer is singular (its
// torch.det 0) gives log λ = −Inf in both graphs; the refusal said they
// were not one flow ("the base declared, a weight, or the map differs").
// It says the map is not invertible: a singular layer.
func TestSingularFlowSaid(t *testing.T) {
	f := readFixtureFlow(t, "glowdet_f64", FlowConfig{})
	var w *graph.Param
	for _, p := range f.Params.List() {
		if strings.HasSuffix(p.Name, "layers.0.w") {
			w = p
		}
	}
	if w == nil {
		t.Fatalf("no 1×1 layer among %v", f.Params.Names())
	}
	if err := w.SetFloat64s([]float64{1, 2, 0, 2, 4, 0, 0, 0, 1}); err != nil { // rank 2
		t.Fatal(err)
	}
	dir := t.TempDir()
	err := WriteFlowWeights(f, filepath.Join(dir, "s.onnx"), filepath.Join(dir, "d.onnx")) // checks the flow as ReadFlow does
	if err == nil || !strings.Contains(err.Error(), "both graphs give log λ(x) = -Inf: the map is not invertible there") || strings.Contains(err.Error(), "are not one flow") {
		t.Errorf("singular 1×1 layer: %v", err)
	}
	// Round 102 B1: a scale of 0 in the sampling direction (+Inf both ways;
	// crosscheck/make_glow_det.py's scale0).
	_, err = ReadFlow("testdata/flows/scale0_sample.onnx", "testdata/flows/scale0_density.onnx", FlowConfig{Frozen: true}) // its w of 0s and 1s reads as a mask otherwise
	if err == nil || !strings.Contains(err.Error(), "both graphs give log λ(x) = +Inf: the map is not invertible there") || strings.Contains(err.Error(), "are not one flow") {
		t.Errorf("a scale of 0: %v", err)
	}
}

package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/layers"
)

// convert exports each model kind of a trained run, and refuses what it
// cannot do with the reason.
func TestConvertExportsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	run0 := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--quiet", "--out", run0}, &out, &errb); code != 0 {
		t.Fatalf("train: %s", errb.String())
	}
	for _, what := range []string{"ebm", "energy", "flow-sample", "flow-density"} {
		dst := filepath.Join(dir, what+".onnx")
		errb.Reset()
		if code := run([]string{"convert", "--what", what, "--float32", run0, dst}, &out, &errb); code != 0 {
			t.Fatalf("convert --what %s: %s", what, errb.String())
		}
		b, err := os.ReadFile(dst)
		if err != nil || len(b) < 1000 {
			t.Errorf("%s: %d bytes, %v", what, len(b), err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", filepath.Join(dir, "flow-density.onnx"), filepath.Join(dir, "ck")}, "the graph has 2 outputs (log_density, z)"}, // round 86 A5: z too
		{[]string{"convert", "--base", "0", filepath.Join(dir, "ebm.onnx"), filepath.Join(dir, "ck")}, "--base 0, want σ in [1e-150, 1e150]"},
		{[]string{"convert", run0, filepath.Join(dir, "x.npz")}, "want an output file ending in .onnx"},
		{[]string{"convert", "--what", "grad", run0, filepath.Join(dir, "y.onnx")}, `--what "grad", want ebm, energy, flow-sample or flow-density`},
		{[]string{"convert", "--float32", "--float64", run0, filepath.Join(dir, "z.onnx")}, "--float32 and --float64: give one"},
		{[]string{"convert", filepath.Join(dir, "nothing"), filepath.Join(dir, "w.onnx")}, "spec.json"},
	} {
		errb.Reset()
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	for _, f := range []string{"y.onnx", "z.onnx", "w.onnx"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s written despite the error", f)
		}
	}
}

// PyTorch's export of the paper's toy EBM converts to a checkpoint whose
// network energies equal PyTorch's, and the checkpoint converts back to an
// ONNX file that flowebm reads with the same energies; a SiLU network
// (exported as Sigmoid·x) converts too, its activation recognised from
// its values, with PyTorch's energies.
func TestConvertONNXToCheckpoint(t *testing.T) {
	dir := t.TempDir()
	fx := "../../io/onnx/testdata/torch/toy_f64"
	var out, errb bytes.Buffer
	ck := filepath.Join(dir, "ck")
	if code := run([]string{"convert", "--base", "1.5", fx + ".onnx", ck}, &out, &errb); code != 0 {
		t.Fatalf("convert: %s", errb.String())
	}
	if !strings.Contains(out.String(), "EBM [2 32 64 64 64 1] with leaky_relu(0.05), float64, tilt N(0, 1.5² I)") {
		t.Errorf("convert said %q", out.String())
	}
	m, _, err := checkpoint.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	xa, _ := npy.ReadFile(fx + "_x.npy")
	ea, _ := npy.ReadFile(fx + "_energy.npy")
	n := xa.Shape[0]
	e := make([]float64, n)
	if err := m.EBM.Energy(mat.NewDense(n, 2, xa.Data), e); err != nil {
		t.Fatal(err)
	}
	for i := range e {
		if d := math.Abs(e[i]-ea.Data[i]) / math.Max(1, math.Abs(ea.Data[i])); d > 1e-12 {
			t.Fatalf("energy %d: %v, PyTorch %v", i, e[i], ea.Data[i])
		}
	}
	back := filepath.Join(dir, "back.onnx")
	if code := run([]string{"convert", ck, back}, &out, &errb); code != 0 {
		t.Fatalf("convert back: %s", errb.String())
	}
	errb.Reset()
	out.Reset()
	silu := "../../io/onnx/testdata/torch/silu_f64"
	if code := run([]string{"convert", silu + ".onnx", filepath.Join(dir, "silu")}, &out, &errb); code != 0 {
		t.Fatalf("SiLU network: %s", errb.String())
	}
	if !strings.Contains(out.String(), "with silu") {
		t.Errorf("convert said %q", out.String())
	}
	ms, _, err := checkpoint.Load(filepath.Join(dir, "silu"))
	if err != nil {
		t.Fatal(err)
	}
	xs, _ := npy.ReadFile(silu + "_x.npy")
	es, _ := npy.ReadFile(silu + "_energy.npy")
	e3 := make([]float64, xs.Shape[0])
	if err := ms.EBM.Energy(mat.NewDense(xs.Shape[0], xs.Shape[1], xs.Data), e3); err != nil {
		t.Fatal(err)
	}
	for i := range e3 {
		if d := math.Abs(e3[i]-es.Data[i]) / math.Max(1, math.Abs(es.Data[i])); d > 1e-12 {
			t.Fatalf("SiLU energy %d: %v, PyTorch %v", i, e3[i], es.Data[i])
		}
	}
}

// flowebm reads back every one of its own exports: a float64 EBM export
// (LeakyReLU written with Relu and Neg, for ONNX Runtime) converts back to
// a checkpoint with the same energies, and "energy" evaluates the
// "convert --what energy" export (ReduceSum), giving the checkpoint's
// energies.
func TestOwnExportsReadBack(t *testing.T) {
	dir := t.TempDir()
	run0 := trainedRun(t)
	var out, errb bytes.Buffer
	for _, what := range []string{"ebm", "energy"} {
		f := filepath.Join(dir, what+".onnx")
		if code := run([]string{"convert", "--what", what, "--float64", run0, f}, &out, &errb); code != 0 {
			t.Fatalf("convert --what %s: %s", what, errb.String())
		}
	}
	ck := filepath.Join(dir, "ck")
	if code := run([]string{"convert", filepath.Join(dir, "ebm.onnx"), ck}, &out, &errb); code != 0 {
		t.Fatalf("convert the float64 EBM export back: %s", errb.String())
	}
	pts := filepath.Join(dir, "x.csv")
	os.WriteFile(pts, []byte("0.5,-1\n1.5,2\n-2,0.25\n"), 0o644)
	energies := func(model string) []float64 {
		t.Helper()
		f := filepath.Join(dir, "e.npy")
		os.Remove(f)
		if code := run([]string{"energy", "--model", model, "--points", pts, "--out", f}, &out, &errb); code != 0 {
			t.Fatalf("energy --model %s: %s", model, errb.String())
		}
		a, err := npy.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return a.Data
	}
	whole, fromONNX := energies(run0), energies(filepath.Join(dir, "energy.onnx"))
	for i := range whole {
		if d := math.Abs(whole[i]-fromONNX[i]) / math.Max(1, math.Abs(whole[i])); d > 1e-12 {
			t.Errorf("point %d: checkpoint energy %v, its --what energy export %v", i, whole[i], fromONNX[i])
		}
	}
	net := energies(filepath.Join(dir, "ebm.onnx"))
	m, _, err := checkpoint.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	back := make([]float64, len(net))
	if err := m.EBM.Energy(mat.NewDense(3, 2, []float64{0.5, -1, 1.5, 2, -2, 0.25}), back); err != nil {
		t.Fatal(err)
	}
	for i := range net {
		if d := math.Abs(net[i]-back[i]) / math.Max(1, math.Abs(net[i])); d > 1e-12 {
			t.Errorf("point %d: the export's energy %v, the checkpoint converted back from it %v", i, net[i], back[i])
		}
	}
}

// trainedRun trains flowMC-EBM on two-modes for 2 iterations.
func trainedRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--quiet", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("train: %s", errb.String())
	}
	return dir
}

// energy on PyTorch's export of the toy EBM gives PyTorch's energies and
// gradients (1e-10 relative).
func TestEnergyOnONNXModel(t *testing.T) {
	dir := t.TempDir()
	fx := "../../io/onnx/testdata/torch/toy_f64"
	var out, errb bytes.Buffer
	args := []string{"energy", "--model", fx + ".onnx", "--points", fx + "_x.npy", "--out", filepath.Join(dir, "e.npy"), "--grad", filepath.Join(dir, "g.npy")}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("energy: %s", errb.String())
	}
	for _, c := range []struct{ got, want string }{{"e.npy", "_energy.npy"}, {"g.npy", "_grad.npy"}} {
		got, err := npy.ReadFile(filepath.Join(dir, c.got))
		if err != nil {
			t.Fatal(err)
		}
		want, err := npy.ReadFile(fx + c.want)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want.Data {
			if d := math.Abs(got.Data[i]-w) / math.Max(1, math.Abs(w)); d > 1e-10 {
				t.Fatalf("%s[%d] = %v, PyTorch %v", c.got, i, got.Data[i], w)
			}
		}
	}
	errb.Reset()
	three := filepath.Join(dir, "three.csv")
	os.WriteFile(three, []byte("1,2,3\n"), 0o644)
	if code := run([]string{"energy", "--model", fx + ".onnx", "--points", three}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "points of shape [3] each (3 values), the model "+fx+".onnx takes 2 values a point") {
		t.Errorf("wrong dimension: exit %d, %q", code, errb.String())
	}
}

// sample on an ONNX energy that is 0 everywhere, tilted by N(0, 1.5² I),
// draws from that Gaussian: the pooled variance of 64 chains × 400 draws is
// within 0.45 of 2.25 for MALA, HMC and ULA (about 3.5 standard errors for
// an effective sample size of 600; ULA's own bias at η = 0.05 is
// σ²/(1 − η/(2σ²)) − σ² = 0.025). flowmc and neutra run on a trained run's
// checkpoint, and the chains' shape is what diagnose reads.
func TestSampleCommand(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 1))
	net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{2, 8, 1}, Hidden: layers.Tanh, Layout: layers.Sequential, LastWeightInit: layers.Zeros, LastBiasInit: layers.Zeros}}
	ebm, err := graph.NewEBM(net, nil, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	b, err := onnx.EBM(ebm, onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.onnx")
	if err := onnx.WriteFile(zero, b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"mala", "hmc", "ula"} {
		out := filepath.Join(dir, s+".npy")
		var so, se bytes.Buffer
		args := []string{"sample", "--model", zero, "--base", "1.5", "--sampler", s, "--chains", "64", "--steps", "400", "--warmup", "100", "--step", "0.05", "--out", out}
		if code := run(args, &so, &se); code != 0 {
			t.Fatalf("%s: %s", s, se.String())
		}
		a, err := npy.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a.Shape) != "[64 400 2]" {
			t.Fatalf("%s: shape %v", s, a.Shape)
		}
		v := stat.Variance(a.Data, nil)
		if math.Abs(v-2.25) > 0.45 {
			t.Errorf("%s: variance %.3f, want 2.25 ± 0.45\n%s", s, v, so.String())
		}
		t.Logf("%s: variance %.3f; %s", s, v, strings.ReplaceAll(so.String(), "\n", "; "))
	}
	run0 := filepath.Join(dir, "run")
	var so, se bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--quiet", "--out", run0}, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	for _, s := range []string{"flowmc", "neutra"} {
		so.Reset()
		args := []string{"sample", "--model", run0, "--sampler", s, "--chains", "16", "--steps", "20", "--warmup", "5", "--out", filepath.Join(dir, s+".npy")}
		if code := run(args, &so, &se); code != 0 {
			t.Fatalf("%s: %s", s, se.String())
		}
		if !strings.Contains(so.String(), "16 chains × 20 draws × 2 dims") {
			t.Errorf("%s: %s", s, so.String())
		}
	}
	se.Reset()
	if code := run([]string{"sample", "--model", zero, "--sampler", "neutra", "--out", filepath.Join(dir, "x.npy")}, &so, &se); code != 2 || !strings.Contains(se.String(), "needs a flow") {
		t.Errorf("neutra without a flow: exit %d, %q", code, se.String())
	}
	// flowmc without a flow trains one during the warm-up (adaptive).
	so.Reset()
	if code := run([]string{"sample", "--model", zero, "--base", "1", "--sampler", "flowmc", "--chains", "8", "--steps", "10", "--warmup", "20", "--out", filepath.Join(dir, "a.npy")}, &so, &se); code != 0 ||
		!strings.Contains(so.String(), "no flow given: training a RealNVP (4 blocks of [2, 16, 2]) over N(0, 1² I)") || !strings.Contains(so.String(), "8 chains × 10 draws × 2 dims") {
		t.Errorf("adaptive flowmc: exit %d, %q, %q", code, so.String(), se.String())
	}
	se.Reset()
	if code := run([]string{"sample", "--model", zero, "--base", "1", "--sampler", "flowmc", "--warmup", "0", "--out", filepath.Join(dir, "w0.npy")}, &so, &se); code != 2 || !strings.Contains(se.String(), "--warmup 0: flowmc without a flow trains one during the warm-up") {
		t.Errorf("adaptive flowmc without warm-up: exit %d, %q", code, se.String())
	}
}

// energy evaluates a checkpoint in batches of energyBatch points (all at
// once, 1,000,000 points peaked at 3.6 GB): every point gets its energy
// and gradient, equal to one evaluation of them all up to round-off
// (1e-12 relative: the matrix products' blocking differs with the batch).
func TestEnergyInBatches(t *testing.T) {
	dir := trainedRun(t)
	m, err := modelLoader{}.loadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 2*energyBatch + 5
	rng := rand.New(rand.NewPCG(3, 3))
	x := mat.NewDense(n, 2, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = 2 * rng.NormFloat64()
	}
	e, g := make([]float64, n), mat.NewDense(n, 2, nil)
	if err := energyInBatches(m, x, e, g); err != nil {
		t.Fatal(err)
	}
	e1, g1 := make([]float64, n), mat.NewDense(n, 2, nil)
	if err := m.EnergyGrad(x, e1, g1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if math.Abs(e[i]-e1[i]) > 1e-12*(1+math.Abs(e1[i])) || math.Abs(g.At(i, 1)-g1.At(i, 1)) > 1e-12*(1+math.Abs(g1.At(i, 1))) {
			t.Fatalf("point %d: energy %v vs %v, gradient %v vs %v", i, e[i], e1[i], g.RawRowView(i), g1.RawRowView(i))
		}
	}
}

// A model that overflows (a spec.json activation leaky_relu(-1e308)) gives
// an error and no output, not a file of NaN energies with status 0.
func TestEnergyRefusesNonFiniteResults(t *testing.T) {
	// A model folder (spec.json and weights.npz, as convert writes them)
	// whose slope makes the energy overflow; a run's own checkpoint
	// edited so is refused before (its COMPLETE marker's checksums).
	trained := trainedRun(t)
	dir := filepath.Join(t.TempDir(), "model")
	os.Mkdir(dir, 0o755)
	for _, f := range []string{"spec.json", "weights.npz"} {
		b, _ := os.ReadFile(filepath.Join(trained, "checkpoint", f))
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	spec := filepath.Join(dir, "spec.json")
	b, _ := os.ReadFile(spec)
	os.WriteFile(spec, bytes.Replace(b, []byte(`"activation": "leaky_relu(0.05)"`), []byte(`"activation": "leaky_relu(-1e308)"`), 1), 0o644)
	pts := filepath.Join(t.TempDir(), "p.csv")
	os.WriteFile(pts, []byte("3,-2\n1,1\n"), 0o644)
	out := filepath.Join(t.TempDir(), "e.npy")
	var o, e bytes.Buffer
	if code := run([]string{"energy", "--model", dir, "--points", pts, "--out", out}, &o, &e); code != 2 || !strings.Contains(e.String(), "of point 1 (counting from 1) is") || !strings.Contains(e.String(), "overflow") {
		t.Errorf("exit %d, %q", code, e.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("energies written")
	}
}

// flowebm sample --sampler flowmc, given an ONNX energy it has never seen
// (two modes of weights 1/4 and 3/4 at x₁ = ∓2.5, σ = 0.6, written in
// PyTorch with Python floats in forward) and no flow, trains a RealNVP
// during the warm-up and recovers the weight of the left mode: 0.25
// within 4 standard errors of the chains' mean (the chains are
// independent, so the standard error is the spread of the 32 per-chain
// weights over √32). MALA alone keeps each chain in the mode it started
// in (starts from N(0, 1), about half on each side): its weight is off by
// more than 0.1. The trained flow, written with --flow-out, is read back
// as an ONNX flow: frozen it proposes as well, and with --train-flow it
// trains further; neutra runs on it (its density graph gives z = T⁻¹(x)).
func TestSampleAdaptiveRecoversModeWeights(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	leftWeight := func(path string) (w, se float64) {
		a, err := npy.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m, n := a.Shape[0], a.Shape[1]
		per := make([]float64, m)
		for c := 0; c < m; c++ {
			for s := 0; s < n; s++ {
				if a.Data[(c*n+s)*2] < 0 {
					per[c] += 1 / float64(n)
				}
			}
		}
		mean, sd := stat.MeanStdDev(per, nil)
		return mean, sd / math.Sqrt(float64(m))
	}
	flowArgs := []string{"--flow", filepath.Join(dir, "flow", "flow_sample.onnx"), "--flow-density", filepath.Join(dir, "flow", "flow_density.onnx")}
	modes := filepath.Join(dir, "modes.npy")
	if err := npy.WriteFile(modes, &npy.Array{Shape: []int{2, 2}, Data: []float64{-2.5, 0, 2.5, 0}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		close bool
	}{
		{"adaptive", []string{"--sampler", "flowmc", "--warmup", "200", "--flow-out", filepath.Join(dir, "flow"), "--modes", modes}, true},
		{"mala", []string{"--sampler", "mala", "--warmup", "200"}, false},
		{"onnx flow, frozen", append([]string{"--sampler", "flowmc", "--warmup", "20"}, flowArgs...), true},
		{"onnx flow, trained", append([]string{"--sampler", "flowmc", "--warmup", "50", "--train-flow"}, flowArgs...), true},
	} {
		out := filepath.Join(dir, strings.NewReplacer(" ", "_", ",", "").Replace(c.name)+".npy")
		args := append([]string{"sample", "--model", model, "--chains", "32", "--steps", "200", "--out", out}, c.args...)
		var so, se bytes.Buffer
		if code := run(args, &so, &se); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, se.String())
		}
		w, se1 := leftWeight(out)
		if ok := math.Abs(w-0.25) <= 4*se1; c.close && !ok {
			t.Errorf("%s: left-mode weight %.4f ± %.4f, want 0.25\n%s", c.name, w, se1, so.String())
		}
		if c.name == "adaptive" { // --modes: the weight with its 95% interval, which covers 1/4
			var lo, hi float64
			i := strings.Index(so.String(), "mode 1 at (-2.50, 0.00): ")
			if i < 0 {
				t.Fatalf("no mode weights in %q", so.String())
			}
			if _, err := fmt.Sscanf(so.String()[i:], "mode 1 at (-2.50, 0.00): %f ± %f [%f, %f]", new(float64), new(float64), &lo, &hi); err != nil || !(lo <= 0.25 && 0.25 <= hi) {
				t.Errorf("mode 1's interval [%v, %v] (%v) does not cover 0.25", lo, hi, err)
			}
		}
		if !c.close && !(math.Abs(w-0.25) > 0.1) {
			t.Errorf("%s: left-mode weight %.4f: MALA alone was expected to stay in its starting modes", c.name, w)
		}
		t.Logf("%s: left-mode weight %.4f ± %.4f; %s", c.name, w, se1, strings.ReplaceAll(strings.TrimSpace(so.String()), "\n", "; "))
	}
	// The pair --flow-out wrote has z = T⁻¹(x) (probe 57 A5: NeuTra was
	// refused it).
	var so, se bytes.Buffer
	args := append([]string{"sample", "--model", model, "--sampler", "neutra", "--out", filepath.Join(dir, "n.npy")}, flowArgs...)
	if code := run(args, &so, &se); code != 0 {
		t.Errorf("neutra with the pair --flow-out wrote: exit %d, %q", code, se.String())
	}
}

// sample refuses, before any work, an unknown sampler (even with flags of
// another sampler) and neutra on a flow and a model of different float
// types, which it cannot compose in one graph (round-8 probe: it failed at
// the first warm-up step with graph's internal message).
func TestSampleRefusesBeforeWork(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(4, 4))
	ebm, err := graph.NewEBM(graph.ToyEnergyNet(2, false), nil, tensor.Float32, rng)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}}, layers.NewIsotropic(2, 1), tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	b, err := onnx.EBM(ebm, onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err1 := onnx.FlowSample(flow, onnx.Options{})
	db, err2 := onnx.FlowDensity(flow, onnx.Options{})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for name, data := range map[string][]byte{"e32.onnx": b, "s.onnx": sb, "d.onnx": db} {
		if err := onnx.WriteFile(filepath.Join(dir, name), data); err != nil {
			t.Fatal(err)
		}
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sampler", "bogus", "--particles", "3"}, `--sampler "bogus", want mala, ula, hmc, flowmc or neutra`},
		{[]string{"--sampler", "neutra", "--flow", p("s.onnx"), "--flow-density", p("d.onnx")}, "needs one float type: the flow"},
		{[]string{"--sampler", "mala", "--flow-density", p("d.onnx")}, "--flow-density applies to a flow in ONNX"},
		{[]string{"--sampler", "flowmc", "--flow", p("s.onnx")}, "give its density graph with --flow-density"},
		{[]string{"--sampler", "mala", "--flow-out", p("fo")}, "--flow-out applies to --sampler flowmc"},
		{[]string{"--sampler", "flowmc", "--flow", p("s.onnx"), "--flow-density", p("d.onnx"), "--flow-out", p("fo")}, "flowmc writes the flow it trains, and the flow of"},
	} {
		var so, se bytes.Buffer
		args := append([]string{"sample", "--model", p("e32.onnx"), "--out", p("x.npy")}, c.args...)
		if code := run(args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want a refusal containing %q", c.args, code, se.String(), c.want)
		}
		if exists(p("x.npy")) || exists(p("fo")) {
			t.Fatalf("%v: an output was written", c.args)
		}
	}
}

// fixed3 keeps train's 3-decimal numbers and prints an astronomically
// large one in %g form instead of 300 digits (round-8 probe).
func TestFixed3(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{-2.34567, "-2.346"}, {123456.0, "123456.000"}, {-2.3e300, "-2.3e+300"}, {math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"}} {
		if got := fixed3(c.v); got != c.want {
			t.Errorf("fixed3(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// Probe 19: a symbolic link to RUN/checkpoint was read without the run's
// lock (9 of 1,324 energy --model LINK during training failed); sample
// holds the runs of --model and --flow still while it loads and hashes
// them (2 of 335 samples gave up after 3 changes).
func TestRunOfCheckpointFollowsLinks(t *testing.T) {
	run := trainedRun(t)
	link := filepath.Join(t.TempDir(), "ck")
	if err := os.Symlink(filepath.Join(run, "checkpoint"), link); err != nil {
		t.Fatal(err)
	}
	if got := runOfCheckpoint(link); got != run {
		t.Errorf("runOfCheckpoint(link to %s/checkpoint) = %q, want %q", run, got, run)
	}
}

// Probe 22: a complete checkpoint.new/ that an interrupted replacement left
// beside a sound checkpoint/ was read with the note that checkpoint/ is
// "incomplete or damaged".
func TestNewerCheckpointNoted(t *testing.T) {
	run := trainedRun(t)
	if out, err := exec.Command("cp", "-a", filepath.Join(run, "checkpoint"), filepath.Join(run, "checkpoint.new")).CombinedOutput(); err != nil {
		t.Skip(string(out))
	}
	pts := filepath.Join(t.TempDir(), "p.csv")
	os.WriteFile(pts, []byte("x,y\n0,0\n"), 0o644)
	code, note := energyNotes(t, run, pts) // the note goes to the command's stderr
	if code != 0 || !strings.Contains(note, "a checkpoint replacement was interrupted") || strings.Contains(note, "damaged") {
		t.Errorf("exit %d, %q", code, note)
	}
}

// Probe 32: convert into RUN/checkpoint while the run was setting up (its
// folder holding only the lock another process held) was accepted, and
// the run then deleted the checkpoint without a word.
func TestConvertRefusesFolderAnotherProcessHolds(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	release, err := lockRunAs(run, "train")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ck, in string }{
		{filepath.Join(run, "checkpoint"), filepath.Join(run, "checkpoint")},
		{filepath.Join(run, "checkpoint.new", "ck"), filepath.Join(run, "checkpoint.new")},
	} {
		wantErr(t, "CHECKPOINT "+c.ck+" is in "+c.in+", which the process holding "+run+" writes, and another flowebm process is writing into the folder "+run+" (it holds "+filepath.Join(run, ".lock")+")", "convert", toyONNX, c.ck)
	}
	// Elsewhere in it, nothing that the run writes (probe 44: the same
	// rule as every command's).
	if _, stderr, code := runCLI("convert", toyONNX, filepath.Join(run, "sub", "ck")); code != 0 {
		t.Errorf("convert into run/sub/ck: %s", stderr)
	}
	release()
	if _, stderr, code := runCLI("convert", toyONNX, filepath.Join(run, "ck")); code != 0 {
		t.Errorf("once released: %s", stderr)
	}
}

// Probe 33: a reader that found the run's complete checkpoint.new beside
// checkpoint/ while the run swapped them in said "a checkpoint replacement
// was interrupted", as after a crash.
func TestReaderNotesACheckpointBeingReplaced(t *testing.T) {
	run := trainedRun(t)
	if err := os.CopyFS(filepath.Join(run, "checkpoint.new"), os.DirFS(filepath.Join(run, "checkpoint"))); err != nil {
		t.Fatal(err)
	}
	pts := writeFile(t, t.TempDir(), "p.csv", "x,y\n0,0\n")
	release, err := lockRunAs(run, "train")
	if err != nil {
		t.Fatal(err)
	}
	code, stderr := outputsChild(t, "no point", "INT", "energy", "--model", run, pts) // the note goes to the process's stderr
	release()
	if want := "note: the run is replacing its checkpoint (another process holds " + filepath.Join(run, ".lock") + "): " + filepath.Join(run, "checkpoint.new") + ", the newer, is complete; using it"; code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("held: exit %d, %q; want %q", code, stderr, want)
	}
}

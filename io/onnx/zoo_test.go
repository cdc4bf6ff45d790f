package onnx

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// zooEntry is one fixture of testdata/zoo/manifest.json, written by
// crosscheck/make_zoo.py with PyTorch.
type zooEntry struct {
	Name         string         `json:"name"`
	Family       string         `json:"family"`
	Dtype        string         `json:"dtype"`
	Opset        int            `json:"opset"`
	InputShape   []int          `json:"input_shape"`
	Dynamic      bool           `json:"dynamic_batch"`
	ExportBatch  int            `json:"export_batch"`
	Output       string         `json:"output"`
	Ops          map[string]int `json:"ops"`
	DataDepShape bool           `json:"data_dependent_shape"`
	Source       string         `json:"source"`
	Notes        string         `json:"notes"`
	ExportError  string         `json:"export_error"`
	OutputName   string         `json:"output_name"`
	BatchPinned  bool           `json:"batch_pinned"`
	// IdentityInits lists "alias = Identity(source)": initializers PyTorch
	// merged because their values were equal; IdentityPgrads the aliases
	// whose PyTorch gradients (identity_pgrad_*) add to their source's.
	IdentityInits  []string `json:"identity_initializers"`
	IdentityPgrads []string `json:"identity_pgrads"`
}

func readZoo(t *testing.T) []zooEntry {
	t.Helper()
	b, err := os.ReadFile("testdata/zoo/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var zoo []zooEntry
	if err := json.Unmarshal(b, &zoo); err != nil {
		t.Fatal(err)
	}
	return zoo
}

// zooArrays reads a fixture's x, energy, grad and pgrad_* arrays.
func zooArrays(t *testing.T, name string) (x *mat.Dense, shape []int, arrays map[string][]float64) {
	t.Helper()
	arc, err := npz.ReadFile(filepath.Join("testdata/zoo", name+".npz"))
	if err != nil {
		t.Fatal(err)
	}
	arrays = map[string][]float64{}
	for _, k := range arc.Names {
		a, err := arc.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.TrimSuffix(k, ".npy")
		arrays[key] = a.Data
		if key == "x" {
			shape = a.Shape
		}
	}
	d := 1
	for _, s := range shape[1:] {
		d *= s
	}
	return mat.NewDense(shape[0], d, arrays["x"]), shape, arrays
}

// relInf is ‖a − b‖∞ / ‖b‖∞ (‖a − b‖∞ when b is 0).
func relInf(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range a {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) {
			return math.Inf(1)
		}
	}
	if den == 0 {
		return num
	}
	return num / den
}

// relScaled is ‖a − b‖∞ / max(‖b‖∞, 1e-2·scale): relative to the
// parameter's own gradient unless that is a hundred times smaller than
// the model's largest (scale). Round-off in a gradient scales with the
// terms summed, not with the result: gradients that vanish analytically
// (a bias before InstanceNorm: 1e-17 in float64, 1e-8 in float32) are
// round-off on both sides and only comparable on the model's scale.
func relScaled(a, b []float64, scale float64) float64 {
	num, den := 0.0, 1e-2*scale
	for i := range a {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// The zoo: energy networks and flows written as their authors write them,
// exported by torch.onnx.export with its defaults. Each loads, and its
// outputs, x-gradients and parameter gradients agree with PyTorch's
// autograd: to 1e-10 relative (‖·‖∞) in float64, where only round-off in a
// different order of operations separates the two, and 1e-5 in float32.
// Models that PyTorch exports with data-dependent shapes (boolean-mask
// indexing) are refused with a message that says so.
func TestZoo(t *testing.T) {
	zoo := readZoo(t)
	loaded := 0
	for _, z := range zoo {
		if z.ExportError != "" {
			continue
		}
		t.Run(z.Name, func(t *testing.T) {
			net, err := ReadFileConfig(filepath.Join("testdata/zoo", z.Name+".onnx"), Config{Output: outputOf(z)})
			if z.DataDepShape {
				if err == nil || !strings.Contains(err.Error(), "data-dependent") {
					t.Fatalf("want a refusal naming the data-dependent shape, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			loaded++
			checkZooModel(t, z, net)
		})
	}
	t.Logf("%d of %d fixtures loaded and matched", loaded, len(zoo))
}

func checkZooModel(t *testing.T, z zooEntry, net *Net) {
	x, shape, arrays := zooArrays(t, z.Name)
	tol := 1e-10
	if z.Dtype == "f32" {
		tol = 1e-5
	}
	if want := shape[1:]; fmt.Sprint(net.InputShape()) != fmt.Sprint(want) {
		t.Fatalf("input shape %v, fixture %v", net.InputShape(), want)
	}
	// Through the EBM (the compiled executor flowebm samples with).
	ebm, err := graph.NewEBM(net, nil, net.Dtype, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	n, d := x.Dims()
	e := make([]float64, n)
	g := mat.NewDense(n, d, nil)
	if err := ebm.EnergyGrad(x, e, g); err != nil {
		t.Fatal(err)
	}
	t.Logf("errors %s: energy %.1e x-gradient %.1e", z.Dtype, relInf(e, arrays["energy"]), relInf(g.RawMatrix().Data, arrays["grad"]))
	if r := relInf(e, arrays["energy"]); !(r <= tol) {
		t.Errorf("energy: rel. error %.2e > %.0e\n got  %v\n want %v", r, tol, e, arrays["energy"])
	}
	if r := relInf(g.RawMatrix().Data, arrays["grad"]); !(r <= tol) {
		if why, ok := float32KinkFlips[z.Name]; ok {
			checkKinkFlip(t, net, x, arrays, r, why)
			return
		}
		t.Errorf("x-gradient: rel. error %.2e > %.0e", r, tol)
	}
	// Another batch size (the first two samples): the energies are per
	// sample, so they must be the first two of PyTorch's, also for graphs
	// exported at a fixed batch (run on chunks of it where they are
	// pinned to it: pinned.go).
	e2 := make([]float64, 2)
	if err := ebm.Energy(x.Slice(0, 2, 0, d), e2); err != nil {
		t.Errorf("at batch 2: %v", err)
	} else if r := relInf(e2, arrays["energy"][:2]); !(r <= tol) {
		t.Errorf("at batch 2: energy rel. error %.2e > %.0e", r, tol)
	}
	// Parameter gradients of Σ output against PyTorch's.
	pg := paramGrads(t, net, x)
	want := pytorchParamGrads(z, arrays)
	scale := 0.0 // the model's largest parameter gradient
	for _, v := range want {
		for _, g := range v {
			scale = math.Max(scale, math.Abs(g))
		}
	}
	worst := 0.0
	defer func() { t.Logf("errors %s: parameter gradients %.1e", z.Dtype, worst) }()
	for name, v := range want {
		got, ok := pg[name]
		if !ok {
			t.Errorf("PyTorch parameter %q is not a parameter of the import", name)
			continue
		}
		r := relScaled(got, v, scale)
		worst = math.Max(worst, r)
		if !(r <= tol) {
			t.Errorf("parameter gradient %s: rel. error %.2e > %.0e", name, r, tol)
		}
	}
	t.Logf("%s: %d params, %d parameter gradients compared", z.Name, len(net.ParamSpecs()), len(want))
}

// pytorchParamGrads returns PyTorch's gradient of Σ output for every
// initializer that is a parameter: pgrad_NAME, plus identity_pgrad_ALIAS
// for the aliases PyTorch merged into NAME (the import has one parameter
// for both). Parameters that the exporter partly folded into constants
// (folded_pgrad_*) have no comparable gradient and are left out; the
// finite-difference test checks them.
func pytorchParamGrads(z zooEntry, arrays map[string][]float64) map[string][]float64 {
	want := map[string][]float64{}
	for name, v := range arrays {
		if p, ok := strings.CutPrefix(name, "pgrad_"); ok {
			want[p] = append([]float64(nil), v...)
		}
	}
	source := map[string]string{}
	for _, s := range z.IdentityInits {
		alias, src, ok := strings.Cut(s, " = Identity(")
		if ok {
			source[alias] = strings.TrimSuffix(src, ")")
		}
	}
	for _, alias := range z.IdentityPgrads {
		g, src := arrays["identity_pgrad_"+alias], source[alias]
		if w, ok := want[src]; ok && len(w) == len(g) {
			for i := range w {
				w[i] += g[i]
			}
		}
	}
	return want
}

// float32KinkFlips names the float32 fixtures where a ReLU-type kink has
// a pre-activation within float32 round-off of zero, so that two correct
// float32 computations (PyTorch's and flowebm's, which sum in different
// orders) take different sides and their gradients differ by far more
// than round-off. Measured: in jem_wrn_nonorm_f32, 1 of the 40,960
// pre-activations of layer2.0's second LeakyReLU has opposite signs in
// flowebm's float32 and float64 evaluations; flowebm's float64 evaluation
// of the same float32 file matches PyTorch's float32 gradients to 4.4e-7.
var float32KinkFlips = map[string]string{
	"jem_wrn_nonorm_f32": "a LeakyReLU pre-activation of layer2.0 within float32 round-off of 0",
}

// checkKinkFlip checks a float32 fixture of float32KinkFlips the way
// that isolates the graph from the branch choice: the same file
// evaluated in float64 must give PyTorch's float32 energies and
// gradients to 1e-5 (PyTorch's float32 values are within 1e-6 of the
// float64 truth there).
func checkKinkFlip(t *testing.T, net *Net, x *mat.Dense, arrays map[string][]float64, r float64, why string) {
	t.Logf("float32 x-gradient differs by %.2e: %s; checking the float64 evaluation instead", r, why)
	ebm, err := graph.NewEBM(net, nil, tensor.Float64, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	n, d := x.Dims()
	e, g := make([]float64, n), mat.NewDense(n, d, nil)
	if err := ebm.EnergyGrad(x, e, g); err != nil {
		t.Fatal(err)
	}
	if re, rg := relInf(e, arrays["energy"]), relInf(g.RawMatrix().Data, arrays["grad"]); !(re <= 1e-5 && rg <= 1e-5) {
		t.Errorf("float64 evaluation of the float32 model: energy rel. error %.2e, gradient %.2e > 1e-5", re, rg)
	}
}

// valueBinder binds parameters to the values of their specs, in float64
// or float32.
type valueBinder struct {
	g     *G.ExprGraph
	dtype tensor.Dtype
	specs map[string]layers.ParamSpec
	vals  map[string][]float64
	nodes map[string]*G.Node
}

func newValueBinder(net *Net) *valueBinder {
	b := &valueBinder{g: G.NewGraph(), dtype: net.Dtype, specs: map[string]layers.ParamSpec{}, vals: map[string][]float64{}, nodes: map[string]*G.Node{}}
	for _, s := range net.ParamSpecs() {
		v := make([]float64, s.Size())
		s.Init(nil, 0, v)
		b.specs[s.Name], b.vals[s.Name] = s, v
	}
	return b
}

func (b *valueBinder) Graph() *G.ExprGraph { return b.g }
func (b *valueBinder) Dtype() tensor.Dtype { return b.dtype }
func (b *valueBinder) Param(name string, shape ...int) (*G.Node, error) {
	if n, ok := b.nodes[name]; ok {
		return n, nil
	}
	v, ok := b.vals[name]
	if !ok {
		return nil, fmt.Errorf("no parameter %q", name)
	}
	n := G.NewTensor(b.g, b.dtype, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(typedTensor(b.dtype, shape, v)))
	b.nodes[name] = n
	return n, nil
}

// sumEnergy builds Σ E(x) with the binder's parameter values and returns
// it with the gradients with respect to every parameter, evaluated.
func sumEnergy(t *testing.T, net *Net, b *valueBinder, x *mat.Dense) (float64, map[string][]float64) {
	t.Helper()
	n, d := x.Dims()
	xn := G.NewMatrix(b.g, b.dtype, G.WithShape(n, d), G.WithName("x"), G.WithValue(typedTensor(b.dtype, []int{n, d}, x.RawMatrix().Data)))
	e, err := net.Energy(b, xn)
	if err != nil {
		t.Fatal(err)
	}
	s, err := G.Sum(e)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var wrt G.Nodes
	for name, node := range b.nodes {
		names = append(names, name)
		wrt = append(wrt, node)
	}
	grads, err := G.Grad(s, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(b.g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for i, name := range names {
		out[name] = valueFloats(grads[i].Value())
	}
	return valueFloats(s.Value())[0], out
}

func paramGrads(t *testing.T, net *Net, x *mat.Dense) map[string][]float64 {
	_, g := sumEnergy(t, net, newValueBinder(net), x)
	return g
}

// Parameter gradients of float64 zoo models agree with central finite
// differences (gonum diff/fd) at up to 4 coordinates of every parameter, to
// 1e-5 relative: fd's default step leaves errors near 1e-7 on smooth
// networks. Where a ReLU-type kink lies within a step of some sample the
// differences at two steps disagree; such coordinates are skipped and
// counted (at most a quarter may be).
func TestZooParamGradsFiniteDifferences(t *testing.T) {
	if testing.Short() {
		t.Skip("finite differences of every zoo model")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, z := range readZoo(t) {
		if z.Dtype != "f64" || z.DataDepShape || z.ExportError != "" {
			continue
		}
		t.Run(z.Name, func(t *testing.T) {
			net, err := ReadFileConfig(filepath.Join("testdata/zoo", z.Name+".onnx"), Config{Output: outputOf(z)})
			if err != nil {
				t.Fatal(err)
			}
			x, _, _ := zooArrays(t, z.Name)
			checkParamGradsFD(t, net, x, rng)
		})
	}
}

func outputOf(z zooEntry) string { return z.OutputName }

// checkParamGradsFD checks the parameter gradients of Σ energies at x
// against central finite differences at up to 4 coordinates of every
// parameter (see TestZooParamGradsFiniteDifferences).
func checkParamGradsFD(t *testing.T, net *Net, x *mat.Dense, rng *rand.Rand) {
	t.Helper()
	b := newValueBinder(net)
	_, grads := sumEnergy(t, net, b, x)
	checked, kinks := 0, 0
	defer func() {
		t.Logf("%d coordinates checked, %d skipped at kinks", checked, kinks)
		if kinks > checked/4 {
			t.Errorf("finite differences unstable at %d of %d coordinates", kinks, kinks+checked)
		}
	}()
	for _, s := range net.ParamSpecs() {
		for k := 0; k < min(4, s.Size()); k++ {
			i := rng.IntN(s.Size())
			orig := b.vals[s.Name][i]
			f := func(v []float64) float64 {
				b2 := newValueBinder(net)
				b2.vals[s.Name][i] = v[0]
				e, _ := sumEnergy(t, net, b2, x)
				return e
			}
			// Central differences at two steps: where they
			// disagree, a kink (ReLU-type) lies within a step
			// and finite differences are no reference there.
			want, fine := []float64{0}, []float64{0}
			fd.Gradient(want, f, []float64{orig}, &fd.Settings{Formula: fd.Central})
			fd.Gradient(fine, f, []float64{orig}, &fd.Settings{Formula: fd.Central, Step: 1e-8})
			close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(1, math.Abs(b)) }
			if !close(fine[0], want[0]) {
				kinks++
				continue
			}
			checked++
			if got := grads[s.Name][i]; !close(got, want[0]) {
				t.Errorf("%s[%d]: gradient %v, finite differences %v", s.Name, i, got, want[0])
			}
		}
	}
}

package checkpoint

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
)

func models(t *testing.T, dt tensor.Dtype) Models {
	rng := rand.New(rand.NewPCG(1, 1))
	return buildModels(t, graph.ToyEnergyNet(2, false), layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}, InitScale: 1}, layers.NewIsotropic(2, 1.3), dt, rng)
}

// buildModels is an EBM of net tilted by base and a flow of flowNet on
// base, in dt, their parameters drawn from rng (the EBM's first).
func buildModels(t *testing.T, net graph.EnergyNet, flowNet graph.FlowNet, base layers.Gaussian, dt tensor.Dtype, rng *rand.Rand) Models {
	t.Helper()
	ebm, err := graph.NewEBM(net, &base, dt, rng)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := graph.NewFlow(flowNet, base, dt, rng)
	if err != nil {
		t.Fatal(err)
	}
	return Models{EBM: ebm, Flow: flow}
}

// saveLoad saves m in a new folder and loads it back.
func saveLoad(t *testing.T, m Models) (Models, Spec) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ck")
	if err := Save(dir, m); err != nil {
		t.Fatal(err)
	}
	got, spec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return got, spec
}

// Saving and loading gives models with the same energies and flow densities
// (bit for bit in float64; float32 weights are stored as float32).
func TestSaveLoadRoundTrip(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		m := models(t, dt)
		got, spec := saveLoad(t, m)
		if spec.Dtype != dt.String() || spec.Flow == nil || spec.Flow.Blocks != 2 {
			t.Errorf("spec %+v", spec)
		}
		x := mat.NewDense(5, 2, []float64{0, 0, 1, -1, 2, 0.5, -3, 1, 0.1, 0.2})
		e1, e2 := make([]float64, 5), make([]float64, 5)
		m.EBM.LogDensity(x, e1)
		got.EBM.LogDensity(x, e2)
		l1, l2 := make([]float64, 5), make([]float64, 5)
		m.Flow.LogDensity(x, l1)
		got.Flow.LogDensity(x, l2)
		for i := range e1 {
			if e1[i] != e2[i] || l1[i] != l2[i] {
				t.Errorf("%v row %d: log p %v vs %v, log λ %v vs %v", dt, i, e1[i], e2[i], l1[i], l2[i])
			}
		}
	}
}

func TestLoadErrorsNameFileAndField(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, models(t, tensor.Float64)); err != nil {
		t.Fatal(err)
	}
	spec, _ := os.ReadFile(filepath.Join(dir, "spec.json"))
	cases := map[string]string{
		`"dtype": "float64"`:               `"dtype": "float16"`,
		`"layout": "sequential"`:           `"layout": "dict"`,
		`"format": "flowebm-checkpoint/1"`: `"format": "other/2"`,
		// A missing activation loaded as the identity (energies off by
		// up to 1.3 from the trained model's).
		`"activation": "leaky_relu(0.05)"`: `"activation": null`,
	}
	for from, to := range cases {
		bad := t.TempDir()
		os.WriteFile(filepath.Join(bad, "spec.json"), []byte(strings.Replace(string(spec), from, to, 1)), 0o644)
		b, _ := os.ReadFile(filepath.Join(dir, "weights.npz"))
		os.WriteFile(filepath.Join(bad, "weights.npz"), b, 0o644)
		field := strings.Split(from, `"`)[1]
		if _, _, err := Load(bad); err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s → %s: error %v", from, to, err)
		}
	}
	// A spec whose sizes do not match the weights.
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "spec.json"), []byte(strings.Replace(string(spec), "32,", "33,", 1)), 0o644)
	b, _ := os.ReadFile(filepath.Join(dir, "weights.npz"))
	os.WriteFile(filepath.Join(bad, "weights.npz"), b, 0o644)
	if _, _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "ebm.net.0.weight") {
		t.Errorf("mismatched shapes: error %v", err)
	}
}

// A standardisation is saved and loaded with the models, and Energy is
// E(z) − log ρ(z) + Σ log scale at z = (x − shift)/scale, computed here from
// the EBM directly; without a scaling it is −log p̃(x).
func TestStandardizationAndEnergy(t *testing.T) {
	m := models(t, tensor.Float64)
	x := mat.NewDense(3, 2, []float64{10, -3, 12, 0, 14, -2})
	plain := make([]float64, 3)
	if err := m.Energy(x, plain); err != nil {
		t.Fatal(err)
	}
	logp := make([]float64, 3)
	m.EBM.LogDensity(x, logp)
	for i := range plain {
		if plain[i] != -logp[i] {
			t.Errorf("no scaling, row %d: energy %v, want %v", i, plain[i], -logp[i])
		}
	}

	m.Scaling = &data.Scaling{Shift: []float64{12, -1.5}, Scale: []float64{2, 0.5}}
	got, spec := saveLoad(t, m)
	if spec.Standardization == nil || got.Scaling == nil || got.Scaling.Scale[1] != 0.5 {
		t.Fatalf("standardization not loaded: %+v", spec.Standardization)
	}
	e := make([]float64, 3)
	if err := got.Energy(x, e); err != nil {
		t.Fatal(err)
	}
	z := mat.NewDense(3, 2, nil)
	for i := 0; i < 3; i++ {
		z.Set(i, 0, (x.At(i, 0)-12)/2)
		z.Set(i, 1, (x.At(i, 1)+1.5)/0.5)
	}
	m.EBM.LogDensity(z, logp)
	for i := range e {
		if want := -logp[i] + math.Log(2*0.5); math.Abs(e[i]-want) > 1e-12 {
			t.Errorf("row %d: energy %v, want %v", i, e[i], want)
		}
	}

	m.PointShape = []int{1, 2}
	if got, spec := saveLoad(t, m); !slices.Equal(got.PointShape, []int{1, 2}) || !slices.Equal(spec.PointShape, []int{1, 2}) {
		t.Errorf("point_shape [1 2] saved, loaded %v (spec %v)", got.PointShape, spec.PointShape)
	}
	m.PointShape = []int{3, 2}
	if err := Save(t.TempDir(), m); err == nil || !strings.Contains(err.Error(), "point_shape") {
		t.Errorf("a point shape of 6 values saved for d = 2: %v", err)
	}
	m.PointShape = nil

	spec.Standardization.Scale = []float64{1}
	bad := Models{EBM: m.EBM, Scaling: spec.Standardization}
	if err := Save(t.TempDir(), bad); err == nil || !strings.Contains(err.Error(), "standardization") {
		t.Errorf("a scaling of the wrong length saved: %v", err)
	}
}

// EnergyGrad's gradient in the data's units matches central finite
// differences of Energy (gonum diff/fd), with a standardisation.
func TestEnergyGradFiniteDifferences(t *testing.T) {
	m := models(t, tensor.Float64)
	m.Scaling = &data.Scaling{Shift: []float64{12, -1.5}, Scale: []float64{2, 0.5}}
	pts := [][]float64{{10, -3}, {12.5, 0.2}, {14, -1}}
	for _, p := range pts {
		x := mat.NewDense(1, 2, append([]float64(nil), p...))
		e, g := make([]float64, 1), mat.NewDense(1, 2, nil)
		if err := m.EnergyGrad(x, e, g); err != nil {
			t.Fatal(err)
		}
		f := func(v []float64) float64 {
			out := make([]float64, 1)
			if err := m.Energy(mat.NewDense(1, 2, append([]float64(nil), v...)), out); err != nil {
				t.Fatal(err)
			}
			return out[0]
		}
		want := fd.Gradient(nil, f, p, &fd.Settings{Formula: fd.Central, Step: 1e-6})
		for j := range want {
			if d := math.Abs(g.At(0, j) - want[j]); d > 1e-6*(1+math.Abs(want[j])) {
				t.Errorf("at %v, ∂E/∂x%d = %v, finite differences %v", p, j+1, g.At(0, j), want[j])
			}
		}
	}
}

// A RealNVP trained in PyTorch with the reference module
// (io/onnx/crosscheck/realnvp.py; regenerate with make_torch_flow.py) and
// saved with its save_checkpoint loads here, and T(z), log|det J_T(z)| and
// log λ(x) agree with PyTorch's within 1e-10 relative (float64).
func TestLoadPyTorchFlow(t *testing.T) {
	dir := "testdata/torch_flow"
	m, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) *npy.Array {
		a, err := npy.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	z, x, ld, pts, lq := read("z.npy"), read("x.npy"), read("logdet.npy"), read("points.npy"), read("logq.npy")
	n, d := z.Shape[0], z.Shape[1]
	gotX, gotLD := mat.NewDense(n, d, nil), make([]float64, n)
	if err := m.Flow.Forward(mat.NewDense(n, d, z.Data), gotX, gotLD); err != nil {
		t.Fatal(err)
	}
	gotLQ := make([]float64, n)
	if err := m.Flow.LogDensity(mat.NewDense(n, d, pts.Data), gotLQ); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []float64
	}{{"T(z)", gotX.RawMatrix().Data, x.Data}, {"log|det J|", gotLD, ld.Data}, {"log λ", gotLQ, lq.Data}} {
		for i := range c.want {
			if r := math.Abs(c.got[i]-c.want[i]) / math.Max(1, math.Abs(c.want[i])); r > 1e-10 {
				t.Errorf("%s[%d] = %v, PyTorch %v", c.name, i, c.got[i], c.want[i])
			}
		}
	}
}

// A model folder with a manifest (a training run's checkpoint) is checked
// against it when loaded as a model: energy --model RUN/checkpoint used a
// spec.json edited after the checkpoint was written, which --model RUN
// refused. The sums' hexadecimal case does not matter.
func TestLoadChecksManifest(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, models(t, tensor.Float64)); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(dir); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, ManifestName)
	b, _ := os.ReadFile(marker)
	lines := strings.Split(string(b), "\n")
	for i := 1; i < len(lines); i++ {
		if sum, name, ok := strings.Cut(lines[i], "  "); ok {
			lines[i] = strings.ToUpper(sum) + "  " + name
		}
	}
	os.WriteFile(marker, []byte(strings.Join(lines, "\n")), 0o644)
	if _, _, err := Load(dir); err != nil {
		t.Fatalf("upper-case sums: %v", err)
	}
	// sha256sum -b's "HEX *NAME" lines read too.
	os.WriteFile(marker, []byte(strings.ReplaceAll(strings.Join(lines, "\n"), "  ", " *")), 0o644)
	if _, _, err := Load(dir); err != nil {
		t.Fatalf("sha256sum -b lines: %v", err)
	}
	spec := filepath.Join(dir, "spec.json")
	sb, _ := os.ReadFile(spec)
	os.WriteFile(spec, append(sb, ' '), 0o644)
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "spec.json does not match the SHA-256 that") {
		t.Errorf("edited spec.json: %v", err)
	}
}

// A listed JSON or CSV file of gigabytes is refused by its size before it
// is hashed (probe 17: a 3 GiB sparse spec.json took 6–12 s to hash, and
// only then was it refused as not matching its sum).
func TestManifestRefusesHugeTextBeforeHashing(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, models(t, tensor.Float64)); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(dir); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.json")
	if err := os.Truncate(spec, 3<<30); err != nil { // sparse: no disk used
		t.Skip(err)
	}
	_, _, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "want at most 268435456") || !strings.Contains(err.Error(), "spec.json") {
		t.Errorf("3 GiB spec.json: %v, want it refused by its size", err)
	}
}

// Probe 27: a long spec.json field was quoted cut mid-character.
func TestLongFieldQuotedWhole(t *testing.T) {
	err := checkString("ebm.kind", strings.Repeat("€", maxStringLen))
	if err == nil || !utf8.ValidString(err.Error()) {
		t.Errorf("%q", err)
	}
}

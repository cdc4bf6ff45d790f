package onnx

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"google.golang.org/protobuf/encoding/protowire"
	"gorgonia.org/tensor"
)

// fixture is one exported model with its inputs and flowebm's outputs.
type fixture struct {
	Model   string            `json:"model"`
	Dtype   string            `json:"dtype"`
	Inputs  map[string]string `json:"inputs"`
	Outputs map[string]string `json:"outputs"`
	// WrittenBack marks a PyTorch export with weights written back by
	// flowebm: it keeps PyTorch's IR version and opset.
	WrittenBack bool `json:"-"`
}

func writeNpy(t *testing.T, path string, shape []int, v []float64, dt npy.Dtype) string {
	t.Helper()
	if err := npy.WriteFile(path, &npy.Array{Shape: shape, Data: v}, dt); err != nil {
		t.Fatal(err)
	}
	return filepath.Base(path)
}

// exportFixtures writes, into dir, every exportable model kind in float32
// and float64 with random (non-identity) weights, inputs, flowebm's
// outputs, and manifest.json listing them.
func exportFixtures(t *testing.T, dir string) []fixture {
	t.Helper()
	var fx []fixture
	rng := rand.New(rand.NewPCG(3, 4))
	n, d := 7, 3
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = 2 * rng.NormFloat64()
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tag, ndt := dtypeTag(dt)
		base := layers.NewDiagonal([]float64{1.5, 0.7, 1.1})
		xin := writeNpy(t, filepath.Join(dir, "x_"+tag+".npy"), []int{n, d}, x.RawMatrix().Data, ndt)
		// Round the input to the dtype, so that both sides see the same.
		xa, err := npy.ReadFile(filepath.Join(dir, xin))
		if err != nil {
			t.Fatal(err)
		}
		xd := mat.NewDense(n, d, xa.Data)
		for _, act := range []layers.Activation{layers.LeakyReLU(0.05), layers.ReLU, layers.SiLU, layers.Softplus, layers.Tanh, layers.ELU} {
			net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{d, 16, 8, 1}, Hidden: act, Layout: layers.Sequential}}
			ebm, err := graph.NewEBM(net, &base, dt, rng)
			if err != nil {
				t.Fatal(err)
			}
			for _, full := range []bool{false, true} {
				o := Options{Full: full}
				name := act.Kind + "_" + tag
				if full {
					name += "_full"
					o.Scaling = &data.Scaling{Shift: []float64{1, -2, 0.5}, Scale: []float64{2, 0.5, 1.5}}
				}
				b, err := EBM(ebm, o)
				if err != nil {
					t.Fatal(err)
				}
				if err := WriteFile(filepath.Join(dir, name+".onnx"), b); err != nil {
					t.Fatal(err)
				}
				e := make([]float64, n)
				if full {
					z := o.Scaling.FromData(xd)
					if err := ebm.LogDensity(z, e); err != nil {
						t.Fatal(err)
					}
					for i := range e {
						e[i] = o.Scaling.LogDet() - e[i]
					}
				} else if err := ebm.Energy(xd, e); err != nil {
					t.Fatal(err)
				}
				out := writeNpy(t, filepath.Join(dir, name+"_energy.npy"), []int{n, 1}, e, npy.Float64)
				fx = append(fx, fixture{Model: name + ".onnx", Dtype: tag, Inputs: map[string]string{"x": xin}, Outputs: map[string]string{"energy": out}})
			}
		}
		flow, err := graph.NewFlow(layers.RealNVP{Dim: d, Blocks: 2, BlockDepth: 2, Hidden: []int{8}, InitScale: 1}, base, dt, rng)
		if err != nil {
			t.Fatal(err)
		}
		fx = append(fx, writeFlowFixtures(t, dir, "flow_"+tag, flow, xd, false)...)
	}
	fx = append(fx, trainedFlowFixtures(t, dir)...)
	writeManifest(t, dir, fx)
	return fx
}

// The encoding is well-formed protobuf: every field of the ModelProto
// parses, with IR version 7, opset 13 and one graph.
func TestExportIsWellFormed(t *testing.T) {
	dir := t.TempDir()
	for _, f := range exportFixtures(t, dir) {
		if f.WrittenBack {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f.Model))
		if err != nil {
			t.Fatal(err)
		}
		var ir, opset, graphs int64
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				t.Fatalf("%s: bad tag", f.Model)
			}
			b = b[n:]
			switch {
			case num == 1 && typ == protowire.VarintType:
				v, m := protowire.ConsumeVarint(b)
				ir, n = int64(v), m
			case num == 8 && typ == protowire.BytesType:
				v, m := protowire.ConsumeBytes(b)
				for len(v) > 0 {
					fn, ft, k := protowire.ConsumeTag(v)
					v = v[k:]
					if fn == 2 && ft == protowire.VarintType {
						o, k2 := protowire.ConsumeVarint(v)
						opset, k = int64(o), k2
					} else {
						k = protowire.ConsumeFieldValue(fn, ft, v)
					}
					v = v[k:]
				}
				n = m
			case num == 7:
				graphs++
				n = protowire.ConsumeFieldValue(num, typ, b)
			default:
				n = protowire.ConsumeFieldValue(num, typ, b)
			}
			if n < 0 {
				t.Fatalf("%s: bad field %d", f.Model, num)
			}
			b = b[n:]
		}
		if ir != IRVersion || opset != Opset || graphs != 1 {
			t.Errorf("%s: IR %d, opset %d, %d graphs", f.Model, ir, opset, graphs)
		}
	}
}

// python3-onnx's full checker accepts every export (skipped where Debian's
// python3-onnx is not installed).
func TestExportPassesONNXChecker(t *testing.T) {
	checkWithONNXChecker(t, "onnx.checker on every export", exportFixtures)
}

// ONNX Runtime (onnxruntime-node from npm) runs every export and matches
// flowebm's outputs within 1e-10 relative in float64 and 1e-5 in float32
// (the bounds; measured 4e-16 and 1.2e-7: float32 round-off over a
// few layers, computed in another order on each side). Skipped unless FLOWEBM_ORT (default
// the user cache's flowebm-ort) names a folder holding
// node_modules/onnxruntime-node (.ci/run installs one there).
func TestExportRunsInONNXRuntime(t *testing.T) {
	checkInONNXRuntime(t, "ONNX Runtime runs every export", exportFixtures)
}

// The harness of the export tests: fixtures, manifests, the peer tools
// (python3-onnx's checker, ONNX Runtime) and the round trip of a flow.

// dtypeTag is the fixtures' tag of dt and the .npy type of its inputs.
func dtypeTag(dt tensor.Dtype) (string, npy.Dtype) {
	if dt == tensor.Float32 {
		return "f32", npy.Float32
	}
	return "f64", npy.Float64
}

// writeManifest writes fx as dir's manifest.json, the list that
// crosscheck/ort_check.js and checkWithONNXChecker read.
func writeManifest(t *testing.T, dir string, fx []fixture) {
	t.Helper()
	b, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeFlowFixtures writes f's models, name_sample.onnx and
// name_density.onnx, the input in (rounded to f's dtype) and flowebm's
// outputs at in: x = T(in) and log λ(x) of the sampling graph, log λ(in)
// and, where the density graph outputs it (latent), T⁻¹(in) of the
// density graph.
func writeFlowFixtures(t *testing.T, dir, name string, f *graph.Flow, in *mat.Dense, latent bool) []fixture {
	t.Helper()
	sb, db := exportFlow(t, f)
	if err := WriteFile(filepath.Join(dir, name+"_sample.onnx"), sb); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, name+"_density.onnx"), db); err != nil {
		t.Fatal(err)
	}
	tag, ndt := dtypeTag(f.Params.Dtype())
	n, d := in.Dims()
	w := func(file string, shape []int, v []float64) string {
		return writeNpy(t, filepath.Join(dir, name+"_"+file+".npy"), shape, v, npy.Float64)
	}
	inFile := writeNpy(t, filepath.Join(dir, name+"_in.npy"), []int{n, d}, in.RawMatrix().Data, ndt)
	x, lx := mat.NewDense(n, d, nil), make([]float64, n)
	if err := f.Forward(in, x, lx); err != nil {
		t.Fatal(err)
	}
	for i := range lx {
		lx[i] = f.Base.LogProb(in.RawRowView(i)) - lx[i]
	}
	lq := make([]float64, n)
	if err := f.LogDensity(in, lq); err != nil {
		t.Fatal(err)
	}
	sample := fixture{Model: name + "_sample.onnx", Dtype: tag, Inputs: map[string]string{"z": inFile}, Outputs: map[string]string{
		FlowX:          w("sample_x", []int{n, d}, x.RawMatrix().Data),
		FlowLogDensity: w("sample_logq", []int{n}, lx)}}
	density := fixture{Model: name + "_density.onnx", Dtype: tag, Inputs: map[string]string{"x": inFile}, Outputs: map[string]string{
		FlowLogDensity: w("density_logq", []int{n}, lq)}}
	if latent {
		z, ld := mat.NewDense(n, d, nil), make([]float64, n)
		if err := f.Inverse(in, z, ld); err != nil {
			t.Fatal(err)
		}
		density.Outputs[FlowLatent] = w("density_z", []int{n, d}, z.RawMatrix().Data)
	}
	return []fixture{sample, density}
}

// checkWithONNXChecker runs python3-onnx's full checker on every model of
// the manifest that write writes into a folder (skipped, as what, where
// Debian's python3-onnx is not installed).
func checkWithONNXChecker(t *testing.T, what string, write func(t *testing.T, dir string) []fixture) {
	t.Helper()
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import onnx").Run() != nil {
		cross.Skip(t, what, "python3-onnx not installed for /usr/bin/python3 (apt-get install python3-onnx)")
	}
	dir := t.TempDir()
	fx := write(t, dir)
	script := `
import json, sys, onnx
d = sys.argv[1]
for f in json.load(open(d + "/manifest.json")):
    m = onnx.load(d + "/" + f["model"])
    onnx.checker.check_model(m, full_check=True)
print("ok")
`
	out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("onnx.checker on %d models: %v\n%s", len(fx), err, out)
	}
}

// checkInONNXRuntime runs every model of the manifest that write writes
// into a folder in ONNX Runtime (crosscheck/ort_check.js: flowebm's
// outputs within 1e-10 relative in float64, 1e-5 in float32). Skipped, as
// what, unless FLOWEBM_ORT (default the user cache's flowebm-ort, where
// .ci/run installs it) names a folder holding node_modules/onnxruntime-node
// and node is on PATH.
func checkInONNXRuntime(t *testing.T, what string, write func(t *testing.T, dir string) []fixture) {
	t.Helper()
	ort := os.Getenv("FLOWEBM_ORT")
	if cache, err := os.UserCacheDir(); ort == "" && err == nil {
		if _, err := os.Stat(filepath.Join(cache, "flowebm-ort", "node_modules", "onnxruntime-node")); err == nil {
			ort = filepath.Join(cache, "flowebm-ort")
		}
	}
	if ort == "" {
		cross.Skip(t, what, "FLOWEBM_ORT not set and no ~/.cache/flowebm-ort (a folder where `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0` ran; .ci/run makes one)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		cross.Skip(t, what, "no node on PATH")
	}
	dir := t.TempDir()
	write(t, dir)
	script, err := filepath.Abs("crosscheck/ort_check.js")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, dir)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(ort, "node_modules"))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("ort_check: %v", err)
	}
}

// perturb moves every parameter of p by scale·N(0, 1) drawn from rng
// (rounded to float32 in a float32 model), off its initialisation.
func perturb(p *graph.Params, rng *rand.Rand, scale float64) {
	th := p.Flatten(nil)
	for i := range th {
		th[i] += scale * rng.NormFloat64()
		if p.Dtype() == tensor.Float32 {
			th[i] = float64(float32(th[i]))
		}
	}
	p.SetFlat(th)
}

// exportFlow is f's FlowSample and FlowDensity models.
func exportFlow(t *testing.T, f *graph.Flow) (sample, density []byte) {
	t.Helper()
	sample, err := FlowSample(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if density, err = FlowDensity(f, Options{}); err != nil {
		t.Fatal(err)
	}
	return sample, density
}

// roundTripTol is the round trips' tolerance for a flow in dt: 1e-10
// relative in float64, 1e-4 in float32.
func roundTripTol(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 1e-4
	}
	return 1e-10
}

// decodeExport writes f with FlowSample and FlowDensity and reads the two
// models back with DecodeFlow; label names f in failures.
func decodeExport(t *testing.T, f *graph.Flow, label string) *graph.Flow {
	t.Helper()
	sb, db := exportFlow(t, f)
	g, err := DecodeFlow(sb, db, "sample.onnx", "density.onnx", FlowConfig{})
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	return g
}

// flowValues are what the round trips compare: x = T(z) and
// log|det J_T(z)| (ld), log λ(x) (lq), T⁻¹(x) (zx, with its
// log-determinant zld) and ∇α mean log λ(x) (grad, MLGrad's).
type flowValues struct {
	x, zx             *mat.Dense
	ld, lq, zld, grad []float64
}

// evalFlow is f's flowValues at z and x.
func evalFlow(t *testing.T, f *graph.Flow, z, x *mat.Dense) flowValues {
	t.Helper()
	n, d := z.Dims()
	v := flowValues{x: mat.NewDense(n, d, nil), zx: mat.NewDense(n, d, nil), ld: make([]float64, n), lq: make([]float64, n),
		zld: make([]float64, n), grad: make([]float64, f.Params.Count())}
	if err := f.Forward(z, v.x, v.ld); err != nil {
		t.Fatal(err)
	}
	if err := f.LogDensity(x, v.lq); err != nil {
		t.Fatal(err)
	}
	if err := f.Inverse(x, v.zx, v.zld); err != nil {
		t.Fatal(err)
	}
	if _, err := f.MLGrad(x, v.grad); err != nil {
		t.Fatal(err)
	}
	return v
}

// gradByName is grad, a gradient of g's parameters, in the order of f's
// (the importer orders them its way); it fails where g lacks one of f's
// parameters or has others.
func gradByName(t *testing.T, f, g *graph.Flow, grad []float64, label string) []float64 {
	t.Helper()
	gotBy, off := map[string][]float64{}, 0
	for _, p := range g.Params.List() {
		gotBy[p.Name] = grad[off : off+p.Size()]
		off += p.Size()
	}
	var got []float64
	for _, p := range f.Params.List() {
		gp, ok := gotBy[p.Name]
		if !ok {
			t.Fatalf("%s: parameter %s not imported", label, p.Name)
		}
		got = append(got, gp...)
	}
	if len(gotBy) != len(f.Params.List()) {
		t.Errorf("%s: imported %d parameters, want %d", label, len(gotBy), len(f.Params.List()))
	}
	return got
}

// checkWorst fails for each error of worst above tol (or NaN) and logs
// them all.
func checkWorst(t *testing.T, label string, worst map[string]float64, tol float64) {
	t.Helper()
	for what, e := range worst {
		if e > tol || math.IsNaN(e) {
			t.Errorf("%s: %s differs by %.2e after export and import (tolerance %g)", label, what, e, tol)
		}
	}
	var s []string
	for _, k := range []string{"x = T(z)", "log|det J_T(z)|", "z = T⁻¹(x)", "log λ(x)", "∇α mean log λ"} {
		s = append(s, fmt.Sprintf("%s %.1e", k, worst[k]))
	}
	t.Logf("%s: imported vs flowebm: %s", label, strings.Join(s, ", "))
}

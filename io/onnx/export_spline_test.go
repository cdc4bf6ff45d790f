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
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// splineExportNets are the spline flows the export tests write: defaults
// (K = 8, B = 5, ReLU), a checkerboard with K = 3, B = 3 and tanh, and
// K = 2 (one interior derivative) with a linear conditioner.
var splineExportNets = []layers.SplineFlow{
	{Dim: 3, Blocks: 2, Hidden: []int{8}},
	{Dim: 4, Blocks: 1, Hidden: []int{6, 6}, Mask: layers.MaskCheckerboard, Activation: layers.Tanh, Spline: layers.RQSpline{Bins: 3, TailBound: 3}},
	{Dim: 2, Blocks: 1, Spline: layers.RQSpline{Bins: 2, TailBound: 2}},
}

// splineFlowFor returns a flow of net in dt with its parameters moved by
// 0.15·N(0, 1) away from the identity.
func splineFlowFor(t *testing.T, net layers.SplineFlow, dt tensor.Dtype, seed uint64) *graph.Flow {
	t.Helper()
	base := layers.NewIsotropic(net.Dim, 1.2)
	f, err := graph.NewFlow(net, base, dt, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	v := f.Params.Flatten(nil)
	for i := range v {
		v[i] += 0.15 * rng.NormFloat64()
	}
	f.Params.SetFlat(v)
	return f
}

// splinePoints returns n points of scale 2 with coordinates in both tails
// and on the tail bounds ±b, rounded to dt.
func splineTestPoints(rng *rand.Rand, n, d int, b float64, dt tensor.Dtype) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, 2*rng.NormFloat64())
		}
	}
	for k, v := range []float64{b, -b, 1.5 * b, -2 * b, 0} {
		x.Set(k%n, k%d, v)
	}
	if dt == tensor.Float32 {
		for i, v := range x.RawMatrix().Data {
			x.RawMatrix().Data[i] = float64(float32(v))
		}
	}
	return x
}

func splineRelDiff(a, b []float64) float64 {
	w := 0.0
	for i := range a {
		w = math.Max(w, math.Abs(a[i]-b[i])/math.Max(1, math.Abs(b[i])))
	}
	return w
}

// A spline flow written by FlowSample and FlowDensity reads back with
// DecodeFlow (whose own check runs both graphs against each other) as the
// same flow: samples, log-densities, the inverse and the
// maximum-likelihood gradient through the imported graphs agree with
// flowebm's fused operations to 1e-10 in float64 (1e-4 in float32).
func TestSplineFlowExportImportRoundTrip(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-10
		if dt == tensor.Float32 {
			tol = 1e-4
		}
		for ni, net := range splineExportNets {
			f := splineFlowFor(t, net, dt, uint64(ni+1))
			sb, err := FlowSample(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			db, err := FlowDensity(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := DecodeFlow(sb, db, "sample.onnx", "density.onnx", FlowConfig{})
			if err != nil {
				t.Fatalf("%v %+v: %v", dt, net, err)
			}
			if g.Params.Dtype() != dt || !slicesEqual(g.Base.Sigma, f.Base.Sigma) {
				t.Errorf("%v %+v: imported as %v with base σ %v", dt, net, g.Params.Dtype(), g.Base.Sigma)
			}
			n, d := 12, net.Dim
			rng := rand.New(rand.NewPCG(uint64(ni), 9))
			b := net.Spline.WithDefaults().TailBound
			z, x := splineTestPoints(rng, n, d, b, dt), splineTestPoints(rng, n, d, b, dt)
			worst := map[string]float64{}
			// Forward: x and log|det J|.
			var xs [2]*mat.Dense
			var lds, lqs, zld [2][]float64
			var zs [2]*mat.Dense
			var grads [2][]float64
			for k, fl := range []*graph.Flow{f, g} {
				xs[k], lds[k] = mat.NewDense(n, d, nil), make([]float64, n)
				if err := fl.Forward(z, xs[k], lds[k]); err != nil {
					t.Fatal(err)
				}
				lqs[k] = make([]float64, n)
				if err := fl.LogDensity(x, lqs[k]); err != nil {
					t.Fatal(err)
				}
				zs[k], zld[k] = mat.NewDense(n, d, nil), make([]float64, n)
				if err := fl.Inverse(x, zs[k], zld[k]); err != nil {
					t.Fatal(err)
				}
				grads[k] = make([]float64, fl.Params.Count())
				if _, err := fl.MLGrad(x, grads[k]); err != nil {
					t.Fatal(err)
				}
			}
			worst["x = T(z)"] = splineRelDiff(xs[1].RawMatrix().Data, xs[0].RawMatrix().Data)
			worst["log|det J_T(z)|"] = splineRelDiff(lds[1], lds[0])
			worst["log λ(x)"] = splineRelDiff(lqs[1], lqs[0])
			worst["z = T⁻¹(x)"] = splineRelDiff(zs[1].RawMatrix().Data, zs[0].RawMatrix().Data)
			// The gradient, by parameter name (the importer orders them its way).
			var got, want []float64
			off := 0
			gotBy := map[string][]float64{}
			for _, p := range g.Params.List() {
				gotBy[p.Name] = grads[1][off : off+p.Size()]
				off += p.Size()
			}
			off = 0
			for _, p := range f.Params.List() {
				gp, ok := gotBy[p.Name]
				if !ok {
					t.Fatalf("%v %+v: parameter %s not imported", dt, net, p.Name)
				}
				got, want = append(got, gp...), append(want, grads[0][off:off+p.Size()]...)
				off += p.Size()
			}
			if len(gotBy) != len(f.Params.List()) {
				t.Errorf("%v %+v: imported %d parameters, want %d", dt, net, len(gotBy), len(f.Params.List()))
			}
			num, den := 0.0, 0.0
			for i := range got {
				num = math.Max(num, math.Abs(got[i]-want[i]))
				den = math.Max(den, math.Abs(want[i]))
			}
			worst["∇α mean log λ"] = num / den
			for what, e := range worst {
				if e > tol || math.IsNaN(e) {
					t.Errorf("%v %+v: %s differs by %.2e after export and import (tolerance %g)", dt, net, what, e, tol)
				}
			}
			t.Logf("%v, %d-d, K=%d: imported vs flowebm: %v", dt, d, net.Spline.WithDefaults().Bins, fmtWorst(worst))
		}
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func fmtWorst(m map[string]float64) string {
	var s []string
	for _, k := range []string{"x = T(z)", "log|det J_T(z)|", "z = T⁻¹(x)", "log λ(x)", "∇α mean log λ"} {
		s = append(s, fmt.Sprintf("%s %.1e", k, m[k]))
	}
	return strings.Join(s, ", ")
}

// splineFixture is one model for crosscheck/ort_check.js: the file, its
// dtype tag, its input and expected output .npy files.
type splineFixture struct {
	Model   string            `json:"model"`
	Dtype   string            `json:"dtype"`
	Inputs  map[string]string `json:"inputs"`
	Outputs map[string]string `json:"outputs"`
}

// writeSplineFixtures writes every spline export in both float types with
// inputs (tails and tail bounds included) and flowebm's outputs, and the
// manifest that ort_check.js reads.
func writeSplineFixtures(t *testing.T, dir string) []splineFixture {
	t.Helper()
	var fx []splineFixture
	wr := func(name string, shape []int, v []float64, dt npy.Dtype) string {
		if err := npy.WriteFile(filepath.Join(dir, name), &npy.Array{Shape: shape, Data: v}, dt); err != nil {
			t.Fatal(err)
		}
		return name
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tag, ndt := "f64", npy.Float64
		if dt == tensor.Float32 {
			tag, ndt = "f32", npy.Float32
		}
		for ni, net := range splineExportNets {
			f := splineFlowFor(t, net, dt, uint64(ni+1))
			n, d := 9, net.Dim
			rng := rand.New(rand.NewPCG(uint64(ni), 5))
			pts := splineTestPoints(rng, n, d, net.Spline.WithDefaults().TailBound, dt)
			name := "spline" + string(rune('a'+ni)) + "_" + tag
			in := wr(name+"_in.npy", []int{n, d}, pts.RawMatrix().Data, ndt)
			sb, err := FlowSample(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			db, err := FlowDensity(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(filepath.Join(dir, name+"_sample.onnx"), sb); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(filepath.Join(dir, name+"_density.onnx"), db); err != nil {
				t.Fatal(err)
			}
			x, lq := mat.NewDense(n, d, nil), make([]float64, n)
			if err := f.Forward(pts, x, lq); err != nil {
				t.Fatal(err)
			}
			for i := range lq {
				lq[i] = f.Base.LogProb(pts.RawRowView(i)) - lq[i]
			}
			fx = append(fx, splineFixture{Model: name + "_sample.onnx", Dtype: tag, Inputs: map[string]string{"z": in},
				Outputs: map[string]string{
					FlowX:          wr(name+"_sample_x.npy", []int{n, d}, x.RawMatrix().Data, npy.Float64),
					FlowLogDensity: wr(name+"_sample_logq.npy", []int{n}, lq, npy.Float64),
				}})
			z, ld := mat.NewDense(n, d, nil), make([]float64, n)
			if err := f.Inverse(pts, z, ld); err != nil {
				t.Fatal(err)
			}
			if err := f.LogDensity(pts, lq); err != nil {
				t.Fatal(err)
			}
			fx = append(fx, splineFixture{Model: name + "_density.onnx", Dtype: tag, Inputs: map[string]string{"x": in},
				Outputs: map[string]string{
					FlowLatent:     wr(name+"_density_z.npy", []int{n, d}, z.RawMatrix().Data, npy.Float64),
					FlowLogDensity: wr(name+"_density_logq.npy", []int{n}, lq, npy.Float64),
				}})
		}
	}
	b, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

// ONNX Runtime (onnxruntime-node) runs every spline export, sampling and
// density graphs, float64 and float32, and matches flowebm's outputs
// within crosscheck/ort_check.js's bounds (1e-10 relative in float64,
// 1e-5 in float32). Skipped unless FLOWEBM_ORT (default the user cache's
// flowebm-ort) names a folder holding node_modules/onnxruntime-node.
func TestSplineFlowExportRunsInONNXRuntime(t *testing.T) {
	ort := os.Getenv("FLOWEBM_ORT")
	if cache, err := os.UserCacheDir(); ort == "" && err == nil {
		if _, err := os.Stat(filepath.Join(cache, "flowebm-ort", "node_modules", "onnxruntime-node")); err == nil {
			ort = filepath.Join(cache, "flowebm-ort")
		}
	}
	if ort == "" {
		cross.Skip(t, "ONNX Runtime runs the spline-flow exports", "FLOWEBM_ORT not set and no ~/.cache/flowebm-ort (a folder where `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0` ran)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		cross.Skip(t, "ONNX Runtime runs the spline-flow exports", "no node on PATH")
	}
	dir := t.TempDir()
	writeSplineFixtures(t, dir)
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

// python3-onnx's full checker accepts every spline export (skipped
// without it).
func TestSplineFlowExportPassesONNXChecker(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import onnx").Run() != nil {
		cross.Skip(t, "onnx.checker on the spline-flow exports", "python3-onnx not installed for /usr/bin/python3 (apt-get install python3-onnx)")
	}
	dir := t.TempDir()
	fx := writeSplineFixtures(t, dir)
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

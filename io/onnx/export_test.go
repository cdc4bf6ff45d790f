package onnx

import (
	"encoding/json"
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
		ndt, tag := npy.Float64, "f64"
		if dt == tensor.Float32 {
			ndt, tag = npy.Float32, "f32"
		}
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
		// Density.
		b, err := FlowDensity(flow, Options{})
		if err != nil {
			t.Fatal(err)
		}
		name := "flow_density_" + tag
		if err := WriteFile(filepath.Join(dir, name+".onnx"), b); err != nil {
			t.Fatal(err)
		}
		logq := make([]float64, n)
		if err := flow.LogDensity(xd, logq); err != nil {
			t.Fatal(err)
		}
		fx = append(fx, fixture{Model: name + ".onnx", Dtype: tag, Inputs: map[string]string{"x": xin},
			Outputs: map[string]string{"log_density": writeNpy(t, filepath.Join(dir, name+"_logq.npy"), []int{n}, logq, npy.Float64)}})
		// Sampling direction: z → x, log λ(x).
		b, err = FlowSample(flow, Options{})
		if err != nil {
			t.Fatal(err)
		}
		name = "flow_sample_" + tag
		if err := WriteFile(filepath.Join(dir, name+".onnx"), b); err != nil {
			t.Fatal(err)
		}
		xs := mat.NewDense(n, d, nil)
		if err := flow.Forward(xd, xs, logq); err != nil {
			t.Fatal(err)
		}
		for i := range logq {
			logq[i] = base.LogProb(xd.RawRowView(i)) - logq[i]
		}
		fx = append(fx, fixture{Model: name + ".onnx", Dtype: tag, Inputs: map[string]string{"z": xin},
			Outputs: map[string]string{
				"x":           writeNpy(t, filepath.Join(dir, name+"_x.npy"), []int{n, d}, xs.RawMatrix().Data, npy.Float64),
				"log_density": writeNpy(t, filepath.Join(dir, name+"_logq.npy"), []int{n}, logq, npy.Float64),
			}})
	}
	fx = append(fx, trainedFlowFixtures(t, dir)...)
	b, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
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
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import onnx").Run() != nil {
		cross.Skip(t, "onnx.checker on every export", "python3-onnx not installed for /usr/bin/python3 (apt-get install python3-onnx)")
	}
	dir := t.TempDir()
	fx := exportFixtures(t, dir)
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

// ONNX Runtime (onnxruntime-node from npm) runs every export and matches
// flowebm's outputs within 1e-10 relative in float64 and 1e-5 in float32
// (the bounds; measured 4e-16 and 1.2e-7: float32 round-off over a
// few layers, computed in another order on each side). Skipped unless FLOWEBM_ORT (default
// the user cache's flowebm-ort) names a folder holding
// node_modules/onnxruntime-node (.ci/run installs one there).
func TestExportRunsInONNXRuntime(t *testing.T) {
	ort := os.Getenv("FLOWEBM_ORT")
	if cache, err := os.UserCacheDir(); ort == "" && err == nil {
		// Where .ci/run installs it.
		if _, err := os.Stat(filepath.Join(cache, "flowebm-ort", "node_modules", "onnxruntime-node")); err == nil {
			ort = filepath.Join(cache, "flowebm-ort")
		}
	}
	if ort == "" {
		cross.Skip(t, "ONNX Runtime runs every export", "FLOWEBM_ORT not set and no ~/.cache/flowebm-ort (a folder where `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0` ran; .ci/run makes one)")
	}
	dir := t.TempDir()
	exportFixtures(t, dir)
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

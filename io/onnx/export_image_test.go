package onnx

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// imageTestNets are small image EBMs covering both activations, both
// downsamplings, several channels and non-square images.
func imageTestNets() map[string]layers.ImageEnergy {
	return map[string]layers.ImageEnergy{
		"silu_conv":       {Image: layers.ImageShape{C: 1, H: 8, W: 8}, Channels: []int{4, 6, 6}},
		"leaky_avgpool":   {Image: layers.ImageShape{C: 2, H: 6, W: 7}, Channels: []int{5, 3}, Activation: layers.LeakyReLU(0.2), Downsample: layers.DownAvgPool},
		"silu_two_blocks": {Image: layers.ImageShape{C: 3, H: 5, W: 5}, Channels: []int{4, 4}, Blocks: 2, Name: "net"},
		"leaky_no_blocks": {Image: layers.ImageShape{C: 1, H: 6, W: 6}, Channels: []int{3, 5}, Blocks: -1, Activation: layers.LeakyReLU(0.05)},
	}
}

// imageEBMFor returns an EBM of net with every weight (the zero last layer
// included) moved off its initialisation.
func imageEBMFor(t testing.TB, net layers.ImageEnergy, dt tensor.Dtype, seed uint64) *graph.EBM {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	e, err := graph.NewEBM(net, nil, dt, rng)
	if err != nil {
		t.Fatal(err)
	}
	perturb(e.Params, rng, 0.1)
	return e
}

func imageInputs(seed uint64, n, d int, dt tensor.Dtype) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 11))
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		v := rng.NormFloat64()
		if dt == tensor.Float32 {
			v = float64(float32(v))
		}
		x.RawMatrix().Data[i] = v
	}
	return x
}

// An exported image EBM reads back (Decode) as a graph.EnergyNet with the
// same energies and x-gradients: 1e-12 relative in float64, 1e-5 in
// float32; also with Options.Full (tilt and scaling).
func TestImageEBMExportImportBack(t *testing.T) {
	for name, net := range imageTestNets() {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, full := range []bool{false, true} {
				e := imageEBMFor(t, net, dt, 1)
				d := e.Dim()
				var o Options
				if full {
					sig := make([]float64, d)
					sc := &data.Scaling{Shift: make([]float64, d), Scale: make([]float64, d)}
					for j := range sig {
						sig[j] = 1 + 0.01*float64(j%7)
						sc.Shift[j], sc.Scale[j] = 0.1*float64(j%3), 0.5+0.1*float64(j%5)
					}
					tilt := layers.NewDiagonal(sig)
					e.Tilt = &tilt
					o = Options{Full: true, Scaling: sc}
				}
				b, err := EBM(e, o)
				if err != nil {
					t.Fatal(err)
				}
				imp, err := Decode(b, name+".onnx")
				if err != nil {
					t.Fatalf("%s %v: %v", name, dt, err)
				}
				if imp.Dtype != dt || imp.Dim() != d {
					t.Fatalf("%s: imported dtype %v, dim %d", name, imp.Dtype, imp.Dim())
				}
				back, err := graph.NewEBM(imp, nil, dt, rand.New(rand.NewPCG(1, 1)))
				if err != nil {
					t.Fatal(err)
				}
				n := 5
				x := imageInputs(2, n, d, dt)
				e1, e2 := make([]float64, n), make([]float64, n)
				g1, g2 := mat.NewDense(n, d, nil), mat.NewDense(n, d, nil)
				if full {
					// The whole energy: E(z) − log ρ(z) + Σ log scale, z = (x − shift)/scale.
					z := o.Scaling.FromData(x)
					if err := e.LogDensityGrad(z, e1, g1); err != nil {
						t.Fatal(err)
					}
					for i := range e1 {
						e1[i] = o.Scaling.LogDet() - e1[i]
						for j := 0; j < d; j++ {
							g1.Set(i, j, -g1.At(i, j)/o.Scaling.Scale[j])
						}
					}
				} else if err := e.EnergyGrad(x, e1, g1); err != nil {
					t.Fatal(err)
				}
				if err := back.EnergyGrad(x, e2, g2); err != nil {
					t.Fatal(err)
				}
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 1e-5
				}
				re, rg := graph.RelErrInf(e2, e1), graph.RelErrInf(g2.RawMatrix().Data, g1.RawMatrix().Data)
				t.Logf("%s %v full=%v: imported vs Go energy %.2e, ∇ₓE %.2e", name, dt, full, re, rg)
				if re > tol || rg > tol {
					t.Errorf("%s %v full=%v: energies differ by %.2e, gradients by %.2e (tolerance %g)", name, dt, full, re, rg, tol)
				}
			}
		}
	}
}

// writeImageFixtures writes each test net's export in the given dtypes,
// inputs and flowebm's energies into dir with manifest.json, for
// crosscheck/ort_check.js and onnx.checker.
func writeImageFixtures(t *testing.T, dir string, dts ...tensor.Dtype) []fixture {
	t.Helper()
	var fx []fixture
	for name, net := range imageTestNets() {
		for _, dt := range dts {
			tag, ndt := dtypeTag(dt)
			e := imageEBMFor(t, net, dt, 3)
			n, d := 6, e.Dim()
			x := imageInputs(4, n, d, dt)
			b, err := EBM(e, Options{})
			if err != nil {
				t.Fatal(err)
			}
			model := "image_" + name + "_" + tag
			if err := WriteFile(filepath.Join(dir, model+".onnx"), b); err != nil {
				t.Fatal(err)
			}
			en := make([]float64, n)
			if err := e.Energy(x, en); err != nil {
				t.Fatal(err)
			}
			xin := writeNpy(t, filepath.Join(dir, model+"_x.npy"), []int{n, d}, x.RawMatrix().Data, ndt)
			out := writeNpy(t, filepath.Join(dir, model+"_energy.npy"), []int{n, 1}, en, npy.Float64)
			fx = append(fx, fixture{Model: model + ".onnx", Dtype: tag, Inputs: map[string]string{"x": xin}, Outputs: map[string]string{"energy": out}})
		}
	}
	writeManifest(t, dir, fx)
	return fx
}

// ONNX Runtime (onnxruntime-node) runs every float32 image-EBM export and
// matches flowebm's energies within crosscheck/ort_check.js's bound (1e-5
// relative). Float64 exports are not run: ONNX Runtime 1.30's CPU provider
// has no double kernel for Conv ("Could not find an implementation for
// Conv(11)"); TestImageEBMMatchesPyTorch checks them instead. Skipped unless FLOWEBM_ORT
// (default the user cache's flowebm-ort) names a folder holding
// node_modules/onnxruntime-node.
func TestImageEBMExportRunsInONNXRuntime(t *testing.T) {
	checkInONNXRuntime(t, "ONNX Runtime runs the image-EBM exports", func(t *testing.T, dir string) []fixture {
		return writeImageFixtures(t, dir, tensor.Float32)
	})
}

// python3-onnx's full checker accepts every image-EBM export (skipped
// without it).
func TestImageEBMExportPassesONNXChecker(t *testing.T) {
	checkWithONNXChecker(t, "onnx.checker on the image-EBM exports", func(t *testing.T, dir string) []fixture {
		return writeImageFixtures(t, dir, tensor.Float64, tensor.Float32)
	})
}

// imageTorchModule is the same architecture in PyTorch, as a module whose
// state_dict has flowebm's parameter names (load_state_dict is strict). It
// writes E and ∇ₓ ΣE at the given inputs, and torch.onnx.export's own
// export of the module (opset 13, dynamic batch).
const imageTorchModule = `
import json, sys, torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)
cfg = json.load(open(sys.argv[1]))
C, H, W = cfg["image"]
chans, blocks, down, act, slope = cfg["channels"], cfg["blocks"], cfg["down"], cfg["act"], cfg["slope"]

def actf(x):
    return F.silu(x) if act == "silu" else F.leaky_relu(x, slope)

class Res(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, 1, 1)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1)
    def forward(self, x):
        return x + self.conv2(actf(self.conv1(actf(x))))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(C, chans[0], 3, 1, 1)
        stride = 2 if down == "conv" else 1
        self.down = nn.ModuleList([nn.Conv2d(chans[i - 1], chans[i], 3, stride, 1) for i in range(1, len(chans))])
        self.blocks = nn.ModuleList([Res(c) for c in chans for _ in range(blocks)])
        self.out = nn.Linear(chans[-1], 1)
    def forward(self, x):
        h = self.stem(x.view(-1, C, H, W))
        k = 0
        for i in range(len(chans)):
            if i > 0:
                h = actf(h)
                if down == "avgpool":
                    h = F.avg_pool2d(h, 2)
                h = self.down[i - 1](h)
            for _ in range(blocks):
                h = self.blocks[k](h)
                k += 1
        return self.out(actf(h).mean((2, 3)))

class Prefixed(nn.Module):
    def __init__(self, prefix):
        super().__init__()
        setattr(self, prefix, Net())
        self.prefix = prefix
    def forward(self, x):
        return getattr(self, self.prefix)(x)

net = Prefixed(cfg["name"]) if cfg["name"] else Net()
net.load_state_dict({k: torch.tensor(v["data"]).view(v["shape"]) for k, v in cfg["params"].items()})
x = torch.tensor(cfg["x"]).requires_grad_()
e = net(x)[:, 0]
e.sum().backward()
json.dump({"energy": e.tolist(), "grad": x.grad.flatten().tolist()}, open(sys.argv[2], "w"))
torch.onnx.export(net, x.detach(), sys.argv[3], input_names=["x"], output_names=["energy"],
                  dynamic_axes={"x": {0: "batch"}, "energy": {0: "batch"}}, opset_version=13)
`

// The image EBM equals the same architecture written in PyTorch (1.13
// under /usr/bin/python3) loaded with its weights: energies and
// x-gradients to 1e-12 relative in float64, for flowebm's model, for its
// ONNX export read back, and for PyTorch's own ONNX export of the module
// read back by flowebm. Skipped without torch.
func TestImageEBMMatchesPyTorch(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import torch").Run() != nil {
		cross.Skip(t, "PyTorch cross-check of the image EBM", "no torch under /usr/bin/python3 (apt-get install python3-torch)")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(script, []byte(imageTorchModule), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, net := range imageTestNets() {
		e := imageEBMFor(t, net, tensor.Float64, 5)
		n, d := 4, e.Dim()
		x := imageInputs(6, n, d, tensor.Float64)
		full := net.WithDefaults()
		type param struct {
			Shape []int     `json:"shape"`
			Data  []float64 `json:"data"`
		}
		ps := map[string]param{}
		for _, p := range e.Params.List() {
			ps[p.Name] = param{p.Shape, p.Float64s()}
		}
		rows := make([][]float64, n)
		for i := range rows {
			rows[i] = x.RawRowView(i)
		}
		cfg := map[string]any{"image": []int{full.Image.C, full.Image.H, full.Image.W}, "channels": full.Channels,
			"blocks": max(0, full.Blocks), "down": full.Downsample, "act": full.Activation.Kind, "slope": full.Activation.Slope,
			"name": full.Name, "params": ps, "x": rows}
		in, out, tonnx := filepath.Join(dir, name+"_in.json"), filepath.Join(dir, name+"_out.json"), filepath.Join(dir, name+"_torch.onnx")
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if o, err := exec.Command(py, script, in, out, tonnx).CombinedOutput(); err != nil {
			t.Fatalf("%s: torch reference: %v\n%s", name, err, o)
		}
		var ref struct{ Energy, Grad []float64 }
		if b, err = os.ReadFile(out); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		exported, err := EBM(e, Options{})
		if err != nil {
			t.Fatal(err)
		}
		torchExport, err := os.ReadFile(tonnx)
		if err != nil {
			t.Fatal(err)
		}
		models := []struct {
			what string
			ebm  *graph.EBM
		}{{"flowebm", e}}
		for _, m := range []struct {
			what string
			b    []byte
		}{{"flowebm's ONNX export", exported}, {"PyTorch's ONNX export", torchExport}} {
			imp, err := Decode(m.b, name+".onnx")
			if err != nil {
				t.Fatalf("%s: %s: %v", name, m.what, err)
			}
			back, err := graph.NewEBM(imp, nil, tensor.Float64, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			models = append(models, struct {
				what string
				ebm  *graph.EBM
			}{m.what, back})
		}
		for _, m := range models {
			en, g := make([]float64, n), mat.NewDense(n, d, nil)
			if err := m.ebm.EnergyGrad(x, en, g); err != nil {
				t.Fatalf("%s: %s: %v", name, m.what, err)
			}
			re, rg := graph.RelErrInf(en, ref.Energy), graph.RelErrInf(g.RawMatrix().Data, ref.Grad)
			t.Logf("%-16s %-22s vs PyTorch: E rel. error %.2e, ∇ₓE %.2e", name, m.what, re, rg)
			if re > 1e-12 || rg > 1e-12 {
				t.Errorf("%s: %s vs PyTorch: E rel. error %.2e, ∇ₓE %.2e (tolerance 1e-12)", name, m.what, re, rg)
			}
		}
	}
}

// imageFlowFor returns an image flow with every weight moved off the
// identity.
func imageFlowFor(t testing.TB, net layers.ImageRealNVP, dt tensor.Dtype, seed uint64) *graph.Flow {
	t.Helper()
	net.InitScale = 1
	rng := rand.New(rand.NewPCG(seed, 13))
	f, err := graph.NewFlow(net, layers.NewIsotropic(net.Dimension(), 1.3), dt, rng)
	if err != nil {
		t.Fatal(err)
	}
	perturb(f.Params, rng, 0.1)
	return f
}

var imageFlowTestNets = []layers.ImageRealNVP{
	{Image: layers.ImageShape{C: 1, H: 4, W: 4}, Hidden: 4},
	{Image: layers.ImageShape{C: 2, H: 4, W: 8}, Hidden: 3, Scales: 1, Checkerboard: 1, ChannelWise: 1, ResBlocks: -1, Activation: layers.SiLU},
}

// The exported image flow (sampling and density graphs) reads back with
// DecodeFlow as a graph.Flow with the same T(z), log|det J|, log λ(x),
// T⁻¹(x) and maximum-likelihood gradient: 1e-10 relative in float64,
// 1e-4 in float32.
func TestImageFlowExportImportRoundTrip(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := roundTripTol(dt)
		for ni, net := range imageFlowTestNets {
			f := imageFlowFor(t, net, dt, uint64(ni+1))
			label := fmt.Sprintf("%v %v", dt, net.Image)
			g := decodeExport(t, f, label)
			n, d := 5, net.Dimension()
			z, x := imageInputs(uint64(ni), n, d, dt), imageInputs(uint64(ni+10), n, d, dt)
			want, got := evalFlow(t, f, z, x), evalFlow(t, g, z, x)
			checkWorst(t, label, map[string]float64{
				"x = T(z)":        graph.RelErrInf(got.x.RawMatrix().Data, want.x.RawMatrix().Data),
				"log|det J_T(z)|": graph.RelErrInf(got.ld, want.ld),
				"log λ(x)":        graph.RelErrInf(got.lq, want.lq),
				"z = T⁻¹(x)":      graph.RelErrInf(got.zx.RawMatrix().Data, want.zx.RawMatrix().Data),
				"∇α mean log λ":   graph.RelErrInf(gradByName(t, f, g, got.grad, label), want.grad),
			}, tol)
		}
	}
}

// ONNX Runtime runs the float32 image-flow exports (sampling and density
// graphs) and matches flowebm's outputs to 1e-5 relative; float64 is not
// run (no double Conv kernel in ONNX Runtime's CPU provider). Skipped
// unless FLOWEBM_ORT (default the user cache's flowebm-ort) names a folder
// holding node_modules/onnxruntime-node.
func TestImageFlowExportRunsInONNXRuntime(t *testing.T) {
	checkInONNXRuntime(t, "ONNX Runtime runs the image-flow exports", func(t *testing.T, dir string) []fixture {
		var fx []fixture
		for ni, net := range imageFlowTestNets {
			f := imageFlowFor(t, net, tensor.Float32, uint64(ni+1))
			in := imageInputs(uint64(ni+20), 4, net.Dimension(), tensor.Float32)
			fx = append(fx, writeFlowFixtures(t, dir, "image_flow_"+string(rune('a'+ni)), f, in, true)...)
		}
		writeManifest(t, dir, fx)
		return fx
	})
}

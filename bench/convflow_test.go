package main

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
)

// TestConvFlowNet checks the benched flow's architecture and counts its
// parameters and multiply-adds by hand: couplings on (C', H', W') = (1, 28,
// 28), (4, 14, 14) twice and (16, 7, 7), each with 3×3 convolutions C' → 8,
// 8 → 8 twice (one residual block) and 8 → C' twice.
func TestConvFlowNet(t *testing.T) {
	nvp, err := convFlowNet()
	if err != nil {
		t.Fatal(err)
	}
	want := layers.ImageRealNVP{Image: layers.ImageShape{C: 1, H: 28, W: 28}, Hidden: 8, Checkerboard: 1, ChannelWise: 1}.WithDefaults()
	if !reflect.DeepEqual(nvp, want) {
		t.Errorf("flow %+v, want %+v", nvp, want)
	}
	cs, err := nvp.Couplings()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range cs {
		kinds = append(kinds, fmt.Sprintf("%s/%d", c.Kind, c.Squeeze))
	}
	if got := strings.Join(kinds, " "); got != "checkerboard/0 channel/1 checkerboard/1 channel/2" || cs[0].Dt != 0.5 {
		t.Errorf("couplings %s with dt %g, want checkerboard/0 channel/1 checkerboard/1 channel/2 with dt 1/2", got, cs[0].Dt)
	}
	params := func(c int) int { return (c*8*9 + 8) + 2*(8*8*9+8) + 2*(8*c*9+c) }
	if got, want := nvp.ParamCount(), params(1)+2*params(4)+params(16); got != want || got != 10154 {
		t.Errorf("%d parameters, want %d (10154)", got, want)
	}
	macs := func(c, side int) float64 { return float64(side*side) * 9 * float64(c*8+2*8*8+2*8*c) }
	got, err := convFlowMACs(nvp)
	if err != nil {
		t.Fatal(err)
	}
	if want := macs(1, 28) + 2*macs(4, 14) + macs(16, 7); got != want || got != 2088576 {
		t.Errorf("%g multiply-adds per image, want %g (2088576)", got, want)
	}
}

// TestConvFlowMatchesSettings checks that convFlowNet is the flow of
// mnist28's default flowMC-EBM run (skipped without MNIST's files).
func TestConvFlowMatchesSettings(t *testing.T) {
	if _, err := experiments.MNISTDir(); err != nil {
		t.Skip("MNIST not found: ", err)
	}
	cfg, _, err := settings.Defaults("mnist28", algorithms.FlowMC)
	if err != nil {
		t.Skip("mnist28's defaults: ", err)
	}
	fn, err := cfg.Model.FlowNetFor(28*28, &convFlowImage)
	if err != nil {
		t.Fatal(err)
	}
	nvp, err := convFlowNet()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := fn.(layers.ImageRealNVP); !ok || !reflect.DeepEqual(got.WithDefaults(), nvp) {
		t.Errorf("mnist28's flow %+v, the bench's %+v", fn, nvp)
	}
}

// TestConvFlowParamsRoundTrip writes the perturbed flow's parameters as
// conv_flow.py reads them and reads them back into a fresh flow, in each
// float type: the values must come back exactly, every parameter must
// have moved from its initialisation, and the flows must give the same
// log-densities.
func TestConvFlowParamsRoundTrip(t *testing.T) {
	for _, dtype := range []string{"float32", "float64"} {
		t.Run(dtype, func(t *testing.T) {
			f, nvp, err := newConvFlow(dtype, 1)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := writeConvFlow(dir, f, nvp); err != nil {
				t.Fatal(err)
			}
			dt := graph.Float64
			if dtype == "float32" {
				dt = graph.Float32
			}
			fresh, err := graph.NewFlow(nvp, f.Base, dt, rand.New(rand.NewPCG(1, 0x3d31)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range fresh.Params.List() {
				a, b := p.Float64s(), f.Params.Get(p.Name).Float64s()
				for i := range a {
					if a[i] == b[i] {
						t.Errorf("%s[%d] = %g not perturbed", p.Name, i, a[i])
						break
					}
				}
			}
			if err := readConvFlowParams(dir, fresh.Params); err != nil {
				t.Fatal(err)
			}
			if got, want := fresh.Params.Flatten(nil), f.Params.Flatten(nil); !reflect.DeepEqual(got, want) {
				t.Errorf("parameters read back differ from those written")
			}
			x := mat.NewDense(convFlowBatch, f.Dim(), nil)
			rng := rand.New(rand.NewPCG(9, 10))
			for i := range x.RawMatrix().Data {
				x.RawMatrix().Data[i] = 2*rng.Float64() - 1
			}
			a, b := make([]float64, convFlowBatch), make([]float64, convFlowBatch)
			if err := f.LogDensity(x, a); err != nil {
				t.Fatal(err)
			}
			if err := fresh.LogDensity(x, b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("log-densities differ after the round trip: %v, %v", a[:2], b[:2])
			}
		})
	}
}

// TestConvFlowCrossCheck runs conv_flow.py on the perturbed flow's weights
// in each float type: its samples from the same base draws and its
// log-densities of the same points must agree with flowebm's
// (convFlowSetup fails beyond convFlowTolerance), the couplings must move
// the points, and each side must time one call of each pass (skipped
// without PyTorch).
func TestConvFlowCrossCheck(t *testing.T) {
	skipWithoutTorch(t)
	b := &bench{python: "/usr/bin/python3"}
	for _, dtype := range []string{"float32", "float64"} {
		t.Run(dtype, func(t *testing.T) {
			dir := t.TempDir()
			var st convFlowStats
			f, x, err := b.convFlowSetup(dir, dtype, 1, &st)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Δ x %.2g, Δ log q (sample) %.2g, Δ log q (density) %.2g; move %.2g", st.relX, st.relSampleLogq, st.relDensityLogq, st.move)
			if st.params != 10154 || st.flops != 2*2088576*convFlowBatch {
				t.Errorf("%d parameters, %g FLOPs a pass; want 10154 and %d", st.params, st.flops, 2*2088576*convFlowBatch)
			}
			if !(st.move > 0.1) {
				t.Errorf("the couplings move the base draws by %g: too close to the identity to check anything", st.move)
			}
			py, err := launch(b.python, 1, "conv_flow.py", "--serve", dir, "--threads", "1")
			if err != nil {
				t.Fatal(err)
			}
			defer py.close()
			for name, s := range map[string]side{"flowebm": convFlowRunner(f, x, func() {}), "PyTorch": py.run} {
				for _, task := range []string{"sample", "density", "gemm"} {
					if sec, err := s(task, 1); err != nil || !(sec > 0) {
						t.Errorf("%s %s: %v s, %v", name, task, sec, err)
					}
				}
			}
		})
	}
}

// TestConvFlowReport checks that a run of conv-flow-28 alone reports one
// line per pass and none of the other tables.
func TestConvFlowReport(t *testing.T) {
	st := &convFlowStats{params: 10154, flops: 2 * 2088576 * convFlowBatch, goSample: 0.02, pySample: 0.01, goDensity: 0.03, pyDensity: 0.03,
		relX: 1e-15, relSampleLogq: 2e-15, relDensityLogq: 3e-15}
	r := row{experiment: convFlowExperiment, dtype: "float64", threads: 2, convFlow: st, iterFLOPs: st.flops, goGemm: 100e9, pyGemm: 200e9}
	rep := report([]row{r}, 5)
	for _, want := range []string{
		"| conv-flow-28 | sample | float64 | 2 | 20.00 | 10.00 | 2.00 | 13.37 (13.4%) | 26.73 (13.4%) | 100.0 | 200.0 | 1.0e-15 | 2.0e-15 |",
		"| conv-flow-28 | density | float64 | 2 | 30.00 | 30.00 | 1.00 | 8.91 (8.9%) | 8.91 (4.5%) | 100.0 | 200.0 | – | 3.0e-15 |",
		"10154 parameters", "sampling and log-density of a convolutional RealNVP",
	} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	if strings.Contains(rep, "MALA") || strings.Contains(rep, "∇ₓE") {
		t.Errorf("report has the other experiments' tables:\n%s", rep)
	}
}

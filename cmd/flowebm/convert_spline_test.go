package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
)

// train --config with model.flow "spline" trains a neural spline flow
// (its checkpoint's flow of kind spline), and convert exports that flow's
// two graphs: the density graph also outputs z = T⁻¹(x), and the pair,
// read back as an ONNX flow, has the checkpoint flow's log-density. An
// unknown model.flow is refused before any work.
func TestTrainAndConvertSplineFlow(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(`{"experiment": "two-modes", "seed": 3, "data_size": 512, "grid_size": 40, "rhat_chains": 8, "log_z_samples": 256,
  "model": {"ebm_hidden": [16, 16], "flow": "spline", "flow_blocks": 2, "flow_bins": 6, "flow_tail_bound": 4},
  "train": {"algorithm": "flowmc", "iterations": 3, "batch_size": 16, "persistent": 64, "sampler": {"particles": 8}}}`), 0o644)
	out := filepath.Join(dir, "run")
	var so, se bytes.Buffer
	if code := run([]string{"train", "--config", cfg, "--quiet", "--out", out}, &so, &se); code != 0 {
		t.Fatalf("train: exit %d: %s", code, se.String())
	}
	m, spec, err := checkpoint.Load(filepath.Join(out, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Flow == nil || spec.Flow.Kind != checkpoint.FlowKindSpline || spec.Flow.Bins != 6 || spec.Flow.TailBound != 4 {
		t.Fatalf("checkpoint's flow %+v", spec.Flow)
	}
	if _, ok := m.Flow.Net.(layers.SplineFlow); !ok {
		t.Fatalf("checkpoint's flow is %T", m.Flow.Net)
	}
	sample, density := filepath.Join(dir, "s.onnx"), filepath.Join(dir, "d.onnx")
	for _, c := range []struct{ what, dst string }{{"flow-sample", sample}, {"flow-density", density}} {
		se.Reset()
		if code := run([]string{"convert", "--what", c.what, out, c.dst}, &so, &se); code != 0 {
			t.Fatalf("convert --what %s: exit %d: %s", c.what, code, se.String())
		}
	}
	b, err := os.ReadFile(density)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := onnx.DecodeModel(b)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, o := range dm.Graph.Outputs {
		outs = append(outs, o.Name)
	}
	if strings.Join(outs, ",") != onnx.FlowLogDensity+","+onnx.FlowLatent {
		t.Errorf("density graph outputs %v, want log_density and z", outs)
	}
	back, err := onnx.ReadFlow(sample, density, onnx.FlowConfig{})
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(5, 2, []float64{0, 0, 1.5, 1.5, -1.5, -1.4, 3.9, -2, 6, 0.5})
	want, got := make([]float64, 5), make([]float64, 5)
	if err := m.Flow.LogDensity(x, want); err != nil {
		t.Fatal(err)
	}
	if err := back.LogDensity(x, got); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-10*math.Max(1, math.Abs(want[i])) {
			t.Errorf("row %d: exported log λ %v, checkpoint's %v", i, got[i], want[i])
		}
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"experiment": "two-modes", "model": {"flow": "glow"}, "train": {"iterations": 1}}`), 0o644)
	wantErr(t, `model.flow "glow", want "realnvp" or "spline"`, "train", "--config", bad, "--out", filepath.Join(dir, "r"))
	if exists(filepath.Join(dir, "r", "config.json")) {
		t.Error("a run was started with model.flow glow")
	}
}

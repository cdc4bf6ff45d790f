package training

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/io/onnx"
)

// pretrained is the RealNVP trained in PyTorch on the two-modes data
// (io/onnx/testdata/flows/realnvp2_*, base σ 1.5).
func pretrained() config.FlowFiles {
	return config.FlowFiles{Sample: "../../io/onnx/testdata/flows/realnvp2_f64_sample.onnx", Density: "../../io/onnx/testdata/flows/realnvp2_f64_density.onnx"}
}

// flowMC-EBM starts from a flow trained in PyTorch (model.flow_onnx): the
// run's flow is that flow (base σ 1.5, the EBM's tilt), it is trained
// further, its checkpoint keeps it as ONNX, and a run checkpointed and
// resumed ends bit for bit where the uninterrupted run ends, flow
// included.
func TestRunStartsFromONNXFlow(t *testing.T) {
	cfg := smallConfig(t, algorithms.FlowMC, 6)
	cfg.Model.FlowBlocks = 0
	f := pretrained()
	cfg.Model.FlowONNX = &f
	straight, err := NewRun(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	flow := straight.Trainer.Flow
	if _, ok := flow.Net.(*onnx.FlowNet); !ok || flow.Base.Sigma[0] != 1.5 || straight.Trainer.EBM.Tilt.Sigma[0] != 1.5 {
		t.Fatalf("flow %T with base σ %v, EBM tilt σ %v; want the ONNX flow, 1.5 and 1.5", flow.Net, flow.Base.Sigma, straight.Trainer.EBM.Tilt.Sigma)
	}
	before := flow.Params.Flatten(nil)
	stepN(t, straight, 6)
	moved := false
	for i, v := range flow.Params.Flatten(nil) {
		moved = moved || v != before[i]
	}
	if !moved {
		t.Error("the imported flow was not trained")
	}
	dir := t.TempDir()
	r, err := NewRun(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	stepN(t, r, 3)
	resumed := checkpointAndResume(t, r, dir, 3)
	if _, err := os.Stat(filepath.Join(dir, "checkpoint", "flow_density.onnx")); err != nil {
		t.Errorf("the checkpoint does not keep the flow as ONNX: %v", err)
	}
	stepN(t, resumed, 3)
	sameParams(t, straight, resumed)
	a, b := straight.Trainer.Flow.Params.Flatten(nil), resumed.Trainer.Flow.Params.Flatten(nil)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("flow parameter %d: %v uninterrupted, %v resumed", i, a[i], b[i])
		}
	}
}

// model.flow_onnx is refused with ULA-EBM (no flow), beside the RealNVP's
// settings, and in another dimension or float type than the run's.
func TestONNXFlowRefusals(t *testing.T) {
	f := pretrained()
	cfg := smallConfig(t, algorithms.ULA, 2)
	cfg.Model.FlowBlocks, cfg.Model.FlowONNX = 0, &f
	wantRefused(t, cfg, "which has no flow")
	cfg = smallConfig(t, algorithms.FlowMC, 2)
	cfg.Model.FlowONNX = &f
	wantRefused(t, cfg, "model.flow_blocks and model.flow_onnx")
	cfg.Model.FlowBlocks = 0
	cfg.Model.Float32 = true
	wantRefused(t, cfg, "model.flow_onnx", "float32")
	g := config.FlowFiles{Sample: strings.ReplaceAll(f.Sample, "realnvp2", "realnvp"), Density: strings.ReplaceAll(f.Density, "realnvp2", "realnvp")}
	cfg.Model.Float32, cfg.Model.FlowONNX = false, &g
	wantRefused(t, cfg, "model.flow_onnx", "dimension 3")
}

// The last evaluation's sampler weights (the R-hat chains' zone weights
// with their errors) survive a checkpoint and a resume, so that a resumed
// run writes the metrics.json of an uninterrupted one; each weight's 95%
// interval surrounds it.
func TestChainWeightsSurviveResume(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 4, dir)
	stepN(t, r, 4)
	last := r.Evals[len(r.Evals)-1]
	if len(last.ChainWeights) != 2 {
		t.Fatalf("chain weights %v, want 2 modes", last.ChainWeights)
	}
	for _, w := range last.ChainWeights {
		if !(w.Lo <= w.Weight && w.Weight <= w.Hi && w.MCSE > 0) {
			t.Errorf("weight %+v: want lo ≤ weight ≤ hi and MCSE > 0", w)
		}
	}
	resumed := checkpointAndResume(t, r, dir, 4)
	got := resumed.Evals[len(resumed.Evals)-1].ChainWeights
	if fmt.Sprint(got) != fmt.Sprint(last.ChainWeights) {
		t.Errorf("after resume %v, before %v", got, last.ChainWeights)
	}
}

// The negatives' weights carry Monte Carlo errors from the iterations
// pooled since the previous evaluation (12 here), and a checkpoint in the
// middle of the pooled iterations (at 6) resumes to the same intervals;
// the last evaluation's intervals survive a checkpoint too.
func TestNegativeIntervalsSurviveResume(t *testing.T) {
	steps := func(r *Run, n int) {
		for i := 0; i < n; i++ {
			if _, err := r.Step(); err != nil {
				t.Fatal(err)
			}
		}
	}
	straight := smallRun(t, algorithms.FlowMC, 16, t.TempDir())
	steps(straight, 12)
	want, err := straight.Evaluate(algorithms.IterStats{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.NegIntervals) != 2 {
		t.Fatalf("negative intervals %v, want 2 modes", want.NegIntervals)
	}
	for k, w := range want.NegIntervals {
		if !(w.Lo <= w.Weight && w.Weight <= w.Hi && w.MCSE > 0 && w.ESS > 0) || w.Weight != want.NegWeights[k] {
			t.Errorf("mode %d: %+v, want lo ≤ weight = %v ≤ hi, MCSE and ESS > 0", k+1, w, want.NegWeights[k])
		}
	}
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 16, dir)
	steps(r, 6)
	resumed := checkpointAndResume(t, r, dir, 6)
	steps(resumed, 6)
	got, err := resumed.Evaluate(algorithms.IterStats{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.NegIntervals) != fmt.Sprint(want.NegIntervals) {
		t.Errorf("resumed mid-window: %v, uninterrupted %v", got.NegIntervals, want.NegIntervals)
	}
	again := checkpointAndResume(t, resumed, dir, 12)
	if last := again.Evals[len(again.Evals)-1].NegIntervals; fmt.Sprint(last) != fmt.Sprint(want.NegIntervals) {
		t.Errorf("after a checkpoint at the evaluation: %v, want %v", last, want.NegIntervals)
	}
}

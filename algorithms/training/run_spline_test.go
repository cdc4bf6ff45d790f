package training

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
)

// splineRun is smallConfig's two-modes run with model.flow "spline".
func splineRun(t *testing.T, alg algorithms.Algorithm, iters int, dir string) *Run {
	t.Helper()
	cfg := smallConfig(t, alg, iters)
	cfg.Model.Flow = config.FlowSpline
	cfg.Model.FlowBins = 6
	r, err := NewRun(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkpointAfter steps first n times (each evaluated), checkpoints it in
// its folder dir and returns the checkpoint's spec as Load reads it back.
func checkpointAfter(t *testing.T, first *Run, dir string, n int) checkpoint.Spec {
	t.Helper()
	stepN(t, first, n)
	if err := first.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	_, spec, err := checkpoint.Load(filepath.Join(dir, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// mustResume resumes the run checkpointed in dir.
func mustResume(t *testing.T, dir string) *Run {
	t.Helper()
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	return resumed
}

// wantResumedLikeStraight wants a resumed run to end bit for bit where the
// uninterrupted run straight ends: parameters of both models, the
// averaged EBM and the persistent bank.
func wantResumedLikeStraight(t *testing.T, straight, resumed *Run) {
	t.Helper()
	for _, c := range []struct {
		name string
		a, b []float64
	}{
		{"EBM", straight.Trainer.EBM.Params.Flatten(nil), resumed.Trainer.EBM.Params.Flatten(nil)},
		{"flow", straight.Trainer.Flow.Params.Flatten(nil), resumed.Trainer.Flow.Params.Flatten(nil)},
		{"averaged EBM", averaged(t, straight), averaged(t, resumed)},
	} {
		if !slices.Equal(c.a, c.b) {
			t.Errorf("%s parameters differ after resume", c.name)
		}
	}
	if !mat.Equal(straight.Trainer.Bank, resumed.Trainer.Bank) {
		t.Error("persistent bank differs after resume")
	}
}

// With model.flow "spline" a run trains a neural spline flow (6 bins on
// the default [−5, 5]), checkpoints it (spec.json's flow of kind spline)
// and, resumed, ends bit for bit where an uninterrupted run ends:
// parameters of both models, bank, last evaluation. flowMC-EBM samples
// from the flow; NT-EBM runs its chains through the flow's inverse.
func TestSplineFlowRunResumes(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{algorithms.FlowMC, algorithms.NT} {
		t.Run(string(alg), func(t *testing.T) {
			straight := splineRun(t, alg, 8, t.TempDir())
			sf, ok := straight.Trainer.Flow.Net.(layers.SplineFlow)
			if !ok || sf.Spline.Bins != 6 || sf.Spline.TailBound != 5 || sf.Blocks != 2 {
				t.Fatalf("the run's flow is %T %+v, want a spline flow of 2 blocks, 6 bins on [−5, 5]", straight.Trainer.Flow.Net, straight.Trainer.Flow.Net)
			}
			init := straight.Trainer.Flow.Params.Flatten(nil)
			stepN(t, straight, 8)
			trained := straight.Trainer.Flow.Params.Flatten(nil)
			if slices.Equal(init, trained) {
				t.Error("the spline flow did not train")
			}

			dir := t.TempDir()
			spec := checkpointAfter(t, splineRun(t, alg, 8, dir), dir, 3)
			if spec.Flow == nil || spec.Flow.Kind != checkpoint.FlowKindSpline || spec.Flow.Bins != 6 || spec.Flow.TailBound != 5 {
				t.Errorf("checkpoint's flow spec %+v", spec.Flow)
			}
			b, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil || !strings.Contains(string(b), `"flow": "spline"`) || !strings.Contains(string(b), `"flow_bins": 6`) {
				t.Errorf("config.json %s, %v", b, err)
			}
			resumed := mustResume(t, dir)
			if _, ok := resumed.Trainer.Flow.Net.(layers.SplineFlow); !ok || resumed.Trainer.Iter != 3 {
				t.Fatalf("resumed at iteration %d with a flow %T", resumed.Trainer.Iter, resumed.Trainer.Flow.Net)
			}
			stepN(t, resumed, 5)
			wantResumedLikeStraight(t, straight, resumed)
			ea, eb := straight.Evals[7], resumed.Evals[7]
			if ea.Stats.Loss != eb.Stats.Loss || ea.Stats.StepSize != eb.Stats.StepSize {
				t.Errorf("last evaluation differs: %+v vs %+v", ea.Stats, eb.Stats)
			}
		})
	}
}

// A run without model.flow builds the same RealNVP as before the spline
// flow: the layers.RealNVP value newModels built before (so its
// parameters are drawn the same way from the same stream).
func TestSplineAbsentKeepsRealNVP(t *testing.T) {
	cfg := smallConfig(t, algorithms.FlowMC, 2)
	d := 2
	x := mat.NewDense(4, d, []float64{0, 0, 1, 1, -1, 2, 3, -1})
	models, err := newModels(cfg, d, x)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Model.WithDefaults()
	want := layers.RealNVP{Dim: d, Blocks: m.FlowBlocks, Hidden: m.FlowHidden, Init: m.FlowInit, Mask: m.FlowMask}
	if !reflect.DeepEqual(models.Flow.Net, want) {
		t.Errorf("flow %#v, want %#v", models.Flow.Net, want)
	}
}

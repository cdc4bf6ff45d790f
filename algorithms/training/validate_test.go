package training

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/settings"
)

// smallConfig is smallRun's configuration.
func smallConfig(t *testing.T, alg algorithms.Algorithm, iters int) config.Run {
	t.Helper()
	cfg, _, err := settings.Defaults("two-modes", alg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 5
	cfg.DataSize = 512
	cfg.GridSize = 40
	cfg.Train.Iterations = iters
	cfg.Train.BatchSize, cfg.Train.Persistent = 16, 64
	cfg.Train.Sampler.Particles = 8
	cfg.Model.EBMHidden = []int{16, 16}
	cfg.Model.FlowBlocks = 2
	return cfg
}

// wantRefused builds a run of cfg and wants an error naming every one of
// want (no panic, no run folder content).
func wantRefused(t *testing.T, cfg config.Run, want ...string) {
	t.Helper()
	dir := t.TempDir()
	r, err := NewRun(cfg, dir)
	if err == nil {
		t.Fatalf("NewRun accepted the configuration (%+v), want an error naming %q", r.Config, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("NewRun: %v, want it to name %q", err, w)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("a refused run left %d files in its folder", len(ents))
	}
}

func TestGridSizeIsBounded(t *testing.T) {
	for _, n := range []int{10_000_000, config.MaxGridSize + 1, 1, -5} {
		cfg := smallConfig(t, algorithms.FlowMC, 4)
		cfg.GridSize = n
		wantRefused(t, cfg, "grid_size", fmt.Sprintf("2..%d", config.MaxGridSize))
	}
	for _, n := range []int{2, config.MaxGridSize} {
		cfg := smallConfig(t, algorithms.FlowMC, 4)
		cfg.GridSize = n
		if err := cfg.Validate(); err != nil {
			t.Errorf("grid_size %d: %v", n, err)
		}
	}
}

// Configurations whose buffers cannot fit are refused with the estimate,
// naming the field, before anything is allocated (these would abort the
// test binary out of memory otherwise).
func TestMemoryEstimateRefusesHugeBuffers(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*config.Run)
	}{
		{"persistent", func(c *config.Run) { c.Train.Persistent = 1e11 }},
		{"sampler.particles", func(c *config.Run) { c.Train.Sampler.Particles = 1e9 }},
		{"log_z_samples", func(c *config.Run) { c.LogZSamples = 1e12 }},
		{"data_size", func(c *config.Run) { c.DataSize = 1e12 }},
		{"batch_size", func(c *config.Run) { c.Train.BatchSize, c.Train.Persistent = 1e11, 1e11 }},
		{"rhat_chains", func(c *config.Run) { c.RHatChains, c.RHatSteps, c.Train.Persistent = 1e7, config.MaxRHatSteps, 1e7 }},
		{"sampler.steps", func(c *config.Run) {
			c.Train.Sampler.Negatives, c.Train.Sampler.Steps, c.Train.BatchSize, c.Train.Persistent = "all", algorithms.MaxChainSteps, 2e4, 2e4
		}},
		{"model.ebm_hidden", func(c *config.Run) { c.Model.EBMHidden = []int{1e6, 1e6} }},
	} {
		t.Run(c.field, func(t *testing.T) {
			cfg := smallConfig(t, algorithms.FlowMC, 4)
			c.set(&cfg)
			wantRefused(t, cfg, c.field, "memory", "GiB")
		})
	}
	// Counts beyond any useful value are refused before the estimate.
	cfg := smallConfig(t, algorithms.FlowMC, 4)
	cfg.Train.Sampler.Steps = 1e10
	wantRefused(t, cfg, "train.sampler fields steps 10000000000", "want at most 1000000")
	// The trainer alone checks too.
	cfg = smallConfig(t, algorithms.FlowMC, 4)
	r, err := NewRun(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc := *r.Trainer.Config
	tc.Persistent = 1e11
	if _, err := algorithms.NewTrainer(&tc, r.Trainer.EBM, r.Trainer.Flow, r.Trainer.Data(), algorithms.NewStreams(1)); err == nil || !strings.Contains(err.Error(), "persistent") {
		t.Errorf("NewTrainer with persistent 1e11: %v, want the memory estimate naming persistent", err)
	}
}

func TestInvalidValuesAreRefused(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*config.Run)
	}{
		{"sampler.step_size", func(c *config.Run) { c.Train.Sampler.StepSize = -0.1 }},
		{"sampler.step_size", func(c *config.Run) { c.Train.Sampler.StepSize = math.NaN() }},
		{"sampler.step_size", func(c *config.Run) { c.Train.Sampler.StepSize = math.Inf(1) }},
		{"ebm_optim.decay", func(c *config.Run) { c.Train.EBMOptim.Decay, c.Train.EBMOptim.DecayEvery = -0.5, 10 }},
		{"flow_optim.decay", func(c *config.Run) { c.Train.FlowOptim.Decay, c.Train.FlowOptim.DecayEvery = 1.5, 10 }},
		{"ebm_optim.decay_every", func(c *config.Run) { c.Train.EBMOptim.Decay, c.Train.EBMOptim.DecayEvery = 0.99, -1 }},
		{"ebm_optim.decay_every", func(c *config.Run) { c.Train.EBMOptim.Decay, c.Train.EBMOptim.DecayEvery = 0.99, 0 }},
		{"eval_every", func(c *config.Run) { c.EvalEvery = -1 }},
		{"checkpoint_every", func(c *config.Run) { c.CheckpointEvery = -3 }},
		{"rhat_every", func(c *config.Run) { c.RHatEvery = -3 }},
		{"data_size", func(c *config.Run) { c.DataSize = -10 }},
		{"pretrain.batch_size", func(c *config.Run) { c.Train.Pretrain.BatchSize = -1 }},
		{"pretrain.steps", func(c *config.Run) { c.Train.Pretrain.Steps = -1 }},
		{"pretrain.lr", func(c *config.Run) { c.Train.Pretrain.LR = -1 }},
		{"train.iterations", func(c *config.Run) { c.Train.Iterations = -5 }},
		{"sampler.target_accept", func(c *config.Run) { c.Train.Sampler.TargetAccept = 1.5 }},
		{"start_scale", func(c *config.Run) { c.Train.StartScale = -1 }},
		{"freeze_flow", func(c *config.Run) { c.Train.FreezeFlow = -1 }},
		{"max_energy", func(c *config.Run) { c.Train.MaxEnergy = -1 }},
		{"l2", func(c *config.Run) { c.Train.L2 = -1 }},
		{"model.ebm_hidden", func(c *config.Run) { c.Model.EBMHidden = []int{16, -4} }},
		{"model.base_sigma", func(c *config.Run) { c.Model.BaseSigma = -1 }},
	} {
		t.Run(c.field, func(t *testing.T) {
			cfg := smallConfig(t, algorithms.FlowMC, 4)
			c.set(&cfg)
			wantRefused(t, cfg, c.field, "want")
		})
	}
	// Documented zero values still mean the defaults.
	cfg := smallConfig(t, algorithms.FlowMC, 4)
	cfg.EvalEvery, cfg.CheckpointEvery, cfg.RHatEvery, cfg.Train.Sampler.StepSize = 0, 0, 0, 0
	cfg.Train.EBMOptim.Decay, cfg.Train.EBMOptim.DecayEvery = 1, 0
	if _, err := NewRun(cfg, t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

// checkpointAt builds a run of iters iterations in a new folder, steps it
// n times (evaluating when eval) and checkpoints it.
func checkpointAt(t *testing.T, iters, evalEvery, n int, eval bool) string {
	t.Helper()
	dir := t.TempDir()
	cfg := smallConfig(t, algorithms.FlowMC, iters)
	cfg.EvalEvery = evalEvery
	r, err := NewRun(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		st, err := r.Step()
		if err != nil {
			t.Fatal(err)
		}
		if eval && r.Trainer.Iter%evalEvery == 0 {
			if _, err := r.Evaluate(st); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantResumeError resumes the run in dir, whose checkpoint a test edited,
// and wants an error naming every one of want. The checkpoint's marker is
// written again first, as if flowebm had written the edited files: what is
// tested is the readers' own checks (an edit against the marker is refused
// before, see TestResumeRefusesEditedCheckpoint).
func wantResumeError(t *testing.T, dir string, want ...string) {
	t.Helper()
	resign(t, dir)
	_, err := Resume(dir)
	if err == nil {
		t.Fatalf("Resume succeeded, want an error naming %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Resume: %v, want it to name %q", err, w)
		}
	}
}

func TestResumeRefusesIterOutOfRange(t *testing.T) {
	for _, iter := range []int{-5, 13, 1 << 40} {
		dir := checkpointAt(t, 12, 2, 4, true)
		state := filepath.Join(dir, checkpointName, "state.json")
		editJSON(t, state, func(m map[string]any) { m["iter"] = iter })
		wantResumeError(t, dir, "state.json", `"iter"`, "0..12")
	}
}

func TestResumeRefusesTruncatedEvals(t *testing.T) {
	header := strings.Join(evalsHeader(2), ",") + "\n"
	for _, content := range []string{"", header} {
		// Past the first evaluation (iteration 2): 2 evaluations lost.
		dir := checkpointAt(t, 12, 2, 4, true)
		evals := filepath.Join(dir, checkpointName, "evals.csv")
		if err := os.WriteFile(evals, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		wantResumeError(t, dir, "evals.csv", "2", `"evals"`)

		// An earlier checkpoint, without the count in window.json.
		editJSON(t, filepath.Join(dir, checkpointName, "window.json"), func(m map[string]any) { delete(m, "evals") })
		wantResumeError(t, dir, "evals.csv", "no evaluations", "eval_every 2")
	}
}

// A checkpoint before the first evaluation has no evaluations, and resumes.
func TestResumeBeforeFirstEvaluation(t *testing.T) {
	dir := checkpointAt(t, 12, 4, 3, true)
	r, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Trainer.Iter != 3 || len(r.Evals) != 0 {
		t.Fatalf("resumed at iteration %d with %d evaluations, want 3 and 0", r.Trainer.Iter, len(r.Evals))
	}
	// Also without the count (an earlier version's checkpoint).
	editJSON(t, filepath.Join(dir, checkpointName, "window.json"), func(m map[string]any) { delete(m, "evals") })
	resign(t, dir)
	if _, err := Resume(dir); err != nil {
		t.Fatal(err)
	}
	// And a run stepped without evaluating, with the count.
	dir = checkpointAt(t, 12, 2, 5, false)
	if _, err := Resume(dir); err != nil {
		t.Fatal(err)
	}
}

// Every shipped default stays within the memory limit (the estimate for
// wide data is tested in package config).
func TestDefaultsWithinMemoryLimit(t *testing.T) {
	for _, e := range []string{"two-modes", "four-modes", "8-gaussians", "rings", "four-gaussians-16", "four-gaussians-32", "four-gaussians-64", "mnist"} {
		for _, a := range algorithms.Algorithms {
			rc, _, err := settings.Defaults(e, a)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewRun(rc, t.TempDir()); err != nil && strings.Contains(err.Error(), "memory") {
				t.Errorf("%s %s: %v", e, a, err)
			}
		}
	}
}

// resign writes the marker of the run dir's checkpoint again, with the
// SHA-256 of its files as they are now.
func resign(t *testing.T, dir string) {
	t.Helper()
	if err := writeComplete(filepath.Join(dir, checkpointName)); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint's files edited, emptied or removed after flowebm wrote them
// are refused, naming the file: a spec.json whose slope was changed and a
// state.json pushed to the last iteration resumed before, with results
// that config.json did not describe; a removed run-config.json and an
// evals.csv emptied with its count in window.json passed every check.
func TestResumeRefusesEditedCheckpoint(t *testing.T) {
	for _, c := range []struct {
		name, file string
		edit       func(path string)
		want       string
	}{
		{"slope", "spec.json", func(p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("leaky_relu(0.05)"), []byte("leaky_relu(0.5)"), 1), 0o644)
		}, "spec.json does not match the SHA-256 that"},
		{"iter", "state.json", func(p string) { editJSON(t, p, func(m map[string]any) { m["iter"] = 12 }) }, "state.json does not match the SHA-256 that"},
		{"removed", "run-config.json", func(p string) { os.Remove(p) }, "run-config.json, listed in"},
		{"unlisted", "COMPLETE", func(p string) { // spec.json edited, its line dropped from the marker
			b, _ := os.ReadFile(p)
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if !strings.HasSuffix(l, "  spec.json") {
					keep = append(keep, l)
				}
			}
			os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644)
		}, "does not list spec.json"},
		{"emptied history", "evals.csv", func(p string) {
			os.WriteFile(p, []byte(strings.Join(evalsHeader(2), ",")+"\n"), 0o644)
			editJSON(t, filepath.Join(filepath.Dir(p), "window.json"), func(m map[string]any) { m["evals"] = 0 })
		}, "evals.csv does not match the SHA-256 that"},
	} {
		dir := checkpointAt(t, 12, 2, 4, true)
		path := filepath.Join(dir, checkpointName, c.file)
		c.edit(path)
		_, err := Resume(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// ula has no flow: its model.flow_* fields are ignored (as its notes say)
// and size nothing (probe 18: flow_blocks 2^63 panicked in makeslice,
// flow_blocks 1e8 and flow_hidden [1e8] died out of memory).
func TestULAIgnoresFlowSizes(t *testing.T) {
	for _, amend := range []func(*config.Run){
		func(c *config.Run) { c.Model.FlowBlocks = math.MaxInt },
		func(c *config.Run) { c.Model.FlowBlocks = 100_000_000 },
		func(c *config.Run) { c.Model.FlowHidden = []int{100_000_000} },
	} {
		cfg := smallConfig(t, algorithms.ULA, 2)
		amend(&cfg)
		r, err := NewRun(cfg, t.TempDir())
		if err != nil {
			t.Fatalf("flow_blocks %d, flow_hidden %v: %v", cfg.Model.FlowBlocks, cfg.Model.FlowHidden, err)
		}
		if r.Trainer.Flow != nil {
			t.Error("ula's run has a flow")
		}
	}
}

package config

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

func TestMemoryLimitFollowsMachine(t *testing.T) {
	l := memoryLimit()
	if !(l > 0 && l <= sysmem.DefaultLimit) {
		t.Errorf("memory limit %v, want in (0, %d]", l, sysmem.DefaultLimit)
	}
}

// A data set whose copies would not fit is refused from its file's header,
// naming the file, its shape and the estimate: an .npz of a few megabytes
// can hold gigabytes (a 3 GiB member peaked at 14.7 GB before).
func TestDataSetMemoryIsBounded(t *testing.T) {
	defer func(f func() float64) { memoryLimit = f }(memoryLimit)
	memoryLimit = func() float64 { return 1 << 20 }
	dir := t.TempDir()
	x := make([]float64, 2*50000) // 800 kB of float64: 4 MB with its copies
	for i := range x {
		x[i] = float64(i % 7)
	}
	a := &npy.Array{Shape: []int{50000, 2}, Data: x}
	npyPath, npzPath := filepath.Join(dir, "x.npy"), filepath.Join(dir, "x.npz")
	if err := npy.WriteFile(npyPath, a, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if err := npz.WriteFile(npzPath, map[string]*npy.Array{"points": a}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{npyPath, npzPath} {
		_, _, err := Data{File: p}.Load(rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), p+": the data set of shape [50000 2] needs about 3.81 MiB of memory") {
			t.Errorf("%s: %v", p, err)
		}
	}
	memoryLimit = func() float64 { return 1 << 30 }
	if _, _, err := (Data{File: npzPath}).Load(rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Errorf("within the limit: %v", err)
	}
}

// Each option type reads its values from JSON unchanged and refuses
// others when the file is read, naming the field and the values.
func TestOptionsUnmarshal(t *testing.T) {
	good := `{"train": {"algorithm": "nt", "start": "gaussian", "sampler": {"negatives": "subsample", "global": "imh"}, "pretrain": {"objective": "data"}}}`
	var cfg Run
	if err := json.Unmarshal([]byte(good), &cfg); err != nil {
		t.Fatal(err)
	}
	tr := cfg.Train
	if tr.Algorithm != algorithms.NT || tr.Start != algorithms.StartGaussian || tr.Sampler.Negatives != algorithms.NegativesSubsample || tr.Sampler.Global != algorithms.IMH || tr.Pretrain.Objective != algorithms.ObjectiveData {
		t.Errorf("decoded %+v", tr)
	}
	b, err := json.Marshal(cfg.Train)
	if err != nil || !strings.Contains(string(b), `"algorithm":"nt"`) || !strings.Contains(string(b), `"negatives":"subsample"`) {
		t.Errorf("encoded %s, %v", b, err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ json, want string }{
		{`{"train": {"algorithm": "sgld"}}`, `algorithm "sgld", want "flowmc", "ula", "nt" or "coopflow"`},
		{`{"train": {"start": "zeros"}}`, `start "zeros", want "flow", "uniform" or "gaussian"`},
		{`{"train": {"sampler": {"negatives": "first"}}}`, `sampler.negatives "first", want "last", "all" or "subsample"`},
		{`{"train": {"sampler": {"global": "mh"}}}`, `sampler.global "mh", want "isir" or "imh"`},
		{`{"train": {"pretrain": {"objective": "kl"}}}`, `pretrain.objective "kl", want "data" or "reverse-kl"`},
	} {
		path := filepath.Join(dir, "c.json")
		os.WriteFile(path, []byte(c.json), 0o644)
		if _, err := Read(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
	var a algorithms.Algorithm
	if err := a.Set("ula"); err != nil || a != algorithms.ULA {
		t.Errorf("Set(ula) = %v, %v", a, err)
	}
}

// Wide data: the flow's graph over the log Z draws grows with the
// dimension (200 rows × 5,000 columns reached 19 GB and was killed); the
// estimate refuses it before anything is built.
func TestFlowValuesBoundWideData(t *testing.T) {
	cfg := Run{Experiment: "two-modes", LogZSamples: 4096, Train: algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Iterations: 10}}
	tc, err := cfg.Train.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	err = sysmem.Check(cfg.memoryTerms(tc, 5000), memoryLimit())
	if err == nil || !strings.Contains(err.Error(), "the flow's intermediate values for log_z_samples 4096 points × (5000 dims × 75") {
		t.Errorf("d = 5000: %v", err)
	}
}

// The fields an algorithm does not use are named: ULA-EBM has no flow and
// no global moves, and a flow start has no scale.
func TestUnused(t *testing.T) {
	c := Run{Train: algorithms.TrainConfig{Algorithm: algorithms.ULA, Iterations: 10, FlowOptim: algorithms.OptimConfig{Name: "sgd"},
		Sampler: algorithms.SamplerConfig{Particles: 500, GlobalSteps: 3}, Pretrain: algorithms.PretrainConfig{Steps: 5}}, Model: Model{FlowBlocks: 7}}
	want := "train.flow_optim train.pretrain model.flow_blocks train.sampler.particles train.sampler.global_steps"
	if got := strings.Join(c.Unused(), " "); got != want {
		t.Errorf("ula: %q, want %q", got, want)
	}
	c = Run{Train: algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Iterations: 10, StartScale: 5, Sampler: algorithms.SamplerConfig{Particles: 8}}}
	if got := strings.Join(c.Unused(), " "); got != "train.start_scale" {
		t.Errorf("flowmc with a flow start: %q, want train.start_scale", got)
	}
	c.Train.Start = algorithms.StartGaussian
	if got := c.Unused(); got != nil {
		t.Errorf("a gaussian start's scale: %q, want none", got)
	}
	c = Run{Train: algorithms.TrainConfig{Algorithm: algorithms.CoopFlow, Iterations: 10, Persistent: 5000, Start: algorithms.StartUniform, StartScale: 3,
		Sampler: algorithms.SamplerConfig{TargetAccept: 0.6}}}
	if got, want := strings.Join(c.Unused(), " "), "train.persistent train.start train.start_scale train.sampler.target_accept"; got != want {
		t.Errorf("coopflow: %q, want %q", got, want)
	}
	c = Run{Train: algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Iterations: 10, Sampler: algorithms.SamplerConfig{FixedStep: true, TargetAccept: 0.6}}}
	if got := strings.Join(c.Unused(), " "); got != "train.sampler.target_accept" {
		t.Errorf("a fixed step's target acceptance: %q", got)
	}
}

// A field written as 0 whose default is not 0 is refused, naming the
// default (only four fields were, and a particles 0 trained with 32);
// a 0 that is the default, or a value, is accepted.
func TestExplicitZeros(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ json, want string }{
		{`{"train": {"iterations": 5, "batch_size": 0}}`, "train.batch_size 0: 0 stands for the default here, 64: leave the field out for the default, or give another value"},
		{`{"train": {"iterations": 5, "sampler": {"particles": 0}}}`, "train.sampler.particles 0"},
		{`{"train": {"iterations": 5, "persistent": 0}}`, "train.persistent 0"},
		{`{"grid_size": 0, "train": {"iterations": 5}}`, "grid_size 0: 0 stands for the default here, 200"},
		{`{"rhat_chains": 0, "train": {"iterations": 5}}`, "rhat_chains 0"},
		{`{"data_size": 0, "train": {"iterations": 5}}`, "data_size 0"},
		{`{"epochs": 2, "train": {"max_energy": 0}}`, "train.max_energy 0"},
		{`{"data": {"file": "x.csv", "holdout": 0}, "train": {"iterations": 5}}`, "data.holdout 0"},
		{`{"train": {"batch_size": 0}}`, "train.batch_size 0"},                            // no iterations: the check ran not
		{`{"train": {"algorithm": "coopflow", "freeze_flow": 0}}`, "train.freeze_flow 0"}, // iterations from a flag
		{`{"train": {"algorithm": "ula", "iterations": 5, "flow_optim": {"lr": 0}}}`, ""}, // unused by ula: a note says so
		{`{"train": {"iterations": 5, "ebm_optim": {"lr": 0}}}`, "train.ebm_optim.lr 0: 0 stands for the default here, 0.001"},
		{`{"train": {"iterations": 5, "flow_optim": {"eps": 0, "beta2": 0}}}`, "train.flow_optim.beta2 0"},
		{`{"model": {"ebm_slope": 0}, "train": {"iterations": 5}}`, "model.ebm_slope 0: 0 stands for the default here, 0.05"},
		{`{"model": {"flow_blocks": 0}, "train": {"iterations": 5}}`, "model.flow_blocks 0"},
		{`{"train": {"iterations": 5, "start": "gaussian", "start_scale": 0}}`, "train.start_scale 0"},
		{`{"data": {"file": "x.csv"}, "data_size": 0, "train": {"iterations": 5}}`, ""}, // 0: every row
		{`{"epochs": 1, "train": {"iterations": 0}}`, ""},                               // epochs give the length
		{`{"seed": 0, "epochs": 0, "train": {"iterations": 5, "l2": 0, "ebm_optim": {"decay": 0}}}`, ""},
	} {
		path := filepath.Join(dir, "c.json")
		os.WriteFile(path, []byte(c.json), 0o644)
		_, err := Read(path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.json, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), path+": algorithms: "+c.want)):
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}

// The trainer's fields are named in errors as a run's configuration nests
// them, under "train." (probes 22–28: "batch_size -3", "sampler.negatives
// \"x\"" for train.batch_size and train.sampler.negatives), whether the
// JSON decoding or the resolution refuses them.
func TestTrainerFieldsNamedUnderTrain(t *testing.T) {
	dir := t.TempDir()
	exp, err := experiments.ByName("two-modes")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ json, want string }{
		{`{"train": {"iterations": 5, "batch_size": -3}}`, "train.batch_size -3, want > 0"},
		{`{"train": {"iterations": 5, "ebm_optim": {"lr": -1}}}`, "train.ebm_optim.lr -1, want a finite value > 0"},
		{`{"train": {"iterations": 5, "pretrain": {"lr": -1}}}`, "train.pretrain.lr -1"},
		{`{"train": {"iterations": 5, "persistent": 5}}`, "train.persistent 5 is smaller than the 64 chains run per iteration (train.batch_size 64, train.sampler.negatives \"last\"): want train.persistent ≥ the chains, or a smaller train.batch_size"},
		{`{"train": {"iterations": 5, "sampler": {"step_size": -1}}}`, "train.sampler.step_size -1"},
		{`{"train": {"iterations": 5, "sampler": {"negatives": "x"}}}`, `train.sampler.negatives "x", want "last", "all" or "subsample"`},
		{`{"train": {"iterations": 5, "algorithm": "x"}}`, `train.algorithm "x", want "flowmc", "ula", "nt" or "coopflow"`},
	} {
		path := filepath.Join(dir, "c.json")
		os.WriteFile(path, []byte(c.json), 0o644)
		cfg, err := Read(path)
		if err == nil {
			err = cfg.Resolve(exp)
		}
		if err == nil || !strings.Contains(err.Error(), "algorithms: "+c.want) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
	if _, err := (algorithms.TrainConfig{Iterations: 5, BatchSize: -3}).Resolved(); err == nil || err.Error() != "algorithms: batch_size -3, want > 0" {
		t.Errorf("a TrainConfig of its own: %v", err)
	}
}

// Probe 15: "global_steps": 2 alone gave a sampler without MALA steps
// (the one left out is 0; the defaults 1 and 4 are taken only for both).
// For flowMC-EBM one given without the other, or as 0, is refused; both,
// or neither, are read; other algorithms do not use them.
func TestSamplerStepsGivenTogether(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ json, want string }{
		{`{"train": {"iterations": 5, "sampler": {"global_steps": 2}}}`, "train.sampler.global_steps 2 and local_steps 0 (0 where left out): a flowMC cycle takes both"},
		{`{"train": {"iterations": 5, "sampler": {"local_steps": 8}}}`, "train.sampler.global_steps 0 and local_steps 8"},
		{`{"train": {"iterations": 5, "sampler": {"global_steps": 2, "local_steps": 0}}}`, "global_steps 2 and local_steps 0"},
		{`{"train": {"iterations": 5, "sampler": {"global_steps": 1, "local_steps": 8}}}`, ""},
		{`{"train": {"iterations": 5, "sampler": {"particles": 8}}}`, ""},
		{`{"train": {"algorithm": "ula", "iterations": 5, "sampler": {"global_steps": 0, "local_steps": 0}}}`, ""},
	} {
		path := filepath.Join(dir, "c.json")
		os.WriteFile(path, []byte(c.json), 0o644)
		_, err := Read(path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.json, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}

// A configuration file is bounded more tightly than the files flowebm
// writes (probe 29: 256 MiB took 38 s and 0.9 GB to refuse).
func TestReadBoundsConfigFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	b := []byte(`{"seed": 1, "zz": [` + strings.Repeat("0,", MaxFileBytes/2) + `0]}`)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "want at most 16777216") {
		t.Errorf("%d bytes: %v", len(b), err)
	}
}

// Round 119 B8: grid_size 1e20 was refused as beyond Go's int
// (9223372036854775807), then 1e18 as beyond 2..1000. A number beyond an
// integer field's fixed range is refused at decoding with the range that
// the later checks hold it to: for each, Max and Min are taken and Max+1
// (and Min−1 where it is not 0, the default) refused by Read and Resolve.
func TestIntRangesAsValidated(t *testing.T) {
	dir := t.TempDir()
	exp, err := experiments.ByName("two-modes")
	if err != nil {
		t.Fatal(err)
	}
	check := func(path string, v any) error {
		train := map[string]any{"iterations": 5, "sampler": map[string]any{"global_steps": 1, "local_steps": 1}}
		if path == "train.freeze_flow" { // below the iterations, for an algorithm with a flow
			train["algorithm"] = "ula"
		}
		obj := map[string]any{"train": train, "model": map[string]any{"flow": "spline"}}
		parts := strings.Split(path, ".")
		m := obj
		for _, p := range parts[:len(parts)-1] {
			if m[p] == nil {
				m[p] = map[string]any{}
			}
			m = m[p].(map[string]any)
		}
		m[parts[len(parts)-1]] = v
		b, _ := json.Marshal(obj)
		file := filepath.Join(dir, "c.json")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Read(file)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			err = cfg.Resolve(exp)
		}
		return err
	}
	defer func(f func() float64) { memoryLimit = f }(memoryLimit)
	memoryLimit = func() float64 { return math.Inf(1) } // the ranges, not the memory, are checked here
	for path, r := range intRanges() {
		if r.Max == math.MaxInt64 { // bounded below only: the memory checks bound them above
			dynamic := path == "train.persistent" || path == "data_size" // at least the chains, the batch: Min is what every run needs
			if err := check(path, r.Min); err != nil && !dynamic {
				t.Errorf("%s %d (in %v) refused: %v", path, r.Min, r, err)
			}
			if err := check(path, r.Min-1); r.Min-1 != 0 && err == nil {
				t.Errorf("%s %d (beyond %v) accepted", path, r.Min-1, r)
			}
			if err := check(path, json.Number("-1e20")); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("want an integer ≥ %d", r.Min)) {
				t.Errorf("%s -1e20: %v, want the range %v", path, err, r)
			}
			continue
		}
		for _, v := range []int64{r.Min, r.Max} {
			if err := check(path, v); err != nil {
				t.Errorf("%s %d (in %v) refused: %v", path, v, r, err)
			}
		}
		for _, v := range []int64{r.Min - 1, r.Max + 1} {
			if err := check(path, v); v != 0 && err == nil {
				t.Errorf("%s %d (beyond %v) accepted", path, v, r)
			}
		}
		if err := check(path, json.Number("1e20")); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("want an integer in %d..%d", r.Min, r.Max)) {
			t.Errorf("%s 1e20: %v, want the range %v", path, err, r)
		}
	}
}

// Round 123 B2, B3: rhat_steps -1 was told "want > 0", 1 "want ≥ 4", 1e20
// "4..100000"; train.iterations 0 was "not given". One range throughout,
// and a 0 given is named as such.
func TestRangeMessagesAgree(t *testing.T) {
	dir := t.TempDir()
	exp, err := experiments.ByName("two-modes")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ json, want string }{
		{`{"rhat_steps": -1, "train": {"iterations": 5}}`, "rhat_steps -1, want 4..100000"},
		{`{"rhat_steps": 1, "train": {"iterations": 5}}`, "rhat_steps 1 (want 4..100000)"},
		{`{"rhat_steps": 100001, "train": {"iterations": 5}}`, "rhat_steps 100001, want 4..100000"},
		{`{"rhat_steps": 1e20, "train": {"iterations": 5}}`, "want an integer in 4..100000"},
		{`{"train": {"iterations": 0}}`, "train.iterations is 0 or not given: give it, 1..1000000000, or epochs"},
		{`{"train": {"iterations": 5, "sampler": {"steps": -1e20}}}`, "want an integer in 1..1000000"},
		{`{"checkpoint_every": -1e20, "train": {"iterations": 5}}`, "want an integer ≥ 1 (unset: the default)"}, // round 124 B5: "at least -9223372036854775808"
		{`{"train": {"iterations": 5, "pretrain": {"steps": 2, "batch_size": -1}}}`, "train.pretrain.batch_size -1, want > 0 (unset: the same as train.batch_size)"},
	} {
		path := filepath.Join(dir, "c.json")
		if err := os.WriteFile(path, []byte(c.json), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Read(path)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			err = cfg.Resolve(exp)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}

package config

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// The diagnostics' sizes name only the fields at fault (all three were
// listed, the valid ones with them).
func TestDiagnosticSizesNameTheFieldAtFault(t *testing.T) {
	const train = `"train": {"algorithm": "ula", "iterations": 2, "batch_size": 16, "persistent": 32}`
	for _, c := range []struct{ json, want, not string }{
		{`{"rhat_chains": 8, "rhat_steps": 1, "log_z_samples": 64, ` + train + `}`, "algorithms: rhat_steps 1 (want 4..100000)", "rhat_chains"},
		{`{"rhat_chains": 1, "rhat_steps": 8, "log_z_samples": 64, ` + train + `}`, "algorithms: rhat_chains 1 (want ≥ 2)", "rhat_steps"},
		{`{"rhat_chains": 8, "rhat_steps": 8, "log_z_samples": 1, ` + train + `}`, "algorithms: log_z_samples 1 (want ≥ 2)", "rhat_chains"},
		{`{"rhat_chains": 1, "rhat_steps": 2, "log_z_samples": 64, ` + train + `}`, "algorithms: rhat_chains 1 (want ≥ 2), rhat_steps 2 (want 4..100000)", "log_z_samples"},
	} {
		err := resolveJSON(t, c.json)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) {
			t.Errorf("%s: %v, want %q without %s", c.json, err, c.want, c.not)
		}
	}
}

// An empty data section is named as such (the message read "experiment
// "two-modes" and a data file : give one").
func TestEmptyDataSection(t *testing.T) {
	for _, exp := range []string{"two-modes", "data", ""} {
		cfg := Run{Experiment: exp, Data: &Data{}}
		_, _, err := cfg.LoadExperiment(rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), "the data section has no file: give data.file") {
			t.Errorf("experiment %q, data {}: %v", exp, err)
		}
	}
}

// sampler.negatives "subsample" without sampler.subsample asks for it
// (the message said "sampler.subsample 0 must divide …").
func TestSubsampleWithoutK(t *testing.T) {
	var cfg Run
	if err := json.Unmarshal([]byte(`{"train": {"iterations": 2, "sampler": {"negatives": "subsample"}}}`), &cfg); err != nil {
		t.Fatal(err)
	}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `train.sampler.negatives "subsample" without train.sampler.subsample: give it`) {
		t.Errorf("subsample without k: %v", err)
	}
	cfg.Train.Sampler.Subsample = 2
	if err := cfg.Validate(); err != nil {
		t.Errorf("subsample 2: %v", err)
	}
}

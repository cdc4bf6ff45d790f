package algorithms

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each option type reads its values from JSON unchanged and refuses
// others when the file is read, naming the field and the values.
func TestOptionsUnmarshal(t *testing.T) {
	good := `{"train": {"algorithm": "nt", "start": "gaussian", "sampler": {"negatives": "subsample", "global": "imh"}, "pretrain": {"objective": "data"}}}`
	var cfg RunConfig
	if err := json.Unmarshal([]byte(good), &cfg); err != nil {
		t.Fatal(err)
	}
	tr := cfg.Train
	if tr.Algorithm != NT || tr.Start != StartGaussian || tr.Sampler.Negatives != NegativesSubsample || tr.Sampler.Global != IMH || tr.Pretrain.Objective != ObjectiveData {
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
		if _, err := ReadConfig(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
	var a Algorithm
	if err := a.Set("ula"); err != nil || a != ULA {
		t.Errorf("Set(ula) = %v, %v", a, err)
	}
}

// Restored optimiser state must be possible: Adam's step count a whole
// number ≥ 0, its moments finite and v ≥ 0 (a negative or NaN state was
// reported later as "training diverged").
func TestOptimiserStateChecked(t *testing.T) {
	o, err := OptimConfig{}.New(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		state map[string][]float64
		want  string
	}{
		{map[string][]float64{"m": {0, 0}, "v": {0, 0}, "t": {-1}}, "t is -1"},
		{map[string][]float64{"m": {0, 0}, "v": {0, 0}, "t": {math.NaN()}}, "t is NaN"},
		{map[string][]float64{"m": {0, 0}, "v": {0, -1e-3}, "t": {3}}, "v[1] is -0.001"},
		{map[string][]float64{"m": {math.Inf(1), 0}, "v": {0, 0}, "t": {3}}, "m[0] is +Inf"},
	} {
		if err := o.SetState(c.state); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.state, err, c.want)
		}
	}
	if err := o.SetState(map[string][]float64{"m": {0.1, 0}, "v": {0.2, 0}, "t": {3}}); err != nil {
		t.Error(err)
	}
}

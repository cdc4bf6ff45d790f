package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// train --seeds trains a run per seed, keeps finished ones when run again,
// and writes each seed's final metrics with their spread: the mean of the
// weights equals the mean of the per-seed weights.
func TestTrainSeeds(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	var stdout, stderr bytes.Buffer
	args := []string{"train", "--seeds", "1,2", "--iterations", "4", "--quiet", "--out", out}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("train --seeds: %s", stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "seeds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Seeds   []uint64
		PerSeed []struct {
			EBMWeights []float64 `json:"ebm_weights"`
		} `json:"per_seed"`
		Weights []seedSpread `json:"ebm_weights"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.PerSeed) != 2 || len(sum.Weights) != 2 {
		t.Fatalf("summary %s", b)
	}
	for k, s := range sum.Weights {
		mean := (sum.PerSeed[0].EBMWeights[k] + sum.PerSeed[1].EBMWeights[k]) / 2
		if math.Abs(s.Mean-mean) > 1e-15 || s.Min > s.Max {
			t.Errorf("mode %d: %+v, per-seed mean %v", k, s, mean)
		}
	}
	stdout.Reset()
	if code := run(args, &stdout, &stderr); code != 0 || strings.Count(stdout.String(), "already trained") != 2 {
		t.Errorf("again: exit %d, %q", code, stdout.String())
	}
	for _, c := range []struct{ seeds, want string }{{"5-1", "want a range"}, {"1,1", "names seed 1 twice"}, {"x", "want a range"}, {"1-1000", "want a range"}} {
		stderr.Reset()
		if code := run([]string{"train", "--seeds", c.seeds, "--out", filepath.Join(t.TempDir(), "x")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("--seeds %s: exit %d, %q", c.seeds, code, stderr.String())
		}
	}
}

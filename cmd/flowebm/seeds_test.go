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

// Probe 15: --seeds again with another --config kept the earlier seeds as
// "already trained" and summarised runs of two configurations as one set;
// the whole configuration is compared now, naming the field.
func TestSeedsRefuseOtherConfiguration(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "S")
	if _, stderr, status := runCLI("train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out); status != 0 {
		t.Fatal(stderr)
	}
	cfg, _, status := runCLI("train", "--iterations", "2", "--print-config")
	if status != 0 {
		t.Fatal("--print-config failed")
	}
	cfg = strings.Replace(cfg, `"batch_size": 64`, `"batch_size": 32`, 1)
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "holds a run with train.batch_size = 64, this command asks for 32", "train", "--seeds", "1", "--config", path, "--out", out)
	// The same command again finds its run trained.
	if stdout, stderr, status := runCLI("train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out); status != 0 || !strings.Contains(stdout, "already trained") {
		t.Errorf("the same --seeds again: status %d, %q %q", status, stdout, stderr)
	}
}

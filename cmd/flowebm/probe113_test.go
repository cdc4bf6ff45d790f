package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Round 113 B1: reproduce --plan left a run trained with other settings
// out as finished (or resumed it), and --report then refused it as
// mismatched. The plan leaves it out as mismatched, with --report's advice.
func TestPlanMarksMismatchedRuns(t *testing.T) {
	out := t.TempDir()
	run := filepath.Join(out, "runs", "two-modes-ula")
	stdout, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "2", "--print-config")
	if code != 0 {
		t.Fatal(stderr)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["checkpoint_every"] = 2
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(path, b, 0o644)
	if _, stderr, code := runCLI("train", "--config", path, "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	plan := filepath.Join(t.TempDir(), "plan.txt")
	stdout, stderr, code = runCLI("reproduce", "--plan", plan, "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula")
	if want := "left out: two-modes-ula (mismatched: " + filepath.Join(run, "config.json") + ": field checkpoint_every is 2, but reproduce trains this run with"; code != 0 || !strings.Contains(stdout, want) || strings.Contains(stdout, "(finished)") {
		t.Errorf("exit %d, %s%s; want %q", code, stdout, stderr, want)
	}
}

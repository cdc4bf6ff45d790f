package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --report marks a run trained with other settings than reproduce's (here
// a batch of 16 instead of the default's 64) as of other settings, naming
// the field, and exits with an error; the run trained with the defaults
// is reported.
func TestReproduceReportOtherSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three short runs")
	}
	out := t.TempDir()
	runDir := func(alg string) string { return filepath.Join(out, "runs", "two-modes-"+alg) }
	ref := filepath.Join(t.TempDir(), "ref")
	for _, args := range [][]string{
		{"train", "--algorithm", "flowmc", "--iterations", "2", "--quiet", "--out", runDir("flowmc")},
		{"train", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", ref},
	} {
		if _, stderr, status := runCLI(args...); status != 0 {
			t.Fatalf("%v: %s", args, stderr)
		}
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(ref, "config.json"))
	if err != nil || json.Unmarshal(b, &cfg) != nil {
		t.Fatalf("config.json: %v", err)
	}
	cfg["train"].(map[string]any)["batch_size"] = 16
	delete(cfg, "build")
	b, _ = json.Marshal(cfg)
	edited := filepath.Join(t.TempDir(), "edited.json")
	os.WriteFile(edited, b, 0o644)
	if _, stderr, status := runCLI("train", "--config", edited, "--quiet", "--out", runDir("ula")); status != 0 {
		t.Fatalf("train --config: %s", stderr)
	}
	code, stdout, stderr, report := reportOf(t, out, "--algorithms", "flowmc,ula")
	want := "field train.batch_size is 16, but reproduce trains this run with 64"
	if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stdout, "two-modes-ula: mismatched: ") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
	}
	if miss := lacking(report, "| flowMC-EBM | 0.", "| ULA-EBM | mismatched |"); len(miss) > 0 {
		t.Errorf("report lacks %q:\n%s", miss, report)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// train --print-config writes the configuration a run of the same flags
// would have, trains nothing, and given back with --config trains the same
// run: both runs' config.json are byte for byte equal.
func TestTrainPrintConfigRoundTrips(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"--experiment", "rings", "--algorithm", "ula", "--iterations", "2", "--seed", "3"}
	stdout, stderr, status := runCLI(append([]string{"train", "--print-config"}, flags...)...)
	if status != 0 {
		t.Fatalf("--print-config: status %d, %s", status, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 || !strings.Contains(stdout, `"experiment": "rings"`) || !strings.Contains(stdout, `"iterations": 2`) {
		t.Fatalf("--print-config printed %q", stdout)
	}
	cfg := filepath.Join(dir, "cfg.json")
	if err := os.WriteFile(cfg, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if _, stderr, status := runCLI("train", "--quiet", "--config", cfg, "--out", a); status != 0 {
		t.Fatalf("--config: status %d, %s", status, stderr)
	}
	if _, stderr, status := runCLI(append([]string{"train", "--quiet", "--out", b}, flags...)...); status != 0 {
		t.Fatalf("flags: status %d, %s", status, stderr)
	}
	ca, errA := os.ReadFile(filepath.Join(a, "config.json"))
	cb, errB := os.ReadFile(filepath.Join(b, "config.json"))
	if errA != nil || errB != nil || !bytes.Equal(ca, cb) {
		t.Errorf("config.json from --print-config's file:\n%s\nfrom the flags:\n%s", ca, cb)
	}
	wantErr(t, "--print-config trains nothing: give it without --out", "train", "--print-config", "--out", filepath.Join(dir, "c"))
}

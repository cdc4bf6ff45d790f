package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
)

// reproduce finds an image experiment's files through its environment
// variable (it has no --data-dir), says so when they are missing, and
// gives every plan line the folder as --data-dir, so that the lines run on
// machines without the variable.
func TestReproducePlanImageDataDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(experiments.CIFAR10Env, "")
	_, stderr, status := runCLI("reproduce", "--plan", filepath.Join(dir, "p0.txt"), "--out", filepath.Join(dir, "out"), "--experiments", "cifar10", "--algorithms", "ula", "--iterations", "2")
	if status == 0 || !strings.Contains(stderr, "set FLOWEBM_CIFAR10=DIR (reproduce has no --data-dir; every run is given DIR as --data-dir)") {
		t.Errorf("status %d, %q; want the variable named", status, stderr)
	}
	if strings.Contains(stderr, "train --data-dir") { // probe 14: a flag reproduce does not have
		t.Errorf("%q: want no hint to a --data-dir flag under reproduce", stderr)
	}
	data := filepath.Join(dir, "cifar")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFakeCIFAR10(t, data, 12)
	t.Setenv(experiments.CIFAR10Env, data)
	plan := filepath.Join(dir, "plan.txt")
	if _, stderr, status := runCLI("reproduce", "--plan", plan, "--out", filepath.Join(dir, "out"), "--experiments", "cifar10", "--algorithms", "ula", "--iterations", "2"); status != 0 {
		t.Fatalf("--plan: %s", stderr)
	}
	b, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "--data-dir "+shellQuote(data)) {
		t.Errorf("plan lacks --data-dir %s:\n%s", data, b)
	}
}

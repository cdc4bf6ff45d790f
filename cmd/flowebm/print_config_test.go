package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
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

// Probe 16: --print-config printed relative paths (which --config reads
// from its own folder), both epochs and iterations (a pair --config
// refuses), and invalid values with exit 0. Its output now names files
// absolutely, gives the length once and is checked as a run's start
// checks its configuration.
func TestPrintConfigForAnotherFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	rows := make([]string, 0, 200)
	for i := range 200 {
		rows = append(rows, fmt.Sprintf("%d,%d", i%7, (i*3)%11))
	}
	if err := os.WriteFile("d.csv", []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"--data", "d.csv", "--iterations", "2"}, {"--data", "d.csv", "--epochs", "1"}} {
		stdout, stderr, status := runCLI(append([]string{"train", "--print-config"}, flags...)...)
		if status != 0 {
			t.Fatalf("%v: %s", flags, stderr)
		}
		if err := os.WriteFile(filepath.Join("sub", "c.json"), []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "r"+flags[len(flags)-2])
		if _, stderr, status := runCLI("train", "--quiet", "--config", filepath.Join("sub", "c.json"), "--out", out); status != 0 {
			t.Errorf("%v, then --config from another folder: %s", flags, stderr)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"train": {"iterations": 5, "sampler": {"global_steps": -1, "local_steps": 2}}}`), 0o644)
	wantErr(t, "global_steps -1, local_steps 2: want positive", "train", "--config", bad, "--print-config")
}

// Probe 17: --print-config printed flow files that do not exist (the run
// opens them only when it starts); they are checked.
func TestPrintConfigChecksFlowFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "a.onnx")
	wantErr(t, "model.flow_onnx: open "+missing+": no such file or directory", "train", "--flow", missing, "--flow-density", filepath.Join(dir, "b.onnx"), "--print-config")
}

// Probe 17: --print-config --data-dir left out data_dir_sha256, which a
// second pass through --config added: the first print records the
// folder's checksums as a run does, and a second print is the same.
func TestPrintConfigDataDirChecksums(t *testing.T) {
	t.Setenv(experiments.CIFAR10Env, "")
	dir := t.TempDir()
	data := filepath.Join(dir, "cifar")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFakeCIFAR10(t, data, 40)
	first, stderr, status := runCLI("train", "--experiment", "cifar10", "--algorithm", "ula", "--data-dir", data, "--iterations", "2", "--print-config")
	if status != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(first, `"data_dir_sha256"`) || !strings.Contains(first, `"test_batch.bin"`) {
		t.Fatalf("first print lacks the checksums:\n%s", first)
	}
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	second, stderr, status := runCLI("train", "--config", path, "--print-config")
	if status != 0 || second != first {
		t.Errorf("second print (status %d, %s) differs from the first:\n%s\nfirst:\n%s", status, stderr, second, first)
	}
}

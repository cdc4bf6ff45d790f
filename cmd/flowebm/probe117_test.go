package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Round 117 B3: CmdStan chains were named by their place among the files
// given ("chains 2 and 3 are identical"), which is not their files' order
// nor ids. They are named by their files.
func TestCmdStanChainsNamedByFile(t *testing.T) {
	dir := t.TempDir()
	stan := func(name string, shift float64) string {
		var b strings.Builder
		b.WriteString("lp__,accept_stat__,mu\n")
		for i := range 40 {
			fmt.Fprintf(&b, "0,0.9,%g\n", shift+float64((i*7)%11))
		}
		return writeFile(t, dir, name, b.String())
	}
	a, b, c := stan("output_4.csv", 0), stan("output_1.csv", 0.5), stan("output_2.csv", 0.5)
	if _, stderr, code := runCLI("diagnose", a, b, c); code != 0 || !strings.Contains(stderr, "chains output_1.csv and output_2.csv (the same seed twice, or a file copied?) are identical") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 117 B4: a UTF-16 file (Notepad's "Unicode") given as --config or
// to diagnose was refused as not starting with a JSON object, or as a
// header of control characters; train --data named it. Each names it.
func TestUTF16Named(t *testing.T) {
	dir := t.TempDir()
	utf16 := func(name, text string) string {
		b := []byte{0xff, 0xfe}
		for _, r := range text {
			b = append(b, byte(r), 0)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	want := "UTF-16 (byte-order mark FF FE or FE FF), want UTF-8: convert it, with iconv -f UTF-16 -t UTF-8"
	if _, stderr, code := runCLI("train", "--config", utf16("c.json", `{"seed": 1}`), "--out", filepath.Join(dir, "r")); code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("--config: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("diagnose", utf16("d.csv", ".chain,.iteration,mu\n1,1,0.1\n")); code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("diagnose: exit %d, %s", code, stderr)
	}
}

// Round 117 B5: a run's checkpoint.old/, which a run keeps only while it
// replaces its checkpoint, was read without the run's lock: removed
// meanwhile, it was "neither a checkpoint nor a training run". It is read
// under the lock, and where it is gone the run folder is named.
func TestCheckpointOldGoneNamesRun(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	old := filepath.Join(run, "checkpoint.old")
	_, stderr, code := runCLI("convert", old, filepath.Join(dir, "m.onnx"))
	if code == 0 || !strings.Contains(stderr, old+" does not exist (now): a run keeps checkpoint.old only while it replaces its checkpoint: give the run folder "+run) {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if err := os.CopyFS(old, os.DirFS(filepath.Join(run, "checkpoint"))); err != nil { // whole, with its COMPLETE
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("convert", old, filepath.Join(dir, "m.onnx")); code != 0 {
		t.Errorf("a whole checkpoint.old: exit %d, %s", code, stderr)
	}
}

// tinyImageRun trains a one-iteration mnist28 ULA-EBM on 200 images (a
// convolutional EBM) into dir/name.
func tinyImageRun(t *testing.T, dir string) string {
	t.Helper()
	cfg := printedConfig(t, "--experiment", "mnist28", "--algorithm", "ula", "--iterations", "1")
	delete(cfg, "memory_accepted")
	cfg["data_size"], cfg["log_z_samples"], cfg["rhat_chains"] = 200, 16, 4
	train := cfg["train"].(map[string]any)
	train["persistent"], train["batch_size"] = 16, 16
	run := filepath.Join(dir, "img")
	if _, stderr, code := runCLI("train", "--config", writeConfig(t, filepath.Join(dir, "c.json"), cfg), "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	return run
}

// Round 117 A1, A2: a convolutional EBM's float64 export did not load in
// ONNX Runtime (no float64 Conv kernel), unsaid though convert's help said
// every export runs there; its --what ebm export said "convert it back
// with --base σ", which was refused, the refusal calling the file a whole
// energy. convert notes the missing kernels and --float32, says how the
// network is used, and the refusal no longer misnames it.
func TestConvExportNotes(t *testing.T) {
	dir := t.TempDir()
	run := tinyImageRun(t, dir)
	ebm := filepath.Join(dir, "ebm.onnx")
	stdout, stderr, code := runCLI("convert", run, ebm, "--what", "ebm")
	if code != 0 || !strings.Contains(stdout, "note: ONNX Runtime's CPU provider has no float64 kernel for Conv") || strings.Contains(stdout, "convert it back") || !strings.Contains(stdout, "flowebm energy and sample take it with --base ") {
		t.Errorf("--what ebm: exit %d, %s%s", code, stdout, stderr)
	}
	if _, stderr, code := runCLI("convert", ebm, filepath.Join(dir, "back")); code == 0 || strings.Contains(stderr, "whole energy") || !strings.Contains(stderr, "a convolutional network is not an MLP") {
		t.Errorf("converted back: exit %d, %s", code, stderr)
	}
	if stdout, stderr, code := runCLI("convert", run, filepath.Join(dir, "e32.onnx"), "--what", "energy", "--float32"); code != 0 || strings.Contains(stdout, "no float64 kernel") {
		t.Errorf("--float32: exit %d, %s%s", code, stdout, stderr)
	}
}

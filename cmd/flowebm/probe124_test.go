package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Round 124 B3: a kill between a checkpoint and metrics.csv's rewrite
// left metrics.csv a row behind the checkpoint's evaluations: plot and
// train --resume called it "not this run's … another run's, or edited",
// compare refused the run. It is an interrupted run's state: each reads
// it, and --resume writes the row again.
func TestMetricsCSVBehindCheckpointIsACrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "200", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	path := filepath.Join(dir, "metrics.csv")
	whole := mustRead(t, path)
	lines := bytes.SplitAfter(whole, []byte("\n"))
	if len(lines) < 3 {
		t.Fatalf("metrics.csv of %d lines", len(lines))
	}
	cut := bytes.Join(lines[:len(lines)-2], nil) // the last row gone (the last element is the empty tail)
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("plot", dir); code != 0 || strings.Contains(stderr, "not this run's") {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", dir, "--out", filepath.Join(t.TempDir(), "c")); code != 0 || strings.Contains(stderr, "not this run's") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", dir, "--quiet"); code != 0 {
		t.Fatalf("train --resume: exit %d, %s", code, stderr)
	}
	if got := mustRead(t, path); !bytes.HasPrefix(got, whole) {
		t.Errorf("metrics.csv after --resume does not begin with the rows it had before the cut")
	}
}

// Round 124 A1: chains started at 1e6 on a model of full support, coming
// in by a step's shrink and in its mass by a third of the draws, were
// "stranded where the model's density is all but 0 … sampling longer does
// not move them". They are said to be a transient, with where they came
// in.
func TestFarStartsAreATransient(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	starts := filepath.Join(dir, "far.npy")
	if err := npy.WriteFile(starts, &npy.Array{Shape: []int{1, 2}, Data: []float64{1e6, 1e6}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--starts", starts, "--steps", "3000", "--warmup", "0", "--chains", "2", "--out", filepath.Join(dir, "s.npy"))
	if code != 0 || strings.Contains(stderr, "stranded") || !strings.Contains(stderr, "came into the model's mass by draw") || !strings.Contains(stderr, "a transient") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

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

// Round 124 B1, B2: a finished run whose final checkpoint is lost and
// whose metrics.csv was cut was told "cp checkpoint/evals.csv metrics.csv
// restores them", which kept the older checkpoint's rows only; its
// metrics.csv cut to the older checkpoint's rows (a resume from it,
// interrupted) had compare call metrics.json "edited, or another run's".
// Both say the final checkpoint is missing and train --resume, which
// writes every row again.
func TestFinalLostAdviceResumes(t *testing.T) {
	dir := t.TempDir()
	run, early := lostFinalRun(t, dir)
	path := filepath.Join(run, "metrics.csv")
	whole := mustRead(t, path)
	if err := os.WriteFile(path, whole[:len(whole)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("plot", run)
	if code == 0 || !strings.Contains(stderr, "train --resume "+run+" writes them all again") || strings.Contains(stderr, "cp ") || strings.Contains(stderr, "drawn from its checkpoint's") {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	if err := os.WriteFile(path, mustRead(t, filepath.Join(early, "metrics.csv")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI("compare", run, "--out", filepath.Join(dir, "cmp"))
	if code != 0 || strings.Contains(stderr, "edited, or another run's") || !strings.Contains(stderr, "its final checkpoint is missing") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	stdout, stderr, code := runCLI("train", "--resume", run)
	if code != 0 || !strings.Contains(stdout, "note: the run finished (its metrics.json) but its final checkpoint is missing") {
		t.Errorf("train --resume: exit %d, %s%s", code, stdout, stderr)
	}
	if got := mustRead(t, path); !bytes.Equal(got, whole) {
		t.Errorf("metrics.csv after --resume differs from the finished run's")
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// finishedULARun trains a 3-iteration ula run into dir/name.
func finishedULARun(t *testing.T, dir, name, seed string) string {
	t.Helper()
	run := filepath.Join(dir, name)
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "3", "--seed", seed, "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	return run
}

// Round 114 B2: a finished run whose checkpoint lost its COMPLETE was told
// by train --resume that sample, energy and convert "still use its model",
// which they refused; given the checkpoint folder, they sent the user to
// the run folder, which refused it again. Neither is said now: each names
// the way on (a whole copy of the checkpoint, or training again).
func TestFinishedRunWithoutCompleteAdvice(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	if err := os.Remove(filepath.Join(run, "checkpoint", "COMPLETE")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("train", "--resume", run)
	if code == 0 || strings.Contains(stderr, "still use its model") || !strings.Contains(stderr, "nor can flowebm sample, energy or convert use its model") {
		t.Errorf("train --resume: exit %d, %s", code, stderr)
	}
	for _, model := range []string{run, filepath.Join(run, "checkpoint")} {
		_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"))
		if code == 0 || strings.Contains(stderr, "give the run folder") || !strings.Contains(stderr, "put back a whole copy of the run's checkpoint/ if you keep one") {
			t.Errorf("sample --model %s: exit %d, %s", model, code, stderr)
		}
	}
	// Its training state alone damaged: the model is still used, as said.
	other := finishedULARun(t, dir, "other", "1")
	if err := os.Truncate(filepath.Join(other, "checkpoint", "state.npz"), 100); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--resume", other); code == 0 || !strings.Contains(stderr, "still use its model, whose own files are whole") {
		t.Errorf("train --resume, state damaged: exit %d, %s", code, stderr)
	}
}

// Round 114 B3: a run's checkpoint/ replaced by another run's (seed 3 in
// a seed-1 run whose config.json, metrics.json and metrics.csv agree) was
// blamed on config.json, and the cp advised made the folder the other run
// (its outputs replaced by that run's). The checkpoint is named as the odd
// one, with no cp; an edited config.json still gets the cp.
func TestSwappedCheckpointNotBlamedOnConfig(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	other := finishedULARun(t, dir, "other", "3")
	ck := filepath.Join(run, "checkpoint")
	if err := os.RemoveAll(ck); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(other, "checkpoint"), ck); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("train", "--resume", run)
	if code == 0 || strings.Contains(stderr, "cp ") || !strings.Contains(stderr, "the checkpoint is another run's") {
		t.Errorf("swapped checkpoint: exit %d, %s", code, stderr)
	}
	plan := filepath.Join(dir, "plan.txt")
	out := filepath.Join(dir, "set")
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(run, filepath.Join(out, "runs", "two-modes-ula")); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI("reproduce", "--plan", plan, "--out", out, "--iterations", "3", "--seed", "1", "--experiments", "two-modes", "--algorithms", "ula")
	if code != 0 || !strings.Contains(stdout, "its checkpoint is another run's") || strings.Contains(stdout, "restores it") {
		t.Errorf("--plan: exit %d, %s%s", code, stdout, stderr)
	}
	edited := finishedULARun(t, dir, "edited", "1")
	cfg := filepath.Join(edited, "config.json")
	b := mustRead(t, cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), `"seed": 1`, `"seed": 3`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--resume", edited); code == 0 || !strings.Contains(stderr, "undo the edit (cp ") {
		t.Errorf("edited config.json: exit %d, %s", code, stderr)
	}
}

// Round 114 B1: a run stopped after metrics.json but before samples.npy
// (or with metrics.json lost) was shown finished by compare, and plot drew
// its figures, without a word, while reproduce --report called it
// incomplete. Both say what it lacks and that train --resume writes it.
func TestUnwrittenOutputsNoted(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	if err := os.Remove(filepath.Join(run, "samples.npy")); err != nil {
		t.Fatal(err)
	}
	want := "the run " + run + " reached its last iteration but lacks samples.npy"
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c"), "--plot-format", "svg"); code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	if err := os.Remove(filepath.Join(run, "metrics.json")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("plot", run, "--plot-format", "svg"); code != 0 || !strings.Contains(stderr, "lacks metrics.json and samples.npy") {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c2"), "--plot-format", "svg"); code != 0 || strings.Contains(stderr, "lacks") {
		t.Errorf("compare after train --resume: exit %d, %s", code, stderr)
	}
}

// Round 113 B5: a reproduce killed (SIGKILL) after training a run but
// before recording how far left the record without it, so the next
// reproduce and --report said the run was trained "by a plan's lines or
// by hand". The record says which reproduce set out to train it. The
// state a SIGKILL leaves is made by restoring the record as it was when
// the runs ended, before reproduce recorded them.
func TestKilledReproduceRecorded(t *testing.T) {
	out := t.TempDir()
	record := filepath.Join(out, runSetFile)
	var atKill []byte
	defer func() { testHook = nil }()
	testHook = func(point string) {
		if point == "reproduce-runs-ended" {
			atKill = mustRead(t, record)
		}
	}
	args := []string{"reproduce", "--out", out, "--iterations", "6", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "1"}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	testHook = nil
	if err := os.WriteFile(record, atKill, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, "report.md")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	b := string(mustRead(t, filepath.Join(out, "report.md")))
	if want := "trained by reproduce --jobs 1 (killed before it recorded how far; or by hand after it)"; !strings.Contains(b, want) {
		t.Errorf("report lacks %q:\n%s", want, b)
	}
}

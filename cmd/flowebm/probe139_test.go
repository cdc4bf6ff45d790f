package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/npy"
)

// Round 139 A1: flowmc's own flow on a model of scales 1 and 30 (far from
// its base N(0, I)) was told "a longer --warmup does not bring it there",
// while a longer warm-up with --patience 0 did (global acceptance 0.12 →
// 0.73, R-hat 1.976 → 1.020). Where global moves are accepted, the advice
// is the longer warm-up with --patience 0.
func TestFlowMCFarButReachingAdvice(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	pts := make([]float64, 2*1000)
	for i := range 1000 {
		pts[2*i], pts[2*i+1] = rng.NormFloat64(), 30*rng.NormFloat64()
	}
	data := filepath.Join(dir, "d.npy")
	if err := npy.WriteFile(data, &npy.Array{Shape: []int{1000, 2}, Data: pts}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--data", data, "--iterations", "5", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	model := filepath.Join(dir, "e.onnx") // the whole energy, in the data's units
	if _, stderr, code := runCLI("convert", run, model, "--what", "energy"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--chains", "8", "--steps", "200", "--warmup", "300", "--out", filepath.Join(dir, "a.npy"))
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(stdout, "a longer --warmup and --patience 0") || strings.Contains(stdout, "may never reach them however long") || !strings.Contains(stdout, "it may take a long warm-up (with --patience 0) to reach them") {
		t.Errorf("%s", stdout)
	}
}

// Round 139 A2: chains spread over a box (a flat energy inside |x1| ≤ 1,
// 1e30 outside) at R-hat 1.004 were told the density may be improper in
// that dimension. A dimension where the chains have mixed is not named.
func TestFreeDimensionMixedNotNamed(t *testing.T) {
	const chains, k = 8, 20
	rng := rand.New(rand.NewPCG(7, 8))
	walk, grad := mat.NewDense(chains*k, 2, nil), mat.NewDense(chains*k, 2, nil)
	for c := range chains {
		x := 0.0
		for i := range k {
			x += 3 * rng.NormFloat64()
			walk.Set(c*k+i, 0, rng.NormFloat64())
			walk.Set(c*k+i, 1, x)
			grad.Set(c*k+i, 0, walk.At(c*k+i, 0))
		}
	}
	if note := freeDimNote(grad, walk, chains, k, true, func(int) bool { return true }); note != "" {
		t.Errorf("mixed: %q", note)
	}
	if note := freeDimNote(grad, walk, chains, k, true, func(int) bool { return false }); note == "" {
		t.Error("not mixed: no note")
	}
}

// Round 139 B1: a finished run's window.json "seconds" edited (its
// COMPLETE written again) had metrics.json blamed, and train --resume,
// advised, wrote the edit over the true time. Either may be the edit:
// both ways are named and train --resume writes neither over the other.
func TestSecondsDisagreementNotOverwritten(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	ck := filepath.Join(run, "checkpoint")
	editJSON(t, filepath.Join(ck, "window.json"), func(w map[string]any) { w["seconds"] = 99.0 })
	if err := checkpoint.WriteManifest(ck); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(run, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("train", "--resume", run)
	after, _ := os.ReadFile(filepath.Join(run, "metrics.json"))
	if code == 0 || !strings.Contains(stderr, "one of the two was edited") || !strings.Contains(stderr, "if window.json was") || !slices.Equal(before, after) {
		t.Errorf("train --resume: exit %d, %s; metrics.json kept: %v", code, stderr, slices.Equal(before, after))
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c")); !strings.Contains(stderr, "one of the two was edited") || strings.Contains(stderr, "writes it again)") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
}

// Round 139 B2: a finished run's checkpoint evals.csv edited in its last
// row (its COMPLETE written again), which train --resume and compare
// refuse, was used by sample without a note. The note names the edit.
func TestOutvotedCheckpointNoted(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	ck := filepath.Join(run, "checkpoint")
	path := filepath.Join(ck, "evals.csv")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	last := strings.Split(rows[len(rows)-1], ",")
	col := slices.Index(strings.Split(rows[0], ","), "loss")
	last[col] = "12345"
	rows[len(rows)-1] = strings.Join(last, ",")
	if err := os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteManifest(ck); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{run, ck} {
		_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"), "--force")
		if code != 0 || !strings.Contains(stderr, "differs from the one the run's metrics.json and metrics.csv both hold") || !strings.Contains(stderr, "are used here") {
			t.Errorf("sample --model %s: exit %d, %s", model, code, stderr)
		}
	}
}

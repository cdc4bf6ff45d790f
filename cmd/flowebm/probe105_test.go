package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/npy"
)

// editJSON rewrites the JSON file at path through edit.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustRead(t, path), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Round 105 A2, B3: true_held_out_ll and true_weights edited in a
// finished run's metrics.json passed: --resume said "nothing to do",
// compare and reproduce --report showed the edit as the exact
// log-likelihood. --resume writes it again; compare and --report name it.
func TestEditedTruthFound(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-ula")
	path := filepath.Join(run, "metrics.json")
	good := mustRead(t, path)
	editJSON(t, path, func(m map[string]any) { m["true_held_out_ll"] = -0.5 })
	want := path + `: field "true_held_out_ll" is -0.5, but the run's held-out data, drawn again from its seed, give `
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("--report: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(out, "c")); code != 0 || !strings.Contains(stderr, want) || strings.Count(stderr, "writes it again") != 1 { // round 109 A1: the way on given twice
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("--resume: exit %d, %s", code, stderr)
	}
	var m, g map[string]any
	json.Unmarshal(mustRead(t, path), &m)
	json.Unmarshal(good, &g)
	if m["true_held_out_ll"] != g["true_held_out_ll"] {
		t.Errorf("true_held_out_ll written again as %v, was %v", m["true_held_out_ll"], g["true_held_out_ll"])
	}
	editJSON(t, path, func(m map[string]any) { m["true_weights"] = []float64{0.5, 0.5} })
	want = `field "true_weights" is [0.5 0.5], but the experiment's are`
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, want) { // round 106 A1: found by --resume alone
		t.Errorf("--report, true_weights: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(out, "c2")); code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("compare, true_weights: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("--resume, true_weights: exit %d, %s", code, stderr)
	}
}

// Round 105 B1, B2: reproduce --report called a finished run with
// another run's config.json "mismatched" and advised moving it away
// (its checkpoint is this run's: the cp restore keeps it); an edited
// chain weight in metrics.json (which metrics.csv does not hold) was
// reported as good.
func TestReportFindsSwappedConfigAndChainWeights(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "flowmc,ula", "--iterations", "3", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	flowmc, ula := filepath.Join(out, "runs", "two-modes-flowmc"), filepath.Join(out, "runs", "two-modes-ula")
	own := mustRead(t, filepath.Join(flowmc, "config.json"))
	os.WriteFile(filepath.Join(flowmc, "config.json"), mustRead(t, filepath.Join(ula, "config.json")), 0o644)
	want := "cp " + filepath.Join(flowmc, "checkpoint", "run-config.json") + " " + filepath.Join(flowmc, "config.json") + " restores it"
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, want) || strings.Contains(stderr, "move it away: it is another experiment's") {
		t.Errorf("swapped config.json: exit %d, %s", code, stderr)
	}
	os.WriteFile(filepath.Join(flowmc, "config.json"), own, 0o644)
	editJSON(t, filepath.Join(flowmc, "metrics.json"), func(m map[string]any) {
		cw := m["final"].(map[string]any)["chain_weights"].([]any)
		cw[0].(map[string]any)["weight"] = 0.3333
	})
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, `field "final.chain_weights" is not the run's last evaluation (iteration 3, as its checkpoint holds it)`) {
		t.Errorf("edited chain weight: exit %d, %s", code, stderr)
	}
}

// Round 105 B5, B7, B8: train --resume replaced an unfinished run's
// edited metrics.csv unsaid; compare blamed metrics.json for another
// run's config.json (its advice, followed, refused over config.json);
// compare summarised a run whose checkpoint cannot be read unsaid.
func TestRound105Notes(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "r")
	if _, stderr, code := runCLI("train", "--iterations", "3", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	other := filepath.Join(dir, "o")
	if _, stderr, code := runCLI("train", "--iterations", "3", "--seed", "2", "--quiet", "--out", other); code != 0 {
		t.Fatal(stderr)
	}
	own := mustRead(t, filepath.Join(run, "config.json"))
	os.WriteFile(filepath.Join(run, "config.json"), mustRead(t, filepath.Join(other, "config.json")), 0o644)
	_, stderr, _ := runCLI("compare", run, "--out", filepath.Join(dir, "c1"))
	if !strings.Contains(stderr, filepath.Join(run, "config.json")+`: field "seed" is 2, but the checkpoint was written with 1`) || strings.Contains(stderr, "metrics.json is of seed") {
		t.Errorf("compare, swapped config.json: %s", stderr)
	}
	os.WriteFile(filepath.Join(run, "config.json"), own, 0o644)
	weights := filepath.Join(run, "checkpoint", "weights.npz")
	good := mustRead(t, weights)
	os.WriteFile(weights, good[:len(good)/2], 0o644)
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c2")); code != 0 || !strings.Contains(stderr, ": the run's outputs, shown, cannot be checked against it") {
		t.Errorf("compare, damaged checkpoint: exit %d, %s", code, stderr)
	}
	os.WriteFile(weights, good, 0o644)

	unfinished := filepath.Join(dir, "u")
	if code, stderr := interruptAtFirstCheckpoint(t, unfinished, "train", "--iterations", "100", "--quiet", "--out", unfinished); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	csv := filepath.Join(unfinished, "metrics.csv")
	if err := os.WriteFile(csv, append(mustRead(t, csv), "4,1,2,3\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--resume", unfinished, "--quiet"); code != 0 || !strings.Contains(stderr, csv+": line ") || !strings.Contains(stderr, " has 4 fields, want 22") || !strings.Contains(stderr, "the run's own is written again from its checkpoint's evaluations at its next checkpoint") {
		t.Errorf("--resume, edited metrics.csv of an unfinished run: exit %d, %s", code, stderr)
	}
}

// Round 105 B6: HMC chains with a fixed --step that rejected every
// proposal near the modes were not named (only "almost no local move was
// accepted"), and a far one's note spoke of a step "tuned on all the
// chains" where none was tuned.
func TestStillChainsNamedWithFixedStep(t *testing.T) {
	model, _ := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "quartic_energy.onnx"))
	inTempDir(t)
	npy.WriteFile("s.npy", &npy.Array{Shape: []int{4, 2}, Data: []float64{0.5, 0.5, -0.5, -0.5, 0.4, 0.5, 1, 0}}, npy.Float64)
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "hmc", "--step", "50", "--leapfrog", "3", "--chains", "4", "--steps", "50", "--warmup", "0", "--starts", "s.npy", "--out", "a.npy")
	want := "flowebm: note: chains 0, 1, 2, 3 (of 4, numbered from 0 as the draws' first axis) never moved from their start: every proposal was rejected (the step, --step 50, is too large for the model there), so those draws are not from the model; give a smaller --step"
	if code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 105 A4: compare printed the grid's held-out log-likelihood beside
// the importance-sampling one where they read alike (-4.171 twice), the
// gap inside the grid's own error, where train printed none.
func TestCompareGridLLNotRepeated(t *testing.T) {
	z, ll := -0.00015, -4.1712
	r := runSummary{metrics: &training.Metrics{GridLogZ: &z, GridHeldOutLL: &ll, Final: training.Eval{Iter: 30}}}
	last := training.Eval{Iter: 30, HeldOutLL: -4.17127, LogZ: metrics.LogZEstimate{LogZ: -8.1e-05, SE: 2e-05, ESS: 0.9}}
	if got := r.gridHeldOutLL(last); got != "" {
		t.Errorf("%q, want none (the same to 3 decimals)", got)
	}
	ll = -4.5
	if got := r.gridHeldOutLL(last); got != "-4.500" {
		t.Errorf("%q, want -4.500", got)
	}
}

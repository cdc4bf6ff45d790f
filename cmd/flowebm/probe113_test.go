package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
)

// Round 113 B1: reproduce --plan left a run trained with other settings
// out as finished (or resumed it), and --report then refused it as
// mismatched. The plan leaves it out as mismatched, with --report's advice.
func TestPlanMarksMismatchedRuns(t *testing.T) {
	out := t.TempDir()
	run := filepath.Join(out, "runs", "two-modes-ula")
	stdout, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "2", "--print-config")
	if code != 0 {
		t.Fatal(stderr)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["checkpoint_every"] = 2
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(path, b, 0o644)
	if _, stderr, code := runCLI("train", "--config", path, "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	plan := filepath.Join(t.TempDir(), "plan.txt")
	stdout, stderr, code = runCLI("reproduce", "--plan", plan, "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula")
	if want := "left out: two-modes-ula (mismatched: " + filepath.Join(run, "config.json") + ": field checkpoint_every is 2, but reproduce trains this run with"; code != 0 || !strings.Contains(stdout, want) || strings.Contains(stdout, "(finished)") {
		t.Errorf("exit %d, %s%s; want %q", code, stdout, stderr, want)
	}
}

// Round 113 A1: where train and compare's summary reject a final IS log
// Z for the grid's (1428.8 standard errors apart, ESS 23%), compare's
// held-out LL figure drew its IS held-out LL unmarked. It leaves that
// evaluation out and says so.
func TestCompareLeavesOutRejectedISLL(t *testing.T) {
	grid := 62.313
	final := training.Eval{Iter: 200, HeldOutLL: -7.714, LogZ: metrics.LogZEstimate{LogZ: 21.569, SE: 0.029, ESS: 0.23}}
	m := &training.Metrics{Iterations: 200, Final: final, GridLogZ: &grid}
	at := isRejectedAt(m)
	if at != 200 {
		t.Fatalf("isRejectedAt: %d, want 200", at)
	}
	evals := []training.Eval{{Iter: 100, HeldOutLL: -9, LogZ: metrics.LogZEstimate{LogZ: 20, SE: 0.03, ESS: 0.3}}, final}
	figs, files, err := plots.CompareFigures([]plots.Named{{Name: "heavy", Evals: evals, ISRejectedAt: at}})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range figs {
		if files[i] != "held-out-ll" {
			continue
		}
		if !strings.Contains(f.Title, "1 final evaluation left out: its log Z is more than 3 standard errors from the grid's") || !math.IsNaN(f.Curves[0].Points[1].Y) {
			t.Errorf("title %q, points %v", f.Title, f.Curves[0].Points)
		}
	}
	close := 21.6 // within 3 SE of the IS estimate: kept
	if isRejectedAt(&training.Metrics{Final: final, GridLogZ: &close}) != 0 {
		t.Error("an IS log Z within 3 SE of the grid's rejected")
	}
}

// Round 113 B2: a seed that diverged before its first checkpoint left its
// folder holding error.txt alone (round 112 B4's record), so the same
// --seeds command, its settings fixed as the message says, was refused
// ("not a run but holds error.txt"). Nothing of such a run is kept: the
// same command starts it again.
func TestSeedDivergedBeforeCheckpointRestarts(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "10", "--print-config")
	if code != 0 {
		t.Fatal(stderr)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["checkpoint_every"] = 50
	cfg["train"].(map[string]any)["ebm_optim"].(map[string]any)["lr"] = 1.0
	path := filepath.Join(dir, "c.json")
	b, _ := json.Marshal(cfg)
	os.WriteFile(path, b, 0o644)
	out := filepath.Join(dir, "T")
	args := []string{"train", "--seeds", "1-2", "--config", path, "--out", out, "--quiet"}
	if _, stderr, code := runCLI(args...); code == 0 || !strings.Contains(stderr, "diverged before its first checkpoint") {
		t.Fatalf("did not diverge before its first checkpoint: %d %s", code, stderr)
	}
	cfg["train"].(map[string]any)["ebm_optim"].(map[string]any)["lr"] = 0.01
	b, _ = json.Marshal(cfg)
	os.WriteFile(path, b, 0o644)
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Errorf("the same --seeds command, the cause fixed: exit %d, %s", code, stderr)
	}
}

// Round 113 B3: a run started by hand (or resumed by hand) before a
// reproduce finished it was recorded as trained by that reproduce alone
// ("reproduce --jobs 1 trained them"). The checkpoint it found is
// compared with the record: the training before is named.
func TestTrainedByNamesEarlierTraining(t *testing.T) {
	out := t.TempDir()
	run := filepath.Join(out, "runs", "two-modes-ula")
	if code, stderr := interruptAtFirstCheckpoint(t, run, "train", "--experiment", "two-modes", "--algorithm", "ula", "--seed", "1", "--iterations", "60", "--quiet", "--out", run); code != 130 {
		t.Fatalf("train not interrupted: %d %s", code, stderr)
	}
	if _, stderr, code := runCLI("reproduce", "--out", out, "--iterations", "60", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "1"); code != 0 {
		t.Fatal(stderr)
	}
	b := string(mustRead(t, filepath.Join(out, "report.md")))
	if want := "but the runs were trained by a plan's lines or by hand, then reproduce --jobs 1"; !strings.Contains(b, want) {
		t.Errorf("report lacks %q:\n%s", want, b)
	}
}

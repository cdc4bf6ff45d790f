package main

import (
	"math"
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
	cfg := printedConfig(t, "--algorithm", "ula", "--iterations", "2")
	cfg["checkpoint_every"] = 2
	path := writeConfig(t, filepath.Join(t.TempDir(), "c.json"), cfg)
	if _, stderr, code := runCLI("train", "--config", path, "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	plan := filepath.Join(t.TempDir(), "plan.txt")
	stdout, stderr, code := runCLI("reproduce", "--plan", plan, "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula")
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
	cfg := printedConfig(t, "--algorithm", "ula", "--iterations", "10")
	cfg["checkpoint_every"] = 50
	cfg["train"].(map[string]any)["ebm_optim"].(map[string]any)["lr"] = 1.0
	path := writeConfig(t, filepath.Join(dir, "c.json"), cfg)
	out := filepath.Join(dir, "T")
	args := []string{"train", "--seeds", "1-2", "--config", path, "--out", out, "--quiet"}
	if _, stderr, code := runCLI(args...); code == 0 || !strings.Contains(stderr, "diverged before its first checkpoint") {
		t.Fatalf("did not diverge before its first checkpoint: %d %s", code, stderr)
	}
	cfg["train"].(map[string]any)["ebm_optim"].(map[string]any)["lr"] = 0.01
	writeConfig(t, path, cfg)
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
	interruptedULARun(t, out, "60")
	if _, stderr, code := runCLI("reproduce", "--out", out, "--iterations", "60", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "1"); code != 0 {
		t.Fatal(stderr)
	}
	b := string(mustRead(t, filepath.Join(out, "report.md")))
	if want := "but the runs were trained by a plan's lines or by hand, then reproduce --jobs 1"; !strings.Contains(b, want) {
		t.Errorf("report lacks %q:\n%s", want, b)
	}
}

// Round 113 A2: train said an unreliable IS log Z "may be far too low and
// the log-likelihood too high" where the grid's log Z (-1.924) was below
// it (-1.604): the direction follows the grid where there is one.
func TestUnreliableISDirection(t *testing.T) {
	if got := unreliableISNote(-1.604, -1.924, true); !strings.Contains(got, "here it is above the grid's, and the log-likelihood it gives below") {
		t.Errorf("IS above the grid: %q", got)
	}
	for _, c := range []struct {
		grid    float64
		hasGrid bool
	}{{-1.0, true}, {math.NaN(), false}} {
		if got := unreliableISNote(-1.604, c.grid, c.hasGrid); !strings.Contains(got, "far too low and the log-likelihood too high") {
			t.Errorf("grid %v (%v): %q", c.grid, c.hasGrid, got)
		}
	}
}

// Round 113 A3, A4, B6: a diverged run was called "unfinished" by sample
// and energy, and compare said nothing of it on the terminal or in its
// figures; compare given a file of a run's checkpoint named no run. Each
// says it now.
func TestDivergedRunSaidEverywhere(t *testing.T) {
	dir := t.TempDir()
	run := divergedRun(t, dir)
	_, stderr, code := runCLI("sample", "--model", run, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"))
	if code != 0 || !strings.Contains(stderr, "the run "+run+" diverged (its error.txt: ") || strings.Contains(stderr, "unfinished") {
		t.Errorf("sample: exit %d, %s", code, stderr)
	}
	c := filepath.Join(dir, "c")
	_, stderr, code = runCLI("compare", run, "--out", c, "--plot-format", "svg")
	if code != 0 || !strings.Contains(stderr, "the run "+run+" diverged (its error.txt)") || !strings.Contains(string(mustRead(t, filepath.Join(c, "held-out-ll.svg"))), "G (diverged)") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("plot", run, "--plot-format", "svg"); code != 0 || !strings.Contains(string(mustRead(t, filepath.Join(run, "density.svg"))), "EBM density after 2 iterations of 20 (the run diverged after") { // the title wraps there
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	weights := filepath.Join(run, "checkpoint", "weights.npz")
	if _, stderr, code := runCLI("compare", weights, "--out", filepath.Join(dir, "c2")); code == 0 || !strings.Contains(stderr, "it is a file of the run "+run+"'s checkpoint: give the run folder, "+run) {
		t.Errorf("compare of a checkpoint's file: exit %d, %s", code, stderr)
	}
}

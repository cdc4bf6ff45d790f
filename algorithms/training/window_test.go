package training

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/io/checkpoint"
)

// Round 109 B1: a window.json edited with its checkpoint's manifest
// written again (chain weights of 0.5 beside intervals [0.306, 0.371])
// was resumed, and a finished run's outputs written again from it, each
// weight outside its own interval. Such a window is refused.
func TestWindowWeightOutsideItsInterval(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 3, dir)
	if err := r.Train(nil); err != nil { // its last evaluation has R-hat and chain weights
		t.Fatal(err)
	}
	editCheckpointJSON(t, filepath.Join(dir, "checkpoint"), "window.json", func(w map[string]any) {
		first := firstChainWeight(t, w)
		hi, _ := first["hi"].(float64)
		first["weight"] = hi + 0.1
	})
	_, err := Resume(dir)
	if err == nil || !strings.Contains(err.Error(), `field "chain_weights", mode 1: weight `) || !strings.Contains(err.Error(), "want a weight in [0, 1] within its interval") {
		t.Errorf("resume: %v", err)
	}
}

// Round 135 B2: a window.json whose chain weight's ESS was edited to -3
// (its manifest written again) was resumed, and metrics.json written with
// it. Refused, the field named.
func TestWindowNegativeESSRefused(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 3, dir)
	if err := r.Train(nil); err != nil {
		t.Fatal(err)
	}
	editCheckpointJSON(t, filepath.Join(dir, "checkpoint"), "window.json", func(w map[string]any) { firstChainWeight(t, w)["ess"] = -3.0 })
	if _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), `field "chain_weights", mode 1`) || !strings.Contains(err.Error(), "ESS -3") {
		t.Errorf("resume: %v", err)
	}
}

// Round 136 B2: the checkpoint's run-config.json edited to iterations -40
// (its manifest written again) had config.json blamed ("is 40, but the
// checkpoint was written with -40") and its copy advised over it, which
// made the run unresumable. The copy is named, with its field's range.
func TestInvalidRunConfigCopyNamed(t *testing.T) {
	dir, _ := checkpointedRun(t, 12, 2)
	path := filepath.Join(dir, "checkpoint", runConfigName)
	editCheckpointJSON(t, filepath.Dir(path), runConfigName, func(c map[string]any) { c["train"].(map[string]any)["iterations"] = -40 })
	_, err := Resume(dir)
	if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "train.iterations -40, want 1..") || strings.Contains(err.Error(), "undo the edit") {
		t.Errorf("resume: %v", err)
	}
}

// Round 136 B1: a checkpoint whose state.json says iteration 400 in a run
// of 12 (its manifest written again) was reported as the run's by
// reproduce --report and compare, while resume refused it: every reader
// passes it over now (LatestCheckpoint), naming the field.
func TestCheckpointIterBeyondRunRefused(t *testing.T) {
	dir, _ := checkpointedRun(t, 12, 2)
	editCheckpointJSON(t, filepath.Join(dir, "checkpoint"), "state.json", func(st map[string]any) { st["iter"] = 400 })
	if _, err := LatestCheckpoint(dir); err == nil || !strings.Contains(err.Error(), `state.json: field "iter" is 400, want 0..12`) {
		t.Errorf("LatestCheckpoint: %v", err)
	}
}

// editCheckpointJSON applies edit to the JSON file name of the checkpoint
// folder ck and writes its manifest again, as a user who edits a
// checkpoint and rehashes it does.
func editCheckpointJSON(t *testing.T, ck, name string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(ck, name)
	var v map[string]any
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &v) != nil {
		t.Fatalf("%v: %s", err, b)
	}
	edit(v)
	if b, err = json.Marshal(v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteManifest(ck); err != nil {
		t.Fatal(err)
	}
}

// firstChainWeight is the first of window.json's chain weights (w).
func firstChainWeight(t *testing.T, w map[string]any) map[string]any {
	t.Helper()
	cw, ok := w["chain_weights"].([]any)
	if !ok || len(cw) == 0 {
		t.Fatalf("no chain weights in %v", w)
	}
	return cw[0].(map[string]any)
}

// Round 137 A2: a finished run's checkpoint/run-config.json edited (seed
// 1 → 2, its manifest written again) had config.json blamed, though
// config.json and metrics.json agree, and the advised cp of the copy over
// it spread the edit into the resumed run's metrics.json. The copy is
// named, with both records that agree, and no cp is advised.
func TestEditedRunConfigCopyOfFinishedRun(t *testing.T) {
	dir, _ := finishedRun(t)
	ck := filepath.Join(dir, "checkpoint")
	editCheckpointJSON(t, ck, runConfigName, func(c map[string]any) { c["seed"] = c["seed"].(float64) + 1 })
	for name, f := range map[string]func() error{
		"resume":           func() error { _, err := Resume(dir); return err },
		"LatestCheckpoint": func() error { _, err := LatestCheckpoint(dir); return err },
	} {
		err := f()
		if err == nil || !strings.Contains(err.Error(), filepath.Join(ck, runConfigName)+`: field "seed"`) || !strings.Contains(err.Error(), "config.json and metrics.json hold") || strings.Contains(err.Error(), "cp ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Round 137 A3: state.json's iteration edited to 2 of 3 (its manifest
// written again) while evals.csv holds iteration 3: sample called the
// model iteration 2's and advised a resume that refused the checkpoint as
// inconsistent. Every reader refuses it as resume does.
func TestEvalsPastStateIterRefused(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 3, dir)
	if err := r.Train(nil); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "checkpoint")
	editCheckpointJSON(t, ck, "state.json", func(st map[string]any) { st["iter"] = 2 })
	want := filepath.Join(ck, "state.json") + `: field "iter" is 2, but ` + filepath.Join(ck, "evals.csv") + " holds an evaluation at iteration 3"
	if _, err := LatestCheckpoint(dir); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("LatestCheckpoint: %v", err)
	}
}

// Round 136 B3: a finished run's checkpoint evals.csv edited in its last
// row (its manifest written again) was carried by train --resume into
// metrics.json and metrics.csv, and compare advised copying it over
// metrics.csv. Where metrics.json and metrics.csv agree with each other,
// the checkpoint is named as the edited one.
func TestCheckpointEvalsOutvotedByOutputs(t *testing.T) {
	dir, _ := finishedRun(t)
	if err := CheckpointEvalsEdited(dir); err != nil {
		t.Fatalf("unedited: %v", err)
	}
	ck := filepath.Join(dir, "checkpoint")
	editLastEvalsRow(t, ck, "held_out_ll", "-0.5")
	want := ck + ": its last evaluation (iteration 3, evals.csv) differs from the one the run's metrics.json and metrics.csv both hold"
	if err := CheckpointEvalsEdited(dir); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckpointEvalsEdited: %v", err)
	}
	if err := CheckEvalsOfRun(dir); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "cp ") {
		t.Errorf("CheckEvalsOfRun: %v", err)
	}
}

// Round 138 B1: an unfinished run's checkpoint/run-config.json edited
// (train.iterations 12 → 6, its manifest written again) had config.json
// blamed and the copy advised over it, which shortened the run. Without
// metrics.json to say which was edited, both are named.
func TestRunConfigEditedEitherWay(t *testing.T) {
	dir, _ := checkpointedRun(t, 12, 2)
	ck := filepath.Join(dir, "checkpoint")
	editCheckpointJSON(t, ck, runConfigName, func(c map[string]any) { c["train"].(map[string]any)["iterations"] = 6 })
	_, err := Resume(dir)
	if err == nil || !strings.Contains(err.Error(), "one of the two was edited") || !strings.Contains(err.Error(), "if config.json was edited, cp ") || !strings.Contains(err.Error(), "if the checkpoint's copy was (its COMPLETE written again), restore the copy from a backup") || strings.Contains(err.Error(), "the checkpoint was written with") {
		t.Errorf("resume: %v", err)
	}
}

// Round 140 B1: an unfinished run's window.json holding what no run
// writes (its COMPLETE written again) was shown by compare and called
// "incomplete: continue it" by reproduce --report, while plot and train
// --resume refused it. Every reader passes it over now.
func TestImpossibleWindowPassedOver(t *testing.T) {
	dir, _ := checkpointedRun(t, 12, 2)
	editCheckpointJSON(t, filepath.Join(dir, "checkpoint"), "window.json", func(w map[string]any) { w["seconds"] = -1.0 })
	if _, err := LatestCheckpoint(dir); err == nil || !strings.Contains(err.Error(), `window.json: field "seconds" is -1`) {
		t.Errorf("LatestCheckpoint: %v", err)
	}
}

// Round 140 B2: an unfinished run's checkpoint evals.csv edited in a
// value (its COMPLETE written again) had metrics.csv blamed and the
// checkpoint's rows advised over it, losing the true values; train
// --resume carried them on. Both ways are named (EvalsDisagreeError).
func TestEvalsValuesDisagree(t *testing.T) {
	dir, _ := checkpointedRun(t, 12, 2)
	ck := filepath.Join(dir, "checkpoint")
	path := filepath.Join(ck, "evals.csv")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.csv"), b, 0o644); err != nil { // as train writes it after each checkpoint
		t.Fatal(err)
	}
	editLastEvalsRow(t, ck, "loss", "12345")
	err = CheckEvalsOfRun(dir)
	if !errors.As(err, new(*EvalsDisagreeError)) || !strings.Contains(err.Error(), "one of the two was edited; if metrics.csv was, cp ") || !strings.Contains(err.Error(), "if the checkpoint's evals.csv was") {
		t.Errorf("CheckEvalsOfRun: %v", err)
	}
}

// Round 141 B1, B2: a finished run of 3 iterations whose config.json and
// checkpoint copy were both edited to 6 (or 2; the copy's COMPLETE written
// again) was taken for a run whose final checkpoint is missing (train
// --resume trained on over its results) or had state.json blamed. The
// run's metrics.json, whose final is the checkpoint's last evaluation,
// outvotes both copies.
func TestConfigOutvotedByResults(t *testing.T) {
	for _, n := range []float64{6, 2} {
		dir := t.TempDir()
		r := smallRun(t, algorithms.FlowMC, 3, dir)
		if err := r.Train(nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteMetrics(filepath.Join(dir, "metrics.json"), r); err != nil {
			t.Fatal(err)
		}
		edited := r.Config
		edited.Train.Iterations = int(n)
		if err := jsonfile.Write(filepath.Join(dir, "config.json"), edited); err != nil {
			t.Fatal(err)
		}
		editCheckpointJSON(t, filepath.Join(dir, "checkpoint"), runConfigName, func(c map[string]any) { c["train"].(map[string]any)["iterations"] = n })
		if _, err := LatestCheckpoint(dir); err == nil || !strings.Contains(err.Error(), "the configuration was edited in both") || strings.Contains(err.Error(), `state.json: field "iter"`) {
			t.Errorf("edited to %v: %v", n, err)
		}
	}
}

// Round 141 B3: window.json's "evals" edited to 99 (its COMPLETE written
// again) was worded as evals.csv's fault, and train --resume advised
// --force, losing the run's iterations. Both files are named, and the
// way on is the checkpoint's backup.
func TestWindowEvalsDisagreeWording(t *testing.T) {
	dir, _ := checkpointedRun(t, 12, 2)
	editCheckpointJSON(t, filepath.Join(dir, "checkpoint"), "window.json", func(w map[string]any) { w["evals"] = 99 })
	_, err := Resume(dir)
	if err == nil || !strings.Contains(err.Error(), `field "evals" of `) || !strings.Contains(err.Error(), "says 99: they disagree") || !strings.Contains(err.Error(), "restored from a backup, the run resumes") || strings.Contains(err.Error(), "with --force on the command line") {
		t.Errorf("resume: %v", err)
	}
}

// finishedRun is a flowMC-EBM run of 3 iterations trained to its end in a
// new folder, with its metrics.json.
func finishedRun(t *testing.T) (string, *Run) {
	t.Helper()
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 3, dir)
	if err := r.Train(nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetrics(filepath.Join(dir, "metrics.json"), r); err != nil {
		t.Fatal(err)
	}
	return dir, r
}

// editLastEvalsRow sets the column col of the last row of the checkpoint
// folder ck's evals.csv to value and writes its manifest again, as a user
// who edits a checkpoint and rehashes it does.
func editLastEvalsRow(t *testing.T, ck, col, value string) {
	t.Helper()
	path := filepath.Join(ck, "evals.csv")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	last := strings.Split(rows[len(rows)-1], ",")
	last[slices.Index(strings.Split(rows[0], ","), col)] = value
	rows[len(rows)-1] = strings.Join(last, ",")
	if err := os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteManifest(ck); err != nil {
		t.Fatal(err)
	}
}

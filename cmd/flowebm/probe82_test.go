package main

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
)

// Round 82 B1: sample --force replaced an existing --checkpoint (an
// interrupted run's) and --flow-out's files, unsaid, where its help named
// --out alone.
func TestSampleForceNamesWhatItReplaces(t *testing.T) {
	dir, ck, args := sampledWithCheckpoint(t)
	_, errOut, code := runCLI(append(args, "--out", filepath.Join(dir, "b.npy"), "--force")...)
	if code != 0 || !strings.Contains(errOut, "flowebm: note: --force replaces --checkpoint "+ck+" (the run it holds can no longer be resumed)") { // b.npy is new: not "besides --out" (round 131 B5)
		t.Errorf("exit %d: %s", code, errOut)
	}
	help, _, _ := runCLI("sample", "--help")
	if !strings.Contains(help, "replace the files of --out, --checkpoint and --flow-out that exist") {
		t.Errorf("--force's help: %s", help)
	}
}

// Round 82 B2: on a full disk, the advice to resume failed the same way;
// it says to free space first.
func TestResumeAdviceOnFullDisk(t *testing.T) {
	f := sampleFlags{checkpoint: "c.npz", model: "m"}
	ck := new(sampleCheckpointState)
	ck.written.Store(true)
	full := &fs.PathError{Op: "write", Path: "c.npz", Err: syscall.ENOSPC}
	if got := f.resumeNote(ck, full); !strings.Contains(got, "free space on the disk it filled, then continue with: flowebm sample --resume c.npz") {
		t.Errorf("full disk: %q", got)
	}
	if got := f.resumeNote(ck, nil); strings.Contains(got, "free space") {
		t.Errorf("a signal: %q", got)
	}
}

// Round 82 B3, B6: compare's table repeated a held-out LL whose log Z
// rested on 1 draw in 4,096 without a word, and showed a run stopped at
// 160 of 400 iterations as finished.
func TestSummaryRowMarksUnreliableAndUnfinished(t *testing.T) {
	ev := training.Eval{Iter: 160, HeldOutLL: -19.2, LogZ: metrics.LogZEstimate{LogZ: 17.9, SE: 1, ESS: 1.0 / 4096}, MaxRHat: 1, MaxRHatClassic: 1, EBMWeightMSE: math.NaN()}
	r := runSummary{Named: plots.Named{Name: "r", Evals: []training.Eval{ev}}, cfg: "two-modes | flowmc | realnvp", total: 400, exactLL: math.NaN()}
	row := r.row()
	for _, want := range []string{"| 160 of 400 |", "-19.200, unreliable: IS ESS 0.024%"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %s, want %q", row, want)
		}
	}
	ev.LogZ.ESS = 0.5
	r.Evals = []training.Eval{ev}
	if row := r.row(); strings.Contains(row, "unreliable") {
		t.Errorf("ESS 50%%: %s", row)
	}
	if got := essPercent(1.0 / 4096); got != "0.024%" {
		t.Errorf("essPercent: %s", got)
	}
}

// Round 82 B5: energy, sample and convert on an interrupted run used its
// checkpoint without saying it is not the run's last.
func TestUnfinishedRunNoted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "400", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	pts := filepath.Join(t.TempDir(), "p.csv")
	if err := os.WriteFile(pts, []byte("0,0\n1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, note := energyNotes(t, dir, pts)
	if code != 0 || !strings.Contains(note, fmt.Sprintf("flowebm: note: the run %s is unfinished: its newest checkpoint, used here, is of iteration ", dir)) || !strings.Contains(note, " of 400") {
		t.Errorf("exit %d: %s", code, note)
	}
	if _, note := energyNotes(t, trainedRun(t), pts); strings.Contains(note, "unfinished") {
		t.Errorf("a finished run: %s", note)
	}
}

// energyNotes runs energy on the model and points, and returns its exit
// status and what it wrote to its stderr (where the notes of a
// run's checkpoint go).
func energyNotes(t *testing.T, model, points string) (int, string) {
	t.Helper()
	_, stderr, code := runCLI("energy", "--model", model, "--points", points)
	return code, stderr
}

// Round 82 B7: compare --force into a folder without an earlier
// comparison deleted a user's file named as one of its figures.
func TestCompareForceKeepsOthersFiles(t *testing.T) {
	run := filepath.Join(t.TempDir(), "rings")
	if _, errOut, code := runCLI("train", "--experiment", "rings", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(errOut)
	}
	out := t.TempDir()
	mine := filepath.Join(out, "ebm-weight-mse.png")
	if err := os.WriteFile(mine, []byte("my figure"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("compare", run, "--out", out, "--force"); code != 0 {
		t.Fatal(errOut)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "my figure" {
		t.Errorf("the user's file: %q, %v", b, err)
	}
}

// Round 82 B8: a --config's missing data file or member was named
// without the file and field.
func TestConfigDataFieldsNamed(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ cfg, want string }{
		{`{"data": {"file": "nope.npy"}}`, `: data.file ` + filepath.Join(dir, "nope.npy") + `: no such file`},
		{`{"data": {"file": "d.csv", "modes": "nope.npy"}}`, `data.modes`},
	} {
		writeFile(t, dir, "d.csv", waveCSV(300))
		cfg := writeFile(t, dir, "c.json", c.cfg)
		if _, errOut, code := runCLI("train", "--config", cfg, "--iterations", "2", "--out", filepath.Join(dir, "r")); code != 2 || !strings.Contains(errOut, "--config "+cfg) || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d: %s", c.cfg, code, errOut)
		}
	}
}

// sampledWithCheckpoint samples a trained run's model into DIR/a.npy with
// --checkpoint DIR/c.npz, and returns DIR, the checkpoint and the sample
// command without its --out.
func sampledWithCheckpoint(t *testing.T) (dir, ck string, args []string) {
	t.Helper()
	run := trainedRun(t)
	dir = t.TempDir()
	ck = filepath.Join(dir, "c.npz")
	args = []string{"sample", "--model", run, "--chains", "4", "--steps", "4", "--checkpoint", ck}
	if _, errOut, code := runCLI(append(args, "--out", filepath.Join(dir, "a.npy"))...); code != 0 {
		t.Fatal(errOut)
	}
	return dir, ck, args
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// imageRun trains a 2-iteration ula run on (300, 3, 4, 4) data into
// dir/name (point_shape [3 4 4]).
func imageRun(t *testing.T, dir, name string) string {
	t.Helper()
	run := filepath.Join(dir, name)
	if _, stderr, code := runCLI("train", "--data", normalArray(t, filepath.Join(dir, name+"-data.npy"), 1, 300, 3, 4, 4), "--algorithm", "ula", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	return run
}

// Round 123 A1, B5: a run of point_shape [3 4 4] given points of another
// size was told "(n, C, H, W) or any (n, …) whose trailing sizes multiply
// to 48", which it then refused; a single (3, 4, 4) point was read as 3
// points of [4 4] without a word of the leading axis. Round 123 A6:
// (n, 1, 48), flat rows with an axis of size 1, were refused.
func TestWrongSizeNamesTrainedShape(t *testing.T) {
	dir := t.TempDir()
	run := imageRun(t, dir, "run")
	five := normalArray(t, filepath.Join(dir, "p15.npy"), 2, 1, 5, 3, 4, 4)
	_, stderr, code := runCLI("energy", "--model", run, "--points", five)
	if code == 0 || !strings.Contains(stderr, "takes points of shape [3 4 4]: an array of shape (n, 3, 4, 4), or rows (n, 48)") || strings.Contains(stderr, "any (n, …)") {
		t.Errorf("(1, 5, 3, 4, 4): exit %d, %s", code, stderr)
	}
	one := normalArray(t, filepath.Join(dir, "one.npy"), 3, 3, 4, 4)
	if _, stderr, code := runCLI("energy", "--model", run, "--points", one); code == 0 || !strings.Contains(stderr, "x[None]") {
		t.Errorf("one point without its axis: exit %d, %s", code, stderr)
	}
	flat := normalArray(t, filepath.Join(dir, "f.npy"), 4, 2, 1, 48)
	rows := filepath.Join(dir, "rows.npy")
	a, _ := npy.ReadFile(flat)
	if err := npy.WriteFile(rows, &npy.Array{Shape: []int{2, 48}, Data: a.Data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if x, y := energiesOf(t, run, flat), energiesOf(t, run, rows); !closeTo(x, y, 0) {
		t.Errorf("(n, 1, 48): %v, (n, 48): %v", x, y)
	}
}

// Round 123 A2, A3: a 1-D point in an .npz member was refused (in an .npy
// taken); its gradient came back (1, d), not in the points' shape.
func TestVectorPointsFromNPZAndGradShape(t *testing.T) {
	dir := t.TempDir()
	run := imageRun(t, dir, "run")
	v := normalArray(t, filepath.Join(dir, "v.npy"), 5, 48)
	a, _ := npy.ReadFile(v)
	archive := filepath.Join(dir, "v.npz")
	if err := npz.WriteFile(archive, map[string]*npy.Array{"p": a}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	grad := filepath.Join(dir, "g.npy")
	if _, stderr, code := runCLI("energy", "--model", run, "--points", archive, "--key", "p", "--out", filepath.Join(dir, "e.npy"), "--grad", grad); code != 0 {
		t.Fatalf("a 1-D .npz member: exit %d, %s", code, stderr)
	}
	if g, err := npy.ReadFile(grad); err != nil || !slices.Equal(g.Shape, []int{48}) {
		t.Errorf("gradient of a (48,) point: %v, shape %v", err, g)
	}
	if _, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--chains", "2", "--steps", "4", "--warmup", "0", "--starts", archive, "--out", filepath.Join(dir, "s.npy")); code != 0 {
		t.Errorf("sample --starts of a 1-D .npz member: exit %d, %s", code, stderr)
	}
}

// Round 123 A4: a checkpoint of rows (trained on (n, 48)) took points
// (n, 4, 4, 3) in silence, where an ONNX model of rows refuses them
// naming both flattening orders (and did so only for H > 4).
func TestRowsCheckpointRefusesChannelsLast(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "rows")
	if _, stderr, code := runCLI("train", "--data", normalArray(t, filepath.Join(dir, "d.npy"), 1, 300, 48), "--algorithm", "ula", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	hwc := normalArray(t, filepath.Join(dir, "hwc.npy"), 2, 3, 4, 4, 3)
	_, stderr, code := runCLI("energy", "--model", run, "--points", hwc)
	if code == 0 || !strings.Contains(stderr, "as they are (x.reshape(len(x), -1))") || !strings.Contains(stderr, "x.transpose(0, 3, 1, 2).reshape(len(x), -1)") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// lostFinalRun makes, in dir, a run interrupted at its first
// checkpoint (early) and a copy of it trained to its end (run, 200
// iterations) whose final checkpoint is then replaced by early's, as
// checkpoint.old/.
func lostFinalRun(t *testing.T, dir string) (run, early string) {
	t.Helper()
	early = filepath.Join(dir, "early")
	if code, stderr := interruptAtFirstCheckpoint(t, early, "train", "--iterations", "200", "--quiet", "--out", early); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	run = filepath.Join(dir, "run")
	if out, err := exec.Command("cp", "-a", early, run).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	os.RemoveAll(filepath.Join(run, "checkpoint"))
	if out, err := exec.Command("cp", "-a", filepath.Join(early, "checkpoint"), filepath.Join(run, "checkpoint.old")).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	return run, early
}

// Round 123 B4: a finished run whose final checkpoint was lost, an older
// checkpoint of it left (checkpoint.old/), was called unfinished by
// energy, sample, convert and plot; plot replaced its figures with those
// of the older checkpoint (cut at its iteration), and compare blamed
// metrics.json ("edited, or another run's"). The run is said to have
// finished with its final checkpoint missing, plot redraws its
// evaluations' figures from metrics.csv only, compare checks metrics.json
// against metrics.csv, and train --resume writes the final checkpoint
// again.
func TestFinalCheckpointLostSaid(t *testing.T) {
	dir := t.TempDir()
	run, early := lostFinalRun(t, dir)
	figure := mustRead(t, filepath.Join(run, "acceptance.png"))
	const said = "finished (its metrics.json), but its final checkpoint is missing"
	if code, note := energyNotes(t, run, normalArray(t, filepath.Join(dir, "p.npy"), 1, 3, 2)); code != 0 || !strings.Contains(note, said) || strings.Contains(note, "unfinished") {
		t.Errorf("energy: exit %d, %s", code, note)
	}
	if _, stderr, code := runCLI("plot", run); code != 0 || !strings.Contains(stderr, said) {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	if again := mustRead(t, filepath.Join(run, "acceptance.png")); !bytes.Equal(again, figure) {
		t.Errorf("plot replaced the finished run's acceptance.png (%d bytes, was %d)", len(again), len(figure))
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "cmp")); code != 0 || strings.Contains(stderr, "edited, or another run's") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !exists(filepath.Join(run, "checkpoint", "COMPLETE")) {
		t.Errorf("train --resume: exit %d, %s", code, stderr)
	}

	// Round 124 B4: the older checkpoint copied in as checkpoint.new/ was
	// used as "newer"; beside the final one as checkpoint.old/, train
	// --resume removed the final one. Folders out of order are refused,
	// both kept.
	if out, err := exec.Command("cp", "-a", filepath.Join(early, "checkpoint"), filepath.Join(run, "checkpoint.new")).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	const order = "its checkpoint folders are out of order: checkpoint/ is of iteration 200, checkpoint.new/ of iteration"
	if code, note := energyNotes(t, run, filepath.Join(dir, "p.npy")); code == 0 || !strings.Contains(note, order) {
		t.Errorf("energy, an older checkpoint.new/: exit %d, %s", code, note)
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code == 0 || !strings.Contains(stderr, order) || !exists(filepath.Join(run, "checkpoint", "COMPLETE")) || !exists(filepath.Join(run, "checkpoint.new", "COMPLETE")) {
		t.Errorf("train --resume, an older checkpoint.new/: exit %d, %s", code, stderr)
	}
}

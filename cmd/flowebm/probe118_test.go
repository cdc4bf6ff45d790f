package main

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/npy"
)

// Round 118 B1, B4: convert's note on a --what ebm export said "flowebm
// energy and sample take it with --base σ", and energy had no --base; and
// energy refused (n, 1, 28, 28) images for an ONNX model of rows of 784,
// which it flattens for a checkpoint. energy takes --base, giving the
// checkpoint's energies, and flattens the images.
func TestEnergyBaseAndImageRows(t *testing.T) {
	dir := t.TempDir()
	run := tinyImageRun(t, dir)
	ebm := filepath.Join(dir, "ebm.onnx")
	stdout, stderr, code := runCLI("convert", run, ebm, "--what", "ebm")
	_, sigma, ok := strings.Cut(stdout, "take it with --base ")
	sigma, _, _ = strings.Cut(sigma, " ")
	if code != 0 || !ok {
		t.Fatalf("convert: exit %d, %s%s", code, stdout, stderr)
	}
	images := filepath.Join(dir, "x.npy")
	data := make([]float64, 2*784)
	for i := range data {
		data[i] = float64(i%7)/3 - 1
	}
	if err := npy.WriteFile(images, &npy.Array{Shape: []int{2, 1, 28, 28}, Data: data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	want, stderr, code := runCLI("energy", "--model", run, "--points", images)
	if code != 0 {
		t.Fatal(stderr)
	}
	got, stderr, code := runCLI("energy", "--model", ebm, "--base", sigma, "--points", images)
	if code != 0 || got != want {
		t.Errorf("energy --base %s of the export: exit %d, %q %s; the checkpoint's %q", sigma, code, got, stderr, want)
	}
	if _, stderr, code := runCLI("energy", "--model", run, "--base", "2", "--points", images); code == 0 || !strings.Contains(stderr, "--base applies to an ONNX model") {
		t.Errorf("--base with a checkpoint: exit %d, %s", code, stderr)
	}
}

// Round 118 B2: compare --force deleted a user's held-out-ll.pdf beside a
// comparison drawn in PNG (every file named like a figure, in any format,
// was removed where a summary.md stood). Only the figures compare recorded
// drawing there are removed, and named.
func TestCompareForceKeepsUsersFiles(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	out := filepath.Join(dir, "o")
	if _, stderr, code := runCLI("compare", run, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	mine := filepath.Join(out, "held-out-ll.pdf")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("compare", run, "--out", out, "--force", "--plot-format", "svg"); code != 0 || !exists(mine) || !strings.Contains(stderr, "--force removed from "+out+" the 4 figures of an earlier compare that this one does not draw") {
		t.Errorf("--force: exit %d, %s; %s kept: %v", code, stderr, mine, exists(mine))
	}
	if exists(filepath.Join(out, "held-out-ll.png")) || !exists(filepath.Join(out, "held-out-ll.svg")) {
		t.Error("the earlier PNG set not replaced by the SVG one")
	}
}

// Round 118 A2, A3: MALA unmixed on a 1-D bimodal energy was told to use
// --sampler flowmc, which refuses d = 1; on a Gaussian of scales 0.01 to
// 100 it was told to sample longer (10 times longer: R-hat 5.2 to 3.0).
// The advice names a flow of one's own for d = 1, and the scales apart.
func TestNotMixedAdviceForShapes(t *testing.T) {
	one := checkpoint.Models{EBM: &graph.EBM{Net: dimNet{d: 1}}}
	if got := flowmcAdvice(one); !strings.Contains(got, "a flow of your own (--flow; flowmc's own RealNVP needs d ≥ 2)") {
		t.Errorf("d = 1: %q", got)
	}
	draws := make([]float64, 2*400)
	for i := range 400 {
		draws[2*i], draws[2*i+1] = 0.01*math.Sin(float64(i)), 5*math.Cos(float64(i)*0.37)
	}
	if got := scalesNote(draws, 2, false); !strings.Contains(got, "the draws' scales differ by ×") || !strings.Contains(got, "helps more than sampling longer") {
		t.Errorf("scales apart: %q", got)
	}
	for i := range draws {
		draws[i] = math.Sin(float64(i) * 0.7)
	}
	if got := scalesNote(draws, 2, false); got != "" {
		t.Errorf("scales alike: %q", got)
	}
}

// Round 118 A1: ULA's draws are biased by its step (sd 1.08 for 1.00 at
// --step 0.2, R-hat 1.006), and nothing said so. sample notes it.
func TestULABiasNoted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "u.npy")
	stdout, stderr, code := runCLI("sample", "--model", "../../io/onnx/testdata/torch/toy_f64.onnx", "--base", "0.5", "--sampler", "ula", "--step", "0.01", "--chains", "4", "--steps", "50", "--out", out)
	if code != 0 || !strings.Contains(stdout, "note: ULA's draws are biased by its step however long it runs, and R-hat cannot show it") {
		t.Errorf("exit %d, %s%s", code, stdout, stderr)
	}
}

// dimNet is an energy network of which only the dimension is asked.
type dimNet struct {
	graph.EnergyNet
	d int
}

func (n dimNet) Dim() int { return n.d }

// Round 118 B3: a user's own copy of a run, left read-only by cp -r, was
// refused by plot with "give a folder of your own"; copying it again gave
// the same. The refusal says the folder is the user's and how to make it
// writable.
func TestReadOnlyOwnFolderSaysChmod(t *testing.T) {
	dir := openTempDir(t)
	run := finishedULARun(t, dir, "run", "1")
	if err := filepath.WalkDir(run, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if os.Geteuid() == 0 { // the copy is nobody's, the user the child runs as
			if err := os.Lchown(p, 65534, 65534); err != nil {
				return err
			}
		}
		return os.Chmod(p, 0o555)
	}); err != nil {
		t.Fatal(err)
	}
	defer filepath.WalkDir(run, func(p string, _ fs.DirEntry, _ error) error { return os.Chmod(p, 0o755) })
	// Its lock kept, read-only too (round 119 B4: chmod u+rw of the lock
	// alone was advised, then its figures were refused unexplained).
	stderr, err := otherUser(t, dir, "plot", run)
	if want := "the lock and the folder are this user's but not writable: make them writable with chmod -R u+w " + run; err == nil || !strings.Contains(stderr, want) {
		t.Errorf("lock kept: %v, %q; want %q", err, stderr, want)
	}
	os.Remove(filepath.Join(run, ".lock"))
	stderr, err = otherUser(t, dir, "plot", run)
	if want := "the folder is this user's but not writable (mode 0555): make it writable with chmod -R u+w " + run; err == nil || !strings.Contains(stderr, want) {
		t.Errorf("%v, %q; want %q", err, stderr, want)
	}
}

// Round 118 B5: diagnose --plots into a folder this user may not write
// computed and printed the whole table, then failed at the folder's lock.
// It is refused before the work, as compare's --out is.
func TestPlotsFolderNotWritableRefusedFirst(t *testing.T) {
	dir := openTempDir(t)
	draws := normalDraws(t, filepath.Join(dir, "d.npy"), 4, 50, 2)
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	stderr, err := otherUser(t, dir, "diagnose", draws, "--plots", ro)
	if want := "--plots " + ro + ": this user may not read, write or enter " + ro; err == nil || !strings.Contains(stderr, want) {
		t.Errorf("%v, %q; want %q", err, stderr, want)
	}
}

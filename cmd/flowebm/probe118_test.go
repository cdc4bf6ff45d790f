package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

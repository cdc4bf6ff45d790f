package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Session 33 (left from session 32): sample checked its --out folder and
// then placed the draws by path, so a folder swapped in between the two
// got them. They are placed through the folder checked.
func TestSampleOutPlacedInTheFolderChecked(t *testing.T) {
	inTempDir(t)
	model := trainedRun(t)
	swapOutFolderAt(t, "anchor-checked")
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "0", "--out", "E/o.npy"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if exists(filepath.Join("E", "o.npy")) || !exists(filepath.Join("E_away", "o.npy")) {
		t.Error("the draws were placed in the folder swapped in after the check")
	}
}

// Session 33: diagnose read a tab-separated file's header as one column
// name with control characters, without saying the file uses tabs.
func TestDiagnoseTabSeparatedSaysSo(t *testing.T) {
	inTempDir(t)
	os.WriteFile("tab.csv", []byte("chain\tdraw\tmu\n1\t1\t0.5\n"), 0o644)
	wantErr(t, "this header holds tabs: write the file with commas", "diagnose", "tab.csv")
}

// Session 33 (left from session 32): sample --resume LINK.npz replaced
// the link with a file at its next checkpoint and left the file it led
// to at the old state. The file the link leads to is continued.
func TestSampleResumeThroughALink(t *testing.T) {
	dir := t.TempDir()
	mala := filepath.Join(dir, "mala.npz")
	args := []string{"sample", "--model", "../../io/onnx/testdata/flows/bimodal_energy.onnx", "--chains", "4", "--out", filepath.Join(dir, "never.npy"),
		"--checkpoint", mala, "--sampler", "mala", "--warmup", "0", "--steps", "40", "--checkpoint-every", "10"}
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", args...); code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	before, _ := os.ReadFile(mala)
	link := filepath.Join(dir, "link.npz")
	os.Symlink(mala, link)
	if _, stderr, code := runCLI("sample", "--resume", link, "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.npz is no longer a link: %v", err)
	}
	if after, _ := os.ReadFile(mala); bytes.Equal(after, before) {
		t.Error("the checkpoint the link leads to was not continued")
	}
}

// Session 33: an ONNX energy whose outputs the load checks could compute
// at none of their own points (a table on 20..29) loaded unchecked, with
// a note, whether or not it mixes the points of a batch. energy checks
// it at the points it is given: the one that mixes them is refused, the
// other runs without the note.
func TestEnergyCheckedAtItsPoints(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(33, 2))
	x := make([]float64, 50)
	for i := range x {
		x[i] = 20 + 9.99*rng.Float64()
	}
	pts := filepath.Join(dir, "p.npy")
	if err := npy.WriteFile(pts, &npy.Array{Shape: []int{50, 1}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned")
	_, stderr, code := runCLI("energy", "--model", filepath.Join(pinned, "table20_cpl_dyn.onnx"), "--points", pts, "--out", filepath.Join(dir, "c.npy"))
	if code != 2 || !strings.Contains(stderr, "depends on the other points of its batch") || !strings.Contains(stderr, "found at the points of --points "+pts) {
		t.Errorf("coupled table: exit %d, %s", code, stderr)
	}
	_, stderr, code = runCLI("energy", "--model", filepath.Join(pinned, "table20_dyn.onnx"), "--points", pts, "--out", filepath.Join(dir, "e.npy"))
	if code != 0 || strings.Contains(stderr, "note:") {
		t.Errorf("table: exit %d, %s", code, stderr)
	}
}

// Probe 54 A2: ULA on an energy defined on x > −2 only (its gradient is
// finite beyond) wrote draws where the energy is NaN, at exit 0. It
// stops, writes nothing and says why; MALA rejects those steps and runs.
func TestULAStopsOutsideTheDomain(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "domain_dyn.onnx")
	out := filepath.Join(dir, "u.npy")
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "ula", "--chains", "16", "--steps", "2000", "--warmup", "300", "--out", out)
	if code != 2 || !strings.Contains(stderr, "stepped to a point where the energy is NaN, outside the model's domain") || strings.Contains(stderr, "--resume") || exists(out) {
		t.Errorf("ula: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", model, "--sampler", "mala", "--chains", "16", "--steps", "500", "--warmup", "100", "--out", filepath.Join(dir, "m.npy")); code != 0 {
		t.Errorf("mala: exit %d, %s", code, stderr)
	}
}

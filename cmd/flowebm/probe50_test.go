package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Probe 48 N5c: train, compare and reproduce said "cannot make the folder
// ro/c: mkdir ro/c: permission denied" without naming the option that
// gave the folder.
func TestUnmakeableOutFolderNamesTheFlag(t *testing.T) {
	dir := openTempDir(t)
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Mkdir(filepath.Join(dir, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"train", "--iterations", "2", "--quiet", "--out", "ro/c"},
		{"train", "--iterations", "2", "--quiet", "--seeds", "2", "--out", "ro/c"},
		{"compare", "run", "--out", "ro/c"},
		{"reproduce", "--quick", "--experiments", "two-modes", "--out", "ro/c"},
	} {
		stderr, err := otherUser(t, dir, args...)
		if err == nil || !strings.Contains(stderr, "--out ro/c: cannot make this folder: mkdir ro/c: permission denied") {
			t.Errorf("%s: %v, %q; want the refusal naming --out", strings.Join(args, " "), err, stderr)
		}
	}
}

// tiledModel is an ONNX energy Σⱼ xⱼ² (d = 2) whose graph holds
// x.repeat(1, 20000) (320 KB a point): it can be built on at most 838
// points at once (io/onnx/crosscheck/make_pinned.py).
var tiledModel = filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "tiled_dyn.onnx")

// Probe 50: energy ran ONNX graphs on batches of 4,096 points whatever
// they held per point, and a conv EBM's first convolution was refused
// from 669 points on; the batches are now sized to the graph.
func TestEnergyBatchesFitTheGraph(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(50, 1))
	x := make([]float64, 900*2)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	pts, out := filepath.Join(dir, "p.npy"), filepath.Join(dir, "e.npy")
	if err := npy.WriteFile(pts, &npy.Array{Shape: []int{900, 2}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("energy", "--model", tiledModel, "--points", pts, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	e, err := npy.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 900 {
		want := x[2*i]*x[2*i] + x[2*i+1]*x[2*i+1]
		if math.Abs(e.Data[i]-want) > 1e-12*(1+want) {
			t.Fatalf("point %d: energy %v, want %v", i+1, e.Data[i], want)
		}
	}
}

// Probe 50: sample counted an ONNX graph's values as none (a conv EBM
// died out of memory at 1,000 chains) and ran chains past the batch its
// graph can be built at; both are refused before the work, naming what
// fits.
func TestSampleChainsFitTheGraph(t *testing.T) {
	f := memSampleFlags(tiledModel, 900)
	if _, err := f.models(); err == nil || !strings.Contains(err.Error(), "--chains 900: the model's graph can be built on at most 838 points at once") {
		t.Errorf("--chains 900: %v", err)
	}
	f.chains = 800
	m, err := f.models()
	if err != nil {
		t.Fatal(err)
	}
	if _, what := f.workMemory(m); !strings.Contains(strings.Join(what, " + "), "--chains 800 × 1.92 MB (the EBM's graph with ∇ₓE)") {
		t.Errorf("the estimate counts %q; want the graph's 1.92 MB a chain (Tile and Pow, 320 KB each, times 3)", what)
	}
}

// Probe 50: a flow given as flags (--flow, --flow-density, here swapped)
// and refused as read was named by its configuration field,
// model.flow_onnx.
func TestFlowFlagsNamedInRefusal(t *testing.T) {
	f := "../../io/onnx/testdata/flows/realnvp2_f64"
	_, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--flow", f+"_density.onnx", "--flow-density", f+"_sample.onnx", "--out", filepath.Join(t.TempDir(), "run"))
	if code == 0 || !strings.Contains(stderr, "--flow "+f+"_density.onnx, --flow-density "+f+"_sample.onnx: ") || strings.Contains(stderr, "model.flow_onnx") {
		t.Errorf("exit %d: %s; want the refusal naming the flags", code, stderr)
	}
}

// Probe 50 B2: sample wrote each --checkpoint by path; its folder swapped
// for another's after the first checkpoint, the next one replaced that
// other run's checkpoint at exit 0. It stops, says where its own folder
// is now, and leaves the other folder as it was.
func TestSampleCheckpointStaysInItsFolder(t *testing.T) {
	_, _, dir := inTempDir(t)
	model := trainedRun(t)
	os.Mkdir("D", 0o755)
	os.Mkdir("D2", 0o755)
	os.WriteFile(filepath.Join("D2", "ck.npz"), []byte("another run's checkpoint"), 0o644)
	defer func() { testHook = nil }()
	swapped := false
	testHook = func(p string) {
		if p == "sample-checkpoint" && !swapped {
			swapped = true
			os.Rename("D", "D_away")
			os.Rename("D2", "D")
		}
	}
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "40", "--warmup", "0", "--checkpoint", "D/ck.npz", "--checkpoint-every", "10", "--out", "s.npy")
	want := "what it wrote last is in the folder it locked, now " + filepath.Join(dir, "D_away") + " (continue with: flowebm sample --resume " + filepath.Join(dir, "D_away", "ck.npz") + ")"
	if code == 0 || !strings.Contains(strings.ToLower(stderr), strings.ToLower(want)) || strings.Contains(stderr, "the checkpoint D/ck.npz stands") {
		t.Errorf("exit %d: %s; want %q", code, stderr, want)
	}
	if b, err := os.ReadFile(filepath.Join("D", "ck.npz")); err != nil || string(b) != "another run's checkpoint" {
		t.Errorf("the other folder's checkpoint: %q, %v", b, err)
	}
	if exists(filepath.Join("D", ".ck.npz.lock")) || exists(filepath.Join("D_away", ".ck.npz.lock")) {
		t.Error("a lock file was left")
	}
	if _, _, code := runCLI("sample", "--resume", filepath.Join("D_away", "ck.npz")); code != 0 {
		t.Error("the advice does not work")
	}
}

// Probe 50 B3: plot drew by path; the run folder swapped for another run
// while the checkpoint was read, that other run's figures were replaced
// at exit 0. It draws through the folder it locked, or stops.
func TestPlotDrawsInTheFolderItLocked(t *testing.T) {
	inTempDir(t)
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", "P"); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("train", "--iterations", "2", "--seed", "2", "--quiet", "--out", "V"); code != 0 {
		t.Fatal(stderr)
	}
	before := folderState(t, "V")
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "plot-read" {
			testHook = nil
			os.Rename("P", "P_away")
			os.Rename("V", "P")
		}
	}
	_, stderr, code := runCLI("plot", "P")
	os.Rename("P", "V")
	if folderState(t, "V") != before {
		t.Errorf("the other run's folder changed (plot exit %d: %s)", code, stderr)
	}
}

// Probe 50 B4: a run folder deleted while it trained was advised to be
// continued "in the folder it locked, wherever that is now".
func TestDeletedRunFolderSaysSo(t *testing.T) {
	inTempDir(t)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "train-started" {
			os.RemoveAll("B")
		}
	}
	_, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", "B")
	if code == 0 || !strings.Contains(stderr, "the run folder B was deleted while it trained") || strings.Contains(stderr, "wherever that is now") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 50 B5: another user's stale lock (root's, after a sudo) in this
// user's own folder: "give a folder of your own". It says whose lock it
// is, that no process holds it, and to remove it.
func TestForeignStaleLockSaysSo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to leave a lock of another user's")
	}
	dir := openTempDir(t)
	n := filepath.Join(dir, "N")
	if err := os.Mkdir(n, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(n, 65534, 65534)
	os.WriteFile(filepath.Join(n, ".lock"), nil, 0o644) // root's, held by no process
	stderr, err := otherUser(t, dir, "train", "--iterations", "2", "--quiet", "--out", "N")
	if err == nil || !strings.Contains(stderr, "the lock is user 0's, and no process holds it") || !strings.Contains(stderr, "remove it (rm N/.lock)") {
		t.Errorf("%v: %s", err, stderr)
	}
}

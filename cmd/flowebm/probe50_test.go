package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/layers"
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
		want := "--out ro/c: cannot make this folder: mkdir ro/c: permission denied"
		if args[0] == "compare" { // refused before the work since round 118 B5
			want = "--out ro/c: this user may not read, write or enter ro (permission denied)"
		}
		if err == nil || !strings.Contains(stderr, want) {
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
	if _, what := f.workMemory(m); !strings.Contains(strings.Join(what, " + "), "--chains 800 × 2.56 MB (the EBM's graph with ∇ₓE)") {
		t.Errorf("the estimate counts %q; want the graph's 2.56 MB a chain (Tile and Pow, 320 KB each, times 4)", what)
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
	// --out s.npy is elsewhere: no --out NEW.npy in the advice (probe 53
	// adds it where --out was in the folder moved).
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

// Probe 51 B2, B4: the lock's identity was read by path after the lock
// was taken: a link re-pointed between the two made train --resume L
// train another run (V) to its end without its lock, at exit 0. The
// identity is the locked file's own; the stop names the folder locked,
// as it was resolved then.
func TestResumeLinkRepointedAfterTheLock(t *testing.T) {
	_, _, dir := inTempDir(t)
	for _, r := range []string{"A", "V"} { // finished, samples.npy lost: --resume writes it
		if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", r); code != 0 {
			t.Fatal(stderr)
		}
		os.Remove(filepath.Join(r, "samples.npy"))
	}
	os.Symlink("A", "L")
	before := folderState(t, "V")
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "lock-held" {
			testHook = nil
			os.Remove("L")
			os.Symlink("V", "L")
		}
	}
	_, stderr, code := runCLI("train", "--resume", "L", "--quiet")
	if folderState(t, "V") != before {
		t.Errorf("V changed (exit %d: %s)", code, stderr)
	}
	if code == 0 || !strings.Contains(stderr, "("+filepath.Join(dir, "A")+")") {
		t.Errorf("exit %d: %s; want the stop naming %s", code, stderr, filepath.Join(dir, "A"))
	}
}

// Probe 51 B6: a run folder deleted and made again at its path was
// said to have lost its lock alone, and --resume of the new folder was
// advised.
func TestRunFolderDeletedAndMadeAgain(t *testing.T) {
	inTempDir(t)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "train-started" {
			testHook = nil
			os.RemoveAll("B")
			os.Mkdir("B", 0o755)
		}
	}
	_, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", "B")
	if code == 0 || !strings.Contains(stderr, "the run folder B was deleted while it trained") || strings.Contains(stderr, "--resume") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 51 B5: a run folder still at its path whose lock can no longer
// be read as the one locked (permissions changed, a folder mounted over
// it) was said to be "moved", with --resume of the same path.
func TestFolderStillThereMessage(t *testing.T) {
	e := &folderChangedError{dir: "N", at: "/x/N", now: "/x/N", here: "/x/N"}
	if msg := e.Error(); !strings.Contains(msg, "the run folder N is still at its path") || strings.Contains(msg, "moved or replaced") {
		t.Errorf("%s", msg)
	}
}

// Probe 51 B7: sample's checkpoint folder moved before its first
// checkpoint: --resume was advised of a checkpoint never written.
func TestSampleMovedBeforeItsFirstCheckpoint(t *testing.T) {
	inTempDir(t)
	model := trainedRun(t)
	os.Mkdir("D", 0o755)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "sample-started" {
			testHook = nil
			os.Rename("D", "D_away")
		}
	}
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "40", "--warmup", "0", "--checkpoint", "D/ck.npz", "--checkpoint-every", "10", "--out", "s.npy")
	if code == 0 || !strings.Contains(stderr, "which holds no checkpoint yet: start the command again") || strings.Contains(stderr, "--resume") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 51 B1: where /proc is not mounted (a chroot, a sandbox), the
// locked folder's /proc/self/fd/N named an ordinary folder: train made
// it, wrote its run there at exit 0 and left the run folder empty. The
// writes go by path there, just after the check.
func TestTrainWithoutProc(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and unshare, to hide /proc")
	}
	dir := t.TempDir()
	script := `mount -t tmpfs tmpfs /proc && exec "$0" -test.run='^TestOutputsChild$'`
	cmd := exec.Command(unshare, "-m", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), "FLOWEBM_CHILD_ARGS="+strings.Join([]string{"train", "--iterations", "4", "--quiet", "--out", filepath.Join(dir, "A")}, "\x1f"))
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "mount") {
		t.Skipf("cannot hide /proc here: %s", out)
	}
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, f := range []string{"samples.npy", "metrics.json", "config.json", filepath.Join("checkpoint", "weights.npz")} {
		if !exists(filepath.Join(dir, "A", f)) {
			t.Errorf("A/%s was not written", f)
		}
	}
}

// Probe 51 A2: the Go heap grew to twice its live size before a
// collection, and sample, at a number of chains whose live memory fit
// its estimate, died with a fatal "out of memory" under ulimit -v. The
// commands set the runtime's soft memory limit (sysmem.GCLimit) unless
// GOMEMLIMIT gives one.
func TestGCLimitSet(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT set")
	}
	runCLI("--version")
	if got := debug.SetMemoryLimit(-1); got == math.MaxInt64 {
		t.Errorf("no soft memory limit set")
	}
}

// Probe 51 B9: train --force over a finished run, killed while it
// cleared the folder, left it without density.png, and --resume said it
// had finished and written its outputs: samples.npy, the marker of a
// finished run, is removed first, and the clear still removes the rest.
func TestForceClearRemovesTheMarkerFirst(t *testing.T) {
	if order := clearOrder(); order[0] != "samples.npy" {
		t.Errorf("clearRun removes %s first, want samples.npy", order[0])
	}
	dir := filepath.Join(t.TempDir(), "C")
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", dir); code != 0 {
		t.Fatal(stderr)
	}
	if err := clearRun(dir); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 || left[0].Name() != ".lock" {
		t.Errorf("left after the clear: %v", left)
	}
}

// Probe 51 A5: diagnose's CSV reader gave no separator hint for a ';'
// file, and called a header alone "no header and draws".
func TestDiagnoseCSVMessages(t *testing.T) {
	inTempDir(t)
	os.WriteFile("semi.csv", []byte("chain;draw;mu\n1;1;0.5\n"), 0o644)
	os.WriteFile("head.csv", []byte("chain,draw,mu\n"), 0o644)
	wantErr(t, `the columns are separated by commas, and this field holds ";"`, "diagnose", "semi.csv")
	wantErr(t, "head.csv: a header and no draws", "diagnose", "head.csv")
}

// Probe 51 B3: a train process stopped because its run folder was
// swapped for another was recorded by reproduce in an error.txt written
// by path, into that other folder, replacing its own. None is written
// where the train process found its folder changed.
func TestReproduceWritesNoErrorIntoAChangedFolder(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(t.TempDir(), "train")
	line := "flowebm: the run folder R/runs/two-modes-ula is no longer the folder this process locked when it started (/x): R/runs/two-modes-ula/.lock is gone or is another file, so the folder was moved or replaced, or a link on its path now leads elsewhere; the run stopped without writing there. Its last checkpoint is in the folder it locked"
	if err := os.WriteFile(exe, []byte(fmt.Sprintf("#!/bin/sh\necho %q >&2\nexit 2\n", line)), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &reproRun{experiment: "two-modes", algorithm: algorithms.ULA, dir: filepath.Join(dir, "two-modes-ula")}
	got := trainOne(context.Background(), context.Background(), exe, r, reproduceFlags{seed: 1, jobs: 1})
	if got.kind != outcomeFailed {
		t.Errorf("outcome %q, want a failure", got)
	}
	if exists(filepath.Join(r.dir, "error.txt")) {
		t.Error("error.txt written into the folder now at the run's path")
	}
}

// Probe 51 B8: sample's --out folder swapped for another after its last
// checkpoint: the draws were placed in that other folder at exit 0.
func TestSampleOutFolderSwapped(t *testing.T) {
	inTempDir(t)
	model := trainedRun(t)
	swapOutFolderAt(t, "sample-started")
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "0", "--out", "E/o.npy")
	if code == 0 || !strings.Contains(stderr, "--out E/o.npy: the folder E is no longer the folder it was when sampling started") || exists(filepath.Join("E", "o.npy")) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// swapOutFolderAt makes the folders E and E2 and, at the hook point,
// moves E to E_away and E2 to E (once).
func swapOutFolderAt(t *testing.T, point string) {
	os.Mkdir("E", 0o755)
	os.Mkdir("E2", 0o755)
	t.Cleanup(func() { testHook = nil })
	testHook = func(p string) {
		if p == point {
			testHook = nil
			os.Rename("E", "E_away")
			os.Rename("E2", "E")
		}
	}
}

// Probe 52: flowMC training its flow (no --flow) counted 833 KB an i-SIR
// proposal at d = 784, and 16 chains said to fit died out of memory: the
// live heap was 9.4 MB a proposal (AdaptiveFlowMC's flow training). 40
// chains of 32 proposals at d = 784 need about 12 GB now, refused.
func TestAdaptiveFlowMCMemoryCounted(t *testing.T) {
	model := energy784(t)
	f := memSampleFlags(model, 40)
	f.sampler, f.particles, f.warmup = "flowmc", 32, 20
	if _, err := f.models(); err == nil || !strings.Contains(err.Error(), "--particles 32 × --chains 40 proposals × 9.4e+03 KB") {
		t.Errorf("40 chains: %v; want a refusal counting 9.4 MB a proposal", err)
	}
}

// Probe 52 A5: sample's checkpoint folder still at its path, its lock
// no longer readable as the one locked (chmod, a mount over it), was
// said to be moved.
func TestSampleFolderStillThereMessage(t *testing.T) {
	e := &fileFolderChangedError{flag: "--checkpoint", path: "D/ck.npz", now: "/x/D", here: "/x/D"}
	if msg := e.Error(); !strings.Contains(msg, "the folder D is still at its path") || !strings.Contains(msg, "continue with: flowebm sample --resume D/ck.npz") || strings.Contains(msg, "was moved") {
		t.Errorf("%s", msg)
	}
}

// Probe 52 A3: sample's --out folder moved away while it sampled with a
// --checkpoint elsewhere: the advice to resume was refused for the --out
// folder it named; it says to give --out.
func TestSampleOutFolderGoneAdvice(t *testing.T) {
	inTempDir(t)
	model := trainedRun(t)
	os.Mkdir("O", 0o755)
	os.Mkdir("C", 0o755)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "sample-checkpoint" {
			testHook = nil
			os.Rename("O", "O_away")
		}
	}
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "0", "--checkpoint", "C/ck.npz", "--checkpoint-every", "5", "--out", "O/a.npy")
	if code == 0 || !strings.Contains(stderr, "continue with: flowebm sample --resume C/ck.npz --out NEW.npy") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--resume", "C/ck.npz", "--out", "new.npy"); code != 0 {
		t.Errorf("the advice: exit %d: %s", code, stderr)
	}
}

// Probe 53 A3: --out and --checkpoint in one folder, moved after the
// first checkpoint: the advice to resume was refused for --out's folder.
func TestSampleFolderOfBothMoved(t *testing.T) {
	_, _, dir := inTempDir(t)
	model := trainedRun(t)
	os.Mkdir("D", 0o755)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "sample-checkpoint" {
			testHook = nil
			os.Rename("D", "D_away")
		}
	}
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "40", "--warmup", "0", "--checkpoint", "D/ck.npz", "--checkpoint-every", "10", "--out", "D/a.npy")
	if code == 0 || !strings.Contains(stderr, "--resume "+filepath.Join(dir, "D_away", "ck.npz")+" --out NEW.npy)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 53 A4: "about 1 chains fit", and --chains 1 is refused.
func TestNotEvenTwoChainsFit(t *testing.T) {
	model := energy784(t)
	f := memSampleFlags(model, 2)
	f.sampler, f.particles, f.warmup = "flowmc", 4096, 20
	if _, err := f.models(); err == nil || !strings.Contains(err.Error(), "not even 2 chains fit: use fewer --particles") {
		t.Errorf("%v", err)
	}
	// Fewer particles than the 32 of the measure are counted as 32.
	f.chains, f.particles = 40, 2
	if _, err := f.models(); err == nil || !strings.Contains(err.Error(), "--particles 2 × --chains 40 proposals × 1.5e+05 KB") {
		t.Errorf("2 particles: %v", err)
	}
}

// energy784 writes an MLP energy on d = 784 (784-4-1) as ONNX and
// returns its path.
func energy784(t *testing.T) string {
	t.Helper()
	net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{784, 4, 1}, Hidden: layers.Tanh, Layout: layers.Sequential}}
	ebm, err := graph.NewEBM(net, nil, tensor.Float64, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := onnx.EBM(ebm, onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(t.TempDir(), "e784.onnx")
	if err := onnx.WriteFile(model, b); err != nil {
		t.Fatal(err)
	}
	return model
}

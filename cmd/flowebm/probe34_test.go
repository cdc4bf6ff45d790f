package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Probe 34: a signal removed the folders that compare, convert and
// diagnose --plots had made whole, with what other processes had put
// there meanwhile (a finished comparison, a user's file). Now only the
// command's own files go, and the folders made while they are empty.
func TestSignalKeepsOtherFilesInFoldersMade(t *testing.T) {
	runDir := trainedRun(t)
	chains := filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy")
	for _, c := range []struct {
		name, point string
		args        func(out string) []string
	}{
		{"compare", "compare-drawn", func(out string) []string { return []string{"compare", runDir, "--out", out} }},
		{"convert", "convert-written", func(out string) []string { return []string{"convert", toyONNX, out} }},
		{"diagnose", "diagnose-read", func(out string) []string { return []string{"diagnose", "--plots", out, chains} }},
	} {
		made := filepath.Join(t.TempDir(), "new")
		out, other := filepath.Join(made, "out"), filepath.Join(made, "other.txt")
		t.Setenv("FLOWEBM_CHILD_PUT", other)
		t.Setenv("FLOWEBM_CHILD_WAIT", "2s")
		code, stderr := outputsChild(t, c.point, "INT", c.args(out)...)
		if code != 130 {
			t.Errorf("%s: exit %d: %s", c.name, code, stderr)
		}
		if _, err := os.Stat(other); err != nil {
			t.Errorf("%s: interrupted, it removed a file another process had put in the folder it made: %v", c.name, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: interrupted, it left its own folder %s", c.name, out)
		}
	}
}

// Probe 34: the lock of a new output folder was taken after the Hold
// that made and registered the folder: a signal's cleanup in between
// left the folder holding only .lock. The cleanup now waits while the
// lock is taken.
func TestCleanupWaitsWhileOutputFolderIsLocked(t *testing.T) {
	runDir := trainedRun(t)
	out := filepath.Join(t.TempDir(), "new", "cmp")
	_, stderr := outputsChild(t, "lock-taking", "CLEANUP", "compare", runDir, "--out", out)
	if !strings.Contains(stderr, "the cleanup waited at lock-taking") {
		t.Errorf("a signal's cleanup ran while compare took the lock of the folder it made: %s", stderr)
	}
}

// Probe 34: train 2>&1 | tee, stopped by Ctrl-C (which ends tee too),
// died by SIGPIPE as it said it was stopping, exit 141, before writing
// its checkpoint. Now a write to the closed pipe fails, and train stops
// as it says: exit 130.
func TestTrainStopsCleanlyWhenItsOutputIsGone(t *testing.T) {
	state := childWithOutputGone(t, nil, []string{"FLOWEBM_CHILD_POINT=train-started", "FLOWEBM_CHILD_SIGNAL=INT", "FLOWEBM_CHILD_WAIT=1s"},
		"train", "--iterations", "4", "--quiet", "--out", filepath.Join(t.TempDir(), "r"))
	if ws := state.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 130 {
		t.Errorf("train interrupted with its output gone: %v, want exit status 130", state)
	}
}

// childWithOutputGone runs flowebm args in a process as outputsChild
// does, its stderr (stderr if not nil) and, with FLOWEBM_CHILD_STDOUT=1
// in env, its stdout a pipe whose reader is gone (tee, head); env sets
// the other FLOWEBM_CHILD_* of TestOutputsChild.
func childWithOutputGone(t *testing.T, stderr io.Writer, env []string, args ...string) *os.ProcessState {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutputsChild$")
	cmd.Env = append(append(os.Environ(), "FLOWEBM_CHILD_ARGS="+strings.Join(args, "\x1f")), env...)
	cmd.Stdout, cmd.Stderr = w, w
	if stderr != nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		t.Fatal(err)
	}
	return cmd.ProcessState
}

// Probe 34: sample --checkpoint CK --out OUT --force, interrupted, said
// to continue with "sample --resume CK", which then refused the OUT it
// was told to replace; and it left its lock file .CK.lock.
func TestSampleInterruptedResumeKeepsForceAndLeavesNoLock(t *testing.T) {
	dir := t.TempDir()
	ck, out := filepath.Join(dir, "k.npz"), filepath.Join(dir, "s.npy")
	if err := os.WriteFile(out, []byte("old draws"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"sample", "--model", toyONNX, "--chains", "4", "--steps", "400", "--checkpoint", ck, "--checkpoint-every", "50", "--out", out, "--force"}
	code, stderr := outputsChild(t, "sample-checkpoint", "INT", args...)
	if want := "continue with: flowebm sample --resume " + ck + " --force"; code != 130 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %q, want 130 and %q", code, stderr, want)
	}
	if lock := filepath.Join(dir, ".k.npz.lock"); exists(lock) {
		t.Errorf("the interrupted sample left its lock file %s", lock)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck, "--force"); code != 0 {
		t.Errorf("the command it printed: exit %d: %s", code, stderr)
	}
}

// Probe 34: a second signal once train's outputs were all written said
// "quitting now; … continue with: flowebm train --resume", of a run with
// nothing left to resume.
func TestSecondSignalAfterOutputsSaysRunIsComplete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	_, stderr := outputsChild(t, "train-done", "INT2", "train", "--iterations", "4", "--quiet", "--out", dir)
	if want := "the run is complete: its outputs are all written in " + dir; !strings.Contains(stderr, want) || strings.Contains(stderr, "--resume") {
		t.Errorf("%q, want %q and no --resume", stderr, want)
	}
}

// Probe 34: reproduce stopped by a signal exited 2, as a failure, while
// its train processes exit 128 + the signal's number.
func TestReproduceInterruptedExitsBySignal(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	dir := t.TempDir()
	code, stderr := outputsChild(t, "reproduce-child", "TERM", "reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1")
	if code != 143 || !strings.Contains(stderr, "interrupted before any run trained") { // the run was stopped as it started (probe 38: "the runs under way stopped")
		t.Errorf("exit %d: %s; want 143", code, stderr)
	}
}

// Probe 34: convert IN.onnx CK removed every entry beside CK whose name
// began .CK.new- or .CK.old- (a user's .CK.old-backup/, the input
// .CK.new-1.onnx itself), taking them for its own leftovers.
func TestConvertRemovesOnlyItsOwnLeftovers(t *testing.T) {
	dir := t.TempDir()
	backup := filepath.Join(dir, ".ck.old-backup")
	if err := os.MkdirAll(backup, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, backup, "notes.txt", "x")
	in := filepath.Join(dir, ".ck.new-1.onnx")
	b, err := os.ReadFile(toyONNX)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".ck.new-1.onnx", string(b))
	left := filepath.Join(dir, ".ck.new-123")
	os.MkdirAll(left, 0o755) // a killed convert's
	if _, stderr, code := runCLI("convert", in, filepath.Join(dir, "ck")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(in); !bytes.Equal(got, b) {
		t.Error("convert removed its input")
	}
	if !exists(filepath.Join(backup, "notes.txt")) {
		t.Error("convert removed a user's folder named like its leftovers")
	}
	if exists(left) {
		t.Error("convert kept a killed convert's leftover")
	}
}

// Probe 34: train --seeds went on to the next seed, and exited 0, when a
// signal came as a seed's run wrote its outputs (which it finishes).
func TestSeedsStopAfterSeedInterruptedWritingOutputs(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	out := filepath.Join(t.TempDir(), "set")
	args := []string{"train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", out}
	code, stderr := outputsChild(t, "train-outputs", "INT", args...)
	if want := "give the same --seeds command again to train the other seeds"; code != 130 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d: %s; want 130 and %q", code, stderr, want)
	}
	if exists(filepath.Join(out, "s2")) || exists(filepath.Join(out, "seeds.json")) {
		t.Error("seed 2 was trained after the signal")
	}
	if !exists(filepath.Join(out, "s1", "samples.npy")) {
		t.Error("seed 1's outputs were not finished")
	}
	if _, stderr, code := runCLI(args...); code != 0 || !exists(filepath.Join(out, "seeds.json")) {
		t.Errorf("the same command again: exit %d: %s", code, stderr)
	}
}

// Probe 34: ONNX energies as their authors write them. sample on an
// energy that is NaN at the chains' starts (a log of a negative value)
// wrote chains that never moved, exit 0; a Floor gave "Non
// Differentiable WRTs"; a Clip whose bounds are initializers (as
// onnx-simplifier leaves them) was refused. Fixtures:
// io/onnx/crosscheck/make_edge_energies.py.
func TestSampleEdgeEnergies(t *testing.T) {
	edge := filepath.Join("..", "..", "io", "onnx", "testdata", "edge")
	dir := t.TempDir()
	sample := func(model string) (string, int) {
		_, stderr, code := runCLI("sample", "--model", filepath.Join(edge, model), "--chains", "4", "--steps", "5", "--warmup", "0", "--out", filepath.Join(dir, model+".npy"))
		return stderr, code
	}
	// Probe 50: its outputs are NaN at every point the ONNX load checks
	// run it on; it is not refused for that (it was, with the first
	// version of that fix), but a note says it was not checked.
	if stderr, code := sample("log_energy.onnx"); code != 2 || !strings.Contains(stderr, "the chains' starting points: the energy of point 1 (counting from 1) is NaN: the model is not defined there") ||
		!strings.Contains(stderr, "note: "+filepath.Join(edge, "log_energy.onnx")+": its outputs are not finite (NaN or ±Inf) at the points flowebm runs a graph on at load") || exists(filepath.Join(dir, "log_energy.onnx.npy")) {
		t.Errorf("NaN at the starts: exit %d: %s", code, stderr)
	}
	for _, model := range []string{"floor_energy.onnx", "clip_init.onnx"} {
		if stderr, code := sample(model); code != 0 {
			t.Errorf("%s: exit %d: %s", model, code, stderr)
		}
	}
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.3,-1.2\n2.5,0.7\n"), 0o644)
	grad := filepath.Join(dir, "g.csv")
	if _, stderr, code := runCLI("energy", "--model", filepath.Join(edge, "floor_energy.onnx"), "--points", pts, "--grad", grad); code != 0 {
		t.Fatalf("energy --grad of a Floor: exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(grad)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, line := range lines[1:] { // after the header
		for _, v := range strings.Split(line, ",") {
			if x, err := strconv.ParseFloat(v, 64); err != nil || x != 0 {
				t.Errorf("the gradient through a Floor is 0 (as PyTorch's), got %q", b)
			}
		}
	}
	if len(lines) != 3 {
		t.Errorf("gradients of 2 points: %q", b)
	}
}

// Probe 34: a .lock hard-linked to another file (an input) was truncated
// and given the command's name; folders made before a failure (a name too
// long for the file system) were left; an empty --checkpoint was taken
// for the working folder ("--flow-out . is also --checkpoint").
func TestLockLinksFailedFoldersAndEmptyFlags(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "chains.npy")
	b, err := os.ReadFile(filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "chains.npy", string(b))
	plots := filepath.Join(dir, "p")
	os.Mkdir(plots, 0o755)
	if err := os.Link(in, filepath.Join(plots, ".lock")); err != nil {
		t.Skip(err)
	}
	if _, stderr, code := runCLI("diagnose", in, "--plots", plots); code != 2 || !strings.Contains(stderr, "hard links") {
		t.Errorf("a .lock linked to the input: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(in); !bytes.Equal(got, b) {
		t.Error("the input linked as .lock was overwritten")
	}
	ck := filepath.Join(dir, "k.npz")
	if err := os.Link(in, filepath.Join(dir, ".k.npz.lock")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "4", "--steps", "5", "--checkpoint", ck, "--out", filepath.Join(dir, "s.npy")); code != 2 || !strings.Contains(stderr, "hard links") {
		t.Errorf("a checkpoint's lock file linked to the input: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(in); !bytes.Equal(got, b) {
		t.Error("the input linked as the checkpoint's lock file was overwritten")
	}

	runDir := trainedRun(t)
	made := filepath.Join(dir, "m1")
	if _, stderr, code := runCLI("compare", runDir, "--out", filepath.Join(made, "m2", strings.Repeat("L", 300))); code != 2 {
		t.Errorf("a name too long: exit %d: %s", code, stderr)
	}
	if exists(made) {
		t.Errorf("a failed compare left the folders it made: %s", made)
	}

	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	t.Chdir(work)
	if _, stderr, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "5", "--warmup", "5", "--flow-out", ".", "--out", "s.npy"); code != 0 || !exists(filepath.Join(work, "flow_sample.onnx")) {
		t.Errorf("--flow-out . without --checkpoint: exit %d: %s", code, stderr)
	}
}

// Probe 34: compare --out RUN/sub/x was "the training run RUN".
func TestFigureFolderInsideRunNamedSo(t *testing.T) {
	runDir := trainedRun(t)
	other := filepath.Join(t.TempDir(), "other")
	copyRun(t, runDir, other)
	out := filepath.Join(other, "sub", "x")
	want := "--out " + out + " is inside the training run " + other
	if _, stderr, code := runCLI("compare", runDir, "--out", out); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d: %s; want %q", code, stderr, want)
	}
}

// Probe 34: symbolic links and slashes in output folders. convert into a
// link to a folder replaced the link and left a lone .lock where it led;
// train --seeds --force trained a seed into the run that its sSEED link
// led to; --flow-out DIR/ was "the folder DIR does not exist", and below
// a file "stat …: not a directory".
func TestOutputFolderLinksAndSlashes(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t")
	os.Mkdir(target, 0o755)
	link := filepath.Join(dir, "ld")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("convert", toyONNX, link); code != 2 || !strings.Contains(stderr, "is a symbolic link") {
		t.Errorf("convert into a link: exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 || exists(filepath.Join(target, ".lock")) {
		t.Errorf("convert into a link replaced it (%v) or left %s", err, filepath.Join(target, ".lock"))
	}

	other := trainedRun(t)
	before, _ := os.ReadFile(filepath.Join(other, "metrics.json"))
	set := filepath.Join(dir, "set")
	os.Mkdir(set, 0o755)
	if err := os.Symlink(other, filepath.Join(set, "s2")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", set, "--force"); code != 2 || !strings.Contains(stderr, "is a symbolic link") {
		t.Errorf("--seeds with a seed folder that is a link: exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(other, "metrics.json")); !bytes.Equal(after, before) {
		t.Error("train --seeds --force trained into the run a seed's link led to")
	}

	model := filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx")
	flowmc := []string{"sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "5", "--warmup", "5", "--out", filepath.Join(dir, "s.npy"), "--force"}
	if _, stderr, code := runCLI(append(flowmc, "--flow-out", filepath.Join(dir, "fo")+"/")...); code != 0 || !exists(filepath.Join(dir, "fo", "flow_sample.onnx")) {
		t.Errorf("--flow-out DIR/: exit %d: %s", code, stderr)
	}
	writeFile(t, dir, "f", "a file")
	want := filepath.Join(dir, "f") + " is a file, not a folder"
	if _, stderr, code := runCLI(append(flowmc, "--flow-out", filepath.Join(dir, "f", "x", "y"))...); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("--flow-out below a file: exit %d: %s; want %q", code, stderr, want)
	}
}

// Probe 35: neighbours of round 34's fixes. sample froze its chains where
// the energy is finite but its gradient NaN (sqrt of a ReLU at 0); an
// empty Clip bound was read as 0; an energy with no gradient was
// Gorgonia's "Non Differentiable WRTs" alone.
func TestSampleEdgeEnergiesRound35(t *testing.T) {
	edge := filepath.Join("..", "..", "io", "onnx", "testdata", "edge")
	dir := t.TempDir()
	for model, want := range map[string]string{
		"where_sqrt_energy.onnx": "the chains' starting points: the gradient at point 1 (counting from 1) is NaN, where the energy is -0.0831318348646164: the model's gradient is not defined there though its energy is: its node \"/Sqrt\" (Sqrt) computes NaN there", // round 103 A2: the node named
		"clip_empty.onnx":        `node "a1" (Clip): bound 1 ("lo") holds 0 values, want one`,
		"isnan_energy.onnx":      "isnan_energy.onnx: evaluating it at the chains' starting points: the energy has no gradient with respect to its input",
	} {
		out := filepath.Join(dir, model+".npy")
		_, stderr, code := runCLI("sample", "--model", filepath.Join(edge, model), "--sampler", "mala", "--chains", "4", "--steps", "5", "--warmup", "0", "--out", out)
		if code != 2 || !strings.Contains(stderr, want) || exists(out) {
			t.Errorf("%s: exit %d: %s; want %q", model, code, stderr, want)
		}
	}
}

// Probe 35: the round-34 removal of folders made deleted a dangling link
// given as the output folder; a run copied with cp -al (its .lock a hard
// link holding "train") was refused, and a FIFO as a checkpoint's lock
// file accepted; --out FILE/ was "the folder FILE does not exist"; a file
// as a seed's folder advised --force in vain; empty arguments were
// ": not a run folder".
func TestRound35OutputsAndLocks(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "L")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "x"), link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"train", "--iterations", "2", "--quiet", "--out", link},
		{"diagnose", filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"), "--plots", link},
		{"convert", toyONNX, filepath.Join(link, "ck")},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "which does not exist") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
		if _, err := os.Lstat(link); err != nil {
			t.Fatalf("%v deleted the link given as its output folder", args)
		}
	}

	run, _ := linkedCopy(t, dir)
	if _, stderr, code := runCLI("plot", run); code != 0 {
		t.Errorf("plot of a run copied with cp -al: exit %d: %s", code, stderr)
	}

	ck := filepath.Join(dir, "k.npz")
	if err := syscall.Mkfifo(filepath.Join(dir, ".k.npz.lock"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "4", "--steps", "5", "--checkpoint", ck, "--out", filepath.Join(dir, "s.npy")); code != 2 || !strings.Contains(stderr, ".k.npz.lock") {
		t.Errorf("a FIFO as the checkpoint's lock file: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "4", "--steps", "5", "--out", filepath.Join(dir, "s2.npy")+"/"); code != 2 || !strings.Contains(stderr, "names a folder, not a file") {
		t.Errorf("--out FILE/: exit %d: %s", code, stderr)
	}

	set := filepath.Join(dir, "set")
	os.Mkdir(set, 0o755)
	writeFile(t, set, "s1", "x")
	if _, stderr, code := runCLI("train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", set); code != 2 || !strings.Contains(stderr, "is a file, not a seed's run folder") || strings.Contains(stderr, "--force") {
		t.Errorf("a file as a seed's folder: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", "", run); code != 2 || !strings.Contains(stderr, "argument 1 is empty") {
		t.Errorf("an empty argument: exit %d: %s", code, stderr)
	}
}

// Probe 35: the resume advice of a run in a folder with a space could
// not be pasted (not quoted).
func TestResumeAdviceQuoted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my runs", "r")
	_, stderr := outputsChild(t, "train-outputs", "INT2", "train", "--iterations", "4", "--quiet", "--out", dir)
	if want := "continue with: flowebm train --resume '" + dir + "'"; !strings.Contains(stderr, want) {
		t.Errorf("%s; want %q", stderr, want)
	}
}

// Probe 35: a command that opened a folder's .lock just before its holder
// removed it went on to lock the removed file, and wrote the folder
// beside the next command. The lock is taken again on the file in place.
func TestTakeLockRetriesARemovedLockFile(t *testing.T) {
	dir := t.TempDir()
	removed := false
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "lock-opened" && !removed { // its holder removes it now
			removed = true
			os.Remove(filepath.Join(dir, ".lock"))
		}
	}
	f, path, _, err := takeLock(dir, "compare")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	held, _ := f.Stat()
	if now, err := os.Lstat(path); !removed || err != nil || !os.SameFile(held, now) {
		t.Errorf("the lock held is not the folder's .lock (%v)", err)
	}
}

// Probe 35: a signal as sample placed its first checkpoint left it
// without naming it or the resume command; sample | head (SIGPIPE) left
// its lock file; a signal as reproduce or train --seeds locked a new
// --out killed them without a word, leaving the folder; compare --out
// a/b/ left a.
func TestRound35Signals(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "k.npz")
	sample := []string{"sample", "--model", toyONNX, "--chains", "4", "--steps", "400", "--checkpoint", ck, "--checkpoint-every", "50", "--out", filepath.Join(dir, "s.npy")}
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	if code, stderr := outputsChild(t, "sample-checkpoint-placed", "INT", sample...); code != 130 || !strings.Contains(stderr, "continue with: flowebm sample --resume "+ck) {
		t.Errorf("a signal as the first checkpoint was placed: exit %d: %s", code, stderr)
	}
	os.Remove(ck)

	state := childWithOutputGone(t, nil, []string{"FLOWEBM_CHILD_POINT=none", "FLOWEBM_CHILD_STDOUT=1"}, sample...)
	if ws := state.Sys().(syscall.WaitStatus); ws.Signaled() || exists(filepath.Join(dir, ".k.npz.lock")) {
		t.Errorf("sample with its output gone: %v, lock file left: %v", state, exists(filepath.Join(dir, ".k.npz.lock")))
	}

	for _, c := range []struct {
		point string
		args  func(out string) []string
	}{
		{"lock-taking", func(out string) []string {
			return []string{"reproduce", "--out", out, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3"}
		}},
		{"lock-taking", func(out string) []string {
			return []string{"train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", out}
		}},
		{"compare-drawn", func(out string) []string { return []string{"compare", trainedRun(t), "--out", out + "/"} }},
	} {
		made := filepath.Join(t.TempDir(), "a")
		args := c.args(filepath.Join(made, "b"))
		if code, stderr := outputsChild(t, c.point, "INT", args...); code != 130 || !strings.Contains(stderr, "interrupted") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
		if exists(made) {
			t.Errorf("%v: interrupted, it left the folder it made, %s", args, made)
		}
	}
}

// Probe 35: a signal as the last seed of train --seeds wrote its outputs
// said to give the command again "to train the other seeds": none was
// left.
func TestLastSeedInterruptedSaysWhatIsLeft(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	t.Setenv("FLOWEBM_CHILD_SKIP", "1") // the second seed's outputs
	out := filepath.Join(t.TempDir(), "set")
	code, stderr := outputsChild(t, "train-outputs", "INT", "train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", out)
	if want := "give the same --seeds command again to write seeds.json"; code != 130 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d: %s; want %q", code, stderr, want)
	}
}

// Probe 36 (follows 35's SIGPIPE fix): energy | head ended with
// "flowebm: write /dev/stdout: broken pipe" and exit 2; it ends quietly
// with 141, as a process that SIGPIPE ends.
func TestClosedStdoutEndsQuietly(t *testing.T) {
	pts := filepath.Join(t.TempDir(), "p.csv")
	var b strings.Builder
	for i := range 50000 {
		fmt.Fprintf(&b, "%g,%g\n", float64(i)*1e-4, -float64(i)*1e-4)
	}
	os.WriteFile(pts, []byte(b.String()), 0o644)
	var stderr bytes.Buffer
	state := childWithOutputGone(t, &stderr, []string{"FLOWEBM_CHILD_POINT=none", "FLOWEBM_CHILD_STDOUT=1"}, "energy", "--model", toyONNX, "--points", pts)
	if code := state.ExitCode(); code != 141 || stderr.Len() != 0 {
		t.Errorf("energy with its output gone: exit %d, %q; want 141 and nothing", code, stderr.String())
	}
}

// Probe 36: empty ONNX constants were read as [0]: an empty shape to
// ConstantOfShape (a scalar), empty axes to ReduceSum (every axis) gave
// wrong energies at exit 0, CumSum with an empty axis summed over the
// batch; Pad's value as an initializer was "depends on the input"; a
// ConstantOfShape value of two elements filled 0. Each empty_* energy
// equals its *_ref, written another way.
func TestEmptyONNXConstants(t *testing.T) {
	edge := filepath.Join("..", "..", "io", "onnx", "testdata", "edge")
	pts := filepath.Join(t.TempDir(), "p.csv")
	os.WriteFile(pts, []byte("0.3,-1.2\n2.5,0.7\n-1,0.4\n"), 0o644)
	energy := func(model string) (string, string, int) {
		return runCLI("energy", "--model", filepath.Join(edge, model+".onnx"), "--points", pts)
	}
	for _, m := range []string{"empty_shape", "empty_axes", "empty_pad_init"} {
		got, stderr, code := energy(m)
		want, _, _ := energy(m + "_ref")
		if code != 0 || got != want || want == "" {
			t.Errorf("%s: exit %d: %q %s; want %q", m, code, got, stderr, want)
		}
	}
	for m, want := range map[string]string{
		"empty_cumsum_axis": "axis must be one constant integer",
		"empty_fill_two":    "value holds 2 values, want one",
		"empty_mul":         "cannot broadcast shapes",
	} {
		if _, stderr, code := energy(m); code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d: %s; want %q", m, code, stderr, want)
		}
	}
}

// Probe 36: a copy made with cp -al shared its .lock with the original
// for good (each blocked the other); an empty file linked as a .lock was
// written into; --out new/../e/LONG left new; --out s.npy/. was "the
// folder s.npy does not exist".
func TestRound36LocksAndPaths(t *testing.T) {
	dir := t.TempDir()
	run, snap := linkedCopy(t, dir)
	if _, stderr, code := runCLI("plot", run); code != 0 {
		t.Fatalf("plot of a run copied with cp -al: exit %d: %s", code, stderr)
	}
	a, errA := os.Stat(filepath.Join(run, ".lock"))
	b, errB := os.Stat(filepath.Join(snap, ".lock"))
	if errA == nil && errB == nil && os.SameFile(a, b) {
		t.Error("the run and its cp -al copy still share their .lock")
	}

	done := filepath.Join(dir, "DONE")
	os.WriteFile(done, nil, 0o644)
	os.Remove(filepath.Join(run, ".lock"))
	if err := os.Link(done, filepath.Join(run, ".lock")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("plot", run); code != 2 || !strings.Contains(stderr, "hard links") {
		t.Errorf("an empty file linked as .lock: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(done); len(b) != 0 {
		t.Errorf("the file linked as .lock was written: %q", b)
	}

	made := filepath.Join(dir, "new")
	for _, args := range [][]string{
		{"compare", snap, "--out"},
		{"train", "--iterations", "2", "--quiet", "--out"},
		{"diagnose", filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"), "--plots"},
	} {
		args = append(args, made+string(filepath.Separator)+filepath.Join("..", "e", strings.Repeat("L", 300)))
		if _, stderr, code := runCLI(args...); code != 2 {
			t.Errorf("%v: a name too long: exit %d: %s", args[0], code, stderr)
		}
		if exists(made) {
			t.Errorf("a failed %s left %s", args[0], made)
		}
	}
	if _, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "4", "--steps", "5", "--out", filepath.Join(dir, "s.npy")+"/."); code != 2 || !strings.Contains(stderr, "names a folder") {
		t.Errorf("--out FILE/.: exit %d: %s", code, stderr)
	}
}

// Probe 36: a command that made a new folder, then found it removed by
// the lock's last holder (which had made it too) before locking it,
// failed with "open DIR/.lock: no such file or directory". It makes the
// folder again.
func TestLockRemakesAFolderRemovedMeanwhile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	removed := false
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "lock-taking" && !removed { // the last holder, ending, removes the folders it made
			removed = true
			os.Remove(dir)
			os.Remove(filepath.Dir(dir))
		}
	}
	release, _, err := lockOutputFolder(dir, "compare")
	if err != nil {
		t.Fatalf("the folder removed meanwhile: %v", err)
	}
	defer release()
	if !removed || !exists(filepath.Join(dir, ".lock")) {
		t.Errorf("no lock in %s", dir)
	}
}

// Probe 36: a second signal while train set up killed it by the signal's
// default action: no word, the new folder left; a signal as reproduce
// began still started a run, leaving its folder.
func TestSecondSignalInSetupAndReproduceStart(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	made := filepath.Join(t.TempDir(), "a")
	code, stderr := outputsChild(t, "lock-taking", "INT2", "train", "--iterations", "4", "--quiet", "--out", filepath.Join(made, "r"))
	if code != 130 || !strings.Contains(stderr, "interrupted again (interrupt): quitting now; nothing was trained") {
		t.Errorf("train, a second signal in its setup: exit %d: %s", code, stderr)
	}
	if exists(made) {
		t.Errorf("it left the folder it made, %s", made)
	}
	out := t.TempDir()
	if code, stderr := outputsChild(t, "reproduce-run", "TERM", "reproduce", "--out", out, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3"); code != 143 {
		t.Errorf("reproduce: exit %d: %s", code, stderr)
	}
	if run := filepath.Join(out, "runs", "two-modes-ula"); exists(run) {
		t.Errorf("reproduce interrupted before its first run started it: %s", run)
	}
}

// Probe 37: an unheld .lock with other hard links, in a folder where it
// cannot be removed, was retried for ever, signals held off (round 36's
// replacement of a lock shared with a cp -al copy). It is refused, named.
func TestSharedLockThatCannotBeReplacedIsRefused(t *testing.T) {
	dir := openTempDir(t)
	run := filepath.Join(dir, "snap")
	copyRun(t, trainedRun(t), run)
	os.WriteFile(filepath.Join(run, ".lock"), []byte("train\n"), 0o666)
	if err := os.Link(filepath.Join(run, ".lock"), filepath.Join(dir, "other.lock")); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(run, func(p string, e fs.DirEntry, _ error) error { // readable by another user
		if e.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	})
	os.Chmod(filepath.Join(run, ".lock"), 0o666)
	os.Chmod(run, 0o555) // its entries cannot be removed
	defer os.Chmod(run, 0o755)
	exe := os.Args[0]
	var cred *syscall.Credential
	if os.Geteuid() == 0 { // root removes entries anyway: another user, as in the probe
		exe = filepath.Join(dir, "flowebm.test")
		b, err := os.ReadFile(os.Args[0])
		if err != nil || os.WriteFile(exe, b, 0o755) != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestOutputsChild$")
	cmd.Env = append(os.Environ(), "FLOWEBM_CHILD_ARGS="+strings.Join([]string{"plot", run}, "\x1f"), "FLOWEBM_CHILD_POINT=none")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if ctx.Err() != nil {
		t.Fatal("plot did not end within a minute")
	}
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "cannot be replaced") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

// Probe 37: ".." after a symbolic link is resolved by the system through
// the link, while paths joined in Go are cleaned as text: energy --out
// lnk/../metrics.csv replaced a file of the input run, train --out
// lnk/../e trained elsewhere than it said; ".." after a folder that does
// not exist left .lock behind (diagnose --plots new/../e/x). Refused.
func TestDotDotAfterLinkRefused(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "rr2")
	copyRun(t, trainedRun(t), run)
	lnk := filepath.Join(dir, "lnk2")
	if err := os.Symlink(filepath.Join(run, "checkpoint"), lnk); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(run, "metrics.csv"))
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.3,-1.2\n"), 0o644)
	for _, args := range [][]string{
		{"energy", "--model", run, "--points", pts, "--out", lnk + "/../metrics.csv", "--force"},
		{"train", "--iterations", "2", "--quiet", "--out", lnk + "/../e/t1"},
		{"diagnose", filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"), "--plots", filepath.Join(dir, "new") + "/../e/x"},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "give the path without ..") {
			t.Errorf("%v: exit %d: %s", args[0], code, stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(run, "metrics.csv")); !bytes.Equal(after, before) {
		t.Error("a file of the input run was replaced")
	}
	for _, p := range []string{filepath.Join(run, "e"), filepath.Join(dir, "e"), filepath.Join(dir, "new")} {
		if exists(p) {
			t.Errorf("%s was made", p)
		}
	}
}

// copyRun copies the run folder src to dst, for a test to change.
func copyRun(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// linkedCopy copies the trained run into dir/run, its .lock as train
// leaves it, and that into dir/snap with cp -al (hard links, as a backup
// made with rsync --link-dest): the two share their .lock.
func linkedCopy(t *testing.T, dir string) (run, snap string) {
	t.Helper()
	run, snap = filepath.Join(dir, "run"), filepath.Join(dir, "snap")
	copyRun(t, trainedRun(t), run)
	os.WriteFile(filepath.Join(run, ".lock"), []byte("train\n"), 0o644)
	if err := exec.Command("cp", "-al", run, snap).Run(); err != nil {
		t.Skip(err)
	}
	return run, snap
}

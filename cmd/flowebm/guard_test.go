package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// No command writes over its inputs or over another run without --force,
// and two processes never train in one folder (issue 18's data-loss
// cases; each fails without its check).
func TestOutputsNeverOverwriteInputsOrRuns(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/torch/toy_f64.onnx"
	pts := filepath.Join(dir, "x.csv")
	os.WriteFile(pts, []byte("0.5,1\n-1,2\n"), 0o644)
	os.WriteFile(pts+".npy", []byte("not to be replaced"), 0o644)
	modelCopy := filepath.Join(dir, "m.onnx")
	b, _ := os.ReadFile(model)
	os.WriteFile(modelCopy, b, 0o644)
	run0 := trainedRun(t)
	ck := filepath.Join(dir, "ck")
	var out, errb bytes.Buffer
	if code := run([]string{"convert", model, ck}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"energy", "--model", model, "--points", pts, "--out", pts}, "--out " + pts + " is also an input"},
		{[]string{"energy", "--model", model, "--points", pts, "--grad", pts}, "--grad " + pts + " is also an input"},
		{[]string{"sample", "--model", modelCopy, "--out", modelCopy}, "is also an input"},
		{[]string{"sample", "--model", modelCopy, "--out", dir}, "is a folder: give a file name in it"},
		{[]string{"sample", "--model", modelCopy, "--out", filepath.Join(dir, "nope", "c.npy")}, "does not exist"},
		{[]string{"convert", model, ck}, ck + " already holds a checkpoint or run"},
		{[]string{"train", "--iterations", "2", "--quiet", "--out", run0}, run0 + " already holds a finished run (its outputs written): give another --out, or replace it with --force"},
		// Outputs inside the model's folder: its weights, its metrics.
		{[]string{"sample", "--model", run0, "--out", filepath.Join(run0, "checkpoint", "weights.npz")}, "is inside the input folder " + run0},
		{[]string{"energy", "--model", run0, "--points", pts, "--out", filepath.Join(run0, "checkpoint", "evals.csv")}, "is inside the input folder " + run0},
		{[]string{"convert", ck, filepath.Join(ck, "m.onnx")}, "is inside the input folder " + ck},
		// A training run is never replaced by a conversion, even with
		// --force; existing output files need --force.
		{[]string{"convert", "--force", model, run0}, run0 + " holds a training run"},
		{[]string{"train", "--force", "--data", filepath.Join(run0, "samples.npy"), "--iterations", "2", "--out", run0}, "--data " + filepath.Join(run0, "samples.npy") + " is inside the run folder " + run0},
		{[]string{"convert", "--base", "2", ck, filepath.Join(dir, "new.onnx")}, "--base applies to IN.onnx → CHECKPOINT"},
		{[]string{"convert", ck, modelCopy}, "OUT.onnx " + modelCopy + " exists: give another name, or replace it with --force"},
		{[]string{"sample", "--model", modelCopy, "--base", "1", "--out", pts + ".npy"}, "--out " + pts + ".npy exists"},
		{[]string{"sample", "--model", modelCopy, "--base", "1", "--out", filepath.Join(dir, "s.txt")}, "want a .npy file"},
		{[]string{"energy", "--model", model, "--points", pts, "--out", pts + ".npy"}, "--out " + pts + ".npy exists"},
	}
	for _, c := range cases {
		errb.Reset()
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errb.String(), c.want)
		}
	}
	if got, _ := os.ReadFile(pts); string(got) != "0.5,1\n-1,2\n" {
		t.Errorf("the points were overwritten: %q", got)
	}
	if got, _ := os.ReadFile(modelCopy); !bytes.Equal(got, b) {
		t.Error("the model was overwritten")
	}
	if _, err := os.Stat(filepath.Join(ck, "m.onnx")); err == nil {
		t.Error("convert wrote into its input checkpoint")
	}
	if got, _ := os.ReadFile(pts + ".npy"); string(got) != "not to be replaced" {
		t.Error("an existing output file was replaced without --force")
	}
	if _, err := os.Stat(filepath.Join(run0, "spec.json")); err == nil {
		t.Error("convert --force wrote a checkpoint beside a training run's")
	}
	// --force replaces.
	errb.Reset()
	if code := run([]string{"convert", "--force", model, ck}, &out, &errb); code != 0 {
		t.Errorf("convert --force: %s", errb.String())
	}
	// A second process on a run folder being trained in is refused.
	release, err := lockRun(run0)
	if err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"train", "--resume", run0, "--quiet"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "another flowebm process is training in this folder") {
		t.Errorf("resume while locked: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"train", "--force", "--iterations", "2", "--quiet", "--out", run0}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "another flowebm process") {
		t.Errorf("train --force while locked: exit %d, %q", code, errb.String())
	}
	release()
	errb.Reset()
	if code := run([]string{"train", "--force", "--iterations", "2", "--quiet", "--out", run0}, &out, &errb); code != 0 {
		t.Errorf("train --force after the lock is released: %s", errb.String())
	}
}

// Flag and configuration values that cannot work are refused before any
// work, with the flag and what is wanted.
func TestValuesRefused(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/torch/toy_f64.onnx"
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(`{"experiment": "two-modes"} trailing`), 0o644)
	zeros := map[string]string{}
	for _, c := range []struct{ field, json string }{
		{"train.batch_size", `{"train": {"iterations": 5, "batch_size": 0}}`},
		{"train.sampler.step_size", `{"train": {"iterations": 5, "sampler": {"step_size": 0.0}}}`},
		{"eval_every", `{"eval_every": 0, "train": {"iterations": 5}}`},
		{"checkpoint_every", `{"checkpoint_every": 0, "train": {"iterations": 5}}`},
	} {
		p := filepath.Join(dir, c.field+".json")
		os.WriteFile(p, []byte(c.json), 0o644)
		zeros[c.field] = p
	}
	run0 := trainedRun(t)
	out := filepath.Join(dir, "c.npy")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"train", "--iterations", "-3", "--out", filepath.Join(dir, "a")}, "--iterations -3: want a count ≥ 0"},
		{[]string{"train", "--epochs", "-1", "--out", filepath.Join(dir, "a")}, "--epochs -1: want a count ≥ 0"}, // probe 68 B6: "--iterations 0, --epochs -1"
		{[]string{"train", "--holdout", "0", "--data", "x.csv", "--out", filepath.Join(dir, "a")}, "--holdout 0: want a fraction strictly between 0 and 1"},
		{[]string{"train", "--resume", run0, "--iterations", "50", "--seed", "3"}, "--iterations, --seed would be ignored"},
		{[]string{"train", "--resume", run0, "--holdout", "0.2", "--standardize", "none"}, "--holdout, --standardize would be ignored: drop them"},           // probe 24: "give --data FILE"
		{[]string{"train", "--resume", run0, "--key", "x"}, `the run trains on the experiment "two-modes", not on a data file: resume it without --key`},     // probe 25: "give --data FILE"
		{[]string{"train", "--resume", run0, "--key", "x", "--data", filepath.Join(dir, "d.npz")}, `not on a data file: resume it without --data and --key`}, // then "without --data"
		{[]string{"train", "--config", cfg, "--out", filepath.Join(dir, "b")}, "after the JSON object"},
		{[]string{"train", "--config", os.DevNull, "--out", filepath.Join(dir, "b")}, os.DevNull + " is a device, want a regular file"},
		{[]string{"train", "--config", zeros["train.batch_size"], "--out", filepath.Join(dir, "b")}, "train.batch_size 0: 0 stands for the default here, 64: leave the field out for the default"},
		{[]string{"train", "--config", zeros["train.sampler.step_size"], "--out", filepath.Join(dir, "b")}, "train.sampler.step_size 0: 0 stands for the default here"},
		{[]string{"train", "--config", zeros["eval_every"], "--out", filepath.Join(dir, "b")}, "eval_every 0: 0 stands for the default here"},
		{[]string{"train", "--config", zeros["checkpoint_every"], "--out", filepath.Join(dir, "b")}, "checkpoint_every 0: 0 stands for the default here"},
		{[]string{"sample", "--model", model, "--out", out, "--step", "NaN"}, "--step NaN: want a step size in [1e-12, 1e6]"},
		{[]string{"energy", "--model", model, "--checkpoint", run0, "--points", filepath.Join(dir, "p.csv")}, "give --model or --checkpoint"},
		{[]string{"energy", "--model", model, "--points", filepath.Join(dir, "p.npy"), "--key", "x"}, `--key "x" selects a member of an .npz file`},
		{[]string{"energy", "--model", run0, "--points", filepath.Join(dir, "p.csv"), "--log-density"}, "--log-density applies to an ONNX model"},
		{[]string{"train", "--data", filepath.Join(dir, "d.npy"), "--key", "x", "--out", filepath.Join(dir, "a")}, `--key "x" selects a member of an .npz file`},
		{[]string{"sample", "--model", model, "--out", out, "--step", "-1"}, "--step -1"},
		{[]string{"sample", "--model", model, "--out", out, "--step", "Inf"}, "--step +Inf"},
		{[]string{"sample", "--model", model, "--out", out, "--base", "-1"}, "--base -1: want σ in [1e-150, 1e150], or 0"},
		{[]string{"sample", "--model", model, "--out", out, "--base", "NaN"}, "--base NaN"},
		{[]string{"sample", "--model", model, "--out", out, "--steps", "1000000000000"}, "GB of draws"},
		{[]string{"sample", "--model", model, "--base", "1", "--out", out, "--chains", "30000000", "--steps", "4"}, "of working memory besides"},
		{[]string{"sample", "--model", run0, "--sampler", "flowmc", "--out", out, "--particles", "1000000000000"}, "--particles 1000000000000 (want 2..1000000)"},
		{[]string{"sample", "--model", model, "--out", out, "--chains", "100000000"}, "GB of draws"},
	}
	var so, se bytes.Buffer
	for _, c := range cases {
		se.Reset()
		if code := run(c.args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, se.String(), c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("sample wrote its output despite the error")
	}
}

// Small outputs a newcomer reads: --version names the BLAS, train --help
// the experiments, and mode centres of four-gaussians print apart.
func TestNewcomerOutputs(t *testing.T) {
	var so, se bytes.Buffer
	if code := run([]string{"--version"}, &so, &se); code != 0 || !strings.Contains(so.String(), "BLAS: ") || !strings.Contains(so.String(), "vector math: ") {
		t.Errorf("--version: %q", so.String())
	}
	so.Reset()
	if code := run([]string{"train", "--help"}, &so, &se); code != 0 || !strings.Contains(so.String(), "four-gaussians-64-paper") || !strings.Contains(so.String(), "8-gaussians") {
		t.Errorf("train --help lists no experiments: %q", so.String())
	}
	a := make([]float64, 16)
	b := make([]float64, 16)
	for i := range a {
		a[i], b[i] = 1.39, 1.39
		if i >= 8 {
			b[i] = -1.39
		}
	}
	if fa, fb := fmtPoint(a), fmtPoint(b); fa == fb || fa != "(1.39×16)" || fb != "(1.39×8, -1.39×8)" {
		t.Errorf("mode labels %q and %q", fa, fb)
	}
	if f := fmtPoint([]float64{5, -0.001, 0.002, math.Copysign(0, -1)}); f != "(5.00, -0.001, 0.002, 0.00)" { // probe 69 B5: "(5.00, -0.00, 0.00, -0.00)"
		t.Errorf("small coordinates: %s", f)
	}
	if f := fmtPoint([]float64{-1.5, -1.5}); f != "(-1.50, -1.50)" {
		t.Errorf("2D label %q", f)
	}
	// Probe 18: a centre at 1e299 printed as a 300-digit number.
	if f := fmtPoint([]float64{1e299, -2.5e7}); f != "(1e+299, -2.5e+07)" {
		t.Errorf("far centre's label %q", f)
	}
}

// A ULA step too large for the energy makes the chains diverge: sample
// says so and writes nothing.
func TestSampleRefusesDivergedChains(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "c.npy")
	var so, se bytes.Buffer
	args := []string{"sample", "--model", "../../io/onnx/testdata/torch/toy_f64.onnx", "--base", "0.5", "--sampler", "ula", "--step", "50", "--chains", "4", "--steps", "200", "--warmup", "0", "--out", out}
	if code := run(args, &so, &se); code != 2 || !strings.Contains(se.String(), "the chains diverged, no draws were written; lower --step (50) or use an adjusted sampler") {
		t.Errorf("exit %d, %q", code, se.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("diverged draws were written")
	}
}

// The scaling note printed at the start of a run quotes the run's own
// iterations, decay interval and averaging window when --iterations
// changed them, not the defaults'.
func TestScalingNoteFollowsIterations(t *testing.T) {
	var so, se bytes.Buffer
	out := filepath.Join(t.TempDir(), "r")
	if code := run([]string{"train", "--iterations", "40", "--quiet", "--out", out}, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	note := so.String()
	for _, want := range []string{"40 iterations instead of 19200", "decayed ×0.9 every 2 iterations", "moving average of its parameters over 2 iterations"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note does not say %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "2000 iterations instead of") || strings.Contains(note, "every 100 iterations") {
		t.Errorf("the note quotes the defaults:\n%s", note)
	}
}

// SIGINT during training: the command finishes the iteration, writes a
// checkpoint and names the command that continues the run, which then
// completes.
func TestInterruptedTrainSaysHowToResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains until interrupted")
	}
	dir := filepath.Join(t.TempDir(), "run")
	code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "400", "--quiet", "--out", dir)
	want := "continue with: flowebm train --resume " + dir
	if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "interrupted") {
		t.Fatalf("exit %d, stderr %q; want %q", code, stderr, want)
	}
	var out2, errb2 bytes.Buffer
	if code := run([]string{"train", "--resume", dir, "--quiet"}, &out2, &errb2); code != 0 {
		t.Fatalf("resume: %s", errb2.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "metrics.json")); err != nil {
		t.Error(err)
	}
}

// interruptAtFirstCheckpoint runs the command args, which trains into
// the run folder dir, sends the process SIGINT once dir's first checkpoint
// exists (training is under way and the signal handler installed), and
// returns the command's exit status and stderr.
func interruptAtFirstCheckpoint(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run(args, &out, &errb) }()
	for {
		if _, err := os.Stat(filepath.Join(dir, "checkpoint", "state.json")); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("train ended (%d) before its first checkpoint: %s", code, errb.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	return <-done, errb.String()
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A train that fails during setup, with no signal sent, says nothing about
// an interruption (it did, on every error, when the signal context's
// cancellation was taken for a signal).
func TestSetupErrorIsNotAnInterruption(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	os.WriteFile(file, nil, 0o644)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	var out, errb bytes.Buffer
	code := run([]string{"train", "--iterations", "2", "--out", file}, &out, &errb)
	time.Sleep(100 * time.Millisecond) // let a stray goroutine print, if any
	os.Stderr = stderr
	w.Close()
	direct, _ := io.ReadAll(r)
	if code == 0 || strings.Contains(errb.String()+string(direct), "interrupted") {
		t.Errorf("exit %d, stderr %q %q", code, errb.String(), direct)
	}
}

// A run killed before its first checkpoint was complete leaves only
// checkpoint.new/: --resume says there is nothing to resume and the same
// command starts it again (it was a dead end: "open config.json" on
// resume, "already holds a run" on a new start). --resume on a path that
// holds no run writes nothing there.
func TestRunKilledBeforeFirstCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k9")
	os.MkdirAll(filepath.Join(dir, "checkpoint.new"), 0o755)
	os.WriteFile(filepath.Join(dir, "checkpoint.new", "spec.json"), []byte(`{"dty`), 0o644)
	os.WriteFile(filepath.Join(dir, ".lock"), nil, 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"train", "--resume", dir}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "stopped before its first checkpoint was complete") {
		t.Errorf("resume: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"train", "--iterations", "4", "--quiet", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("starting again: %s", errb.String())
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.Mkdir(empty, 0o755)
	file := filepath.Join(t.TempDir(), "afile")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct{ path, want string }{
		{empty, "holds no run"}, {file, "is not a folder"}, {filepath.Join(empty, "nope"), "no such file"},
	} {
		errb.Reset()
		if code := run([]string{"train", "--resume", c.path}, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("--resume %s: exit %d, %q, want %q", c.path, code, errb.String(), c.want)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("--resume wrote into a folder without a run: %v", entries)
	}
}

// Probe 23: a lock file held by another program, or rewritten by one, had
// its whole text (up to 1 MiB, newlines and terminal escapes) repeated in
// the refusal; only a flowebm command's name is.
func TestLockRefusalNamesOnlyACommand(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, ".lock")
	release, err := lockRunAs(dir, "plot")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, text := range []string{"\x1b[2J\x1b[31mowned\nline two\n", strings.Repeat("x", 1<<20), "plot\n", "diagnose\n"} {
		if err := os.WriteFile(lock, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := lockRunAs(dir, "train")
		want := dir + ": another flowebm process is writing into this folder (it holds " + lock + ")"
		if name := strings.TrimSpace(text); name == "plot" || name == "diagnose" { // probe 24: diagnose was left out
			want = dir + ": another flowebm process (flowebm " + name + ") is writing into this folder (it holds " + lock + ")"
		}
		if err == nil || err.Error() != want {
			t.Errorf("lock file holding %.20q: %v, want %q", text, err, want)
		}
	}
	out := filepath.Join(dir, "s.npy")
	hold, err := lockFile("--out", out, "sample")
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	fileLock := filepath.Join(dir, ".s.npy.lock")
	os.WriteFile(fileLock, []byte("\x1b[31mred\nmore"), 0o644)
	_, err = lockFile("--out", out, "sample")
	if want := "--out " + out + ": another flowebm process (flowebm ?) is writing it (it holds " + fileLock + "): wait for it, or give another file"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}

// Probe 24: a FIFO as RUN/.lock was called "a link or a folder".
func TestLockFileKindNamed(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, ".lock")
	if err := syscall.Mkfifo(lock, 0o644); err != nil {
		t.Skip(err)
	}
	_, err := lockRunAs(dir, "plot")
	if want := lock + " is a named pipe (FIFO), want a regular file: flowebm locks the folder " + dir + " with it and writes into it; remove it"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}

// Probe 24: a link in place of an output's lock file gave the system's
// "too many levels of symbolic links".
func TestOutputLockLinkNamed(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.npy")
	lock := filepath.Join(dir, ".s.npy.lock")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), lock); err != nil {
		t.Skip(err)
	}
	_, err := lockFile("--out", out, "sample")
	if want := "--out " + out + ": " + lock + " is a symbolic link: flowebm locks the file with it and writes into it; remove it"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the lock was written through the link")
	}
}

// Probe 24: convert --force into a folder whose parent this user may not
// write named only its hidden staging folder.
func TestConvertUnwritableParentNamesOut(t *testing.T) {
	dir := openTempDir(t)
	parent := filepath.Join(dir, "p")
	ck := filepath.Join(parent, "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Chmod(parent, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(parent, 0o755)
	if os.Geteuid() == 0 {
		os.Chmod(ck, 0o777) // nobody may write its lock there, not beside it
	}
	model := filepath.Join(dir, "m.onnx") // readable by the other user
	if b, err := os.ReadFile(toyONNX); err != nil || os.WriteFile(model, b, 0o644) != nil {
		t.Fatal(err)
	}
	stderr, err := otherUser(t, dir, "convert", model, ck, "--force")
	if want := ck + ": the new checkpoint is written beside it, in " + parent + ", first: mkdir " + filepath.Join(parent, ".ck.new-"); err == nil || !strings.Contains(stderr, want) || !strings.Contains(stderr, "permission denied") {
		t.Errorf("%v, %q; want %q… permission denied", err, stderr, want)
	}
}

// Probe 26: train --out into the folder of train --seeds started a run
// among the seed runs (and --resume there advised it); an output folder
// that cannot be entered was said not to exist.
func TestSeedsFolderIsNoRunFolder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "seeds")
	if _, stderr, code := runCLI("train", "--seeds", "1-2", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	refused := "--out " + out + " holds the seed runs of train --seeds (seeds.json): give another folder (--force replaces a run's files, not a set of runs"
	wantErr(t, refused, "train", "--iterations", "2", "--quiet", "--out", out)
	wantErr(t, refused, "train", "--iterations", "2", "--quiet", "--out", out, "--force") // probe 27: --force replaced nothing
	os.Remove(filepath.Join(out, "seeds.json"))                                           // probe 27: interrupted before writing it
	// Probe 28: the evidence is named (a user's own run may be named s1).
	wantErr(t, "--out "+out+" holds the seed runs of train --seeds (s1/, a run named as train --seeds names them)", "train", "--iterations", "2", "--quiet", "--out", out)
	wantErr(t, "--resume "+out+" holds the seed runs of train --seeds (s1/, a run named as train --seeds names them), not one run: resume one of them (flowebm train --resume "+filepath.Join(out, "sN")+")", "train", "--resume", out)
	wantErr(t, "--resume "+filepath.Join(dir, "none")+": stat ", "train", "--resume", filepath.Join(dir, "none"), "--key", "x")
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Skip(err)
	}
	wantErr(t, "--out "+filepath.Join(loop, "e.npy")+": the folder "+loop+": stat "+loop+": too many levels of symbolic links", "energy", "--model", toyONNX, "--points", filepath.Join(dir, "p.csv"), "--out", filepath.Join(loop, "e.npy"))
}

// Probe 28: train --seeds killed before its first run's config.json was in
// place (s1/ holds flowebm's .lock and a temp file) left a folder that a
// plain train --out wrote into, after which the --seeds command was refused.
func TestSeedsFolderKilledAsItStarted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "seeds")
	s1 := filepath.Join(out, "s1")
	if err := os.MkdirAll(s1, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".lock", ".config.json.tmp1234567"} {
		if err := os.WriteFile(filepath.Join(s1, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "--out "+out+" holds the seed runs of train --seeds (s1/, a run folder named as train --seeds names them, holding flowebm's .lock (a run stopped as it started))", "train", "--iterations", "2", "--quiet", "--out", out)
	if _, stderr, code := runCLI("train", "--seeds", "1-2", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", out); code != 0 {
		t.Errorf("the same --seeds again: %s", stderr)
	}
	if !exists(filepath.Join(out, "seeds.json")) || !isRun(s1) {
		t.Error("the --seeds command again wrote no seeds.json or no s1")
	}
}

// Probe 26: a legal output name too long for its lock file (.NAME.lock)
// was refused with the system's bare "file name too long".
func TestOutputLockNameTooLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), strings.Repeat("c", 250)+".npz") // 254 bytes
	_, err := lockFile("--checkpoint", path, "sample")
	// Probe 27: the lock's limit was said ("1 bytes too long"), then the
	// staging name's ("10 bytes"): the stricter one is said at once.
	if want := "--checkpoint " + path + ": the name is 15 bytes too long: it is written first as ."; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%v, want %q…", err, want)
	}
	fits := filepath.Join(filepath.Dir(path), strings.Repeat("c", 235)+".npz") // 239 bytes: 15 fewer
	release, err := lockFile("--checkpoint", fits, "sample")
	if err != nil {
		t.Errorf("a 239-byte name: %v", err)
	} else {
		release()
	}
}

// Probe 27: a run killed during its first checkpoint was to be continued
// with --resume, which then said there was nothing to resume.
func TestRunWithoutCheckpointIsStartedAgain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	args := []string{"train", "--iterations", "2", "--quiet", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	os.Remove(filepath.Join(out, "samples.npy"))
	// Probe 28: a damaged checkpoint is not "stopped before its first
	// checkpoint": the refusal names the damage (round 125 B2: it sent the
	// user to --resume, which then found nothing to resume), as --resume does.
	os.WriteFile(filepath.Join(out, "checkpoint", "state.json"), []byte("{}"), 0o644)
	wantErr(t, out+" already holds a run, but no checkpoint of it can be resumed from", args...)
	wantErr(t, "does not match the SHA-256 that", "train", "--resume", out)
	os.RemoveAll(filepath.Join(out, "checkpoint")) // as a kill during the first checkpoint leaves it
	wantErr(t, out+" holds a run that stopped before its first checkpoint was complete, so there is nothing to resume: start it again with --force", args...)
	if _, stderr, code := runCLI(append(args, "--force")...); code != 0 {
		t.Errorf("the advice: %s", stderr)
	}
}

// Probe 27: an output folder that is a link looping on itself was
// refused as "mkdir …: file exists".
func TestLockedFolderLinkLoopNamed(t *testing.T) {
	npyPath := filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy")
	loop := filepath.Join(t.TempDir(), "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Skip(err)
	}
	if _, err := lockRunAs(loop, "compare"); err == nil || err.Error() != "cannot make the folder "+loop+": stat "+loop+": too many levels of symbolic links" {
		t.Errorf("%v", err)
	}
	// Probe 29: a folder below a file was "stat …: not a directory",
	// naming neither; a link to nothing was "mkdir …: file exists".
	dir := filepath.Dir(loop)
	file := writeFile(t, dir, "f.npy", "x")
	nowhere := filepath.Join(dir, "nowhere")
	if err := os.Symlink(filepath.Join(dir, "none"), nowhere); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(file, "run"), file + " is a file, not a folder"},
		{filepath.Join(file, "a", "b"), file + " is a file, not a folder"},
		{nowhere, nowhere + " is a symbolic link to " + filepath.Join(dir, "none") + ", which does not exist: create that folder, or remove the link"},
	} {
		if _, err := lockRunAs(c.dir, "train"); err == nil || err.Error() != "cannot make the folder "+c.dir+": "+c.want {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
		refused(t, "--plots "+c.dir+": cannot create the folder: "+c.want, npyPath, "--plots", c.dir)
		if _, stderr, code := runCLI("reproduce", "--out", c.dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3"); code != 2 || !strings.Contains(stderr, "--out "+c.dir+": "+c.want) {
			t.Errorf("reproduce --out %s: exit %d: %s", c.dir, code, stderr)
		}
	}
	if exists(filepath.Join(dir, "none")) {
		t.Error("the link's target was made")
	}
	// Probe 28: diagnose --plots said "mkdir …: file exists", and
	// reproduce --out named a run's config.json under it.
	refused(t, "--plots "+loop+": cannot create the folder: stat "+loop+": too many levels of symbolic links", npyPath, "--plots", loop)
	below := filepath.Join(loop, "x")
	if _, stderr, code := runCLI("reproduce", "--out", below, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3"); code != 2 || !strings.Contains(stderr, "--out "+below+": stat "+loop+": too many levels of symbolic links") {
		t.Errorf("reproduce --out in a loop: exit %d: %s", code, stderr)
	}
}

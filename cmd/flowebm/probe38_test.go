package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Probe 37: train --seeds had no signal handler between one seed's run
// and the next, nor before its summary: a signal there killed it without
// a word. One handler now watches the whole set: the seed under way ends,
// the command says what stands and exits with the signal's status.
func TestSeedsSignalBetweenSeeds(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	for _, c := range []struct {
		seeds, want string
		skip        string // occurrences of the point to let pass
	}{
		{"1-2", "interrupted after the run of seed 1, which is complete: give the same --seeds command again to train the other seeds and write seeds.json", "0"},
		{"1-2", "interrupted after the run of seed 2, which is complete: give the same --seeds command again to write seeds.json", "1"},
	} {
		t.Setenv("FLOWEBM_CHILD_SKIP", c.skip)
		out := filepath.Join(t.TempDir(), "set")
		args := []string{"train", "--seeds", c.seeds, "--iterations", "2", "--quiet", "--out", out}
		code, stderr := outputsChild(t, "seed-trained", "INT", args...)
		if code != 130 || !strings.Contains(stderr, c.want) {
			t.Errorf("skip %s: exit %d: %s; want 130 and %q", c.skip, code, stderr, c.want)
		}
		if exists(filepath.Join(out, "seeds.json")) || c.skip == "0" && exists(filepath.Join(out, "s2")) {
			t.Errorf("skip %s: trained on after the signal", c.skip)
		}
		if _, stderr, code := runCLI(args...); code != 0 || !exists(filepath.Join(out, "seeds.json")) {
			t.Errorf("skip %s: the same command again: exit %d: %s", c.skip, code, stderr)
		}
	}
}

// Probe 37: a signal as reproduce started a run (after its check that no
// signal had come, before the train process started) left the run's
// folder with its log.txt, the run reported interrupted. A run that the
// signal stops before it trains anything leaves no folder.
func TestReproduceSignalAsRunStartsLeavesNoFolder(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	out := t.TempDir()
	code, stderr := outputsChild(t, "reproduce-child", "INT", "reproduce", "--out", out, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3")
	if code != 130 {
		t.Errorf("exit %d: %s; want 130", code, stderr)
	}
	if run := filepath.Join(out, "runs", "two-modes-ula"); exists(run) {
		entries, _ := os.ReadDir(run)
		t.Errorf("the run that the signal stopped at its start left %s: %v", run, entries)
	}
}

// Probe 36: a signal as diagnose --plots printed its report left an empty
// parent folder, or the folder holding .lock (4 of 60): the command made
// its folder again, and locked it, after the signal's cleanup had removed
// it and before the handler exited. After the cleanup nothing is made.
func TestDiagnoseMakesNothingAfterSignalCleanup(t *testing.T) {
	made := filepath.Join(t.TempDir(), "g")
	code, stderr := outputsChild(t, "diagnose-read", "CLEANUP_LATE", "diagnose", "--plots", filepath.Join(made, "h"), filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"))
	if code != 130 || !strings.Contains(stderr, "the cleanup ran at diagnose-read") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if exists(made) {
		t.Errorf("the folders that the cleanup removed were made again: %s", made)
	}
}

// Probe 37: a checkpoint's lock file shared by hard link with a copy of
// its folder (cp -al) and held there was said to be another process
// writing this file; one held by none stayed shared. The held one is
// named as shared, the free one replaced by the file's own.
func TestSharedFileLock(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ck := filepath.Join(b, "k.npz")
	lockA, lockB := filepath.Join(a, ".k.npz.lock"), filepath.Join(b, ".k.npz.lock")
	if err := os.WriteFile(lockA, []byte("sample\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(lockA, lockB); err != nil {
		t.Skip(err)
	}
	f, err := os.Open(lockA)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, err = lockFile("--checkpoint", ck, "sample")
	if want := "--checkpoint " + ck + ": another flowebm process holds " + lockB + ", which has 2 hard links"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("held through a link: %v, want %q…", err, want)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	release, err := lockFile("--checkpoint", ck, "sample")
	if err != nil {
		t.Fatalf("free, shared through a link: %v", err)
	}
	defer release()
	fa, errA := os.Stat(lockA)
	fb, errB := os.Stat(lockB)
	if errA != nil || errB != nil || os.SameFile(fa, fb) {
		t.Errorf("the lock taken is still the copy's (%v, %v)", errA, errB)
	}
}

// Probes 36–37: Gather with no indices gave nd's internal
// "nd: Gather{…}" string (it is an empty tensor, which a Concat drops, as
// Slice's is); Resize given 3 scales for a rank-2 input did not say how
// many it got; energy --grad on an energy without a gradient named no
// model.
func TestRound37ONNXWordings(t *testing.T) {
	edge := filepath.Join("..", "..", "io", "onnx", "testdata", "edge")
	pts := filepath.Join(t.TempDir(), "p.csv")
	os.WriteFile(pts, []byte("0.3,-1.2\n2.5,0.7\n-1,0.4\n"), 0o644)
	model := func(name string) string { return filepath.Join(edge, name+".onnx") }
	got, stderr, code := runCLI("energy", "--model", model("empty_gather"), "--points", pts)
	want, _, _ := runCLI("energy", "--model", model("plain_ref"), "--points", pts)
	if code != 0 || got != want || want == "" {
		t.Errorf("empty_gather: exit %d: %q %s; want %q", code, got, stderr, want)
	}
	if _, stderr, code := runCLI("energy", "--model", model("resize_scales3"), "--points", pts); code != 2 || !strings.Contains(stderr, "scales must be 2 constants, one per axis of its input (of rank 2): got 3") {
		t.Errorf("resize_scales3: exit %d: %s", code, stderr)
	}
	grad := filepath.Join(t.TempDir(), "g.npy")
	if _, stderr, code := runCLI("energy", "--model", model("shape_only_energy"), "--points", pts, "--grad", grad); code != 2 || !strings.Contains(stderr, "--model "+model("shape_only_energy")+" at the points of "+pts+": the energy has no gradient") {
		t.Errorf("shape_only_energy --grad: exit %d: %s", code, stderr)
	}
}

// Probe 37 wordings: --out s.npy/ was "its last part is \"\"", s.npy/.
// "ends in /"; an empty file hard-linked as a lock "holds other text";
// a graph's error named its file twice once energy named the model.
func TestRound37Wordings(t *testing.T) {
	dir := t.TempDir()
	for out, want := range map[string]string{
		filepath.Join(dir, "s.npy") + "/":  "ends in /, which names a folder, not a file",
		filepath.Join(dir, "s.npy") + "/.": `names a folder, not a file (its last part is ".")`,
	} {
		if _, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "4", "--steps", "8", "--out", out); code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("--out %s: exit %d: %s; want %q", out, code, stderr, want)
		}
	}
	run := filepath.Join(dir, "run")
	copyRun(t, trainedRun(t), run)
	done := filepath.Join(dir, "DONE")
	os.WriteFile(done, nil, 0o644)
	os.Remove(filepath.Join(run, ".lock"))
	if err := os.Link(done, filepath.Join(run, ".lock")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("plot", run); code != 2 || !strings.Contains(stderr, "has 2 hard links and is empty") {
		t.Errorf("an empty file linked as .lock: exit %d: %s", code, stderr)
	}
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n5,6\n"), 0o644)
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "gemm_transA.onnx")
	if _, stderr, code := runCLI("energy", "--model", model, "--points", pts); code != 2 || strings.Count(stderr, model) != 1 {
		t.Errorf("the model is named %d times: %s", strings.Count(stderr, model), stderr)
	}
}

// Probe 37: a seed's run that failed gave its own advice (--force,
// --resume OUT/sN), which trains the finished seeds again or leaves the
// others. A run that diverges at once (max_energy below every energy)
// fails in seed 1: the advice is the same --seeds command.
func TestSeedFailureAdvice(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.json")
	os.WriteFile(cfg, []byte(`{"experiment": "two-modes", "train": {"iterations": 4, "max_energy": 1e-12}}`), 0o644)
	_, stderr, code := runCLI("train", "--config", cfg, "--seeds", "1-2", "--quiet", "--out", filepath.Join(dir, "set"))
	if want := "(for train --seeds: once the cause is fixed, give the same --seeds command again: it keeps the finished seeds"; code != 2 || !strings.HasPrefix(stderr, "flowebm: seed 1: ") || !strings.Contains(stderr, want) {
		t.Errorf("exit %d: %s; want %q", code, stderr, want)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Probe 42, left from it: an output inside a folder that another process
// holds, under a name that the training run there replaces (a run
// setting up, before its config.json; its first checkpoint replaces
// checkpoint/), was written at exit 0: only convert looked above its
// target. Such an output is refused now; elsewhere in a held folder (a
// seed's run in train --seeds' folder, a run in reproduce's OUT/runs)
// nothing replaces it, and it is written.
func TestOutputsWhereAHeldRunWrites(t *testing.T) {
	chains := diagnoseChains(t)
	toy, _, dir := inTempDir(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	release, err := lockRunAs("H", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.MkdirAll(filepath.Join("H", "checkpoint"), 0o755)
	os.Symlink("H", "L")
	os.Symlink("checkpoint", filepath.Join("H", "ck")) // H/ck/x is in H/checkpoint
	for _, c := range []struct {
		made string
		args []string
	}{
		{filepath.Join("H", "checkpoint", "e.csv"), []string{"energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("H", "checkpoint", "e.csv")}},
		{filepath.Join("H", "checkpoint", "s.npy"), []string{"sample", "--model", toy, "--chains", "2", "--steps", "4", "--out", filepath.Join("L", "checkpoint", "s.npy")}},
		{filepath.Join("H", "checkpoint", "e2.csv"), []string{"energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("H", "ck", "e2.csv")}},
		{filepath.Join("H", "checkpoint.new"), []string{"diagnose", chains, "--plots", filepath.Join("H", "checkpoint.new")}},
		{filepath.Join("H", "checkpoint.old"), []string{"train", "--experiment", "two-modes", "--iterations", "2", "--quiet", "--out", filepath.Join("H", "checkpoint.old", "t")}},
		{filepath.Join("H", "samples.npy"), []string{"train", "--experiment", "two-modes", "--iterations", "2", "--quiet", "--seeds", "1", "--out", filepath.Join("L", "samples.npy")}},
	} {
		_, stderr, code := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, ", which the process holding ") || !strings.Contains(stderr, "another flowebm process is writing into the folder ") {
			t.Errorf("%s into a folder that the run H, held by another process, replaces: exit %d: %s", c.args[0], code, stderr)
		}
		if exists(c.made) && c.made != filepath.Join("H", "checkpoint") {
			t.Errorf("%s: %s was made", c.args[0], c.made)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join("H", "checkpoint")); len(entries) != 0 {
		t.Errorf("H/checkpoint holds %v", entries)
	}
	// Elsewhere in it, nothing replaces the output.
	if _, stderr, code := runCLI("energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("H", "checkpoint-mine.csv")); code != 2 || !strings.Contains(stderr, "another flowebm process is writing into the folder H (it holds") {
		t.Errorf("energy --out in H itself: exit %d: %s", code, stderr)
	}
	os.Mkdir(filepath.Join("H", "sub"), 0o755)
	if _, stderr, code := runCLI("energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("H", "sub", "e.csv")); code != 0 {
		t.Errorf("energy --out H/sub/e.csv: exit %d: %s", code, stderr)
	}
	rrel, err := lockRunAs("R", "reproduce")
	if err != nil {
		t.Fatal(err)
	}
	defer rrel()
	// Probe 47: R/runs is the holder's, whose own train processes write
	// there (it passes them its lock); another process's train is refused.
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--iterations", "2", "--quiet", "--out", filepath.Join("R", "runs", "t")); code != 2 || !strings.Contains(stderr, "which the process holding ") {
		t.Errorf("train into R/runs, R held by another reproduce: exit %d: %s", code, stderr)
	}
	// Probe 48: the variable counts only where the parent holds the lock
	// (this process, for the child below), not in any process given it.
	t.Setenv(parentLocksEnv, strings.TrimPrefix(ownLocksEnv("R"), parentLocksEnv+"="))
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--iterations", "2", "--quiet", "--out", filepath.Join("R", "runs", "t")); code != 2 {
		t.Errorf("train into R/runs, R held by this process, given %s: exit %d: %s", parentLocksEnv, code, stderr)
	}
	if code, stderr := outputsChild(t, "", "", "train", "--experiment", "two-modes", "--iterations", "2", "--quiet", "--out", filepath.Join("R", "runs", "t")); code != 0 {
		t.Errorf("train into R/runs, R held by its parent: exit %d: %s", code, stderr)
	}
	os.Unsetenv(parentLocksEnv)
	// Probe 44: reproduce's --out, a reproduce's folder inside a run
	// setting up (its own lock hid the run's above), the files that
	// train --seeds and reproduce write into the folders they hold.
	inner, err := lockRunAs(filepath.Join("H", "checkpoint.old", "RR"), "reproduce")
	if err != nil {
		t.Fatal(err)
	}
	defer inner()
	srel, err := lockRunAs("S", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer srel()
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--out H/checkpoint is in ", []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "2", "--out", filepath.Join("H", "checkpoint")}},
		{"--out H/checkpoint is in ", []string{"reproduce", "--plan", "p.txt", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "2", "--out", filepath.Join("H", "checkpoint")}},
		{"is in " + filepath.Join(dir, "H", "checkpoint.old"), []string{"train", "--experiment", "two-modes", "--iterations", "2", "--quiet", "--out", filepath.Join("H", "checkpoint.old", "RR", "runs", "t")}},
		{"--plots S/seeds.json is in ", []string{"diagnose", chains, "--plots", filepath.Join("S", "seeds.json")}},
		{"--plots R/report.md is in ", []string{"diagnose", chains, "--plots", filepath.Join("R", "report.md")}},
	} {
		if _, stderr, code := runCLI(c.args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d: %s; want %q", c.args, code, stderr, c.want)
		}
	}
	// A file output replaces a link in its place: the link's target is
	// not where it is written (probe 44).
	os.WriteFile(filepath.Join("H", "checkpoint", "zz.csv"), nil, 0o644)
	os.Symlink(filepath.Join("..", "checkpoint", "zz.csv"), filepath.Join("H", "sub", "l2.csv"))
	if _, stderr, code := runCLI("energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("H", "sub", "l2.csv"), "--force"); code != 0 {
		t.Errorf("energy --out H/sub/l2.csv, a link into H/checkpoint: exit %d: %s", code, stderr)
	}
	// convert follows the same rule (probe 44: it refused under any held
	// folder).
	if _, stderr, code := runCLI("convert", toy, filepath.Join("R", "models", "m")); code != 0 {
		t.Errorf("convert into R/models, R held by reproduce: exit %d: %s", code, stderr)
	}
}

// Probe 42: a --config naming mnist28, with FLOWEBM_MNIST naming no
// folder, said "cm.json: data_dir /nonexistent-dir: …" of a config that
// has no data_dir; --experiment mnist28 named the variable.
func TestConfigImageFolderFromVariable(t *testing.T) {
	inTempDir(t)
	os.WriteFile("cm.json", []byte(`{"experiment": "mnist28", "train": {"iterations": 2}}`), 0o644)
	t.Setenv("FLOWEBM_MNIST", "nothere")
	want := "FLOWEBM_MNIST=nothere is not a folder: want the folder holding train-images-idx3-ubyte.gz"
	for _, args := range [][]string{
		{"train", "--config", "cm.json", "--quiet", "--out", "tc"},
		{"train", "--experiment", "mnist28", "--iterations", "2", "--quiet", "--out", "tc"},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, want) || strings.Contains(stderr, "data_dir") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	if exists("tc") {
		t.Error("tc was made")
	}
	// A folder without the files names the variable too (probe 44).
	os.Mkdir("empty", 0o755)
	t.Setenv("FLOWEBM_MNIST", "empty")
	if _, stderr, code := runCLI("train", "--config", "cm.json", "--quiet", "--out", "tc"); code != 2 || !strings.Contains(stderr, "train-images.idx3-ubyte (Kaggle's name) in empty (the folder that FLOWEBM_MNIST names)") {
		t.Errorf("an empty FLOWEBM_MNIST folder: exit %d: %s", code, stderr)
	}
	// And by --experiment (probe 45: the variable not named).
	t.Setenv("FLOWEBM_FASHION_MNIST", "empty")
	for _, e := range []string{"mnist28", "fashion-mnist"} {
		env := map[string]string{"mnist28": "FLOWEBM_MNIST", "fashion-mnist": "FLOWEBM_FASHION_MNIST"}[e]
		if _, stderr, code := runCLI("train", "--experiment", e, "--iterations", "2", "--quiet", "--out", "tc"); code != 2 || !strings.Contains(stderr, "(the folder that "+env+" names)") {
			t.Errorf("--experiment %s, an empty %s folder: exit %d: %s", e, env, code, stderr)
		}
	}
}

// Probe 37 wording, left: energy --checkpoint X said "--model X" of a
// model that failed at the points.
func TestEnergyNamesTheFlagGiven(t *testing.T) {
	_, edge, _ := inTempDir(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	model := filepath.Join(edge, "shape_only_energy.onnx")
	for _, flag := range []string{"--model", "--checkpoint"} {
		if _, stderr, code := runCLI("energy", flag, model, "--points", "p.csv", "--grad", "g.npy"); code != 2 || !strings.Contains(stderr, "flowebm: "+flag+" "+model+" at the points of p.csv: the energy has no gradient") {
			t.Errorf("%s: exit %d: %s", flag, code, stderr)
		}
	}
}

// removeUnstarted removes a run folder that holds only its log (and a
// lock no process holds), and keeps one that a process holds or that
// holds more: it now reads and empties the folder holding its lock
// (probe 41: it checked the lock, then removed .lock).
func TestRemoveUnstarted(t *testing.T) {
	inTempDir(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		os.Mkdir(name, 0o755)
		os.WriteFile(filepath.Join(name, "log.txt"), []byte("== run\n"), 0o644)
	}
	os.WriteFile(filepath.Join("b", ".lock"), nil, 0o644)
	os.WriteFile(filepath.Join("c", "config.json"), []byte("{}"), 0o644)
	release, err := lockRunAs("d", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for name, removed := range map[string]bool{"a": true, "b": true, "c": false, "d": false} {
		if got := removeUnstarted(name, ""); got != removed || exists(name) == removed {
			t.Errorf("%s: removed %v, exists %v; want removed %v", name, got, exists(name), removed)
		}
	}
	if !exists(filepath.Join("d", ".lock")) || !exists(filepath.Join("d", "log.txt")) {
		t.Error("d, held, lost its files")
	}
	if removeUnstarted("gone", "") || exists("gone") {
		t.Error("a folder gone was made")
	}
}

// Probe 43: a lock with other hard links (a copy made with cp -al) was
// removed by its path, by a count of links read before the flock. A
// process that had meanwhile removed it and made its own in its place
// lost that lock to the first, and both trained one run (two train
// --resume), or wrote one sample --checkpoint. The file in place is
// compared under the flock before it is removed.
func TestCopysLockReplacedMeanwhile(t *testing.T) {
	inTempDir(t)
	os.Mkdir("S", 0o755)
	os.WriteFile(filepath.Join("S", ".lock"), []byte("train\n"), 0o644)
	os.Mkdir("S.bak", 0o755)
	os.Link(filepath.Join("S", ".lock"), filepath.Join("S.bak", ".lock"))
	os.WriteFile(".ck.npz.lock", []byte("sample\n"), 0o644)
	os.Mkdir("bak", 0o755)
	os.Link(".ck.npz.lock", filepath.Join("bak", ".ck.npz.lock"))
	// Folder locks: the other process takes the copy's lock, removes it
	// and makes its own, between this one's count and its flock; takeLock
	// is lockRunAs's, outside its Hold, which the outer one holds.
	takenMeanwhile(t, "lock-counted", func() (func(), error) {
		f, _, _, err := takeLock("S", "train")
		if err != nil {
			return nil, err
		}
		return func() { f.Close() }, nil
	}, func() (func(), error) { return lockRunAs("S", "train") }, "another flowebm process is training in this folder")
	// A file's lock (sample --checkpoint) the same way.
	takenMeanwhile(t, "file-lock-counted", func() (func(), error) {
		release, _, err := takeFileLock("--checkpoint", "ck.npz", ".ck.npz.lock", "sample")
		return release, err
	}, func() (func(), error) { return lockFile("--checkpoint", "ck.npz", "sample") }, "another flowebm process (flowebm sample) is writing it")
}

// takenMeanwhile has other take a lock at the hook point of take, which
// must then be refused with want.
func takenMeanwhile(t *testing.T, point string, other, take func() (func(), error), want string) {
	t.Helper()
	defer func() { testHook = nil }()
	var release func()
	testHook = func(p string) {
		if p == point && release == nil {
			release = func() {}
			r, err := other()
			if err != nil {
				t.Fatal(err)
			}
			release = r
		}
	}
	if r, err := take(); err == nil || !strings.Contains(err.Error(), want) {
		if r != nil {
			r()
		}
		t.Errorf("a lock taken meanwhile by another process: %v, want refused as busy", err)
	}
	if release == nil {
		t.Fatal("the hook did not run")
	}
	release()
}

// Probe 43: reproduce appended a run's output to its log.txt through a
// symbolic link there (and hung on a FIFO, and changed a cp -al copy's
// log in place: safefile's TestOpenAppend).
func TestReproduceLogNotThroughALink(t *testing.T) {
	inTempDir(t)
	run := filepath.Join("R", "runs", "two-modes-ula")
	os.MkdirAll(run, 0o755)
	os.WriteFile("victim.txt", []byte("mine\n"), 0o644)
	victim, _ := filepath.Abs("victim.txt")
	os.Symlink(victim, filepath.Join(run, "log.txt"))
	_, stderr, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", "R")
	if code != 2 || !strings.Contains(stderr, filepath.Join(run, "log.txt")+" is a symbolic link, want a regular file") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile("victim.txt"); string(b) != "mine\n" {
		t.Errorf("written through the link: %q", b)
	}
}

// Probe 43: another process's check of a lock (lockedByOther holds a
// shared flock for a moment) made a command taking it refuse, saying
// that a process trained in the folder. The check is waited out.
func TestLockTakenPastACheck(t *testing.T) {
	inTempDir(t)
	os.Mkdir("S", 0o755)
	os.WriteFile(filepath.Join("S", ".lock"), []byte("train\n"), 0o644)
	checker, err := os.Open(filepath.Join("S", ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Close()
	if err := syscall.Flock(int(checker.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	busy := 0
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "lock-busy" {
			if busy++; busy == 2 { // the check ends
				syscall.Flock(int(checker.Fd()), syscall.LOCK_UN)
			}
		}
	}
	release, err := lockRunAs("S", "train")
	if err != nil {
		t.Fatalf("locking past a check: %v", err)
	}
	release()
	if busy != 2 {
		t.Errorf("the lock was found busy %d times, want 2", busy)
	}
}

// Probe 43: a copy made with cp -al of a run being trained shares its
// held .lock, and was said to be trained itself (compare, reproduce
// --plan). The lock's other names are said.
func TestCopyOfARunBeingTrained(t *testing.T) {
	inTempDir(t)
	for _, d := range []string{"V", filepath.Join("RV", "runs", "two-modes-ula")} {
		release, err := lockRunAs(d, "train")
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"experiment": "two-modes", "seed": 1, "train": {"algorithm": "ula", "iterations": 3}}`), 0o644)
	}
	copyOf := func(from, to string) {
		os.MkdirAll(to, 0o755)
		for _, name := range []string{".lock", "config.json"} {
			if err := os.Link(filepath.Join(from, name), filepath.Join(to, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyOf("V", "V.bak")
	copyOf(filepath.Join("RV", "runs", "two-modes-ula"), filepath.Join("RV2", "runs", "two-modes-ula"))
	if _, stderr, code := runCLI("compare", "V.bak", "--out", "C"); code != 2 || !strings.Contains(stderr, "V.bak/.lock, which has 2 hard links: a copy of the folder made with cp -al or rsync --link-dest shares it, and the process may work in the copy") {
		t.Errorf("compare of a copy: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runCLI("reproduce", "--plan", "p.txt", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", "RV2")
	plan, _ := os.ReadFile("p.txt")
	first, _, _ := strings.Cut(string(plan), "\n")
	// Its line resumes it, as it does a run being trained: a fresh line
	// would start over the run if it is the one trained (probe 44).
	if code != 0 || !strings.Contains(stdout, "two-modes-ula (here or in a copy: its .lock has 2 hard links)") || !strings.Contains(first, "--resume RV2/runs/two-modes-ula") {
		t.Errorf("reproduce --plan of a copy: exit %d: %s %s; line 1: %s", code, stdout, stderr, first)
	}
}

// Probe 43: energy --model <(cat m.onnx), a pipe, was "a file: want a
// checkpoint or run folder".
func TestEnergyModelAPipe(t *testing.T) {
	toy, _, _ := inTempDir(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	if err := syscall.Mkfifo("m", 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	if _, stderr, code := runCLI("energy", "--model", "m", "--points", "p.csv"); code != 2 || !strings.Contains(stderr, "m is neither a regular file nor a folder (mode p---------): want a checkpoint or run folder here, or for --model an .onnx energy, a regular file named .onnx") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI("convert", "m", "m2.onnx"); code != 2 || !strings.Contains(stderr, "CHECKPOINT m is neither a regular file nor a folder (mode p---------)") {
		t.Errorf("convert: exit %d: %s", code, stderr)
	}
	// --flow named as such (probe 45: worded for --model).
	if _, stderr, code := runCLI("sample", "--model", toy, "--sampler", "flowmc", "--flow", "m", "--chains", "2", "--steps", "4", "--out", "s.npy"); code != 2 || !strings.Contains(stderr, "--flow m is neither a regular file nor a folder (mode p---------): want a checkpoint or run folder that holds a flow") {
		t.Errorf("sample --flow: exit %d: %s", code, stderr)
	}
}

// Probe 43 B: a report that could not be written (a full disk) ended
// reproduce with the bare write error: not that no report was written,
// which runs failed, or what to do.
func TestReproduceReportNotWritten(t *testing.T) {
	inTempDir(t)
	os.MkdirAll(filepath.Join("R", "runs", "two-modes-ula", "log.txt"), 0o755) // the run cannot start
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "reproduce-trained" { // the report's place taken after the checks at start (no figure is drawn: no run has evaluated)
			os.MkdirAll(filepath.Join("R", "report.md", "x"), 0o755)
		}
	}
	_, stderr, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", "R")
	for _, want := range []string{"flowebm: no report written (", "); 1 of 1 runs failed or did not finish: two-modes-ula (", "; start the same reproduce command again once the cause is fixed: it writes the report (and retries the runs that failed)"} {
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d: %s; want %q", code, stderr, want)
		}
	}
	if strings.Contains(stderr, "the runs trained are kept") { // probe 44: none had trained
		t.Errorf("said runs trained are kept: %s", stderr)
	}
	if fi, err := os.Stat(filepath.Join("R", "report.md")); err != nil || fi.Mode().IsRegular() {
		t.Errorf("report.md was written, or its folder removed (%v)", err)
	}
}

// Probe 43 B, noted: a run interrupted under reproduce was said to be
// started again by "write the plan again" where no plan was written.
// reproduce's own runs are started by reproduce; --report's by the plan
// or the reproduce that trained them.
func TestStatusSaysHowToStartAgain(t *testing.T) {
	inTempDir(t)
	os.MkdirAll("r", 0o755)
	os.WriteFile(filepath.Join("r", "log.txt"), []byte("flowebm: interrupted before training started: nothing was trained\n"), 0o644)
	for _, c := range []struct {
		f    reproduceFlags
		want string
	}{
		{reproduceFlags{}, "interrupted before its first checkpoint: start it again (reproduce again)"},
		{reproduceFlags{report: "."}, "interrupted before its first checkpoint: start it again (write the plan again, or reproduce again)"},
	} {
		r := &reproRun{experiment: "two-modes", algorithm: "ula", dir: "r"}
		r.collect(c.f)
		if r.err != c.want {
			t.Errorf("report %q: %q, want %q", c.f.report, r.err, c.want)
		}
	}
}

// Probe 44: in a working folder deeper than PATH_MAX, the lock of a held
// folder could not be opened by its absolute path, and outputs were
// written where its holder writes.
func TestHeldFolderInADeepWorkingFolder(t *testing.T) {
	toy, _, _ := inTempDir(t)
	orig, _ := os.Getwd()
	defer os.Chdir(orig)
	name := strings.Repeat("d", 250)
	for range 18 { // 18 × 251 bytes: deeper than 4,096
		if err := os.Mkdir(name, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chdir(name); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	release, err := lockRunAs("H", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.Mkdir(filepath.Join("H", "checkpoint.old"), 0o755)
	if _, stderr, code := runCLI("energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("H", "checkpoint.old", "e.csv")); code != 2 || !strings.Contains(stderr, "which the process holding H writes") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// Through a link into the held folder (probe 45: its links were not
	// followed, the absolute path being beyond PATH_MAX).
	os.Symlink(filepath.Join("H", "checkpoint.old"), "L")
	if _, stderr, code := runCLI("energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("L", "e.csv")); code != 2 || !strings.Contains(stderr, "which the process holding H writes") {
		t.Errorf("through L: exit %d: %s", code, stderr)
	}
	if exists(filepath.Join("H", "checkpoint.old", "e.csv")) {
		t.Error("e.csv was written")
	}
}

// Probe 45: a folder that compare (or diagnose, convert, …) holds was
// refused only under a run's names: compare --out C/summary.md made the
// holder fail at its end. Any name in it is its holder's; and
// reproduce's --out checks ran only on a given --out, not its default.
func TestHeldByOtherCommandsAndDefaultOut(t *testing.T) {
	chains := diagnoseChains(t)
	inTempDir(t)
	release, err := lockRunAs("C", "compare")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, stderr, code := runCLI("diagnose", chains, "--plots", filepath.Join("C", "summary.md")); code != 2 || !strings.Contains(stderr, "--plots C/summary.md is in ") {
		t.Errorf("diagnose --plots C/summary.md, C held by compare: exit %d: %s", code, stderr)
	}
	hrel, err := lockRunAs("H", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer hrel()
	os.MkdirAll(filepath.Join("H", "checkpoint.old"), 0o755)
	t.Chdir(filepath.Join("H", "checkpoint.old"))
	if _, stderr, code := runCLI("reproduce", "--quick", "--experiments", "two-modes", "--algorithms", "ula"); code != 2 || !strings.Contains(stderr, "--out "+filepath.Join("runs", "reproduce-quick")+" is in ") {
		t.Errorf("reproduce's default --out inside H/checkpoint.old: exit %d: %s", code, stderr)
	}
	if exists("runs") {
		t.Error("runs/ was made")
	}
}

// Probe 44: a run that reproduce could not start (its log.txt a FIFO),
// which an earlier reproduce had left unfinished, was summed up as
// "incomplete: stopped (killed, or its time ran out)".
func TestReproduceNamesWhyARunDidNotStart(t *testing.T) {
	inTempDir(t)
	run := filepath.Join("R", "runs", "two-modes-ula")
	os.MkdirAll(run, 0o755)
	os.WriteFile(filepath.Join(run, "config.json"), []byte(`{"experiment": "two-modes", "seed": 1, "train": {"algorithm": "ula", "iterations": 3}}`), 0o644)
	if err := syscall.Mkfifo(filepath.Join(run, "log.txt"), 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	_, stderr, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", "R")
	if want := "1 of 1 runs failed or did not finish: two-modes-ula (" + filepath.Join(run, "log.txt") + " is a named pipe (FIFO), want a regular file)"; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d: %s; want %q", code, stderr, want)
	}
}

// Probe 44 B: a kill as reproduce copied a log.txt shared with a cp -al
// copy left .log.txt.tmpN, which nothing removed; a signal once every
// run had ended was said to stop "the runs under way".
func TestReproduceLeftoversAndLateSignal(t *testing.T) {
	inTempDir(t)
	run := filepath.Join("R", "runs", "two-modes-ula")
	os.MkdirAll(filepath.Join(run, "log.txt"), 0o755) // the run then fails to start, after the leftovers' removal
	stale := filepath.Join(run, ".log.txt.tmp12345")
	os.WriteFile(stale, []byte("cut short"), 0o644)
	runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", "R")
	if exists(stale) {
		t.Error("the copy of log.txt that a kill cut short was left")
	}

	done := filepath.Join("D", "runs", "two-modes-ula")
	os.MkdirAll(done, 0o755)
	os.WriteFile(filepath.Join(done, "samples.npy"), nil, 0o644) // written last: the run is done
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	code, stderr := outputsChild(t, "reproduce-runs-ended", "INT", "reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", "D")
	if code != 130 || !strings.Contains(stderr, "interrupted once every run had ended (see the lines above): no report written; start the same reproduce command again to write it") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 45: a signal once the first of two runs had ended, before the
// second started, said "the runs under way stopped at their last
// checkpoint", of none, and named no run left.
func TestReproduceSignalBetweenRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	t.Setenv("FLOWEBM_CHILD_SKIP", "1") // the second run's start
	code, stderr := outputsChild(t, "reproduce-run", "INT", "reproduce", "--experiments", "two-modes", "--algorithms", "ula,nt", "--iterations", "3", "--jobs", "1", "--out", out)
	if code != 130 || !strings.Contains(stderr, "interrupted before 1 of 2 runs started (two-modes-") || !strings.Contains(stderr, "the runs that ended are kept, no report written; start the same reproduce command again to train them and write it") || strings.Contains(stderr, "the runs under way stopped") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 45 B: "the runs trained are kept" was said where a run's train
// process had started and written nothing; a signal once every run had
// ended, one of them failed, said "the runs under way stopped".
func TestReproduceStopNotes(t *testing.T) {
	inTempDir(t)
	os.MkdirAll(filepath.Join("a", "checkpoint"), 0o755)
	os.MkdirAll("b", 0o755)
	started := &reproRun{dir: "b", trained: true}
	if got := keptNote([]*reproRun{started}); got != "" {
		t.Errorf("a run started that wrote nothing: %q, want none", got)
	}
	if got := keptNote([]*reproRun{started, {dir: "a", trained: true}}); got != "the runs trained are kept" {
		t.Errorf("a run with a checkpoint: %q", got)
	}
	if got := keptNote([]*reproRun{{dir: "b", outcome: outcome{outcomeFailed, "FAILED (retried by the next reproduce): x"}}}); got != "it retries the runs that failed" {
		t.Errorf("a run failed: %q", got)
	}

	failed := filepath.Join("R", "runs", "two-modes-ula")
	os.MkdirAll(filepath.Join(failed, "log.txt"), 0o755) // it fails to start
	done := filepath.Join("R", "runs", "two-modes-nt")
	os.MkdirAll(done, 0o755)
	os.WriteFile(filepath.Join(done, "samples.npy"), nil, 0o644)
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	code, stderr := outputsChild(t, "reproduce-runs-ended", "INT", "reproduce", "--experiments", "two-modes", "--algorithms", "ula,nt", "--iterations", "3", "--out", "R")
	if code != 130 || !strings.Contains(stderr, "interrupted once every run had ended (see the lines above): no report written; start the same reproduce command again to write it (and to retry the runs that failed)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 46: a run skipped because another process trains it was named
// among the runs "not started" by the interrupt.
func TestReproduceSignalNamesSkippedRuns(t *testing.T) {
	inTempDir(t)
	release, err := lockRunAs(filepath.Join("R", "runs", "two-modes-nt"), "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	done := filepath.Join("R", "runs", "two-modes-ula")
	os.MkdirAll(done, 0o755)
	os.WriteFile(filepath.Join(done, "samples.npy"), nil, 0o644)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "reproduce-runs-ended" {
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			time.Sleep(500 * time.Millisecond) // the handler cancels
		}
	}
	_, stderr, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula,nt", "--iterations", "3", "--jobs", "1", "--out", "R")
	if code != 130 || !strings.Contains(stderr, "interrupted once every run had ended or was skipped (see the lines above): no report written; start the same reproduce command again to write it (skipped, as another process trains them: two-modes-nt)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
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
	out := filepath.Join(t.TempDir(), "r")
	code, stderr := outputsChild(t, "reproduce-child", "INT", "reproduce", "--out", out, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3")
	if code != 130 || !strings.Contains(stderr, "interrupted before any run trained: nothing was trained") {
		t.Errorf("exit %d: %s; want 130, and no run said to be under way", code, stderr)
	}
	if run := filepath.Join(out, "runs", "two-modes-ula"); exists(run) {
		entries, _ := os.ReadDir(run)
		t.Errorf("the run that the signal stopped at its start left %s: %v", run, entries)
	}
	// Nor the --out it made, with an empty runs/ (probe 36).
	if exists(out) {
		entries, _ := os.ReadDir(out)
		t.Errorf("reproduce, interrupted before any run trained, left the --out it made: %v", entries)
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
	sameEnergies(t, model("empty_gather"), model("plain_ref"), pts)
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

// Probe 38: round 37's refusal of .. after a symbolic link read the part
// before it with Lstat, which follows the link in L/. and L/: energy --out
// L/./../metrics.csv replaced a file of the input run again, and two
// samplers wrote one checkpoint (S/./../ck.npz locked elsewhere); an input
// L/.. was read as the working folder (energy --model L/.. evaluated
// another run, compare L/.. . compared a run with itself). Every path
// argument and path flag is now checked: where the system's parent and
// Go's differ, the path is refused; legitimate .. stays accepted.
func TestDotDotBypassesRefused(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "R1")
	copyRun(t, trainedRun(t), run)
	other := filepath.Join(dir, "RA")
	copyRun(t, trainedRun(t), other)
	work := filepath.Join(dir, "W")
	os.Mkdir(work, 0o755)
	l, lr := filepath.Join(work, "L"), filepath.Join(work, "LR")
	os.Symlink(filepath.Join(run, "checkpoint"), l)
	os.Symlink(run, lr)
	before, _ := os.ReadFile(filepath.Join(run, "metrics.csv"))
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.3,-1.2\n"), 0o644)
	for _, args := range [][]string{
		{"energy", "--model", run, "--points", pts, "--out", l + "/./../metrics.csv", "--force"},
		{"energy", "--model", run, "--points", pts, "--out", l + "//../metrics.csv", "--force"},
		{"energy", "--model", run, "--points", pts, "--out", lr + "/checkpoint/../../R1/metrics.csv", "--force"},
		{"sample", "--model", run, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"), "--checkpoint", l + "/./../ck.npz"},
		{"convert", run, l + "/./../m.onnx"},
		{"energy", "--model", l + "/..", "--points", pts},
		{"compare", l + "/..", other, "--out", filepath.Join(dir, "cmp")},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "which the system resolves through a symbolic link") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(run, "metrics.csv")); !bytes.Equal(after, before) {
		t.Error("a file of the input run was replaced")
	}
	for _, p := range []string{filepath.Join(run, "m.onnx"), filepath.Join(run, "ck.npz"), filepath.Join(dir, "cmp")} {
		if exists(p) {
			t.Errorf("%s was written", p)
		}
	}
	sub := filepath.Join(other, "sub")
	os.Mkdir(sub, 0o755)
	if _, stderr, code := runCLI("energy", "--model", sub+"/../../R1", "--points", pts); code != 0 {
		t.Errorf("a .. after folders: exit %d: %s", code, stderr)
	}
}

// Probe 38: torch.split(h, [0, 8], 1) exports a Split with an empty part,
// refused with nd's internal "Slice{…}"; an empty operand that does not
// broadcast got the hint about a batch size traced as a constant; a
// model folder named "the" went unnamed ("the energy …" held its name).
func TestRound38ONNXAndWordings(t *testing.T) {
	edge := filepath.Join("..", "..", "io", "onnx", "testdata", "edge")
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.3,-1.2\n2.5,0.7\n-1,0.4\n"), 0o644)
	model := func(name string) string { return filepath.Join(edge, name+".onnx") }
	sameEnergies(t, model("split_zero"), model("split_zero_ref"), pts)
	if _, stderr, code := runCLI("energy", "--model", model("empty_mul"), "--points", pts); code != 2 || !strings.Contains(stderr, "is empty (it holds no value)") || strings.Contains(stderr, "batch size") {
		t.Errorf("empty_mul: exit %d: %s", code, stderr)
	}
	t.Chdir(dir)
	copyRun(t, trainedRun(t), "the")
	os.WriteFile("nan.csv", []byte("1e308,1e308\n"), 0o644)
	if _, stderr, code := runCLI("energy", "--model", "the", "--points", "nan.csv"); code != 2 || !strings.HasPrefix(stderr, "flowebm: --model the at the points of nan.csv: ") {
		t.Errorf("--model the: exit %d: %s", code, stderr)
	}
}

// Probe 38: convert IN.onnx into a folder that compare was drawing into
// said the folder held .compare-N, "not part of a checkpoint: move it
// out", which would break the compare; it names the process writing.
func TestConvertIntoFolderBeingWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	release, err := lockRunAs(dir, "compare")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.Mkdir(filepath.Join(dir, ".compare-3"), 0o755)
	if _, stderr, code := runCLI("convert", toyONNX, dir); code != 2 || !strings.Contains(stderr, dir+": another flowebm process (flowebm compare) is writing into this folder") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 39: paths that the .. check did not reach. A working folder
// reached through a symbolic link: the shell's $PWD names the link,
// os.Getwd returned it, and outputs built with filepath.Abs passed the
// check that refuses them inside a run's checkpoint folders (diagnose
// --plots pl wrote into it). A --config's data.file L/../d.npy trained on
// ./d.npy, and FLOWEBM_MNIST=L/../mn was looked up in ./mn.
func TestPathsBeyondTheFlags(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "U")
	copyRun(t, trainedRun(t), run)
	chains, err := filepath.Abs(filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"))
	if err != nil {
		t.Fatal(err)
	}
	lk := filepath.Join(dir, "LK")
	os.Symlink(filepath.Join(run, "checkpoint"), lk)
	t.Chdir(lk)
	t.Setenv("PWD", lk) // as a shell sets it after cd LK
	if _, stderr, code := runCLI("diagnose", chains, "--plots", "pl"); code != 2 || !strings.Contains(stderr, "inside the checkpoint folders of the run") {
		t.Errorf("diagnose --plots pl from a link into a checkpoint folder: exit %d: %s", code, stderr)
	}
	if exists(filepath.Join(run, "checkpoint", "pl")) {
		t.Error("figures written into the run's checkpoint folder")
	}

	t.Chdir(dir)
	os.MkdirAll(filepath.Join("far", "sub"), 0o755)
	os.Symlink(filepath.Join("far", "sub"), "L")
	for i, d := range []string{"d.npy", filepath.Join("far", "d.npy")} {
		x := make([]float64, 80)
		for j := range x {
			x[j] = float64(j%7) + float64(i)
		}
		if err := npy.WriteFile(d, &npy.Array{Shape: []int{40, 2}, Data: x}, npy.Float64); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile("cfg.json", []byte(`{"data": {"file": "L/../d.npy"}, "train": {"iterations": 2}}`), 0o644)
	if _, stderr, code := runCLI("train", "--config", "cfg.json", "--quiet", "--out", "t"); code != 2 || !strings.Contains(stderr, "data.file L/../d.npy: .. follows L, which the system resolves through a symbolic link") {
		t.Errorf("a config's data.file with .. after a link: exit %d: %s", code, stderr)
	}
	t.Setenv("FLOWEBM_MNIST", "L/../mn")
	if _, stderr, code := runCLI("train", "--experiment", "mnist", "--iterations", "2", "--quiet", "--out", "m"); code != 2 || !strings.Contains(stderr, "FLOWEBM_MNIST=L/../mn: .. follows L") {
		t.Errorf("FLOWEBM_MNIST with .. after a link: exit %d: %s", code, stderr)
	}
}

// Probe 38: a signal at train --seeds' summary said only "interrupted",
// whether seeds.json was written or not; a signal as a seed wrote its
// outputs advised --resume rather than the same --seeds command.
func TestSeedsSignalWordings(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	for point, want := range map[string]string{
		"seeds-summary":        "every seed's run is complete, seeds.json is not written: give the same --seeds command again to write it",
		"seeds-summary-placed": "every seed's run and the summary are written: ",
		"train-outputs":        "interrupted while the seed's outputs are written; finishing them (interrupt again to quit at once: the same --seeds command writes them again)",
	} {
		out := filepath.Join(t.TempDir(), "set")
		code, stderr := outputsChild(t, point, "INT", "train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out)
		if code != 130 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d: %s; want %q", point, code, stderr, want)
		}
	}
}

// Probe 40: an ambiguous FLOWEBM_MNIST refused every train, whatever the
// experiment (it is checked where an image experiment reads it); a
// .lock linked to one held in another folder made convert say a process
// trained in this one; Tile with a repeat of 0 (valid ONNX: an empty
// tensor) was refused; a sample checkpoint's recorded --model L/../M was
// not checked as the same flag on a command line is.
func TestRound40(t *testing.T) {
	toy, edge, dir := inTempDir(t)
	t.Setenv("FLOWEBM_MNIST", "missing/../mn")
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--iterations", "2", "--quiet", "--out", "t"); code != 0 {
		t.Errorf("two-modes with an unused, ambiguous FLOWEBM_MNIST: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--experiment", "mnist", "--iterations", "2", "--quiet", "--out", "m"); code != 2 || !strings.Contains(stderr, "FLOWEBM_MNIST=missing/../mn: .. follows missing, which does not exist") {
		t.Errorf("mnist: exit %d: %s", code, stderr)
	}

	held := filepath.Join(dir, "R")
	release, err := lockRunAs(held, "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.Mkdir("T", 0o755)
	if err := os.Link(filepath.Join(held, ".lock"), filepath.Join("T", ".lock")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("convert", toy, "T"); code != 2 || !strings.Contains(stderr, "hard links") || strings.Contains(stderr, "training in this folder") {
		t.Errorf("convert into a folder whose .lock is linked to a held one: exit %d: %s", code, stderr)
	}

	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.3,-1.2\n2.5,0.7\n"), 0o644)
	sameEnergies(t, filepath.Join(edge, "empty_tile.onnx"), filepath.Join(edge, "plain_ref.onnx"), pts)

	ck := filepath.Join(dir, "k.npz")
	if _, stderr, code := runCLI("sample", "--model", toy, "--chains", "4", "--steps", "8", "--checkpoint", ck, "--out", "s.npy"); code != 0 {
		t.Fatal(stderr)
	}
	a, err := npz.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	var meta []byte
	for _, v := range a.Arrays["meta"].Data {
		meta = append(meta, byte(v))
	}
	os.MkdirAll(filepath.Join("far", "sub"), 0o755)
	os.Symlink(filepath.Join(dir, "far", "sub"), "L")
	edited := strings.Replace(string(meta), `"--model=`+toy+`"`, `"--model=L/../`+filepath.Base(toyONNX)+`"`, 1)
	if edited == string(meta) {
		t.Fatalf("no --model in the recorded flags: %s", meta)
	}
	var sm sampleMeta // its own SHA-256 recomputed (since round 107), as one who edits it with care would: the check of the flags is tested
	if err := json.Unmarshal([]byte(edited), &sm); err != nil {
		t.Fatal(err)
	}
	sum, err := metaSum(sm)
	if err != nil {
		t.Fatal(err)
	}
	sm.MetaSum = sum
	b, _ := json.Marshal(sm)
	edited = string(b)
	raw := make([]float64, len(edited))
	for i := range len(edited) {
		raw[i] = float64(edited[i])
	}
	a.Arrays["meta"] = &npy.Array{Shape: []int{len(raw)}, Data: raw}
	if err := npz.WriteFile(ck, a.Arrays, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck, "--force"); code != 2 || !strings.Contains(stderr, "the flags it records: --model L/../") {
		t.Errorf("a recorded --model L/../M: exit %d: %s", code, stderr)
	}
}

// Probe 40: a reproduce run stopped as it started kept its folder when
// the train process, stopped in its setup in a folder it had not made,
// left its .lock there (6 of 32); reproduce --report and --plan stopped
// by a signal said only "interrupted", whether their file was written or
// not.
func TestRound40Reproduce(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	out := t.TempDir()
	run := filepath.Join(out, "runs", "two-modes-ula")
	t.Setenv("FLOWEBM_CHILD_PUT", filepath.Join(run, ".lock")) // as the child leaves it
	code, stderr := outputsChild(t, "reproduce-child", "INT", "reproduce", "--out", out, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3")
	if entries, _ := os.ReadDir(run); code != 130 || exists(run) {
		t.Errorf("exit %d: %s; the run stopped as it started left %v", code, stderr, entries)
	}
	os.Unsetenv("FLOWEBM_CHILD_PUT")

	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "runs"), 0o755)
	plan := filepath.Join(t.TempDir(), "plan.txt")
	for _, c := range []struct {
		args        []string
		want, point string
	}{
		{[]string{"reproduce", "--report", dir, "--experiments", "two-modes", "--algorithms", "ula"}, "the report is written: " + filepath.Join(dir, "report.md"), "report-written"},
		{[]string{"reproduce", "--plan", plan, "--experiments", "two-modes", "--algorithms", "ula", "--out", filepath.Join(dir, "q")}, "no plan written: give the same reproduce --plan command again to write it", "output-writing"},
	} {
		if code, stderr := outputsChild(t, c.point, "TERM", c.args...); code != 143 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d: %s; want %q", c.args[:2], code, stderr, c.want)
		}
	}
}

// Probe 41: float repeats where ONNX requires int64 were truncated (Tile
// [1, 1.7] ran as [1, 1] at exit 0); a folder whose .lock is a symbolic
// link to a lock held elsewhere was said to be written into (convert
// PP/ck was refused); FLOWEBM_MNIST refused by reproduce --plan was named
// twice.
func TestRound41(t *testing.T) {
	toy, edge, _ := inTempDir(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	if _, stderr, code := runCLI("energy", "--model", filepath.Join(edge, "tile_float.onnx"), "--points", "p.csv"); code != 2 || !strings.Contains(stderr, "1.7 where an integer is expected (the tensor must hold integers, as int64 or int32)") {
		t.Errorf("tile_float: exit %d: %s", code, stderr)
	}

	release, err := lockRunAs("X", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.Mkdir("PP", 0o755)
	os.Symlink(filepath.Join("..", "X", ".lock"), filepath.Join("PP", ".lock"))
	os.Mkdir("PH", 0o755)
	if err := os.Link(filepath.Join("X", ".lock"), filepath.Join("PH", ".lock")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("convert", toy, filepath.Join("PP", "ck")); code != 0 {
		t.Errorf("convert under PP, whose .lock is a symbolic link to one held elsewhere: exit %d: %s", code, stderr)
	}
	// Probe 42: a hard-linked lock may be held for this folder (a run
	// being trained, copied with cp -al): refused, saying so.
	for _, args := range [][]string{
		{"convert", toy, filepath.Join("PH", "checkpoint")}, // where a run there writes (probe 44: the rule of every command)
		{"energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join("PH", "e.csv")},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "which has 2 hard links (a copy of the folder made with cp -al or rsync --link-dest shares it): it is writing into the folder ") || !strings.Contains(stderr, "PH or into the copy") {
			t.Errorf("%s under PH, whose .lock is hard-linked to one held: exit %d: %s", args[0], code, stderr)
		}
	}

	t.Setenv("FLOWEBM_MNIST", "missing/../mn")
	_, stderr, code := runCLI("reproduce", "--plan", "plan.txt", "--experiments", "mnist", "--algorithms", "ula", "--out", "r")
	if code != 2 || !strings.Contains(stderr, "--experiments mnist: FLOWEBM_MNIST=missing/../mn: .. follows missing") || strings.Count(stderr, "FLOWEBM_MNIST") != 1 {
		t.Errorf("reproduce --plan with an ambiguous FLOWEBM_MNIST: exit %d: %s", code, stderr)
	}
}

// inTempDir makes the test run in a new temporary folder dir, and returns
// the absolute paths of toyONNX and of io/onnx/testdata/edge.
func inTempDir(t *testing.T) (toy, edge, dir string) {
	t.Helper()
	toy, err := filepath.Abs(toyONNX)
	if err != nil {
		t.Fatal(err)
	}
	edge = filepath.Join(filepath.Dir(filepath.Dir(toy)), "edge")
	dir = t.TempDir()
	t.Chdir(dir)
	return toy, edge, dir
}

// sameEnergies checks that energy gives the model the same energies at
// pts as ref, the same energy written another way.
func sameEnergies(t *testing.T, model, ref, pts string) {
	t.Helper()
	got, stderr, code := runCLI("energy", "--model", model, "--points", pts)
	want, _, _ := runCLI("energy", "--model", ref, "--points", pts)
	if code != 0 || got != want || want == "" {
		t.Errorf("%s: exit %d: %q %s; want %q, as %s gives", model, code, got, stderr, want, ref)
	}
}

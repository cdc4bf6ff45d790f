package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/io/npy"
)

// Probe 46: a link to a folder 2,800 bytes deep, then 1,500 bytes more
// below it, then a link into a held run's checkpoint.old: the system
// follows the path, filepath.EvalSymlinks failed (the resolved path is
// longer than PATH_MAX), and energy, compare and convert wrote into the
// held run at exit 0.
func TestHeldFolderBehindALongLink(t *testing.T) {
	toy, _, dir := inTempDir(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	release, err := lockRunAs("H", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	old := filepath.Join(dir, "H", "checkpoint.old")
	os.Mkdir(old, 0o755)
	link := longLink(t, dir, "L", old)
	for _, args := range [][]string{
		{"energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join(link, "e.csv")},
		{"convert", toy, filepath.Join(link, "m")},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "which the process holding "+filepath.Join(dir, "H")+" writes") {
			t.Errorf("%s into H/checkpoint.old through a link resolving beyond PATH_MAX: exit %d: %s", args[0], code, stderr)
		}
	}
	if entries, _ := os.ReadDir(old); len(entries) != 0 {
		t.Errorf("written into the held run: %v", entries)
	}
}

// longLink makes in the folder dir a link S to a folder 2,800 bytes deep,
// 1,500 bytes more below it, and there a link name to target; it returns
// the path of that link through S, 1,500 bytes long, which the system
// resolves beyond PATH_MAX.
func longLink(t *testing.T, dir, name, target string) string {
	t.Helper()
	deep := filepath.Join(dir, strings.Repeat(strings.Repeat("d", 99)+"/", 28))
	more := strings.Repeat(strings.Repeat("m", 99)+"/", 15)
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(deep, filepath.Join(dir, "S"))
	if err := os.MkdirAll(filepath.Join(dir, "S", more), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "S", more, name)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// Probe 46's long link, into a training run or an input folder: the
// checks that an output is not inside a run (convert) nor inside its
// input (energy) resolved links with filepath.EvalSymlinks, which fails
// there, and passed.
func TestRunAndInputBehindALongLink(t *testing.T) {
	toy, _, dir := inTempDir(t)
	run := trainedRun(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	if _, stderr, code := runCLI("convert", toy, "M"); code != 0 {
		t.Fatal(stderr)
	}
	os.Mkdir(filepath.Join("M", "sub"), 0o755)
	toRun := longLink(t, dir, "LR", run)
	toM := filepath.Join(filepath.Dir(toRun), "LM")
	os.Symlink(filepath.Join(dir, "M"), toM)
	if _, stderr, code := runCLI("convert", toy, filepath.Join(toRun, "m")); code != 2 || !strings.Contains(stderr, "is inside the training run "+run) {
		t.Errorf("convert into a run through a long link: exit %d: %s", code, stderr)
	}
	if exists(filepath.Join(run, "m")) {
		t.Error("convert wrote into the run")
	}
	if _, stderr, code := runCLI("energy", "--model", "M", "--points", "p.csv", "--out", filepath.Join(toM, "sub", "e.csv")); code != 2 || !strings.Contains(stderr, "is inside the input folder M") {
		t.Errorf("energy into its input folder through a long link: exit %d: %s", code, stderr)
	}
	if exists(filepath.Join("M", "sub", "e.csv")) {
		t.Error("energy wrote into its input folder")
	}
}

// Probe 46's long link as an output folder: energy's outputs' folders are
// locked while they are put in place, and one reached through a link
// deeper than PATH_MAX was not (its name could not be resolved).
func TestOutputFolderLockedBehindALongLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.Mkdir(target, 0o755)
	link := longLink(t, dir, "L", target)
	unlock, err := lockFolders([]string{filepath.Join(link, "e.csv")})
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	f, err := os.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("the output folder behind the long link is not locked: flock gave %v", err)
	}
}

// Probe 46's long link as an input: train --data through a link deeper
// than PATH_MAX to a file inside the run that --force replaces was not
// found inside it (its name could not be resolved).
func TestInputInsideTheRunBehindALongLink(t *testing.T) {
	_, _, dir := inTempDir(t)
	run := trainedRun(t)
	data := filepath.Join(run, "d.csv")
	os.WriteFile(data, []byte("x,y\n0.1,0.2\n0.3,-0.4\n1,1\n"), 0o644)
	link := longLink(t, dir, "F.csv", data)
	if _, stderr, code := runCLI("train", "--data", link, "--out", run, "--force", "--iterations", "2", "--quiet"); code != 2 || !strings.Contains(stderr, "is inside the run folder "+run) {
		t.Errorf("train --data through a long link into the run it replaces: exit %d: %s", code, stderr)
	}
	if !exists(data) {
		t.Error("the input was deleted")
	}
}

// Probe 47: train --config with data.file (or data.modes) inside --out,
// and --force, trained on the file and then replaced it with its chains;
// only the --data and --modes flags were checked.
func TestConfigDataInsideTheRun(t *testing.T) {
	inTempDir(t)
	rng := rand.New(rand.NewPCG(47, 1))
	x := make([]float64, 200)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	if err := npy.WriteFile("pts.npy", &npy.Array{Shape: []int{100, 2}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--data", "pts.npy", "--iterations", "2", "--quiet", "--out", "r2"); code != 0 {
		t.Fatal(stderr)
	}
	os.WriteFile(filepath.Join("r2", "modes.npy"), nil, 0o644)
	for _, c := range []struct{ field, path, want string }{
		{"file", filepath.Join("r2", "samples.npy"), "data.file (--config)"},
		{"modes", filepath.Join("r2", "modes.npy"), "data.modes (--config)"},
	} {
		stdout, stderr, code := runCLI("train", "--print-config", "--data", "pts.npy", "--iterations", "2")
		if code != 0 {
			t.Fatal(stderr)
		}
		var cfg map[string]any
		if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
			t.Fatal(err)
		}
		data := cfg["data"].(map[string]any)
		data[c.field] = c.path
		delete(data, "sha256")
		b, _ := json.Marshal(cfg)
		os.WriteFile("c.json", b, 0o644)
		before, _ := os.ReadFile(c.path)
		if _, stderr, code := runCLI("train", "--config", "c.json", "--out", "r2", "--force", "--quiet"); code != 2 || !strings.Contains(stderr, c.want+" "+c.path+" is inside the run folder r2") {
			t.Errorf("data.%s inside --out: exit %d: %s", c.field, code, stderr)
		}
		if after, _ := os.ReadFile(c.path); !bytes.Equal(before, after) {
			t.Errorf("data.%s %s was replaced", c.field, c.path)
		}
	}
}

// Probe 47: train --out RUN/checkpoint/.. --force passed the .. check
// (checkpoint existed), removed the run's checkpoint folder, then could
// not open its --out and advised a --resume the check refuses. A path
// whose .. passes is used without it.
func TestForceOutThroughItsOwnCheckpoint(t *testing.T) {
	inTempDir(t)
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", "r2"); code != 0 {
		t.Fatal(stderr)
	}
	for _, out := range []string{"r2/checkpoint/..", "r2/checkpoint/../"} { // not filepath.Join, which cleans the .. away
		if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--force", "--out", out); code != 0 {
			t.Errorf("--out %s --force: exit %d: %s", out, code, stderr)
		}
		if !exists(filepath.Join("r2", "samples.npy")) || !exists(filepath.Join("r2", "checkpoint", "spec.json")) {
			t.Errorf("--out %s --force: the run r2 is incomplete", out)
		}
	}
	if got := withoutDotDot("a/b/../c.onnx/"); got != "a/c.onnx/" {
		t.Errorf("withoutDotDot(a/b/../c.onnx/) = %q", got)
	}
	if got := withoutDotDot("x2.onnx/"); got != "x2.onnx/" {
		t.Errorf("withoutDotDot(x2.onnx/) = %q", got)
	}
}

// Probe 47: an output in a folder this user may not enter or write was
// found after the work, and said as "open nox: permission denied", with
// neither the flag nor the output (energy --out and --grad, sample --out,
// convert). It is refused before the work, naming both.
func TestOutputFolderNotWritable(t *testing.T) {
	dir := openTempDir(t)
	ck := filepath.Join(dir, "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck); code != 0 {
		t.Fatal(stderr)
	}
	os.Chmod(ck, 0o755)
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.5,-1\n"), 0o644)
	nox := filepath.Join(dir, "nox")
	mode := os.FileMode(0o500) // its owner may enter, not write
	if os.Geteuid() == 0 {
		mode = 0o700 // nobody may neither
	}
	os.Mkdir(nox, mode)
	defer os.Chmod(nox, 0o755)
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--out", []string{"energy", "--model", ck, "--points", pts, "--out", filepath.Join(nox, "e.npy")}},
		{"--grad", []string{"energy", "--model", ck, "--points", pts, "--grad", filepath.Join(nox, "g.npy")}},
		{"--out", []string{"sample", "--model", ck, "--steps", "4", "--warmup", "2", "--chains", "2", "--out", filepath.Join(nox, "s.npy")}},
		{"OUT.onnx", []string{"convert", ck, filepath.Join(nox, "m.onnx")}},
	} {
		out := c.args[len(c.args)-1]
		want := c.flag + " " + out + ": the folder " + nox + " cannot be written into (permission denied)"
		if stderr, err := otherUser(t, dir, c.args...); err == nil || !strings.Contains(stderr, want) {
			t.Errorf("%s: %v, %q; want %q", c.args[0], err, stderr, want)
		}
	}
}

// Probe 47: --data through a bind mount of the --out run folder passed
// the inside-the-run check, which compared paths, and --force replaced
// the data file. Folders are compared by identity. It needs root and
// unshare (util-linux) for a mount namespace of its own.
func TestInputInsideTheRunThroughABindMount(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("a bind mount needs root and unshare")
	}
	_, _, dir := inTempDir(t)
	run := trainedRun(t)
	data := filepath.Join(run, "d.csv")
	os.WriteFile(data, []byte("x,y\n0.1,0.2\n0.3,-0.4\n1,1\n"), 0o644)
	bind := filepath.Join(dir, "rb")
	os.Mkdir(bind, 0o755)
	args := []string{"train", "--data", filepath.Join(bind, "d.csv"), "--out", run, "--force", "--iterations", "2", "--quiet"}
	cmd := exec.Command(unshare, "-m", "sh", "-c", `mount --bind "$1" "$2" && exec "$3" -test.run='^TestOutputsChild$'`, "sh", run, bind, os.Args[0])
	cmd.Env = append(os.Environ(), "FLOWEBM_CHILD_ARGS="+strings.Join(args, "\x1f"))
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "mount:") {
		t.Skipf("no bind mount here: %s", out)
	}
	if err == nil || !strings.Contains(string(out), "is inside the run folder "+run) {
		t.Errorf("train --data through a bind mount of --out: %v: %s", err, out)
	}
	if !exists(data) {
		t.Error("the input was deleted")
	}
}

// Probe 47: diagnose c0.txt c1.csv … blamed c1.csv, a CmdStan CSV file,
// for not being one; the file named is the one that is not a .csv.
func TestDiagnoseNamesTheFileThatIsNotCSV(t *testing.T) {
	_, _, dir := inTempDir(t)
	csv := "lp__,mu\n-1,0.5\n-2,0.1\n-0.5,-0.3\n-1,0.9\n"
	for _, f := range []string{"c0.txt", "c1.csv", "c2.csv"} {
		os.WriteFile(filepath.Join(dir, f), []byte(csv), 0o644)
	}
	for _, order := range [][]string{{"c0.txt", "c1.csv", "c2.csv"}, {"c1.csv", "c0.txt", "c2.csv"}, {"c1.csv", "c2.csv", "c0.txt"}} {
		wantErr(t, "c0.txt: several files are CmdStan output CSV files", append([]string{"diagnose"}, order...)...)
	}
	os.Mkdir(filepath.Join(dir, "dd"), 0o755) // probe 48: a folder was "several files are CmdStan …"
	wantErr(t, "dd is a folder: diagnose reads one .npy or .npz file, or CmdStan output CSV files", "diagnose", "c1.csv", "dd")
}

// Probe 47: train followed its --out by path at every write. A link on
// the path re-pointed while it trained made it replace another run's
// checkpoint, metrics and config.json at exit 0; a folder moved away was
// made again at the next checkpoint and trained in unlocked. It stops at
// its next write, saying so, and writes nothing there.
func TestRunFolderChangedWhileTraining(t *testing.T) {
	_, _, dir := inTempDir(t)
	other := trainedRun(t)
	before := folderState(t, other)
	defer func() { testHook = nil }()
	for _, c := range []struct {
		name   string
		change func()
		gone   string // must not exist afterwards
	}{
		{"a link re-pointed", func() { os.Remove("L"); os.Symlink(other, "L") }, filepath.Join("A", "checkpoint")},
		{"the folder moved", func() { os.Rename("A", "A2") }, "A"},
	} {
		os.RemoveAll("A")
		os.RemoveAll("A2")
		os.Remove("L")
		os.Mkdir("A", 0o755)
		os.Symlink(filepath.Join(dir, "A"), "L")
		testHook = func(p string) {
			if p == "train-started" {
				c.change()
			}
		}
		_, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", "L")
		if code != 2 || !strings.Contains(stderr, "the run folder L is no longer the folder this process locked when it started") {
			t.Errorf("%s: exit %d: %s", c.name, code, stderr)
		}
		if exists(c.gone) {
			t.Errorf("%s: %s was written", c.name, c.gone)
		}
		if folderState(t, other) != before {
			t.Errorf("%s: the other run's files changed", c.name)
		}
	}
}

// Probe 47: sample --out R/samples.npy, checked while R was empty, put its
// chains in place after a train --out R had started there; the run then
// replaced them with its own at its end, both at exit 0. The folder is
// checked again as the outputs are put in place.
func TestSampleOutputIntoARunStartedMeanwhile(t *testing.T) {
	toy, _, _ := inTempDir(t)
	os.Mkdir("R", 0o755)
	var lock *os.File
	defer func() {
		testHook = nil
		if lock != nil {
			lock.Close()
		}
	}()
	testHook = func(p string) {
		if p == "output-writing" && lock == nil { // a train --out R takes its folder meanwhile
			var err error
			if lock, _, _, err = takeLock("R", "train"); err != nil {
				t.Error(err)
			}
		}
	}
	_, stderr, code := runCLI("sample", "--model", toy, "--steps", "10", "--warmup", "2", "--chains", "2", "--out", filepath.Join("R", "samples.npy"))
	if code != 2 || !strings.Contains(stderr, "(since this command started; nothing was written)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if exists(filepath.Join("R", "samples.npy")) {
		t.Error("samples.npy was put into the folder of a run")
	}
}

// Probe 47: a run started with umask 077 made its .lock 0600; another
// user's checks could not open it and took the folder for free (energy
// --out H/metrics.csv, compare --out H/checkpoint were written where the
// run then wrote). The lock is readable by all whatever the umask.
func TestLockReadableWhateverTheUmask(t *testing.T) {
	inTempDir(t)
	old := syscall.Umask(0o077)
	release, err := lockRunAs("H", "train")
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if fi, err := os.Stat(filepath.Join("H", ".lock")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("H/.lock: %v, %v; want mode 0644", fi.Mode(), err)
	}
}

// Probe 47: train --out R --force deleted R/checkpoint while compare
// (holding R/checkpoint/.lock) wrote its figures there; compare then
// failed and its figures were lost.
func TestForceLeavesAHeldOutputFolder(t *testing.T) {
	inTempDir(t)
	os.Mkdir("R", 0o755)
	release, err := lockRunAs(filepath.Join("R", "checkpoint"), "compare")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.WriteFile(filepath.Join("R", "checkpoint", "summary.md"), []byte("compare's\n"), 0o644)
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--force", "--out", "R"); code != 2 || !strings.Contains(stderr, "--out R: another flowebm process is writing into the folder R/checkpoint") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if !exists(filepath.Join("R", "checkpoint", "summary.md")) {
		t.Error("the held folder was deleted")
	}
}

// Probe 47: while train --seeds held SS (training s1), compare --out
// SS/s3 and sample --out SS/s3/samples.npy were accepted, and the seeds
// command failed at seed 3. sSEED is the holder's; its own runs write
// there (TestSeeds…).
func TestSeedFoldersOfAHeldSeedsRun(t *testing.T) {
	chains := diagnoseChains(t)
	toy, _, _ := inTempDir(t)
	release, err := lockRunAs("SS", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.MkdirAll(filepath.Join("SS", "s3"), 0o755)
	for _, args := range [][]string{
		{"sample", "--model", toy, "--steps", "4", "--warmup", "2", "--chains", "2", "--out", filepath.Join("SS", "s3", "samples.npy")},
		{"diagnose", chains, "--plots", filepath.Join("SS", "s12")},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "which the process holding ") {
			t.Errorf("%s into a seed's folder of a held train --seeds: exit %d: %s", args[0], code, stderr)
		}
	}
	if exists(filepath.Join("SS", "s3", "samples.npy")) {
		t.Error("samples.npy was written into a seed's folder")
	}
}

// Probe 47: a folder holding only compare's figures in R/checkpoint was
// "a run: continue it with --resume R", and --resume R failed with "open
// R/config.json: no such file or directory".
func TestCheckpointFolderAloneIsNoRun(t *testing.T) {
	chains := diagnoseChains(t)
	inTempDir(t)
	os.Mkdir("R", 0o755)
	if _, stderr, code := runCLI("diagnose", chains, "--plots", filepath.Join("R", "checkpoint")); code != 0 {
		t.Fatal(stderr)
	}
	wantErr(t, "R holds checkpoint, which a run writes, but no run (no config.json): give another --out, or replace them with --force", "train", "--iterations", "2", "--quiet", "--out", "R")
	wantErr(t, "--resume R holds no run: it has checkpoint, which a run writes, but no config.json nor a checkpoint's spec.json", "train", "--resume", "R", "--quiet")
}

// Probe 47: a second interrupt killed a run before its first checkpoint,
// and reproduce's last line said the runs under way "stopped at their
// last checkpoint".
func TestInterruptedRunWithoutCheckpoint(t *testing.T) {
	dir := t.TempDir()
	a := &reproRun{experiment: "two-modes", algorithm: algorithms.ULA, dir: filepath.Join(dir, "a"), trained: true}
	b := &reproRun{experiment: "four-modes", algorithm: algorithms.ULA, dir: filepath.Join(dir, "b"), trained: true}
	os.MkdirAll(filepath.Join(b.dir, "checkpoint"), 0o755)
	err := interruptedRuns([]*reproRun{a, b}, false, dir)
	if err == nil || !strings.Contains(err.Error(), "the runs under way stopped (see the lines above), two-modes-ula before its first checkpoint") {
		t.Errorf("%v", err)
	}
	err = interruptedRuns([]*reproRun{b}, false, dir)
	if err == nil || !strings.Contains(err.Error(), "stopped at their last checkpoint") {
		t.Errorf("%v", err)
	}
}

// Probe 47: a sample interrupted while its --out folder became a training
// run could not be finished: --resume refused the recorded --out ("write
// the output elsewhere") and refused --out ("drop --out"). --resume takes
// --out, and the refusal says so; the draws are those of the run.
func TestSampleResumedElsewhere(t *testing.T) {
	toy, _, _ := inTempDir(t)
	os.Mkdir("RS", 0o755)
	args := []string{"sample", "--model", toy, "--steps", "40", "--warmup", "4", "--chains", "4", "--seed", "3", "--checkpoint", "ck.npz", "--checkpoint-every", "10"}
	if _, stderr, code := runCLI(append(args, "--out", "ref.npy")...); code != 0 {
		t.Fatal(stderr)
	}
	os.Remove("ck.npz")
	// Killed after its first checkpoint (the child is the test binary, in
	// this folder).
	if code, stderr := outputsChild(t, "sample-checkpoint-placed", "KILL", append(args, "--out", filepath.Join("RS", "x.npy"))...); code == 0 || !exists("ck.npz") {
		t.Fatalf("the killed sample: exit %d, %s", code, stderr)
	}
	os.WriteFile(filepath.Join("RS", "config.json"), []byte("{}"), 0o644) // RS is now a run's
	os.WriteFile(filepath.Join("RS", "metrics.csv"), nil, 0o644)
	wantErr(t, "(resumed, the draws can go elsewhere: flowebm sample --resume ck.npz --out NEW.npy)", "sample", "--resume", "ck.npz")
	// Probe 48: the hint is not given where --out was.
	if _, stderr, code := runCLI("sample", "--resume", "ck.npz", "--out", filepath.Join("RS", "y.npy")); code != 2 || strings.Contains(stderr, "the draws can go elsewhere") {
		t.Errorf("--resume --out into the run: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--resume", "ck.npz", "--out", "elsewhere.npy"); code != 0 {
		t.Fatalf("--resume --out: exit %d: %s", code, stderr)
	}
	a, _ := os.ReadFile("ref.npy")
	b, _ := os.ReadFile("elsewhere.npy")
	if !bytes.Equal(a, b) {
		t.Error("the draws resumed elsewhere differ from an uninterrupted run's")
	}
}

// Probe 47: train's checks passed on an empty X; a convert into X wrote
// its model and let go of the lock within train's wait for it, and train
// then advised --force, which refused X as a model folder. The folder is
// checked again once locked.
func TestModelWrittenBeforeTheLock(t *testing.T) {
	inTempDir(t)
	os.Mkdir("X", 0o755)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "lock-taking" { // what convert leaves (its lock taken and let go: in another process)
			testHook = nil
			os.WriteFile(filepath.Join("X", "spec.json"), []byte("{}"), 0o644)
			os.WriteFile(filepath.Join("X", "weights.npz"), nil, 0o644)
		}
	}
	wantErr(t, "--out X is a model folder (spec.json and weights.npz, as convert writes them), not a run: give another folder", "train", "--iterations", "2", "--quiet", "--out", "X")
}

// Probe 48: the folder guard was checked at each checkpoint only. A link
// re-pointed during the setup made the clear of the folder delete another
// finished run, and one re-pointed during the outputs made train replace
// another run's figures and samples.npy at exit 0.
func TestRunFolderChangedAtSetupOrOutputs(t *testing.T) {
	_, _, dir := inTempDir(t)
	other := trainedRun(t)
	before := folderState(t, other)
	defer func() { testHook = nil }()
	for _, point := range []string{"train-set-up", "train-outputs"} {
		os.RemoveAll("A")
		os.Remove("L")
		os.Mkdir("A", 0o755)
		os.Symlink(filepath.Join(dir, "A"), "L")
		testHook = func(p string) {
			if p == point {
				os.Remove("L")
				os.Symlink(other, "L")
			}
		}
		_, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", "L")
		if code != 2 || !strings.Contains(stderr, "is no longer the folder this process locked") {
			t.Errorf("re-pointed at %s: exit %d: %s", point, code, stderr)
		}
		// Probe 49: --resume was advised where the run had no checkpoint.
		if noCk := strings.Contains(stderr, "It had written no checkpoint: start it again"); noCk != (point == "train-set-up") {
			t.Errorf("re-pointed at %s: said it had no checkpoint: %v: %s", point, noCk, stderr)
		}
		if folderState(t, other) != before {
			t.Errorf("re-pointed at %s: the other run changed", point)
		}
	}
}

// Probe 48: a held run's lock that another user may not read (0600, made
// so after it was taken, or by an older flowebm under umask 077) counted as
// not held, and that user's outputs went where the run writes. It counts
// as held, and the refusal says why.
func TestUnreadableLockCountsAsHeld(t *testing.T) {
	dir := openTempDir(t)
	toy := filepath.Join(dir, "toy.onnx")
	b, _ := os.ReadFile(toyONNX)
	os.WriteFile(toy, b, 0o644)
	os.WriteFile(filepath.Join(dir, "p.csv"), []byte("0.5,-1\n"), 0o644)
	h := filepath.Join(dir, "H")
	release, err := lockRunAs(h, "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.Chmod(h, 0o777)
	mode := os.FileMode(0o600) // nobody may not read it
	if os.Geteuid() != 0 {
		mode = 0o200 // nor its owner
	}
	os.Chmod(filepath.Join(h, ".lock"), mode)
	defer os.Chmod(filepath.Join(h, ".lock"), 0o644)
	stderr, err := otherUser(t, dir, "energy", "--model", toy, "--points", filepath.Join(dir, "p.csv"), "--out", filepath.Join(h, "metrics.csv"))
	if err == nil || !strings.Contains(stderr, "so whether another flowebm process is writing into the folder "+h+" cannot be told") {
		t.Errorf("energy --out H/metrics.csv, H's lock unreadable: %v, %s", err, stderr)
	}
	if exists(filepath.Join(h, "metrics.csv")) {
		t.Error("metrics.csv was written into the held run")
	}
}

// Probe 48: a folder holding only compare's figures in checkpoint.new/
// was taken for a run killed before its first checkpoint, and train --out
// deleted them without --force.
func TestCheckpointNewOfFiguresIsNoRun(t *testing.T) {
	chains := diagnoseChains(t)
	inTempDir(t)
	os.Mkdir("R", 0o755)
	if _, stderr, code := runCLI("diagnose", chains, "--plots", filepath.Join("R", "checkpoint.new")); code != 0 {
		t.Fatal(stderr)
	}
	before, _ := os.ReadDir(filepath.Join("R", "checkpoint.new"))
	wantErr(t, "which is not a checkpoint a run was writing", "train", "--iterations", "2", "--quiet", "--out", "R")
	if after, _ := os.ReadDir(filepath.Join("R", "checkpoint.new")); len(after) != len(before) || len(before) == 0 {
		t.Errorf("checkpoint.new held %d entries, now %d", len(before), len(after))
	}
}

// Probe 49: after the check before the figures, a link re-pointed while
// they were drawn (about 100 ms) made train replace another run's
// figures. The outputs are written through the locked folder itself.
func TestOutputsWrittenThroughTheLockedFolder(t *testing.T) {
	_, _, dir := inTempDir(t)
	other := trainedRun(t)
	before := folderState(t, other)
	os.Mkdir("A", 0o755)
	os.Symlink(filepath.Join(dir, "A"), "L")
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "train-outputs-anchored" {
			os.Remove("L")
			os.Symlink(other, "L")
		}
	}
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", "L"); code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if folderState(t, other) != before {
		t.Error("the other run changed")
	}
	for _, f := range []string{"samples.npy", "metrics.json", "density.png", "weights.png"} {
		if !exists(filepath.Join("A", f)) {
			t.Errorf("A/%s was not written", f)
		}
	}
}

// Probe 49: a plain file named checkpoint.new, in a folder with no run,
// was deleted by train --out without --force.
func TestCheckpointNewFileIsNoRun(t *testing.T) {
	inTempDir(t)
	os.Mkdir("R", 0o755)
	os.WriteFile(filepath.Join("R", "checkpoint.new"), []byte("my data\n"), 0o644)
	wantErr(t, "checkpoint.new itself, a file", "train", "--iterations", "2", "--quiet", "--out", "R")
	if b, err := os.ReadFile(filepath.Join("R", "checkpoint.new")); err != nil || string(b) != "my data\n" {
		t.Errorf("R/checkpoint.new: %q, %v", b, err)
	}
}

// Probe 49: a stale lock this user owns but may not read made train say
// "give a folder of your own" of the user's own folder, and outputs below
// it "which the process holding F writes", with no process holding it.
func TestOwnUnreadableStaleLock(t *testing.T) {
	dir := openTempDir(t)
	f := filepath.Join(dir, "F")
	os.Mkdir(f, 0o777)
	lock := filepath.Join(f, ".lock")
	os.WriteFile(lock, []byte("train\n"), 0o000)
	if os.Geteuid() == 0 { // nobody's folder and lock, as otherUser runs as nobody
		os.Chown(f, 65534, 65534)
		os.Chown(lock, 65534, 65534)
	}
	defer os.Chmod(lock, 0o644)
	stderr, err := otherUser(t, dir, "train", "--iterations", "2", "--quiet", "--out", f)
	if err == nil || !strings.Contains(stderr, "the lock is this user's (mode ----------): if no flowebm process works in the folder, remove it") {
		t.Errorf("train --out F: %v, %s", err, stderr)
	}
	chains := diagnoseChains(t)
	os.WriteFile(filepath.Join(dir, "c.npy"), func() []byte { b, _ := os.ReadFile(chains); return b }(), 0o644)
	stderr, err = otherUser(t, dir, "diagnose", filepath.Join(dir, "c.npy"), "--plots", filepath.Join(f, "checkpoint"))
	if err == nil || strings.Contains(stderr, "the process holding") || !strings.Contains(stderr, "cannot be told (if none is, the lock's owner can remove it") {
		t.Errorf("diagnose --plots F/checkpoint: %v, %s", err, stderr)
	}
}

// diagnoseChains is the absolute path of a chains file diagnose reads.
func diagnoseChains(t *testing.T) string {
	t.Helper()
	chains, err := filepath.Abs(filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"))
	if err != nil {
		t.Fatal(err)
	}
	return chains
}

// folderState lists every file below dir with its SHA-256, to compare a
// folder before and after.
func folderState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %x\n", p, sha256.Sum256(data))
		}
		return nil
	})
	return b.String()
}

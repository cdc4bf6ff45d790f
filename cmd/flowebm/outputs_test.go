package main

import (
	"bytes"
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

	"github.com/flowebm/flowebm/io/safefile"
)

// Regressions of the outputs probe (issue 20): interrupted, concurrent and
// misplaced outputs of sample, energy, convert, compare and plot. Each
// case failed before its fix.

const toyONNX = "../../io/onnx/testdata/torch/toy_f64.onnx"

// TestOutputsChild is the flowebm process that outputsChild starts: it
// runs the command line FLOWEBM_CHILD_ARGS and sends itself the signal
// FLOWEBM_CHILD_SIGNAL at the testHook point FLOWEBM_CHILD_POINT.
func TestOutputsChild(t *testing.T) {
	args := os.Getenv("FLOWEBM_CHILD_ARGS")
	if args == "" {
		t.Skip("the process that outputsChild starts")
	}
	name := os.Getenv("FLOWEBM_CHILD_SIGNAL")
	sig := map[string]syscall.Signal{"INT": syscall.SIGINT, "INT2": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL}[name]
	skip, _ := strconv.Atoi(os.Getenv("FLOWEBM_CHILD_SKIP")) // occurrences of the point to let pass
	testHook = func(p string) {
		if p == os.Getenv("FLOWEBM_CHILD_POINT") && skip > 0 {
			skip--
			return
		}
		if p == os.Getenv("FLOWEBM_CHILD_POINT") && strings.HasPrefix(name, "CLEANUP") {
			cleanupAtPoint(p, name == "CLEANUP_LATE")
			return
		}
		if p == os.Getenv("FLOWEBM_CHILD_POINT") {
			if put := os.Getenv("FLOWEBM_CHILD_PUT"); put != "" { // another process's file, there before the signal
				os.WriteFile(put, []byte("another process's\n"), 0o644)
			}
			syscall.Kill(os.Getpid(), sig)
			if name == "INT2" { // a second interrupt: quit at once
				time.Sleep(200 * time.Millisecond)
				syscall.Kill(os.Getpid(), sig)
			}
			wait, err := time.ParseDuration(os.Getenv("FLOWEBM_CHILD_WAIT")) // how long the point holds the command
			if err != nil {
				wait = 10 * time.Second
			}
			time.Sleep(wait)
		}
	}
	var stdout io.Writer = io.Discard
	if os.Getenv("FLOWEBM_CHILD_STDOUT") != "" { // the process's own, which a test may close
		stdout = os.Stdout
	}
	os.Exit(run(strings.Split(args, "\x1f"), stdout, os.Stderr))
}

// cleanupAtPoint starts a signal's cleanup (safefile.RemoveTemps) at the
// point p and says on stderr whether it ran while the command stood
// there: it must wait where the command's steps are one (safefile.Hold).
// The process then exits, as a signal's handler does after its cleanup
// (a Hold after it blocks); with CLEANUP_LATE the command goes on for a
// while first, as when the handler is slow to exit.
func cleanupAtPoint(p string, late bool) {
	done, said := make(chan struct{}), make(chan struct{})
	go func() {
		safefile.RemoveTemps()
		close(done)
		<-said
		if late {
			time.Sleep(time.Second)
		}
		os.Exit(130)
	}()
	select {
	case <-done:
		fmt.Fprintln(os.Stderr, "the cleanup ran at", p)
	case <-time.After(500 * time.Millisecond):
		fmt.Fprintln(os.Stderr, "the cleanup waited at", p)
	}
	close(said)
}

// outputsChild runs flowebm args in a process that gets the signal sig
// (INT, TERM or KILL) at the testHook point, and returns its exit status
// (-1 when killed) and stderr. The point holds the command for 10 s
// (FLOWEBM_CHILD_WAIT in the test's environment sets another time).
func outputsChild(t *testing.T, point, sig string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutputsChild$")
	cmd.Env = append(os.Environ(), "FLOWEBM_CHILD_ARGS="+strings.Join(args, "\x1f"), "FLOWEBM_CHILD_POINT="+point, "FLOWEBM_CHILD_SIGNAL="+sig)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// hidden lists the hidden entries of dir (temporary files and folders)
// other than .lock.
func hidden(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var h []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != ".lock" && e.Name() != compareRecord && e.Name() != figureRecord && e.Name() != reportRecord { // locks and figure records are kept
			h = append(h, e.Name())
		}
	}
	return h
}

// energies runs energy on the points pts with model and returns stdout.
func energies(t *testing.T, model, pts string) string {
	t.Helper()
	out, stderr, code := runCLI("energy", "--model", model, pts)
	if code != 0 {
		t.Fatalf("energy --model %s: %s", model, stderr)
	}
	return out
}

// D4: SIGINT or SIGTERM while sample or energy writes its output removes
// the temporary file and exits 130 or 143; a temporary file that a killed
// process left is removed by the next write of the same output, even with
// --force.
func TestInterruptedOutputLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	for _, c := range []struct {
		sig  string
		code int
		args []string
	}{
		{"INT", 130, []string{"sample", "--model", toyONNX, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy")}},
		{"TERM", 143, []string{"energy", "--model", toyONNX, pts, "--out", filepath.Join(dir, "e.csv")}},
	} {
		code, stderr := outputsChild(t, "output-writing", c.sig, c.args...)
		if code != c.code || !strings.Contains(stderr, "interrupted") {
			t.Errorf("%s on SIG%s: exit %d, %q; want %d", c.args[0], c.sig, code, stderr, c.code)
		}
	}
	// energy finishes its outputs once it writes them (both or neither of
	// --out and --grad): e.csv is whole; sample's s.npy is not there.
	if h := hidden(dir); len(h) != 0 {
		t.Errorf("interrupted writes left %v", h)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.npy")); err == nil {
		t.Error("the interrupted sample wrote s.npy")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "e.csv")); err == nil && strings.Count(string(b), "\n") != 3 { // header and two energies
		t.Errorf("energy's output after the interrupt: %q", b)
	}
	code, _ := outputsChild(t, "output-writing", "KILL", "sample", "--model", toyONNX, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"))
	if h := hidden(dir); code != -1 || len(h) != 1 {
		t.Fatalf("SIGKILL: exit %d, left %v; want a temporary file", code, h)
	}
	if _, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy"), "--force"); code != 0 {
		t.Fatal(stderr)
	}
	if h := hidden(dir); len(h) != 0 {
		t.Errorf("the next sample left the killed one's %v", h)
	}
}

// D2: a convert --force killed or interrupted at any step leaves CK
// holding the old checkpoint or the new one, whole (it left CK holding
// only .lock and a temporary file); the next convert removes the
// leftovers. An interrupted convert into a new folder leaves no folder.
func TestConvertForceKilledKeepsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.5,-1\n2,0.25\n"), 0o644)
	ck := filepath.Join(dir, "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck); code != 0 {
		t.Fatal(stderr)
	}
	old := energies(t, ck, pts)
	for _, c := range []struct {
		point, sig string
		code       int
		keepsOld   bool
	}{
		{"convert-written", "KILL", -1, true},
		{"convert-swapped", "KILL", -1, false},
		{"convert-written", "INT", 130, true},
		{"convert-swapped", "TERM", 143, false},
	} {
		code, stderr := outputsChild(t, c.point, c.sig, "convert", toyONNX, ck, "--base", "5", "--force")
		if code != c.code {
			t.Fatalf("SIG%s at %s: exit %d, %s", c.sig, c.point, code, stderr)
		}
		if got := energies(t, ck, pts); (got == old) != c.keepsOld {
			t.Errorf("SIG%s at %s: energies %q, old %q: want the old checkpoint %v", c.sig, c.point, got, old, c.keepsOld)
		}
		if h := hidden(dir); (c.sig == "KILL") != (len(h) > 0) {
			t.Errorf("SIG%s at %s: leftovers %v", c.sig, c.point, h)
		}
		if _, stderr, code := runCLI("convert", toyONNX, ck, "--force"); code != 0 {
			t.Fatal(stderr)
		}
		if h := hidden(dir); len(h) != 0 {
			t.Errorf("the next convert kept %v", h)
		}
		if got := energies(t, ck, pts); got != old {
			t.Errorf("convert --force again: energies %q, want %q", got, old)
		}
	}
	fresh := filepath.Join(dir, "fresh", "ck")
	if code, stderr := outputsChild(t, "convert-written", "INT", "convert", toyONNX, fresh); code != 130 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh")); err == nil || len(hidden(dir)) != 0 {
		t.Errorf("an interrupted convert into a new folder left it (%v) or %v", err, hidden(dir))
	}
}

// D4, D9b: compare interrupted leaves no staging folder, and a staging
// folder a killed compare left is removed by the next one; a folder that
// another compare holds is "written into", not "trained in".
func TestCompareInterruptedAndBusy(t *testing.T) {
	runDir := trainedRun(t)
	out := filepath.Join(t.TempDir(), "cmp")
	if code, stderr := outputsChild(t, "compare-drawn", "TERM", "compare", runDir, "--out", out); code != 143 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("interrupted compare left %s (%v)", out, hidden(out))
	}
	os.MkdirAll(filepath.Join(out, ".compare-123", "x"), 0o755)
	if _, stderr, code := runCLI("compare", runDir, "--out", out, "--force"); code != 0 {
		t.Fatal(stderr)
	}
	if h := hidden(out); len(h) != 0 {
		t.Errorf("compare kept a killed compare's %v", h)
	}
	release, err := lockRunAs(out, "compare")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	wantErr(t, "another flowebm process (flowebm compare) is writing into this folder", "compare", runDir, "--out", out, "--force")
}

// D3: without --force an output that appeared since the start (another
// process wrote it) is not replaced; with --force it is.
func TestOutputNotReplacedMeanwhile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.csv")
	os.WriteFile(path, []byte("theirs"), 0o644)
	write := func(w io.Writer) error { _, err := io.WriteString(w, "mine"); return err }
	err := writeOutput("--out", path, false, write)
	if err == nil || !strings.Contains(err.Error(), "--out "+path+" exists (another process wrote it meanwhile?)") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("got %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs" {
		t.Errorf("replaced without --force: %q", b)
	}
	if err := writeOutput("--out", path, true, write); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Errorf("--force did not replace: %q", b)
	}
}

// D6: no sample, energy or convert output goes into a training run
// folder, --force or not, nor into a folder another process holds locked
// (a run being trained before its first files).
func TestOutputsRefusedInRuns(t *testing.T) {
	run0 := trainedRun(t)
	other := t.TempDir()
	pts := filepath.Join(other, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	ck := filepath.Join(run0, "checkpoint")
	wantErr(t, "--out "+filepath.Join(run0, "metrics.csv")+" is in the training run "+run0, "energy", "--model", ck, pts, "--out", filepath.Join(run0, "metrics.csv"), "--force")
	wantErr(t, "is in the training run "+run0, "sample", "--model", toyONNX, "--chains", "4", "--steps", "8", "--out", filepath.Join(run0, "samples.npy"), "--force")
	os.Mkdir(filepath.Join(run0, "figs"), 0o755)
	wantErr(t, "is inside the training run "+run0, "convert", toyONNX, filepath.Join(run0, "figs", "m.ck"))
	wantErr(t, "is inside the training run "+run0, "sample", "--model", toyONNX, "--chains", "4", "--steps", "8", "--out", filepath.Join(run0, "figs", "s.npy"))
	busy := filepath.Join(other, "busy")
	release, err := lockRunAs(busy, "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	wantErr(t, "another flowebm process is writing into the folder "+busy, "energy", "--model", toyONNX, pts, "--out", filepath.Join(busy, "e.csv"))
	if _, err := os.Stat(filepath.Join(run0, "figs", "s.npy")); err == nil {
		t.Error("sample wrote into the run")
	}
}

// D9, A11, A14, A16: messages that name the right flag, file or fault.
func TestOutputMessages(t *testing.T) {
	run0 := trainedRun(t)
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	cfg := filepath.Join(dir, "cfg.json")
	os.WriteFile(cfg, []byte("{}"), 0o644)
	onnxCopy := filepath.Join(dir, "m.onnx")
	b, _ := os.ReadFile(toyONNX)
	os.WriteFile(onnxCopy, b, 0o644)
	ck := filepath.Join(dir, "ck")
	os.Mkdir(ck, 0o755)
	for _, n := range []string{"spec.json", "weights.npz"} {
		b, _ := os.ReadFile(filepath.Join(run0, "checkpoint", n))
		os.WriteFile(filepath.Join(ck, n), b, 0o644)
	}
	s := filepath.Join(dir, "s.npy")
	for _, c := range []struct {
		msg, not string
		args     []string
	}{
		{"--out " + cfg + ": want a .npy or .csv file", "exists", []string{"energy", "--model", run0, pts, "--out", cfg}},
		{"--out " + pts + " is a file: give a folder for the figures", "mkdir", []string{"compare", run0, "--out", pts}},
		{"CHECKPOINT " + onnxCopy + " is a file: give a folder", "mkdir", []string{"convert", onnxCopy, onnxCopy}},
		{"--chains 1 (want ≥ 2)", "--steps", []string{"sample", "--model", run0, "--chains", "1", "--out", s}},
		{"--steps 1 (want ≥ 4)", "--warmup", []string{"sample", "--model", run0, "--steps", "1", "--out", s}},
		{"--leapfrog 0 (want 1..10000)", "--particles", []string{"sample", "--model", run0, "--sampler", "hmc", "--leapfrog", "0", "--out", s}},
		{"--step applies to a sampler that takes local steps", "", []string{"sample", "--model", run0, "--sampler", "flowmc", "--local", "0", "--step", "0.1", "--out", s}},
		{"--grad and --out name the same file", "also an input", []string{"energy", "--model", run0, pts, "--out", filepath.Join(dir, "e.npy"), "--grad", filepath.Join(dir, "e.npy")}},
		{"is a file of a checkpoint: give its folder, " + filepath.Join(run0, "checkpoint"), "neither", []string{"energy", "--model", filepath.Join(run0, "checkpoint", "spec.json"), pts}},
		{ck + " is a checkpoint (model) folder, not a training run", "nothing to resume", []string{"compare", ck, "--out", filepath.Join(dir, "c1")}},
	} {
		_, stderr, code := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, c.msg) || c.not != "" && strings.Contains(stderr, c.not) {
			t.Errorf("%v: exit %d, %q; want %q without %q", c.args, code, stderr, c.msg, c.not)
		}
	}
}

// D9a: compare on a run being trained before its first checkpoint says
// it has no evaluations yet and is being trained, not "start the run
// again".
func TestCompareRunBeforeFirstCheckpoint(t *testing.T) {
	live := filepath.Join(t.TempDir(), "live")
	release, err := lockRunAs(live, "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.WriteFile(filepath.Join(live, "config.json"), []byte("{}"), 0o644)
	os.MkdirAll(filepath.Join(live, "checkpoint.new"), 0o755)
	_, stderr, code := runCLI("compare", live, "--out", filepath.Join(t.TempDir(), "c"))
	if code != 2 || !strings.Contains(stderr, "no evaluations yet: it is being trained") || strings.Contains(stderr, "start the run again") {
		t.Errorf("exit %d, %q", code, stderr)
	}
}

// D10: RUN/checkpoint, missing for the instant of a checkpoint
// replacement (only checkpoint.old/ there), loads like RUN.
func TestModelCheckpointDuringReplacement(t *testing.T) {
	run0 := trainedRun(t)
	pts := filepath.Join(t.TempDir(), "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	want := energies(t, run0, pts)
	if err := os.Rename(filepath.Join(run0, "checkpoint"), filepath.Join(run0, "checkpoint.old")); err != nil {
		t.Fatal(err)
	}
	if got := energies(t, filepath.Join(run0, "checkpoint"), pts); got != want {
		t.Errorf("energies %q, want %q", got, want)
	}
}

// D9i: a figure that fails to write (a full disk) is named once, in the
// output folder, not by its staging and temporary paths twice.
func TestStagedErrorNamesFigureOnce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp")
	tmp := filepath.Join(out, ".compare-1847587815")
	fig := filepath.Join(tmp, "ebm-weight-mse.png")
	inner := &fs.PathError{Op: "write", Path: filepath.Join(tmp, ".ebm-weight-mse.png.tmp42"), Err: syscall.ENOSPC}
	err := stagedError(fmt.Errorf("%s: %w", fig, fmt.Errorf("%s: %w", fig, inner)), tmp, out)
	want := filepath.Join(out, "ebm-weight-mse.png") + ": write: no space left on device"
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), ".compare-") || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("got %q, want %q…", err, want)
	}
	err = stagedError(fmt.Errorf("%s: %s: boom", fig, fig), tmp, out)
	if err.Error() != filepath.Join(out, "ebm-weight-mse.png")+": boom" {
		t.Errorf("got %q", err)
	}
}

// D4: plot removes the figures' temporary files that a killed plot left.
func TestPlotRemovesStaleTemps(t *testing.T) {
	run0 := trainedRun(t)
	stale := filepath.Join(run0, ".density.svg.tmp123")
	os.WriteFile(stale, []byte("<svg"), 0o644)
	if _, stderr, code := runCLI("plot", run0, "--plot-format", "svg"); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("plot kept a stale temporary file")
	}
}

// D2: a convert killed between the two renames of a swap without atomic
// exchange left the old checkpoint aside (.CK.old-N) and CK without it:
// the next convert puts it back before anything else.
func TestConvertRestoresCheckpointLeftAside(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.5,-1\n"), 0o644)
	ck := filepath.Join(dir, "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck, "--base", "3"); code != 0 {
		t.Fatal(stderr)
	}
	want := energies(t, ck, pts)
	aside := filepath.Join(dir, ".ck.old-7")
	if err := os.Rename(ck, aside); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(ck, 0o755)
	wantErr(t, "already holds a checkpoint", "convert", toyONNX, ck)
	if got := energies(t, ck, pts); got != want || len(hidden(dir)) != 0 {
		t.Errorf("energies %q, want %q; left %v", got, want, hidden(dir))
	}
}

// convert --force replaces a model folder whole: a folder holding other
// files is refused (the swap deleted a user's notes), and no output is
// written into a model folder in the first place.
func TestConvertKeepsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if _, stderr, status := runCLI("convert", toyONNX, ck); status != 0 {
		t.Fatal(stderr)
	}
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	wantErr(t, "is in the model folder "+ck, "energy", "--model", toyONNX, pts, "--out", filepath.Join(ck, "e.csv"))
	os.MkdirAll(filepath.Join(ck, "mydata"), 0o755)
	os.WriteFile(filepath.Join(ck, "mydata", "notes.txt"), []byte("keep"), 0o644)
	wantErr(t, ck+" holds mydata, which is not part of a checkpoint", "convert", toyONNX, ck, "--force")
	if b, err := os.ReadFile(filepath.Join(ck, "mydata", "notes.txt")); err != nil || string(b) != "keep" {
		t.Errorf("the user's file: %q, %v", b, err)
	}
}

// A failure writing --out after --grad (a full disk) leaves neither: the
// gradients were in place already before.
func TestEnergyPairWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	e, g := filepath.Join(dir, "eo", "e.npy"), filepath.Join(dir, "g.npy")
	os.Mkdir(filepath.Join(dir, "eo"), 0o755)
	defer func() { testHook = nil }()
	testHook = func(point string) { // --out's staging file cannot be written: its folder is gone
		if point == "output-writing" {
			os.RemoveAll(filepath.Dir(e))
		}
	}
	if _, stderr, code := runCLI("energy", "--model", toyONNX, pts, "--out", e, "--grad", g); code != 2 {
		t.Fatalf("exit %d, %q; want a failure", code, stderr)
	}
	for _, p := range []string{e, g} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written though the pair failed", p)
		}
	}
}

// A failure putting the second of energy's outputs in place (an I/O
// error) puts the first back: the old pair stays whole (the new
// gradients stood beside the old energies).
func TestEnergyPairPlacementFailure(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	e, g := filepath.Join(dir, "e.npy"), filepath.Join(dir, "g.npy")
	os.WriteFile(e, []byte("old e"), 0o644)
	os.WriteFile(g, []byte("old g"), 0o644)
	defer func() { testHook = nil }()
	staged := 0
	testHook = func(point string) {
		if point == "output-writing" {
			if staged++; staged == 2 { // --out is being staged: its place becomes a folder
				os.Remove(e)
				os.MkdirAll(filepath.Join(e, "x"), 0o755)
			}
		}
	}
	if _, stderr, code := runCLI("energy", "--model", toyONNX, pts, "--out", e, "--grad", g, "--force"); code != 2 || !strings.Contains(stderr, "nothing was replaced") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	if b, _ := os.ReadFile(g); string(b) != "old g" {
		t.Errorf("g.npy: %.20q, want the old file back", b)
	}
	if _, err := os.Stat(g + ".replaced"); err == nil {
		t.Error("the kept-aside file was left")
	}
}

// A second interrupt while train writes its outputs quits at once with
// the signal's status, removing the files being written and saying the
// last checkpoint stands (it said "without a checkpoint" and left a
// plot's temporary file); the run then finishes with --resume.
func TestTrainSecondInterruptInOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, stderr := outputsChild(t, "train-outputs", "INT2", "train", "--iterations", "2", "--quiet", "--out", dir)
	if code != 130 || !strings.Contains(stderr, "the run's last complete checkpoint stands") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	if h := hidden(dir); len(h) != 0 {
		t.Errorf("left %v", h)
	}
	if _, stderr, code := runCLI("train", "--resume", dir, "--quiet"); code != 0 {
		t.Errorf("resume: %s", stderr)
	}
}

// A signal while train --seeds writes seeds.json removes its temporary
// file and exits with the signal's status (it was killed outright, leaving
// the file for good); a temporary file left by a kill goes on the next run.
func TestSeedsSummaryInterrupted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "seeds")
	code, stderr := outputsChild(t, "seeds-summary", "TERM", "train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", out)
	if code != 143 || !strings.Contains(stderr, "interrupted") {
		t.Errorf("exit %d, %q; want 143", code, stderr)
	}
	if h := hidden(out); len(h) != 0 {
		t.Errorf("left %v", h)
	}
	stale := filepath.Join(out, ".seeds.json.tmp123")
	os.WriteFile(stale, []byte("{"), 0o600)
	if _, stderr, code := runCLI("train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", out); code != 0 {
		t.Fatalf("rerun: %s", stderr)
	}
	if h := hidden(out); len(h) != 0 {
		t.Errorf("the rerun left %v", h)
	}
}

// Probe 18: an interrupted sample --checkpoint said only that partial files
// were removed; its checkpoint stands and the message says how to go on,
// once this run has written one (before that, there is nothing to resume).
func TestSampleInterruptNamesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "k.npz")
	args := []string{"sample", "--model", toyONNX, "--chains", "4", "--steps", "400", "--checkpoint", ck, "--checkpoint-every", "50", "--out", filepath.Join(dir, "s.npy")}
	code, stderr := outputsChild(t, "sample-checkpoint", "INT", args...)
	if want := "the checkpoint " + ck + " stands: continue with: flowebm sample --resume " + ck; code != 130 || !strings.Contains(stderr, want) {
		t.Errorf("interrupted after a checkpoint: exit %d, %q, want 130 and %q", code, stderr, want)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck); code != 0 {
		t.Fatalf("the command it printed: %s", stderr)
	}
	// Probe 23: interrupted once the draws were in place, it printed the
	// resume command, which then failed on the --out it had written.
	os.Remove(filepath.Join(dir, "s.npy"))
	os.Remove(ck)
	code, stderr = outputsChild(t, "sample-placed", "TERM", args...)
	if want := "the draws are all written, to " + filepath.Join(dir, "s.npy") + ": nothing is left to resume"; code != 143 || !strings.Contains(stderr, want) || strings.Contains(stderr, "continue with") {
		t.Errorf("interrupted with its outputs in place: exit %d, %q, want 143 and %q", code, stderr, want)
	}
	os.Remove(ck)
	code, stderr = outputsChild(t, "sample-started", "INT", append(args[:len(args)-1], filepath.Join(dir, "s2.npy"))...)
	if code != 130 || strings.Contains(stderr, "continue with") {
		t.Errorf("interrupted before its first checkpoint: exit %d, %q, want 130 and no resume command", code, stderr)
	}
}

// Probe 23: convert's checkpoint folder, staged with os.MkdirTemp, kept
// its mode 0700: other users were told it held no spec.json.
func TestConvertFolderFollowsUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ck := filepath.Join(t.TempDir(), "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck); code != 0 {
		t.Fatal(stderr)
	}
	if fi, err := os.Stat(ck); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: %v %v, want mode 0755 under umask 022", ck, fi.Mode(), err)
	}
}

// otherUser runs flowebm args in a child process as a user other than
// the folders' owner: nobody where the test runs as root (root may enter
// any folder: the test binary is copied into dir, which must be reachable
// by all), this user otherwise. It returns the child's stderr and error.
func otherUser(t *testing.T, dir string, args ...string) (stderr string, err error) {
	t.Helper()
	exe := os.Args[0]
	if os.Geteuid() == 0 {
		exe = filepath.Join(dir, "flowebm.test") // the test binary's own folder is the builder's, 0700
		if _, err := os.Stat(exe); err != nil {
			if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(exe, b, 0o755) != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(exe, "-test.run=^TestOutputsChild$")
	cmd.Env = append(os.Environ(), "FLOWEBM_CHILD_ARGS="+strings.Join(args, "\x1f"))
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Dir = dir
	}
	var buf bytes.Buffer
	cmd.Stderr = &buf
	err = cmd.Run()
	return buf.String(), err
}

// openTempDir is t.TempDir reachable by every user (TempDir makes it and
// its parent 0700).
func openTempDir(t *testing.T) string {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Probe 23: a model folder this user may not enter was said to hold no
// spec.json.
func TestUnreadableModelFolderSaysSo(t *testing.T) {
	dir := openTempDir(t)
	ck := filepath.Join(dir, "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck); code != 0 {
		t.Fatal(stderr)
	}
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.5,-1\n"), 0o644)
	mode := os.FileMode(0o000) // for its owner
	if os.Geteuid() == 0 {
		mode = 0o700 // for nobody
	}
	if err := os.Chmod(ck, mode); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ck, 0o755)
	want := ck + ": this user may not read the folder (stat " + filepath.Join(ck, "config.json") + ": permission denied): its owner can open it with chmod -R a+rX"
	for _, args := range [][]string{{"energy", "--model", ck, "--points", pts}, {"plot", ck}} {
		if stderr, err := otherUser(t, dir, args...); err == nil || !strings.Contains(stderr, want) {
			t.Errorf("%s: %v, %q; want %q", args[0], err, stderr, want)
		}
	}
}

// A run folder its reader may enter but not list (mode 711 for others)
// cannot be opened to be locked: it is read without the lock.
func TestRunFolderEnterableNotListable(t *testing.T) {
	dir := openTempDir(t)
	runDir := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", runDir); code != 0 {
		t.Fatal(stderr)
	}
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.5,-1\n"), 0o644)
	mode := os.FileMode(0o300) // its owner may enter, not list
	if os.Geteuid() == 0 {
		mode = 0o711 // nobody may enter, not list
	}
	if err := os.Chmod(runDir, mode); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(runDir, 0o755)
	out := filepath.Join(dir, "e.csv")
	os.Chmod(dir, 0o777) // the reader writes its output there
	if stderr, err := otherUser(t, dir, "energy", "--model", runDir, "--points", pts, "--out", out); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || len(b) == 0 {
		t.Errorf("no energies written: %v", err)
	}
	// Probe 24: sample listed a plain checkpoint folder to hash its files
	// ("open …: permission denied").
	ck := filepath.Join(dir, "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Chmod(ck, mode); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ck, 0o755)
	if stderr, err := otherUser(t, dir, "sample", "--model", ck, "--chains", "2", "--steps", "5", "--warmup", "0", "--out", filepath.Join(dir, "s.npy")); err != nil {
		t.Errorf("sample --model on a folder it may enter, not list: %v: %s", err, stderr)
	}
}

// Probe 24: a sample whose --out another process wrote meanwhile is
// refused with nothing replaced; its checkpoint's resume command does not
// say --force (it said to, "replacing those in place", which would have
// replaced the other process's file) but a new --out (probe 67 B2: the
// plain command was refused for that --out).
func TestSampleOutWrittenMeanwhileKeepsResume(t *testing.T) {
	dir := t.TempDir()
	ck, out := filepath.Join(dir, "k.npz"), filepath.Join(dir, "s.npy")
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "output-writing" {
			os.WriteFile(out, []byte("theirs"), 0o644)
		}
	}
	_, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "4", "--steps", "100", "--checkpoint", ck, "--checkpoint-every", "50", "--out", out)
	want := "nothing was written; give another name, or replace it with --force; the checkpoint " + ck + " stands: continue with: flowebm sample --resume " + ck + " --out NEW.npy\n"
	if code != 2 || !strings.HasSuffix(stderr, want) {
		t.Errorf("exit %d, %q; want 2 and %q", code, stderr, want)
	}
	if b, _ := os.ReadFile(out); string(b) != "theirs" {
		t.Errorf("the other process's --out was replaced")
	}
}

// Probe 24: a process stopped while putting its outputs in a folder made
// every later energy and sample writing there wait silently for ever; the
// wait is now told and bounded.
func TestOutputFolderLockBounded(t *testing.T) {
	dir := t.TempDir()
	held, err := lockFolder(dir) // the stopped process
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	defer func(n, p time.Duration) { outputLockNote, outputLockPatience = n, p }(outputLockNote, outputLockPatience)
	outputLockNote, outputLockPatience = 50*time.Millisecond, 300*time.Millisecond
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.5,-1\n"), 0o644)
	out := filepath.Join(dir, "e.npy")
	r, w, err := os.Pipe() // the note goes to the process's stderr
	if err != nil {
		t.Fatal(err)
	}
	stderrFile := os.Stderr
	os.Stderr = w
	_, stderr, code := runCLI("energy", "--model", toyONNX, "--points", pts, "--out", out)
	os.Stderr = stderrFile
	w.Close()
	note, _ := io.ReadAll(r)
	want := "another flowebm process has been putting its outputs in this folder for " // about 300ms, as the load allows
	if code != 2 || !strings.HasSuffix(stderr, "names it): nothing was written\n") || !strings.Contains(string(note), "flowebm: note: waiting up to 0.3s for another flowebm process that puts its outputs in "+dir) || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %q %q; want the note and %q", code, note, stderr, want)
	}
	if exists(out) {
		t.Error("an output was written without the lock")
	}
	held.Close()
	if _, stderr, code := runCLI("energy", "--model", toyONNX, "--points", pts, "--out", out); code != 0 {
		t.Errorf("once the lock is free: %s", stderr)
	}
}

// Probe 24: a .replaced file left beside sample's --out was found only
// after all the draws were made.
func TestSampleReplacedLeftRefusedFirst(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.npy")
	os.WriteFile(out+".replaced", []byte("old"), 0o644)
	sampled := false
	defer func() { testHook = nil }()
	testHook = func(p string) { sampled = sampled || p == "sample-started" }
	_, stderr, code := runCLI("sample", "--model", toyONNX, "--chains", "2", "--steps", "10", "--out", out, "--force")
	if code != 2 || !strings.Contains(stderr, "s.npy.replaced is left from a command killed while putting its outputs in place") || sampled {
		t.Errorf("exit %d, sampled first: %v, %q", code, sampled, stderr)
	}
}

// Probe 25: files named as an ONNX flow's in a checkpoint whose spec.json
// names no such flow were hashed by sample (a FIFO there failed it; a
// stray file made --resume refuse an unchanged model).
func TestSampleHashesOnlyTheFilesLoaded(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if _, stderr, code := runCLI("convert", toyONNX, ck); code != 0 {
		t.Fatal(stderr)
	}
	if err := syscall.Mkfifo(filepath.Join(ck, "flow_sample.onnx"), 0o644); err != nil {
		t.Skip(err)
	}
	if _, stderr, code := runCLI("sample", "--model", ck, "--chains", "2", "--steps", "5", "--warmup", "0", "--out", filepath.Join(dir, "s.npy")); code != 0 {
		t.Errorf("a stray FIFO beside the checkpoint's files: %s", stderr)
	}
}

// Probe 25: --out and --grad in one folder by two names (a link and its
// target) had energy wait for its own lock of the folder.
func TestOutputFolderByTwoNamesLockedOnce(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o755)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	defer func(p time.Duration) { outputLockPatience = p }(outputLockPatience)
	outputLockPatience = 2 * time.Second
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("0.5,-1\n"), 0o644)
	if _, stderr, code := runCLI("energy", "--model", toyONNX, "--points", pts, "--out", filepath.Join(link, "e.npy"), "--grad", filepath.Join(real, "g.npy")); code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Probe 25: a sample interrupted by a signal left the --flow-out folder
// it had made, empty (an error return removed it; a signal did not).
func TestSampleSignalRemovesFlowOutFolderMade(t *testing.T) {
	dir := t.TempDir()
	fo := filepath.Join(dir, "fo")
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	code, stderr := outputsChild(t, "sample-started", "INT", "sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "10", "--warmup", "20", "--flow-out", fo, "--out", filepath.Join(dir, "s.npy"))
	if code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(fo); err == nil {
		t.Errorf("the folder made for --flow-out was left: %s", fo)
	}
}

// Probe 28: killed before its new output was put in place, a command left
// PATH.replaced as a hard link to PATH itself; the refusal then advised
// an mv that fails. Nothing was replaced: the link is removed, the old
// output kept.
func TestReplacedLinkToItselfRemoved(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.npy")
	os.WriteFile(out, []byte("old"), 0o644)
	if err := os.Link(out, out+".replaced"); err != nil {
		t.Skip(err)
	}
	if err := checkNoReplacedLeft("--out", out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "old" || exists(out+".replaced") {
		t.Errorf("%s: %q %v; .replaced left: %v", out, b, err, exists(out+".replaced"))
	}
	os.WriteFile(out+".replaced", []byte("older"), 0o644) // a real one is still refused
	if err := checkNoReplacedLeft("--out", out); err == nil {
		t.Error("a .replaced file other than the output was passed over")
	}
}

// A checkpoint folder this user may not read was called "incomplete".
func TestUnreadableCheckpointSaidSo(t *testing.T) {
	dir := openTempDir(t)
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	points := writeFile(t, dir, "p.csv", "x,y\n0,0\n")
	ck := filepath.Join(run, "checkpoint")
	mode := os.FileMode(0o700) // the other user's, as root
	if os.Geteuid() != 0 {
		mode = 0
	}
	if err := os.Chmod(ck, mode); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ck, 0o755)
	stderr, err := otherUser(t, dir, "energy", "--model", run, "--points", points)
	if want := "checkpoint/ cannot be read (open " + filepath.Join(ck, "run-config.json") + ": permission denied)"; err == nil || !strings.Contains(stderr, want) {
		t.Errorf("%v, %q; want %q", err, stderr, want)
	}
}

// Probe 30: a second interrupt before the run's first checkpoint said
// "the run's last complete checkpoint stands (flowebm train --resume
// continues from it)", and that --resume failed.
func TestSecondInterruptSaysWhatStands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, stderr := outputsChild(t, "train-started", "INT2", "train", "--iterations", "4", "--quiet", "--out", dir)
	if want := "quitting now; " + dir + " has no complete checkpoint yet: start the run again (the same command, with --force"; code != 130 || !strings.Contains(stderr, want) {
		t.Errorf("no checkpoint: exit %d, %q; want %q", code, stderr, want)
	}
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", dir, "--force"); code != 0 {
		t.Fatalf("the advised --force: %s", stderr)
	}
	os.Remove(filepath.Join(dir, "samples.npy"))
	code, stderr = outputsChild(t, "train-started", "INT2", "train", "--resume", dir, "--quiet")
	if want := "the run's last complete checkpoint stands: continue with: flowebm train --resume " + dir; code != 130 || !strings.Contains(stderr, want) {
		t.Errorf("a checkpoint: exit %d, %q; want %q", code, stderr, want)
	}
}

// Probe 31: inside train --seeds, a second interrupt before a seed's first
// checkpoint advised --force, which trains the finished seeds again; so
// did the refusal of a seed folder of other settings.
func TestSeedsAdviceKeepsOtherSeeds(t *testing.T) {
	out := filepath.Join(t.TempDir(), "S")
	args := []string{"train", "--seeds", "1-2", "--iterations", "4", "--quiet", "--out", out}
	code, stderr := outputsChild(t, "train-started", "INT2", args...)
	if want := filepath.Join(out, "s1") + " has no complete checkpoint yet: give the same --seeds command again, which trains this seed again from the start and keeps the others"; code != 130 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %q; want %q", code, stderr, want)
	}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Errorf("the same --seeds command again: %s", stderr)
	}
	// Both seeds' folders are named at once (probe 59: s1 alone, then s2
	// once s1 was moved).
	for _, s := range []string{"s1", "s2"} {
		wantErr(t, "holds a run with train.algorithm \"flowmc\", this command asks for \"ula\": move "+filepath.Join(out, s)+" away and give the same --seeds command again to train that seed anew (--force trains every seed again)",
			"train", "--seeds", "1-2", "--iterations", "4", "--algorithm", "ula", "--out", out)
	}
	wantErr(t, "2 seeds' folders stop this command (nothing was trained):", "train", "--seeds", "1-2", "--iterations", "4", "--algorithm", "ula", "--out", out)
}

// Probe 33: compare, convert, diagnose --plots and sample --flow-out made
// their output folder, then registered it for removal on a signal; a
// signal in between left it, empty or holding .lock. Here the signal
// comes right after the folder is made, held there for 1 s.
func TestSignalAsOutputFolderIsMadeRemovesIt(t *testing.T) {
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s")
	runDir := trainedRun(t)
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	chains := filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy")
	for _, c := range []struct {
		name string
		args func(out string) []string
	}{
		{"compare", func(out string) []string { return []string{"compare", runDir, "--out", out} }},
		{"convert", func(out string) []string { return []string{"convert", toyONNX, out} }},
		{"diagnose", func(out string) []string { return []string{"diagnose", "--plots", out, chains} }},
		{"sample", func(out string) []string {
			made := filepath.Dir(out) // --flow-out's parent must exist
			return []string{"sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "10", "--warmup", "20", "--flow-out", made, "--out", filepath.Join(filepath.Dir(made), "s.npy")}
		}},
	} {
		dir := t.TempDir()
		made := filepath.Join(dir, "new")
		code, stderr := outputsChild(t, "folder-made", "INT", c.args(filepath.Join(made, "out"))...)
		if code != 130 {
			t.Errorf("%s: exit %d: %s", c.name, code, stderr)
		}
		// The command runs on while its signal's cleanup waits for the
		// folder's registration: on a loaded machine it may put complete
		// outputs in place first, which stay. No folder may be left empty
		// or holding only .lock.
		var outputs []string
		filepath.WalkDir(made, func(p string, e fs.DirEntry, _ error) error {
			if e != nil && !e.IsDir() && e.Name() != ".lock" {
				outputs = append(outputs, p)
			}
			return nil
		})
		if _, err := os.Stat(made); err == nil && len(outputs) == 0 {
			t.Errorf("%s: interrupted as it made its output folder, it left %s without outputs", c.name, made)
		}
	}
}

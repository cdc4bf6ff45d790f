package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/training"
)

// Regressions of the round-45 probe: outputs mixed or deleted by another
// process, user files deleted or replaced without --force, checkpoints
// thrown away. Each test failed before its fix.

// writeFiles writes each name of files (relative to dir) with its content,
// making folders; a name ending in / is an empty folder.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkFiles checks that each name of files (relative to dir) holds its
// content still (a folder: exists).
func checkFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if strings.HasSuffix(name, "/") {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s was deleted", name)
			}
			continue
		}
		if err != nil || string(b) != content {
			t.Errorf("%s: %q, %v; want %q kept", name, b, err, content)
		}
	}
}

// 1. Two energy processes writing the same --grad and --out: B stages its
// gradients while A stages its energies (A's staged gradients were
// removed or replaced by B's, under the one staging name); A's outputs
// must be A's own pair, and B fails.
func TestFix45EnergyStagingPerProcess(t *testing.T) {
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	os.WriteFile(pa, []byte("1,2\n3,4\n"), 0o644)
	os.WriteFile(pb, []byte("-5,6\n7,-8\n"), 0o644)
	ref := filepath.Join(dir, "ref")
	os.Mkdir(ref, 0o755)
	if _, stderr, code := runCLI("energy", "--model", toyONNX, pa, "--out", filepath.Join(ref, "e.npy"), "--grad", filepath.Join(ref, "g.npy")); code != 0 {
		t.Fatal(stderr)
	}
	o := filepath.Join(dir, "o")
	os.Mkdir(o, 0o755)
	args := func(pts string) []string {
		return []string{"energy", "--model", toyONNX, pts, "--out", filepath.Join(o, "e.npy"), "--grad", filepath.Join(o, "g.npy")}
	}
	var mu sync.Mutex
	calls := 0
	bStaged, bGo := make(chan struct{}), make(chan struct{})
	var bCode int
	var bErr string
	var wg sync.WaitGroup
	defer func() { testHook = nil }()
	testHook = func(point string) {
		if point != "output-writing" {
			return
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch n {
		case 2: // A stages --out: B runs until it stages its own --out
			wg.Add(1)
			go func() { defer wg.Done(); _, bErr, bCode = runCLI(args(pb)...) }()
			<-bStaged
		case 4: // B stages --out: A goes on and finishes first
			close(bStaged)
			<-bGo
		}
	}
	_, aErr, aCode := runCLI(args(pa)...)
	close(bGo)
	wg.Wait()
	if aCode != 0 {
		t.Fatalf("A: exit %d, %s", aCode, aErr)
	}
	for _, n := range []string{"e.npy", "g.npy"} {
		got, _ := os.ReadFile(filepath.Join(o, n))
		want, _ := os.ReadFile(filepath.Join(ref, n))
		if !bytes.Equal(got, want) {
			t.Errorf("A exited 0, but %s is not A's", n)
		}
	}
	if bCode != 2 || !strings.Contains(bErr, "exists (another process wrote it meanwhile?)") {
		t.Errorf("B: exit %d, %q; want it refused", bCode, bErr)
	}
	if h := hidden(o); len(h) != 0 {
		t.Errorf("left %v", h)
	}
}

// 1 (lesser). An energy --force killed between its two placements leaves
// PATH.replaced, the file it replaced; the next energy says so and keeps
// it (it deleted it, losing the old pair's half).
func TestFix45EnergyReportsReplacedLeft(t *testing.T) {
	dir := t.TempDir()
	pts := filepath.Join(dir, "p.csv")
	os.WriteFile(pts, []byte("1,2\n3,4\n"), 0o644)
	files := map[string]string{"e.npy": "old e", "g.npy": "new g", "g.npy.replaced": "old g"}
	writeFiles(t, dir, files)
	_, stderr, code := runCLI("energy", "--model", toyONNX, pts, "--out", filepath.Join(dir, "e.npy"), "--grad", filepath.Join(dir, "g.npy"), "--force")
	if code != 2 || !strings.Contains(stderr, "g.npy.replaced is left from a command killed") {
		t.Errorf("exit %d, %q; want the leftover reported", code, stderr)
	}
	checkFiles(t, dir, files)
}

// 2. train --out DIR without --force refuses a folder that is not a run
// but holds files a run writes (it replaced samples.npy and deleted
// error.txt, rhat.svg); with --force they go, other files stay.
func TestFix45TrainRefusesFolderWithRunFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	files := map[string]string{"samples.npy": "mine", "error.txt": "mine", "rhat.svg": "mine", "notes.txt": "mine"}
	writeFiles(t, dir, files)
	_, stderr, code := runCLI("train", "--out", dir, "--iterations", "2", "--quiet")
	if code != 2 || !strings.Contains(stderr, "is not a run but holds rhat.svg, samples.npy, error.txt") || !strings.Contains(stderr, "--force") {
		t.Errorf("exit %d, %q; want a refusal", code, stderr)
	}
	checkFiles(t, dir, files)
	if _, err := os.Stat(filepath.Join(dir, ".lock")); err == nil {
		t.Error("the refusal left a .lock")
	}
}

// 4, 5. Stale-temp cleanup lists the folder itself (a glob of OUT = g[1a]
// deleted files in g1 and ga) and removes only .NAME.tmpN of the names
// the command writes, unlocked (it deleted .todo.tmpl, .cache.tmp_keep,
// and a live writer's temporary file).
func TestFix45TrainCleansOnlyOwnTemps(t *testing.T) {
	dir := t.TempDir()
	others := map[string]string{"g1/.metrics.csv.tmp123": "x", "ga/.notes.tmpl": "x", "g[1a]/.todo.tmpl": "t",
		"g[1a]/.cache.tmp_keep": "d", "g[1a]/.build.tmp/": ""}
	writeFiles(t, dir, others)
	writeFiles(t, dir, map[string]string{"g[1a]/.metrics.csv.tmp77": "stale"})
	if _, stderr, code := runCLI("train", "--out", filepath.Join(dir, "g[1a]"), "--iterations", "2", "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	checkFiles(t, dir, others)
	if _, err := os.Stat(filepath.Join(dir, "g[1a]", ".metrics.csv.tmp77")); err == nil {
		t.Error("the run's own stale temporary file was kept")
	}
}

// 5. train --seeds locks its base folder, and its cleanup keeps other
// files and a live writer's temporary file.
func TestFix45SeedsBaseLockedAndTempsKept(t *testing.T) {
	base := filepath.Join(t.TempDir(), "sx")
	others := map[string]string{".report.tmpl": "u", ".cache.tmp_keep": "d", ".c.npy.tmp5": "a sample being written"}
	writeFiles(t, base, others)
	live, err := os.Create(filepath.Join(base, ".seeds.json.tmp9"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	syscall.Flock(int(live.Fd()), syscall.LOCK_EX)
	release, err := lockRunAs(base, "sample")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", base}
	if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "another flowebm process (flowebm sample) is writing into this folder") {
		t.Errorf("with the base folder locked: exit %d, %q", code, stderr)
	}
	release()
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	others[".seeds.json.tmp9"] = ""
	checkFiles(t, base, others)
}

// 4. compare's cleanup of its staging folders lists OUT itself (OUT = c[1]
// deleted c1/.compare-live) and removes only .compare-N.
func TestFix45CompareStagingCleanup(t *testing.T) {
	run0 := trainedRun(t)
	dir := t.TempDir()
	keep := map[string]string{"c1/.compare-live/": "", "c[1]/.compare-mine/": ""}
	writeFiles(t, dir, keep)
	writeFiles(t, dir, map[string]string{"c[1]/.compare-123/x.png": "stale"})
	if _, stderr, code := runCLI("compare", run0, "--out", filepath.Join(dir, "c[1]")); code != 0 {
		t.Fatal(stderr)
	}
	checkFiles(t, dir, keep)
	if _, err := os.Stat(filepath.Join(dir, "c[1]", ".compare-123")); err == nil {
		t.Error("a stale staging folder was kept")
	}
}

// 7. compare --force removes the figures of the earlier comparison that
// the new one does not draw (global-accept.png of a flowMC run stayed
// beside a ULA run's figures).
func TestFix45CompareForceRemovesOldFigures(t *testing.T) {
	flowmc := trainedRun(t)
	ula := filepath.Join(t.TempDir(), "ula")
	if _, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", ula); code != 0 {
		t.Fatal(stderr)
	}
	out := filepath.Join(t.TempDir(), "cmp")
	stdout, stderr, code := runCLI("compare", flowmc, "--out", out)
	if code != 0 || !strings.Contains(stdout, "global-accept.png") {
		t.Fatalf("exit %d, %s%s", code, stdout, stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if name := strings.TrimSuffix(filepath.Base(l), ".png"); name != summaryName && !slices.Contains(compareFigures, name) {
			t.Errorf("compare drew %s, which compareFigures lacks", name)
		}
	}
	// Files of the user's, one named like a figure in another format, are
	// kept (round 118 B2: held-out-ll.svg was taken for an earlier
	// comparison's and deleted).
	writeFiles(t, out, map[string]string{"held-out-ll.svg": "mine svg", "mine.png": "mine"})
	if stdout, stderr, code = runCLI("compare", ula, "--out", out, "--force"); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "global-accept.png")); err == nil {
		t.Errorf("global-accept.png of the earlier comparison was kept (drawn now: %s)", stdout)
	}
	checkFiles(t, out, map[string]string{"mine.png": "mine", "held-out-ll.svg": "mine svg"})
}

// 3, 5. reproduce reports a run whose checkpoint train --resume refuses as
// failed, keeping it (it restarted the run with --force, deleting the
// checkpoint), and its cleanup keeps files it did not write.
func TestFix45ReproduceKeepsDamagedCheckpoint(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rp")
	rd := filepath.Join(out, "runs", "two-modes-ula")
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", rd); code != 0 {
		t.Fatal(stderr)
	}
	for _, n := range []string{"samples.npy", "metrics.json", "checkpoint/weights.npz"} { // unfinished, damaged
		os.Remove(filepath.Join(rd, n))
	}
	others := map[string]string{".draft.tmpl": "d", ".build.tmp/": ""}
	writeFiles(t, out, others)
	stdout, stderr, code := runCLI("reproduce", "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "1")
	if code != 2 || !strings.Contains(stdout, "FAILED") || !strings.Contains(stderr, "1 of 1 runs failed") {
		t.Errorf("exit %d, %s%s; want the run reported failed", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(rd, "checkpoint", "spec.json")); err != nil {
		t.Error("the damaged checkpoint was deleted")
	}
	checkFiles(t, out, others)
}

// 6. reproduce refuses, without --force, a folder holding report.md or a
// report figure but no runs/ of an earlier reproduce (it replaced them).
func TestFix45ReproduceRefusesForeignReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rdoc")
	files := map[string]string{"report.md": "# my report", "two-modes-weights.png": "mine"}
	writeFiles(t, out, files)
	_, stderr, code := runCLI("reproduce", "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "1")
	if code != 2 || !strings.Contains(stderr, "holds two-modes-weights.png, report.md but no runs/") {
		t.Errorf("exit %d, %q; want a refusal", code, stderr)
	}
	checkFiles(t, out, files)
	if err := checkReportFolder("--out", out, true); err != nil {
		t.Errorf("--force: %v", err)
	}
	os.Mkdir(filepath.Join(out, "runs"), 0o755)
	if err := checkReportFolder("--out", out, false); err != nil {
		t.Errorf("an earlier reproduce's folder: %v", err)
	}
}

// 8. convert IN.onnx CK/ --force (a trailing slash) replaces CK (it failed
// renaming "ck/"), and the working folder as CHECKPOINT is refused before
// any lock is taken (it failed "device or resource busy", leaving .lock).
func TestFix45ConvertPathCleaned(t *testing.T) {
	model, err := filepath.Abs(toyONNX)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if _, stderr, code := runCLI("convert", model, ck); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("convert", model, ck+"/", "--force"); code != 0 {
		t.Errorf("trailing slash: %s", stderr)
	}
	t.Chdir(ck)
	for _, arg := range []string{".", ck, "./"} {
		if _, stderr, code := runCLI("convert", model, arg, "--force"); code != 2 || !strings.Contains(stderr, "is the working folder or holds it") {
			t.Errorf("%s: exit %d, %q", arg, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(ck, ".lock")); err == nil {
		t.Error("a refused convert left .lock")
	}
}

// 9. The report prints huge log-likelihoods and log Z in %g form (a
// 300-digit number before).
func TestFix45ReportHugeLogLikelihood(t *testing.T) {
	ev := training.Eval{HeldOutLL: -2e300}
	ev.LogZ.LogZ, ev.LogZ.SE = 3e301, 1e299
	r := &reproRun{experiment: "two-modes", algorithm: algorithms.FlowMC, evals: []training.Eval{ev}, exactDensity: true}
	r.metrics.TrueHeldOutLL = -4e300
	w := newReportWriter(reproduceFlags{jobs: 1}, []*reproRun{r})
	if err := w.heldOut(); err != nil {
		t.Fatal(err)
	}
	got := w.b.String()
	for _, want := range []string{"-2e+300", "-4e+300", "3e+301 ± 1e+299"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, strings.Repeat("0", 50)) || math.IsNaN(ev.HeldOutLL) {
		t.Errorf("a number written in full:\n%s", got)
	}
}

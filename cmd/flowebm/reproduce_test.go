package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowebm/flowebm/algorithms"
)

// TestReproduceReport trains two short runs in-process, marks a third as
// diverged, and checks that reproduce keeps them (no retraining) and writes
// a report with their numbers, the paper's, and the plots.
func TestReproduceReport(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two short runs")
	}
	dir := t.TempDir()
	for _, a := range []string{"flowmc", "ula"} {
		var out, errb bytes.Buffer
		args := []string{"train", "--algorithm", a, "--iterations", "20", "--quiet", "--out", filepath.Join(dir, "runs", "two-modes-"+a)}
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("train %s: %s", a, errb.String())
		}
	}
	nt := filepath.Join(dir, "runs", "two-modes-nt")
	os.MkdirAll(nt, 0o755)
	os.WriteFile(filepath.Join(nt, "error.txt"), []byte("flowebm: iteration 7: loss NaN: training diverged\n"), 0o644)

	var out, errb bytes.Buffer
	if code := run([]string{"reproduce", "--experiments", "two-modes", "--algorithms", "flowmc,ula,nt", "--iterations", "20", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("reproduce: %s", errb.String())
	}
	if got := strings.Count(out.String(), "already done"); got != 2 {
		t.Errorf("%d runs kept, want 2:\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "two-modes-nt: diverged before") {
		t.Errorf("the failed run was not reported as such:\n%s", out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []string{"## Motivating example", "| flowMC-EBM | 0.", "| ULA-EBM | 0.", "| NT-EBM | diverged", "![two-modes weights](two-modes-weights.png)", "sampler's weights ± MCSE",
		"two-modes, flowMC-EBM: top-right weight", "| two-modes-flowmc | -", "| two-modes-nt | diverged"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "two-modes-weights.png")); err != nil {
		t.Error(err)
	}
	if !regexp.MustCompile(`\| flowMC-EBM \|[^\n]*\| 0\.\d{3} ± 0\.\d{3}, 0\.\d{3} ± 0\.\d{3} \|`).MatchString(report) {
		t.Errorf("the flowMC-EBM row lacks the sampler's weights with their MCSE:\n%s", report)
	}

	// Again in SVG: the report's plots and the kept runs' evaluation plots
	// are redrawn in that format without retraining.
	out.Reset()
	if code := run([]string{"reproduce", "--experiments", "two-modes", "--algorithms", "flowmc,ula", "--iterations", "20", "--plot-format", "svg", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("reproduce --plot-format svg: %s", errb.String())
	}
	for _, f := range []string{"two-modes-weights.svg", "runs/two-modes-flowmc/weights.svg", "runs/two-modes-ula/weights.svg"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !bytes.HasPrefix(b, []byte("<?xml")) {
			t.Errorf("%s: %.5q, %v", f, b, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.md")); !strings.Contains(string(b), "![two-modes weights](two-modes-weights.svg)") {
		t.Error("report does not show the SVG plot")
	}

	// A run that failed for another reason than divergence makes reproduce
	// exit with an error, naming it, after writing the report that marks it; a
	// diverged one (nt) is a result, not a failure.
	cf := filepath.Join(dir, "runs", "two-modes-coopflow")
	os.MkdirAll(cf, 0o755)
	os.MkdirAll(filepath.Join(cf, "log.txt"), 0o755) // a folder in its log's place: the run cannot start
	errb.Reset()
	if code := run([]string{"reproduce", "--experiments", "two-modes", "--iterations", "20", "--out", dir}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "1 of 4 runs failed or did not finish: two-modes-coopflow ("+filepath.Join(cf, "log.txt")+" is a folder, want a regular file)") {
		t.Errorf("a failed run: exit %d, %q, want 2 and the run named", code, errb.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.md")); !strings.Contains(string(b), "| two-modes-coopflow | failed") {
		t.Errorf("the report does not mark the failed run:\n%s", b)
	}

	// Runs of another seed or length are not passed off as this
	// invocation's.
	errb.Reset()
	for _, args := range [][]string{{"--seed", "2", "--iterations", "20"}, {"--quick"}} {
		a := append([]string{"reproduce", "--experiments", "two-modes", "--algorithms", "flowmc,ula", "--out", dir}, args...)
		if code := run(a, &out, &errb); code != 2 || !strings.Contains(errb.String(), "holds a run with seed 1 and 20 iterations") {
			t.Errorf("%v: exit %d, %q", args, code, errb.String())
		}
	}
}

func TestReproduceBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "--jobs", "0"}, "--jobs 0"},
		{[]string{"reproduce", "--experiments", "three-modes"}, `--experiments three-modes: unknown experiment (known: 8-gaussians`},
		{[]string{"reproduce", "--algorithms", "sgld"}, `--algorithms sgld: want "flowmc", "ula", "nt" or "coopflow"`},
		{[]string{"train", "--experiment", "three-modes"}, `--experiment three-modes: unknown experiment (known: 8-gaussians`},
		{[]string{"train", "--algorithm", "sgld"}, `invalid argument "sgld" for "--algorithm" flag: want "flowmc", "ula", "nt" or "coopflow"`},
		{[]string{"reproduce", "--experiments", ""}, `--experiments given an empty value`},
		{[]string{"reproduce", "--algorithms", " , "}, `--algorithms " , " has an empty name (a stray comma?)`},
		{[]string{"reproduce", "--experiments", "two-modes,"}, `--experiments "two-modes," has an empty name`},
		{[]string{"reproduce", "--iterations", "0"}, `--iterations 0: want a count from 1 to 1000000000 (leave it out for the full runs)`},
		{[]string{"reproduce", "--iterations", "2", "--quick"}, `--iterations and --quick both set the runs' length: give one`},
		{[]string{"train", "--seeds", "01,2"}, `--seeds "01,2": write seed 01 in decimal`},
		{[]string{"train", "--seeds", "1-05"}, `--seeds "1-05": write seed 05 in decimal`},
		{[]string{"reproduce", "--experiments", "two-modes,two-modes"}, "names two-modes twice"},
		{[]string{"gradcheck", "--tol", "NaN"}, "--tol NaN, want a finite tolerance > 0"},
		{[]string{"gradcheck", "--tol", "0"}, "--tol 0"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

// A SIGINT to reproduce stops its train processes at a checkpoint and
// waits for them: none is left running (a prompt rerun reported the
// orphan's run as failed), the run resumes, and the rerun finishes it.
func TestReproduceInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a run")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} { // SIGHUP: its terminal closed
		t.Run(sig.String(), func(t *testing.T) { reproduceInterrupted(t, sig) })
	}
}

func reproduceInterrupted(t *testing.T, sig syscall.Signal) {
	out := t.TempDir()
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "3000", "--jobs", "1", "--out", out}
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var o, e bytes.Buffer
		code := run(args, &o, &e)
		done <- result{code, e.String()}
	}()
	dir := filepath.Join(out, "runs", "two-modes-flowmc")
	for i := 0; !exists(filepath.Join(dir, "checkpoint")); i++ {
		if i == 600 {
			t.Fatal("no checkpoint after 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	syscall.Kill(os.Getpid(), sig)
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("reproduce did not stop")
	}
	if r.code != 128+int(sig) || !strings.Contains(r.stderr, "interrupted: the runs under way stopped at their last checkpoint") { // probe 34: 2
		t.Errorf("exit %d, %q", r.code, r.stderr)
	}
	release, err := lockRun(dir)
	if err != nil {
		t.Fatalf("the train process still holds its run: %v", err)
	}
	release()
	if _, err := os.Stat(filepath.Join(dir, "error.txt")); err == nil {
		t.Error("the interrupted run was marked failed")
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); err == nil {
		t.Error("a report was written for an interrupted reproduce")
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
	if !strings.Contains(string(log), "continue with: flowebm train --resume") {
		t.Errorf("the run's log does not say it stopped at a checkpoint:\n%s", log)
	}
}

// A run that failed for another reason than divergence (a full disk) is
// retried by the next reproduce, which finishes it; it was reported as
// failed forever.
func TestReproduceRetriesFailedRun(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "runs", "two-modes-flowmc")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "error.txt"), []byte("flowebm: write checkpoint.new/state.npz: no space left on device\n"), 0o644)
	// It stopped before its first checkpoint: its config.json is all there
	// is (the retry said "no complete checkpoint" forever).
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"experiment": "two-modes", "seed": 1, "train": {"algorithm": "flowmc", "iterations": 2}}`), 0o644)
	code, stdout, stderr := reproduceInto(out, "two-modes", "flowmc")
	if code != 0 || !strings.Contains(stdout, "two-modes-flowmc: done") {
		t.Errorf("exit %d, %q, %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "error.txt")); err == nil {
		t.Error("error.txt kept after the retry succeeded")
	}
}

// A run that diverges is reported as such in reproduce's progress, not as
// FAILED (it is a result, not retried); another failure is FAILED and
// retried.
func TestReproduceProgressNamesDivergence(t *testing.T) {
	div := "flowebm: iteration 101: loss -1.26e+06 beyond the energy limit 1e+06 (the negatives' energies exploded): training diverged; the last good checkpoint is in X"
	if got := failureStatus(div); !strings.HasPrefix(got.status, "diverged (a result the report shows, not retried): ") || strings.Contains(got.status, "FAILED") || got.kind != outcomeEnded {
		t.Errorf("divergence: %q", got)
	}
	if got := failureStatus("flowebm: write metrics.csv: no space left on device"); !strings.HasPrefix(got.status, "FAILED (retried by the next reproduce): ") || got.kind != outcomeFailed {
		t.Errorf("a full disk: %q", got)
	}
	// Probe 19: the word in a path made any failure a divergence.
	if got := failureStatus("flowebm: write /data/diverged-runs/x/metrics.csv: no space left on device"); !strings.HasPrefix(got.status, "FAILED (retried by the next reproduce): ") || got.kind != outcomeFailed {
		t.Errorf("a full disk in a folder named diverged-runs: %q", got)
	}
	if !isDivergence("flowebm: iteration 7: loss NaN: training diverged\n") || isDivergence("flowebm: open /x/training diverged/y: no such file") {
		t.Error("isDivergence: want train's mark only")
	}
}

// Probe 26: reproduce --report read a finished run, let go of it, then
// redrew its figures: a train --force in between was left with the old
// run's figures. The run is held from the reading to the drawing, and a
// run that another process holds is read, not redrawn.
func TestReportHoldsRunWhileRedrawing(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "runs", "two-modes-flowmc")
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", runDir); code != 0 {
		t.Fatal(stderr)
	}
	var during error
	redrawn := false
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "run-redrawing" {
			redrawn = true
			_, during = lockRunAs(runDir, "train") // a train --force now
		}
	}
	report := []string{"reproduce", "--report", dir, "--experiments", "two-modes", "--algorithms", "flowmc"}
	if _, stderr, code := runCLI(report...); code != 0 {
		t.Fatal(stderr)
	}
	if !redrawn || !errors.As(during, new(folderBusyError)) {
		t.Errorf("redrawn %v; a train meanwhile: %v, want it refused as busy", redrawn, during)
	}
	hold, err := lockRunAs(runDir, "train") // a run being trained again
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	redrawn = false
	out, stderr, code := runCLI(report...)
	if code != 0 || redrawn || !strings.Contains(out+stderr, "two-modes-flowmc: another process holds "+filepath.Join(runDir, ".lock")+": its plots were not redrawn in png") {
		t.Errorf("a held run: exit %d, redrawn %v, and said (probe 27: nothing) %q %q", code, redrawn, out, stderr)
	}
	// Probe 28: plain reproduce said nothing of it.
	out, stderr, code = runCLI("reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "4", "--jobs", "1")
	if code != 0 || redrawn || !strings.Contains(out+stderr, "two-modes-flowmc: another process holds "+filepath.Join(runDir, ".lock")+": its plots were not redrawn in png") {
		t.Errorf("reproduce of a held run: exit %d, redrawn %v, and said %q %q", code, redrawn, out, stderr)
	}
}

// Probe 27: a run's checkpoint that could not be read (replaced under a
// stopped report) was reported as "no checkpoint yet", exit 0.
func TestReportSaysCheckpointUnreadable(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "runs", "two-modes-flowmc")
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", runDir); code != 0 {
		t.Fatal(stderr)
	}
	os.Remove(filepath.Join(runDir, "samples.npy")) // not finished: its checkpoint is read
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "report-checkpoint-read" { // a trainer replaces it meanwhile
			os.Rename(filepath.Join(runDir, "checkpoint"), filepath.Join(runDir, "checkpoint.gone"))
		}
	}
	runCLI("reproduce", "--report", dir, "--experiments", "two-modes", "--algorithms", "flowmc")
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if report := string(b); !strings.Contains(report, "the run replaced its checkpoint while this process was reading it") || strings.Contains(report, "no checkpoint yet") {
		t.Errorf("report:\n%s", report)
	}
	// Probe 28: a damaged checkpoint was "no checkpoint yet" too.
	testHook = nil
	os.Rename(filepath.Join(runDir, "checkpoint.gone"), filepath.Join(runDir, "checkpoint"))
	os.WriteFile(filepath.Join(runDir, "checkpoint", "state.json"), []byte("{}"), 0o644)
	runCLI("reproduce", "--report", dir, "--experiments", "two-modes", "--algorithms", "flowmc")
	b, _ = os.ReadFile(filepath.Join(dir, "report.md"))
	if report := string(b); !strings.Contains(report, "does not match the SHA-256") || strings.Contains(report, "no checkpoint yet") {
		t.Errorf("report on a damaged checkpoint:\n%s", report)
	}
}

// An image experiment with no run folder in a --report folder is reported
// missing without reading its images (probes 22–28: a report of two-modes
// runs loaded MNIST, which a 4 GB ulimit -v refused); one with a run
// folder is still read.
func TestReportReadsNoImagesWithoutTheirRuns(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runCLI("reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1"); code != 0 {
		t.Fatal(stderr)
	}
	t.Setenv("FLOWEBM_MNIST", t.TempDir()) // no images there
	out, stderr, code := runCLI("reproduce", "--report", dir, "--experiments", "two-modes,mnist", "--algorithms", "ula")
	if code != 0 || !strings.Contains(out, "mnist-ula: missing: no folder") {
		t.Errorf("exit %d: %s %s", code, out, stderr)
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs", "mnist-ula"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("reproduce", "--report", dir, "--experiments", "two-modes,mnist", "--algorithms", "ula"); code != 2 || !strings.Contains(stderr, "FLOWEBM_MNIST") {
		t.Errorf("with a run folder of mnist: exit %d: %s", code, stderr)
	}
}

// Probe 29: a train process killed by a signal was said to have failed
// with its log's last line, a progress line.
func TestChildKilledSaysSo(t *testing.T) {
	err := exec.Command("sh", "-c", "kill -9 $$").Run()
	if got, want := childFailure(err, "iteration 30/300 (10%)"), `the train process ended with signal: killed (the last line of its log.txt: "iteration 30/300 (10%)")`; got != want {
		t.Errorf("killed: %q, want %q", got, want)
	}
	err = exec.Command("sh", "-c", "exit 2").Run()
	if got := childFailure(err, "flowebm: no space left on device"); got != "flowebm: no space left on device" {
		t.Errorf("failed: %q", got)
	}
	if got := childFailure(err, ""); got != "exit status 2" {
		t.Errorf("no log: %q", got)
	}
}

// Probe 29: the figures' temporary files of a reproduce killed while it
// redrew a run's plots were left for good; reproducing again (or a
// --report) removes them, as plot does.
func TestReproduceRemovesStaleFigureTemps(t *testing.T) {
	dir := t.TempDir()
	args := []string{"reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1"}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(dir, "runs", "two-modes-ula")
	for _, args := range [][]string{args, {"reproduce", "--report", dir, "--experiments", "two-modes", "--algorithms", "ula"}} {
		stale := filepath.Join(run, ".weights.svg.tmp4242")
		if err := os.WriteFile(stale, []byte("<svg"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := runCLI(args...); code != 0 || exists(stale) {
			t.Errorf("%v: exit %d, %s left: %s", args, code, stale, stderr)
		}
	}
}

// Probe 29: an interrupt once the runs were trained was answered "the
// runs under way stop at their next checkpoint", then ignored: the report
// was written and reproduce exited 0.
func TestReproduceInterruptedAfterTraining(t *testing.T) {
	dir := t.TempDir()
	code, stderr := outputsChild(t, "reproduce-trained", "INT", "reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1")
	if code != 130 || !strings.Contains(stderr, "no report written: start the same reproduce command again to write it") || strings.Contains(stderr, "runs under way") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if exists(filepath.Join(dir, "report.md")) {
		t.Error("report.md written after the interrupt")
	}
}

// Probe 29: a report.md (or report figure) that is a folder failed the
// rename at the end of reproduce (after hours of training) or --report
// (the other figures already replaced); a link was replaced. Each is
// refused before any work.
func TestReportFilesCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "report.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1"}
	want := "--out " + dir + ": " + filepath.Join(dir, "report.md") + " is a folder, want a regular file: reproduce writes the report there: move it away"
	if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, want) || exists(filepath.Join(dir, "runs", "two-modes-ula")) {
		t.Errorf("exit %d: %s; want %q before any training", code, stderr, want)
	}
	os.Remove(filepath.Join(dir, "report.md"))
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	fig := filepath.Join(dir, "two-modes-weights.png")
	before, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	os.Remove(fig)
	if err := os.Symlink(filepath.Join(dir, "mine.png"), fig); err != nil {
		t.Fatal(err)
	}
	want = "--report " + dir + ": " + fig + " is a symbolic link, want a regular file"
	if _, stderr, code := runCLI("reproduce", "--report", dir, "--experiments", "two-modes", "--algorithms", "ula"); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("--report: exit %d: %s; want %q", code, stderr, want)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "report.md")); !bytes.Equal(after, before) {
		t.Error("report.md rewritten")
	}
}

// Probe 30: an interrupt once report.md was in place said "no report
// written".
func TestReproduceInterruptedAfterReport(t *testing.T) {
	dir := t.TempDir()
	code, stderr := outputsChild(t, "report-written", "INT", "reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1")
	if want := "the report is written: " + filepath.Join(dir, "report.md"); code != 130 || !strings.Contains(stderr, want) || strings.Contains(stderr, "no report written") {
		t.Errorf("exit %d: %s; want %q", code, stderr, want)
	}
}

// Probe 30: a train process stopped by its own SIGTERM was recorded as a
// failure (error.txt, "failed" in the report), though it only needs its
// resume; a full disk left its error nowhere (an empty log.txt, "exit
// status 2").
func TestChildInterruptionAndLostLog(t *testing.T) {
	for msg, want := range map[string]bool{
		"flowebm: training interrupted at iteration 78 of 300; checkpoint written to /r/checkpoint":  true,
		"flowebm: interrupted again (terminated): quitting now; …":                                   true,
		"flowebm: interrupted before training started: nothing was trained":                          true,
		"flowebm: open /data/training interrupted/x.csv: no such file or directory":                  false,
		"flowebm: interrupted/runs/two-modes-ula/metrics.csv: no space left on device":               false,
		"flowebm: interrupted runs/runs/two-modes-ula: no complete checkpoint":                       false, // probe 32
		"flowebm: interrupted;x/runs/two-modes-ula: no complete checkpoint":                          false,
		"flowebm: interrupted (copy)/runs/two-modes-ula: no complete checkpoint":                     false, // probe 33
		"flowebm: interrupted again (hangup): quitting now; …":                                       true,
		"flowebm: training interrupted during the flow's pretraining, at step 3 of 100":              true,
		"flowebm: interrupted (interrupt): the partial files being written were removed":             true,
		"flowebm: iteration 7: loss NaN: training diverged":                                          false,
		"flowebm: interrupted (interrupt): z/runs/two-modes-ula/density.png is a folder":             false, // probe 34: --out "interrupted (interrupt): z"
		"flowebm: training interrupted at iteration 1/runs/two-modes-ula/density.png is a folder":    false, // probe 35
		"flowebm: training interrupted at iteration 5, and writing its checkpoint failed: disk full": true,
		"flowebm: training interrupted after waiting 2s for a process that reads r's checkpoint: …":  true,
	} {
		if isInterruption(msg) != want {
			t.Errorf("isInterruption(%q) = %v", msg, !want)
		}
	}
	full := &childLog{log: failingWriter{}}
	fmt.Fprintln(full, "iteration 10/300 (3%)")
	fmt.Fprintln(full, "flowebm: write metrics.csv: no space left on device")
	if full.err == nil || full.lastLine() != "flowebm: write metrics.csv: no space left on device" {
		t.Errorf("a log that cannot be written: %v, %q", full.err, full.lastLine())
	}
	long := &childLog{log: io.Discard}
	fmt.Fprint(long, strings.Repeat("x", 10000)+"\nlast\n")
	if long.lastLine() != "last" || len(long.tail) > 4096 {
		t.Errorf("a long output: %q, %d bytes kept", long.lastLine(), len(long.tail))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Probe 31: whether the report was written was told by report.md's
// mtime: a report of an earlier reproduce with a later mtime (or mtimes
// of one second) passed for the new one. And a run whose train process
// was interrupted before writing its config.json was reported "failed".
func TestReportWrittenToldByFileAndEarlyInterruption(t *testing.T) {
	dir := t.TempDir()
	args := []string{"reproduce", "--out", dir, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--jobs", "1"}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	report := filepath.Join(dir, "report.md")
	future := time.Now().Add(10 * time.Minute)
	if err := os.Chtimes(report, future, future); err != nil {
		t.Fatal(err)
	}
	code, stderr := outputsChild(t, "reproduce-trained", "INT", args...)
	if code != 130 || !strings.Contains(stderr, "no report written") {
		t.Errorf("an old report.md of a later mtime: exit %d: %s", code, stderr)
	}
	nt := filepath.Join(dir, "runs", "two-modes-nt")
	if err := os.MkdirAll(nt, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, nt, "log.txt", "flowebm: training interrupted during the flow's pretraining, at step 3 of 100: nothing was trained\n")
	out, _, _ := runCLI("reproduce", "--report", dir, "--experiments", "two-modes", "--algorithms", "ula,nt")
	if !strings.Contains(out, "two-modes-nt: incomplete: interrupted before its first checkpoint") {
		t.Errorf("a run interrupted as it started: %s", out)
	}
}

// Review of probes 31–33: reproduce told an interrupted train process by
// the wording of its last line, which an error naming a path could take
// (three tightenings). It is told by the exit status now: 128 + the
// signal's number, as train exits when a signal stops it.
func TestChildInterruptionToldByExitStatus(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		line   string
		status int
		want   string
	}{
		{"flowebm: interrupted (interrupt): x/runs/two-modes-ula: no complete checkpoint", 2, "FAILED"},
		{"flowebm: training interrupted at iteration 3 of 10; continue with: flowebm train --resume r", 130, "interrupted"},
		{"flowebm: training interrupted at iteration 3 of 10; continue with: flowebm train --resume r", 143, "interrupted"},
		{"flowebm: write r/metrics.csv: no space left on device", 2, "FAILED"},
		{"iteration 1/10", -int(syscall.SIGINT), "interrupted"},                                // probe 34: killed by SIGINT before train's handler was set
		{"iteration 1/10", -int(syscall.SIGKILL), "FAILED"},                                    // the out-of-memory killer, say
		{"samples.npy written", 130, "done"},                                                   // probe 34: stopped once its outputs were written
		{"flowebm: another flowebm process is here/x: no such file or directory", 2, "FAILED"}, // probe 34: a path holding the words
		{"flowebm: " + filepath.Join(dir, "busy", "two-modes-ula") + ": another flowebm process is training in this folder (it holds x)", 2, "skipped"},
	} {
		exe := filepath.Join(t.TempDir(), "train")
		end := fmt.Sprintf("exit %d", c.status)
		if c.status < 0 {
			end = fmt.Sprintf("kill -%d $$", -c.status)
		}
		if c.want == "done" {
			end = `for a; do last=$a; done; touch "$last/samples.npy"; ` + end // --out DIR is the last argument
		}
		script := fmt.Sprintf("#!/bin/sh\necho %q >&2\n%s\n", c.line, end)
		if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		r := &reproRun{experiment: "two-modes", algorithm: algorithms.ULA, dir: filepath.Join(dir, fmt.Sprint(c.status), "two-modes-ula")}
		if c.want == "skipped" {
			r.dir = filepath.Join(dir, "busy", "two-modes-ula")
		}
		got := trainOne(context.Background(), context.Background(), exe, r, reproduceFlags{seed: 1, jobs: 1})
		kind := map[string]outcomeKind{"FAILED": outcomeFailed, "interrupted": outcomeInterrupted, "done": outcomeEnded, "skipped": outcomeSkipped}[c.want]
		if !strings.HasPrefix(got.status, c.want) || got.kind != kind {
			t.Errorf("a train process that wrote %q and exited %d: %q, want %s", c.line, c.status, got, c.want)
		}
		if c.want == "done" || c.want == "skipped" {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.dir, "error.txt")); (err == nil) != (c.want == "FAILED") {
			t.Errorf("exit %d: error.txt written: %v, want %v", c.status, err == nil, c.want == "FAILED")
		}
	}
	t.Setenv("FLOWEBM_CHILD_WAIT", "1s") // the signal is handled meanwhile
	for _, args := range [][]string{
		{"train", "--iterations", "4", "--quiet", "--out", filepath.Join(dir, "one")},
		{"train", "--seeds", "1,2", "--iterations", "4", "--quiet", "--out", filepath.Join(dir, "seeds")},
	} {
		if code, stderr := outputsChild(t, "train-started", "TERM", args...); code != 143 || !strings.Contains(stderr, "interrupted") {
			t.Errorf("%v on SIGTERM: exit %d, %s; want 143", args, code, stderr)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/plots"
	trainingpkg "github.com/flowebm/flowebm/algorithms/training"
)

// compare overlays runs' metrics without training: a figure per quantity
// the runs have, refusing to replace figures without --force and a file
// that is not a metrics.csv.
func TestCompareRuns(t *testing.T) {
	a, b := trainedRun(t), trainedRun(t)
	out := filepath.Join(t.TempDir(), "cmp")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"compare", a, b, "--out", out, "--plot-format", "svg"}, &stdout, &stderr); code != 0 {
		t.Fatalf("compare: %s", stderr.String())
	}
	for _, f := range []string{"ebm-weight-mse.svg", "held-out-ll.svg", "log-density-error.svg"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || !bytes.Contains(b, []byte("run")) {
			t.Errorf("%s: %v", f, err)
		}
	}
	if strings.Count(stdout.String(), "wrote ") < 3 {
		t.Errorf("output %q", stdout.String())
	}
	stderr.Reset()
	if code := run([]string{"compare", a, "--out", out, "--plot-format", "svg"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "already holds figures") {
		t.Errorf("again without --force: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"compare", filepath.Join(t.TempDir(), "nothing"), "--out", filepath.Join(t.TempDir(), "c")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "nothing does not exist: give a run folder that flowebm train wrote") {
		t.Errorf("missing run: exit %d, %q", code, stderr.String())
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "metrics.csv"), []byte("a,b\n1,2\n"), 0o644)
	stderr.Reset()
	if code := run([]string{"compare", bad, "--out", filepath.Join(t.TempDir(), "c")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "want flowebm's metrics.csv columns") {
		t.Errorf("bad metrics.csv: exit %d, %q", code, stderr.String())
	}
}

// compare's summary.md has a row per run with its configuration and last
// evaluation, the metrics.json values of a finished run, and for a run
// still training its exact held-out LL drawn again and — for its time; a
// second comparison into the folder needs --force.
func TestCompareSummary(t *testing.T) {
	finished := trainedRun(t)
	training := filepath.Join(t.TempDir(), "training")
	if err := os.CopyFS(training, os.DirFS(finished)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(training, "metrics.json")); err != nil {
		t.Fatal(err)
	}
	m, err := trainingpkg.ReadMetrics(filepath.Join(finished, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "cmp")
	if _, stderr, status := runCLI("compare", finished, training, "--out", out); status != 0 {
		t.Fatalf("compare: %s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(string(b), "\n")
	wantRun := fmt.Sprintf("| run | two-modes | flowmc | realnvp | 2 | %.3f (%.3f) | %.3f / %.3f |", m.Final.HeldOutLL, m.TrueHeldOutLL, m.Final.MaxRHat, m.Final.MaxRHatClassic)
	wantMS := fmt.Sprintf("| %.0f |", 1000*m.Seconds/2)
	if len(rows) < 4 || !strings.HasPrefix(rows[2], wantRun) || !strings.HasSuffix(rows[2], wantMS) {
		t.Errorf("finished run's row %q, want it to start %q and end %q", rows[2], wantRun, wantMS)
	}
	// The exact held-out LL of a run still training is drawn again from
	// its config.json (round 63: left out).
	if wantRow := fmt.Sprintf("| training | two-modes | flowmc | realnvp | 2 | %.3f (%.3f) |", m.Final.HeldOutLL, m.TrueHeldOutLL); len(rows) < 4 || !strings.HasPrefix(rows[3], wantRow) || !strings.HasSuffix(rows[3], "| — |") {
		t.Errorf("unfinished run's row %q, want %q… and no time", rows[3], wantRow)
	}
	if err := os.Remove(filepath.Join(out, "held-out-ll.png")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ebm-weight-mse.png", "max-rhat.png", "log-density-error.png", "global-accept.png"} {
		os.Remove(filepath.Join(out, f))
	}
	wantErr(t, "already holds a comparison's summary.md", "compare", finished, "--out", out)
}

// Probe 16: a run folder named with a line break split its row of
// summary.md, and a run without evaluations left a pipe of its name
// unescaped: every name is one cell.
func TestCompareSummaryCells(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"a|b", `a\|b`}, {"line\nbreak", "line break"}, {"cr\r\nlf", "cr lf"},
	} {
		got := runSummary{Named: plots.Named{Name: c.name}}.row()
		if !strings.HasPrefix(got, "| "+c.want+" | ") || strings.ContainsAny(got, "\r\n") {
			t.Errorf("row of %q: %q, want it to start with %q on one line", c.name, got, c.want)
		}
	}
}

// Probe 26: a ULA-EBM run, which trains no flow, was shown with the
// default flow "realnvp".
func TestCompareShowsNoFlowForULA(t *testing.T) {
	dir := t.TempDir()
	ula := filepath.Join(dir, "ula")
	if _, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", ula); code != 0 {
		t.Fatal(stderr)
	}
	if got, _ := readSummary(plots.Named{Name: "ula"}, ula); got.cfg != "two-modes | ula | —" {
		t.Errorf("ULA's experiment, algorithm and flow: %q", got.cfg)
	}
}

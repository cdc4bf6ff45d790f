package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if code := run([]string{"compare", filepath.Join(t.TempDir(), "nothing"), "--out", filepath.Join(t.TempDir(), "c")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "not a run folder") {
		t.Errorf("missing run: exit %d, %q", code, stderr.String())
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "metrics.csv"), []byte("a,b\n1,2\n"), 0o644)
	stderr.Reset()
	if code := run([]string{"compare", bad, "--out", filepath.Join(t.TempDir(), "c")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "want flowebm's metrics.csv columns") {
		t.Errorf("bad metrics.csv: exit %d, %q", code, stderr.String())
	}
}

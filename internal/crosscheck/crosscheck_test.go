package crosscheck

import (
	"os"
	"strings"
	"testing"
)

// The summary names the package, counts the skips and gives each reason;
// nothing is printed when nothing was skipped.
func TestSummary(t *testing.T) {
	var r Recorder
	if s := r.Summary("io/npz"); s != "" {
		t.Errorf("nothing skipped: %q", s)
	}
	t.Run("skip", func(t *testing.T) { r.Skip(t, "NumPy interop", "no NumPy") })
	t.Run("skip2", func(t *testing.T) { r.Skip(t, "ONNX checker", "no python3-onnx") })
	want := "io/npz: 2 cross-checks skipped: NumPy interop: no NumPy; ONNX checker: no python3-onnx"
	if s := r.Summary("io/npz"); s != want {
		t.Errorf("summary %q, want %q", s, want)
	}
	if p := packageName(); !strings.HasSuffix(p, "internal/crosscheck") {
		t.Errorf("package name %q", p)
	}
}

// appendLine adds lines to the log file.
func TestAppendLine(t *testing.T) {
	path := t.TempDir() + "/log"
	appendLine(path, "a: 1 cross-check skipped: x")
	appendLine(path, "b: 1 cross-check skipped: y")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "a: 1 cross-check skipped: x\nb: 1 cross-check skipped: y\n" {
		t.Errorf("log %q, %v", b, err)
	}
}

// Skip reads the log variable while the tests run (go test's cache keys on
// the variables tests read, so a cached package that skipped is run again
// for a new log file instead of reporting nothing).
func TestSkipReadsTheLogVariable(t *testing.T) {
	t.Setenv(LogEnv, "/tmp/some-log")
	var r Recorder
	t.Run("skip", func(t *testing.T) { r.Skip(t, "x", "y") })
	if r.log != "/tmp/some-log" {
		t.Errorf("log %q", r.log)
	}
}

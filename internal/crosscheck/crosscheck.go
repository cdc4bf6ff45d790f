// Package crosscheck lets a test binary say which cross-checks it skipped
// because a peer tool was missing (NumPy, PyTorch, python3-onnx, ONNX
// Runtime, OpenBLAS, scikit-learn's data). `go test ./...` prints nothing
// of a passing package but its "ok" line, so a skipped cross-check was
// silent; a Recorder prints one line per package when its tests end, on
// the terminal that ran `go test` (or standard error without one), and
// appends it to the file FLOWEBM_CROSSCHECK_LOG names, if set (CI prints
// that file after the tests).
//
//	var cross crosscheck.Recorder
//
//	func TestMain(m *testing.M) { cross.Main(m) }
//
//	func TestAgainstNumPy(t *testing.T) {
//		if !haveNumPy() {
//			cross.Skip(t, "NumPy interop", "no NumPy under /usr/bin/python3 (apt-get install python3-numpy)")
//		}
//		…
//	}
package crosscheck

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Recorder collects a test binary's skipped cross-checks. The zero value
// is ready to use.
type Recorder struct {
	mu    sync.Mutex
	skips []string
	log   string // LogEnv's value, read by Skip
}

// Skip records that the cross-check what did not run, and why (what to
// install), and skips t.
func (r *Recorder) Skip(t testing.TB, what, why string) {
	t.Helper()
	// Read while the tests run: go test's cache keys on the environment
	// variables a test reads, so a package that skips runs again (and
	// reports again) when the log file changes; one that skips nothing
	// has nothing to report and may stay cached.
	log := os.Getenv(LogEnv)
	r.mu.Lock()
	r.skips = append(r.skips, what+": "+why)
	r.log = log
	r.mu.Unlock()
	t.Skipf("%s skipped: %s", what, why)
}

// Main runs the tests, prints the summary line if any cross-check was
// skipped, and exits with the tests' status.
func (r *Recorder) Main(m *testing.M) {
	code := m.Run()
	if line := r.Summary(packageName()); line != "" {
		w, closeW := terminal()
		fmt.Fprintln(w, line)
		closeW()
		r.mu.Lock()
		log := r.log
		r.mu.Unlock()
		if log != "" {
			appendLine(log, line)
		}
	}
	os.Exit(code)
}

// LogEnv names the environment variable holding a file to which Main
// appends its line.
const LogEnv = "FLOWEBM_CROSSCHECK_LOG"

// appendLine appends line to the file at path (packages run at once append
// one short line each, in O_APPEND mode).
func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crosscheck: %v\n", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		fmt.Fprintf(os.Stderr, "crosscheck: %v\n", err)
	}
}

// Summary is the line Main prints for package pkg ("" if nothing was
// skipped).
func (r *Recorder) Summary(pkg string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.skips) == 0 {
		return ""
	}
	noun := "cross-checks"
	if len(r.skips) == 1 {
		noun = "cross-check"
	}
	return fmt.Sprintf("%s: %d %s skipped: %s", pkg, len(r.skips), noun, strings.Join(r.skips, "; "))
}

// terminal returns the controlling terminal, which `go test` does not
// capture, or standard error if there is none (CI logs, `go test -v`).
func terminal() (io.Writer, func()) {
	if f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		return f, func() { f.Close() }
	}
	return os.Stderr, func() {}
}

// packageName is the test's folder relative to the module root (go test
// runs a package's tests in its folder).
func packageName() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if rel, err := filepath.Rel(dir, wd); err == nil {
				return filepath.ToSlash(rel)
			}
			return wd
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd
		}
		dir = parent
	}
}

// Package childtest runs a test again in a child process of the test
// binary, so that the test can lower its own limits (ulimit -v) without
// lowering those of the tests beside it.
package childtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Run reports whether this process is the child started for the test
// name (its environment has env=1). Otherwise it runs that test in a
// child process, failing or skipping as the child does, and reports
// false: the caller returns.
func Run(t *testing.T, name, env string) bool {
	t.Helper()
	if os.Getenv(env) == "1" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("child: %v\n%s", err, out)
	case strings.Contains(string(out), "--- SKIP"):
		t.Skipf("child: %s", out)
	}
	return false
}

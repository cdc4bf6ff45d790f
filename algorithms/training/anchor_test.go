package training

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/flowebm/flowebm/algorithms"
)

// anchorAt is an Anchor reaching the folder dir through a descriptor
// opened now (as flowebm train's does once it has locked it).
func anchorAt(t *testing.T, dir string) Anchor {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return func() (string, func(), error) { return fmt.Sprintf("/proc/self/fd/%d", fd), func() {}, nil }
}

// TestCheckpointWrittenThroughTheAnchor re-points the link that names the
// run's folder after its Guard passed and before the write (the
// microseconds that check-then-write left): the checkpoint, config.json
// and metrics.csv must land in the run's own folder, reached through its
// Anchor, and the other folder must be left as it was.
func TestCheckpointWrittenThroughTheAnchor(t *testing.T) {
	base := t.TempDir()
	own, other := filepath.Join(base, "own"), filepath.Join(base, "other")
	for _, d := range []string{own, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "metrics.csv"), []byte("another run's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	r := smallRun(t, algorithms.FlowMC, 10, link)
	r.Anchor = anchorAt(t, own)
	r.Guard = func() error { // the check passes, then the link moves
		os.Remove(link)
		return os.Symlink(other, link)
	}
	stepN(t, r, 2)
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := r.writeEvals(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(other, "metrics.csv")); err != nil || string(b) != "another run's\n" {
		t.Errorf("the other folder's metrics.csv: %q, %v; want it left as it was", b, err)
	}
	wantOnly(t, other, "metrics.csv")
	if _, err := LatestCheckpoint(own); err != nil {
		t.Errorf("no checkpoint in the run's own folder: %v", err)
	}
	for _, n := range []string{"config.json", "metrics.csv"} {
		if _, err := os.Stat(filepath.Join(own, n)); err != nil {
			t.Errorf("the run's own %s: %v", n, err)
		}
	}
	if r.Dir != link {
		t.Errorf("Dir after the checkpoint: %q, want the user's %q", r.Dir, link)
	}
	resumed, err := ResumeWith(own, ResumeOptions{Anchor: anchorAt(t, own)})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Dir != own || resumed.Trainer.Iter != 2 {
		t.Errorf("resumed through the anchor: Dir %q at iteration %d, want %q at 2", resumed.Dir, resumed.Trainer.Iter, own)
	}
}

// TestThroughNamesTheUsersFolder: an error of a write through the anchor
// names the folder as the user gave it, and errors.Is sees through it.
func TestThroughNamesTheUsersFolder(t *testing.T) {
	dir := t.TempDir()
	anchor := anchorAt(t, dir)
	err := Through("RUN", anchor, func(at string) error {
		_, err := os.Open(filepath.Join(at, "missing"))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "RUN/missing") || strings.Contains(err.Error(), "/proc/self/fd") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v: want it to name RUN/missing and to be os.ErrNotExist", err)
	}
}

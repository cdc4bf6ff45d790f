package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An output that names a pipe (or a device: /dev/null as root) is refused
// even with --force, and the pipe is left as it was.
func TestOutputNeverReplacesAPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	_, stderr, status := runCLI("reproduce", "--plan", fifo, "--force", "--out", filepath.Join(dir, "out"), "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "10")
	if status == 0 || !strings.Contains(stderr, "--plan "+fifo+" is not a regular file") {
		t.Errorf("status %d, %q; want a refusal naming the pipe", status, stderr)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v, %v", fi.Mode(), err)
	}
}

// energy refuses points in a pipe (it reads the header, then the data:
// it hung on the second open) instead of waiting forever.
func TestEnergyRefusesPipePoints(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "points.npy")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	_, stderr, status := runCLI("energy", "--model", filepath.Join(dir, "none.onnx"), "--points", fifo)
	if status == 0 || !strings.Contains(stderr, "--points "+fifo+" is not a regular file") {
		t.Errorf("status %d, %q; want the pipe refused", status, stderr)
	}
}

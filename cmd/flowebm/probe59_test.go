package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Probe 59 B3: a sample checkpoint records the build that wrote it (Go,
// BLAS, vector math); resumed by another, sample says that the run will
// differ from an uninterrupted one at round-off, as train does. Resumed
// by the same build, it says nothing.
func TestSampleResumeNotesAnotherBuild(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	ck, other := filepath.Join(dir, "k.npz"), filepath.Join(dir, "other.npz")
	out := filepath.Join(dir, "s.npy")
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--checkpoint", ck, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck, "--force"); code != 0 || strings.Contains(stderr, "note: the run was started with") {
		t.Errorf("same build: exit %d: %s", code, stderr)
	}
	editCheckpoint(t, ck, other, func(_ map[string]*npy.Array, meta map[string]any) {
		meta["build"] = map[string]any{"go": "go1.0 plan9/386", "blas": "another", "vector_math": "none"}
	})
	os.Remove(out)
	_, stderr, code := runCLI("sample", "--resume", other, "--force")
	if code != 0 || !strings.Contains(stderr, "note: the run was started with go1.0 plan9/386, BLAS another, vector math none; resumed with go") ||
		!strings.Contains(stderr, "it will differ from an uninterrupted run at round-off") {
		t.Errorf("another build: exit %d: %s", code, stderr)
	}
}

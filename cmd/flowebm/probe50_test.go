package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Probe 48 N5c: train, compare and reproduce said "cannot make the folder
// ro/c: mkdir ro/c: permission denied" without naming the option that
// gave the folder.
func TestUnmakeableOutFolderNamesTheFlag(t *testing.T) {
	dir := openTempDir(t)
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Mkdir(filepath.Join(dir, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"train", "--iterations", "2", "--quiet", "--out", "ro/c"},
		{"train", "--iterations", "2", "--quiet", "--seeds", "2", "--out", "ro/c"},
		{"compare", "run", "--out", "ro/c"},
		{"reproduce", "--quick", "--experiments", "two-modes", "--out", "ro/c"},
	} {
		stderr, err := otherUser(t, dir, args...)
		if err == nil || !strings.Contains(stderr, "--out ro/c: cannot make this folder: mkdir ro/c: permission denied") {
			t.Errorf("%s: %v, %q; want the refusal naming --out", strings.Join(args, " "), err, stderr)
		}
	}
}

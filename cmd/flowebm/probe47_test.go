package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Probe 46: a link to a folder 2,800 bytes deep, then 1,500 bytes more
// below it, then a link into a held run's checkpoint.old: the system
// follows the path, filepath.EvalSymlinks failed (the resolved path is
// longer than PATH_MAX), and energy, compare and convert wrote into the
// held run at exit 0.
func TestHeldFolderBehindALongLink(t *testing.T) {
	toy, _, dir := inTempDir(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	release, err := lockRunAs("H", "train")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	old := filepath.Join(dir, "H", "checkpoint.old")
	os.Mkdir(old, 0o755)
	link := longLink(t, dir, "L", old)
	for _, args := range [][]string{
		{"energy", "--model", toy, "--points", "p.csv", "--out", filepath.Join(link, "e.csv")},
		{"convert", toy, filepath.Join(link, "m")},
	} {
		if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "which the process holding "+filepath.Join(dir, "H")+" writes") {
			t.Errorf("%s into H/checkpoint.old through a link resolving beyond PATH_MAX: exit %d: %s", args[0], code, stderr)
		}
	}
	if entries, _ := os.ReadDir(old); len(entries) != 0 {
		t.Errorf("written into the held run: %v", entries)
	}
}

// longLink makes in the folder dir a link S to a folder 2,800 bytes deep,
// 1,500 bytes more below it, and there a link name to target; it returns
// the path of that link through S, 1,500 bytes long, which the system
// resolves beyond PATH_MAX.
func longLink(t *testing.T, dir, name, target string) string {
	t.Helper()
	deep := filepath.Join(dir, strings.Repeat(strings.Repeat("d", 99)+"/", 28))
	more := strings.Repeat(strings.Repeat("m", 99)+"/", 15)
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(deep, filepath.Join(dir, "S"))
	if err := os.MkdirAll(filepath.Join(dir, "S", more), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "S", more, name)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// Probe 46's long link, into a training run or an input folder: the
// checks that an output is not inside a run (convert) nor inside its
// input (energy) resolved links with filepath.EvalSymlinks, which fails
// there, and passed.
func TestRunAndInputBehindALongLink(t *testing.T) {
	toy, _, dir := inTempDir(t)
	run := trainedRun(t)
	os.WriteFile("p.csv", []byte("0.3,-1.2\n"), 0o644)
	if _, stderr, code := runCLI("convert", toy, "M"); code != 0 {
		t.Fatal(stderr)
	}
	os.Mkdir(filepath.Join("M", "sub"), 0o755)
	toRun := longLink(t, dir, "LR", run)
	toM := filepath.Join(filepath.Dir(toRun), "LM")
	os.Symlink(filepath.Join(dir, "M"), toM)
	if _, stderr, code := runCLI("convert", toy, filepath.Join(toRun, "m")); code != 2 || !strings.Contains(stderr, "is inside the training run "+run) {
		t.Errorf("convert into a run through a long link: exit %d: %s", code, stderr)
	}
	if exists(filepath.Join(run, "m")) {
		t.Error("convert wrote into the run")
	}
	if _, stderr, code := runCLI("energy", "--model", "M", "--points", "p.csv", "--out", filepath.Join(toM, "sub", "e.csv")); code != 2 || !strings.Contains(stderr, "is inside the input folder M") {
		t.Errorf("energy into its input folder through a long link: exit %d: %s", code, stderr)
	}
	if exists(filepath.Join("M", "sub", "e.csv")) {
		t.Error("energy wrote into its input folder")
	}
}

// Probe 46's long link as an output folder: energy's outputs' folders are
// locked while they are put in place, and one reached through a link
// deeper than PATH_MAX was not (its name could not be resolved).
func TestOutputFolderLockedBehindALongLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.Mkdir(target, 0o755)
	link := longLink(t, dir, "L", target)
	unlock, err := lockFolders([]string{filepath.Join(link, "e.csv")})
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	f, err := os.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("the output folder behind the long link is not locked: flock gave %v", err)
	}
}

// Probe 46's long link as an input: train --data through a link deeper
// than PATH_MAX to a file inside the run that --force replaces was not
// found inside it (its name could not be resolved).
func TestInputInsideTheRunBehindALongLink(t *testing.T) {
	_, _, dir := inTempDir(t)
	run := trainedRun(t)
	data := filepath.Join(run, "d.csv")
	os.WriteFile(data, []byte("x,y\n0.1,0.2\n0.3,-0.4\n1,1\n"), 0o644)
	link := longLink(t, dir, "F.csv", data)
	if _, stderr, code := runCLI("train", "--data", link, "--out", run, "--force", "--iterations", "2", "--quiet"); code != 2 || !strings.Contains(stderr, "is inside the run folder "+run) {
		t.Errorf("train --data through a long link into the run it replaces: exit %d: %s", code, stderr)
	}
	if !exists(data) {
		t.Error("the input was deleted")
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Session 33 (left from session 32): sample checked its --out folder and
// then placed the draws by path, so a folder swapped in between the two
// got them. They are placed through the folder checked.
func TestSampleOutPlacedInTheFolderChecked(t *testing.T) {
	inTempDir(t)
	model := trainedRun(t)
	os.Mkdir("E", 0o755)
	os.Mkdir("E2", 0o755)
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "anchor-checked" {
			testHook = nil
			os.Rename("E", "E_away")
			os.Rename("E2", "E")
		}
	}
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "0", "--out", "E/o.npy"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if exists(filepath.Join("E", "o.npy")) || !exists(filepath.Join("E_away", "o.npy")) {
		t.Error("the draws were placed in the folder swapped in after the check")
	}
}

// Session 33: diagnose read a tab-separated file's header as one column
// name with control characters, without saying the file uses tabs.
func TestDiagnoseTabSeparatedSaysSo(t *testing.T) {
	inTempDir(t)
	os.WriteFile("tab.csv", []byte("chain\tdraw\tmu\n1\t1\t0.5\n"), 0o644)
	wantErr(t, "this header holds tabs: write the file with commas", "diagnose", "tab.csv")
}


// Session 33 (left from session 32): sample --resume LINK.npz replaced
// the link with a file at its next checkpoint and left the file it led
// to at the old state. The file the link leads to is continued.
func TestSampleResumeThroughALink(t *testing.T) {
	dir := t.TempDir()
	mala := filepath.Join(dir, "mala.npz")
	args := []string{"sample", "--model", "../../io/onnx/testdata/flows/bimodal_energy.onnx", "--chains", "4", "--out", filepath.Join(dir, "never.npy"),
		"--checkpoint", mala, "--sampler", "mala", "--warmup", "0", "--steps", "40", "--checkpoint-every", "10"}
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", args...); code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	before, _ := os.ReadFile(mala)
	link := filepath.Join(dir, "link.npz")
	os.Symlink(mala, link)
	if _, stderr, code := runCLI("sample", "--resume", link, "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.npz is no longer a link: %v", err)
	}
	if after, _ := os.ReadFile(mala); bytes.Equal(after, before) {
		t.Error("the checkpoint the link leads to was not continued")
	}
}

package config

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run made with the raw IDX files, resumed on a folder that now also
// holds a .gz of one of them (read in its place), is refused with a
// message that says which file is read instead and what to move (probe
// 14: it said "records nothing for train-images-idx3-ubyte.gz").
func TestDataDirSumsTwinFile(t *testing.T) {
	dir := t.TempDir()
	names := []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}
	for i, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Run{Experiment: "mnist28", DataDir: dir}
	if err := cfg.checkDataDirSums(); err != nil {
		t.Fatal(err)
	}
	if len(cfg.DataDirSHA256) != 4 {
		t.Fatalf("recorded %v, want the 4 files", cfg.DataDirSHA256)
	}
	if err := cfg.checkDataDirSums(); err != nil {
		t.Fatalf("same files: %v", err)
	}
	upper := Run{Experiment: "mnist28", DataDir: dir, DataDirSHA256: map[string]string{}}
	for n, sum := range cfg.DataDirSHA256 {
		upper.DataDirSHA256[n] = strings.ToUpper(sum)
	}
	if err := upper.checkDataDirSums(); err != nil { // probe 19: refused as another sum
		t.Errorf("upper-case sums of the same files: %v", err)
	}
	gz := filepath.Join(dir, names[0]+".gz")
	if err := os.WriteFile(gz, []byte{9}, 0o644); err != nil {
		t.Fatal(err)
	}
	err := cfg.checkDataDirSums()
	want := gz + ": the run was made with train-images-idx3-ubyte (data_dir_sha256 records it), but this folder now also holds train-images-idx3-ubyte.gz, which is read in its place: move " + gz + " away"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	// Probe 16: the recorded .gz decompressed since (gone, the raw file in
	// its place) is said to be gone, not to be beside the raw file.
	cfg.DataDirSHA256 = map[string]string{names[0] + ".gz": "1", names[1]: "2", names[2]: "3", names[3]: "4"}
	os.Remove(gz)
	err = cfg.checkDataDirSums()
	if want := "the run was made with train-images-idx3-ubyte.gz (data_dir_sha256 records its SHA-256), which this folder no longer holds"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	// A file of another name altogether lists what the run was made with.
	cfg.DataDirSHA256 = map[string]string{"a": "1", "b": "2"}
	err = cfg.checkDataDirSums()
	if err == nil || !strings.Contains(err.Error(), "the run was made with other files (data_dir_sha256 records a, b)") {
		t.Errorf("error %v, want the recorded names", err)
	}
}

// Probe 18: data_dir_sha256 was kept unchecked where no data_dir is read
// (a made-up map on two-modes, or an image config with data_dir dropped,
// which then trained on other data under those sums); a recorded sum must
// be a SHA-256.
func TestDataDirSumsNeedDataDir(t *testing.T) {
	for _, exp := range []string{"two-modes", "mnist28"} {
		cfg := Run{Experiment: exp, DataDirSHA256: map[string]string{"foo": "zz"}}
		if _, _, err := cfg.LoadExperiment(rand.New(rand.NewPCG(1, 2))); err == nil || !strings.Contains(err.Error(), "data_dir_sha256 without data_dir") {
			t.Errorf("%s: %v, want data_dir_sha256 refused without data_dir", exp, err)
		}
	}
	dir := t.TempDir()
	names := []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}
	sums := map[string]string{}
	for i, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		sums[n] = strings.Repeat("0", 63) + "x"
	}
	cfg := Run{Experiment: "mnist28", DataDir: dir, DataDirSHA256: sums}
	if err := cfg.checkDataDirSums(); err == nil || !strings.Contains(err.Error(), "want 64 hexadecimal digits") {
		t.Errorf("a sum that is not hexadecimal: %v", err)
	}
}

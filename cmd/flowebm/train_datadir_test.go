package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
	trainingpkg "github.com/flowebm/flowebm/algorithms/training"
)

// writeFakeCIFAR10 writes CIFAR-10's six binary batches into dir, n
// records each: 3×32×32 images with a pattern per class.
func writeFakeCIFAR10(t *testing.T, dir string, n int) {
	t.Helper()
	for _, f := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		var b bytes.Buffer
		for i := 0; i < n; i++ {
			b.WriteByte(byte(i % 10))
			for p := 0; p < 3072; p++ {
				b.WriteByte(byte((p*(i%10+1)*37+i*13)%251 + len(f)))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// train --data-dir reads cifar10 from the folder given (recorded in
// config.json as data_dir, so that --resume finds it), and is refused for
// experiments that read no folder, with --data, and for a folder that is
// not one.
func TestTrainDataDir(t *testing.T) {
	t.Setenv(experiments.CIFAR10Env, "") // restored after the test (--data-dir sets it for the process)
	dir := t.TempDir()
	data := filepath.Join(dir, "cifar")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFakeCIFAR10(t, data, 12)
	wantErr(t, "--data-dir "+data+": experiment two-modes reads no data folder: only mnist, mnist28, fashion-mnist and cifar10 do",
		"train", "--experiment", "two-modes", "--data-dir", data, "--out", filepath.Join(dir, "a"))
	wantErr(t, "--data-dir names an image experiment's folder, --data a data set to train on: give one",
		"train", "--data", filepath.Join(dir, "x.npy"), "--data-dir", data, "--out", filepath.Join(dir, "b"))
	wantErr(t, "--data-dir "+filepath.Join(dir, "none")+": no such folder: want the folder of the experiment's files", "train", "--experiment", "cifar10", "--data-dir", filepath.Join(dir, "none"), "--out", filepath.Join(dir, "c"))
	// Probe 18: the data folder as the run folder was accepted with --force.
	wantErr(t, "is the run folder "+data+" or inside it, which this run writes", "train", "--experiment", "cifar10", "--data-dir", data, "--out", data, "--force")

	cfg := filepath.Join(dir, "tiny.json")
	os.WriteFile(cfg, []byte(`{"experiment": "two-modes", "seed": 3, "data_size": 40, "log_z_samples": 16, "rhat_steps": 4,
		"model": {"ebm": "conv", "ebm_channels": [4], "flow": "conv-realnvp", "flow_blocks": 1, "flow_hidden": [4]},
		"train": {"algorithm": "flowmc", "iterations": 2, "batch_size": 8, "persistent": 16,
		          "sampler": {"steps": 2, "global_steps": 1, "local_steps": 1, "particles": 3, "step_size": 0.01}}}`), 0o644)
	wantErr(t, `model.ebm "conv" and model.flow "conv-realnvp" need an image experiment`, "train", "--config", cfg, "--out", filepath.Join(dir, "d"))
	out := filepath.Join(dir, "run")
	if _, stderr, status := runCLI("train", "--config", cfg, "--experiment", "cifar10", "--data-dir", data, "--out", out, "--quiet"); status != 0 {
		t.Fatalf("train --data-dir: status %d, %s", status, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Experiment string `json:"experiment"`
		DataDir    string `json:"data_dir"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Experiment != "cifar10" || got.DataDir != data {
		t.Errorf("config.json: experiment %q, data_dir %q (%v), want cifar10 and %s", got.Experiment, got.DataDir, err, data)
	}
	checkDataDirResume(t, out, data)
}

// checkDataDirResume checks the image files' checksums of the run in out
// (trained on the CIFAR-10 folder data): recorded in config.json, a moved
// copy resumes with --resume --data-dir (and is recorded as the run's
// folder), a changed file is refused, naming it.
func checkDataDirResume(t *testing.T, out, data string) {
	t.Helper()
	var cfg struct {
		Sums map[string]string `json:"data_dir_sha256"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if err := json.Unmarshal(b, &cfg); err != nil || len(cfg.Sums) != 6 {
		t.Fatalf("config.json data_dir_sha256 %v (%v), want the six batches' sums", cfg.Sums, err)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	os.Mkdir(moved, 0o755)
	for name := range cfg.Sums {
		b, _ := os.ReadFile(filepath.Join(data, name))
		os.WriteFile(filepath.Join(moved, name), b, 0o644)
	}
	if _, stderr, status := runCLI("train", "--resume", out, "--data-dir", moved, "--quiet"); status != 0 {
		t.Fatalf("train --resume --data-dir (a copy): status %d, %s", status, stderr)
	}
	f := filepath.Join(moved, "data_batch_3.bin")
	b, _ = os.ReadFile(f)
	b[100] ^= 1
	os.WriteFile(f, b, 0o644)
	wantErr(t, f+": SHA-256 ", "train", "--resume", out, "--data-dir", moved)
	// The resume from the copy recorded its folder: a plain resume reads
	// it too, and refuses it changed.
	wantErr(t, f+": SHA-256 ", "train", "--resume", out)
	// The folder moved away: resume and plot say how to go on.
	os.Rename(moved, moved+".away")
	hint := "the run's data folder " + moved + " is gone; if it was moved, continue with flowebm train --resume " + out + " --data-dir NEWFOLDER"
	wantErr(t, hint, "train", "--resume", out)
	wantErr(t, hint, "plot", out)
	// Probe 24: a wrong --data-dir was answered with that advice to give
	// one (and only after the resume's wait for readers).
	nope := filepath.Join(t.TempDir(), "nope")
	_, stderr, status := runCLI("train", "--resume", out, "--data-dir", nope)
	if want := "flowebm: the data folder given: stat " + nope + ": no such file or directory\n"; status != 2 || stderr != want {
		t.Errorf("--data-dir to nowhere: status %d, %q, want %q", status, stderr, want)
	}
}

// A folder named by the experiment's variable (no --data-dir) is recorded
// as the run's data_dir with its files' checksums, as --data-dir is.
func TestTrainRecordsEnvDataDir(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "cifar")
	os.Mkdir(data, 0o755)
	writeFakeCIFAR10(t, data, 12)
	t.Setenv(experiments.CIFAR10Env, data)
	cfg := filepath.Join(dir, "ula.json")
	os.WriteFile(cfg, []byte(tinyImageConfigs["ula"]), 0o644)
	out := filepath.Join(dir, "run")
	if _, stderr, status := runCLI("train", "--config", cfg, "--experiment", "cifar10", "--iterations", "1", "--out", out, "--quiet"); status != 0 {
		t.Fatalf("train: %s", stderr)
	}
	var got struct {
		DataDir string            `json:"data_dir"`
		Sums    map[string]string `json:"data_dir_sha256"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if err := json.Unmarshal(b, &got); err != nil || got.DataDir != data || len(got.Sums) != 6 {
		t.Errorf("config.json data_dir %q with %d sums (%v), want %s and 6", got.DataDir, len(got.Sums), err, data)
	}
}

// Probe 28: an mnist run given --data-dir recorded no data_dir_sha256
// (the plan's experiment, loaded before the folder was set, was reused):
// a resume on other images was accepted and trained on them.
func TestMNISTDataDirRecordsSums(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST")
	}
	src, err := experiments.MNISTDir()
	if err != nil {
		t.Skip(err)
	}
	data := filepath.Join(t.TempDir(), "mnist")
	os.Mkdir(data, 0o755)
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(src, e.Name())); err == nil && !e.IsDir() {
			os.WriteFile(filepath.Join(data, e.Name()), b, 0o644)
		}
	}
	out := filepath.Join(t.TempDir(), "run")
	if _, stderr, status := runCLI("train", "--experiment", "mnist", "--data-dir", data, "--iterations", "1", "--quiet", "--out", out); status != 0 {
		t.Fatalf("train: %s", stderr)
	}
	cfg, err := trainingpkg.ReadRunConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.DataDirSHA256) == 0 {
		t.Fatalf("config.json records no data_dir_sha256 for %s", data)
	}
	for name := range cfg.DataDirSHA256 {
		f := filepath.Join(data, name)
		b, _ := os.ReadFile(f)
		b[len(b)-1] ^= 1
		os.WriteFile(f, b, 0o644)
		wantErr(t, f+": SHA-256 ", "train", "--resume", out)
		break
	}
}

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 78 B1: train --seeds given again without --key continued seed 1
// on the member it was trained on and trained seed 2 on the .npz's first,
// and seeds.json summarised the two as one set; a seed on another member
// is now refused, naming the --key that continues the set.
func TestSeedsHeldToTheirMember(t *testing.T) {
	dir := t.TempDir()
	ab := filepath.Join(dir, "ab.npz")
	first, second := &npy.Array{Shape: []int{300, 2}, Data: wave(600)}, &npy.Array{Shape: []int{300, 2}, Data: make([]float64, 600)}
	for i := range second.Data {
		second.Data[i] = 3 + 2*first.Data[(i*7)%600]
	}
	if err := npz.WriteFile(ab, map[string]*npy.Array{"first": first, "second": second}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rs")
	args := []string{"train", "--data", ab, "--seeds", "1", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", out}
	if _, errOut, code := runCLI(append(args, "--key", "second")...); code != 0 {
		t.Fatalf("train: %s", errOut)
	}
	if _, errOut, code := runCLI(append(args, "--seeds", "1-2")...); code == 0 ||
		!strings.Contains(errOut, `holds a run with data.key "second", this command asks for "first": give --key second to continue the set on its member`) {
		t.Errorf("seeds without --key: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(append(args, "--seeds", "1-2", "--key", "second")...); code != 0 {
		t.Errorf("the advised --key second: %s", errOut)
	}
}

// Round 78 B3: sample took the flow graphs convert writes of a run on
// standardised data for graphs in the data's units: its note fired for the
// run's own energy (wrongly) and not for convert's --what energy (global
// acceptance 0). The graphs now record their units.
func TestConvertedFlowUnits(t *testing.T) {
	dir := t.TempDir()
	var rows strings.Builder
	for i := range 300 {
		fmt.Fprintf(&rows, "%.4f,%.4f\n", 50+10*wave(600)[2*i], 20+3*wave(600)[2*i+1])
	}
	data := writeFile(t, dir, "big.csv", rows.String())
	run := filepath.Join(dir, "rb")
	if _, errOut, code := runCLI("train", "--data", data, "--algorithm", "flowmc", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatalf("train: %s", errOut)
	}
	fs, fd, en := filepath.Join(dir, "fs.onnx"), filepath.Join(dir, "fd.onnx"), filepath.Join(dir, "en.onnx")
	for what, f := range map[string]string{"flow-sample": fs, "flow-density": fd, "energy": en} {
		if _, errOut, code := runCLI("convert", run, f, "--what", what); code != 0 {
			t.Fatalf("convert --what %s: %s", what, errOut)
		}
	}
	for model, note := range map[string]bool{run: false, en: true} {
		_, errOut, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--flow", fs, "--flow-density", fd,
			"--chains", "4", "--steps", "4", "--warmup", "2", "--out", filepath.Join(dir, filepath.Base(model)+".npy"))
		if code != 0 || strings.Contains(errOut, "at the wrong place and scale") != note {
			t.Errorf("--model %s: exit %d, stderr %q; want the units note: %v", model, code, errOut, note)
		}
	}
}

// Round 78 B5: plot of a run with a checkpoint but no evaluation yet said
// "nothing to draw"; it draws the model's figures from the checkpoint.
func TestPlotBeforeTheFirstEvaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("trains until interrupted")
	}
	dir := t.TempDir()
	cfgText, errOut, code := runCLI("train", "--iterations", "100000", "--print-config")
	if code != 0 {
		t.Fatal(errOut)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(cfgText), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["checkpoint_every"], cfg["eval_every"] = 20, 100000
	b, _ := json.Marshal(cfg)
	config := writeFile(t, dir, "c.json", string(b))
	runDir := filepath.Join(dir, "run")
	interruptAtFirstCheckpoint(t, runDir, "train", "--config", config, "--quiet", "--out", runDir)
	stdout, errOut, code := runCLI("plot", runDir)
	if code != 0 || !strings.Contains(stdout, "it has no evaluation yet") || !exists(filepath.Join(runDir, "density.png")) {
		t.Errorf("plot: exit %d, %q, %q", code, stdout, errOut)
	}
}

// Round 78 B4, B6: train --config FILE --key K was told to give a
// --config with a data section, which it had; plot of a missing path or a
// file said "is not a run folder (no config.json or checkpoint/)".
func TestConfigKeyAndPlotPathMessages(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "a.csv", waveCSV(100))
	cfg, errOut, code := runCLI("train", "--data", data, "--print-config")
	if code != 0 {
		t.Fatal(errOut)
	}
	config := writeFile(t, dir, "c.json", cfg)
	if _, errOut, code := runCLI("train", "--config", config, "--key", "x", "--out", filepath.Join(dir, "r")); code != 2 ||
		!strings.Contains(errOut, "--key chooses the member of an .npz given with --data: give --data FILE --key x (with --config, its data file again)") {
		t.Errorf("--config --key: exit %d, %s", code, errOut)
	}
	for path, want := range map[string]string{filepath.Join(dir, "none"): "none does not exist", data: "a.csv is a file, not a run folder"} {
		if _, errOut, code := runCLI("plot", path); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("plot %s: exit %d, %s", path, code, errOut)
		}
	}
}

// fakeMNIST writes MNIST's four IDX files, of n training and n/4 test
// images of noise drawn from seed, into a new folder.
func fakeMNIST(t *testing.T, n int, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	idx := func(name string, magic uint32, dims []uint32, count int) {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, magic)
		binary.Write(&b, binary.BigEndian, dims)
		rng := rand.New(rand.NewPCG(seed, uint64(magic)))
		for range count {
			b.WriteByte(byte(rng.IntN(256) % map[uint32]int{2051: 256, 2049: 10}[magic]))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, m := range map[string]int{"train": n, "t10k": n / 4} {
		idx(prefix+"-images-idx3-ubyte", 2051, []uint32{uint32(m), 28, 28}, m*784)
		idx(prefix+"-labels-idx1-ubyte", 2049, []uint32{uint32(m)}, m)
	}
	return dir
}

// Round 78 B2: train --config RUN/config.json --data-dir OTHER, a new run,
// was refused by the configuration's data_dir_sha256, with advice to
// start a new run; the resume's refusal gave no command for one.
func TestConfigWithOtherDataDir(t *testing.T) {
	a, b := fakeMNIST(t, 200, 1), fakeMNIST(t, 200, 2)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "rm")
	if _, errOut, code := runCLI("train", "--experiment", "mnist", "--data-dir", a, "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", runDir); code != 0 {
		t.Fatalf("train: %s", errOut)
	}
	_, errOut, code := runCLI("train", "--resume", runDir, "--data-dir", b)
	advice := "a new run with the run's settings on these files: flowebm train --config " + filepath.Join(runDir, "config.json") + " --data-dir " + b + " --out NEW"
	if code != 2 || !strings.Contains(errOut, advice) {
		t.Fatalf("resume on other files: exit %d, %s", code, errOut)
	}
	args := strings.Fields(strings.Replace(errOut[strings.Index(errOut, "flowebm train --config"):], "NEW", filepath.Join(dir, "new"), 1))[1:]
	if _, errOut, code := runCLI(append(args, "--iterations", "2", "--quiet")...); code != 0 || !strings.Contains(errOut, "data_dir_sha256) are dropped") {
		t.Errorf("the advised %v: exit %d, %s", args, code, errOut)
	}
}

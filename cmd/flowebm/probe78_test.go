package main

import (
	"fmt"
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
		if code != 0 || strings.Contains(errOut, "was trained in other units than --model's chains") != note {
			t.Errorf("--model %s: exit %d, stderr %q; want the units note: %v", model, code, errOut, note)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// A sample run killed (SIGKILL) right after its first checkpoint and
// continued with --resume writes the same bytes as the run left alone:
// adaptive flowMC killed in its training phase and in its production
// phase, MALA in its warm-up, NeuTra (whose latent chains are part of the
// checkpoint) in its kept steps.
func TestSampleResumesBitForBit(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	run0 := trainedRun(t)
	for _, c := range []struct {
		name, every string
		args        []string
	}{
		{"adaptive, training", "20", []string{"--model", model, "--sampler", "flowmc", "--warmup", "100", "--patience", "0", "--steps", "40"}},
		{"adaptive, production", "45", []string{"--model", model, "--sampler", "flowmc", "--warmup", "30", "--steps", "60"}},
		{"mala, warm-up", "20", []string{"--model", model, "--sampler", "mala", "--warmup", "40", "--steps", "30"}},
		{"neutra, kept steps", "25", []string{"--model", run0, "--sampler", "neutra", "--warmup", "10", "--steps", "40"}},
	} {
		name := strings.NewReplacer(" ", "", ",", "_").Replace(c.name)
		full, part, ck := filepath.Join(dir, name+"-full.npy"), filepath.Join(dir, name+"-part.npy"), filepath.Join(dir, name+".npz")
		common := append([]string{"sample", "--chains", "8"}, c.args...)
		var so, se bytes.Buffer
		if code := run(append(common, "--out", full), &so, &se); code != 0 {
			t.Fatalf("%s: %s", c.name, se.String())
		}
		code, stderr := outputsChild(t, "sample-checkpoint", "KILL", append(common, "--out", part, "--checkpoint", ck, "--checkpoint-every", c.every)...)
		if code != -1 || exists(part) || !exists(ck) {
			t.Fatalf("%s: the child was not killed at its first checkpoint (exit %d, %s)", c.name, code, stderr)
		}
		so.Reset()
		if code := run([]string{"sample", "--resume", ck}, &so, &se); code != 0 || !strings.Contains(so.String(), "resumed from") {
			t.Fatalf("%s: resume: exit %d, %s %s", c.name, code, so.String(), se.String())
		}
		a, _ := os.ReadFile(full)
		b, _ := os.ReadFile(part)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the resumed run's draws differ from the uninterrupted run's", c.name)
		}
	}
}

// --resume refuses other flags, a changed model, and a file that is not a
// sample checkpoint.
func TestSampleResumeRefusals(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../io/onnx/testdata/flows/bimodal_energy.onnx")
	if err != nil {
		t.Fatal(err)
	}
	model, ck := filepath.Join(dir, "m.onnx"), filepath.Join(dir, "c.npz")
	if err := os.WriteFile(model, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := outputsChild(t, "sample-checkpoint", "KILL", "sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "20", "--checkpoint", ck, "--checkpoint-every", "10", "--out", filepath.Join(dir, "x.npy"))
	if code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	var so, se bytes.Buffer
	if code := run([]string{"sample", "--resume", ck, "--steps", "30"}, &so, &se); code != 2 || !strings.Contains(se.String(), "drop --steps") {
		t.Errorf("resume with another flag: exit %d, %q", code, se.String())
	}
	if err := os.WriteFile(model, append(src, 0x12, 1, 'x'), 0o644); err != nil { // producer_name "x": another file, the same network
		t.Fatal(err)
	}
	se.Reset()
	if code := run([]string{"sample", "--resume", ck}, &so, &se); code == 0 || !strings.Contains(se.String(), "has changed since the checkpoint") {
		t.Errorf("resume on a changed model: exit %d, %q", code, se.String())
	}
	se.Reset()
	other := filepath.Join(dir, "other.npz")
	if err := npz.WriteFile(other, map[string]*npy.Array{"a": {Shape: []int{2}, Data: []float64{1, 2}}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"sample", "--resume", other}, &so, &se); code == 0 || !strings.Contains(se.String(), "not a sample checkpoint") {
		t.Errorf("resume from another npz: exit %d, %q", code, se.String())
	}
}

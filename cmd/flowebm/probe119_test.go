package main

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Round 119 A2 (serious): sample of a run trained on standardised data
// (sd 0.01) said every well-mixed chain was "stranded where the model's
// density is all but 0" (R-hat 1.003): the stranded check took the draws,
// still in the model's coordinates, for the data's. And A4: the scales
// note measured the draws in the data's units (×959) where the chains move
// on equal scales. Neither is said of such a run.
func TestStandardisedRunNoFalseNotes(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]float64, 2*2000)
	for i := range 2000 {
		data[2*i], data[2*i+1] = 0.01*rng.NormFloat64(), 10*rng.NormFloat64()
	}
	path := filepath.Join(dir, "d.npy")
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{2000, 2}, Data: data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--data", path, "--algorithm", "ula", "--iterations", "30", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--chains", "8", "--steps", "40", "--out", filepath.Join(dir, "s.npy"))
	if code != 0 || strings.Contains(stderr, "stranded") || strings.Contains(stdout, "scales differ") {
		t.Errorf("exit %d, %s%s", code, stdout, stderr)
	}
}

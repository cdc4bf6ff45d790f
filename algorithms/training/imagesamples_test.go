package training

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// writeFakeImageSamples writes an ImageSamplesFile of rows chains of d
// values and chainEnergies energy_chains values into dir.
func writeFakeImageSamples(t *testing.T, dir string, rows, d, chainEnergies int) {
	t.Helper()
	vec := func(n int) *npy.Array { return &npy.Array{Shape: []int{n}, Data: make([]float64, n)} }
	err := npz.WriteFile(filepath.Join(dir, ImageSamplesFile), map[string]*npy.Array{
		"chains":        {Shape: []int{rows, d}, Data: make([]float64, rows*d)},
		"energy_data":   vec(5),
		"energy_bank":   vec(rows),
		"energy_chains": vec(chainEnergies),
	}, npy.Float64)
	if err != nil {
		t.Fatal(err)
	}
}

// Chains narrower or wider than the image (round-14 probe: plot panicked
// on 100 columns of a 28×28 run, and drew 785 shifted) and energies of
// other chains are refused, naming the file, the member and what is wanted.
func TestReadImageSamplesOfChecksShape(t *testing.T) {
	shape := experiments.ImageShape{Channels: 1, Height: 28, Width: 28}
	for _, c := range []struct {
		d, energies int
		want        string
	}{
		{100, 4, `member "chains" has 100 columns, want 784 (1×28×28)`},
		{785, 4, `member "chains" has 785 columns, want 784 (1×28×28)`},
		{784, 3, `member "energy_chains" has 3 values, want one for each of the 4 chains`},
	} {
		dir := t.TempDir()
		writeFakeImageSamples(t, dir, 4, c.d, c.energies)
		_, err := ReadImageSamplesOf(dir, shape)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ImageSamplesFile)+": "+c.want) {
			t.Errorf("%d columns, %d chain energies: %v, want %q", c.d, c.energies, err, c.want)
		}
	}
	dir := t.TempDir()
	writeFakeImageSamples(t, dir, 4, 784, 4)
	if s, err := ReadImageSamplesOf(dir, shape); err != nil || s.Chains.RawMatrix().Cols != 784 {
		t.Errorf("a well-formed file: %v", err)
	}
}

// The figure's chains are ImageChainSteps gradient steps, flowMC-EBM's in
// cycles, except CoopFlow's: noise-free Langevin from the flow, as long as
// its training chains (512 steps drove every chain to one point).
func TestImageKernelSteps(t *testing.T) {
	for _, c := range []struct {
		t    algorithms.TrainConfig
		want int
	}{
		{algorithms.TrainConfig{Algorithm: algorithms.ULA, Sampler: algorithms.SamplerConfig{Steps: 10}}, ImageChainSteps},
		{algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Sampler: algorithms.SamplerConfig{Steps: 10, LocalSteps: 5}}, 103},
		{algorithms.TrainConfig{Algorithm: algorithms.CoopFlow, Sampler: algorithms.SamplerConfig{Steps: 10}}, 10},
		{algorithms.TrainConfig{Algorithm: algorithms.CoopFlow, Sampler: algorithms.SamplerConfig{Steps: 256}}, 256},
	} {
		if got := ImageKernelSteps(c.t); got != c.want {
			t.Errorf("%s, %d steps: %d, want %d", c.t.Algorithm, c.t.Sampler.Steps, got, c.want)
		}
	}
}

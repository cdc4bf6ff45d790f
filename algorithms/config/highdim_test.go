package config

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
)

// train --data on 784 columns with every default was refused (12.5 GiB
// at the paper's diagnostic sizes, 128 R-hat chains × 32 i-SIR particles
// and 4096 log Z draws, over the 8 GiB limit): above HighDim dimensions
// the diagnostics default to the image experiments' sizes, and the run
// fits (measured: 3 iterations of such a run peaked at 1.95 GB resident).
// Given explicitly, the paper's sizes are still refused; at 64 columns
// they stay the defaults.
func TestHighDimDiagnosticsDefaults(t *testing.T) {
	defer func(f func() float64) { memoryLimit = f }(memoryLimit)
	memoryLimit = func() float64 { return sysmem.DefaultLimit }
	for _, c := range []struct {
		dim, chains, draws int
		given              bool
		refused            bool
	}{
		{784, 64, 512, false, false},
		{784, 128, 4096, true, true},
		{64, 128, 4096, false, false},
	} {
		path := dataFile(t, 400, c.dim, rand.New(rand.NewPCG(1, uint64(c.dim))).Float64)
		cfg := Run{Data: &Data{File: path}, Train: algorithms.TrainConfig{Iterations: 10}}
		if c.given {
			cfg.RHatChains, cfg.LogZSamples = c.chains, c.draws
		}
		cfg, err := resolveData(t, cfg)
		var over *sysmem.OverError
		if got := errors.As(err, &over); got != c.refused || (err != nil && !c.refused) {
			t.Errorf("d = %d, rhat_chains %d, log_z_samples %d: %v; want refused %v", c.dim, cfg.RHatChains, cfg.LogZSamples, err, c.refused)
		}
		if cfg.RHatChains != c.chains || cfg.LogZSamples != c.draws {
			t.Errorf("d = %d: rhat_chains %d, log_z_samples %d; want %d and %d", c.dim, cfg.RHatChains, cfg.LogZSamples, c.chains, c.draws)
		}
	}
}

// dataFile writes rows × cols values of draw to an .npy file.
func dataFile(t *testing.T, rows, cols int, draw func() float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.npy")
	x := make([]float64, rows*cols)
	for i := range x {
		x[i] = draw()
	}
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{rows, cols}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	return path
}

// resolveData loads cfg's data set and resolves cfg on it.
func resolveData(t *testing.T, cfg Run) (Run, error) {
	t.Helper()
	exp, _, err := cfg.LoadExperiment(rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cfg.Resolve(exp)
}

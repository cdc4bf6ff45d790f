package plots

import (
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// A 3-channel (CHW) image is drawn in colour, each channel's [−1, 1]
// mapped to [0, 255] (round-14 probe: CIFAR-10 grids showed the red
// channel in grey); a 1-channel image stays grey.
func TestImageGridColour(t *testing.T) {
	// one 2×2 image: red −1, 0, 1, 1; green 1, …; blue 0, …
	x := mat.NewDense(1, 12, []float64{-1, 0, 1, 1, 1, -1, 0, 0.5, 0, 1, -1, -0.5})
	img, err := imageGrid(x, experiments.ImageShape{Channels: 3, Height: 2, Width: 2}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	// pixels start after the 2-pixel gap; pixel (0, 1) is the second value.
	for _, c := range []struct {
		x, y int
		want color.RGBA
	}{
		{2, 2, color.RGBA{R: 0, G: 255, B: 128, A: 255}},
		{3, 2, color.RGBA{R: 128, G: 0, B: 255, A: 255}},
		{3, 3, color.RGBA{R: 255, G: 191, B: 64, A: 255}},
	} {
		if got := img.RGBAAt(c.x, c.y); got != c.want {
			t.Errorf("pixel (%d, %d): %v, want %v", c.x, c.y, got, c.want)
		}
	}
	grey, err := imageGrid(x.Slice(0, 1, 0, 4).(*mat.Dense), experiments.ImageShape{Channels: 1, Height: 2, Width: 2}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := grey.RGBAAt(3, 2), (color.RGBA{R: 128, G: 128, B: 128, A: 255}); got != want {
		t.Errorf("grey pixel: %v, want %v", got, want)
	}
}

// Rows that are not the image's C·H·W values are refused, not indexed
// past their end.
func TestImageGridRefusesOtherWidths(t *testing.T) {
	shape := experiments.ImageShape{Channels: 1, Height: 2, Width: 2}
	for _, d := range []int{3, 5} {
		if _, err := imageGrid(mat.NewDense(2, d, nil), shape, 2, 1); err == nil || !strings.Contains(err.Error(), "want 4 (1×2×2)") {
			t.Errorf("%d values: %v", d, err)
		}
	}
}

// tinyImageExperiment is a 1×4×4 image experiment.
var tinyImageExperiment = &experiments.Experiment{Name: "tiny", Kind: experiments.KindImages,
	Image: &experiments.ImageShape{Channels: 1, Height: 4, Width: 4}}

// writeSamplesFile writes an ImageSamplesFile of 3 chains of d values.
func writeSamplesFile(t *testing.T, dir string, d int) {
	t.Helper()
	vec := &npy.Array{Shape: []int{3}, Data: []float64{1, 2, 3}}
	err := npz.WriteFile(filepath.Join(dir, training.ImageSamplesFile), map[string]*npy.Array{
		"chains":      {Shape: []int{3, d}, Data: make([]float64, 3*d)},
		"energy_data": vec, "energy_bank": vec, "energy_chains": vec,
	}, npy.Float64)
	if err != nil {
		t.Fatal(err)
	}
}

// WriteImageFigures draws both figures from a run folder's file, does
// nothing without one, and refuses chains narrower than the image with
// the file's name (round-14 probe: flowebm plot panicked).
func TestWriteImageFigures(t *testing.T) {
	cfg := config.Run{Train: algorithms.TrainConfig{Algorithm: algorithms.ULA}}
	dir := t.TempDir()
	if err := WriteImageFigures(dir, cfg, tinyImageExperiment, SVG); err != nil {
		t.Errorf("without %s: %v", training.ImageSamplesFile, err)
	}
	writeSamplesFile(t, dir, 16)
	if err := WriteImageFigures(dir, cfg, tinyImageExperiment, SVG); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ChainsFigure, EnergiesFigure} {
		if _, err := os.Stat(filepath.Join(dir, name+".svg")); err != nil {
			t.Error(err)
		}
	}
	writeSamplesFile(t, dir, 10)
	err := WriteImageFigures(dir, cfg, tinyImageExperiment, PNG)
	if want := filepath.Join(dir, training.ImageSamplesFile) + `: member "chains" has 10 columns, want 16 (1×4×4); flowebm train --resume ` + dir + " writes it again from the run's final checkpoint"; err == nil || err.Error() != want {
		t.Errorf("10 columns: %v, want %s", err, want)
	}
}

// The samples figure's title gives the chains' length: CoopFlow's are
// its training chains' noise-free Langevin steps from the flow.
func TestChainsTitle(t *testing.T) {
	for alg, want := range map[algorithms.Algorithm]string{
		algorithms.ULA:      "tiny, ula: last state of 3 chains of 512 steps from the persistent state",
		algorithms.FlowMC:   "tiny, flowmc: last state of 3 chains of 128 cycles (512 MALA steps) from the persistent state",
		algorithms.CoopFlow: "tiny, coopflow: last state of 3 chains of 16 noise-free Langevin steps from the flow (as in training)",
	} {
		cfg := config.Run{Train: algorithms.TrainConfig{Algorithm: alg, Sampler: algorithms.SamplerConfig{Steps: 16, LocalSteps: 4}}}
		if got := chainsTitle(cfg, "tiny", 3); got != want {
			t.Errorf("%s: %q, want %q", alg, got, want)
		}
	}
}

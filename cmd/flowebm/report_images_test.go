package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// tinyImageConfigs are --config files of image runs small enough for a
// test: flowMC-EBM with conv models, and ULA-EBM (no flow); banks of 16
// chains, so the samples figure has 16 chains instead of 64.
var tinyImageConfigs = map[string]string{
	"flowmc": `{"experiment": "cifar10", "seed": 3, "data_size": 40, "log_z_samples": 16, "rhat_steps": 4,
		"model": {"ebm": "conv", "ebm_channels": [4], "flow": "conv-realnvp", "flow_blocks": 1, "flow_hidden": [4]},
		"train": {"algorithm": "flowmc", "iterations": 2, "batch_size": 8, "persistent": 16,
		          "sampler": {"steps": 2, "global_steps": 1, "local_steps": 8, "particles": 3, "step_size": 0.01}}}`,
	"ula": `{"experiment": "cifar10", "seed": 3, "data_size": 40, "log_z_samples": 16, "rhat_steps": 4,
		"model": {"ebm": "conv", "ebm_channels": [4]},
		"train": {"algorithm": "ula", "iterations": 2, "batch_size": 8, "persistent": 16,
		          "sampler": {"steps": 2, "step_size": 0.001}}}`,
}

// An image run ends with paper Figs. 7 and 8's data (the last state of
// its chains of 512 gradient steps from the persistent bank, the energies
// of held-out images, the bank and those chains; written again, bit for
// bit, by a --resume after they were lost) and figures, and the reproduce report's
// image section shows its class weights, acceptance, R-hat and figures,
// quoting the paper's App. C.6 verbatim.
func TestImageRunFiguresAndReport(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two small image runs")
	}
	t.Setenv(experiments.CIFAR10Env, "") // --data-dir sets it for the process
	dir := t.TempDir()
	data := filepath.Join(dir, "cifar")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFakeCIFAR10(t, data, 12)
	var runs []*reproRun
	for _, a := range []algorithms.Algorithm{algorithms.FlowMC, algorithms.ULA} {
		cfg := filepath.Join(dir, string(a)+".json")
		os.WriteFile(cfg, []byte(tinyImageConfigs[string(a)]), 0o644)
		out := filepath.Join(dir, "runs", "cifar10-"+string(a))
		if _, stderr, status := runCLI("train", "--config", cfg, "--data-dir", data, "--out", out, "--quiet"); status != 0 {
			t.Fatalf("train %s: status %d, %s", a, status, stderr)
		}
		checkImageSamples(t, out)
		first, err := os.ReadFile(filepath.Join(out, training.ImageSamplesFile))
		if err != nil {
			t.Fatal(err)
		}
		// A run killed while writing its outputs (samples.npy is written
		// last) writes them again on --resume: the same chains, bit for bit.
		for _, f := range []string{"samples.npy", training.ImageSamplesFile} {
			os.Remove(filepath.Join(out, f))
		}
		if _, stderr, status := runCLI("train", "--resume", out, "--quiet"); status != 0 {
			t.Fatalf("train --resume %s (outputs lost): status %d, %s", a, status, stderr)
		}
		if again, _ := os.ReadFile(filepath.Join(out, training.ImageSamplesFile)); !bytes.Equal(first, again) {
			t.Errorf("%s: %s differs when written again by --resume", a, training.ImageSamplesFile)
		}
		// A finished run that lost only its image-samples.npz: --resume
		// writes it again, leaving metrics.json (and its time) as it was.
		metrics, _ := os.ReadFile(filepath.Join(out, "metrics.json"))
		os.Remove(filepath.Join(out, training.ImageSamplesFile))
		if stdout, stderr, status := runCLI("train", "--resume", out, "--quiet"); status != 0 || !strings.Contains(stdout, "wrote its missing") {
			t.Fatalf("train --resume %s (image samples lost): status %d, %s%s", a, status, stdout, stderr)
		}
		again, _ := os.ReadFile(filepath.Join(out, training.ImageSamplesFile))
		if m, _ := os.ReadFile(filepath.Join(out, "metrics.json")); !bytes.Equal(first, again) || !bytes.Equal(m, metrics) {
			t.Errorf("%s: after --resume of a run that lost its image samples: samples equal %v, metrics.json unchanged %v", a, bytes.Equal(first, again), bytes.Equal(m, metrics))
		}
		// Round 105 B4: emptied, it was "nothing to do"; plot named no way on.
		os.WriteFile(filepath.Join(out, training.ImageSamplesFile), nil, 0o644)
		if _, stderr, status := runCLI("plot", out); status == 0 || !strings.Contains(stderr, "flowebm train --resume "+out+" writes it again") {
			t.Errorf("plot of %s with its image samples emptied: status %d, %s", a, status, stderr)
		}
		if stdout, stderr, status := runCLI("train", "--resume", out, "--quiet"); status != 0 || !strings.Contains(stdout, "wrote again its "+filepath.Join(out, training.ImageSamplesFile)+", damaged: ") {
			t.Fatalf("train --resume %s (image samples emptied): status %d, %s%s", a, status, stdout, stderr)
		}
		if again, _ := os.ReadFile(filepath.Join(out, training.ImageSamplesFile)); !bytes.Equal(first, again) {
			t.Errorf("%s: %s differs when written again after it was emptied", a, training.ImageSamplesFile)
		}
		// Round 106 B5: another seed's, or one with edited values (a whole
		// file, its CRCs right), was kept and drawn.
		s, err := training.ReadImageSamples(out)
		if err != nil {
			t.Fatal(err)
		}
		s.DataEnergy[0] += 5
		n, d := s.Chains.Dims()
		vec := func(v []float64) *npy.Array { return &npy.Array{Shape: []int{len(v)}, Data: v} }
		if err := npz.WriteFile(filepath.Join(out, training.ImageSamplesFile), map[string]*npy.Array{"chains": {Shape: []int{n, d}, Data: s.Chains.RawMatrix().Data},
			"energy_data": vec(s.DataEnergy), "energy_bank": vec(s.BankEnergy), "energy_chains": vec(s.ChainEnergy)}, npy.Float64); err != nil {
			t.Fatal(err)
		}
		if stdout, stderr, status := runCLI("train", "--resume", out, "--quiet"); status != 0 || !strings.Contains(stdout, "wrote again its "+filepath.Join(out, training.ImageSamplesFile)+`, not its own: `) || !strings.Contains(stdout, `member "energy_data" is not the run's`) {
			t.Errorf("train --resume %s (image samples edited): status %d, %s%s", a, status, stdout, stderr)
		}
		if again, _ := os.ReadFile(filepath.Join(out, training.ImageSamplesFile)); !bytes.Equal(first, again) {
			t.Errorf("%s: %s differs when written again after an edit", a, training.ImageSamplesFile)
		}
		if a == algorithms.FlowMC {
			imageOutputsThroughTheAnchor(t, out)
		}
		for _, fig := range []string{"samples-512.png", "energies.png", "acceptance.png", "samples.png"} {
			_, err := os.Stat(filepath.Join(out, fig))
			if want := fig != "acceptance.png" || a == algorithms.FlowMC; want != (err == nil) {
				t.Errorf("%s: %s exists: %v, want %v", a, fig, err == nil, want)
			}
		}
		exp, err := experiments.ByNameIn("cifar10", data)
		if err != nil {
			t.Fatal(err)
		}
		r := &reproRun{experiment: "cifar10", exp: exp, algorithm: a, dir: out}
		// reproduce redraws a kept run's figures in its --plot-format,
		// the image figures included.
		runCfg, err := training.ReadRunConfig(out)
		if err != nil {
			t.Fatal(err)
		}
		if w := r.collectFinished(reproduceFlags{plotFormat: plots.SVG}, runCfg, false); w != "" || r.err != "" {
			t.Fatal(w, r.err)
		}
		for _, fig := range []string{"samples-512.svg", "energies.svg"} {
			if _, err := os.Stat(filepath.Join(out, fig)); err != nil {
				t.Errorf("%s: %v", a, err)
			}
		}
		if w := r.collectFinished(reproduceFlags{}, runCfg, false); w != "" || r.err != "" {
			t.Fatal(w, r.err)
		}
		runs = append(runs, r)
	}
	w := newReportWriter(reproduceFlags{out: dir}, runs)
	if err := w.images(); err != nil {
		t.Fatal(err)
	}
	report := w.b.String()
	if miss := lacking(report, "## Image experiments at full resolution (App. C.6)", "### CIFAR-10, 3×32×32",
		"| flowMC-EBM | ", "| ULA-EBM | ", " ± ", // class weights with their errors
		"![cifar10-flowmc samples-512](runs/cifar10-flowmc/samples-512.png)", "![cifar10-ula energies](runs/cifar10-ula/energies.png)",
		"![cifar10-flowmc acceptance](runs/cifar10-flowmc/acceptance.png)"); len(miss) > 0 {
		t.Errorf("report section lacks %q:\n%s", miss, report)
	}
	if strings.Contains(report, "runs/cifar10-ula/acceptance") {
		t.Error("the report shows an acceptance figure for ULA-EBM, which has no accept step")
	}
	tex, err := os.ReadFile("testdata/paper_tables.tex")
	if err != nil {
		t.Fatal(err)
	}
	paper := strings.ReplaceAll(string(tex), `\%`, "%")
	quotes := regexp.MustCompile(`"([^"]{20,})"`).FindAllStringSubmatch(report, -1)
	if len(quotes) < 2 {
		t.Fatalf("found %d quotes of the paper in the section, want 2", len(quotes))
	}
	for _, q := range quotes {
		if !strings.Contains(paper, q[1]) {
			t.Errorf("the report quotes %q, which is not in the paper's App. C.6", q[1])
		}
	}
}

// checkImageSamples checks a finished image run's ImageSamplesFile: as
// many chains as its bank (16), the energies of every held-out image, of
// the bank and of the chains, all finite.
func checkImageSamples(t *testing.T, dir string) {
	t.Helper()
	s, err := training.ReadImageSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n, d := s.Chains.Dims(); n != 16 || d != 3*32*32 {
		t.Errorf("%s: chains %d × %d, want 16 × 3072", dir, n, d)
	}
	if len(s.BankEnergy) != 16 || len(s.ChainEnergy) != 16 || len(s.DataEnergy) == 0 {
		t.Errorf("%s: %d bank, %d chain, %d data energies; want 16, 16 and the held-out images'", dir, len(s.BankEnergy), len(s.ChainEnergy), len(s.DataEnergy))
	}
	for _, e := range [][]float64{s.DataEnergy, s.BankEnergy, s.ChainEnergy} {
		for _, v := range e {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: non-finite energy %v", dir, v)
			}
		}
	}
}

// imageOutputsThroughTheAnchor: session 32 wrote a finished image run's
// missing image-samples.npz through its locked folder; resumed through a
// link re-pointed to another folder just after the folder's last check,
// the file goes to the run's own folder, and the other is left alone.
func imageOutputsThroughTheAnchor(t *testing.T, out string) {
	t.Helper()
	base := t.TempDir()
	link, other := filepath.Join(base, "link"), filepath.Join(base, "other")
	os.Mkdir(other, 0o755)
	os.Symlink(out, link)
	checks := 0
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "anchor-checked" {
			checks++
		}
	}
	os.Remove(filepath.Join(out, training.ImageSamplesFile))
	if _, stderr, status := runCLI("train", "--resume", link, "--quiet"); status != 0 {
		t.Fatalf("train --resume LINK: %s", stderr)
	}
	last := checks // the last check is the one before the outputs are written
	os.Remove(filepath.Join(out, training.ImageSamplesFile))
	checks = 0
	testHook = func(p string) {
		if p == "anchor-checked" {
			if checks++; checks == last {
				os.Remove(link)
				os.Symlink(other, link)
			}
		}
	}
	runCLI("train", "--resume", link, "--quiet")
	if entries, _ := os.ReadDir(other); len(entries) > 0 {
		t.Errorf("the folder linked after the check got %d files (%s …)", len(entries), entries[0].Name())
	}
	if _, err := os.Stat(filepath.Join(out, training.ImageSamplesFile)); err != nil {
		t.Errorf("the run's own folder: %v", err)
	}
}

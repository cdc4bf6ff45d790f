package settings

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/internal/jsonfile"
)

var update = flag.Bool("update", false, "rewrite the paper configurations under algorithms/configs/")

// paperExperiments are the experiments whose paper settings are checked in.
var paperExperiments = []string{"two-modes", "four-modes", "8-gaussians", "rings",
	"four-gaussians-16", "four-gaussians-32", "four-gaussians-64", "mnist"}

// TestPaperConfigFiles checks that algorithms/configs/EXPERIMENT-ALGORITHM.json hold
// exactly PaperConfig's settings (go test -update rewrites them) and that
// each is a valid configuration.
func TestPaperConfigFiles(t *testing.T) {
	for _, e := range paperExperiments {
		exp := lookUp(t, e)
		for _, a := range algorithms.Algorithms {
			rc, _, err := paperConfig(exp, a)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			if err := enc.Encode(jsonfile.Safe(rc)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("..", "configs", e+"-"+string(a)+".json")
			if *update {
				if err := jsonfile.Write(path, rc); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%s differs from PaperConfig(%q, %q); run go test -update if the change is intended", path, e, a)
			}
			var back config.Run
			if err := jsonfile.Read(path, &back, jsonfile.Options{}); err != nil {
				t.Fatal(err)
			}
			if _, err := back.Train.Resolved(); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
	}
}

// TestDefaultsScaleThePaper checks what Defaults keeps from the paper and
// what it shrinks.
func TestDefaultsScaleThePaper(t *testing.T) {
	for _, e := range paperExperiments {
		exp := lookUp(t, e)
		for _, a := range algorithms.Algorithms {
			p, _, err := paperConfig(exp, a)
			if err != nil {
				t.Fatal(err)
			}
			d, notes, err := DefaultsFor(exp, a)
			if err != nil {
				t.Fatal(err)
			}
			if d.Train.Iterations >= p.Train.Iterations {
				t.Errorf("%s %s: %d iterations, not fewer than the paper's %d", e, a, d.Train.Iterations, p.Train.Iterations)
			}
			if (d.Train.EBMOptim.LR != p.Train.EBMOptim.LR && e != "mnist") || d.Train.Algorithm != a || d.Train.Sampler.StepSize != p.Train.Sampler.StepSize {
				t.Errorf("%s %s: learning rate, algorithm or step size changed by scaling", e, a)
			}
			if len(notes) == 0 || !strings.Contains(strings.Join(notes, " "), "scaled") {
				t.Errorf("%s %s: no scaling note", e, a)
			}
			if _, err := d.Train.Resolved(); err != nil {
				t.Errorf("%s %s: %v", e, a, err)
			}
		}
	}
	if _, _, err := Defaults("two-modes", "sgld"); err == nil {
		t.Error("unknown algorithm accepted")
	}
}

// lookUp looks an experiment up once (mnist's lookup loads the images).
func lookUp(t *testing.T, name string) *experiments.Experiment {
	t.Helper()
	exp, err := experiments.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func TestSetIterationsStretchesDecay(t *testing.T) {
	rc, _, err := Defaults("two-modes", algorithms.FlowMC)
	if err != nil {
		t.Fatal(err)
	}
	every := rc.Train.EBMOptim.DecayEvery
	rc.Train.SetIterations(rc.Train.Iterations / 10)
	if rc.Train.EBMOptim.DecayEvery != every/10 || rc.Train.FlowOptim.DecayEvery != every/10 {
		t.Errorf("decay every %d and %d after shrinking ×10, want %d", rc.Train.EBMOptim.DecayEvery, rc.Train.FlowOptim.DecayEvery, every/10)
	}
}

// Every shipped configuration reads back through config.Read (what
// "flowebm train --config" uses), strict checks included.
func TestPaperConfigFilesRead(t *testing.T) {
	files, err := filepath.Glob("../configs/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("configs: %v, %v", files, err)
	}
	for _, f := range files {
		if _, err := config.Read(f); err != nil {
			t.Error(err)
		}
	}
}

// ImageIterations, known without the images (reproduce --plan reads
// none), is the length Defaults gives every algorithm once the images are
// read; the other experiments have none.
func TestImageIterations(t *testing.T) {
	for _, name := range []string{"mnist", "mnist28"} {
		n, ok := ImageIterations(name)
		if !ok {
			t.Fatalf("%s: no length", name)
		}
		exp, err := experiments.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range algorithms.Algorithms {
			cfg, _, err := DefaultsFor(exp, a)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Train.Iterations != n {
				t.Errorf("%s with %s: Defaults gives %d iterations, ImageIterations %d", name, a, cfg.Train.Iterations, n)
			}
		}
	}
	for _, name := range []string{"two-modes", "four-gaussians-64", "rings"} {
		if _, ok := ImageIterations(name); ok {
			t.Errorf("%s: a length without data, want none", name)
		}
	}
}

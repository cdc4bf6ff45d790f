package main

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/checkpoint"
)

// Round 141 A1: MALA's chains each in one mode of a mixture (lag-1 0.22,
// bulk R-hat 1.53) were told "sample longer" first; 10 times longer gave
// R-hat 1.528 again. The modes-apart advice applies to every local
// sampler, not HMC's alone.
func TestModesApartForMALA(t *testing.T) {
	apart := mixing{rho1: []float64{0.22, 0.1}, sd: []float64{3, 0.5}, rhat: []float64{1.528, 1.001}, bulk: []float64{1.53, 1.001}, worst: 1.528}
	for _, sampler := range []string{"mala", "ula", "neutra"} {
		f := sampleFlags{sampler: sampler, step: 0.3, warmup: 100}
		if got := f.notMixedAdvice(checkpoint.Models{}, 0.62, apart); !strings.Contains(got, "the chains sit apart in dimension 0") || strings.HasPrefix(got, "sample longer") {
			t.Errorf("%s: %q", sampler, got)
		}
	}
}

// Round 141 A3: neutra with --flow, two of its chains stuck at x = 30,
// was told the draws' scales differ by ×38 (the stuck chains' offset)
// and to use "--flow with --sampler neutra". No scales note where the
// notes' chains set the spread or a flow is in use.
func TestScalesNoteLeftOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	draws := make([]float64, 2*400)
	for i := range 400 {
		draws[2*i], draws[2*i+1] = 50*rng.NormFloat64(), rng.NormFloat64()
	}
	if note := (sampleFlags{sampler: "mala"}).scales(checkpoint.Models{}, draws, 2); note == "" {
		t.Fatal("no scales note for sds 50 and 1")
	}
	if note := (sampleFlags{sampler: "mala", noted: "stuck"}).scales(checkpoint.Models{}, draws, 2); note != "" {
		t.Errorf("beside a stranded chain's note: %q", note)
	}
	if note := (sampleFlags{sampler: "neutra"}).scales(checkpoint.Models{Flow: new(graph.Flow)}, draws, 2); note != "" {
		t.Errorf("neutra with a flow: %q", note)
	}
}

// Round 141 A2: train --resume of a finished run whose checkpoint's
// records were edited (its COMPLETE written again) said sample, energy
// and convert could not use its model, which they did (with a note).
func TestResumeSaysModelUsed(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	ck := filepath.Join(run, "checkpoint")
	editJSON(t, filepath.Join(ck, "state.json"), func(st map[string]any) { st["iter"] = 2 })
	if err := checkpoint.WriteManifest(ck); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("train", "--resume", run)
	if code == 0 || !strings.Contains(stderr, "flowebm sample, energy and convert still use its model") || !strings.Contains(stderr, "checkpoint/ was edited (its files match the sums") {
		t.Errorf("train --resume: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", run, "--chains", "4", "--steps", "8", "--out", filepath.Join(dir, "s.npy")); code != 0 || !strings.Contains(stderr, "are used here") {
		t.Errorf("sample: exit %d, %s", code, stderr)
	}
}

// Round 141 B4: an unfinished run's checkpoint folder given itself was
// used without the note the run folder gets.
func TestGivenCheckpointFolderNoted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "400", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	pts := writeFile(t, t.TempDir(), "p.csv", "0,0\n1,1\n")
	if code, note := energyNotes(t, filepath.Join(dir, "checkpoint"), pts); code != 0 || !strings.Contains(note, "is unfinished: its newest checkpoint, used here, is of iteration ") {
		t.Errorf("exit %d: %s", code, note)
	}
}

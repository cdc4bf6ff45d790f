package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// chainsOf builds classifyChains' input from each chain's energies at its
// draws looked at, in d dimensions (the points are distinct, so no chain
// is still).
func chainsOf(energies [][]float64, d int) ([]float64, *mat.Dense, int) {
	k := len(energies[0])
	e := make([]float64, 0, len(energies)*k)
	pts := mat.NewDense(len(energies)*k, d, nil)
	for c, ch := range energies {
		e = append(e, ch...)
		for j := range ch {
			pts.Set(c*k+j, 0, float64(c*k+j))
		}
	}
	return e, pts, k
}

// Round 130 A1: of 8192 chains at equilibrium in a 1-D Gaussian, some
// first draw crossed the band d/2 + 4·√(d/2) + 4 (a bound for 80 draws
// looked at, not 163840), and its chain was said to have come down from a
// far start, its draws "not from the model". The band now widens with the
// draws looked at: draws from the target itself are named by nothing
// (a chance of 1% by the band's construction; the seed is fixed).
func TestEquilibriumChainsNotATransient(t *testing.T) {
	rng := rand.New(rand.NewPCG(130, 1))
	energies := make([][]float64, 8192)
	for c := range energies {
		energies[c] = make([]float64, strandedProbes)
		for j := range energies[c] {
			x := rng.NormFloat64()
			energies[c][j] = x * x / 2
		}
	}
	e, pts, k := chainsOf(energies, 1)
	g := classifyChains(e, pts, len(energies), k, 1, 1000)
	for _, named := range [][]string{g.came.names, g.cameAbove.names, g.coming.names, g.moving.names, g.still.names} {
		if len(named) > 0 {
			t.Errorf("chains %v named, of draws from the target (band %.3g)", named, g.typ)
		}
	}
	if g.typ < 10 || g.typ > 20 {
		t.Errorf("band %.3g for 163840 draws in d = 1, want ≈ 14.7 (χ²₁'s upper 6.1e-8 quantile over 2)", g.typ)
	}
	if band := typicalGap(10, 80); math.Abs(band-17.5) > 0.1 {
		t.Errorf("band %.4g for 80 draws in d = 10, want 17.5 (Gamma(5, 1)'s upper 1.25e-4 quantile)", band)
	}
}

// Round 130 A2, A3: a chain that came down into the band beside one still
// coming down were both "not yet settled" (the arrived chain's x[:, N:]
// lost); a chain that came down from far above into a shallower mode 20
// above the lowest was said nothing of.
func TestTransientsTold(t *testing.T) {
	inBand := func(int) float64 { return 1 }
	energies := make([][]float64, 5)
	for c := range energies {
		energies[c] = make([]float64, strandedProbes)
		for j := range energies[c] {
			energies[c][j] = inBand(j) + 0.1*float64(j%3)
		}
	}
	for j := range strandedProbes {
		energies[2][j] = max(124-20*float64(j), 2+0.1*float64(j%2)) // in the band from draw 6 looked at on
		energies[3][j] = 4500 - 100*float64(j)                      // still falling
		energies[4][j] = max(320-100*float64(j), 20+float64(j%2))   // down to a level 20 above, from draw 3 on
	}
	e, pts, k := chainsOf(energies, 2)
	g := classifyChains(e, pts, len(energies), k, 2, 191) // draw j looked at is draw 10·j
	if strings.Join(g.came.names, ",") != "2" || strings.Join(g.coming.names, ",") != "3" || strings.Join(g.cameAbove.names, ",") != "4" {
		t.Fatalf("came %v, coming %v, came above %v; want 2, 3, 4", g.came.names, g.coming.names, g.cameAbove.names)
	}
	if note := g.came.note(5, 191, g.typ); !strings.Contains(note, "into the band where draws at equilibrium lie by draw 60 of 191") || !strings.Contains(note, "x[:, 60:]") {
		t.Errorf("arrived: %s", note)
	}
	if note := g.coming.note(5, 191, g.typ); !strings.Contains(note, "not yet settled") {
		t.Errorf("coming: %s", note)
	}
	if note := g.cameAbove.note(5, 191, g.typ); !strings.Contains(note, "came down by draw 30 of 191") || !strings.Contains(note, "exceeds that lowest by up to 20") || !strings.Contains(note, "shallower mode") {
		t.Errorf("came above: %s", note)
	}
	// Round 131 A2: the band overlaps such a mode (chains of one mode
	// were split between both notes): the arrived chains' note says so.
	if note := g.overlapNote(&g.came); !strings.Contains(note, "the band may hold a shallower mode too (chain 4 came down to one up to 20 above the lowest)") {
		t.Errorf("overlap: %q", note)
	}
	if note := g.overlapNote(&g.coming); note != "" {
		t.Errorf("overlap said of chains still coming: %q", note)
	}
}

// Round 130 A4: a chain on a face where the energy is 1000 along one axis
// and varies along the other walked from −1 to −13.5 and was told
// "sampling longer does not move them".
func TestStrandedMovingNotSaidStill(t *testing.T) {
	var s strandedChains
	gaps := make([]float64, strandedProbes)
	for j := range gaps {
		gaps[j] = 999 + 0.1*float64(j%3)
	}
	s.add(3, gaps, 1e4+20, strandedStay(2), typicalGap(2, 80), false)
	note := s.note(4, strandedProbes, "give --starts FILE")
	if strings.Contains(note, "does not move") || !strings.Contains(note, "need not bring them back") {
		t.Errorf("%s", note)
	}
	// Round 132 A4: chains in a smooth mode 80 above the lowest were
	// told only of a support's placeholder.
	if !strings.Contains(note, "or in a mode far shallower than the lowest found") {
		t.Errorf("%s", note)
	}
}

// Round 130 B1: train --modes of an .npz holding several arrays read the
// first (a weights array: one "mode") and measured mode weights against
// it, unsaid; the same file of the data and the modes read the data's
// rows as 500 centres. It is refused, as sample --modes refuses it.
func TestTrainModesOfSeveralArraysRefused(t *testing.T) {
	dir := t.TempDir()
	rows := normalArray(t, filepath.Join(dir, "tr.npy"), 1, 500, 2)
	modes := filepath.Join(dir, "md.npz")
	if err := npz.WriteFile(modes, map[string]*npy.Array{
		"w":       {Shape: []int{1, 2}, Data: []float64{0.5, 0.5}},
		"centres": {Shape: []int{2, 2}, Data: []float64{1, 1, -1, -1}},
	}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	_, stderr, code := runCLI("train", "--algorithm", "ula", "--data", rows, "--modes", modes, "--iterations", "4", "--out", out, "--quiet")
	if code == 0 || !strings.Contains(stderr, "holds 2 arrays (centres, w)") || !strings.Contains(stderr, "numpy.save") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if exists(out) {
		t.Errorf("%s written", out)
	}
}

// Round 130 B2: sample --checkpoint onto an .npz of the user's own draws
// said, with --force, that "the run it holds can no longer be resumed",
// and without it only "exists": it says what the file is (round 131 B5:
// and "besides --out" of an --out not there).
func TestCheckpointOntoOtherArraysSaid(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	draws := filepath.Join(dir, "draws.npz")
	if err := npz.WriteFile(draws, map[string]*npy.Array{"a": {Shape: []int{4, 10, 2}, Data: make([]float64, 80)}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	args := []string{"sample", "--model", run, "--steps", "20", "--out", filepath.Join(dir, "q.npy"), "--checkpoint", draws}
	if _, stderr, code := runCLI(args...); code == 0 || !strings.Contains(stderr, "it is not a sample checkpoint but an .npz of other arrays: a") {
		t.Errorf("without --force: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(append(args, "--force")...); code != 0 || strings.Contains(stderr, "the run it holds") || strings.Contains(stderr, "besides --out") || !strings.Contains(stderr, "--checkpoint "+draws+" (not a sample checkpoint but an .npz of other arrays: a; it is lost)") {
		t.Errorf("with --force: exit %d, %s", code, stderr)
	}
}

// Round 131 B1-B3: a finished run whose checkpoint/ (its COMPLETE
// written) was damaged since, beside an older checkpoint.old/: plot and
// train --resume removed checkpoint/ and went on from checkpoint.old/,
// and energy called checkpoint.old/ "the newest". Each names both
// iterations and changes nothing; energy uses checkpoint/'s models, whole.
func TestDamagedNewestBesideOlder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "200", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	older := filepath.Join(t.TempDir(), "older")
	if err := os.CopyFS(older, os.DirFS(filepath.Join(dir, "checkpoint"))); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--resume", dir, "--quiet"); code != 0 {
		t.Fatalf("train --resume: exit %d, %s", code, stderr)
	}
	if err := os.CopyFS(filepath.Join(dir, "checkpoint.old"), os.DirFS(older)); err != nil {
		t.Fatal(err)
	}
	oldIter, _ := training.CheckpointIter(older)
	flipMemberBytes(t, filepath.Join(dir, "checkpoint", "state.npz"), "", 0, 8)
	want := fmt.Sprintf("checkpoint/ is complete (its COMPLETE was written) and of iteration 200, newer than checkpoint.old/ (iteration %d)", oldIter)
	for _, args := range [][]string{{"plot", dir}, {"train", "--resume", dir, "--quiet"}} {
		if _, stderr, code := runCLI(args...); code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "move checkpoint/ out of the run folder") {
			t.Errorf("%s: exit %d, %s", args[0], code, stderr)
		}
		for _, name := range []string{"checkpoint", "checkpoint.old"} {
			if !exists(filepath.Join(dir, name, "state.json")) {
				t.Errorf("%s: %s removed", args[0], name)
			}
		}
	}
	// Round 132 B2: energy's note said "start a new run", not the way on.
	points := normalArray(t, filepath.Join(t.TempDir(), "x.npy"), 1, 3, 2)
	if _, stderr, code := runCLI("energy", "--model", dir, "--points", points); code != 0 || !strings.Contains(stderr, "models' own files (spec.json, weights.npz) match") || strings.Contains(stderr, "newest checkpoint, used here") ||
		!strings.Contains(stderr, "move checkpoint/ out of the run folder") || strings.Contains(stderr, "start a new run") {
		t.Errorf("energy: exit %d, %s", code, stderr)
	}
	// Round 132 B1: killed as it wrote its outputs, compare called it
	// "cannot be resumed", and its outputs "written again by train
	// --resume", which refuses it: it gives the refusal's way on.
	for _, name := range []string{"metrics.json", "samples.npy"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := runCLI("compare", dir, "--out", filepath.Join(t.TempDir(), "c")); code != 0 || !strings.Contains(stderr, "move checkpoint/ out of the run folder") || strings.Contains(stderr, "cannot be resumed") || strings.Contains(stderr, "writes them again") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
}

// Round 131 A4: a ULA chain that stepped out of a Gamma's support (energy
// 1000 there) for 14% of its draws, and back, was said nothing of (no
// draw over 10⁴ + 10·d, not every draw over 50 + 5·d); a chain at
// equilibrium, or one far out inside a support that never reached the
// band (round 129: a count rule took it), is not named.
func TestSteppedOutOfTheMassNamed(t *testing.T) {
	stay, typ := strandedStay(2), typicalGap(2, 160)
	out, in, far := make([]float64, strandedProbes), make([]float64, strandedProbes), make([]float64, strandedProbes)
	for j := range out {
		in[j] = 1 + 0.5*float64(j%4)
		out[j] = in[j]
		far[j] = 52 + float64(j%5) // over typ, under stay but for one draw
		if j%6 == 5 {
			out[j] = 999
		}
	}
	far[7] = stay + 3
	var s strandedChains
	s.add(0, in, 1e4+20, stay, typ, false)
	s.add(1, out, 1e4+20, stay, typ, false)
	s.add(2, far, 1e4+20, stay, typ, false)
	if strings.Join(s.names, ",") != "1" || s.share != 3 {
		t.Fatalf("named %v (%d draws), want chain 1 (3 draws)", s.names, s.share)
	}
	if note := s.note(3, strandedProbes, "way"); !strings.Contains(note, "chain 1 (of 3") || !strings.Contains(note, "(3 of the 60 draws looked at): out where the model's density is all but 0") {
		t.Errorf("%s", note)
	}
}

// Round 131 B4: compare showed an unfinished run whose checkpoint lost a
// file ("720 of 1200") as any interrupted one, where every other command
// refuses it and train --resume has nothing to resume: it says so; a
// whole interrupted run gets no such note.
func TestCompareSaysUnresumable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "200", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", dir, "--out", filepath.Join(t.TempDir(), "c")); code != 0 || strings.Contains(stderr, "cannot be resumed") {
		t.Errorf("whole run: exit %d, %s", code, stderr)
	}
	if err := os.Remove(filepath.Join(dir, "checkpoint", "weights.npz")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("compare", dir, "--out", filepath.Join(t.TempDir(), "c")); code != 0 || !strings.Contains(stderr, "weights.npz") || !strings.Contains(stderr, "the run, unfinished, cannot be resumed") {
		t.Errorf("damaged run: exit %d, %s", code, stderr)
	}
}

// Round 132 A1, A2: ULA chains started inside a Gamma's support that
// stepped out onto its placeholder (1e30, where the gradient is 0) were
// "ran off: lower --step", which left them stepping out; R-hat's advice
// beside a note of chains held out of the mass was "sample longer". The
// note names them out of the support (ULA's way on), and R-hat's advice
// defers to it.
func TestPlaceholderStepOutNotRanOff(t *testing.T) {
	model, _ := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "gamma_placeholder_energy.onnx"))
	inTempDir(t)
	if err := npy.WriteFile("s.npy", &npy.Array{Shape: []int{1}, Data: []float64{1.5}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI("sample", "--model", model, "--sampler", "ula", "--step", "0.3", "--chains", "8", "--steps", "200", "--starts", "s.npy", "--out", "a.npy")
	if code != 0 || strings.Contains(stderr, "ran off") || !strings.Contains(stderr, "out where the model's density is all but 0") || !strings.Contains(stderr, "--sampler mala or hmc, which reject such steps") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if strings.Contains(stdout, "sample longer") || !strings.Contains(stdout, "not set right by sampling longer: follow their note's advice") {
		t.Errorf("R-hat's advice: %s", stdout)
	}
}

// Round 133 A2: ULA chains started in a Gamma's support, thrown out of it
// in the warm-up: one back in the support at two draws looked at and out
// again (later in for good) was "a start far from the mass … start nearer
// the mass", and one thrown far inside it, "a start far from the mass"
// where the user's starts were in the mass. The first is out of the
// support; the second's note says the warm-up may have left it far, and
// ULA's way on.
func TestSteppingChainNotATransient(t *testing.T) {
	stay, typ := strandedStay(2), typicalGap(2, 320)
	gaps := make([]float64, strandedProbes)
	for j := range gaps {
		gaps[j] = 1e30
		if j == 9 || j == 10 || j >= 18 {
			gaps[j] = 1
		}
	}
	if kind, _ := transientOf(gaps, stay, typ); kind != notTransient {
		t.Errorf("a chain in, out and in again: %v, want no transient", kind)
	}
	thrown := transientChains{kind: stillComing, warmup: 200, ula: true}
	thrown.add(7, []float64{14100, 14090, 14080, 14070}, 0, 500)
	note := thrown.note(16, 500, typ)
	if !strings.Contains(note, "chain 7 (of 16, numbered from 0 as the draws' first axis) was, after the 200 warm-up steps, where") || !strings.Contains(note, "or one the warm-up left far") || !strings.Contains(note, "--sampler mala or hmc, or a smaller --step") {
		t.Errorf("%s", note)
	}
}

// Round 133 A1: HMC draws flipping across the mode each step (step ×
// leapfrog near half a period) were "slow: raise --step", which made
// them worse; lag1 tells them apart from slow ones.
func TestLag1TellsFlippingFromSlow(t *testing.T) {
	const chains, steps = 2, 200
	flip, slow := make([]float64, chains*steps), make([]float64, chains*steps)
	rng := rand.New(rand.NewPCG(133, 1))
	for c := range chains {
		v := 0.0
		for i := range steps {
			flip[c*steps+i] = float64(1-2*(i%2)) * (1 + 0.1*rng.NormFloat64())
			v = 0.95*v + rng.NormFloat64()
			slow[c*steps+i] = v
		}
	}
	if r := mixingOf(flip, chains, steps, 1, false).rho1[0]; r > -0.9 {
		t.Errorf("flipping draws: lag-1 autocorrelation %.3f, want ≈ -1", r)
	}
	if r := mixingOf(slow, chains, steps, 1, false).rho1[0]; r < 0.8 {
		t.Errorf("AR(1) 0.95 draws: lag-1 autocorrelation %.3f, want ≈ 0.95", r)
	}
}

// Round 134 A1, A4: HMC's trajectory near a whole number of periods
// (draws coming back near the last, at a step near its stability limit)
// was told "the steps are small … raise --step", which then rejected
// every proposal; a dimension flipping each draw beside a slow one was
// hidden by averaging them. Each dimension is read; small steps still
// get their advice.
func TestHMCResonancePerDimension(t *testing.T) {
	f := sampleFlags{sampler: "hmc", step: 0.6283185, leapfrog: 10}
	if got := f.hmcResonance(checkpoint.Models{}, 1, mixing{rho1: []float64{0.99, 0.98}, sd: []float64{0.885, 0.9}, rhat: []float64{1.27, 1.2}, bulk: []float64{1.27, 1.2}}); !strings.Contains(got, "each draw comes back near the last (lag-1 autocorrelation 0.99 in dimension 0") || !strings.Contains(got, "= 6.28, is near a whole number of periods") {
		t.Errorf("whole periods: %q", got)
	}
	// Round 137 A5: a step over the dimension's scale (near the leapfrog's
	// stability limit), at acceptance 0.76, got "sample longer" only;
	// --leapfrog changed there rejected everything, a lower step mixed.
	f = sampleFlags{sampler: "hmc", step: 1.9021, leapfrog: 5}
	if got := f.hmcResonance(checkpoint.Models{}, 0.76, mixing{rho1: []float64{0.99, 0.996}, sd: []float64{1, 1.06}, rhat: []float64{6.1, 6.3}, bulk: []float64{6.1, 6.3}}); !strings.Contains(got, "in dimension 1") || !strings.Contains(got, "--step 1.9021 is near the leapfrog's stability limit") || !strings.Contains(got, "lower --step") {
		t.Errorf("step near its limit: %q", got)
	}
	f = sampleFlags{sampler: "hmc", step: 0.3141593, leapfrog: 10}
	flipping := mixing{rho1: []float64{-0.999, 0.948}, sd: []float64{0.754, 10}, rhat: []float64{2.465, 1.2}, bulk: []float64{1.001, 1.2}}
	if got := f.hmcResonance(checkpoint.Models{}, 1, flipping); !strings.Contains(got, "flip back and forth (lag-1 autocorrelation -1.00 in dimension 0)") {
		t.Errorf("one dimension flipping: %q", got)
	}
	f = sampleFlags{sampler: "hmc", step: 0.01, leapfrog: 10}
	if got := f.hmcResonance(checkpoint.Models{}, 1, mixing{rho1: []float64{0.99}, sd: []float64{1}, rhat: []float64{1.5}, bulk: []float64{1.5}}); got != "" {
		t.Errorf("small steps: %q, want none (raise --step)", got)
	}
	// Round 135 A1: a flipping dimension that had mixed (R-hat 1.0007),
	// or whose chains sit in modes apart (bulk R-hat 1.62), was blamed.
	f = sampleFlags{sampler: "hmc", step: 0.157, leapfrog: 7}
	if got := f.hmcResonance(checkpoint.Models{}, 0.99, mixing{rho1: []float64{-0.57, 0.85}, sd: []float64{0.5, 2}, rhat: []float64{1.0007, math.NaN()}, bulk: []float64{1.0007, math.NaN()}}); got != "" {
		t.Errorf("a mixed dimension flipping: %q, want none", got)
	}
	if got := f.hmcResonance(checkpoint.Models{}, 0.99, mixing{rho1: []float64{-0.6}, sd: []float64{2}, rhat: []float64{1.62}, bulk: []float64{1.62}}); strings.Contains(got, "--leapfrog") || !strings.Contains(got, "--sampler flowmc") {
		t.Errorf("chains in modes apart: %q, want flowmc, not --leapfrog", got)
	}
	// Round 136 A2: a dimension other than the worst was named (R-hat
	// 1.087 beside 1.636 of chains in modes apart), and flowmc dropped.
	f = sampleFlags{sampler: "hmc", step: 0.3, leapfrog: 10}
	if got := f.hmcResonance(checkpoint.Models{}, 1, mixing{rho1: []float64{-0.9}, sd: []float64{1}, rhat: []float64{1.087}, bulk: []float64{1.0}, worst: 1.636}); got != "" {
		t.Errorf("not the worst dimension: %q, want none", got)
	}
	if got := f.hmcResonance(checkpoint.Models{}, 1, mixing{rho1: []float64{-0.9}, sd: []float64{1}, rhat: []float64{1.5}, bulk: []float64{1.0}, worst: 1.5}); !strings.Contains(got, "if the chains sit in modes apart instead, --sampler flowmc") {
		t.Errorf("flowmc clause: %q", got)
	}
	// Round 137 A1: chains each in its own mode, moving freely there
	// (lag-1 -0.78, bulk R-hat 1.68), were told "small steps: raise
	// --step" (worse when followed); flowmc joined them.
	f = sampleFlags{sampler: "hmc", step: 0.5, leapfrog: 5}
	if got := f.hmcResonance(checkpoint.Models{}, 0.98, mixing{rho1: []float64{-0.78, 0.1}, sd: []float64{20, 1}, rhat: []float64{1.675, 1.001}, bulk: []float64{1.68, 1.001}, worst: 1.675}); !strings.Contains(got, "the chains sit apart in dimension 0") || !strings.Contains(got, "--sampler flowmc") {
		t.Errorf("modes apart: %q", got)
	}
	// Round 135 A2: beside an improper density's note, its advice.
	f = sampleFlags{sampler: "hmc", step: 0.3141593, leapfrog: 10, noted: "the density may be improper"}
	if got := f.notMixedAdvice(checkpoint.Models{}, 1, flipping); got != "the density may be improper" {
		t.Errorf("improper and flipping: %q", got)
	}
}

// Round 135 A3: chains that came down from 45 into the band only by
// their last draws looked at (or falling within it over their second
// half) were named nowhere, beside others cut at draw 788.
func TestLateArrivalNamed(t *testing.T) {
	stay, typ := strandedStay(2), typicalGap(2, 320)
	gaps := make([]float64, strandedProbes)
	for j := range gaps {
		gaps[j] = 45 - 2*float64(j) + 3*float64(j%2) // down, not three steps in four
	}
	gaps[strandedProbes-1] = 1
	if kind, _ := transientOf(gaps, stay, typ); kind != stillComing {
		t.Errorf("late arrival: %v, want still coming", kind)
	}
}

// Round 135 A4: ten of sixteen chains arrived at a proper mass at x = 200
// by their last draws were called "improper … sampling longer takes them
// further".
func TestArrivedHalfNotImproper(t *testing.T) {
	const chains, k = 16, strandedProbes
	e, pts := make([]float64, chains*k), mat.NewDense(chains*k, 2, nil)
	for c := range chains {
		arrive := 12 + c%8 // half the chains by draw 15, the rest later
		for j := range k {
			x := 200 * min(1, float64(j)/float64(arrive))
			pts.Set(c*k+j, 0, x)
			e[c*k+j] = 0.2*(200-x) + 0.5*float64(j%3)
		}
	}
	if note := improperNote(e, pts, chains, k, true); note != "" {
		t.Errorf("%s", note)
	}
}

// Round 133 A3: convert --what flow-sample of a checkpoint without a flow
// said only "the checkpoint has no flow"; it names what can be exported,
// and sample --flow what to give instead.
func TestNoFlowSaysWhatInstead(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	if _, stderr, code := runCLI("convert", run, filepath.Join(dir, "f.onnx"), "--what", "flow-sample"); code == 0 || !strings.Contains(stderr, "--what ebm or energy exports its energy network") {
		t.Errorf("convert: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", run, "--sampler", "flowmc", "--flow", run, "--steps", "10", "--out", filepath.Join(dir, "s.npy")); code == 0 || !strings.Contains(stderr, "or leave --flow out") {
		t.Errorf("sample: exit %d, %s", code, stderr)
	}
}

// Round 133 B1: the network convert exports, sampled without the --base
// its note names, has an energy unbounded below: the chains drifted
// outward, were said to have "came down, into the band … by draw 357",
// and R-hat's advice, "sample longer", took them further. The drift is
// said, with --base as the way on; with --base it is not.
func TestImproperDensitySaid(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--iterations", "30", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	net := filepath.Join(dir, "ebm.onnx")
	stdout, stderr, code := runCLI("convert", run, net)
	base := regexp.MustCompile(`--base ([0-9.]+)`).FindStringSubmatch(stdout + stderr)
	if code != 0 || base == nil {
		t.Fatalf("convert: exit %d, %s", code, stderr)
	}
	stdout, stderr, code = runCLI("sample", "--model", net, "--steps", "400", "--out", filepath.Join(dir, "a.npy"))
	if code != 0 || !strings.Contains(stderr, "the model's density may be improper") || !strings.Contains(stderr, "give --base SIGMA") || strings.Contains(stderr, "into the band") || strings.Contains(stdout, "sample longer") {
		t.Errorf("without --base: exit %d, %s%s", code, stdout, stderr)
	}
	_, stderr, code = runCLI("sample", "--model", net, "--base", base[1], "--steps", "400", "--out", filepath.Join(dir, "b.npy"))
	if code != 0 || strings.Contains(stderr, "improper") {
		t.Errorf("with --base: exit %d, %s", code, stderr)
	}
}

// Round 134 A2, A3: chains walking outward over a flat energy (a bounded
// network without its base) got no note and "sample longer"; chains that
// came from the origin to a far mass at (30, 30), there for the last
// third of their draws, were called "possibly improper … still coming".
func TestImproperNoteFlatAndArrived(t *testing.T) {
	const chains, k = 8, strandedProbes
	rng := rand.New(rand.NewPCG(134, 1))
	build := func(at func(c, j int) (x, y, e float64)) ([]float64, *mat.Dense) {
		e, pts := make([]float64, chains*k), mat.NewDense(chains*k, 2, nil)
		for c := range chains {
			for j := range k {
				x, y, v := at(c, j)
				pts.Set(c*k+j, 0, x)
				pts.Set(c*k+j, 1, y)
				e[c*k+j] = v
			}
		}
		return e, pts
	}
	e, pts := build(func(c, j int) (float64, float64, float64) { // arrived by draw 12 of 20
		r := min(1, float64(j)/12) * 30
		x, y := r+rng.NormFloat64(), r+rng.NormFloat64()
		return x, y, ((x-30)*(x-30) + (y-30)*(y-30)) / 2
	})
	if note := improperNote(e, pts, chains, k, true); note != "" {
		t.Errorf("arrived at a far mass: %s", note)
	}
	e, pts = build(func(c, j int) (float64, float64, float64) { // a random walk outward, energy within 1
		r := 30 * math.Sqrt(float64(j+1)) * (1 + 0.3*rng.NormFloat64())
		a := rng.Float64() * 2 * math.Pi
		return r * math.Cos(a), r * math.Sin(a), 0.4 * math.Tanh(rng.NormFloat64())
	})
	if note := improperNote(e, pts, chains, k, true); !strings.Contains(note, "their energy falling or flat") || !strings.Contains(note, "give --base SIGMA") {
		t.Errorf("flat and outward: %q", note)
	}
}

// Round 134 B2: a sample run stopped and its --modes file moved: --resume
// said "no such file" without a way on; edited in place, the other
// centres were taken unsaid. The way on is named, and an edit refused.
func TestResumeChecksModesFile(t *testing.T) {
	dir := t.TempDir()
	ck, modes := filepath.Join(dir, "k.npz"), filepath.Join(dir, "m.npy")
	if err := npy.WriteFile(modes, &npy.Array{Shape: []int{2, 2}, Data: []float64{-1, 0, 1, 0}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	killedAtFirstCheckpoint(t, ck, "sample", "--model", toyONNX, "--chains", "4", "--steps", "400", "--modes", modes, "--checkpoint", ck, "--checkpoint-every", "50", "--out", filepath.Join(dir, "s.npy"))
	moved := filepath.Join(dir, "moved.npy")
	if err := os.Rename(modes, moved); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck); code == 0 || !strings.Contains(stderr, "--modes "+modes) || !strings.Contains(stderr, "put it back there to continue") {
		t.Errorf("moved: exit %d, %s", code, stderr)
	}
	if err := npy.WriteFile(modes, &npy.Array{Shape: []int{2, 2}, Data: []float64{-2, 0, 2, 0}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck); code == 0 || !strings.Contains(stderr, modes) {
		t.Errorf("edited: exit %d, %s", code, stderr)
	}
	if err := os.Rename(moved, modes); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck); code != 0 {
		t.Errorf("put back: exit %d, %s", code, stderr)
	}
}

// Round 134 B1: diagnose of a .json file that does not exist called it
// "a JSON record …, not draws" (by its name alone).
func TestDiagnoseMissingJSONNotARecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nothere.json")
	if _, stderr, code := runCLI("diagnose", path); code == 0 || strings.Contains(stderr, "JSON record") || !strings.Contains(stderr, "no such file") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 135 B1: a sample run's ONNX --model replaced by a folder between
// a kill and --resume was "neither a checkpoint … nor a training run",
// without the resume or the way on.
func TestResumeModelReplacedByFolder(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.onnx")
	b, err := os.ReadFile(toyONNX)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "k.npz")
	killedAtFirstCheckpoint(t, ck, "sample", "--model", model, "--chains", "4", "--steps", "400", "--checkpoint", ck, "--checkpoint-every", "50", "--out", filepath.Join(dir, "s.npy"))
	if err := os.Rename(model, model+".bak"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(model, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("sample", "--resume", ck); code == 0 || !strings.Contains(stderr, "--model "+model+" is a folder, want the ONNX file the run was started on (put it back there to continue)") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 136 A1: unmixed draws of a model whose scales differ ×100 showed
// ×31 (the wide one's draws too narrow), under the scales note's ×100,
// and "sample longer" (10 times longer: R-hat 2.27) was the only advice.
func TestScalesNoteOfUnmixedDraws(t *testing.T) {
	rng := rand.New(rand.NewPCG(136, 1))
	const n = 2000
	draws := make([]float64, 2*n)
	for i := range n {
		draws[2*i], draws[2*i+1] = 0.1*rng.NormFloat64(), 3.6*rng.NormFloat64()
	}
	if note := scalesNote(draws, 2, false); !strings.Contains(note, "the draws' scales differ by") {
		t.Errorf("×36: %q", note)
	}
}

// Round 136 A7: ULA's "thrown far by its steps" clause was said of chains
// started far with no warm-up.
func TestULAClauseOnlyAfterWarmup(t *testing.T) {
	far := transientChains{kind: arrivedInBand, ula: true}
	far.add(0, []float64{500, 100, 3, 2, 1}, 2, 100)
	if note := far.note(4, 100, 9); strings.Contains(note, "thrown far by ULA") {
		t.Errorf("no warm-up: %s", note)
	}
}

// Round 136 B4: a row of iteration 400 appended to a finished 40-iteration
// run's metrics.csv was blamed on metrics.json, and train --resume,
// advised, had nothing to do. metrics.csv is named, and its advice works.
func TestMetricsRowAfterFinalNamed(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	path := filepath.Join(run, "metrics.csv")
	good := mustRead(t, path)
	lines := strings.Split(strings.TrimSuffix(string(good), "\n"), "\n")
	last := lines[len(lines)-1]
	if err := os.WriteFile(path, append(slices.Clone(good), "400"+last[strings.Index(last, ","):]+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c"))
	if code == 0 || !strings.Contains(stderr, path+" holds rows after the run's final evaluation") || strings.Contains(stderr, "metrics.json") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if out, err := exec.Command("cp", filepath.Join(run, "checkpoint", "evals.csv"), path).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c2")); code != 0 {
		t.Errorf("after the advice: exit %d, %s", code, stderr)
	}
}

// killedAtFirstCheckpoint runs the sample command args in a child killed
// (SIGKILL) as it places its first checkpoint, ck.
func killedAtFirstCheckpoint(t *testing.T, ck string, args ...string) {
	t.Helper()
	if code, stderr := outputsChild(t, "sample-checkpoint-placed", "KILL", args...); code == 0 || !exists(ck) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// Round 136 A4: an energy that ignores one dimension beside a bound one
// (improper: flat without end along it) was told "sample longer", the
// chains wandering ever further along it. freeDimNote names the
// dimension; chains equilibrated in a box where the gradient is also 0
// (a proper uniform density) are not named.
func TestFreeDimensionNoted(t *testing.T) {
	const chains, k = 8, 20
	rng := rand.New(rand.NewPCG(1, 2))
	walk, box := mat.NewDense(chains*k, 2, nil), mat.NewDense(chains*k, 2, nil)
	grad := mat.NewDense(chains*k, 2, nil)
	for c := range chains {
		x := 0.0
		for i := range k {
			x += 3 * rng.NormFloat64()
			r := c*k + i
			walk.Set(r, 0, rng.NormFloat64())
			walk.Set(r, 1, x)
			box.Set(r, 0, walk.At(r, 0))
			box.Set(r, 1, rng.Float64())
			grad.Set(r, 0, walk.At(r, 0))
		}
	}
	if note := freeDimNote(grad, walk, chains, k, true, func(int) bool { return false }); !strings.Contains(note, "the energy does not change along dimension 1 (numbered from 0") || !strings.Contains(note, "give --base SIGMA") {
		t.Errorf("random walk along a free dimension: %q", note)
	}
	if note := freeDimNote(grad, box, chains, k, true, func(int) bool { return false }); note != "" {
		t.Errorf("uniform in a box: %q", note)
	}
}

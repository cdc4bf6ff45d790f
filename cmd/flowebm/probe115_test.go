package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// normalDraws writes a .npy of shape with standard normal values.
func normalDraws(t *testing.T, path string, shape ...int) string {
	t.Helper()
	return normalArray(t, path, 1, shape...)
}

// Round 115 A1: a (draws, chains) array, as posterior's
// extract_variable_matrix gives it, was read as 1000 chains of 4 draws
// without a word (R-hat "not mixed", ESS not computed, "give chains of at
// least 10"). A note says how it was read and how to transpose it.
func TestDiagnoseNotesDrawsChainsLayout(t *testing.T) {
	dir := t.TempDir()
	const note = "holds more chains (1000) than draws per chain (4): an array is read as (chains, draws[, dims]); if it is (draws, chains[, dims])"
	transposed := normalDraws(t, filepath.Join(dir, "dc.npy"), 1000, 4)
	if _, stderr, code := runCLI("diagnose", transposed); code != 0 || !strings.Contains(stderr, note) {
		t.Errorf("(draws, chains): exit %d, %s", code, stderr)
	}
	right := normalDraws(t, filepath.Join(dir, "cd.npy"), 4, 1000)
	if _, stderr, code := runCLI("diagnose", right); code != 0 || strings.Contains(stderr, "more chains") {
		t.Errorf("(chains, draws): exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("diagnose", "--nested", "10", transposed); code != 0 || strings.Contains(stderr, "more chains") {
		t.Errorf("--nested, many short chains on purpose: exit %d, %s", code, stderr)
	}
}

// Round 115 A2: diagnose --plots P --force of other draws left the earlier
// input's figures of dimensions it does not draw beside the new ones,
// unsaid. --force removes them (as compare --force does its own), naming
// them; without --force a note names them.
func TestDiagnoseForceReplacesFigureSet(t *testing.T) {
	dir := t.TempDir()
	p1 := normalDraws(t, filepath.Join(dir, "p1.npy"), 4, 200, 6)
	p2 := normalDraws(t, filepath.Join(dir, "p2.npy"), 4, 200, 2)
	plots := filepath.Join(dir, "P")
	keep := filepath.Join(plots, "notes.txt")
	if _, stderr, code := runCLI("diagnose", p1, "--plots", plots, "--plot-format", "svg"); code != 0 {
		t.Fatal(stderr)
	}
	for _, own := range []string{keep, filepath.Join(plots, "mine-trace.svg")} { // a user's own, one named like a figure
		if err := os.WriteFile(own, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code := runCLI("diagnose", p2, "--plots", plots, "--plot-format", "svg", "--force")
	if code != 0 || !strings.Contains(stderr, "--force removed from "+plots+" the 12 figures of an earlier diagnose") {
		t.Errorf("--force: exit %d, %s", code, stderr)
	}
	entries, err := os.ReadDir(plots)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") { // its lock
			names = append(names, e.Name())
		}
	}
	if len(names) != 10 || !slices.Contains(names, "notes.txt") || !slices.Contains(names, "mine-trace.svg") || slices.Contains(names, "dim3-trace.svg") {
		t.Errorf("left after --force: %v (want dim0 and dim1's 8 figures, notes.txt and mine-trace.svg)", names)
	}
	_, stderr, code = runCLI("diagnose", p1, "--plots", plots, "--plot-format", "svg", "--plot-dims", "4")
	if code != 0 || !strings.Contains(stderr, plots+" also holds 8 figures that this diagnose did not draw") {
		t.Errorf("without --force: exit %d, %s", code, stderr)
	}
}

// Round 115 B1: neutra with --warmup 0 (its MALA step not adapted) at
// acceptance 1.00, R-hat 4.6, was told "sample longer, or --sampler
// flowmc" where HMC and MALA were told to raise --step (round 114 A1).
// Checked in TestSampleSaysNotMixed.

// Round 115 B2: a run's checkpoint.old/ (or checkpoint.new/) given
// itself, without its COMPLETE and its weights edited, was used by energy
// and convert without a word, where its checkpoint/ so was refused.
// Each is refused alike, with the way on.
func TestUnvouchedCheckpointFolderRefused(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	old := filepath.Join(run, "checkpoint.old")
	if err := os.CopyFS(old, os.DirFS(filepath.Join(run, "checkpoint"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(old, "COMPLETE")); err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(dir, "x.npy")
	if err := npy.WriteFile(x, &npy.Array{Shape: []int{2, 2}, Data: []float64{0, 0, 1, 1}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	want := old + " is incomplete: it lacks COMPLETE"
	if _, stderr, code := runCLI("energy", "--model", old, "--points", x, "--out", filepath.Join(dir, "e.npy")); code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "give the run folder "+run) {
		t.Errorf("energy: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("convert", old, filepath.Join(dir, "m.onnx")); code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("convert: exit %d, %s", code, stderr)
	}
	// A checkpoint that convert wrote has no COMPLETE, and is used.
	conv, onnx := filepath.Join(dir, "conv"), filepath.Join(dir, "ebm.onnx")
	if _, stderr, code := runCLI("convert", run, onnx, "--what", "ebm"); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("convert", onnx, conv); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("energy", "--model", conv, "--points", x, "--out", filepath.Join(dir, "e2.npy")); code != 0 {
		t.Errorf("energy of convert's checkpoint: exit %d, %s", code, stderr)
	}
}

// Round 116 A1: neutra chains stuck between modes were told to "give a
// smaller --step", which the warm-up tuned back up (0.001 to 0.185), the
// same chains stuck. Where the warm-up tunes the step, the note names ways
// that change the outcome; with a fixed step, a smaller one still.
func TestStillNoteWhereStepTuned(t *testing.T) {
	still := strandedChains{names: []string{"15", "18", "30"}}
	for _, c := range []struct {
		f         sampleFlags
		want, not string
	}{
		{sampleFlags{sampler: "neutra", warmup: 200, chains: 32}, "--step only sets where the warm-up's tuning starts: give --starts FILE", "give a smaller --step"},
		{sampleFlags{sampler: "neutra", warmup: 200, chains: 32}, "or --sampler flowmc, whose moves from a flow jump between modes", ""},
		{sampleFlags{sampler: "flowmc", warmup: 200, chains: 32}, "--warmup 0 with a smaller --step", "--sampler flowmc"},
		{sampleFlags{sampler: "hmc", step: 50, chains: 32}, "give a smaller --step", "tuning starts"},
	} {
		got := c.f.stillNote(still, 1)
		if !strings.Contains(got, c.want) || c.not != "" && strings.Contains(got, c.not) {
			t.Errorf("%s, warm-up %d: %q; want %q, not %q", c.f.sampler, c.f.warmup, got, c.want, c.not)
		}
	}
	if got := still.which(32); got != "chains 15, 18, 30 (of 32, numbered from 0 as the draws' first axis)" {
		t.Errorf("which: %q", got)
	}
}

// Round 116 B1: after reproduce --jobs 2 killed and given again, the time
// note said the runs were trained by several ways that "may differ" in
// sharing, naming no run, though every way was --jobs 2. Ways made of one
// --jobs N alone say up to N; others name their runs (TestReportSaysHowRunsShared).
func TestSameJobsAcrossInvocations(t *testing.T) {
	for _, c := range []struct {
		hows []string
		want int
	}{
		{[]string{"reproduce --jobs 2", "reproduce --jobs 2, then reproduce --jobs 2"}, 2},
		{[]string{"reproduce --jobs 1"}, 1},
		{[]string{"reproduce --jobs 2", "reproduce --jobs 1"}, 0},
		{[]string{"reproduce --jobs 2, then " + otherTraining}, 0},
		{[]string{"reproduce --jobs 2 (killed before it recorded how far; or by hand after it), then reproduce --jobs 2"}, 0},
	} {
		if got := sameJobs(c.hows); got != c.want {
			t.Errorf("%q: %d, want %d", c.hows, got, c.want)
		}
	}
}

package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Round 124 B3: a kill between a checkpoint and metrics.csv's rewrite
// left metrics.csv a row behind the checkpoint's evaluations: plot and
// train --resume called it "not this run's … another run's, or edited",
// compare refused the run. It is an interrupted run's state: each reads
// it, and --resume writes the row again.
func TestMetricsCSVBehindCheckpointIsACrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "200", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	path := filepath.Join(dir, "metrics.csv")
	whole := mustRead(t, path)
	lines := bytes.SplitAfter(whole, []byte("\n"))
	if len(lines) < 3 {
		t.Fatalf("metrics.csv of %d lines", len(lines))
	}
	cut := bytes.Join(lines[:len(lines)-2], nil) // the last row gone (the last element is the empty tail)
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("plot", dir); code != 0 || strings.Contains(stderr, "not this run's") {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", dir, "--out", filepath.Join(t.TempDir(), "c")); code != 0 || strings.Contains(stderr, "not this run's") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", dir, "--quiet"); code != 0 {
		t.Fatalf("train --resume: exit %d, %s", code, stderr)
	}
	if got := mustRead(t, path); !bytes.HasPrefix(got, whole) {
		t.Errorf("metrics.csv after --resume does not begin with the rows it had before the cut")
	}
}

// Round 124 A1: chains started at 1e6 on a model of full support, coming
// in by a step's shrink and in its mass by a third of the draws, were
// "stranded where the model's density is all but 0 … sampling longer does
// not move them". They are said to be a transient, with where they came
// in.
func TestFarStartsAreATransient(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	starts := filepath.Join(dir, "far.npy")
	if err := npy.WriteFile(starts, &npy.Array{Shape: []int{1, 2}, Data: []float64{1e6, 1e6}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	// Round 125 A1: "came into the mass by draw N" was said of chains still
	// coming down (x[:, N:] far from the model's moments): at 3000 draws
	// they have not settled, at 10000 they have.
	_, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--starts", starts, "--steps", "3000", "--warmup", "0", "--chains", "2", "--out", filepath.Join(dir, "s.npy"))
	if code != 0 || strings.Contains(stderr, "stranded") || !strings.Contains(stderr, "came down along their draws, not yet settled") || !strings.Contains(stderr, "a transient") {
		t.Errorf("3000 draws: exit %d, %s", code, stderr)
	}
	_, stderr, code = runCLI("sample", "--model", run, "--sampler", "mala", "--starts", starts, "--steps", "10000", "--warmup", "0", "--chains", "2", "--out", filepath.Join(dir, "s2.npy"))
	if code != 0 || strings.Contains(stderr, "stranded") || !strings.Contains(stderr, "came down, into the band where draws at equilibrium lie by draw") {
		t.Errorf("10000 draws: exit %d, %s", code, stderr)
	}
}

// Round 125 A3: a chain of a Gaussian started at (30, 30) among chains at
// its mean, its energy falling from 1054 to 360 over 300 small steps, was
// "stranded … sampling longer does not move them". It is coming down.
func TestSlowTransientNotStranded(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	starts := filepath.Join(dir, "mixed.npy")
	if err := npy.WriteFile(starts, &npy.Array{Shape: []int{4, 2}, Data: []float64{0, 0, 0, 0, 0, 0, 30, 30}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--step", "0.001", "--starts", starts, "--steps", "300", "--warmup", "0", "--chains", "4", "--out", filepath.Join(dir, "s.npy"))
	if code != 0 || strings.Contains(stderr, "stranded") || !strings.Contains(stderr, "chain 3 (of 4") || !strings.Contains(stderr, "not yet settled") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 124 B1, B2: a finished run whose final checkpoint is lost and
// whose metrics.csv was cut was told "cp checkpoint/evals.csv metrics.csv
// restores them", which kept the older checkpoint's rows only; its
// metrics.csv cut to the older checkpoint's rows (a resume from it,
// interrupted) had compare call metrics.json "edited, or another run's".
// Both say the final checkpoint is missing and train --resume, which
// writes every row again.
func TestFinalLostAdviceResumes(t *testing.T) {
	dir := t.TempDir()
	run, early := lostFinalRun(t, dir)
	path := filepath.Join(run, "metrics.csv")
	whole := mustRead(t, path)
	if err := os.WriteFile(path, whole[:len(whole)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("plot", run)
	if code == 0 || !strings.Contains(stderr, "train --resume "+run+" writes them all again") || strings.Contains(stderr, "cp ") || strings.Contains(stderr, "drawn from its checkpoint's") {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	if err := os.WriteFile(path, mustRead(t, filepath.Join(early, "metrics.csv")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI("compare", run, "--out", filepath.Join(dir, "cmp"))
	if code != 0 || strings.Contains(stderr, "edited, or another run's") || !strings.Contains(stderr, "its final checkpoint is missing") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	stdout, stderr, code := runCLI("train", "--resume", run)
	if code != 0 || !strings.Contains(stdout, "note: the run finished (its metrics.json) but its final checkpoint is missing") {
		t.Errorf("train --resume: exit %d, %s%s", code, stdout, stderr)
	}
	if got := mustRead(t, path); !bytes.Equal(got, whole) {
		t.Errorf("metrics.csv after --resume differs from the finished run's")
	}
}

// Round 125 A2, A4: every chain on a plateau (1000 outside a Gamma's
// support) was said nothing of (the notes compare chains with one
// another); ULA's chains stranded outside a support were not told that
// its lack of an accept step lets them step out.
func TestPlateauOfEveryChainAndULA(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "gamma_plateau_energy.onnx")) // io/onnx/crosscheck/make_gamma_energy.py
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	starts := func(name string, x ...float64) string {
		path := filepath.Join(dir, name)
		if err := npy.WriteFile(path, &npy.Array{Shape: []int{len(x), 1}, Data: x}, npy.Float64); err != nil {
			t.Fatal(err)
		}
		return path
	}
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "mala", "--chains", "4", "--steps", "300", "--warmup", "0", "--starts", starts("out.npy", -5), "--out", filepath.Join(dir, "a.npy"))
	if code != 0 || !strings.Contains(stderr, "the energy is 1000 at every draw looked at of every chain, while they move: a plateau") || !strings.Contains(stderr, "--sampler flowmc with a flow of your own") || !strings.Contains(stderr, "if the target is uniform there, the draws are from the model") { // round 127 A1: the sentence ended at "are"
		t.Errorf("every chain outside: exit %d, %s", code, stderr)
	}
	// Round 127 A5: flowmc on d = 1 with --warmup 0 asked for a warm-up,
	// which, given, led to the refusal of d = 1.
	if _, stderr, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "10", "--warmup", "0", "--out", filepath.Join(dir, "f.npy")); code == 0 || !strings.Contains(stderr, "it needs d ≥ 2") || strings.Contains(stderr, "--warmup 0") {
		t.Errorf("flowmc, d = 1, --warmup 0: exit %d, %s", code, stderr)
	}
	_, stderr, code = runCLI("sample", "--model", model, "--sampler", "ula", "--chains", "4", "--steps", "300", "--warmup", "0", "--starts", starts("half.npy", 2, 2, -5, -5), "--out", filepath.Join(dir, "b.npy"))
	if code != 0 || !strings.Contains(stderr, "chains 2, 3 (of 4") || !strings.Contains(stderr, "ULA has no accept step") || strings.Contains(stderr, "give --starts FILE with points inside the support") || !strings.Contains(stderr, "where they started outside, --starts FILE with points inside the support too") { // round 127 A3: told to start inside; round 128 A3: chains started outside, told mala alone
		t.Errorf("ula, two chains outside: exit %d, %s", code, stderr)
	}
}

// Round 125 A6: diagnose named only the first pair of identical chains
// (chains 2 and 3, twins too, unsaid), and called four chains that never
// moved from one start "the same seed twice, or a file copied?".
func TestDiagnoseNamesEveryTwin(t *testing.T) {
	dir := t.TempDir()
	draws := normalArray(t, filepath.Join(dir, "d.npy"), 1, 4, 100, 2)
	a, _ := npy.ReadFile(draws)
	copy(a.Data[200:400], a.Data[:200])
	copy(a.Data[600:800], a.Data[400:600])
	if err := npy.WriteFile(draws, a, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", draws); code != 0 || !strings.Contains(stderr, "chains 0 and 1 (the same seed twice, or a file copied?); chains 2 and 3 (the same seed twice, or a file copied?) (numbered from 0") {
		t.Errorf("two pairs: exit %d, %s", code, stderr)
	}
	// Round 126 A6: one group still, one not, and a lone still chain.
	for i := 400; i < 800; i++ {
		a.Data[i] = float64(i % 2)
	}
	if err := npy.WriteFile(draws, a, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", draws); code != 0 || !strings.Contains(stderr, "chains 2 and 3 (they never moved") || !strings.Contains(stderr, "chains 0 and 1 (the same seed twice") {
		t.Errorf("a still pair and a copied pair: exit %d, %s", code, stderr)
	}
	normalArray(t, draws, 7, 4, 100, 2)
	a, _ = npy.ReadFile(draws)
	for i := 600; i < 800; i++ {
		a.Data[i] = float64(i % 2)
	}
	if err := npy.WriteFile(draws, a, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", draws); code != 0 || !strings.Contains(stderr, "chain 3 (numbered from 0, as the array's first axis) never moved") {
		t.Errorf("a lone still chain: exit %d, %s", code, stderr)
	}
	for i := range a.Data {
		a.Data[i] = float64(i % 2)
	}
	if err := npy.WriteFile(draws, a, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", draws); code != 0 || !strings.Contains(stderr, "chains 0, 1, 2 and 3 (they never moved") {
		t.Errorf("four still chains: exit %d, %s", code, stderr)
	}
}

// Round 125 B1: a finished run's samples.npy cut (or zeroed) was said
// nothing of by plot and compare (reproduce --report reported the run as
// a result); only train --resume found it. They name it, and the resume.
func TestDamagedSamplesNamed(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	path := filepath.Join(run, "samples.npy")
	whole := mustRead(t, path)
	if err := os.WriteFile(path, whole[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	const way = "writes it again"
	if _, stderr, code := runCLI("plot", run); code != 0 || !strings.Contains(stderr, "file truncated") || !strings.Contains(stderr, way) {
		t.Errorf("plot, cut: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c")); code != 0 || !strings.Contains(stderr, "file truncated") {
		t.Errorf("compare, cut: exit %d, %s", code, stderr)
	}
	if err := os.WriteFile(path, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	z, _ := npy.ReadFile(path)
	clear(z.Data)
	if err := npy.WriteFile(path, z, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("plot", run); code != 0 || !strings.Contains(stderr, "differs from the run's final chains") ||
		!strings.Contains(stderr, "numbered from 0 as the array's first axis") || !strings.Contains(stderr, "keep a copy of it first") { // round 136 B5, B6
		t.Errorf("plot, zeroed: exit %d, %s", code, stderr)
	}
}

// Round 125 B2, B3: a new start on a run whose checkpoint lost its
// state.npz said "continue it with --resume", which then found nothing to
// resume; a completed checkpoint.new/ damaged since (its COMPLETE there,
// a file gone) was removed by train --resume, and its refusal named
// checkpoint/ alone.
func TestDamagedCheckpointsNamedNotRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "200", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := os.Remove(filepath.Join(dir, "checkpoint", "state.npz")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--iterations", "200", "--quiet", "--out", dir); code == 0 || !strings.Contains(stderr, "no checkpoint of it can be resumed from") || strings.Contains(stderr, "continue it with --resume") {
		t.Errorf("a new start: exit %d, %s", code, stderr)
	}
	// Round 126 B1: the damaged checkpoint as checkpoint.new/ (its COMPLETE
	// there) was "a run that stopped before its first checkpoint".
	if err := os.Rename(filepath.Join(dir, "checkpoint"), filepath.Join(dir, "checkpoint.new")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--iterations", "200", "--quiet", "--out", dir); code == 0 || !strings.Contains(stderr, "no checkpoint of it can be resumed from") || strings.Contains(stderr, "before its first checkpoint") {
		t.Errorf("a new start, checkpoint.new/ damaged: exit %d, %s", code, stderr)
	}

	run := finishedULARun(t, t.TempDir(), "run", "1")
	if out, err := exec.Command("cp", "-a", filepath.Join(run, "checkpoint"), filepath.Join(run, "checkpoint.new")).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	os.Remove(filepath.Join(run, "checkpoint.new", "state.npz"))
	os.Remove(filepath.Join(run, "checkpoint", "COMPLETE"))
	if _, stderr, code := runCLI("train", "--resume", run); code == 0 || !strings.Contains(stderr, "checkpoint.new/ is incomplete (state.npz") || !exists(filepath.Join(run, "checkpoint.new", "COMPLETE")) {
		t.Errorf("--resume: exit %d, %s", code, stderr)
	}
}

// Round 126 A1, A3, A5: chains falling from 191 above the lowest energy
// over the first sixth of 3000 draws (short of 10⁴, and not falling after)
// were said nothing of; ULA's chains that stepped out of a support during
// the warm-up were told to start inside it; chains on a plateau below
// 50 + 5·d above the others (but above the typical band) were said
// nothing of.
func TestShortTransientsAndLowPlateaus(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	far := filepath.Join(dir, "f.npy")
	if err := npy.WriteFile(far, &npy.Array{Shape: []int{1, 2}, Data: []float64{20, 20}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--starts", far, "--steps", "3000", "--warmup", "0", "--chains", "4", "--out", filepath.Join(dir, "s.npy"))
	if code != 0 || !strings.Contains(stderr, "chains 0, 1, 2, 3 (of 4") || !strings.Contains(stderr, "came down, into the band") {
		t.Errorf("a short transient: exit %d, %s", code, stderr)
	}
	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "gamma_plateau_energy.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	low := filepath.Join(filepath.Dir(model), "gamma_low_plateau_energy.onnx") // 30 outside the support
	half := filepath.Join(dir, "half.npy")
	if err := npy.WriteFile(half, &npy.Array{Shape: []int{4, 1}, Data: []float64{2, 2, -5, -5}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI("sample", "--model", low, "--sampler", "mala", "--starts", half, "--steps", "300", "--warmup", "0", "--chains", "4", "--out", filepath.Join(dir, "lp.npy"))
	if code != 0 || !strings.Contains(stderr, "chains 2, 3 (of 4") || !strings.Contains(stderr, "a plateau") || !strings.Contains(stderr, "only by a random walk's chance") { // round 127 A2: "does not move them", and they came back
		t.Errorf("a low plateau: exit %d, %s", code, stderr)
	}
	outside := filepath.Join(dir, "out.npy")
	if err := npy.WriteFile(outside, &npy.Array{Shape: []int{1, 1}, Data: []float64{-5}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI("sample", "--model", model, "--sampler", "ula", "--starts", outside, "--steps", "200", "--warmup", "0", "--chains", "4", "--out", filepath.Join(dir, "u.npy"))
	if code != 0 || !strings.Contains(stderr, "at every draw looked at of every chain") || !strings.Contains(stderr, "ULA has no accept step, so its chains step out of a support as readily as into it") {
		t.Errorf("ula on a plateau: exit %d, %s", code, stderr)
	}
}

// Round 126 B3: an energy without a gradient with respect to its input
// was refused with Gorgonia's "Non Differentiable WRTs: map[…]" and the
// advice to give --starts (or, given, to move that point), which no start
// helps; the way on is to write the energy so that it depends on x.
func TestNoGradientNoStartsAdvice(t *testing.T) {
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "isnan_energy.onnx")
	dir := t.TempDir()
	starts := filepath.Join(dir, "s.npy")
	if err := npy.WriteFile(starts, &npy.Array{Shape: []int{1, 2}, Data: []float64{0.5, 0.5}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--starts", starts}} {
		_, stderr, code := runCLI(append([]string{"sample", "--model", model, "--chains", "4", "--steps", "10", "--out", filepath.Join(dir, "a.npy")}, args...)...)
		if code == 0 || !strings.Contains(stderr, "no gradient with respect to its input") || strings.Contains(stderr, "move that point") || strings.Contains(stderr, "give --starts FILE") || strings.Contains(stderr, "Non Differentiable") || !strings.Contains(stderr, "0 * x.sum(1)") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}

// Round 126 B5: the same sample command run again beside a damaged
// checkpoint was told to continue it with --resume, which then refused it
// (CRC): the damage and the way on (--force) are said at once.
func TestDamagedSampleCheckpointNotResumable(t *testing.T) {
	dir, ck, args := sampledWithCheckpoint(t)
	flipMemberBytes(t, ck, "", 130, 150) // its first member's values, past the .npy header
	_, stderr, code := runCLI(append(args, "--out", filepath.Join(dir, "b.npy"))...)
	if code != 2 || !strings.Contains(stderr, "damaged, which cannot be continued") || strings.Contains(stderr, "continue it with flowebm sample --resume") || !strings.Contains(stderr, "this command with --force starts the run afresh") { // round 127 B2: the recorded command named another run's files
		t.Errorf("exit %d: %s", code, stderr)
	}
	// Round 127 B1: --resume of it, its --out written, said "--out exists
	// … add --force", which then met the damage.
	_, stderr, code = runCLI("sample", "--resume", ck)
	if code != 2 || !strings.Contains(stderr, "CRC-32") || strings.Contains(stderr, "exists") {
		t.Errorf("--resume: exit %d: %s", code, stderr)
	}
}

// Round 127 B3: sample --out onto the data file of the --model run, with
// --force, replaced it: the run's plot and --resume then refused it.
func TestOutNotTheModelRunsData(t *testing.T) {
	dir := t.TempDir()
	data := normalArray(t, filepath.Join(dir, "d.npy"), 1, 400, 2)
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--data", data, "--algorithm", "ula", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	before := mustRead(t, data)
	_, stderr, code := runCLI("sample", "--model", run, "--chains", "4", "--steps", "10", "--out", data, "--force")
	if code != 2 || !strings.Contains(stderr, "is the data file (data.file) of the run") || !bytes.Equal(mustRead(t, data), before) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// Round 128 A1: a copy of the run's checkpoint as --model let it through.
	ck := filepath.Join(dir, "ck")
	if out, err := exec.Command("cp", "-a", filepath.Join(run, "checkpoint"), ck).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	_, stderr, code = runCLI("energy", "--model", ck, "--points", normalArray(t, filepath.Join(dir, "p.npy"), 2, 3, 2), "--out", data, "--force")
	if code != 2 || !strings.Contains(stderr, "is the data file (data.file) of the checkpoint") || !bytes.Equal(mustRead(t, data), before) {
		t.Errorf("a copy of the checkpoint: exit %d: %s", code, stderr)
	}
}

// Round 128 A5: a sample checkpoint whose meta.npy is damaged: --resume
// gave the CRC error alone, a new start beside it "exists … --force"
// without the damage.
func TestSampleCheckpointMetaDamaged(t *testing.T) {
	dir, ck, args := sampledWithCheckpoint(t)
	flipMemberBytes(t, ck, "meta.npy", 200, 201)
	if _, stderr, code := runCLI("sample", "--resume", ck); code != 2 || !strings.Contains(stderr, "the checkpoint is damaged, and the run cannot be continued from it") {
		t.Errorf("--resume: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(append(args, "--out", filepath.Join(dir, "b.npy"))...); code != 2 || !strings.Contains(stderr, "damaged, which cannot be continued") {
		t.Errorf("a new start: exit %d: %s", code, stderr)
	}
}

// Round 128 A6: data.modes removed from config.json between resumes:
// "checkpoint/evals.csv: header: 22 columns, want 16", the checkpoint
// blamed. It is named as the edit it is.
func TestModesRemovedIsAnEdit(t *testing.T) {
	dir := t.TempDir()
	data := normalArray(t, filepath.Join(dir, "d.npy"), 1, 400, 2)
	modes := filepath.Join(dir, "m.npy")
	if err := npy.WriteFile(modes, &npy.Array{Shape: []int{2, 2}, Data: []float64{-1, 0, 1, 0}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--data", data, "--modes", modes, "--algorithm", "ula", "--iterations", "3", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	path := filepath.Join(run, "config.json")
	var cfg map[string]any
	if err := json.Unmarshal(mustRead(t, path), &cfg); err != nil {
		t.Fatal(err)
	}
	d := cfg["data"].(map[string]any)
	delete(d, "modes")
	delete(d, "modes_sha256")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--resume", run); code == 0 || !strings.Contains(stderr, `field "data.modes" is absent`) || strings.Contains(stderr, "columns") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Round 129 A1, A3: a sample checkpoint whose meta.npy was cut with its
// CRC whole got the low-level cause alone (--resume) or "exists … --force"
// (a new start); chains that started 9 to 60 above the lowest energy and
// were in the typical band from their second draw on were "not yet
// settled".
func TestCutMetaAndQuickArrival(t *testing.T) {
	dir, ck, args := sampledWithCheckpoint(t)
	zr, err := zip.OpenReader(ck)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.npz")
	out, err := os.Create(cut)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if f.Name == "meta.npy" {
			b = b[:len(b)/2]
		}
		w, _ := zw.Create(f.Name)
		w.Write(b)
	}
	zr.Close()
	zw.Close()
	out.Close()
	if _, stderr, code := runCLI("sample", "--resume", cut, "--out", filepath.Join(dir, "r.npy")); code != 2 || !strings.Contains(stderr, "the checkpoint is damaged") {
		t.Errorf("--resume: exit %d: %s", code, stderr)
	}
	args[len(args)-1] = cut // --checkpoint's value
	if _, stderr, code := runCLI(append(args, "--out", filepath.Join(dir, "n.npy"))...); code != 2 || !strings.Contains(stderr, "damaged, which cannot be continued") {
		t.Errorf("a new start: exit %d: %s", code, stderr)
	}

	run := finishedULARun(t, dir, "run", "1")
	starts := filepath.Join(dir, "s.npy")
	if err := npy.WriteFile(starts, &npy.Array{Shape: []int{1, 2}, Data: []float64{6, 6}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--step", "0.8", "--starts", starts, "--steps", "8", "--warmup", "0", "--chains", "4", "--seed", "2", "--out", filepath.Join(dir, "q.npy"))
	if code != 0 || strings.Contains(stderr, "not yet settled") {
		t.Errorf("a quick arrival: exit %d: %s", code, stderr)
	}
}

// flipMemberBytes inverts bytes from..to (offsets into its stored data) of
// the member name ("": the first) of the zip archive at path, in place,
// leaving its CRC as it was: a member damaged after it was written.
func flipMemberBytes(t *testing.T, path, name string, from, to int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range zr.File {
		if f.Name != name && (name != "" || i > 0) {
			continue
		}
		off, err := f.DataOffset()
		if err != nil || uint64(to) > f.CompressedSize64 {
			t.Fatalf("member %s: %v, %d bytes", f.Name, err, f.CompressedSize64)
		}
		for k := off + from; k < off+to; k++ {
			b[k] ^= 0xff
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s has no member %q", path, name)
}

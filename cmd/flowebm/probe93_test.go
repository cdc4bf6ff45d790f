package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/io/npy"
)

// Round 89 A4: --print-config on a data set with fewer training rows than
// the batch size refused to print, leaving no configuration to edit. It
// prints the configuration with a note that the run would be refused, and
// the printed file with train.batch_size lowered trains.
func TestPrintConfigOfSmallData(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.csv")
	var b strings.Builder
	for i := range 12 {
		b.WriteString(ftoa(float64(i%5)) + "," + ftoa(float64(i*i%7)) + "\n")
	}
	if err := os.WriteFile(small, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI("train", "--data", small, "--iterations", "3", "--print-config")
	if code != 0 || !strings.Contains(stderr, "as printed, the run would be refused: "+small+": 11 training rows (after holding out 1), fewer than the batch size 64") || !strings.Contains(stdout, `"batch_size": 64`) {
		t.Fatalf("exit %d, stdout %.300s, stderr %s", code, stdout, stderr)
	}
	cfg := filepath.Join(dir, "c.json")
	if err := os.WriteFile(cfg, []byte(strings.Replace(stdout, `"batch_size": 64`, `"batch_size": 8`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "r")
	if _, stderr, code := runCLI("train", "--config", cfg, "--quiet", "--out", run); code != 0 || !exists(filepath.Join(run, "metrics.json")) {
		t.Errorf("the edited configuration: exit %d, %s", code, stderr)
	}
	// The refusal of a run is unchanged.
	if _, stderr, code := runCLI("train", "--data", small, "--iterations", "3", "--quiet", "--out", filepath.Join(dir, "r2")); code != 2 || !strings.Contains(stderr, "fewer than the batch size 64") {
		t.Errorf("the run: exit %d, %s", code, stderr)
	}
}

// Round 92 B2: a --seeds set run again with another --plot-format passed
// over its finished seeds, their figures left in the old format unsaid.
// The line says so with the command that draws them; once drawn, or
// without the flag, it says nothing more.
func TestSeedsOtherPlotFormatSaid(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	if _, stderr, code := runCLI("train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	s1 := filepath.Join(out, "s1")
	stdout, stderr, code := runCLI("train", "--seeds", "1,2", "--iterations", "2", "--quiet", "--plot-format", "svg", "--out", out)
	want := "seed 1: already trained in " + s1 + " (its figures are not in svg: flowebm plot " + s1 + " --plot-format svg draws them)"
	if code != 0 || !strings.Contains(stdout, want) || !exists(filepath.Join(out, "s2", "density.svg")) {
		t.Fatalf("exit %d, %s%s; want %q", code, stdout, stderr, want)
	}
	if _, stderr, code := runCLI("plot", s1, "--plot-format", "svg"); code != 0 || !exists(filepath.Join(s1, "density.svg")) {
		t.Fatalf("the advised command: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{{"--plot-format", "svg"}, nil} {
		stdout, stderr, code := runCLI(append([]string{"train", "--seeds", "1,2", "--iterations", "2", "--quiet", "--out", out}, args...)...)
		if code != 0 || strings.Count(stdout, "already trained") != 2 || strings.Contains(stdout, "its figures") {
			t.Errorf("%v: exit %d, %s%s", args, code, stdout, stderr)
		}
	}
}

// Round 93 B1: an unknown plot_format in an interrupted run's config.json,
// the refusal's --plot-format followed: the run drew pdf but config.json
// kept the unknown format, and every later --resume was refused. It
// records the format given; a finished run's refusal gives the ways that
// work for it (restoring the copy, flowebm plot), not --plot-format.
func TestPlotFormatAdviceRecorded(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "r")
	if code, stderr := outputsChild(t, "train-outputs", "KILL", "train", "--iterations", "4", "--plot-format", "svg", "--quiet", "--out", run); code != -1 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	cfg := filepath.Join(run, "config.json")
	setFormat := func(from, to string) {
		b, _ := os.ReadFile(cfg)
		if !strings.Contains(string(b), `"plot_format": "`+from+`"`) {
			t.Fatalf("config.json: %s", b)
		}
		os.WriteFile(cfg, []byte(strings.Replace(string(b), `"plot_format": "`+from+`"`, `"plot_format": "`+to+`"`, 1)), 0o644)
	}
	setFormat("svg", "gif")
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet", "--plot-format", "pdf"); code != 0 || !exists(filepath.Join(run, "density.pdf")) {
		t.Fatalf("--plot-format pdf: exit %d, %s", code, stderr)
	}
	stdout, stderr, code := runCLI("train", "--resume", run, "--quiet")
	if code != 0 || !strings.Contains(stdout, "has finished its 4 iterations and written its outputs: nothing to do") {
		t.Errorf("resumed again: exit %d, %s%s", code, stdout, stderr)
	}
	setFormat("pdf", "gif")
	_, stderr, code = runCLI("train", "--resume", run, "--quiet")
	if code != 2 || !strings.Contains(stderr, `plot format "gif", want png, svg or pdf: cp `) || !strings.Contains(stderr, "(the run is finished: flowebm plot "+run+" --plot-format FORMAT draws its figures)") {
		t.Fatalf("finished: exit %d, %s", code, stderr)
	}
	saved, err := os.ReadFile(filepath.Join(run, "checkpoint", "run-config.json"))
	if err != nil || os.WriteFile(cfg, saved, 0o644) != nil {
		t.Fatal("restoring config.json", err)
	}
	// The copy records svg, in which the run has no figure: drawn (round
	// 97 B1), then nothing to do.
	if stdout, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !strings.Contains(stdout, "redrew its figures ("+filepath.Join(run, "density.svg")+" is missing") || !exists(filepath.Join(run, "density.svg")) {
		t.Errorf("restored: exit %d, %s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !strings.Contains(stdout, "nothing to do") {
		t.Errorf("restored, again: exit %d, %s%s", code, stdout, stderr)
	}
}

// Round 94 B1, B2: a finished run's damaged metrics.csv (a garbage row)
// stopped reproduce with the csv reader's error alone; a damaged
// metrics.json was reported unreadable without a way on. The first names
// the checkpoint's evals.csv to restore it, the second train --resume
// (which writes it again); both ways, followed, work.
func TestDamagedRunOutputsWayOn(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "nt", "--iterations", "4", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-nt")
	csvPath, jsonPath := filepath.Join(run, "metrics.csv"), filepath.Join(run, "metrics.json")
	good, _ := os.ReadFile(csvPath)
	os.WriteFile(csvPath, append(append([]byte{}, good...), "garbage\n"...), 0o644)
	// Since session 44, reproduce writes it again itself (through train
	// --resume), as it does a cut metrics.json; --report names the cp.
	want := "cp " + filepath.Join(run, "checkpoint", "evals.csv") + " " + csvPath + " restores them"
	if _, stderr, code := runCLI("reproduce", "--report", out); code == 0 || !strings.Contains(stderr, "metrics.csv: line 6 has 1 field, want 22") || !strings.Contains(stderr, want) {
		t.Fatalf("--report, garbage row: exit %d, %s", code, stderr)
	}
	if stdout, stderr, code := runCLI(args...); code != 0 || !strings.Contains(stdout, "two-modes-nt: already done; its damaged outputs written again from its final checkpoint: "+csvPath+": line 6 has 1 field, want 22") {
		t.Fatalf("garbage row: exit %d, %s%s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(csvPath); !bytes.Equal(got, good) {
		t.Fatalf("metrics.csv written again as %q, was %q", got, good)
	}
	// Since round 99 B1, reproduce writes a cut metrics.json again itself
	// (through train --resume); --report, which trains nothing, names the
	// way, which followed works.
	js, _ := os.ReadFile(jsonPath)
	os.WriteFile(jsonPath, js[:100], 0o644)
	if stdout, stderr, code := runCLI(args...); code != 0 || !strings.Contains(stdout, "two-modes-nt: already done; its damaged outputs written again from its final checkpoint: "+jsonPath) {
		t.Fatalf("cut metrics.json: exit %d, %s%s", code, stdout, stderr)
	}
	os.WriteFile(jsonPath, js[:100], 0o644)
	want = "; flowebm train --resume " + run + " writes it again from the run's last checkpoint"
	if _, stderr, code := runCLI("reproduce", "--report", out); code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("--report, cut metrics.json: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !exists(jsonPath) {
		t.Fatalf("train --resume: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 0 {
		t.Errorf("after: exit %d, %s", code, stderr)
	}
}

// Round 94 B3: a reproduce folder holding a stray run beside runs/ was
// refused with "give a folder of its own", which would train every run
// again elsewhere; moving the stray run out, as it now says, continues.
func TestReproduceFolderWithStrayRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "2", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	stray := filepath.Join(out, "x")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", stray); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "is an earlier reproduce's folder, but it also holds the runs x, outside its runs/: move them out of it") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	os.Rename(stray, filepath.Join(filepath.Dir(out), "x"))
	if stdout, stderr, code := runCLI(args...); code != 0 || !strings.Contains(stdout, "already done") {
		t.Errorf("moved out: exit %d, %s%s", code, stdout, stderr)
	}
}

// Round 94 B4: plot A MISSING C drew A, failed on MISSING and never drew
// C, unsaid. Every run is drawn that can be; the failures are named.
func TestPlotDrawsEveryRun(t *testing.T) {
	dir := t.TempDir()
	a, c := filepath.Join(dir, "a"), filepath.Join(dir, "c")
	for _, r := range []string{a, c} {
		if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", r); code != 0 {
			t.Fatal(stderr)
		}
	}
	missing := filepath.Join(dir, "nonexist")
	stdout, stderr, code := runCLI("plot", a, missing, c, "--plot-format", "svg")
	if code != 2 || !exists(filepath.Join(a, "density.svg")) || !exists(filepath.Join(c, "density.svg")) ||
		!strings.Contains(stdout, "redrew the svg figures of "+c) || !strings.Contains(stderr, missing+" does not exist") || !strings.Contains(stderr, "1 of 3 runs not drawn (each said why above): "+missing) {
		t.Errorf("exit %d, %s%s", code, stdout, stderr)
	}
}

// Round 95 B1: another run's checkpoint/run-config.json in a run was
// blamed on its config.json, and the advice (restore config.json from
// the copy) replaced the run's configuration with the other run's. The
// copy is checked against the checkpoint's manifest first: it is named,
// with the restore from config.json, whose bytes the manifest records;
// followed, the run resumes with its own configuration.
func TestChangedConfigCopyNamed(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if _, stderr, code := runCLI("train", "--iterations", "3", "--quiet", "--out", a); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("train", "--iterations", "3", "--seed", "2", "--algorithm", "ula", "--quiet", "--out", b); code != 0 {
		t.Fatal(stderr)
	}
	cfg, copyPath := filepath.Join(a, "config.json"), filepath.Join(a, "checkpoint", "run-config.json")
	own, _ := os.ReadFile(cfg)
	other, _ := os.ReadFile(filepath.Join(b, "checkpoint", "run-config.json"))
	os.WriteFile(copyPath, other, 0o644)
	_, stderr, code := runCLI("train", "--resume", a, "--quiet")
	want := copyPath + " does not match the SHA-256 that " + filepath.Join(a, "checkpoint", "COMPLETE") + " records for it"
	if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "cp "+cfg+" "+copyPath+" restores the copy") || strings.Contains(stderr, "cp "+copyPath+" "+cfg) ||
		!strings.Contains(stderr, "restored, the run resumes (started again with --force, it would be lost)") || strings.Contains(stderr, "--force on the command line") { // round 96 B3: --force advised beside it
		t.Fatalf("exit %d, %s", code, stderr)
	}
	os.WriteFile(copyPath, own, 0o644) // the advice
	if stdout, stderr, code := runCLI("train", "--resume", a, "--quiet"); code != 0 || !strings.Contains(stdout, "nothing to do") {
		t.Errorf("restored: exit %d, %s%s", code, stdout, stderr)
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(own) {
		t.Error("config.json changed")
	}
}

// Round 95 A3: unit-spread data 1.4e4 from the origin, trained with
// --standardize none, diverged at iteration 16 with "start it again with
// other settings", naming none. The run says before training how far the
// data lie from the origin and which setting centres them, and the
// divergence names it.
func TestUncenteredDataNamed(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(95, 3))
	x := make([]float64, 0, 4000)
	for range 2000 {
		x = append(x, 1e4+3*float64(rng.IntN(2))+0.5*rng.NormFloat64(), -1e4+0.5*rng.NormFloat64())
	}
	path := filepath.Join(dir, "far.npy")
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{2000, 2}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI("train", "--data", path, "--standardize", "none", "--iterations", "60", "--quiet", "--out", filepath.Join(dir, "r"))
	if !strings.Contains(stdout, "--standardize none leaves the data") || !strings.Contains(stdout, "standard deviations from the origin, where the models' Gaussian bases are centred: training may diverge; --standardize dimension (the default) or global centres them") {
		t.Errorf("no note: exit %d, %s", code, stderr)
	}
	if code != 0 && !strings.Contains(stderr, `(the data are unscaled, data.standardize "none": --standardize dimension, the default, or global centres them on the origin`) {
		t.Errorf("divergence without the setting: exit %d, %s", code, stderr)
	}
	if stdout, stderr, code := runCLI("train", "--data", path, "--iterations", "2", "--quiet", "--out", filepath.Join(dir, "r2")); code != 0 || strings.Contains(stdout+stderr, "from the origin") {
		t.Errorf("standardised: exit %d, %s", code, stderr)
	}
}

// Round 95 B2, B3, B8: another run's metrics.json (seed 2 in a seed 1
// run) or metrics.csv was reported as the run's by reproduce --report and
// compare; another run's config.json in an unfinished run of a reproduce
// was to be "moved away". The seed (and length, algorithm) of
// metrics.json is checked against config.json, metrics.csv against the
// checkpoint's evaluations (its first rows), config.json against the
// checkpoint's copy, each with the way to restore the run's own.
func TestOtherRunsFilesRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	other := filepath.Join(dir, "o")
	if _, stderr, code := runCLI("train", "--iterations", "3", "--seed", "2", "--algorithm", "ula", "--quiet", "--out", other); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-ula")
	swap := func(name string) func() {
		own, _ := os.ReadFile(filepath.Join(run, name))
		theirs, _ := os.ReadFile(filepath.Join(other, name))
		os.WriteFile(filepath.Join(run, name), theirs, 0o644)
		return func() { os.WriteFile(filepath.Join(run, name), own, 0o644) }
	}
	undo := swap("metrics.json")
	if _, stderr, code := runCLI("reproduce", "--report", out); code == 0 || !strings.Contains(stderr, `metrics.json: field "seed" is 2, but the run's config.json has seed 1`) {
		t.Errorf("metrics.json: exit %d, %s", code, stderr)
	}
	if _, stderr, _ := runCLI("compare", run, "--out", filepath.Join(dir, "c1")); !strings.Contains(stderr, "metrics.json is of seed 2, ula, 3 iterations, but the run's config.json has seed 1, ula, 3") {
		t.Errorf("compare, metrics.json: %s", stderr)
	}
	undo()
	undo = swap("metrics.csv")
	want := "metrics.csv is not this run's: its rows are not those of the run's last checkpoint"
	if _, stderr, code := runCLI("reproduce", "--report", out); code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("metrics.csv: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c2")); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("compare, metrics.csv: exit %d, %s", code, stderr)
	}
	undo()
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 0 {
		t.Errorf("restored: exit %d, %s", code, stderr)
	}
	swap("config.json")
	if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, "cp "+filepath.Join(run, "checkpoint", "run-config.json")+" "+filepath.Join(run, "config.json")+" restores it") {
		t.Errorf("config.json: exit %d, %s", code, stderr)
	}
}

// Round 95 B4: train --resume of a finished run whose samples.npy was
// truncated and metrics.json garbled said "nothing to do" and left them.
// It says which is damaged and writes the outputs again from the final
// checkpoint: samples.npy as it was.
func TestResumeRewritesDamagedOutputs(t *testing.T) {
	run := filepath.Join(t.TempDir(), "z")
	if _, stderr, code := runCLI("train", "--iterations", "3", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	samples := filepath.Join(run, "samples.npy")
	good, _ := os.ReadFile(samples)
	os.WriteFile(samples, good[:1000], 0o644)
	os.WriteFile(filepath.Join(run, "metrics.json"), []byte("x"), 0o644)
	_, stderr, code := runCLI("train", "--resume", run, "--quiet")
	if now, _ := os.ReadFile(samples); code != 0 || string(now) != string(good) || !strings.Contains(stderr, "the run's outputs are written again from its final checkpoint") {
		t.Fatalf("exit %d, samples.npy restored %v, %s", code, string(now) == string(good), stderr)
	}
	if stdout, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !strings.Contains(stdout, "nothing to do") {
		t.Errorf("again: exit %d, %s%s", code, stdout, stderr)
	}
}

// Round 95 B6: a --seeds set whose interrupted seed has a damaged
// checkpoint named the seed's folder by the process's handle on it,
// /proc/self/fd/9. It names sdv/s1.
func TestSeedsDamagedCheckpointNamed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	args := []string{"train", "--seeds", "1,2", "--iterations", "3", "--quiet", "--out", out}
	if code, stderr := outputsChild(t, "train-outputs", "KILL", args...); code != -1 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	w := filepath.Join(out, "s1", "checkpoint", "weights.npz")
	b, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 4
	os.WriteFile(w, b, 0o644)
	_, stderr, code := runCLI(args...)
	if code != 2 || strings.Contains(stderr, "/proc/self/fd") || !strings.Contains(stderr, w+" does not match the SHA-256") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 95 B7: convert exported a run's checkpoint folder without its
// COMPLETE marker (and with another run's model files in it) silently. A
// run's checkpoint without the marker is refused, the run folder advised.
func TestConvertRefusesUnmarkedRunCheckpoint(t *testing.T) {
	run := trainedRun(t)
	dir := t.TempDir()
	copyRun := filepath.Join(dir, "z")
	if err := os.CopyFS(copyRun, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(copyRun, ".lock"))
	if err := os.Remove(filepath.Join(copyRun, "checkpoint", "COMPLETE")); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(copyRun, "checkpoint")
	_, stderr, code := runCLI("convert", ck, filepath.Join(dir, "m.onnx"))
	if code != 2 || !strings.Contains(stderr, ck+" is incomplete: it lacks COMPLETE") || exists(filepath.Join(dir, "m.onnx")) {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 95 B9, B10: train --seeds again over a seed whose metrics.json was
// cut said only "unexpected end of JSON input"; a seeds.json that is a
// folder gave a raw rename error after the runs. The first is written
// again from the seed's final checkpoint, as train --resume does (since
// round 97 B1, --seeds passes over a finished seed through it; round 95
// named train --resume), the second is refused up front.
func TestSeedsDamagedSummaryInputs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	args := []string{"train", "--seeds", "1,2", "--iterations", "2", "--quiet", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	s2 := filepath.Join(out, "s2")
	m := filepath.Join(s2, "metrics.json")
	b, _ := os.ReadFile(m)
	os.WriteFile(m, b[:len(b)/2], 0o644)
	if _, stderr, code := runCLI(args...); code != 0 || !strings.Contains(stderr, "note: "+m+": the file ends at line") || !strings.Contains(stderr, "the run's outputs are written again from its final checkpoint") {
		t.Fatalf("cut metrics.json: exit %d, %s", code, stderr)
	}
	if got, err := os.ReadFile(m); err != nil || !json.Valid(got) {
		t.Fatalf("metrics.json written again: %v, %.100s", err, got)
	}
	summary := filepath.Join(out, "seeds.json")
	os.Remove(summary)
	os.Mkdir(summary, 0o755)
	if _, stderr, code := runCLI(args...); code != 2 || !strings.Contains(stderr, summary+" is a folder, want a regular file: train --seeds writes its summary there: move it away") {
		t.Errorf("folder: exit %d, %s", code, stderr)
	}
}

// Round 95 B5: a reproduce run whose only checkpoint is damaged recorded
// train's "start the run again (with --force on the command line)",
// which reproduce --force does not do. It says to move the run away (or
// train it with --force) and reproduce again; followed, it trains.
func TestReproduceNothingToResumeAdvice(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-ula")
	for _, f := range []string{"metrics.json", "metrics.csv", "samples.npy"} { // unfinished, as a killed run
		os.Remove(filepath.Join(run, f))
	}
	st := filepath.Join(run, "checkpoint", "state.json")
	b, _ := os.ReadFile(st)
	b[len(b)/2] ^= 4
	os.WriteFile(st, b, 0o644)
	stdout, _, _ := runCLI(args...)
	if !strings.Contains(stdout, "two-modes-ula: FAILED (the next reproduce retries it once its folder is moved away)") { // round 104 B3: "retried by the next reproduce", which failed alike
		t.Errorf("status: %s", stdout)
	}
	msg, _ := os.ReadFile(filepath.Join(run, "error.txt"))
	if !strings.Contains(string(msg), "; nothing to resume: move "+run+" away (or give flowebm train --force the run's flags), then give the same reproduce command again") || strings.Contains(string(msg), "--force on the command line") {
		t.Fatalf("error.txt: %s", msg)
	}
	if err := os.Rename(run, run+".damaged"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Errorf("after the advice: exit %d, %s", code, stderr)
	}
}

// Round 95 B11: an unfinished run's config.json replaced by a dangling
// link (or a folder) was refused with "no such file" alone. It says what
// the file is and how to restore the run's configuration; followed, the
// run resumes.
func TestConfigNotAFileRestorable(t *testing.T) {
	run := filepath.Join(t.TempDir(), "u")
	if code, stderr := outputsChild(t, "train-outputs", "KILL", "train", "--iterations", "3", "--quiet", "--out", run); code != -1 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	cfg := filepath.Join(run, "config.json")
	for _, c := range []struct {
		make func()
		want string
	}{
		{func() { os.Symlink("/nonexistent/x", cfg) }, cfg + " is a link to /nonexistent/x, which does not exist: move it away; the run's checkpoint holds a copy of its configuration: cp "},
		{func() { os.Mkdir(cfg, 0o755) }, cfg + " is a folder, want a regular file: move it away; "},
	} {
		saved, _ := os.ReadFile(cfg)
		os.Remove(cfg)
		c.make()
		if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("exit %d, %s; want %q", code, stderr, c.want)
		}
		os.Remove(cfg)
		os.WriteFile(cfg, saved, 0o644)
	}
	copied, _ := os.ReadFile(filepath.Join(run, "checkpoint", "run-config.json"))
	os.WriteFile(cfg, copied, 0o644)
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 {
		t.Errorf("restored: exit %d, %s", code, stderr)
	}
}

// Round 96 A2: where the importance-sampling log Z was flagged unreliable
// (ESS below 1%), the held-out log-likelihood printed was its alone
// (164,098 beside a grid's −3.73); the grid's is printed beside it. A
// reliable estimate within its errors gets none.
func TestGridHeldOutLLWhereISUnreliable(t *testing.T) {
	unreliable := metrics.LogZEstimate{LogZ: 20, SE: 0.1, ESS: 0.001}
	if got := gridLogZNote(unreliable, 199636.32, 0.01, 164098.3); !strings.Contains(got, "; by grid quadrature 199636.320: with it the held-out log-likelihood is -35518.020") {
		t.Errorf("unreliable: %q", got)
	}
	reliable := metrics.LogZEstimate{LogZ: 2, SE: 0.1, ESS: 0.5}
	if got := gridLogZNote(reliable, 2.05, 0.01, -1); got != "; by grid quadrature 2.050" {
		t.Errorf("reliable: %q", got)
	}
}

// Round 96 B1, B2: train --resume of a finished run holding another run's
// metrics.json and samples.npy said "nothing to do" and kept them, and the
// --seeds advice (train --resume) looped. They are taken for damage and
// written again from the final checkpoint: the run's own, byte for byte
// (metrics.json but for its measured seconds).
func TestResumeReplacesOtherRunsOutputs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for i, r := range []string{a, b} {
		if _, stderr, code := runCLI("train", "--iterations", "3", "--seed", ftoa(float64(i+1)), "--quiet", "--out", r); code != 0 {
			t.Fatal(stderr)
		}
	}
	own, _ := os.ReadFile(filepath.Join(a, "samples.npy"))
	for _, f := range []string{"metrics.json", "samples.npy"} {
		theirs, _ := os.ReadFile(filepath.Join(b, f))
		os.WriteFile(filepath.Join(a, f), theirs, 0o644)
	}
	_, stderr, code := runCLI("train", "--resume", a, "--quiet")
	if now, _ := os.ReadFile(filepath.Join(a, "samples.npy")); code != 0 || string(now) != string(own) || !strings.Contains(stderr, "metrics.json is of seed 2, flowmc, 3 iterations, but the run is of seed 1") {
		t.Fatalf("exit %d, samples restored %v, %s", code, string(now) == string(own), stderr)
	}
	theirs, _ := os.ReadFile(filepath.Join(b, "samples.npy"))
	os.WriteFile(filepath.Join(a, "samples.npy"), theirs, 0o644)
	if _, stderr, code := runCLI("train", "--resume", a, "--quiet"); code != 0 || !strings.Contains(stderr, "samples.npy differs from the run's final chains") {
		t.Errorf("samples.npy alone: exit %d, %s", code, stderr)
	}
}

// Round 96 B4: plot of a run whose config.json is a dangling link advised
// a cp that fails on it; one whose config.json is a folder was "not a run
// folder". Both say what the file is, to move it away, and the restore.
func TestPlotConfigNotAFile(t *testing.T) {
	run := trainedRun(t)
	dir := filepath.Join(t.TempDir(), "c")
	if err := os.CopyFS(dir, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, ".lock"))
	cfg := filepath.Join(dir, "config.json")
	for _, c := range []struct {
		make func()
		want string
	}{
		{func() { os.Symlink("/nonexistent", cfg) }, cfg + " is a link to /nonexistent, which does not exist: move it away; the run's checkpoint holds a copy of its configuration: cp "},
		{func() { os.Mkdir(cfg, 0o755) }, cfg + " is a folder, want a regular file: move it away; "},
	} {
		os.RemoveAll(cfg)
		c.make()
		if _, stderr, code := runCLI("plot", dir); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("exit %d, %s; want %q", code, stderr, c.want)
		}
	}
}

// Round 97 A1: compare's summary.md and seeds.json gave the held-out
// log-likelihood by importance sampling alone where train printed the
// grid's beside it (15 nats apart). summary.md adds the grid's where the
// IS estimate is unreliable or more than 3 standard errors from the
// grid's log Z; seeds.json summarises grid_held_out_ll too.
func TestGridHeldOutLLInSummaries(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.csv")
	var b strings.Builder
	rng := rand.New(rand.NewPCG(97, 1))
	for range 300 {
		b.WriteString(ftoa(rng.NormFloat64()) + "," + ftoa(rng.NormFloat64()) + "\n")
	}
	os.WriteFile(data, []byte(b.String()), 0o644)
	sd := filepath.Join(dir, "sd")
	if _, stderr, code := runCLI("train", "--data", data, "--seeds", "1,2", "--iterations", "2", "--quiet", "--out", sd); code != 0 {
		t.Fatal(stderr)
	}
	var sum struct {
		Summary map[string]struct{ Mean float64 } `json:"summary"`
	}
	if b, err := os.ReadFile(filepath.Join(sd, "seeds.json")); err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatal("seeds.json", err)
	}
	if _, ok := sum.Summary["grid_held_out_ll"]; !ok {
		t.Errorf("seeds.json summary %v: no grid_held_out_ll", sum.Summary)
	}
	run := filepath.Join(sd, "s1")
	var m map[string]any
	if b, err := os.ReadFile(filepath.Join(run, "metrics.json")); err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatal("metrics.json", err)
	}
	z := m["final"].(map[string]any)["log_z"].(map[string]any)["log_z"].(float64)
	ll := m["final"].(map[string]any)["held_out_ll"].(float64)
	m["grid_log_z"], m["grid_held_out_ll"] = z+10, ll+z-(z+10) // 10 nats from the IS estimate, the two fields consistent (since round 104 an inconsistent pair is refused)
	if err := jsonfile.Write(filepath.Join(run, "metrics.json"), m); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c")); code != 0 {
		t.Fatal(stderr)
	}
	if s, _ := os.ReadFile(filepath.Join(dir, "c", "summary.md")); !strings.Contains(string(s), fmt.Sprintf("; by grid quadrature %.3f |", ll+z-(z+10))) {
		t.Errorf("summary.md:\n%s", s)
	}
}

// Round 97 B2: a cut checkpoint/evals.csv advised starting the run again
// with --force, losing it, where the run's metrics.csv holds the same
// bytes. The restore from metrics.csv is named, --force is not; followed,
// the run resumes.
func TestCutEvalsRestoredFromMetrics(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	if code, stderr := outputsChild(t, "train-outputs", "KILL", "train", "--iterations", "3", "--quiet", "--out", run); code != -1 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	evals, metrics := filepath.Join(run, "checkpoint", "evals.csv"), filepath.Join(run, "metrics.csv")
	b, _ := os.ReadFile(evals)
	os.WriteFile(evals, b[:50], 0o644)
	_, stderr, code := runCLI("train", "--resume", run, "--quiet")
	if code != 2 || !strings.Contains(stderr, "cp "+metrics+" "+evals+" restores the copy") || strings.Contains(stderr, "--force on the command line") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	m, _ := os.ReadFile(metrics)
	os.WriteFile(evals, m, 0o644)
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !exists(filepath.Join(run, "samples.npy")) {
		t.Errorf("restored: exit %d, %s", code, stderr)
	}
}

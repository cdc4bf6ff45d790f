package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Round 102 B3: a finished run's metrics.csv re-saved by a spreadsheet
// (a byte order mark, CRLF line ends, every field quoted, numbers
// written another way) holds the same evaluations, but was refused as
// "not this run's". It is read as the run's: --resume has nothing to do,
// plot and compare draw from it.
func TestResavedMetricsCSVIsTheRuns(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "r")
	if _, stderr, code := runCLI("train", "--iterations", "3", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	path := filepath.Join(run, "metrics.csv")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var resaved bytes.Buffer
	resaved.WriteString("\ufeff")
	for i, row := range rows {
		for j, f := range row {
			if v, err := strconv.ParseFloat(f, 64); err == nil && i > 0 && j > 0 {
				f = strconv.FormatFloat(v, 'E', -1, 64)
			}
			if j > 0 {
				resaved.WriteString(",")
			}
			resaved.WriteString(`"` + f + `"`)
		}
		resaved.WriteString("\r\n")
	}
	if bytes.Equal(resaved.Bytes(), b) {
		t.Fatal("the re-save changed nothing")
	}
	if err := os.WriteFile(path, resaved.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI("train", "--resume", run)
	if code != 0 || !strings.Contains(stdout, "nothing to do") {
		t.Errorf("--resume: exit %d, %s%s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, resaved.Bytes()) {
		t.Errorf("--resume changed the re-saved metrics.csv")
	}
	if _, stderr, code := runCLI("plot", run); code != 0 || strings.Contains(stderr, "metrics.csv") {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c")); code != 0 || strings.Contains(stderr, "metrics.csv") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	edited := bytes.Replace(resaved.Bytes(), []byte(`"1","`), []byte(`"1","7`), 1)
	if bytes.Equal(edited, resaved.Bytes()) {
		t.Fatal("no row of iteration 1 to edit")
	}
	os.WriteFile(path, edited, 0o644)
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c2")); code == 0 || !strings.Contains(stderr, "differ in their values from iteration 1: one of the two was edited; if metrics.csv was, cp ") { // round 140 B2: an earlier row, which metrics.json cannot arbitrate
		t.Errorf("compare of an edited value: exit %d, %s", code, stderr)
	}
}

// Round 100 B1's aside: sample's refusal of a flow graph holding an
// operator flowebm does not import named the file but not the flag that
// gave it (--flow or --flow-density), as train's and --model's do.
func TestSampleFlowRefusalNamesFlag(t *testing.T) {
	dir := t.TempDir()
	flows := "../../io/onnx/testdata/flows/"
	bad := map[string]string{}
	for _, name := range []string{"nvp_f64_sample.onnx", "nvp_f64_density.onnx"} {
		b, err := os.ReadFile(flows + name)
		if err != nil {
			t.Fatal(err)
		}
		bad[name] = filepath.Join(dir, "bad_"+name)
		if err := os.WriteFile(bad[name], bytes.ReplaceAll(b, []byte("Sigmoid"), []byte("Sigmoix")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ flow, density, want string }{
		{bad["nvp_f64_sample.onnx"], flows + "nvp_f64_density.onnx", "--flow " + bad["nvp_f64_sample.onnx"] + `: node "/Sigmoix" (Sigmoix): operator Sigmoix is not supported`},
		{flows + "nvp_f64_sample.onnx", bad["nvp_f64_density.onnx"], "--flow-density " + bad["nvp_f64_density.onnx"] + ": node "},
	} {
		_, stderr, code := runCLI("sample", "--model", flows+"bimodal_energy.onnx", "--flow", c.flow, "--flow-density", c.density, "--out", filepath.Join(dir, "s.npy"))
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("exit %d, %s; want %q", code, stderr, c.want)
		}
	}
}

// Round 103 A2: energy --grad's note of a gradient NaN where the energy
// is finite (a square root of a negative number in the branch
// torch.where discards) named no node and gave generic advice. It names
// the node and says to keep the branch finite where it is not taken.
func TestGradientNoteNamesNode(t *testing.T) {
	dir := t.TempDir()
	points := filepath.Join(dir, "p.csv")
	if err := os.WriteFile(points, []byte("3,-2\n-3,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "where_sqrt_energy.onnx")
	_, stderr, code := runCLI("energy", "--model", model, "--points", points, "--out", filepath.Join(dir, "e.npy"), "--grad", filepath.Join(dir, "g.npy"))
	want := `is NaN: the model's gradient is not defined there though its energy is: its node "/Sqrt" (Sqrt) computes NaN there, which the energy does not use`
	if code != 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "torch.sqrt(x.clamp(min=1e-12))") {
		t.Errorf("exit %d, %s; want %q", code, stderr, want)
	}
}

// Round 103 B2: sample --base on flowebm's export of a whole energy
// (convert --what energy, whose tilt is in its graph) added a second tilt,
// unsaid, and the draws changed. It is refused, saying to drop --base;
// the network alone (convert's default) still takes it.
func TestBaseRefusedOnWholeEnergy(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "r")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	whole, network := filepath.Join(dir, "whole.onnx"), filepath.Join(dir, "net.onnx")
	for _, args := range [][]string{{"convert", run, whole, "--what", "energy"}, {"convert", run, network}} {
		if _, stderr, code := runCLI(args...); code != 0 {
			t.Fatal(stderr)
		}
	}
	sample := func(model string) (string, int) {
		_, stderr, code := runCLI("sample", "--model", model, "--base", "1.5", "--chains", "4", "--steps", "10", "--out", filepath.Join(dir, filepath.Base(model)+".npy"))
		return stderr, code
	}
	want := "--base 1.5: " + whole + " is flowebm's export of a whole energy (convert --what energy), whose tilt is in its graph already: drop --base"
	if stderr, code := sample(whole); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("whole energy: exit %d, %s", code, stderr)
	}
	if stderr, code := sample(network); code != 0 {
		t.Errorf("the network alone: exit %d, %s", code, stderr)
	}
}

// Round 103 B1: a convert (ONNX → checkpoint) killed before it wrote
// leaves its folder holding only its lock, which names convert; plot,
// energy, sample, convert and train --resume called it a run killed
// before its first checkpoint and advised flowebm train. They name the
// convert, whose command given again (the advice followed) converts.
func TestKilledConvertsLockNamed(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc")
	if err := os.Mkdir(kc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kc, ".lock"), []byte("convert\n"), 0o644); err != nil { // as takeLock writes it
		t.Fatal(err)
	}
	points := filepath.Join(dir, "p.csv")
	os.WriteFile(points, []byte("0,0\n"), 0o644)
	want := kc + " holds only the lock of a flowebm convert killed before it wrote there: nothing in it is a run's; give that command again (flowebm convert … " + kc + "), or remove the folder"
	for _, args := range [][]string{
		{"plot", kc},
		{"energy", "--model", kc, "--points", points},
		{"sample", "--model", kc, "--out", filepath.Join(dir, "s.npy")},
		{"convert", kc, filepath.Join(dir, "z.onnx")},
		{"train", "--resume", kc},
	} {
		if _, stderr, code := runCLI(args...); code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(kc, ".lock")); string(b) != "convert\n" {
		t.Errorf("the lock holds %q after train --resume, was convert's", b)
	}
	if _, stderr, code := runCLI("convert", toyONNX, kc); code != 0 || !exists(filepath.Join(kc, "spec.json")) {
		t.Errorf("the convert given again: exit %d, %s", code, stderr)
	}
}

// Round 103 B4: sample --resume of a checkpoint that a run killed before
// its first checkpoint never wrote (its lock alone left) said "no such
// file" alone. It says so and advises the command that started it, which,
// given again, samples.
func TestSampleKilledBeforeCheckpoint(t *testing.T) {
	model, _ := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx"))
	inTempDir(t)
	if err := os.WriteFile(".s4.npz.lock", []byte("sample\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "--resume s4.npz does not exist, but its lock .s4.npz.lock does: a sampling run killed before its first checkpoint leaves only its lock"
	if _, stderr, code := runCLI("sample", "--resume", "s4.npz"); code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "(flowebm sample … --checkpoint s4.npz)") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "10", "--checkpoint", "s4.npz", "--out", "s4.npy"); code != 0 || !exists("s4.npz") {
		t.Errorf("started again: exit %d, %s", code, stderr)
	}
}

// Round 103 B3: a run trained in SVG, drawn in PNG by plot before it
// finished, kept those PNGs (of an earlier iteration) beside its final
// SVGs once train --resume finished it, unsaid. The run's end draws its
// figures again in every format its folder holds.
func TestRunEndRedrawsOtherFormats(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	code, stderr := outputsChild(t, "train-outputs", "KILL", "train", "--iterations", "3", "--quiet", "--plot-format", "svg", "--out", dir)
	if code == 0 {
		t.Fatalf("not killed: %s", stderr)
	}
	stale := filepath.Join(dir, "density.png") // as a plot of the unfinished run left it
	if err := os.WriteFile(stale, []byte("an earlier iteration's figure"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--resume", dir, "--quiet"); code != 0 {
		t.Fatalf("resume: exit %d, %s", code, stderr)
	}
	got, _ := os.ReadFile(stale)
	for _, name := range []string{"density", "weights"} {
		if !exists(filepath.Join(dir, name+".svg")) {
			t.Errorf("%s.svg not drawn", name)
		}
	}
	if _, stderr, code := runCLI("plot", dir); code != 0 { // the final PNGs, drawn again (PNG is deterministic)
		t.Fatalf("plot: exit %d, %s", code, stderr)
	}
	if want, _ := os.ReadFile(stale); !bytes.Equal(got, want) {
		t.Errorf("density.png after the run's end: %d bytes, not the final figure (%d bytes)", len(got), len(want))
	}
}

// Round 104 A1: a MALA chain started far out on a smooth quartic energy
// (gradient 6912 per coordinate) had every proposal rejected and never
// moved; the note called it a plateau, where the gradient is 0, outside
// the support. It says the chain never moved, every proposal rejected,
// and advises starts nearer the mass; the other chains are not named.
func TestStuckChainNotAPlateau(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "quartic_energy.onnx")) // io/onnx/crosscheck/make_quartic_energy.py
	if err != nil {
		t.Fatal(err)
	}
	inTempDir(t)
	starts := make([]float64, 16*2)
	starts[6], starts[7] = 12, 12 // chain 4
	npy.WriteFile("s.npy", &npy.Array{Shape: []int{16, 2}, Data: starts}, npy.Float64)
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "mala", "--chains", "16", "--steps", "300", "--starts", "s.npy", "--out", "q.npy")
	a, rerr := npy.ReadFile("q.npy")
	if code != 0 || rerr != nil {
		t.Fatalf("exit %d, %v, %s", code, rerr, stderr)
	}
	for i := range 300 { // the case tested: chain 4 never moved
		if a.Data[(3*300+i)*2] != 12 {
			t.Fatalf("chain 4 moved (draw %d at %v): not the case tested", i+1, a.Data[(3*300+i)*2])
		}
	}
	want := "flowebm: note: chain 3 (of 16, numbered from 0 as the draws' first axis) never moved from where the 200 warm-up steps left it, where the energy exceeds the lowest among the chains' draws by 4.15e+04 or more: every proposal was rejected there"
	if !strings.Contains(stderr, want) || strings.Contains(stderr, "plateau") || strings.Contains(stderr, "outside its support, where") {
		t.Errorf("stderr %s; want %q", stderr, want)
	}
}

// Round 104 A3: --holdout 0, to train on all of a small data set, was
// refused without a way to train on (nearly) every row. The refusal
// names one, which, followed, holds out a single row.
func TestHoldoutZeroAdvice(t *testing.T) {
	inTempDir(t)
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 200*2)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	npy.WriteFile("m.npy", &npy.Array{Shape: []int{200, 2}, Data: x}, npy.Float64)
	_, stderr, code := runCLI("train", "--data", "m.npy", "--holdout", "0", "--iterations", "2", "--out", "r0")
	if code != 2 || !strings.Contains(stderr, "to train on all rows but one, give a fraction below 1/(2n), e.g. --holdout 1e-9") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	stdout, stderr, code := runCLI("train", "--data", "m.npy", "--holdout", "1e-9", "--iterations", "2", "--out", "r1")
	if code != 0 || !strings.Contains(stdout+stderr, "199 training and 1 held-out rows") {
		t.Errorf("advice followed: exit %d, %s%s", code, stdout, stderr)
	}
}

// Round 104 B1: one digit of a mode weight changed in a finished seed's
// metrics.json (valid JSON) passed: train --seeds said "already trained"
// and averaged it into seeds.json. It is checked against the run's last
// evaluation and written again from the final checkpoint, as samples.npy
// is; seeds.json then holds the run's own weights.
func TestEditedMetricsJSONWrittenAgain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	args := []string{"train", "--algorithm", "ula", "--iterations", "3", "--seeds", "1-2", "--quiet", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	path := filepath.Join(out, "s2", "metrics.json")
	good, _ := os.ReadFile(path)
	summary, _ := os.ReadFile(filepath.Join(out, "seeds.json"))
	var m struct {
		Final struct {
			EBMWeights []float64 `json:"ebm_weights"`
		} `json:"final"`
	}
	if err := json.Unmarshal(good, &m); err != nil || len(m.Final.EBMWeights) != 2 {
		t.Fatalf("%v, %s", err, good)
	}
	w := strconv.FormatFloat(m.Final.EBMWeights[0], 'g', -1, 64)
	edited := strings.Replace(string(good), w, strconv.FormatFloat(m.Final.EBMWeights[0]+0.1, 'g', -1, 64), 1)
	if edited == string(good) {
		t.Fatal("nothing edited")
	}
	os.WriteFile(path, []byte(edited), 0o644)
	stdout, stderr, code := runCLI(args...)
	want := path + `: field "final.ebm_weights" is not the run's last evaluation (iteration 3, as its checkpoint holds it): edited, or another run's`
	if code != 0 || !strings.Contains(stdout+stderr, want) {
		t.Errorf("exit %d, %s%s; want %q", code, stdout, stderr, want)
	}
	if err := json.Unmarshal(mustRead(t, path), &m); err != nil || strconv.FormatFloat(m.Final.EBMWeights[0], 'g', -1, 64) != w {
		t.Errorf("metrics.json's weight after: %v (%v), want %s", m.Final.EBMWeights, err, w)
	}
	if got := mustRead(t, filepath.Join(out, "seeds.json")); !bytes.Equal(got, summary) {
		t.Errorf("seeds.json changed:\n%s\nwas\n%s", got, summary)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Round 104 B2: a finished reproduce run whose checkpoint was damaged
// (a bit of weights.npz) and whose metrics.csv was edited was reported
// as good (the edited held-out log-likelihood), and reproduce's check
// advised train's --force. The report marks it unreadable, saying its
// outputs cannot be checked, and reproduce names the way that works
// (move it away, then reproduce again), which, followed, trains it anew.
func TestReproduceUncheckableRunNotReported(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "4", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-ula")
	weights := filepath.Join(run, "checkpoint", "weights.npz")
	b := mustRead(t, weights)
	b[len(b)/2] ^= 1
	os.WriteFile(weights, b, 0o644)
	want := "the run's outputs cannot be checked against it, so they are not reported; move " + run + " away (or remove it), then give the same reproduce command again, which trains it anew"
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("--report: exit %d, %s", code, stderr)
	}
	stdout, stderr, code := runCLI(args...)
	if code != 2 || !strings.Contains(stdout, "two-modes-ula: already done, but its outputs could not be checked (") || !strings.Contains(stdout, "); move "+run+" away (or remove it)") || strings.Contains(stdout, "--force on the command line") {
		t.Errorf("reproduce: exit %d, %s%s", code, stdout, stderr)
	}
	if err := os.Rename(run, run+".damaged"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Errorf("the advice followed: exit %d, %s", code, stderr)
	}
	// Checkpoints removed to save room: the outputs are reported as
	// before, and checked against one another.
	if err := os.RemoveAll(filepath.Join(run, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 0 {
		t.Errorf("--report without checkpoints: exit %d, %s", code, stderr)
	}
	csv := filepath.Join(run, "metrics.csv")
	rows := strings.Split(strings.TrimSuffix(string(mustRead(t, csv)), "\n"), "\n")
	last := strings.Split(rows[len(rows)-1], ",")
	last[12] = "-0.5" // held_out_ll
	rows[len(rows)-1] = strings.Join(last, ",")
	os.WriteFile(csv, []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	want = `metrics.json: field "final.held_out_ll" is not the run's last evaluation (iteration 4, metrics.csv's last row): edited, or another run's; the run has no checkpoint to write them again from: move ` + run + " away"
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("--report, metrics.csv edited without checkpoints: exit %d, %s", code, stderr)
	}
}

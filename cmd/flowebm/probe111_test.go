package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 111 A1: a 2-D data run whose final grid missed the EBM's mass
// (train warned: e^551.5 beyond it; metrics.json's grid_missed) was shown
// by compare with its held-out LL and weight MSE unmarked, though they
// cover the grid's part only. compare's table marks both, reproduce's
// report marks the run's rows, and train --seeds notes the seed.
func TestMissedMassMarked(t *testing.T) {
	last := training.Eval{Iter: 200, HeldOutLL: -24.028, EBMWeightMSE: 1.64e-3, MaxRHat: 1.08, MaxRHatClassic: 1.05,
		LogZ: metrics.LogZEstimate{LogZ: 58.67, SE: 0.02, ESS: 0.11}}
	missed := &training.MissedMass{At: []float64{300, 0}, LogExcess: 551.5}
	m := &training.Metrics{Iterations: 200, Seconds: 28, Final: last, GridMissed: missed}
	s := runSummary{Named: plots.Named{Name: "r3", Evals: []training.Eval{last}}, cfg: "data | flowmc | realnvp", metrics: m, exactLL: math.NaN()}
	row := s.row()
	for _, want := range []string{"-24.028, unreliable: the EBM's density beyond the grid reaches e^551.5 times its largest on it", "1.64e-03, unreliable: mass beyond the grid"} {
		if !strings.Contains(row, want) {
			t.Errorf("compare's row %q lacks %q", row, want)
		}
	}
	r := &reproRun{metrics: *m}
	if got := r.mark(); !strings.Contains(got, "unreliable: the EBM's density beyond the grid reaches e^551.5") {
		t.Errorf("reproduce's mark %q", got)
	}
	var out bytes.Buffer
	summarise([]seedRun{{runFinal: runFinal{Seed: 1}}, {runFinal: runFinal{Seed: 2, GridMissed: missed}}}, &out)
	if !strings.Contains(out.String(), "the quadrature grid of seed 2 misses the EBM's mass") {
		t.Errorf("train --seeds says %q", out.String())
	}
}

// Round 111 A1, its figures: compare's held-out LL and weight MSE figures
// leave the evaluation whose grid misses mass out, and say so.
func TestCompareLeavesOutMissedMass(t *testing.T) {
	evals := []training.Eval{
		{Iter: 100, HeldOutLL: -2, EBMWeightMSE: 0.1, LogZ: metrics.LogZEstimate{ESS: 0.3}},
		{Iter: 200, HeldOutLL: -24, EBMWeightMSE: 0.002, LogZ: metrics.LogZEstimate{ESS: 0.3}},
	}
	figs, files, err := plots.CompareFigures([]plots.Named{{Name: "r3", Evals: evals, GridMissedAt: 200}})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for i, f := range figs {
		if files[i] != "held-out-ll" && files[i] != "ebm-weight-mse" {
			continue
		}
		seen++
		if !strings.Contains(f.Title, "1 final evaluation left out: the quadrature grid misses the EBM's mass there") {
			t.Errorf("%s: title %q", files[i], f.Title)
		}
		if n := len(f.Curves[0].Points); n != 2 || !math.IsNaN(f.Curves[0].Points[1].Y) {
			t.Errorf("%s: points %v, want the last left out (NaN)", files[i], f.Curves[0].Points)
		}
	}
	if seen != 2 {
		t.Errorf("%d of the two figures drawn", seen)
	}
}

// Round 111 B1: the command that starts a sample run again printed a
// bool flag as "--train-flow true", which cobra reads as an argument.
func TestStartAgainKeepsBoolFlags(t *testing.T) {
	got := startAgain([]string{"--log-density=true", "--model=m.onnx", "--out=a b.npy", "--train-flow=false"})
	want := "flowebm sample --log-density=true --model m.onnx --out 'a b.npy' --train-flow=false --force"
	if !strings.HasSuffix(got, want) {
		t.Errorf("startAgain: %q, want it to end %q", got, want)
	}
}

// Round 111 B4: reproduce --plan wrote a train --resume line, unsaid, for
// a run whose checkpoint cannot be read (its state.npz cut), which failed
// when run; reproduce marks such a run failed with the move-away advice.
// The plan leaves it out, saying why and that advice.
func TestPlanLeavesOutDamagedCheckpoint(t *testing.T) {
	out := t.TempDir()
	dir := interruptedULARun(t, out, "400")
	if err := os.Truncate(filepath.Join(dir, "checkpoint", "state.npz"), 100); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan.txt")
	stdout, stderr, code := runCLI("reproduce", "--plan", plan, "--out", out, "--iterations", "400", "--experiments", "two-modes", "--algorithms", "ula,nt")
	if code != 0 {
		t.Fatal(stderr)
	}
	b := string(mustRead(t, plan))
	for _, l := range strings.Split(b, "\n") {
		if !strings.HasPrefix(l, "#") && strings.Contains(l, dir) {
			t.Errorf("the plan trains the damaged run: %s", l)
		}
	}
	if !strings.Contains(b+stdout, "Left out: two-modes-ula (") || !strings.Contains(b+stdout, "its --resume line would fail; move "+dir+" away, or remove it, then write the plan again") {
		t.Errorf("the plan's note:\n%s\n%s", b, stdout)
	}
}

// Round 111 B5: train --resume of a finished run whose checkpoint's
// state.npz was cut advised "start the run again (with --force)", which
// loses the finished run. It says the run finished, that its model still
// serves sample, energy and convert, and what --force would lose.
func TestResumeFinishedDamagedSaysFinished(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "3", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Truncate(filepath.Join(run, "checkpoint", "state.npz"), 100); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("train", "--resume", run)
	if code == 0 || !strings.Contains(stderr, "the run finished (its metrics.json and samples.npy stand)") || !strings.Contains(stderr, "--force on the command line would train a new run in its place, and this one would be lost") || strings.Contains(stderr, "start the run again") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 111 B6: diagnose given an .onnx model or a figure said "not a
// .npy file … by their extension", which contradicted itself, and a
// checkpoint's weights.npz was refused over its first member's shape. Each
// is named for what it is, with the command that makes chains; a .npy
// under a .txt name is still read.
func TestDiagnoseNamesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	onnxModel := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	if _, stderr, code := runCLI("diagnose", onnxModel); code == 0 || !strings.Contains(stderr, "is an ONNX model, not draws") || !strings.Contains(stderr, "flowebm sample --model "+onnxModel) {
		t.Errorf("an .onnx: exit %d, %s", code, stderr)
	}
	png := filepath.Join(dir, "density.png")
	os.WriteFile(png, []byte("\x89PNG\r\n\x1a\n...."), 0o644)
	if _, stderr, code := runCLI("diagnose", png); code == 0 || !strings.Contains(stderr, "is a figure, not draws") {
		t.Errorf("a .png: exit %d, %s", code, stderr)
	}
	md := filepath.Join(dir, "report.md")
	os.WriteFile(md, []byte("# flowebm reproduce\n"), 0o644)
	if _, stderr, code := runCLI("diagnose", md); code == 0 || !strings.Contains(stderr, "is a Markdown text (a report or summary), not draws") {
		t.Errorf("a .md: exit %d, %s", code, stderr)
	}
	ck := filepath.Join(dir, "run", "checkpoint")
	os.MkdirAll(ck, 0o755)
	os.WriteFile(filepath.Join(ck, "spec.json"), []byte("{}"), 0o644)
	if err := npz.WriteFile(filepath.Join(ck, "weights.npz"), map[string]*npy.Array{"ebm.net.0.bias": {Shape: []int{32}, Data: make([]float64, 32)}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", filepath.Join(ck, "weights.npz")); code == 0 || !strings.Contains(stderr, "is a checkpoint's model weights") || !strings.Contains(stderr, "flowebm sample --model "+filepath.Join(dir, "run")) {
		t.Errorf("weights.npz: exit %d, %s", code, stderr)
	}
	txt := filepath.Join(dir, "chains.txt")
	data := make([]float64, 4*10)
	for i := range data {
		data[i] = float64(i%7) / 7
	}
	var b bytes.Buffer
	if err := npy.Write(&b, &npy.Array{Shape: []int{4, 10}, Data: data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(txt, b.Bytes(), 0o644)
	if _, stderr, code := runCLI("diagnose", txt); code != 0 {
		t.Errorf("a .npy named .txt: exit %d, %s", code, stderr)
	}
}

// Round 111 B7: a sample run's model changed into a file that cannot be
// read (a line appended to the .onnx) was refused for its parse error on
// --resume, unsaid that it is not the file the run started on. The change
// is found before the file is read, with the way on.
func TestResumeUnreadableChangedModel(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.onnx")
	orig := mustRead(t, "../../io/onnx/testdata/flows/bimodal_energy.onnx")
	os.WriteFile(model, orig, 0o644)
	ck := filepath.Join(dir, "k.npz")
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", "sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "5", "--checkpoint", ck, "--checkpoint-every", "10", "--out", filepath.Join(dir, "s.npy")); code != -1 {
		t.Fatalf("sample not killed at its checkpoint: %d %s", code, stderr)
	}
	os.WriteFile(model, append(orig, '\n'), 0o644)
	_, stderr, code := runCLI("sample", "--resume", ck)
	if code == 0 || !strings.Contains(stderr, model+" has changed since the checkpoint was written") || !strings.Contains(stderr, "put the one it started with back there") || strings.Contains(stderr, "wire type") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 111 B8: sample --resume of a training run's folder said "start
// the run again: the command that started it", of a run no sample
// started. It names the folder for what it is and both ways on.
func TestSampleResumeOfTrainingRun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	_, stderr, code := runCLI("sample", "--resume", run)
	if code == 0 || !strings.Contains(stderr, "is a training run's folder, not a sample checkpoint") || !strings.Contains(stderr, "flowebm train --resume "+run) || !strings.Contains(stderr, "flowebm sample --model "+run) {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 112 A1: the report pointed every run to "the scaling notes at
// the top of its log.txt", which a run trained by hand has not. It says
// where log.txt holds them.
func TestReportSettingsLineTrue(t *testing.T) {
	out := t.TempDir()
	run := filepath.Join(out, "runs", "two-modes-ula")
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--seed", "1", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	_, _, stderr, report := reportOf(t, out, "--algorithms", "ula", "--iterations", "2")
	if !strings.Contains(report, "each run's `config.json` says exactly how, as do the scaling notes train prints, kept at the top of its `log.txt` where reproduce or a plan's line trained it") || exists(filepath.Join(run, "log.txt")) {
		t.Errorf("%s\n%s", stderr, report)
	}
}

// Round 112 B1: train --seeds over a finished seed whose checkpoint
// cannot be read relayed train --resume's "--force on the command line
// would train a new run", which for --seeds trains every seed again. It
// gives the set's advice: move that seed's folder away.
func TestSeedsFinishedUnreadableAdvice(t *testing.T) {
	out := filepath.Join(t.TempDir(), "W")
	args := []string{"train", "--algorithm", "ula", "--iterations", "2", "--seeds", "1-2", "--out", out, "--quiet"}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	os.Truncate(filepath.Join(out, "s2", "checkpoint", "state.npz"), 100)
	_, stderr, code := runCLI(args...)
	if code == 0 || !strings.Contains(stderr, "move "+filepath.Join(out, "s2")+" away and give the same --seeds command again (--force would train every seed again)") || strings.Contains(stderr, "--force on the command line") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 112 B3: a run moved away and trained again by a plan's line kept
// the record of the reproduce that trained it first ("reproduce --jobs 2
// trained them"). The record holds the checkpoint it trained up to; a run
// whose checkpoint is another since is said to be trained otherwise too.
func TestTrainedByFollowsTheRun(t *testing.T) {
	out := t.TempDir()
	if _, stderr, code := runCLI("reproduce", "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "2"); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-ula")
	if err := os.RemoveAll(run); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--seed", "1", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	_, _, stderr, report := reportOf(t, out, "--algorithms", "ula")
	if want := "but the runs were trained by reproduce --jobs 2, then a plan's lines or by hand"; !strings.Contains(report, want) || strings.Contains(report, "(reproduce --jobs 2 trained them)") {
		t.Errorf("%s\nreport lacks %q:\n%s", stderr, want, report)
	}
}

// Round 112 B6: compare given a run's file or a seeds folder's
// seeds.json said only "not a run folder"; it names the folder to give,
// as plot does.
func TestCompareOfAFileNamesTheRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "W")
	if _, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "2", "--seeds", "1-2", "--out", out, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	s1 := filepath.Join(out, "s1")
	for file, want := range map[string]string{
		filepath.Join(s1, "metrics.csv"): "it is the metrics.csv of the run " + s1 + ": give the run folder, " + s1,
		filepath.Join(out, "seeds.json"): "the folder " + out + " holds the runs s1, s2 (as train --seeds writes them): give those, e.g. " + s1,
	} {
		if _, stderr, code := runCLI("compare", file, "--out", filepath.Join(t.TempDir(), "c")); code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("compare %s: exit %d, %s; want %q", file, code, stderr, want)
		}
	}
}

// Round 112 B5: train --seeds given its data file moved (same bytes, a
// new path) advised moving the seeds away, losing them. It says the file
// was moved and gives train --resume SEED --data NEW, which, followed,
// lets the same --seeds command go on.
func TestSeedsMovedDataAdvice(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.npy")
	rows := make([]float64, 2*200)
	for i := range rows {
		rows[i] = math.Sin(float64(i) * 1.7)
	}
	if err := npy.WriteFile(data, &npy.Array{Shape: []int{200, 2}, Data: rows}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "W")
	if _, stderr, code := runCLI("train", "--data", data, "--algorithm", "ula", "--iterations", "2", "--seeds", "1-2", "--out", out, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	moved := filepath.Join(dir, "m", "d.npy")
	os.MkdirAll(filepath.Dir(moved), 0o755)
	if err := os.Rename(data, moved); err != nil {
		t.Fatal(err)
	}
	args := []string{"train", "--data", moved, "--algorithm", "ula", "--iterations", "2", "--seeds", "1-2", "--out", out, "--quiet"}
	_, stderr, code := runCLI(args...)
	for _, s := range []string{"s1", "s2"} {
		want := "so the file was moved: record its new place with flowebm train --resume " + filepath.Join(out, s) + " --data " + moved
		if code == 0 || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, %s; want %q", code, stderr, want)
		}
		if _, stderr, code := runCLI("train", "--resume", filepath.Join(out, s), "--data", moved); code != 0 {
			t.Fatalf("the advice followed: %s", stderr)
		}
	}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Errorf("the same --seeds command after: exit %d, %s", code, stderr)
	}
}

// Round 112 B4: a run that diverged recorded it nowhere in its folder:
// plot called it unfinished, compare showed "2 of 20" as of an interrupted
// run, and train --resume diverged again. train writes error.txt, as
// reproduce does; plot and compare say the run diverged; train --resume
// refuses with the way on.
func TestDivergenceRecorded(t *testing.T) {
	dir := t.TempDir()
	run := divergedRun(t, dir)
	if !strings.Contains(string(mustRead(t, filepath.Join(run, "error.txt"))), "training diverged") {
		t.Error("error.txt does not record the divergence")
	}
	if _, stderr, _ := runCLI("plot", run); !strings.Contains(stderr, "the run "+run+" diverged (its error.txt: ") || strings.Contains(stderr, "unfinished") {
		t.Errorf("plot: %s", stderr)
	}
	c := filepath.Join(dir, "c")
	if _, stderr, code := runCLI("compare", run, "--out", c); code != 0 || !strings.Contains(string(mustRead(t, filepath.Join(c, "summary.md"))), " of 20, diverged (error.txt) |") {
		t.Errorf("compare: %d %s\n%s", code, stderr, mustRead(t, filepath.Join(c, "summary.md")))
	}
	if _, stderr, code := runCLI("train", "--resume", run); code == 0 || !strings.Contains(stderr, "the run diverged (its error.txt: ") || !strings.Contains(stderr, "train a new run with other settings") {
		t.Errorf("train --resume: %d %s", code, stderr)
	}
}

// divergedRun trains in dir/G a two-modes ULA run whose learning rate of
// 0.5 makes it diverge at iteration 3, after its checkpoint of iteration 2.
func divergedRun(t *testing.T, dir string) string {
	t.Helper()
	cfg := printedConfig(t, "--algorithm", "ula", "--iterations", "20")
	cfg["train"].(map[string]any)["ebm_optim"].(map[string]any)["lr"] = 0.5
	path := writeConfig(t, filepath.Join(dir, "c.json"), cfg)
	run := filepath.Join(dir, "G")
	if _, stderr, code := runCLI("train", "--config", path, "--out", run, "--quiet"); code == 0 || !strings.Contains(stderr, "training diverged") {
		t.Fatalf("train did not diverge: %d %s", code, stderr)
	}
	return run
}

// printedConfig is the configuration train --print-config gives for
// args, decoded, for a test to edit.
func printedConfig(t *testing.T, args ...string) map[string]any {
	t.Helper()
	stdout, stderr, code := runCLI(append([]string{"train", "--print-config"}, args...)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// writeConfig writes cfg to path as JSON and returns path.
func writeConfig(t *testing.T, path string, cfg map[string]any) string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// interruptedULARun trains reproduce's two-modes ULA run of iterations
// in out/runs by hand and interrupts it at its first checkpoint; it
// returns the run's folder.
func interruptedULARun(t *testing.T, out, iterations string) string {
	t.Helper()
	dir := filepath.Join(out, "runs", "two-modes-ula")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--experiment", "two-modes", "--algorithm", "ula", "--seed", "1", "--iterations", iterations, "--quiet", "--out", dir); code != 130 {
		t.Fatalf("train not interrupted: %d %s", code, stderr)
	}
	return dir
}

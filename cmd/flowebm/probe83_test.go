package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// Round 83 A1: diagnose --nested refused the short chains nested R-hat is
// for; it computes rhat_nested (as diagnostics.NestedRHat), the mean and
// the sd of chains of 1 to 3 draws, draws only their traces, and refuses
// --plots for single draws. Without --nested the refusal names it.
func TestNestedShortChains(t *testing.T) {
	dir := t.TempDir()
	w := wave(64 * 3)
	path := filepath.Join(dir, "short3.npy")
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{64, 3}, Data: w}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI("diagnose", "--nested", "8", "--json", path)
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	x := make([][]float64, 64)
	for c := range x {
		x[c] = w[3*c : 3*c+3]
	}
	if got, want := rows[0]["rhat_nested"], diagnostics.NestedRHat(x, 8); got == nil || math.Abs(got.(float64)-want) > 1e-12 || rows[0]["rhat"] != nil || rows[0]["mean"] == nil {
		t.Errorf("row %v, want rhat_nested %v, rhat null", rows[0], want)
	}
	if !strings.Contains(errOut, "chains of 3 draws: only rhat_nested, the mean and the sd are computed") {
		t.Errorf("note: %s", errOut)
	}
	plots := filepath.Join(dir, "plots")
	if _, errOut, code := runCLI("diagnose", "--nested", "8", "--plots", plots, path); code != 0 {
		t.Fatal(errOut)
	}
	if files, _ := filepath.Glob(filepath.Join(plots, "*.png")); len(files) != 1 || !strings.HasSuffix(files[0], "-trace.png") {
		t.Errorf("plots of short chains: %v", files)
	}
	if _, errOut, code := runCLI("diagnose", path); code != 2 || !strings.Contains(errOut, "3 draws per chain, need at least 4; nested R-hat (--nested K superchains) takes chains of 1 to 3 draws") {
		t.Errorf("without --nested: exit %d: %s", code, errOut)
	}
	one := filepath.Join(dir, "short1.npy")
	if err := npy.WriteFile(one, &npy.Array{Shape: []int{64, 1}, Data: w[:64]}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("diagnose", "--nested", "8", one); code != 0 || !strings.Contains(errOut, "chains of 1 draw:") {
		t.Errorf("single draws: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI("diagnose", "--nested", "8", "--plots", filepath.Join(dir, "p1"), one); code != 2 || !strings.Contains(errOut, "chains of 1 draw have no trace") {
		t.Errorf("--plots of single draws: exit %d: %s", code, errOut)
	}
}

// Round 83 A2: sample --flow-out on a float32 model wrote a float64 flow,
// which neutra then refused beside that model.
func TestFlowOutInModelsFloatType(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/torch/elu_f32.onnx"
	fo := filepath.Join(dir, "fo")
	if _, errOut, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--chains", "8", "--steps", "10", "--warmup", "20", "--flow-out", fo, "--out", filepath.Join(dir, "a.npy")); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runCLI("sample", "--model", model, "--sampler", "neutra", "--flow", filepath.Join(fo, "flow_sample.onnx"), "--flow-density", filepath.Join(fo, "flow_density.onnx"), "--chains", "8", "--steps", "10", "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Errorf("neutra with the written flow: exit %d: %s", code, errOut)
	}
}

// Round 83 A3: sample printed mode weights' 95% intervals beside R-hat
// 1.545 without a word; the R-hat line and the weights' header say the
// chains have not mixed.
func TestSampleSaysNotMixed(t *testing.T) {
	var b strings.Builder
	draws := []float64{0, 0, 0, 0, 5, 5, 5, 5} // 2 chains × 4 draws × 1 dim, each constant, apart
	rhat := printRHat(&b, draws, 2, 4, 1, sampleFlags{sampler: "mala"}.notMixedAdvice(checkpoint.Models{}, 0.5, mixing{}))
	if !strings.Contains(b.String(), "not below 1.01: the chains have not mixed; sample longer, or, for modes apart, --sampler flowmc") {
		t.Errorf("R-hat %v: %s", rhat, b.String())
	}
	for _, c := range []struct {
		f    sampleFlags
		flow bool
		loc  float64
		want string
	}{
		{sampleFlags{sampler: "flowmc"}, false, 0.5, "a longer --warmup and --patience 0"},                                                                           // round 84 B1: not "--sampler flowmc"; round 90 A1
		{sampleFlags{sampler: "flowmc", farFromBase: true}, false, 0.5, "no global move was accepted: the flow has not reached the draws, and may never reach them"}, // round 137 A4: not the warm-up again
		{sampleFlags{sampler: "flowmc"}, true, 0.5, "add --train-flow"},                                                                                              // round 85 B8
		{sampleFlags{sampler: "hmc", step: 1e6}, false, 0, "lower --step (1e+06)"},                                                                                   // round 85 B12
		{sampleFlags{sampler: "flowmc", trainFlow: true}, true, 0.5, "a longer --warmup"},
		{sampleFlags{sampler: "hmc", step: 0.01}, false, 1, "raise --step (0.01, not adapted by hmc)"},                                                                                             // round 114 A1
		{sampleFlags{sampler: "mala", step: 0.01}, false, 0.99, "raise --step (0.01, not adapted by mala)"},                                                                                        // no warm-up: not adapted
		{sampleFlags{sampler: "mala", step: 0.01, warmup: 200}, false, 0.99, "sample longer, or, for modes apart, --sampler flowmc"},                                                               // adapted in its warm-up
		{sampleFlags{sampler: "neutra", step: 0.0005}, true, 1, "raise --step (0.0005, not adapted by neutra)"},                                                                                    // round 115 B1
		{sampleFlags{sampler: "hmc", step: 0.3, leapfrog: 10}, false, 1, "the draws flip back and forth (lag-1 autocorrelation -0.97 in dimension 0): the trajectory, --step 0.3 × --leapfrog 10"}, // round 133 A1
	} {
		var m checkpoint.Models
		if c.flow {
			m.Flow = new(graph.Flow)
		}
		mx := mixing{rho1: []float64{0}, sd: []float64{1}, rhat: []float64{math.NaN()}, bulk: []float64{math.NaN()}}
		if strings.Contains(c.want, "flip back and forth") {
			mx = mixing{rho1: []float64{-0.97}, sd: []float64{1}, rhat: []float64{1.2}, bulk: []float64{1}}
		}
		if got := c.f.notMixedAdvice(m, c.loc, mx); !strings.Contains(got, c.want) {
			t.Errorf("%+v, flow %v, acceptance %v: %q, want %q", c.f, c.flow, c.loc, got, c.want)
		}
	}
	b.Reset()
	f := sampleFlags{modes: "m.npy", chains: 2, steps: 4}
	if err := f.printModeWeights(&b, draws, 1, [][]float64{{0}, {5}}, rhat, ""); err != nil || !strings.Contains(b.String(), "the chains have not mixed, so these are not to be trusted") {
		t.Errorf("%v: %s", err, b.String())
	}
	b.Reset()
	if err := f.printModeWeights(&b, draws, 1, [][]float64{{0}, {5}}, 1.001, ""); err != nil || strings.Contains(b.String(), "not mixed") {
		t.Errorf("mixed: %v: %s", err, b.String())
	}
}

// Round 83 B2: plot of an unfinished run said nothing of it.
func TestPlotNotesUnfinishedRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "400", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, note, code := runCLI("plot", dir) // the command's stderr since round 98 B1
	if code != 0 || !strings.Contains(note, "flowebm: note: the run "+dir+" is unfinished: its figures are of its newest checkpoint, at iteration ") {
		t.Errorf("exit %d: %s", code, note)
	}
}

// Round 83 B5: a report rebuilt in another plot format left the earlier
// report's figures beside it.
func TestReportRemovesUnlinkedFigures(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "two-modes-weights.png")
	kept := filepath.Join(dir, "four-modes-mse.svg")
	other := filepath.Join(dir, "notes.png")
	mine := filepath.Join(dir, "four-modes-mse.pdf") // the user's, named like a figure (round 119 B7: deleted)
	for _, p := range []string{stale, kept, other, mine} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, reportRecord), []byte("two-modes-weights.png\nfour-modes-mse.svg\n"), 0o644); err != nil { // an earlier report's
		t.Fatal(err)
	}
	if err := removeUnlinkedFigures(dir, "![four-modes MSE](four-modes-mse.svg)\n"); err != nil {
		t.Fatal(err)
	}
	if exists(stale) || !exists(kept) || !exists(other) || !exists(mine) {
		t.Errorf("stale %v, kept %v, another file %v, the user's %v", exists(stale), exists(kept), exists(other), exists(mine))
	}
}

// Round 83 B9: the same sample command run again after Ctrl-C was refused
// for its --checkpoint without the --resume that continues it.
func TestExistingCheckpointPointsToResume(t *testing.T) {
	dir, ck, args := sampledWithCheckpoint(t)
	if _, errOut, code := runCLI(append(args, "--out", filepath.Join(dir, "b.npy"))...); code != 2 || !strings.Contains(errOut, "it holds the checkpoint of a sampling run: if that run was interrupted, continue it with flowebm sample --resume "+ck) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 84 B2: an image folder given as --data-dir was blamed on the
// environment variable it was passed on as. It is passed to the
// experiment's lookup itself now (no variable set): the refusal names the
// folder and what it should hold, and no variable.
func TestDataDirNamedAsTheFlag(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct{ exp, env, want string }{
		{"fashion-mnist", "FLOWEBM_FASHION_MNIST", ": want the folder of Fashion-MNIST's train-images-idx3-ubyte.gz and its three siblings"},
		{"mnist28", "FLOWEBM_MNIST", ": want the folder of train-images-idx3-ubyte.gz and its three siblings"},
	} {
		_, errOut, code := runCLI("train", "--experiment", c.exp, "--data-dir", empty, "--iterations", "1", "--quiet", "--out", filepath.Join(t.TempDir(), "r"))
		if code != 2 || !strings.Contains(errOut, "(Kaggle's name) in "+empty+c.want) || strings.Contains(errOut, c.env) {
			t.Errorf("%s: exit %d: %s", c.exp, code, errOut)
		}
	}
}

// Round 84 B3: sample --force named the checkpoint it would replace, then
// was refused for another process's lock on it.
func TestForceNoteOnlyWhenReplacing(t *testing.T) {
	dir, ck, args := sampledWithCheckpoint(t)
	release, err := lockFile("--checkpoint", ck, "sample")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, errOut, code := runCLI(append(args, "--out", filepath.Join(dir, "b.npy"), "--force")...); code != 2 || strings.Contains(errOut, "--force replaces") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 84 A2, A3: short chains' nested R-hat got no verdict, and a table
// of dashes (one chain of one draw per superchain) no reason.
func TestNestedShortVerdict(t *testing.T) {
	dir := t.TempDir()
	apart := make([]float64, 16) // 8 chains × 2 draws: superchains of 4 at 0 and at 10, with noise
	for i := range apart {
		apart[i] = wave(16)[i]
		if i >= 8 {
			apart[i] += 10
		}
	}
	p := filepath.Join(dir, "apart.npy")
	if err := npy.WriteFile(p, &npy.Array{Shape: []int{8, 2}, Data: apart}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI("diagnose", "--nested", "2", p); code != 0 || !strings.Contains(out, "not below 1.01: the superchains disagree") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
	one := filepath.Join(dir, "one.npy")
	if err := npy.WriteFile(one, &npy.Array{Shape: []int{6, 1}, Data: wave(6)}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI("diagnose", "--nested", "6", one); code != 0 || !strings.Contains(out, "rhat_nested is undefined with one chain of one draw per superchain: give fewer superchains (--nested K with K < 6)") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
}

// Round 85 A1, A2: in 3-D a data set's "EBM" weights are the zone
// fractions of short chains' final states, printed as the EBM's even where
// those chains had not mixed; in 2-D the held-out log-likelihood's IS log
// Z was printed without the grid's, 2.3 standard errors away.
func TestWeightsAndLogZSaySource(t *testing.T) {
	dir := t.TempDir()
	centres := [][3]float64{{0, 0, 0}, {3, 0, 1}, {0, 3, -1}}
	w := wave(3 * 600)
	pts := make([]float64, 0, 3*600)
	for i := range 600 {
		c := centres[i%3]
		for j := range 3 {
			pts = append(pts, c[j]+0.3*w[3*i+j])
		}
	}
	data := filepath.Join(dir, "d3.npy")
	if err := npy.WriteFile(data, &npy.Array{Shape: []int{600, 3}, Data: pts}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	modes := filepath.Join(dir, "m3.npy")
	if err := npy.WriteFile(modes, &npy.Array{Shape: []int{3, 3}, Data: []float64{0, 0, 0, 3, 0, 1, 0, 3, -1}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "r")
	out, errOut, code := runCLI("train", "--data", data, "--modes", modes, "--algorithm", "nt", "--iterations", "10", "--quiet", "--out", run)
	if code != 0 {
		t.Fatal(errOut)
	}
	b, err := os.ReadFile(filepath.Join(run, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Final struct {
			MaxRHat float64 `json:"max_rhat"`
		} `json:"final"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Final.MaxRHat < 1.01 {
		t.Fatalf("R-hat %v: the fixture's chains mixed, the test shows nothing", m.Final.MaxRHat)
	}
	if !strings.Contains(out, "which have not mixed (R-hat ") || !strings.Contains(out, "the sampler's weights, not the EBM's") || !strings.Contains(out, ": chains ") || strings.Contains(out, ": EBM ") || !strings.Contains(out, "weight MSE of those chains' weights") { // round 86 A1: the rows too
		t.Errorf("3-D weights without the caveat: %s", out)
	}
	if out, errOut, code := runCLI("train", "--iterations", "2", "--quiet", "--out", filepath.Join(dir, "r2")); code != 0 || !strings.Contains(out, "; by grid quadrature ") {
		t.Errorf("2-D log Z: exit %d: %s%s", code, out, errOut)
	}
}

// Round 85 B2, B9: reproduce --report embedded the density of a run it
// called mismatched (another algorithm's run in the folder) and advised
// flags that cannot make it this run.
func TestReportShowsOnlyRunsWithResults(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := runCLI("train", "--experiment", "rings", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", filepath.Join(dir, "runs", "rings-flowmc")); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, _ := runCLI("reproduce", "--report", dir, "--experiments", "rings", "--algorithms", "flowmc")
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatalf("%v: %s%s", err, out, errOut)
	}
	if strings.Contains(string(report), "runs/rings-flowmc/density") {
		t.Errorf("a mismatched run's density embedded:\n%s", report)
	}
	if !strings.Contains(string(report), "move it away: it is another experiment's or algorithm's run in this one's folder") || strings.Contains(string(report), "or give the --seed") {
		t.Errorf("the mismatch advice:\n%s", report)
	}
}

// Round 85 B5, B7: train --out into a reproduce folder, a folder of runs,
// or a folder of other files was accepted; --resume of a reproduce
// folder advised train --out there.
func TestOutFolderKinds(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "rep")
	if err := os.MkdirAll(filepath.Join(rep, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, rep, "report.md", "# report\n")
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, src, "main.go", "package main\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--out", rep, "--iterations", "2"}, "is a folder that reproduce wrote (report.md, runs/)"},
		{[]string{"train", "--out", src, "--iterations", "2"}, "holds other files (main.go): a run writes config.json"},
	} {
		if _, errOut, code := runCLI(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
	if _, errOut, code := runCLI("train", "--out", src, "--iterations", "2", "--quiet", "--force"); code != 0 || !exists(filepath.Join(src, "main.go")) {
		t.Errorf("--force among other files: exit %d: %s", code, errOut)
	}
	logged := filepath.Join(dir, "logged") // as a plan's line opens its log before train starts
	if err := os.Mkdir(logged, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, logged, "log.txt", "")
	if _, errOut, code := runCLI("train", "--out", logged, "--iterations", "2", "--quiet"); code != 0 {
		t.Errorf("a folder holding log.txt: exit %d: %s", code, errOut)
	}
	run := trainedRun(t)
	set := filepath.Join(dir, "set")
	if err := os.MkdirAll(set, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(run, filepath.Join(set, "two-modes-flowmc")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("train", "--out", set, "--iterations", "2"); code != 2 || !strings.Contains(errOut, "holds the runs two-modes-flowmc: give a folder of its own") {
		t.Errorf("a folder of runs: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI("train", "--resume", set); code != 2 || strings.Contains(errOut, "train --out") || !strings.Contains(errOut, "two-modes-flowmc") {
		t.Errorf("--resume of a folder of runs: exit %d: %s", code, errOut)
	}
}

// Round 85 B3, B11, B13: an empty value for a flag without a default was
// advised to be left out for its default; train and sample given
// positional arguments said "unknown command"; identical chains (a copied
// file) were diagnosed as two without a word.
func TestRound85Messages(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "r", "--out", ""}, "--out given an empty value: give a value (see flowebm compare --help)"},
		{[]string{"train", "rings"}, "train: 1 argument (rings), want no arguments; the experiment goes in --experiment"},
		{[]string{"sample", "e.onnx"}, "the model goes in --model"},
	} {
		if _, errOut, code := runCLI(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
	w := wave(2 * 50)
	a := filepath.Join(dir, "a.npy")
	twins := append(append([]float64{}, w[:50]...), w[:50]...)
	if err := npy.WriteFile(a, &npy.Array{Shape: []int{2, 50}, Data: twins}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("diagnose", a); code != 0 || !strings.Contains(errOut, "chains 0 and 1 (the same seed twice, or a file copied?) (numbered from 0, as the array's first axis) are identical, draw for draw") {
		t.Errorf("identical chains: exit %d: %s", code, errOut)
	}
	b := filepath.Join(dir, "b.npy")
	if err := npy.WriteFile(b, &npy.Array{Shape: []int{2, 50}, Data: w}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, errOut, _ := runCLI("diagnose", b); strings.Contains(errOut, "identical") {
		t.Errorf("distinct chains: %s", errOut)
	}
}

// Round 85 B6: reproduce --plan wrote a --resume line for an interrupted
// run whose config.json had been edited, a line that then failed.
func TestPlanLeavesOutEditedRun(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "runs", "two-modes-flowmc")
	if code, stderr := interruptAtFirstCheckpoint(t, run, "train", "--experiment", "two-modes", "--algorithm", "flowmc", "--seed", "1", "--iterations", "400", "--quiet", "--out", run); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg := filepath.Join(run, "config.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), `"lr": 0.01`, `"lr": 0.5`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "400", "--out", dir, "--plan", filepath.Join(dir, "plan.txt"))
	if code != 0 || !strings.Contains(out, "two-modes-flowmc (its config.json was edited since its checkpoint") || !strings.Contains(out, "0 of 1 runs to train") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
}

// Round 86 A2: in 2D an IS log Z 6.5 standard errors from the grid's was
// printed beside it without the held-out log-likelihood the grid gives;
// round 104 A2: without saying which to trust.
func TestGridLogZNote(t *testing.T) {
	z := metrics.LogZEstimate{LogZ: -0.448, SE: 0.066, ESS: 0.05}
	if got := gridLogZNote(z, -0.017, 0, -3.482); !strings.Contains(got, "by grid quadrature -0.017, 6.5 standard errors away: importance sampling is off by more than its standard error says (its draws miss mass the grid counts); in 2D the grid's is the better estimate: with it the held-out log-likelihood is -3.913") {
		t.Errorf("%q", got)
	}
	if got := gridLogZNote(metrics.LogZEstimate{LogZ: -0.5, SE: 0.033, ESS: 0.18}, -0.506, 0, -1.861); got != "; by grid quadrature -0.506" {
		t.Errorf("agreeing: %q", got)
	}
}

// Round 86 A1, B1, B2, B9: the rows of unmixed chains' weights read
// "EBM"; a plan's resume line run again on a finished run exited 2; a
// reproduce run folder holding a user's file failed at every retry; train
// --seeds --out took a reproduce folder or a folder of other files.
func TestRound86Folders(t *testing.T) {
	run := trainedRun(t)
	if _, errOut, code := runCLI("train", "--resume", run, "--plot-format", "png"); code != 0 {
		t.Errorf("a finished run resumed with its own plot format: exit %d: %s", code, errOut)
	}
	dir := t.TempDir()
	rd := filepath.Join(dir, "rp", "runs", "two-modes-ula")
	if err := os.MkdirAll(rd, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, rd, "notes.txt", "mine")
	if _, errOut, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "2", "--out", filepath.Join(dir, "rp")); code != 2 || !strings.Contains(errOut, rd+" holds notes.txt, which are not a run's files") {
		t.Errorf("reproduce over a user's file: exit %d: %s", code, errOut)
	}
	writeFile(t, filepath.Join(dir, "rp"), "report.md", "# r\n")
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, src, "main.go", "package main\n")
	for _, c := range []struct{ out, want string }{
		{filepath.Join(dir, "rp"), "is a folder that reproduce wrote (report.md, runs/)"},
		{src, "holds other files (main.go): --seeds writes sSEED folders"},
	} {
		if _, errOut, code := runCLI("train", "--seeds", "1-2", "--iterations", "2", "--out", c.out); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("--seeds --out %s: exit %d: %s", c.out, code, errOut)
		}
	}
}

// Round 86 A4, B5: the units note stated as fact for a model that records
// no units (a network exported with --what ebm and converted back is in
// the flow's); lists of runs were cut at 5 without a word.
func TestUnitsNoteAndRunLists(t *testing.T) {
	std := &data.Scaling{Shift: []float64{1, 2}, Scale: []float64{3, 4}}
	if n := flowUnitsNote("f.onnx", nil, std); !strings.Contains(n, "--model records none: if the model's chains are in the data's units") || strings.Contains(n, "was trained in other units") {
		t.Errorf("no units recorded: %q", n)
	}
	if n := flowUnitsNote("f.onnx", std, &data.Scaling{Shift: []float64{0, 0}, Scale: []float64{2, 2}}); !strings.Contains(n, "was trained in other units than --model's chains") {
		t.Errorf("other units: %q", n)
	}
	if got := listRuns([]string{"a", "b", "c", "d", "e", "f"}); got != "a, b, c, d, e, … (6 in all)" {
		t.Errorf("listRuns: %q", got)
	}
}

// Round 86 A3: convert --what ebm wrote the network without its tilt
// unsaid, and the checkpoint converted back took --base 1.
func TestEbmExportNamesTilt(t *testing.T) {
	run := trainedRun(t)
	dir := t.TempDir()
	e := filepath.Join(dir, "e.onnx")
	out, errOut, code := runCLI("convert", run, e, "--what", "ebm")
	if code != 0 || !strings.Contains(out, "note: the network alone, without the checkpoint's tilt ρ = N(0, σ² I), σ = ") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	sigma := out[strings.LastIndex(out, "--base ")+len("--base "):]
	sigma = strings.TrimSpace(sigma)
	ck := filepath.Join(dir, "ck")
	if _, errOut, code := runCLI("convert", e, ck, "--base", sigma); code != 0 {
		t.Fatal(errOut)
	}
	pts := writeFile(t, dir, "p.csv", "0.3,-0.2\n1,1\n")
	a, _, _ := runCLI("energy", "--model", run, "--points", pts)
	b, _, _ := runCLI("energy", "--model", ck, "--points", pts)
	if a == "" || a != b {
		t.Errorf("energies of the run %q and of the network converted back with the advised --base %q", a, b)
	}
}

// Round 86 B3: a reproduce run folder killed as its run started (its lock
// and log only) was advised train --out with train's defaults, which
// reproduce then refused as another run.
func TestResumeOfEmptyReproduceRunFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rp", "runs", "two-modes-flowmc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "log.txt", "")
	if _, errOut, code := runCLI("train", "--resume", dir); code != 2 || strings.Contains(errOut, "train --out") || !strings.Contains(errOut, "give the same reproduce command again") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

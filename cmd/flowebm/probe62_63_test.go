package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Probe 62 B2: reproduce --plot-format svg over runs drawn in PNG redrew
// the figures of their evaluations but not their densities (drawn from the
// model), and the report's "Densities" section was empty, with no note.
// They are drawn as plot draws them, and the report shows them.
func TestReproduceRedrawsDensityInFormat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rp")
	args := []string{"reproduce", "--experiments", "rings", "--algorithms", "ula", "--iterations", "10", "--jobs", "1", "--out", out}
	if so, se, code := runCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s %s", code, so, se)
	}
	density := filepath.Join(out, "runs", "rings-ula", "density")
	if !exists(density+".png") || exists(density+".svg") {
		t.Fatalf("the run's density: png %v, svg %v", exists(density+".png"), exists(density+".svg"))
	}
	for _, again := range [][]string{append(args, "--plot-format", "svg"), {"reproduce", "--report", out, "--experiments", strings.Join(reproduceExperiments, ","), "--plot-format", "pdf"}} { // every experiment, not the recorded set (round 87 B2)
		if so, se, code := runCLI(again...); code != 0 || strings.Contains(so+se, "warning") {
			t.Fatalf("%v: exit %d: %s %s", again, code, so, se)
		}
		ext := "." + again[len(again)-1]
		report, err := os.ReadFile(filepath.Join(out, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !exists(density+ext) || !strings.Contains(string(report), "(runs/rings-ula/density"+ext+")") {
			t.Errorf("%s: density drawn %v; report:\n%s", ext, exists(density+ext), report)
		}
	}
	// Round 63 (cosmetic): the --report without --experiments drew
	// empty figures (axes -1..1) for the experiments with no runs.
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rhat-four-gaussians-16.pdf", "two-modes-weights.pdf", "four-modes-mse.pdf"} {
		if exists(filepath.Join(out, f)) || strings.Contains(string(report), f) {
			t.Errorf("%s drawn for runs that have not evaluated", f)
		}
	}
	// Probe 69 B6: the densities' caption over no image.
	run := filepath.Join(out, "runs", "rings-ula")
	for _, f := range []string{"checkpoint", "density.png", "density.svg", "density.pdf"} {
		os.RemoveAll(filepath.Join(run, f))
	}
	if so, se, code := runCLI("reproduce", "--report", out); code != 0 && !strings.Contains(so+se, "report") {
		t.Fatalf("report without densities: %d %s %s", code, so, se)
	}
	if b, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || strings.Contains(string(b), "Densities (each run's") || !strings.Contains(string(b), "Densities: "+noFigure) {
		t.Errorf("densities' caption over no image (%v):\n%s", err, b)
	}
	if strings.Contains(string(report), "Persistent chains after training") { // probe 68 B7: a caption over no image
		t.Errorf("the image section's caption without images:\n%s", report)
	}
	if !strings.Contains(string(report), "four-gaussians-16: "+noFigure) {
		t.Errorf("the report does not say why four-gaussians-16 has no R-hat figure:\n%s", report)
	}
}

// Probe 63 B7: a .txt file of draws was read as a .npy ("magic string is
// \"mu,tau\"") and several were "CmdStan output CSV files"; the message
// names the extension and says to rename it. B4: a CSV's chains are named
// by its chain numbers in the figures' legends, not by their position.
func TestDiagnoseExtensionAndChainLabels(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("chain,mu\n")
	for _, c := range []int{10, 20, 30, 40} {
		for n := range 50 {
			fmt.Fprintf(&b, "%d,%g\n", c, float64((n*7+c)%13)/13)
		}
	}
	for _, name := range []string{"d.txt", "d.csv"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, se, code := runCLI("diagnose", filepath.Join(dir, "d.txt")); code == 0 || !strings.Contains(se, "reads as .csv (rename it)") {
		t.Errorf("one .txt: %d %s", code, se)
	}
	if _, se, code := runCLI("diagnose", filepath.Join(dir, "d.txt"), filepath.Join(dir, "d.csv")); code == 0 || !strings.Contains(se, `this one is ".txt"`) {
		t.Errorf("two files: %d %s", code, se)
	}
	x, err := readChains([]string{filepath.Join(dir, "d.csv")}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.chainLabels, []string{"10", "20", "30", "40"}) {
		t.Errorf("chain labels %v", x.chainLabels)
	}
}

// Probe 63 B8: plot refused a run without a checkpoint ("nothing to draw
// from") though its metrics.csv holds what its evaluations' figures are
// drawn from; it draws those and says the model's need a checkpoint.
func TestPlotWithoutCheckpoint(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	if so, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "flowmc", "--iterations", "10", "--out", run, "--quiet"); code != 0 {
		t.Fatalf("train: %d %s %s", code, so, se)
	}
	if err := os.RemoveAll(filepath.Join(run, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	so, se, code := runCLI("plot", run, "--plot-format", "svg")
	if code != 0 || !exists(filepath.Join(run, "acceptance.svg")) || !strings.Contains(so, "those of the model, density and samples, need a checkpoint") {
		t.Errorf("plot: %d %s %s", code, so, se)
	}
}

// Probe 63 (cosmetic): a mean of 1e8 printed "1e+08" beside an MCSE of
// 0.095; a mean is written to the digit its MCSE reaches, and one more.
func TestMeanToItsMCSE(t *testing.T) {
	for _, c := range []struct {
		mean, mcse float64
		want       string
	}{{1e8 + 0.123, 0.095, "100000000.123"}, {-0.02237, 0.023, "-0.022"}, {2.9996, 1.5, "3.0"}, {4.99995, 0.00016, "4.99995"}, {3, 0.00016, "3.00000"}, {1.5, math.NaN(), "1.5"}, {123.456, 0, "123.5"},
		{1e20, 0.1, "1.0000000000000000e+20"}} { // round 74 B1: to the MCSE's digit in exponent form, 17 digits at most (was "1e+20")
		if got := meanText(c.mean, c.mcse); got != c.want {
			t.Errorf("mean %v ± %v: %q, want %q", c.mean, c.mcse, got, c.want)
		}
	}
}

// Probe 64 B3: a posterior draws_df whose variable is named chain (beside
// .chain, .iteration, .draw) was grouped by that variable: 8 chains of 25
// draws at exit 0, or refused for a non-integer chain number. The
// dot-prefixed meta columns decide, and chain is a variable.
func TestDrawsDfVariableNamedChain(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("chain,theta,.chain,.iteration,.draw\n")
	for c := 1; c <= 4; c++ {
		for n := 1; n <= 50; n++ {
			fmt.Fprintf(&b, "%d,%g,%d,%d,%d\n", 1+(n%2)+2*(c%2), float64((n*7+c*3)%11)/11, c, n, (c-1)*50+n)
		}
	}
	path := filepath.Join(dir, "draws.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := readChains([]string{path}, "")
	if err != nil {
		t.Fatal(err)
	}
	if x.chains != 4 || x.draws != 50 || !slices.Equal(x.names, []string{"chain", "theta"}) {
		t.Errorf("%d chains × %d draws, dims %v", x.chains, x.draws, x.names)
	}
}

// Probe 64 B4: a tab-separated file was told to be renamed .csv, and then
// refused for its tabs; the first message says to write it with commas.
func TestDiagnoseTabSeparatedAdvice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.tsv")
	if err := os.WriteFile(path, []byte("chain\tmu\n1\t0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, se, code := runCLI("diagnose", path); code == 0 || !strings.Contains(se, "this one holds tabs: write the draws with commas") {
		t.Errorf("%d %s", code, se)
	}
}

// Probe 64 (noted): plot and compare called the folder train --seeds
// wrote "not a run folder", naming none of the runs it holds.
func TestSeedsFolderNamesItsRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	if so, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "5", "--seeds", "1,2", "--out", out, "--quiet"); code != 0 {
		t.Fatalf("train: %d %s %s", code, so, se)
	}
	for _, args := range [][]string{{"plot", out}, {"compare", out, "--out", filepath.Join(t.TempDir(), "c")}} {
		if _, se, code := runCLI(args...); code == 0 || !strings.Contains(se, "it holds the runs s1, s2") {
			t.Errorf("%v: %d %s", args, code, se)
		}
	}
}

// Probe 65 B3: with --config, an error about the --data file was prefixed
// with the config file's name ("c.json: open …/nonexist.npy").
func TestDataErrorNotBlamedOnConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	if err := os.WriteFile(cfg, []byte(`{"train":{"iterations":5}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("x1,x2\n0.5,1\n,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	constant := filepath.Join(dir, "const.csv") // probe 66 B4: contents refused, still prefixed
	if err := os.WriteFile(constant, []byte("a,b\n1,5\n2,5\n3,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{filepath.Join(dir, "nonexist.npy"), bad, constant} {
		_, se, code := runCLI("train", "--config", cfg, "--data", data, "--out", filepath.Join(dir, "r"))
		if code == 0 || strings.Contains(se, "c.json:") || !strings.Contains(se, data) {
			t.Errorf("%s: %d %s", data, code, se)
		}
	}
}

// Probe 65 A4: the flow of a run trained on standardised data proposed in
// those units for an energy given in the data's, unsaid.
func TestFlowUnitsNote(t *testing.T) {
	std := &data.Scaling{Shift: []float64{1, 2}, Scale: []float64{3, 4}}
	if flowUnitsNote("run", nil, std) == "" || flowUnitsNote("run", std, nil) == "" {
		t.Error("no note for a flow in other units")
	}
	same := &data.Scaling{Shift: []float64{1, 2}, Scale: []float64{3, 4}}
	if n := flowUnitsNote("run", std, same) + flowUnitsNote("run", nil, nil); n != "" {
		t.Errorf("a note for the same units: %q", n)
	}
}

// Probe 65 (cosmetic): a flow of another dimension was refused with
// "(model.float32 sets the type)", which does not apply to dimensions.
func TestTrainFlowDimensionMessage(t *testing.T) {
	p := "../../io/onnx/testdata/pinned/"
	_, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "flowmc", "--flow", p+"nflowsstyle_nofold_sample.onnx",
		"--flow-density", p+"nflowsstyle_nofold_density.onnx", "--iterations", "2", "--out", filepath.Join(t.TempDir(), "r"))
	if code == 0 || !strings.Contains(se, "is in dimension 3, the run's models in dimension 2") || strings.Contains(se, "model.float32") {
		t.Errorf("%d %s", code, se)
	}
}

// Probe 65 (cosmetic): sample --resume given a train checkpoint's
// state.npz named a member it did not know; it names train --resume.
func TestSampleResumeOfTrainState(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	if so, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "5", "--out", run, "--quiet"); code != 0 {
		t.Fatalf("train: %d %s %s", code, so, se)
	}
	_, se, code := runCLI("sample", "--resume", filepath.Join(run, "checkpoint", "state.npz"))
	if code == 0 || !strings.Contains(se, "flowebm train --resume "+run) {
		t.Errorf("%d %s", code, se)
	}
}

// Probe 66 B3: a --print-config of one data file, given with --data
// ANOTHER, kept the first file's data_size: 180 of the other's 1800
// training rows were trained on, while the note said 1800. The other
// file's rows are all used, and a note says why.
func TestConfigDataSizeOfAnotherFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		var b strings.Builder
		b.WriteString("a,b\n")
		for i := range n {
			fmt.Fprintf(&b, "%g,%g\n", float64(i%7)/3-1, float64(i%5)/2-1)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small, big := write("small.csv", 200), write("big.csv", 2000)
	cfg, se, code := runCLI("train", "--data", small, "--iterations", "30", "--print-config")
	if code != 0 || !strings.Contains(cfg, `"data_size": 180`) {
		t.Fatalf("print-config: %d %s", code, se)
	}
	path := filepath.Join(dir, "cs.json")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, se, code := runCLI("train", "--config", path, "--data", big, "--print-config")
	if code != 0 || !strings.Contains(out, `"data_size": 1800`) {
		t.Errorf("%d %s %s", code, out, se)
	}
}

// Probe 66 B2: plot on a --data run without a checkpoint drew nothing
// ("nothing to draw from"): the figures of its evaluations were looked up
// by experiment name, and a data run's experiment is built from its file.
// They are drawn (the weights figure with the --modes file's three
// modes); with the data file gone, the refusal names it.
func TestPlotDataRunWithoutCheckpoint(t *testing.T) {
	dir := t.TempDir()
	threeModes(t, dir, 600, []float64{0.2, 0.3, 0.5}, 1)
	run := filepath.Join(dir, "r")
	if so, se, code := runCLI("train", "--data", filepath.Join(dir, "mix.npy"), "--modes", filepath.Join(dir, "modes.npy"), "--iterations", "10", "--out", run, "--quiet"); code != 0 {
		t.Fatalf("train: %d %s %s", code, so, se)
	}
	if err := os.RemoveAll(filepath.Join(run, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	so, se, code := runCLI("plot", run, "--plot-format", "svg")
	if code != 0 || !exists(filepath.Join(run, "weights.svg")) || !strings.Contains(so, "those of its evaluations only") {
		t.Fatalf("plot: %d %s %s", code, so, se)
	}
	if b, err := os.ReadFile(filepath.Join(run, "weights.svg")); err != nil || !strings.Contains(string(b), "mode 3 (truth ") {
		t.Errorf("weights.svg lacks the --modes file's third mode (%v)", err)
	}
	if err := os.Remove(filepath.Join(dir, "mix.npy")); err != nil {
		t.Fatal(err)
	}
	_, se, code = runCLI("plot", run)
	if code == 0 || !strings.Contains(se, "mix.npy is gone") {
		t.Errorf("plot without the data: %d %s", code, se)
	}
}

// Probe 65 (cosmetic): a data_size set on purpose trained on fewer rows
// than the data note's count, unsaid; a second note says how many.
func TestDataSizeNote(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b\n")
	for i := range 400 {
		fmt.Fprintf(&b, "%g,%g\n", float64(i%7)/3-1, float64(i%5)/2-1)
	}
	data := filepath.Join(dir, "d.csv")
	cfg := filepath.Join(dir, "c.json")
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`{"data_size": 100}`), 0o644); err != nil {
		t.Fatal(err)
	}
	so, se, code := runCLI("train", "--config", cfg, "--data", data, "--iterations", "2", "--out", filepath.Join(dir, "r"), "--quiet")
	if all := so + se; code != 0 || !strings.Contains(all, "360 training and 40 held-out rows") || !strings.Contains(all, "data_size 100: the models train on 100 of these 360 training rows") {
		t.Errorf("%d %s %s", code, so, se)
	}
}

// Probe 67 B1: --plot-dims split theta[1,2] (posterior's and Stan's name
// of a matrix element, listed as a choice) at its comma: "no dimension
// \"theta[1\"". Commas inside brackets are part of a name, and quotes
// around one are dropped.
func TestPlotDimsNamesWithCommas(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`"theta[1,1]","theta[1,2]",".chain",".iteration",".draw"` + "\n")
	for c := 1; c <= 4; c++ {
		for n := 1; n <= 50; n++ {
			fmt.Fprintf(&b, "%g,%g,%d,%d,%d\n", float64((n*7+c*3)%11)/11, float64((n*5+c)%13)/13, c, n, (c-1)*50+n)
		}
	}
	path := filepath.Join(dir, "pd.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, dims := range []string{"theta[1,2]", `"theta[1,2]"`, "theta[1,2], theta[1,1]"} {
		plots := filepath.Join(dir, fmt.Sprint("p", i))
		so, se, code := runCLI("diagnose", path, "--plots", plots, "--plot-dims", dims)
		if m, _ := filepath.Glob(filepath.Join(plots, "theta_1_2_*")); code != 0 || len(m) == 0 {
			t.Errorf("--plot-dims %s: %d %s %s; figures %v", dims, code, so, se, m)
		}
	}
	if got := splitDimList(`theta[1,2], "a,b" ,mu,f(1,2)`); !slices.Equal(got, []string{"theta[1,2]", "a,b", "mu", "f(1,2)"}) {
		t.Errorf("split %q", got)
	}
}

// Probe 67 B2: a sample whose --out another process wrote meanwhile
// printed "continue with: flowebm sample --resume CK", which was then
// refused for that --out; the advice names a new --out, and works.
func TestSampleOutTakenAdvice(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	out, ck := filepath.Join(dir, "cs.npy"), filepath.Join(dir, "cs.ck.npz")
	defer func() { testHook = nil }()
	testHook = func(point string) {
		if point == "output-writing" && !exists(out) {
			os.WriteFile(out, []byte("another process's"), 0o644)
		}
	}
	_, se, code := runCLI("sample", "--model", model, "--sampler", "mala", "--chains", "4", "--steps", "20", "--checkpoint", ck, "--checkpoint-every", "5", "--out", out)
	testHook = nil
	want := "continue with: flowebm sample --resume " + ck + " --out NEW.npy"
	if code == 0 || !strings.Contains(se, "exists (another process wrote it meanwhile?)") || !strings.Contains(se, want) {
		t.Fatalf("exit %d: %s; want %q", code, se, want)
	}
	if so, se, code := runCLI("sample", "--resume", ck, "--out", filepath.Join(dir, "new.npy")); code != 0 || !exists(filepath.Join(dir, "new.npy")) {
		t.Errorf("the advice followed: exit %d: %s %s", code, so, se)
	}
	if b, _ := os.ReadFile(out); string(b) != "another process's" {
		t.Errorf("the other process's --out was replaced")
	}
}

// Probe 67 B4: plot and compare on reproduce's folders said its runs were
// written "as train --seeds writes them", said nothing of the runs in
// DIR/runs when given DIR, and plot on a run's checkpoint folder did not
// name the run.
func TestRunFolderHintsForReproduceAndCheckpoints(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "rep")
	if so, se, code := runCLI("reproduce", "--experiments", "rings", "--algorithms", "ula", "--iterations", "4", "--jobs", "1", "--out", rep); code != 0 {
		t.Fatalf("reproduce: %d %s %s", code, so, se)
	}
	run := filepath.Join(rep, "runs", "rings-ula")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", rep}, "it is a folder that reproduce wrote, and its runs/ holds the runs rings-ula: give those, e.g. " + run},
		{[]string{"compare", rep, "--out", filepath.Join(rep, "x")}, "it is a folder that reproduce wrote"},
		{[]string{"plot", filepath.Join(rep, "runs")}, "(as reproduce writes them)"},
		{[]string{"plot", filepath.Join(run, "checkpoint")}, "it is the checkpoint folder of the run " + run + ": give the run"},
		{[]string{"compare", filepath.Join(run, "checkpoint"), "--out", filepath.Join(rep, "y")}, "it is the checkpoint folder of the run " + run},
	} {
		if _, se, code := runCLI(c.args...); code == 0 || !strings.Contains(se, c.want) {
			t.Errorf("%v: exit %d: %s; want %q", c.args, code, se, c.want)
		}
	}
}

// Probe 67 B7: train printed "acceptance: local 1.00" for ULA-EBM, whose
// Langevin steps have no accept step (the report shows —).
func TestULALocalAcceptanceNotApplicable(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	so, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "3", "--out", run, "--quiet")
	if code != 0 || !strings.Contains(so+se, "acceptance: local n/a (unadjusted Langevin: no accept step), global n/a") {
		t.Errorf("%d %s %s", code, so, se)
	}
	// Round 117 A3: metrics.json and metrics.csv recorded it as 1.
	if m := string(mustRead(t, filepath.Join(run, "metrics.json"))); !strings.Contains(m, `"local_accept": null`) {
		t.Errorf("metrics.json's local_accept is not null:\n%s", m)
	}
	rows := strings.Split(strings.TrimSpace(string(mustRead(t, filepath.Join(run, "metrics.csv")))), "\n")
	if !strings.HasPrefix(rows[0], "iter,loss,flow_ll,local_accept,") || strings.Split(rows[len(rows)-1], ",")[3] != "NaN" {
		t.Errorf("metrics.csv's local_accept: %s / %s", rows[0], rows[len(rows)-1])
	}
}

// Probe 67 B8: train --resume of a finished run ignored --plot-format at
// exit 0 (no figure drawn), where other ignored flags are refused; the
// refusal names the plot command that draws them. And "--iterations would
// be ignored: drop them" for one flag.
func TestResumeFinishedWithPlotFormat(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	if so, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "2", "--out", run, "--quiet"); code != 0 {
		t.Fatalf("train: %d %s %s", code, so, se)
	}
	_, se, code := runCLI("train", "--resume", run, "--plot-format", "svg")
	if want := "--plot-format would be ignored; to draw its figures in svg: flowebm plot " + run + " --plot-format svg"; code == 0 || !strings.Contains(se, want) {
		t.Errorf("exit %d: %s; want %q", code, se, want)
	}
	if so, se, code := runCLI("train", "--resume", run); code != 0 || !strings.Contains(so, "nothing to do") {
		t.Errorf("without --plot-format: %d %s %s", code, so, se)
	}
	if _, se, code := runCLI("train", "--resume", run, "--iterations", "5"); code == 0 || !strings.Contains(se, "--iterations would be ignored: drop it") {
		t.Errorf("one flag: %d %s", code, se)
	}
}

// Probe 67 B9: missing or extra arguments were refused in cobra's words
// ("requires at least 1 arg(s), only received 0"), and sample without
// --out asked for the --model it had.
func TestArgumentRefusalsNameWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diagnose"}, "diagnose: give the draws: a .npy or .npz of chains × draws × dims, or CSV files (usage: flowebm diagnose"},
		{[]string{"plot"}, "plot: give one or more run folders that flowebm train wrote (usage: flowebm plot RUN...)"},
		{[]string{"compare"}, "compare: give one or more run folders"},
		{[]string{"convert", "r1"}, "convert: give two paths, the input and the output"},
		{[]string{"energy", "r1", "p0.npy"}, "energy: 2 arguments (r1 p0.npy), want at most one, the points (the same as --points X); the model goes in --model"},
		{[]string{"sample", "--model", "r1"}, "give --out CHAINS.npy (where the draws go)"},
	} {
		if _, se, code := runCLI(c.args...); code == 0 || !strings.Contains(se, c.want) || strings.Contains(se, "arg(s)") {
			t.Errorf("%v: exit %d: %s; want %q", c.args, code, se, c.want)
		}
	}
	if _, se, _ := runCLI("sample", "--model", "r1"); strings.Contains(se, "give --model") {
		t.Errorf("sample asked for the --model it had: %s", se)
	}
}

// Probe 67 A5: a --print-config of ula, coopflow or nt, given back with
// --config, was noted "train.flow_optim, … not used by ula: ignored": the
// fields an algorithm does not use are noted only where they differ from
// the defaults that config.json records, and the run it gives is the same
// as the flags' own.
func TestPrintConfigLeavesOutUnusedFields(t *testing.T) {
	dir := t.TempDir()
	for _, alg := range []string{"ula", "coopflow", "nt"} {
		cfg, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", alg, "--iterations", "3", "--print-config")
		if code != 0 {
			t.Fatalf("%s: print-config: %d %s", alg, code, se)
		}
		path := filepath.Join(dir, alg+".json")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		a, b := filepath.Join(dir, alg+"-flags"), filepath.Join(dir, alg+"-config")
		if so, se, code := runCLI("train", "--experiment", "two-modes", "--algorithm", alg, "--iterations", "3", "--out", a, "--quiet"); code != 0 {
			t.Fatalf("%s: %d %s %s", alg, code, so, se)
		}
		so, se, code := runCLI("train", "--config", path, "--out", b, "--quiet")
		if code != 0 || strings.Contains(so+se, "not used by") {
			t.Errorf("%s: --config of its --print-config: %d %s %s", alg, code, so, se)
		}
		ma, _ := os.ReadFile(filepath.Join(a, "metrics.csv"))
		mb, _ := os.ReadFile(filepath.Join(b, "metrics.csv"))
		if len(ma) == 0 || string(ma) != string(mb) {
			t.Errorf("%s: the printed configuration trains another run", alg)
		}
	}
	changed := filepath.Join(dir, "changed.json")
	if err := os.WriteFile(changed, []byte(`{"train": {"algorithm": "ula", "flow_steps": 3}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if so, se, code := runCLI("train", "--config", changed, "--iterations", "2", "--out", filepath.Join(dir, "c"), "--quiet"); code != 0 || !strings.Contains(so+se, "train.flow_steps not used by ula: ignored") {
		t.Errorf("a field set on purpose: %d %s %s", code, so, se)
	}
}

// Probe 68 A3: sample --warmup 0 with --flow and --train-flow said
// "flowmc without a flow"; --patience 1 printed "in 1 windows".
func TestAdaptiveMessagesWithAFlow(t *testing.T) {
	flows := "../../io/onnx/testdata/flows/"
	model := flows + "bimodal_energy.onnx"
	_, se, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--flow", flows+"realnvp2_f64_sample.onnx", "--flow-density", flows+"realnvp2_f64_density.onnx",
		"--train-flow", "--flow-out", filepath.Join(t.TempDir(), "fo"), "--warmup", "0", "--chains", "4", "--steps", "5", "--out", filepath.Join(t.TempDir(), "s.npy"))
	if code == 0 || !strings.Contains(se, "--warmup 0: flowmc with --train-flow trains the flow during the warm-up") {
		t.Errorf("exit %d: %s", code, se)
	}
	var b strings.Builder
	adaptiveProgress(&b, time.Now(), 1)(algorithms.AdaptiveReport{Cycle: 20, Cycles: 100, Stopped: true})
	if !strings.Contains(b.String(), "in 1 window of 10 cycles (--patience 1)") {
		t.Errorf("%q", b.String())
	}
}

// cmdstanFile writes a CmdStan CSV of one chain: with save_warmup, warm
// warm-up draws of mu = 100 (thinned), then draws of mu in [-1, 1]; with
// adapt, the "# Adaptation terminated" comment between them.
func cmdstanFile(t *testing.T, path string, chain, warm, draws, thin int, saveWarmup, adapt bool) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# stan_version_major = 2\n# method = sample (Default)\n#   sample\n#     num_samples = %d\n#     num_warmup = %d\n", draws, warm)
	fmt.Fprintf(&b, "#     save_warmup = %d\n#     thin = %d\n#     adapt\n#       engaged = %d\n# id = %d\n", map[bool]int{false: 0, true: 1}[saveWarmup], thin, map[bool]int{false: 0, true: 1}[adapt], chain)
	b.WriteString("lp__,accept_stat__,mu\n")
	if saveWarmup {
		for i := 0; i < warm; i += thin {
			fmt.Fprintf(&b, "-1,0.9,%d\n", 100+i)
		}
	}
	if adapt {
		b.WriteString("# Adaptation terminated\n# Step size = 0.5\n")
	}
	for i := 0; i < draws; i += thin {
		fmt.Fprintf(&b, "-1,0.9,%g\n", float64((i*7+chain*3)%21)/10-1)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Probe 68 B1: CmdStan files with save_warmup = 1 and adaptation off
// (engaged = 0: no "# Adaptation terminated") kept their warm-up draws,
// unsaid (mean 50 for 0); the header's ceil(num_warmup/thin) are dropped,
// as cmdstanpy does. B3: the note of the draws dropped said the first
// file's count of every file.
func TestCmdStanWarmupWithoutAdaptation(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for c := 1; c <= 4; c++ {
		p := filepath.Join(dir, fmt.Sprintf("noadapt_%d.csv", c))
		cmdstanFile(t, p, c, 100, 200, 3, true, false)
		files = append(files, p)
	}
	x, err := readChains(files, "")
	if err != nil {
		t.Fatal(err)
	}
	if x.draws != 67 || !strings.Contains(x.dtype, "34 warm-up draws per chain dropped") || slices.Max(x.data) > 1 {
		t.Errorf("%d draws, %q, largest %v", x.draws, x.dtype, slices.Max(x.data))
	}
	// Probe 69 B1: the fixed_param sampler writes no warm-up rows under a
	// header of num_warmup 1000 and save_warmup 1: nothing is dropped
	// (1000 of 1200 draws were); nor where there are more rows than the
	// header's warm-up and draws. Round 71: a chain interrupted while
	// sampling (fewer rows) kept its warm-up (a mean of 20 for 0); its
	// first ceil(num_warmup/thin) rows are dropped, and the note says so.
	for i, edit := range []func(string) string{
		func(s string) string {
			return strings.Replace(s, "# method = sample (Default)\n", "# method = sample (Default)\n#     algorithm = fixed_param\n", 1)
		},
		func(s string) string { return strings.Replace(s, "num_samples = 200", "num_samples = 50", 1) },
		func(s string) string { return strings.Replace(s, "num_samples = 200", "num_samples = 500", 1) },
	} {
		var ps []string
		for c := 1; c <= 2; c++ {
			p := filepath.Join(dir, fmt.Sprintf("other_%d_%d.csv", i, c))
			cmdstanFile(t, p, c, 0, 200, 1, true, false)
			b, _ := os.ReadFile(p)
			text := strings.Replace(edit(string(b)), "num_warmup = 0", "num_warmup = 100", 1)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		x, err := readChains(ps, "")
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		more := strings.Contains(x.dtype, "but with more rows than the header's warm-up and draws: no warm-up dropped")
		cut := strings.Contains(x.dtype, "100 warm-up draws per chain dropped; other_2_1.csv, other_2_2.csv: fewer draws than the header's num_samples (a chain interrupted while sampling)")
		if want := []int{200, 200, 100}[i]; x.draws != want || more != (i == 1) || cut != (i == 2) || i == 0 && strings.Contains(x.dtype, "warm-up") { // probe 70: more rows, kept, noted
			t.Errorf("case %d: %d draws, want %d; %q", i, x.draws, want, x.dtype)
		}
	}
	// Round 71 B7: the refusal of a file of warm-up alone cited the
	// adaptation comment the file does not have.
	all, all2 := filepath.Join(dir, "allwarm.csv"), filepath.Join(dir, "allwarm2.csv")
	cmdstanFile(t, all, 1, 100, 0, 1, true, false)
	cmdstanFile(t, all2, 2, 100, 0, 1, true, false)
	if _, err := readChains([]string{all, all2}, ""); err == nil || !strings.Contains(err.Error(), "allwarm.csv: all 100 draws are warm-up (save_warmup = 1, the header's num_warmup = 100, thin = 1, and no adaptation): no draws to diagnose") {
		t.Errorf("warm-up alone: %v", err)
	}
	// Round 72 B4: a chain stopped while adapting (engaged = 1, no
	// "# Adaptation terminated" yet) was said to have had no adaptation.
	// Round 73 B2: nor as "engaged = true", CmdStan 2.33's form.
	for i, p := range []string{all, all2} {
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), "engaged = 0", []string{"engaged = true (Default)", "engaged = 1 (Default)"}[i], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := readChains([]string{all, all2}, ""); err == nil || !strings.Contains(err.Error(), "allwarm.csv: all 100 draws are warm-up (save_warmup = 1, the header's num_warmup = 100, thin = 1, adaptation engaged and no \"# Adaptation terminated\" line: the chain stopped during warm-up)") {
		t.Errorf("stopped while adapting: %v", err)
	}
	a, n := filepath.Join(dir, "adapt.csv"), filepath.Join(dir, "nosave.csv")
	cmdstanFile(t, a, 1, 100, 200, 1, true, true)
	cmdstanFile(t, n, 2, 100, 200, 1, false, true)
	if x, err = readChains([]string{a, n}, ""); err != nil || !strings.Contains(x.dtype, "warm-up draws dropped per file: 100, 0") {
		t.Errorf("mixed files: %v %v", x, err)
	}
}

// Probe 68 B9: a comma-separated file whose quoted header name holds a tab
// was told it was tab-separated; B7: the report's image section named all
// four algorithms over no image; B8: log Z of -8.1e-05 ± 2.0e-05 printed
// "-0.000 ± 0.000"; B5: --iterations promised that the decay is stretched
// to match, which short runs do not get.
func TestProbe68Messages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte("\"tab\tx\",mu\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, se, code := runCLI("diagnose", path); code == 0 || strings.Contains(se, "holds tabs") || !strings.Contains(se, "holds control characters") {
		t.Errorf("quoted tab: %d %s", code, se)
	}
	if got := withError(-8.1e-5, 2.0e-5); got != "-8.1e-05 ± 2e-05" {
		t.Errorf("withError: %q", got)
	}
	if got := withError(-0.381, 0.005); got != "-0.381 ± 0.005" {
		t.Errorf("withError: %q", got)
	}
	if so, _, _ := runCLI("train", "--help"); !strings.Contains(so, "rounded down to at least 1") {
		t.Errorf("--iterations help: %s", so)
	}
}

// Probe 69 B3: convert --what ebm of a run on standardised data wrote a
// graph over the standardised coordinates, unsaid; B4: flowebm's own
// --what energy and flow-density exports were refused by convert with the
// Linears' messages alone.
func TestConvertStandardisedAndOwnExports(t *testing.T) {
	dir := t.TempDir()
	threeModes(t, dir, 600, []float64{0.2, 0.3, 0.5}, 1)
	run := filepath.Join(dir, "r")
	if so, se, code := runCLI("train", "--data", filepath.Join(dir, "mix.npy"), "--iterations", "3", "--out", run, "--quiet"); code != 0 {
		t.Fatalf("train: %d %s %s", code, so, se)
	}
	for _, c := range []struct{ what, note, back string }{
		{"ebm", "note: its input is in the models' standardised coordinates", ""},
		{"energy", "", "it is flowebm's export of a whole energy (--what energy"},
		{"flow-density", "note: its input is in the models' standardised coordinates", "a flow's graphs (x and log_density, or log_density and z) are read as they are"},
		{"flow-sample", "note: its output x is in the models' standardised coordinates", ""}, // probe 70 A3: "its input"
	} {
		out := filepath.Join(dir, c.what+".onnx")
		so, se, code := runCLI("convert", run, out, "--what", c.what)
		if code != 0 || c.note != "" && !strings.Contains(so, c.note) || c.note == "" && strings.Contains(so, "note:") {
			t.Errorf("--what %s: %d %s %s", c.what, code, so, se)
		}
		if c.back == "" {
			continue
		}
		if _, se, code := runCLI("convert", out, filepath.Join(dir, c.what+"-ck")); code == 0 || !strings.Contains(se, c.back) {
			t.Errorf("--what %s back: %d %s", c.what, code, se)
		}
	}
}

// Probe 69 A3: train --flow on standardised --data took the flow in the
// standardised coordinates, unsaid (sample has noted it since round 65).
func TestTrainFlowOnStandardisedDataNoted(t *testing.T) {
	dir := t.TempDir()
	threeModes(t, dir, 600, []float64{0.2, 0.3, 0.5}, 1)
	flows := "../../io/onnx/testdata/flows/"
	for _, c := range []struct {
		standardize string
		noted       bool
	}{{"dimension", true}, {"none", false}} {
		so, se, code := runCLI("train", "--data", filepath.Join(dir, "mix.npy"), "--standardize", c.standardize, "--flow", flows+"realnvp2_f64_sample.onnx", "--flow-density", flows+"realnvp2_f64_density.onnx",
			"--iterations", "2", "--out", filepath.Join(dir, c.standardize), "--quiet")
		if code != 0 || strings.Contains(so+se, "is taken in the models' coordinates, the data standardised") != c.noted {
			t.Errorf("--standardize %s: %d %s %s", c.standardize, code, so, se)
		}
	}
}

// Probe 70 B1: diagnose's memory estimate of a CSV assumed 2 bytes of
// text per value of every column, 6 to 17 times what it takes: CmdStan
// files of 137 MB (7 sampler columns, 3 parameters) were refused with no
// ulimit, for 8.8 GB. The rows are counted (from the bytes of the first
// ones then, in a pass over every file since round 71), every column
// counted twice and the parameters diagnoseCopies times.
func TestDiagnoseCSVMemoryEstimate(t *testing.T) {
	var b strings.Builder
	b.WriteString("# model = m\nlp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,tau,theta\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "-7.123456,0.912345,0.512345,3,7,0,8.123456,%.8g,%.8g,%.8g\n", float64(i)*1.0001, 0.5+float64(i%7), -1.25+float64(i%11))
	}
	path := filepath.Join(t.TempDir(), "out-1.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want := 2000.0 * 8 * (2*10 + diagnoseCopies*3)
	got := csvNeed([]string{path})
	if math.Abs(got/want-1) > 0.05 {
		t.Errorf("estimate %.4g bytes, want %.4g within 5%% (the old rule: %.4g)", got, want, float64(b.Len())/2*8*diagnoseCopies)
	}
}

// Probe 70 B5: plot's refusals of a moved or replaced data file gave
// train's advice without naming train ("resume with --resume RUN --data
// NEWPATH"; "leave data.sha256 out to start a new run").
func TestPlotDataFileAdvice(t *testing.T) {
	dir := t.TempDir()
	threeModes(t, dir, 600, []float64{0.2, 0.3, 0.5}, 1)
	data := filepath.Join(dir, "mix.npy")
	run := filepath.Join(dir, "r")
	if so, se, code := runCLI("train", "--data", data, "--iterations", "3", "--out", run, "--quiet"); code != 0 {
		t.Fatalf("train: %d %s %s", code, so, se)
	}
	if err := os.Rename(data, data+".moved"); err != nil {
		t.Fatal(err)
	}
	if _, se, code := runCLI("plot", run); code == 0 || !strings.Contains(se, "record where it is with flowebm train --resume "+run+" --data NEWPATH") {
		t.Errorf("moved: %d %s", code, se)
	}
	threeModes(t, dir, 600, []float64{0.5, 0.3, 0.2}, 2) // other data at the path
	if _, se, code := runCLI("plot", run); code == 0 || !strings.Contains(se, "plot draws a run with the data it was trained on: put that file back") {
		t.Errorf("replaced: %d %s", code, se)
	}
}

// Probe 70 B4: an .npz of several arrays was read by its first member,
// unsaid, by energy --points and train --data (diagnose names it).
func TestNPZMemberNamed(t *testing.T) {
	dir := t.TempDir()
	threeModes(t, dir, 600, []float64{0.2, 0.3, 0.5}, 1)
	x, err := npy.ReadFile(filepath.Join(dir, "mix.npy"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "two.npz")
	if err := npz.WriteFile(path, map[string]*npy.Array{"a": x, "b": x}, npy.Float64); err != nil { // written sorted: a first
		t.Fatal(err)
	}
	want := `holds 2 arrays ("a", "b"): read "a", the first (--key names another)`
	if so, se, code := runCLI("train", "--data", path, "--iterations", "2", "--out", filepath.Join(dir, "r"), "--quiet"); code != 0 || !strings.Contains(so+se, want) {
		t.Errorf("train: %d %s %s", code, so, se)
	}
	if so, se, code := runCLI("energy", "--model", filepath.Join(dir, "r"), "--points", path, "--out", filepath.Join(dir, "e.npy")); code != 0 || !strings.Contains(se, want) {
		t.Errorf("energy: %d %s %s", code, so, se)
	}
	if _, se, _ := runCLI("energy", "--model", filepath.Join(dir, "r"), "--points", path, "--key", "b", "--out", filepath.Join(dir, "e2.npy")); strings.Contains(se, "holds 2 arrays") {
		t.Errorf("noted with --key: %s", se)
	}
	// Round 71 B2: a refusal of the member read by default (too few rows
	// for a batch) did not say which member was read.
	few := &npy.Array{Shape: []int{5, 2}, Data: x.Data[:10]}
	if err := npz.WriteFile(path, map[string]*npy.Array{"a": few, "b": x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, se, code := runCLI("train", "--data", path, "--iterations", "2", "--out", filepath.Join(dir, "r2"), "--quiet"); code == 0 || !strings.Contains(se, "fewer than the batch size 64") || !strings.Contains(se, want) {
		t.Errorf("refused: %d %s", code, se)
	}
}

// Probe 70 (small): "trained 1 iterations"; energy's missing points file
// named no flag ("open nonexist.npy: no such file").
func TestProbe70SmallMessages(t *testing.T) {
	if count(1, "iteration") != "1 iteration" || count(3, "run") != "3 runs" {
		t.Errorf("%q %q", count(1, "iteration"), count(3, "run"))
	}
	if _, se, code := runCLI("energy", "--model", toyONNX, "--points", filepath.Join(t.TempDir(), "nonexist.npy")); code == 0 || !strings.Contains(se, "--points ") || !strings.Contains(se, "nonexist.npy: no such file") {
		t.Errorf("%d %s", code, se)
	}
}

// Probe 70 (small): diagnose of a (1024, 2) array of points said "2 draws
// per chain" without saying that it reads a 2-D array as chains × draws.
func TestDiagnosePointsHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.npy")
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{1024, 2}, Data: make([]float64, 2048)}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, se, code := runCLI("diagnose", path); code == 0 || !strings.Contains(se, "1024 rows of 2 values look like points") {
		t.Errorf("%d %s", code, se)
	}
}

// Review: a CmdStan header's num_warmup near the int64 limit made
// ceil(num_warmup/thin) overflow to a negative count of rows to drop (a
// slice panic); such values are not read.
func TestCmdStanHugeWarmupCount(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for c := 1; c <= 2; c++ {
		p := filepath.Join(dir, fmt.Sprintf("c%d.csv", c))
		cmdstanFile(t, p, c, 0, 50, 2, true, false)
		b, _ := os.ReadFile(p)
		b = []byte(strings.Replace(strings.Replace(string(b), "num_warmup = 0", "num_warmup = 9223372036854775807", 1), "#     num_samples = 50\n", "", 1))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	if x, err := readChains(files, ""); err != nil || x.draws != 25 {
		t.Errorf("%v, %v", x, err)
	}
}

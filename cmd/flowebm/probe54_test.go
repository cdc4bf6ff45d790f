package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Session 33 (left from session 32): sample checked its --out folder and
// then placed the draws by path, so a folder swapped in between the two
// got them. They are placed through the folder checked.
func TestSampleOutPlacedInTheFolderChecked(t *testing.T) {
	inTempDir(t)
	model := trainedRun(t)
	swapOutFolderAt(t, "anchor-checked")
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "0", "--out", "E/o.npy"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if exists(filepath.Join("E", "o.npy")) || !exists(filepath.Join("E_away", "o.npy")) {
		t.Error("the draws were placed in the folder swapped in after the check")
	}
}

// Session 33: diagnose read a tab-separated file's header as one column
// name with control characters, without saying the file uses tabs.
func TestDiagnoseTabSeparatedSaysSo(t *testing.T) {
	inTempDir(t)
	os.WriteFile("tab.csv", []byte("chain\tdraw\tmu\n1\t1\t0.5\n"), 0o644)
	wantErr(t, "this header holds tabs: write the file with commas", "diagnose", "tab.csv")
}

// Session 33 (left from session 32): sample --resume LINK.npz replaced
// the link with a file at its next checkpoint and left the file it led
// to at the old state. The file the link leads to is continued.
func TestSampleResumeThroughALink(t *testing.T) {
	dir := t.TempDir()
	mala := filepath.Join(dir, "mala.npz")
	args := []string{"sample", "--model", "../../io/onnx/testdata/flows/bimodal_energy.onnx", "--chains", "4", "--out", filepath.Join(dir, "never.npy"),
		"--checkpoint", mala, "--sampler", "mala", "--warmup", "0", "--steps", "40", "--checkpoint-every", "10"}
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", args...); code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	before, _ := os.ReadFile(mala)
	link := filepath.Join(dir, "link.npz")
	os.Symlink(mala, link)
	if _, stderr, code := runCLI("sample", "--resume", link, "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.npz is no longer a link: %v", err)
	}
	if after, _ := os.ReadFile(mala); bytes.Equal(after, before) {
		t.Error("the checkpoint the link leads to was not continued")
	}
}

// Session 33: an ONNX energy whose outputs the load checks could compute
// at none of their own points (a table on 20..29) loaded unchecked, with
// a note, whether or not it mixes the points of a batch. energy checks
// it at the points it is given: the one that mixes them is refused, the
// other runs without the note.
func TestEnergyCheckedAtItsPoints(t *testing.T) {
	dir := t.TempDir()
	pts := tablePoints(t, filepath.Join(dir, "p.npy"), 50, 2)
	pinned := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned")
	_, stderr, code := runCLI("energy", "--model", filepath.Join(pinned, "table20_cpl_dyn.onnx"), "--points", pts, "--out", filepath.Join(dir, "c.npy"))
	if code != 2 || !strings.Contains(stderr, "depends on the other points of its batch") || !strings.Contains(stderr, "found at the points of --points "+pts) {
		t.Errorf("coupled table: exit %d, %s", code, stderr)
	}
	_, stderr, code = runCLI("energy", "--model", filepath.Join(pinned, "table20_dyn.onnx"), "--points", pts, "--out", filepath.Join(dir, "e.npy"))
	if code != 0 || strings.Contains(stderr, "note:") {
		t.Errorf("table: exit %d, %s", code, stderr)
	}
}

// Probe 54 A2: ULA on an energy defined on x > −2 only (its gradient is
// finite beyond) wrote draws where the energy is NaN, at exit 0. It
// stops, writes nothing and says why; MALA rejects those steps and runs.
func TestULAStopsOutsideTheDomain(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "domain_dyn.onnx")
	out := filepath.Join(dir, "u.npy")
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "ula", "--chains", "16", "--steps", "2000", "--warmup", "300", "--out", out)
	if code != 2 || !strings.Contains(stderr, "stepped to a point where the energy is NaN, outside the model's domain") || strings.Contains(stderr, "--resume") || exists(out) {
		t.Errorf("ula: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", model, "--sampler", "mala", "--chains", "16", "--steps", "500", "--warmup", "100", "--out", filepath.Join(dir, "m.npy")); code != 0 {
		t.Errorf("mala: exit %d, %s", code, stderr)
	}
}

// Probe 54 A4: an energy defined on part of the space only (a logit of
// pixels, NaN at normal draws) could not be sampled: the chains start at
// normal draws, and the refusal blamed the model's weights. It says to
// give --starts, which sets the starts; a resume refuses a starts file
// changed since.
func TestSampleStartsGiven(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "logit_img_b16_f64.onnx")
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "10", "--warmup", "0", "--out", filepath.Join(dir, "a.npy"))
	if code != 2 || !strings.Contains(stderr, "The chains start at normal draws: for an energy defined on part of the space only (pixels in (0, 1), x > 0), give --starts FILE") {
		t.Errorf("no --starts: exit %d, %s", code, stderr)
	}
	starts := filepath.Join(dir, "s.npy")
	rng := rand.New(rand.NewPCG(54, 4))
	half := make([]float64, 4*64) // one image per chain, pixels in (0.1, 0.9)
	for i := range half {
		half[i] = 0.1 + 0.8*rng.Float64()
	}
	if err := npy.WriteFile(starts, &npy.Array{Shape: []int{4, 1, 8, 8}, Data: half}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck.npz")
	args := []string{"sample", "--model", model, "--chains", "4", "--steps", "40", "--warmup", "0", "--starts", starts, "--out", filepath.Join(dir, "b.npy"), "--checkpoint", ck, "--checkpoint-every", "10"}
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", args...); code != -1 {
		t.Fatalf("--starts: exit %d, %s", code, stderr)
	}
	keep := half[0]
	half[0] = 0.25
	npy.WriteFile(starts, &npy.Array{Shape: []int{4, 1, 8, 8}, Data: half}, npy.Float64)
	if _, stderr, code := runCLI("sample", "--resume", ck); code != 2 || !strings.Contains(stderr, "s.npy has changed since the checkpoint was written (its SHA-256 differs): the run cannot continue on other inputs (its model, flow, --starts or --modes file)") {
		t.Errorf("resumed with the starts changed: exit %d, %s", code, stderr)
	}
	half[0] = keep
	npy.WriteFile(starts, &npy.Array{Shape: []int{4, 1, 8, 8}, Data: half}, npy.Float64)
	if _, stderr, code := runCLI("sample", "--resume", ck); code != 0 {
		t.Errorf("resumed: exit %d, %s", code, stderr)
	}
	d, err := npy.ReadFile(filepath.Join(dir, "b.npy"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Data {
		if !(v > 0 && v < 1) {
			t.Fatalf("a draw at %v, outside (0, 1)", v)
		}
	}
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "3", "--steps", "10", "--starts", filepath.Join(dir, "b.npy"), "--out", filepath.Join(dir, "c.npy")); code != 2 || !strings.Contains(stderr, "shape [4 40 64] is that of draws (chains, draws, d), as sample writes them, not of points: give one point per chain, such as the last draws") { // round 86 A6
		t.Errorf("4 starts for 3 chains: exit %d, %s", code, stderr)
	}
}

// Session 33: sample checks an ONNX energy the load checks could not
// compute at their own points at the chains' starts given by --starts:
// the table on 20..29 that mixes the points of a batch is refused there.
func TestSampleCheckedAtItsStarts(t *testing.T) {
	dir := t.TempDir()
	starts := tablePoints(t, filepath.Join(dir, "s.npy"), 8, 3)
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "table20_cpl_dyn.onnx")
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "8", "--steps", "10", "--starts", starts, "--out", filepath.Join(dir, "a.npy"))
	if code != 2 || !strings.Contains(stderr, "depends on the other points of its batch") || !strings.Contains(stderr, "found at the chains' starts (--starts "+starts+")") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Probe 54 A8: --flow-out and --out naming one path were found only
// after the warm-up, and neither output was written.
func TestFlowOutIsAlsoOut(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	inTempDir(t)
	wantErr(t, "--flow-out o.npy is also --out: give the trained flow a folder of its own", "sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "5", "--warmup", "20", "--flow-out", "o.npy", "--out", "o.npy")
	if exists("o.npy") {
		t.Error("o.npy was made")
	}
}

// Probe 54 A11, round 86 A5: neutra on a flowebm RealNVP written by
// convert pointed to a PyTorch script, and later was refused; convert's
// density graph now gives z, so neutra takes the pair, as it takes the
// checkpoint itself.
func TestNeutraOnConvertedFlow(t *testing.T) {
	run := trainedRun(t)
	dir := t.TempDir()
	fs, fd := filepath.Join(dir, "fs.onnx"), filepath.Join(dir, "fd.onnx")
	for _, c := range [][]string{{run, fs, "--what", "flow-sample"}, {run, fd, "--what", "flow-density"}} {
		if _, stderr, code := runCLI(append([]string{"convert"}, c...)...); code != 0 {
			t.Fatalf("convert %v: %s", c, stderr)
		}
	}
	if _, stderr, code := runCLI("sample", "--model", run, "--sampler", "neutra", "--flow", fs, "--flow-density", fd, "--chains", "4", "--steps", "10", "--out", filepath.Join(dir, "a.npy")); code != 0 {
		t.Errorf("convert's graphs: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("sample", "--model", run, "--sampler", "neutra", "--flow", run, "--chains", "4", "--steps", "10", "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Errorf("the checkpoint: exit %d, %s", code, stderr)
	}
}

// Probe 54 A14: a point beyond float32's range given to a float32 model
// was read as +Inf and blamed on the model's weights and activations.
func TestEnergyPointBeyondFloat32(t *testing.T) {
	dir := t.TempDir()
	x := make([]float64, 2*64)
	x[70] = 1e39
	pts := filepath.Join(dir, "p.npy")
	if err := npy.WriteFile(pts, &npy.Array{Shape: []int{2, 1, 8, 8}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "img_b16_f32.onnx")
	_, stderr, code := runCLI("energy", "--model", model, "--points", pts, "--out", filepath.Join(dir, "e.npy"))
	if code != 2 || !strings.Contains(stderr, "point 2, value 7 is 1e+39, beyond float32's range") || strings.Contains(stderr, "weights") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Probe 54 A9: diagnose took the first draw of a file without a header
// (numpy.savetxt's) for column names; pandas' numbered columns stay a
// header.
func TestDiagnoseHeaderOfNumbers(t *testing.T) {
	inTempDir(t)
	os.WriteFile("nohead.csv", []byte("0.5,1.5\n0.25,1.0\n0.75,2.0\n"), 0o644)
	os.WriteFile("spaced.csv", []byte("6.4e-01 1.04e+00\n2.5e-01 1.0\n"), 0o644)
	wantErr(t, "nohead.csv: line 1 holds numbers", "diagnose", "nohead.csv")
	wantErr(t, "spaced.csv: line 1 holds numbers", "diagnose", "spaced.csv")
	var b strings.Builder
	b.WriteString("0,1\n")
	rng := rand.New(rand.NewPCG(54, 9))
	for range 40 {
		fmt.Fprintf(&b, "%v,%v\n", rng.NormFloat64(), rng.NormFloat64())
	}
	os.WriteFile("pandas.csv", []byte(b.String()), 0o644)
	if _, stderr, code := runCLI("diagnose", "pandas.csv"); strings.Contains(stderr, "holds numbers") {
		t.Errorf("pandas' numbered columns: exit %d, %s", code, stderr)
	}
}

// Probe 54 B1 (serious): sample counted a checkpoint's energy MLP and
// RealNVP as no memory: 2.85 million MALA chains at d = 2 were said to
// fit, and 300,000 died out of memory. Their graphs are counted (the
// named count, 33,346 under ulimit -v 6000000, ran at a peak RSS of 0.65
// GB with hmc and mala).
func TestSampleCountsTheCheckpointsGraphs(t *testing.T) {
	run := trainedRun(t)
	f := memSampleFlags(run, 50_000_000)
	f.steps = 4
	_, err := f.models()
	if err == nil || !strings.Contains(err.Error(), "MB (the EBM's graph with ∇ₓE)") || !strings.Contains(err.Error(), "MB (the flow's graph)") {
		t.Errorf("%v", err)
	}
}

// Probe 54 B3: --print-config was refused by the memory check, so the
// configuration whose fields the refusal says to lower could not be had
// (train --data on 784 dimensions needed 12.5 GiB at the defaults then,
// the paper's R-hat and log Z sizes, given here in a file). It is
// printed, with the refusal as a note. B4: data_size beyond the rows
// advised 0, which was refused; it advises leaving the field out, which
// works.
func TestPrintConfigOverTheMemoryLimit(t *testing.T) {
	inTempDir(t)
	rng := rand.New(rand.NewPCG(54, 3))
	x := make([]float64, 300*784)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	if err := npy.WriteFile("d784.npy", &npy.Array{Shape: []int{300, 784}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	os.WriteFile("paper.json", []byte(`{"rhat_chains": 128, "log_z_samples": 4096, "train": {"iterations": 2}}`), 0o644)
	out, stderr, code := runCLI("train", "--data", "d784.npy", "--config", "paper.json", "--print-config")
	var cfg map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &cfg) != nil || !strings.Contains(stderr, "note: as printed, the run would be refused: paper.json: the configuration needs about") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	small := make([]float64, 200*2)
	for i := range small {
		small[i] = rng.NormFloat64()
	}
	npy.WriteFile("d.npy", &npy.Array{Shape: []int{200, 2}, Data: small}, npy.Float64)
	os.WriteFile("c.json", []byte(`{"data_size": 16384, "train": {"iterations": 2}}`), 0o644)
	wantErr(t, "want at most 180, or leave the field out for all", "train", "--data", "d.npy", "--config", "c.json", "--print-config")
	os.WriteFile("c0.json", []byte(`{"data_size": 0, "train": {"iterations": 2}}`), 0o644)
	wantErr(t, "data_size 0: 0 stands for the default here: leave the field out for the default (16384 points of an experiment's distribution, every row of a data set)", "train", "--data", "d.npy", "--config", "c0.json", "--print-config")
	os.WriteFile("c1.json", []byte(`{"train": {"iterations": 2}}`), 0o644)
	if _, stderr, code := runCLI("train", "--data", "d.npy", "--config", "c1.json", "--print-config"); code != 0 {
		t.Errorf("the field left out: exit %d, %s", code, stderr)
	}
}

// Probe 54 A12: data at 1e300 with --standardize none was refused for a
// NaN variance with advice to standardise, which was refused in turn for
// the column's scale; --standardize global said "scale +Inf". Each names
// the column's own scale and the range to rescale it to.
func TestDataAtTheEdgesOfFloat64(t *testing.T) {
	inTempDir(t)
	rng := rand.New(rand.NewPCG(54, 12))
	x := make([]float64, 200*2)
	for i := range x {
		x[i] = 1e300 * rng.NormFloat64()
	}
	npy.WriteFile("big.npy", &npy.Array{Shape: []int{200, 2}, Data: x}, npy.Float64)
	for _, s := range []string{"none", "dimension", "global"} {
		_, stderr, code := runCLI("train", "--data", "big.npy", "--standardize", s, "--iterations", "2", "--out", "r_"+s, "--quiet")
		if code != 2 || !regexp.MustCompile(`column 1 has scale [0-9.]+e\+(299|300): densities in the data's units would leave float64's range; rescale it to within 1e-150\.\.1e150 first`).MatchString(stderr) {
			t.Errorf("--standardize %s: exit %d, %s", s, code, stderr)
		}
	}
}

// tablePoints writes n points uniform on [20, 29.99), where the table
// fixtures table20_dyn and table20_cpl_dyn are defined, to path (seeded by
// seed) and returns path.
func tablePoints(t *testing.T, path string, n int, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(33, seed))
	x := make([]float64, n)
	for i := range x {
		x[i] = 20 + 9.99*rng.Float64()
	}
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{n, 1}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	return path
}

// Probe 55 A2: flowmc training its flow took --local 0 and ran its
// default 4 MALA moves a cycle; it refuses 0, and a frozen flow takes it.
func TestAdaptiveFlowMCRefusesNoLocalSteps(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx")
	_, stderr, code := runCLI("sample", "--model", model, "--sampler", "flowmc", "--local", "0", "--chains", "4", "--steps", "5", "--warmup", "20", "--out", filepath.Join(dir, "a.npy"))
	if code != 2 || !strings.Contains(stderr, "--local 0: flowmc training its flow moves the chains with local steps") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	run := trainedRun(t)
	if _, stderr, code := runCLI("sample", "--model", run, "--sampler", "flowmc", "--local", "0", "--chains", "4", "--steps", "5", "--warmup", "5", "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Errorf("a frozen flow: exit %d, %s", code, stderr)
	}
}

// Probe 55 A5: sample --starts took an image array of another arrangement
// for a model of (n, 1, 8, 8), flattened in the wrong order; energy
// --points refused it. So does sample. (n, 8, 8, 1) holds its values in
// the model's order (one channel) and is taken (round 122 A4).
func TestSampleStartsOfAnotherShape(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "logit_img_b16_f64.onnx")
	x := make([]float64, 4*64)
	for i := range x {
		x[i] = 0.1 + 0.8*float64(i%7)/7
	}
	starts := filepath.Join(dir, "s.npy")
	npy.WriteFile(starts, &npy.Array{Shape: []int{4, 4, 16}, Data: x}, npy.Float64)
	_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "10", "--starts", starts, "--out", filepath.Join(dir, "a.npy"))
	if code != 2 || !strings.Contains(stderr, "--starts "+starts) || !strings.Contains(stderr, "[4 16]") {
		t.Errorf("exit %d, %s", code, stderr)
	}
	npy.WriteFile(starts, &npy.Array{Shape: []int{4, 8, 8, 1}, Data: x}, npy.Float64)
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "10", "--starts", starts, "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Errorf("(4, 8, 8, 1): exit %d, %s", code, stderr)
	}
}

// Probe 55 A7: diagnose gave no separator hint for a space-separated
// draws file (numpy.savetxt's default), and asked for a header where
// savetxt wrote one as a comment.
func TestDiagnoseSpaceSeparatedHints(t *testing.T) {
	inTempDir(t)
	os.WriteFile("sp.csv", []byte("chain draw a\n1 1 0.5\n"), 0o644)
	os.WriteFile("sp2.csv", []byte("chain,draw,a\n1 1 0.5\n"), 0o644)
	os.WriteFile("cm.csv", []byte("# chain,draw,a\n1,1,0.5\n1,2,0.25\n"), 0o644)
	wantErr(t, `this field holds " ": write the file with commas (numpy.savetxt(..., delimiter=",")`, "diagnose", "sp.csv")
	wantErr(t, "numpy.savetxt writes its header as a comment", "diagnose", "cm.csv")
	wantErr(t, "line 2 has 1 columns, want 3 (the header's): the columns are separated by commas, and this line has other separators", "diagnose", "sp2.csv")
}

// Probe 55 B4: a sample checkpoint recorded --starts as given, relative,
// and --resume from another folder could not find it.
func TestSampleStartsResumedFromElsewhere(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, dir := inTempDir(t)
	npy.WriteFile("st.npy", &npy.Array{Shape: []int{1, 2}, Data: []float64{0.5, -0.5}}, npy.Float64)
	args := []string{"sample", "--model", model, "--sampler", "mala", "--chains", "4", "--steps", "40", "--warmup", "0", "--starts", "st.npy",
		"--out", "a.npy", "--checkpoint", "ck.npz", "--checkpoint-every", "10"}
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", args...); code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	os.Mkdir("sub", 0o755)
	t.Chdir(filepath.Join(dir, "sub"))
	os.Rename(filepath.Join(dir, "st.npy"), filepath.Join(dir, "st2.npy"))
	if _, stderr, code := runCLI("sample", "--resume", "../ck.npz"); code != 2 || !strings.Contains(stderr, "--resume ../ck.npz: the run's --starts "+filepath.Join(dir, "st.npy")) || !strings.Contains(stderr, "put it back there to continue") {
		t.Errorf("starts moved: exit %d, %s", code, stderr)
	}
	os.Rename(filepath.Join(dir, "st2.npy"), filepath.Join(dir, "st.npy"))
	if _, stderr, code := runCLI("sample", "--resume", "../ck.npz"); code != 0 {
		t.Errorf("resumed from sub/: exit %d, %s", code, stderr)
	}
}

// Probe 55 B1, B2 (serious): sample counted neither R-hat's work once the
// chains are done (about 37 bytes a draw at peak on each core's
// dimension; 340 then) nor the copy of the draws each --checkpoint
// writes, and died out of memory at the counts it named. Both count.
func TestSampleCountsRHatAndCheckpointCopies(t *testing.T) {
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx")
	f := memSampleFlags(model, 120000)
	f.steps = 2000
	if _, err := f.models(); err == nil || !strings.Contains(err.Error(), "R-hat's work on 2 dimensions at once × --chains 120000 × --steps 2000 × 96 B") && !strings.Contains(err.Error(), "R-hat's work on 1 dimensions") {
		t.Errorf("R-hat: %v", err)
	}
	f = memSampleFlags(energy784(t), 4)
	f.steps = 100
	f.checkpoint = "ck.npz"
	m, err := f.models()
	if err != nil {
		t.Fatal(err)
	}
	if _, what := f.workMemory(m); !slices.Contains(what, "a copy of the draws for --checkpoint (0.00251 GB)") {
		t.Errorf("--checkpoint: %q", what)
	}
}

// Probe 55 A8: --starts and --modes read the first array of an .npz of
// several ({seed, starts}), with no --key to choose another; they refuse
// it, naming the arrays.
func TestStartsAndModesFromAnNPZOfSeveral(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "bimodal_energy.onnx")
	f := filepath.Join(dir, "run.npz")
	w, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(w)
	for _, name := range []string{"seed", "starts"} {
		e, _ := zw.Create(name + ".npy")
		npy.Write(e, &npy.Array{Shape: []int{1, 2}, Data: []float64{1, 2}}, npy.Float64)
	}
	zw.Close()
	w.Close()
	for _, flag := range []string{"--starts", "--modes"} {
		_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "10", flag, f, "--out", filepath.Join(dir, "a.npy"))
		if code != 2 || !strings.Contains(stderr, flag+" "+f+": holds 2 arrays (seed, starts)") {
			t.Errorf("%s: exit %d, %s", flag, code, stderr)
		}
	}
}

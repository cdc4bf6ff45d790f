package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// Round 97 B1: train --resume of a finished run whose density.png was
// deleted, or whose weights.png was emptied, said "nothing to do", and
// --seeds passed over such a seed. Both draw the run's figures again,
// identical to those the run drew (PNG is deterministic), saying which
// were lost; with all figures whole, nothing changes.
func TestFinishedRunFiguresRedrawn(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	if _, stderr, code := runCLI("train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "s1")
	density, weights := filepath.Join(run, "density.png"), filepath.Join(run, "weights.png")
	want := map[string][]byte{}
	for _, p := range []string{density, weights} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want[p] = b
	}
	damage := func() {
		t.Helper()
		if err := os.Remove(density); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(weights, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"train", "--resume", run},
		{"train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out},
	} {
		damage()
		stdout, stderr, code := runCLI(args...)
		if code != 0 || !strings.Contains(stdout, "redrew its figures ("+density+" is missing; "+weights+" is empty)") {
			t.Errorf("%v: exit %d, %s%s", args, code, stdout, stderr)
		}
		for p, b := range want {
			if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, b) {
				t.Errorf("%v: %s redrawn as %d bytes (%v), the run drew %d", args, p, len(got), err, len(b))
			}
		}
		stdout, stderr, code = runCLI(args...)
		if code != 0 || strings.Contains(stdout, "redrew") || !strings.Contains(stdout, "nothing to do") && !strings.Contains(stdout, "seed 1: already trained in "+run) {
			t.Errorf("%v again: exit %d, %s%s", args, code, stdout, stderr)
		}
	}
}

// Round 97 B3: plot of a reproduce run still being set up (its folder
// holding .lock and reproduce's log.txt) said "not a run folder" where a
// train run's got "being set up". It says the run is being set up; once
// its process is gone, what the folder is and that the reproduce command
// trains it again, which, followed, it does.
func TestPlotReproduceRunBeingSetUp(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	run := filepath.Join(out, "runs", "two-modes-ula")
	release, err := lockRunAs(run, "train")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "log.txt"), []byte("flowebm train ...\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("plot", run)
	if code == 0 || !strings.Contains(stderr, run+": the run is being set up (another flowebm process holds "+filepath.Join(run, ".lock")) {
		t.Errorf("held: exit %d, %s", code, stderr)
	}
	release()
	_, stderr, code = runCLI("plot", run)
	if code == 0 || !strings.Contains(stderr, run+" holds only a run's lock and log.txt: a reproduce run stopped as it started leaves them") {
		t.Errorf("left: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", out); code != 0 || !exists(filepath.Join(run, "metrics.json")) {
		t.Errorf("the advice followed: exit %d, %s", code, stderr)
	}
}

// Round 96 B5: a damaged seeds.json was written again by --seeds without
// a word. It is (the summary is the runs'), and a note says the one there
// could not be read; a whole one is replaced without a note.
func TestDamagedSeedsSummaryNoted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd")
	args := []string{"train", "--seeds", "1", "--iterations", "2", "--quiet", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	summary := filepath.Join(out, "seeds.json")
	whole, _ := os.ReadFile(summary)
	if err := os.WriteFile(summary, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(args...)
	got, _ := os.ReadFile(summary)
	if code != 0 || !strings.Contains(stdout, "note: the "+summary+" there before could not be read (unexpected end of JSON input): written again from the runs") || !bytes.Equal(got, whole) {
		t.Errorf("exit %d, %s%s; seeds.json %d bytes, was %d", code, stdout, stderr, len(got), len(whole))
	}
	if stdout, _, _ := runCLI(args...); strings.Contains(stdout, "could not be read") {
		t.Errorf("whole seeds.json: %s", stdout)
	}
}

// Round 98 A1: energy refused a whole file of points where one lay on the
// edge of the model's support (a Gamma's energy −2 log x + x, +Inf at
// x = 0), writing nothing. Energies and gradients that are not finite are
// written as they are (+Inf, NaN), the finite ones exact, a note naming
// each kind's count and first point; where none is finite, refused.
func TestEnergyWritesNonFinite(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "edge", "gamma_energy.onnx")) // io/onnx/crosscheck/make_gamma_energy.py
	if err != nil {
		t.Fatal(err)
	}
	inTempDir(t)
	pts := []float64{1, 2, 0, 1, -1, 1, 2, 0}
	if err = npy.WriteFile("p.npy", &npy.Array{Shape: []int{4, 2}, Data: pts}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("energy", "--model", model, "--points", "p.npy", "--out", "e.npy", "--grad", "g.npy")
	for _, want := range []string{
		"note: the energy at 1 of 4 points (the first: point 3, counting from 1) is NaN: the model is not defined there",
		"note: the energy at 2 of 4 points (the first: point 2, counting from 1) is +Inf: the model is infinite there",
	} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, %s; want %q", code, stderr, want)
		}
	}
	e, err := npy.ReadFile("e.npy")
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{-2*math.Log(2) + 3, math.Inf(1), math.NaN(), math.Inf(1)}
	for i, w := range want {
		if got := e.Data[i]; !(math.IsNaN(w) && math.IsNaN(got) || math.Abs(got-w) < 1e-6 || got == w) {
			t.Errorf("energy %d: %v, want %v", i+1, got, w)
		}
	}
	g, err := npy.ReadFile("g.npy")
	if err != nil {
		t.Fatal(err)
	}
	if g.Data[0] != -1 || g.Data[1] != 0 || !math.IsInf(g.Data[2], -1) || g.Data[3] != -1 { // −2/x + 1, PyTorch's −Inf at 0
		t.Errorf("gradients %v", g.Data)
	}
	// Where no energy is finite the model is broken there (an overflow):
	// refused, nothing written, as before.
	npy.WriteFile("z.npy", &npy.Array{Shape: []int{2, 2}, Data: []float64{0, 1, -1, 1}}, npy.Float64)
	if _, stderr, code := runCLI("energy", "--model", model, "--points", "z.npy", "--out", "z-e.npy"); code != 2 || !strings.Contains(stderr, "the energy of point 1 (counting from 1) is +Inf") || exists("z-e.npy") {
		t.Errorf("no finite energy: exit %d, %s", code, stderr)
	}
}

// Round 98 A2: sample --modes refused centres in an image model's input
// shape (k, 1, 8, 8), which --starts and energy take. They are read as
// (k, 64), the same weights printed as for the centres given flat.
func TestSampleModesInModelShape(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "logit_img_b16_f64.onnx")
	starts := filepath.Join(dir, "s.npy")
	rng := rand.New(rand.NewPCG(98, 2))
	half := make([]float64, 4*64)
	for i := range half {
		half[i] = 0.1 + 0.8*rng.Float64()
	}
	if err := npy.WriteFile(starts, &npy.Array{Shape: []int{4, 1, 8, 8}, Data: half}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	centres := make([]float64, 2*64)
	for i := range centres {
		centres[i] = 0.3 + 0.4*float64(i/64)
	}
	var weights []string
	for _, shape := range [][]int{{2, 1, 8, 8}, {2, 64}} {
		modes := filepath.Join(dir, fmt.Sprintf("m%d.npy", len(shape)))
		if err := npy.WriteFile(modes, &npy.Array{Shape: shape, Data: centres}, npy.Float64); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "30", "--starts", starts, "--modes", modes, "--out", filepath.Join(dir, fmt.Sprintf("d%d.npy", len(shape))))
		i := strings.Index(stdout, "mode weights")
		if code != 0 || i < 0 {
			t.Fatalf("--modes %v: exit %d, %s%s", shape, code, stdout, stderr)
		}
		weights = append(weights, strings.ReplaceAll(stdout[i:], modes, "M"))
	}
	if weights[0] != weights[1] {
		t.Errorf("weights of (2, 1, 8, 8) centres:\n%s\nof (2, 64):\n%s", weights[0], weights[1])
	}
	bad := filepath.Join(dir, "bad.npy")
	npy.WriteFile(bad, &npy.Array{Shape: []int{2, 4, 16}, Data: centres}, npy.Float64)
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "30", "--starts", starts, "--modes", bad, "--out", filepath.Join(dir, "x.npy")); code != 2 || !strings.Contains(stderr, "--modes "+bad+": ") {
		t.Errorf("(2, 4, 16): exit %d, %s", code, stderr)
	}
}

// Round 98 A3: diagnose of draws with no dimension, shape (4, 300, 0),
// noted chains 1 and 2 "identical, draw for draw" before refusing them.
// The refusal stands alone.
func TestDiagnoseNoDimensionsNoTwins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zd.npy")
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{4, 300, 0}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("diagnose", path)
	if code != 2 || !strings.Contains(stderr, "0 dimensions, need at least 1") || strings.Contains(stderr, "identical") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 98 A4: diagnose refused integer draws (a discrete parameter's,
// as a Gibbs sampler writes them), which ArviZ and posterior diagnose.
// They give the diagnostics of the same draws as float64; integers beyond
// 2^53, which float64 does not hold exactly, are refused by name.
func TestDiagnoseIntegerDraws(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(98, 4))
	draws := make([]float64, 4*200*2)
	for i := range draws {
		draws[i] = float64(rng.IntN(7) - 3)
	}
	var outs []string
	for _, d := range []string{"<i8", "<i4", "|i1", "<f8"} {
		path := filepath.Join(dir, fmt.Sprintf("d%s.npy", d[1:]))
		writeNumericNpy(t, path, d, []int{4, 200, 2}, draws)
		stdout, stderr, code := runCLI("diagnose", "--json", path)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", d, code, stderr)
		}
		outs = append(outs, strings.ReplaceAll(stdout, path, "F"))
	}
	for _, o := range outs[:3] {
		if o != outs[3] {
			t.Errorf("integer draws:\n%s\nfloat64:\n%s", o, outs[3])
		}
	}
	big := filepath.Join(dir, "big.npy")
	draws[5] = 1 << 60
	writeNumericNpy(t, big, "<i8", []int{4, 200, 2}, draws)
	if _, stderr, code := runCLI("diagnose", big); code != 2 || !strings.Contains(stderr, big+`: dtype "<i8": value 6 (counting from 1) is beyond ±2^53`) {
		t.Errorf("2^60: exit %d, %s", code, stderr)
	}
}

// writeNumericNpy writes data as a version 1.0 .npy file of dtype d
// ("<f8", "<i8", "<i4" or "|i1"), as numpy.save does.
func writeNumericNpy(t *testing.T, path, d string, shape []int, data []float64) {
	t.Helper()
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = strconv.Itoa(s)
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", d, strings.Join(dims, ", "))
	header += strings.Repeat(" ", 63-(10+len(header))%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	for _, v := range data {
		switch d {
		case "<f8":
			binary.Write(&b, binary.LittleEndian, v)
		case "<i8":
			binary.Write(&b, binary.LittleEndian, int64(v))
		case "<i4":
			binary.Write(&b, binary.LittleEndian, int32(v))
		case "|i1":
			binary.Write(&b, binary.LittleEndian, int8(v))
		default:
			t.Fatalf("dtype %s", d)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Round 98 B1: a finished run's metrics.csv replaced by a garbage line
// stopped compare without naming the checkpoint's evals.csv that restores
// it (a cut one was named), and plot drew from the checkpoint's copy
// without a word. compare names the restore, plot notes what it drew
// from; followed, the restore makes compare work and plot quiet.
func TestGarbledMetricsCSVRestoreNamed(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "r")
	if _, stderr, code := runCLI("train", "--iterations", "4", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	csv := filepath.Join(run, "metrics.csv")
	if err := os.WriteFile(csv, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	restore := "cp " + filepath.Join(run, "checkpoint", "evals.csv") + " " + csv + " restores them"
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c")); code != 2 || !strings.Contains(stderr, `header: column 1 is "garbage", want "iter"`) || !strings.Contains(stderr, restore) {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("plot", run); code != 0 || !strings.Contains(stderr, restore+"; the figures of its evaluations are drawn from its checkpoint's") {
		t.Errorf("plot: exit %d, %s", code, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(run, "checkpoint", "evals.csv"))
	os.WriteFile(csv, b, 0o644)
	if _, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c")); code != 0 {
		t.Errorf("compare after the restore: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("plot", run); code != 0 || strings.Contains(stderr, "note") {
		t.Errorf("plot after the restore: exit %d, %s", code, stderr)
	}
}

// Round 98 B2: a run SIGKILLed 60 iterations in, before its first
// checkpoint, leaves only its lock; --resume said it was "killed as it
// started" and advised flowebm train --out DIR alone, which trains
// another run (the default algorithm, seed and length). It says a run
// killed before its first checkpoint leaves only its lock and to give the
// command that started it, its flags included.
func TestResumeBeforeFirstCheckpointAdvice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := outputsChild(t, "train-started", "KILL", "train", "--algorithm", "ula", "--seed", "5", "--iterations", "700", "--quiet", "--out", dir); code != -1 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	_, stderr, code := runCLI("train", "--resume", dir)
	if code != 2 || !strings.Contains(stderr, "a run killed before its first checkpoint, every checkpoint_every iterations, leaves only its lock") || !strings.Contains(stderr, "start it again with the command that started it, its flags included") || strings.Contains(stderr, "as it started") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// Round 99 B1, B2: reproduce run again over finished runs whose
// samples.npy was emptied, or whose density.png was deleted, said
// "already done", exit 0, and reported them as they were. It checks each
// finished run through train --resume, which writes the damaged outputs
// again from the final checkpoint (samples.npy byte for byte), and says
// so; whole runs stay "already done".
func TestReproduceRepairsFinishedRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "flowmc,ula", "--iterations", "4", "--jobs", "1", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	flowmc, ula := filepath.Join(out, "runs", "two-modes-flowmc"), filepath.Join(out, "runs", "two-modes-ula")
	samples := filepath.Join(flowmc, "samples.npy")
	want, err := os.ReadFile(samples)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(samples, nil, 0o644)
	os.Remove(filepath.Join(ula, "density.png"))
	stdout, stderr, code := runCLI(args...)
	if code != 0 || !strings.Contains(stdout, "two-modes-flowmc: already done; its damaged outputs written again from its final checkpoint: "+samples+": ") ||
		!strings.Contains(stdout, "two-modes-ula: already done; its damaged outputs written again from its final checkpoint: "+ula+" has finished its 4 iterations; redrew its figures ("+filepath.Join(ula, "density.png")+" is missing)") {
		t.Fatalf("exit %d, %s%s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(samples); !bytes.Equal(got, want) || !exists(filepath.Join(ula, "density.png")) {
		t.Errorf("samples.npy %d bytes (was %d), density.png there: %v", len(got), len(want), exists(filepath.Join(ula, "density.png")))
	}
	if stdout, _, code := runCLI(args...); code != 0 || strings.Count(stdout, ": already done\n") != 2 {
		t.Errorf("whole: exit %d, %s", code, stdout)
	}
}

// Round 100 A3: where a data set's final grid stayed coarser than the
// EBM's features, the warning advised a larger grid_size, which the
// configuration refuses beyond 1000 and which at 1000 warned again. The
// warning says the grid is the finest the final evaluation tries and how
// far off its numbers may be; metrics.json records that as grid_error.
func TestGridErrorWarningAdvice(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(100, 3))
	pts := make([]float64, 0, 2*4000)
	for i := range 4000 {
		if i%4 == 0 { // a sharp mode beside a broad one, 200 times as wide
			pts = append(pts, 4+0.05*rng.NormFloat64(), -3+0.05*rng.NormFloat64())
		} else {
			pts = append(pts, 10*rng.NormFloat64(), 10*rng.NormFloat64())
		}
	}
	data := filepath.Join(dir, "d.npy")
	if err := npy.WriteFile(data, &npy.Array{Shape: []int{4000, 2}, Data: pts}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "r")
	stdout, stderr, code := runCLI("train", "--data", data, "--iterations", "600", "--quiet", "--out", run)
	var m struct {
		GridError float64 `json:"grid_error"`
	}
	b, _ := os.ReadFile(filepath.Join(run, "metrics.json"))
	if code != 0 || json.Unmarshal(b, &m) != nil {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if m.GridError == 0 {
		t.Fatalf("the final grid resolved this EBM (no warning): the case is not the one tested: %s", stdout)
	}
	want := fmt.Sprintf("(800 per axis, the finest its final evaluation tries): its subgrids of every other cell, with cells twice as wide, differ from it by %.2g of the mass, so the EBM's weights and log Z by the grid may be off by up to about a third of that, %.1g", 3*m.GridError, m.GridError)
	if !strings.Contains(stdout, want) || strings.Contains(stdout, "grid_size") {
		t.Errorf("warning: %s\nwant %q", stdout, want)
	}
}

// Round 100 B2: a run's config.json recorded its flow files' paths alone:
// trained again from it (--config) after other flow files were put at
// those paths, it started from the other flow, unsaid. config.json records
// their SHA-256 and a configuration that gives them is refused on other
// files, naming the file and field; the run itself resumes from its
// checkpoint's copy of the flow whatever the files.
func TestFlowFilesChecksummed(t *testing.T) {
	dir := t.TempDir()
	pinned := "../../io/onnx/testdata/pinned/"
	sample, density := filepath.Join(dir, "s.onnx"), filepath.Join(dir, "d.onnx")
	for _, c := range [][2]string{{pinned + "nflowsstyle_nofold_sample.onnx", sample}, {pinned + "nflowsstyle_nofold_density.onnx", density}} {
		b, err := os.ReadFile(c[0])
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(c[1], b, 0o644)
	}
	rng := rand.New(rand.NewPCG(100, 2))
	pts := make([]float64, 3*600)
	for i := range pts {
		pts[i] = rng.NormFloat64()
	}
	data := filepath.Join(dir, "x.npy")
	npy.WriteFile(data, &npy.Array{Shape: []int{600, 3}, Data: pts}, npy.Float64)
	run := filepath.Join(dir, "r")
	if code, stderr := outputsChild(t, "train-outputs", "KILL", "train", "--data", data, "--flow", sample, "--flow-density", density, "--iterations", "3", "--quiet", "--out", run); code != -1 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	var cfg struct {
		Model struct {
			FlowONNX struct {
				SampleSHA256  string `json:"sample_sha256"`
				DensitySHA256 string `json:"density_sha256"`
			} `json:"flow_onnx"`
		} `json:"model"`
	}
	b, _ := os.ReadFile(filepath.Join(run, "config.json"))
	if json.Unmarshal(b, &cfg) != nil || len(cfg.Model.FlowONNX.SampleSHA256) != 64 || len(cfg.Model.FlowONNX.DensitySHA256) != 64 {
		t.Fatalf("config.json: %s", b)
	}
	other, _ := os.ReadFile(density)
	os.WriteFile(sample, other, 0o644) // another file at the sampling graph's path
	_, stderr, code := runCLI("train", "--config", filepath.Join(run, "config.json"), "--quiet", "--out", filepath.Join(dir, "again"))
	if code != 2 || !strings.Contains(stderr, sample+": SHA-256 ") || !strings.Contains(stderr, "but model.flow_onnx.sample_sha256 records "+cfg.Model.FlowONNX.SampleSHA256[:16]) {
		t.Errorf("--config with another flow file: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !exists(filepath.Join(run, "metrics.json")) {
		t.Errorf("--resume with the files replaced: exit %d, %s", code, stderr)
	}
}

// Round 101 A1: energy --grad of asin(x₀) + acos(x₁) at (1, 0) and
// (0, 1), gradients +Inf and −Inf where the energies are finite: one note
// called both +Inf. One note per kind. A4: a flow's density graph read
// as an energy (its output "log_density", no --log-density) said nothing;
// a note says how it is read and names --log-density (not given where
// --log-density is).
func TestNonFiniteGradientKindsAndLogDensityNote(t *testing.T) {
	edge, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "pinned", "asin_acos_edge_dyn.onnx")) // io/onnx/crosscheck/make_trig_energies.py
	if err != nil {
		t.Fatal(err)
	}
	flow, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "flows", "glowdet_f64_density.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	inTempDir(t)
	npy.WriteFile("p.npy", &npy.Array{Shape: []int{2, 2}, Data: []float64{1, 0, 0, 1}}, npy.Float64)
	_, stderr, code := runCLI("energy", "--model", edge, "--points", "p.npy", "--grad", "g.npy", "--out", "e.npy")
	for _, want := range []string{
		"the gradient, where the energy is finite, at 1 of 2 points (the first: point 1, counting from 1) is +Inf",
		"the gradient, where the energy is finite, at 1 of 2 points (the first: point 2, counting from 1) is -Inf",
	} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, %s; want %q", code, stderr, want)
		}
	}
	npy.WriteFile("q.npy", &npy.Array{Shape: []int{2, 3}, Data: []float64{0.1, 0.2, 0.3, -0.5, 0.4, 1}}, npy.Float64)
	note := flow + `'s output "log_density" is named as a log density: it is read as an energy (E = the output); give --log-density to read it as a log density`
	if _, stderr, code := runCLI("energy", "--model", flow, "--output", "log_density", "--points", "q.npy"); code != 0 || !strings.Contains(stderr, note) {
		t.Errorf("as an energy: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("energy", "--model", flow, "--output", "log_density", "--log-density", "--points", "q.npy"); code != 0 || strings.Contains(stderr, "named as a log density") {
		t.Errorf("--log-density: exit %d, %s", code, stderr)
	}
}

// Round 101 B1, B2, B7: --seeds with --flow compared the flow files by
// path: other bytes at the same paths trained a new seed from another
// flow beside the old ones, unsaid (B1), and the same bytes at other
// paths were refused (B2); --print-config left the files' checksums out
// (B7). Seeds compare the files by their SHA-256, and --print-config
// records it.
func TestSeedsFlowFilesByContent(t *testing.T) {
	dir := t.TempDir()
	pinned := "../../io/onnx/testdata/pinned/"
	put := func(dst string, src string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(dst), 0o755)
		os.WriteFile(dst, b, 0o644)
	}
	a, b := filepath.Join(dir, "fl", "s.onnx"), filepath.Join(dir, "fl", "d.onnx")
	put(a, pinned+"nflowsstyle_nofold_sample.onnx")
	put(b, pinned+"nflowsstyle_nofold_density.onnx")
	rng := rand.New(rand.NewPCG(101, 1))
	pts := make([]float64, 3*600)
	for i := range pts {
		pts[i] = rng.NormFloat64()
	}
	data := filepath.Join(dir, "x.npy")
	npy.WriteFile(data, &npy.Array{Shape: []int{600, 3}, Data: pts}, npy.Float64)
	out := filepath.Join(dir, "sd")
	seeds := func(sample, density, list string) (string, string, int) {
		return runCLI("train", "--data", data, "--flow", sample, "--flow-density", density, "--iterations", "2", "--quiet", "--seeds", list, "--out", out)
	}
	if _, stderr, code := seeds(a, b, "1"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, _, code := runCLI("train", "--data", data, "--flow", a, "--flow-density", b, "--iterations", "2", "--print-config")
	if code != 0 || !strings.Contains(stdout, `"sample_sha256": "`) || !strings.Contains(stdout, `"density_sha256": "`) {
		t.Errorf("--print-config: exit %d, %s", code, stdout)
	}
	a2, b2 := filepath.Join(dir, "elsewhere", "s.onnx"), filepath.Join(dir, "elsewhere", "d.onnx") // the same bytes at other paths
	put(a2, a)
	put(b2, b)
	if stdout, stderr, code := seeds(a2, b2, "1"); code != 0 || !strings.Contains(stdout, "seed 1: already trained in ") {
		t.Errorf("same files elsewhere: exit %d, %s%s", code, stdout, stderr)
	}
	put(a, b) // other bytes at the sampling graph's path
	if _, stderr, code := seeds(a, b, "1,2"); code != 2 || !strings.Contains(stderr, "holds a run with model.flow_onnx.sample_sha256 = ") {
		t.Errorf("other flow bytes: exit %d, %s", code, stderr)
	}
	if exists(filepath.Join(out, "s2")) {
		t.Error("seed 2 trained from the other flow")
	}
}

// Round 101 B4: a finished run's metrics.json deleted was written again
// by train --resume with only "its outputs are now complete", the file
// unnamed. A note names it (not for a run killed before its outputs,
// where samples.npy, written last, is missing too).
func TestMissingOutputNamed(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	m := filepath.Join(run, "metrics.json")
	os.Remove(m)
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || !strings.Contains(stderr, "note: "+m+" is missing; the run's outputs are written again from its final checkpoint") || !exists(m) {
		t.Errorf("exit %d, %s", code, stderr)
	}
	os.Remove(m)
	os.Remove(filepath.Join(run, "samples.npy"))
	if _, stderr, code := runCLI("train", "--resume", run, "--quiet"); code != 0 || strings.Contains(stderr, "is missing") {
		t.Errorf("as killed before its outputs: exit %d, %s", code, stderr)
	}
}

// Round 101 B5: --config RUN/config.json after its flow files were moved
// said "model.flow_onnx: open …: no such file" alone. It names the
// --config file and both ways: the files back at those paths, or --flow
// and --flow-density, which followed starts the run.
func TestConfigFlowFilesMissingAdvice(t *testing.T) {
	dir := t.TempDir()
	pinned, err := filepath.Abs("../../io/onnx/testdata/pinned/")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(101, 5))
	pts := make([]float64, 3*600)
	for i := range pts {
		pts[i] = rng.NormFloat64()
	}
	data := filepath.Join(dir, "x.npy")
	npy.WriteFile(data, &npy.Array{Shape: []int{600, 3}, Data: pts}, npy.Float64)
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(`{"data": {"file": "`+data+`"}, "train": {"algorithm": "flowmc", "iterations": 2}, "model": {"flow_onnx": {"sample": "gone/s.onnx", "density": "gone/d.onnx"}}}`), 0o644)
	_, stderr, code := runCLI("train", "--config", cfg, "--quiet", "--out", filepath.Join(dir, "r"))
	if code != 2 || !strings.Contains(stderr, "--config "+cfg+": model.flow_onnx: ") || !strings.Contains(stderr, "no such file") || !strings.Contains(stderr, "or --flow FILE --flow-density FILE to start from others") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--config", cfg, "--flow", filepath.Join(pinned, "nflowsstyle_nofold_sample.onnx"), "--flow-density", filepath.Join(pinned, "nflowsstyle_nofold_density.onnx"), "--quiet", "--out", filepath.Join(dir, "r2")); code != 0 {
		t.Errorf("the advice followed: exit %d, %s", code, stderr)
	}
}

// Round 102 A1: a Gamma's energy with 1e30 outside its support, as the
// refusal of +Inf energies advises writing it: MALA chains started at
// x < 0 kept every draw there, written at exit 0 with only R-hat's advice
// to sample longer. A note names the stranded chains and --starts; with
// starts inside the support there is none.
func TestStrandedChainsNamed(t *testing.T) {
	for _, c := range []struct{ fixture, want string }{
		{"gamma_placeholder_energy.onnx", "give --starts FILE with points inside the support"},
		// Round 103 A1: 1000 outside the support, far below the 10⁴ of
		// any draw's test: every draw of those chains stays on it.
		{"gamma_plateau_energy.onnx", "every draw looked at (20 a chain) where the energy exceeds the lowest among the chains' draws by 998 or more and does not change as the chain moves: a plateau"},
	} {
		t.Run(c.fixture, func(t *testing.T) { strandedChainsNamed(t, c.fixture, c.want) })
	}
}

func strandedChainsNamed(t *testing.T, fixture, want string) {
	model, err := filepath.Abs(filepath.Join("..", "..", "io", "onnx", "testdata", "edge", fixture)) // io/onnx/crosscheck/make_gamma_energy.py
	if err != nil {
		t.Fatal(err)
	}
	inTempDir(t)
	args := []string{"sample", "--model", model, "--sampler", "mala", "--chains", "8", "--steps", "300", "--seed", "2"}
	_, stderr, code := runCLI(append(args, "--out", "a.npy")...)
	a, rerr := npy.ReadFile("a.npy")
	if code != 0 || rerr != nil {
		t.Fatalf("exit %d, %v, %s", code, rerr, stderr)
	}
	var outside []string
	for c := range 8 {
		if a.Data[c*300+299] < 0 {
			outside = append(outside, strconv.Itoa(c)) // numbered from 0 (round 116 A2)
		}
	}
	if len(outside) == 0 {
		t.Fatalf("no chain ends outside the support: the case is not the one tested (%s)", stderr)
	}
	if !strings.Contains(stderr, "chain") || !strings.Contains(stderr, strings.Join(outside, ", ")+" (of 8, numbered from 0 as the draws' first axis)") || !strings.Contains(stderr, want) {
		t.Errorf("chains %v end outside; stderr %s", outside, stderr)
	}
	npy.WriteFile("s.npy", &npy.Array{Shape: []int{1, 1}, Data: []float64{1.5}}, npy.Float64)
	if _, stderr, code := runCLI(append(args, "--starts", "s.npy", "--out", "b.npy")...); code != 0 || strings.Contains(stderr, "stranded") {
		t.Errorf("--starts inside: exit %d, %s", code, stderr)
	}
}

// Round 102 B2: the cp that restores a run's metrics.csv named paths with
// spaces unquoted, and pasted as given it failed. B4: diagnose -dash.npy,
// a file whose name starts with "-", said only "unknown shorthand flag";
// the message says how to give it as a path, which followed works.
func TestAdvicePastesAndDashPaths(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run x3")
	if _, stderr, code := runCLI("train", "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	csv := filepath.Join(run, "metrics.csv")
	os.WriteFile(csv, []byte("garbage\n"), 0o644)
	_, stderr, code := runCLI("compare", run, "--out", filepath.Join(dir, "c"))
	want := "cp '" + filepath.Join(run, "checkpoint", "evals.csv") + "' '" + csv + "' restores them"
	if code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %s; want %q", code, stderr, want)
	}
	inTempDir(t)
	npy.WriteFile("-dash.npy", &npy.Array{Shape: []int{4, 100}, Data: make([]float64, 400)}, npy.Float64)
	if _, stderr, code := runCLI("diagnose", "-dash.npy"); code != 2 || !strings.Contains(stderr, "(-dash.npy is also a file here: give it as ./-dash.npy, or after --)") {
		t.Errorf("-dash.npy: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("diagnose", "./-dash.npy"); code != 0 {
		t.Errorf("./-dash.npy: exit %d, %s", code, stderr)
	}
}

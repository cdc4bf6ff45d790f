package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 71 A3: an energy whose ONNX input is a vector of points (n,) was
// refused; it is read as d = 1, its energies PyTorch's, and points given
// as a vector of n values are told to be stored as (n, 1).
func TestVectorInputEnergy(t *testing.T) {
	const model = "../../io/onnx/testdata/pinned/vector_input_dyn.onnx"
	ref, err := npz.OpenReader(strings.TrimSuffix(model, ".onnx") + ".npz")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	x, err := ref.Get("x5")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Get("energy5")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	points, vector, out := filepath.Join(dir, "p.npy"), filepath.Join(dir, "v.npy"), filepath.Join(dir, "e.npy")
	if err := npy.WriteFile(points, &npy.Array{Shape: []int{5, 1}, Data: x.Data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(vector, &npy.Array{Shape: []int{5}, Data: x.Data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("energy", "--model", model, "--points", points, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, err := npy.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got.Data {
		if math.Abs(e-want.Data[i]) > 1e-12*math.Max(1, math.Abs(want.Data[i])) {
			t.Errorf("energy %d: %v, PyTorch %v", i, e, want.Data[i])
		}
	}
	// A vector of n values for a model of d = 1 is n points (round 122
	// B3: it was refused, with the advice x[:, None]).
	if _, stderr, code := runCLI("energy", "--model", model, "--points", vector, "--out", filepath.Join(dir, "e2.npy")); code != 0 {
		t.Errorf("vector of points: exit %d: %s", code, stderr)
	}
	if again, err := npy.ReadFile(filepath.Join(dir, "e2.npy")); err != nil || !slices.Equal(again.Data, got.Data) {
		t.Errorf("energies of the vector: %v, %v; of (n, 1): %v", err, again, got.Data)
	}
}

// Round 71 B1, B4: diagnose's CSV memory estimate counted every file's
// rows from the bytes per row of the first file's first 64 KiB: CmdStan
// files whose first chain was written with more digits were accepted and
// died out of memory (the same files in another order were refused), and
// files whose header passed 64 KiB (8,000 y_rep columns) were refused at
// the old bound of 2 bytes per value, for 4 times their need. Every
// file's rows and columns are counted.
func TestDiagnoseCSVEstimateCountsEveryFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, cols, rows int, format string) string {
		var b strings.Builder
		b.WriteString("# model = m\nlp__,accept_stat__")
		for j := range cols {
			fmt.Fprintf(&b, ",y_rep.%d", j+1)
		}
		b.WriteString("\n")
		for i := range rows {
			b.WriteString("-7.1,0.9")
			for j := range cols {
				fmt.Fprintf(&b, ","+format, float64(i*cols+j)/7)
			}
			b.WriteString("\n")
		}
		b.WriteString("# Elapsed Time: 0.1 seconds (Total)\n")
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	long, short := write("long.csv", 20, 3000, "%.25f"), write("short.csv", 20, 3000, "%.1f")
	want := 2 * 3000.0 * 8 * (2*22 + diagnoseCopies*20)
	for _, order := range [][]string{{long, short}, {short, long}} {
		if got := csvNeed(order); got != want {
			t.Errorf("%s then %s: estimate %.4g, want %.4g", filepath.Base(order[0]), filepath.Base(order[1]), got, want)
		}
	}
	wide := write("wide.csv", 8000, 12, "%.6f")
	if got, want := csvNeed([]string{wide}), 12.0*8*(2*8002+diagnoseCopies*8000); got != want {
		t.Errorf("a header of 8,002 columns: estimate %.4g, want %.4g", got, want)
	}
}

// Round 71 B6: plot on a run folder that train still sets up (reading a
// large data file: only .lock there) said it is not a run folder; compare
// said it is being trained. Round 72 B6: sample, energy and convert said
// "neither a checkpoint nor a training run", and a run killed as it
// started (its lock alone left) was "not a run folder" to plot.
func TestPlotRunBeingSetUp(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	release, err := lockRunAs(live, "train")
	if err != nil {
		t.Fatal(err)
	}
	points := filepath.Join(dir, "p.npy")
	if err := npy.WriteFile(points, &npy.Array{Shape: []int{2, 2}, Data: []float64{0, 1, 2, 3}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"plot", live},
		{"sample", "--model", live, "--out", filepath.Join(dir, "s.npy")},
		{"energy", "--model", live, "--points", points, "--out", filepath.Join(dir, "e.npy")},
	} {
		_, stderr, code := runCLI(args...)
		if code == 0 || !strings.Contains(stderr, "the run is being set up (another flowebm process holds") || strings.Contains(stderr, "not a run folder") || strings.Contains(stderr, "neither a checkpoint") {
			t.Errorf("%s: exit %d, %q", args[0], code, stderr)
		}
	}
	release()
	os.MkdirAll(live, 0o755)
	if err := os.WriteFile(filepath.Join(live, ".lock"), nil, 0o644); err != nil { // as a SIGKILL leaves it
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plot", live}, {"compare", live, "--out", filepath.Join(dir, "c")}} { // round 73 B5: compare said "not a run folder"
		_, stderr, code := runCLI(args...)
		if code == 0 || !strings.Contains(stderr, "holds only a run's lock: a run killed before its first checkpoint leaves only its lock; start it again with the command that started it, its flags included (flowebm train … --out") {
			t.Errorf("%s, stale lock: exit %d, %q", args[0], code, stderr)
		}
	}
}

// Round 72 (prober A's note): energy --grad into a CSV headed its columns
// x1, x2 under points headed a, b; they keep the points' names.
func TestGradCSVKeepsColumnNames(t *testing.T) {
	dir := t.TempDir()
	points := filepath.Join(dir, "p.csv")
	if err := os.WriteFile(points, []byte("a,\"b, c\",d\n0.5,1,0\n-1,2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	grad := filepath.Join(dir, "g.csv")
	if _, stderr, code := runCLI("energy", "--model", "../../io/onnx/testdata/pinned/quadratic_3d_dyn.onnx", "--points", points, "--grad", grad, "--out", filepath.Join(dir, "e.npy")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(grad)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(b), "\n"); first != `a,"b, c",d` {
		t.Errorf("header %q, want the points' a,\"b, c\",d", first)
	}
}

// Round 72 B3: diagnose's mcse_mean 0.010360 printed "0.01" (%.2g drops
// the zero) beside a mean of three decimals.
func TestMCSEKeepsTrailingZeros(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0.010360, "0.010"}, {0.0345, "0.035"}, {0.23, "0.23"}, {0.2, "0.20"}, {12.3, "12"}, {1.0, "1.0"},
		// round 73 B1: the exponent forms and the edges lost their zero
		{3e-6, "3.0e-06"}, {2e7, "2.0e+07"}, {9.9996e-5, "0.00010"}, {9.996e-6, "1.0e-05"}, {0.09996, "0.10"}, {5e5, "5.0e+05"}} {
		if got := mcseText(c.v); got != c.want {
			t.Errorf("%v: %q, want %q", c.v, got, c.want)
		}
	}
}

// Round 72 B5: an indented comment line in a CSV of draws was refused as
// a line of other separators; it is a comment, as pandas' comment='#'
// reads it.
func TestDiagnoseIndentedComment(t *testing.T) {
	var b strings.Builder
	b.WriteString("chain,draw,x\n")
	for i := range 400 {
		if i == 200 {
			b.WriteString("  # indented comment, with a comma\n")
		}
		fmt.Fprintf(&b, "%d,%d,%g\n", i/100+1, i%100+1, float64((i*37)%101)/50-1)
	}
	path := filepath.Join(t.TempDir(), "draws.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runCLI("diagnose", path); code != 0 || !strings.Contains(stdout, "4 chains × 100 draws × 1 dim") {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
}

// Round 73 A2: train --data on one column with --flow was refused as
// needing a RealNVP's couplings, which a run given a flow does not build;
// the refusal says what holds.
func TestOneColumnDataWithFlow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d1.npy")
	x := make([]float64, 200)
	for i := range x {
		x[i] = float64(i%17) / 4
	}
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{200, 1}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	flows := "../../io/onnx/testdata/flows/"
	_, stderr, code := runCLI("train", "--data", path, "--flow", flows+"realnvp2_f64_sample.onnx", "--flow-density", flows+"realnvp2_f64_density.onnx", "--out", filepath.Join(dir, "r"))
	if code == 0 || !strings.Contains(stderr, "training runs are built for d ≥ 2") || strings.Contains(stderr, "couplings") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, stderr, _ := runCLI("train", "--data", path, "--out", filepath.Join(dir, "r2")); !strings.Contains(stderr, "every algorithm uses a RealNVP flow") {
		t.Errorf("without --flow: %s", stderr)
	}
}

// Round 73 B1: a mean beside an MCSE of 5e+05 was printed to the units.
func TestMeanBesideLargeMCSE(t *testing.T) {
	if got := meanText(387293, 5e5); got != "3.9e+05" {
		t.Errorf("%q, want 3.9e+05", got)
	}
	if got := meanText(123.456, 0.0123); got != "123.456" {
		t.Errorf("%q, want 123.456", got)
	}
	// Round 74 B1: where the mean to its MCSE's digit passed 16
	// characters, it fell back to 4 significant digits (1.235e+12 beside an
	// MCSE of 0.0010).
	for _, c := range []struct {
		mean, mcse float64
		want       string
	}{{1234567890123.3982, 0.0010, "1.2345678901233982e+12"}, {123.4559999999994, 5.2e-14, "1.2345599999999941e+02"}, {9.999947970063315e-09, 5.2e-14, "9.999948e-09"},
		// round 75 B1: a mean below the MCSE's digit kept one digit
		{-3e-30, 5.0e-20, "0"}, {-7e5, 5e18, "0"}, {-5.8e-15, 59, "0"}, {-0.0004, 0.023, "0.000"}, {-3e18, 5e18, "-3.0e+18"}, {4e17, 5e18, "4e+17"}} {
		if got := meanText(c.mean, c.mcse); got != c.want {
			t.Errorf("mean %v, mcse %v: %q, want %q", c.mean, c.mcse, got, c.want)
		}
	}
}

// Round 73 B3: round 72's indented comments were told from the parsed
// field, so a quoted field starting with '#' made a comment: rows "#1",5
// were dropped, unsaid. Only the raw line makes a comment; a quoted "#1"
// is a value, refused as not a number.
func TestDiagnoseQuotedHashIsData(t *testing.T) {
	var b strings.Builder
	b.WriteString("chain,x\n")
	for i := range 200 {
		if i == 120 {
			b.WriteString("\"#1\",5\n")
			continue
		}
		fmt.Fprintf(&b, "%d,%g\n", i/50+1, float64((i*37)%101)/50-1)
	}
	path := filepath.Join(t.TempDir(), "draws.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runCLI("diagnose", path); code == 0 || !strings.Contains(stderr, "line 122") {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
}

// Round 73 B4: every name written in Chinese, Japanese or Korean (or
// Greek) became the file stem "_", so diagnose --plots refused to draw
// two of them; letters of any script are kept.
func TestPlotStemsKeepLetters(t *testing.T) {
	c := &chainsData{names: []string{"日本語の名前", "短い名前", "α", "β", "a b"}}
	seen := map[string]bool{}
	for d := range c.names {
		b := c.plotBase(d)
		if seen[b] || b == "_" {
			t.Errorf("dimension %q: stem %q, taken or empty", c.names[d], b)
		}
		seen[b] = true
	}
	long := &chainsData{names: []string{strings.Repeat("名", 200)}}
	if b := long.plotBase(0); !utf8.ValidString(b) || len(b) > maxPlotBase+8 {
		t.Errorf("a long name's stem %q (%d bytes)", b, len(b))
	}
}

// Round 73 B5: a comment after a value ("0.5 # note") was blamed on a
// space separator, with advice to write commas.
func TestDiagnoseTrailingComment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte("chain,x\n1,0.5 # note\n1,0.2\n2,0.1\n2,0.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", path); code == 0 || !strings.Contains(stderr, "a comment after a value (#) is not read") || strings.Contains(stderr, "write the file with commas") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Round 74 B2: CmdStan files whose last line, a whole timing comment,
// lacks its line break were refused as cut mid-draw; a file cut inside a
// draw still is (probe 18).
func TestCmdStanLastCommentWithoutLineBreak(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for c := 1; c <= 2; c++ {
		var b strings.Builder
		b.WriteString("# model = m\nlp__,accept_stat__,mu\n# Adaptation terminated\n")
		for i := range 50 {
			fmt.Fprintf(&b, "-1,0.9,%g\n", float64((i*7+c*3)%21)/10-1)
		}
		b.WriteString("# \n#  Elapsed Time: 0.01 seconds (Warm-up)\n#  0.02 seconds (Sampling)")
		p := filepath.Join(dir, fmt.Sprintf("c%d.csv", c))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if stdout, stderr, code := runCLI(append([]string{"diagnose"}, paths...)...); code != 0 || !strings.Contains(stdout, "2 chains × 50 draws × 1 dim") {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
}

// Round 74 B3: names that differ in an invisible character ("x y" and
// "x\u00a0y") read alike in the verdict; such a name is quoted.
func TestVerdictQuotesInvisibleCharacters(t *testing.T) {
	var b strings.Builder
	rows := []dimReport{{name: "x y", named: true}, {name: "x\u00a0y", named: true}}
	for i := range rows {
		rows[i].RHat, rows[i].ESSBulk, rows[i].ESSTail = 1.5, 10, 10
	}
	if err := writeThresholds(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `rhat above 1.01: x y, "x\u00a0y"`) {
		t.Errorf("%s", b.String())
	}
}

// Round 75 B3: CmdStan files holding fewer draws than their header's
// num_samples (copied while the chains still sampled) were read unsaid.
func TestCmdStanFewerDrawsThanDeclared(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for c := 1; c <= 2; c++ {
		p := filepath.Join(dir, fmt.Sprintf("cut_%d.csv", c))
		cmdstanFile(t, p, c, 100, 200, 1, false, true)
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), "num_samples = 200", "num_samples = 300", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	stdout, stderr, code := runCLI(append([]string{"diagnose"}, paths...)...)
	if code != 0 || !strings.Contains(stdout, "cut_1.csv, cut_2.csv: fewer draws than the header's num_samples") {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
	// Complete files say nothing of it.
	full := filepath.Join(dir, "full.csv")
	cmdstanFile(t, full, 1, 100, 200, 1, false, true)
	full2 := filepath.Join(dir, "full2.csv")
	cmdstanFile(t, full2, 2, 100, 200, 1, false, true)
	if stdout, _, _ := runCLI("diagnose", full, full2); strings.Contains(stdout, "fewer draws") {
		t.Errorf("complete files: %s", stdout)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/npy"
)

// threeModes writes n points of a 2D mixture with weights w (in units far
// from standard: centres (10, −3), (14, −3), (12, 0), spreads 0.5 × 0.3)
// to dir/mix.npy and the centres to dir/modes.npy, and returns the
// fraction of points drawn from each component.
func threeModes(t *testing.T, dir string, n int, w []float64, seed uint64) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	centres := []float64{10, -3, 14, -3, 12, 0}
	x := make([]float64, 0, 2*n)
	frac := make([]float64, 3)
	for i := 0; i < n; i++ {
		u, k := rng.Float64(), 0
		for k < 2 && u > w[k] {
			u -= w[k]
			k++
		}
		frac[k] += 1 / float64(n)
		x = append(x, centres[2*k]+0.5*rng.NormFloat64(), centres[2*k+1]+0.3*rng.NormFloat64())
	}
	if err := npy.WriteFile(filepath.Join(dir, "mix.npy"), &npy.Array{Shape: []int{n, 2}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(filepath.Join(dir, "modes.npy"), &npy.Array{Shape: []int{3, 2}, Data: centres}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	return frac
}

// A three-mode data set with unequal weights trains through --data and
// the EBM recovers the weights; samples and energies come back in the
// data's units.
//
// Tolerance: 0.06 on each weight. At this setting (300 iterations of the
// default flowMC-EBM, 3,000 points) six training seeds on one data set
// gave a largest error of 0.036 (weights 0.175–0.210, 0.283–0.336,
// 0.466–0.522 for 0.207, 0.300, 0.493); equal weights would be off by
// 0.13 and 0.16.
func TestTrainOnDataRecoversWeights(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 300 iterations")
	}
	dir := t.TempDir()
	threeModes(t, dir, 3000, []float64{0.2, 0.3, 0.5}, 1)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	args := []string{"train", "--data", filepath.Join(dir, "mix.npy"), "--modes", filepath.Join(dir, "modes.npy"), "--iterations", "300", "--quiet", "--out", out}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("train: %s", stderr.String())
	}
	var m training.Metrics
	b, err := os.ReadFile(filepath.Join(out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, w := range m.TrueWeights {
		if got := m.Final.EBMWeights[k]; math.Abs(got-w) > 0.06 {
			t.Errorf("mode %d: EBM weight %.3f, data's %.3f (tolerance 0.06)", k+1, got, w)
		}
	}
	for _, f := range []string{"density.png", "weights.png", "metrics.csv", "checkpoint/spec.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	// samples.npy is in the data's units: its mean is near the data's
	// (12.2, −1.5), not the standardised 0 (tolerance 0.5: a tenth of the
	// spread between modes).
	s, err := npy.ReadFile(filepath.Join(out, "samples.npy"))
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(s.Shape[0], 2, s.Data)
	if mx, my := stat.Mean(mat.Col(nil, 0, x), nil), stat.Mean(mat.Col(nil, 1, x), nil); math.Abs(mx-12.2) > 0.5 || math.Abs(my+1.5) > 0.5 {
		t.Errorf("samples' mean (%.2f, %.2f), want near (12.2, −1.5)", mx, my)
	}

	// exp(−energy) summed over a grid in the data's units gives the EBM's
	// normaliser Z, whose logarithm the run estimated by importance
	// sampling: they agree within 5 standard errors plus 0.02 for the
	// grid's quadrature error.
	var grid []float64
	h := 0.05
	for gx := 6.0; gx < 18; gx += h {
		for gy := -6.0; gy < 3; gy += h {
			grid = append(grid, gx, gy)
		}
	}
	if err := npy.WriteFile(filepath.Join(dir, "grid.npy"), &npy.Array{Shape: []int{len(grid) / 2, 2}, Data: grid}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := run([]string{"energy", "--checkpoint", out, filepath.Join(dir, "grid.npy"), "--out", filepath.Join(dir, "e.npy")}, &stdout, &stderr); code != 0 {
		t.Fatalf("energy: %s", stderr.String())
	}
	e, err := npy.ReadFile(filepath.Join(dir, "e.npy"))
	if err != nil {
		t.Fatal(err)
	}
	mass := 0.0
	for _, v := range e.Data {
		mass += math.Exp(-v) * h * h
	}
	if d := math.Abs(math.Log(mass) - m.Final.LogZ.LogZ); d > 5*m.Final.LogZ.SE+0.02 {
		t.Errorf("log of the grid mass of exp(−energy) %.4f, importance-sampling log Z %.4f ± %.4f", math.Log(mass), m.Final.LogZ.LogZ, m.Final.LogZ.SE)
	}
}

func TestTrainOnDataRefusesBadData(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var rows strings.Builder
	rows.WriteString("a,b\n")
	for i := 0; i < 200; i++ {
		switch i {
		case 3:
			rows.WriteString("NaN,1\n")
		case 10:
			rows.WriteString("2,-Inf\n")
		default:
			rows.WriteString(strings.Join([]string{ftoa(float64(i)), ftoa(float64(i * i % 17))}, ",") + "\n")
		}
	}
	nonfinite := write("nonfinite.csv", rows.String())
	var constant strings.Builder
	for i := 0; i < 200; i++ {
		constant.WriteString(ftoa(float64(i)) + ",5\n")
	}
	constantFile := write("constant.csv", constant.String())
	small := write("small.csv", "1,2\n3,5\n4,1\n7,7\n2,2\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"nonfinite", []string{"--data", nonfinite}, "nonfinite.csv: 2 of 200 rows hold NaN or Inf values (the first is row 4); drop them with --drop-nonfinite"},
		{"constant", []string{"--data", constantFile}, "constant.csv: column 2 is constant (every value 5)"},
		{"small", []string{"--data", small}, "small.csv: 4 training rows (after holding out 1), fewer than the batch size 64"},
		{"key", []string{"--data", small, "--key", "x"}, "selects a member of an .npz"},
		{"no data", []string{"--holdout", "0.2"}, "--holdout applies to a data set: give --data FILE"},
		{"both", []string{"--data", small, "--experiment", "rings"}, "give --experiment or --data, not both"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		args := append([]string{"train", "--quiet", "--out", filepath.Join(dir, "run-"+c.name)}, c.args...)
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, code, errb.String(), c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "run-"+c.name, "checkpoint")); err == nil {
			t.Errorf("%s: a checkpoint was written for refused data", c.name)
		}
	}

	// With --drop-nonfinite the same file trains (two iterations).
	var out, errb bytes.Buffer
	args := []string{"train", "--quiet", "--data", nonfinite, "--drop-nonfinite", "--iterations", "2", "--out", filepath.Join(dir, "dropped")}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("--drop-nonfinite: %s", errb.String())
	}
	if !strings.Contains(out.String(), "dropped 2 of 200 rows holding NaN or Inf") {
		t.Errorf("the drop is not reported:\n%s", out.String())
	}

	// Resuming that run on another data set (of another dimension) is
	// refused: its checksum differs from the recorded one; without a
	// recorded checksum (config.json of earlier versions) the dimension
	// check refuses it.
	three := write("three.csv", strings.Repeat("1,2,3\n4,5,7\n", 100))
	errb.Reset()
	if code := run([]string{"train", "--quiet", "--resume", filepath.Join(dir, "dropped"), "--data", three}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "holds other data than the run in "+filepath.Join(dir, "dropped")+" was trained on") {
		t.Errorf("resume with other data: exit %d, %q", code, errb.String())
	}
	cfgPath := filepath.Join(dir, "dropped", "config.json")
	b, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, regexp.MustCompile(`(?m)^\s*"sha256": "[0-9a-f]+",?\n`).ReplaceAll(b, nil), 0o644)
	errb.Reset()
	// Deleting the recorded checksum is an edit of config.json that the
	// checkpoint's own copy of the configuration shows.
	if code := run([]string{"train", "--quiet", "--resume", filepath.Join(dir, "dropped"), "--data", three}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `field "data.sha256" is absent, but the checkpoint's copy of the configuration`) {
		t.Errorf("resume with the checksum deleted: exit %d, %q", code, errb.String())
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// --plot-format writes every plot of a run in that format, and an unknown
// format is refused before training.
func TestTrainPlotFormat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"train", "--iterations", "4", "--quiet", "--plot-format", "pdf", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("train: %s", stderr.String())
	}
	for _, f := range []string{"density.pdf", "weights.pdf"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || !bytes.HasPrefix(b, []byte("%PDF-")) {
			t.Errorf("%s: %.5q, %v", f, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "density.png")); err == nil {
		t.Error("density.png written besides density.pdf")
	}
	out2 := filepath.Join(t.TempDir(), "run")
	stderr.Reset()
	if code := run([]string{"train", "--iterations", "4", "--plot-format", "gif", "--out", out2}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "png, svg or pdf") {
		t.Errorf("--plot-format gif: status %d, %s", code, stderr.String())
	}
	if _, err := os.Stat(out2); err == nil {
		t.Error("refused run created its folder")
	}
}

// --resume with --data reads the data from a moved copy and keeps every
// other recorded data setting; data flags that would change them are
// refused by name.
func TestResumeOnMovedDataKeepsSettings(t *testing.T) {
	dir := t.TempDir()
	threeModes(t, dir, 400, []float64{0.2, 0.3, 0.5}, 1)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	args := []string{"train", "--data", filepath.Join(dir, "mix.npy"), "--holdout", "0.3", "--standardize", "global", "--iterations", "4", "--quiet", "--out", out}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("train: %s", stderr.String())
	}
	moved := filepath.Join(dir, "moved.npy")
	b, _ := os.ReadFile(filepath.Join(dir, "mix.npy"))
	os.WriteFile(moved, b, 0o644)
	stderr.Reset()
	if code := run([]string{"train", "--resume", out, "--data", moved, "--holdout", "0.2"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--holdout would be ignored") {
		t.Errorf("--resume --holdout: exit %d, %q", code, stderr.String())
	}
	// Probe 25: a folder as --data waited for the run's readers first,
	// then was named as config.json's.
	stderr.Reset()
	if code := run([]string{"train", "--resume", out, "--data", dir, "--quiet"}, &stdout, &stderr); code != 2 || stderr.String() != "flowebm: the data file given: "+dir+" is a folder, want a regular file\n" {
		t.Errorf("--resume --data FOLDER: exit %d, %q", code, stderr.String())
	}
	// Probe 26: other data, with an interrupted replacement to finish and a
	// reader holding the run, were refused only after the 20 s wait.
	changed := filepath.Join(dir, "changed.npy")
	b[len(b)-1] ^= 1
	os.WriteFile(changed, b, 0o644)
	if err := os.Rename(filepath.Join(out, "checkpoint"), filepath.Join(out, "checkpoint.old")); err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(reader.Fd()), syscall.LOCK_SH); err != nil { // as a reader holds it
		t.Fatal(err)
	}
	start := time.Now()
	stderr.Reset()
	code := run([]string{"train", "--resume", out, "--data", changed, "--quiet"}, &stdout, &stderr)
	if took := time.Since(start); code != 2 || !strings.HasPrefix(stderr.String(), "flowebm: --data "+changed+" holds other data than the run in "+out+" was trained on") || took > 10*time.Second || !exists(filepath.Join(out, "checkpoint.old")) {
		t.Errorf("--resume on other data beside a reader: exit %d after %v, %q", code, took, stderr.String())
	}
	reader.Close()
	stderr.Reset()
	if code := run([]string{"train", "--resume", out, "--data", moved, "--quiet"}, &stdout, &stderr); code != 0 {
		t.Fatalf("resume on the moved data: %s", stderr.String())
	}
	var cfg config.Run
	b, _ = os.ReadFile(filepath.Join(out, "config.json"))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if d := cfg.Data; d == nil || d.File != moved || d.HoldOut != 0.3 || d.Standardize != "global" {
		t.Errorf("config.json's data after resuming: %+v", d)
	}
}

// A data run resumed on a file whose contents changed is refused (it
// trained on the new data without a word): config.json records the file's
// SHA-256.
func TestResumeRefusesChangedData(t *testing.T) {
	dir := t.TempDir()
	threeModes(t, dir, 400, []float64{0.2, 0.3, 0.5}, 1)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"train", "--data", filepath.Join(dir, "mix.npy"), "--iterations", "4", "--quiet", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("train: %s", stderr.String())
	}
	threeModes(t, dir, 400, []float64{0.2, 0.3, 0.5}, 2) // other draws, same file
	if code := run([]string{"train", "--resume", out, "--quiet"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "holds other data than the run in "+out+" was trained on") {
		t.Errorf("resume on changed data: exit %d, %q", code, stderr.String())
	}
	// Round 80 B6: the advice for a new run on the file as it is works
	// (the advised --config RUN/config.json --data SAMEPATH was refused
	// for the SHA-256 it records of that path).
	advice := "flowebm train --data " + filepath.Join(dir, "mix.npy") + " --out NEW"
	if !strings.Contains(stderr.String(), advice) || !strings.Contains(stderr.String(), "give a copy of "+filepath.Join(out, "config.json")+" without its data.sha256 field as --config") {
		t.Fatalf("advice: %s", stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"train", "--data", filepath.Join(dir, "mix.npy"), "--iterations", "2", "--quiet", "--out", filepath.Join(dir, "new")}, &stdout, &stderr); code != 0 {
		t.Errorf("the advised new run: %s", stderr.String())
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/npy"
)

// Regressions of issue 44's probe: each case failed (a message without
// the file, flag or cause, a file or lock left, memory unchecked) before
// its fix.

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A points file whose header announces more points than memory holds is
// refused from its header, naming the file, its shape and the limit (the
// reader decoded it, or crashed).
func TestEnergyRefusesPointsOverMemory(t *testing.T) {
	var b bytes.Buffer
	if err := npy.Write(&b, &npy.Array{Shape: []int{1, 2}, Data: []float64{0, 0}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	hdr := bytes.Replace(b.Bytes(), []byte("(1, 2), }        "), []byte("(300000000, 2), }"), 1)
	pts := filepath.Join(t.TempDir(), "big.npy")
	if err := os.WriteFile(pts, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "--points "+pts+": 300000000 points of shape [2] need about 12 GB", "energy", "--model", toyONNX, pts)
	wantErr(t, "over the limit of", "energy", "--model", toyONNX, pts)
}

// A refused command leaves no lock file in a folder that existed and was
// empty; a lock file that was there before stays.
func TestLockRemovedFromEmptyFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "e1")
	os.Mkdir(dir, 0o755)
	release, err := lockRunAs(dir, "train")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 || !exists(dir) {
		t.Errorf("after release: %v, want the folder, empty", entries)
	}
	writeFile(t, dir, ".lock", "")
	release, _ = lockRunAs(dir, "train")
	release()
	if !exists(filepath.Join(dir, ".lock")) {
		t.Error("a lock file there before was removed")
	}
	os.Remove(filepath.Join(dir, ".lock"))
	// The probe's case: compare with nothing to plot.
	run := nanRun(t, 2)
	wantErr(t, "no value to plot", "compare", run, "--out", dir)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("compare left %v", entries)
	}
}

// nanRun writes a run folder whose metrics.csv holds n evaluations, all
// NaN.
func nanRun(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "allnan")
	os.Mkdir(dir, 0o755)
	nan := math.NaN()
	var evals []training.Eval
	for i := 1; i <= n; i++ {
		evals = append(evals, training.Eval{Iter: i, EBMWeightMSE: nan, NegMSE: nan, StartMSE: nan, LogDensityMedSE: nan,
			MaxRHat: nan, MaxRHatClassic: nan, HeldOutLL: nan})
	}
	evals[0].Stats.GlobalAccept = nan
	for i := range evals {
		evals[i].Stats = evals[0].Stats
	}
	if err := training.WriteEvalsCSV(filepath.Join(dir, "metrics.csv"), evals, 0); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "config.json", "{}")
	return dir
}

// compare says that evaluations are all NaN (not that there are none),
// and names the file and line of an iteration no figure can show.
func TestCompareNaNAndHugeIterations(t *testing.T) {
	run := nanRun(t, 3)
	wantErr(t, "the run allnan has 3 evaluations, but no value to plot", "compare", run, "--out", filepath.Join(t.TempDir(), "o"))
	csv := filepath.Join(run, "metrics.csv")
	b, _ := os.ReadFile(csv)
	os.WriteFile(csv, bytes.Replace(b, []byte("\n3,"), []byte("\n9223372036854775807,"), 1), 0o644)
	wantErr(t, csv+": line 4: iter 9223372036854775807, want at most 1e+15", "compare", run, "--out", filepath.Join(t.TempDir(), "o"))
}

// An output that is a symbolic link, even to nothing, is refused before
// any work, naming the flag and the link's target.
func TestDanglingLinkOutputRefused(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "d.npy")
	if err := os.Symlink("/nonexistent/x.npy", link); err != nil {
		t.Fatal(err)
	}
	pts := writeFile(t, dir, "p.csv", "1,2\n3,4\n")
	msg := "--out " + link + " is a symbolic link (to /nonexistent/x.npy): give another name, or --force"
	wantErr(t, msg, "energy", "--model", toyONNX, pts, "--out", link)
	wantErr(t, msg, "sample", "--model", toyONNX, "--out", link)
	if _, _, status := runCLI("energy", "--model", toyONNX, pts, "--out", link, "--force"); status != 0 {
		t.Errorf("--force: status %d", status)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("--force left %v, %v; want the link replaced by the energies", fi, err)
	}
}

// convert refuses empty arguments, a file given as CHECKPOINT (without
// the flags of other commands), and IN.onnx → a CHECKPOINT named .onnx;
// a checkpoint folder named .onnx is read as a checkpoint.
func TestConvertArguments(t *testing.T) {
	dir := t.TempDir()
	pts := writeFile(t, dir, "p.npy", "")
	wantErr(t, "the second argument (OUT.onnx, or CHECKPOINT) is empty", "convert", toyONNX, "")
	wantErr(t, "the first argument (CHECKPOINT, or IN.onnx) is empty", "convert", "", filepath.Join(dir, "x.onnx"))
	wantErr(t, "CHECKPOINT "+pts+" is a file: convert CHECKPOINT OUT.onnx reads a checkpoint folder", "convert", pts, filepath.Join(dir, "x.onnx"))
	if _, stderr, _ := runCLI("convert", pts, filepath.Join(dir, "x.onnx")); strings.Contains(stderr, "--model") || strings.Contains(stderr, "--flow") {
		t.Errorf("convert names flags it does not have: %s", stderr)
	}
	out := filepath.Join(dir, "ck.onnx")
	wantErr(t, "CHECKPOINT "+out+" ends in .onnx", "convert", toyONNX, out)
	if exists(out) {
		t.Errorf("%s written", out)
	}
	ck := filepath.Join(dir, "ck")
	if _, stderr, status := runCLI("convert", toyONNX, ck); status != 0 {
		t.Fatal(stderr)
	}
	os.Rename(ck, out)
	if _, stderr, status := runCLI("energy", "--model", out, writeFile(t, dir, "q.csv", "1,2\n")); status != 0 {
		t.Errorf("energy on a checkpoint folder named .onnx: %s", stderr)
	}
	if _, stderr, status := runCLI("convert", out, filepath.Join(dir, "re.onnx")); status != 0 {
		t.Errorf("convert of a checkpoint folder named .onnx: %s", stderr)
	}
}

// An export holding a non-finite constant (1/σ² of σ = 1e-150 in float32)
// is refused and nothing written: flowebm refused the file it wrote.
func TestConvertRefusesNonFiniteExport(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if _, stderr, status := runCLI("convert", toyONNX, ck, "--base", "1e-150"); status != 0 {
		t.Fatal(stderr)
	}
	out := filepath.Join(dir, "e.onnx")
	wantErr(t, "OUT.onnx "+out+": the export of "+ck+" (--what energy) would hold -Inf in \"base_neg_half_inv_var", "convert", ck, out, "--what", "energy", "--float32")
	if exists(out) {
		t.Errorf("%s written", out)
	}
}

// A single seed has no spread: none printed, and null in seeds.json.
func TestSingleSeedHasNoSpread(t *testing.T) {
	r := seedRun{weights: []float64{0.486, 0.514}, scalars: map[string]float64{"ebm_weight_mse": 0.01}}
	r.Final = json.RawMessage(`{"iter": 2}`)
	var out bytes.Buffer
	sum := summarise([]seedRun{r}, &out)
	if s := out.String(); strings.Contains(s, "±") || !strings.Contains(s, "mode 1: EBM weight 0.486 (1 seed: no spread)") {
		t.Errorf("printed %q", s)
	}
	b, err := json.Marshal(sum)
	if err != nil || !strings.Contains(string(b), `"mean":0.486,"sd":null`) || !strings.Contains(string(b), `"mean":0.01,"sd":null`) {
		t.Errorf("seeds.json %s, %v; want sd null", b, err)
	}
}

// Chains each constant but apart are not mixed at all: diagnose says so
// (it said the draws do not vary), and --json stays valid.
func TestDiagnoseConstantChainsApart(t *testing.T) {
	data := make([]float64, 20)
	for i := 10; i < 20; i++ {
		data[i] = 1
	}
	path := filepath.Join(t.TempDir(), "c.npy")
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{2, 10}, Data: data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	out, _, status := runCLI("diagnose", path)
	if status != 0 || !strings.Contains(out, "1 dim(s) whose chains are each constant but differ from one another: not mixed at all (R-hat infinite: +Inf in the table's rhat_classic, and in its rhat unless the folded draws are all equal, NaN as posterior gives it") || strings.Contains(out, "do not vary") {
		t.Errorf("status %d:\n%s", status, out)
	}
	js, _, _ := runCLI("diagnose", "--json", path)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(js), &rows); err != nil || len(rows) != 1 {
		t.Errorf("invalid JSON %s: %v", js, err)
	}
}

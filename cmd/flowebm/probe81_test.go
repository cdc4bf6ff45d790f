package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 81 B1: a checkpoint whose COMPLETE was removed was taken for one
// written before the marker existed, and every check of its files was
// skipped (a changed state.npz resumed at exit 0). One holding
// run-config.json, which only later versions write, is refused.
func TestRemovedMarkerRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if code, stderr := interruptAtFirstCheckpoint(t, dir, "train", "--iterations", "400", "--quiet", "--out", dir); code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := os.Remove(filepath.Join(dir, "checkpoint", "COMPLETE")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("train", "--resume", dir, "--quiet"); code != 2 || !strings.Contains(errOut, "checkpoint/ is incomplete") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 81 B2: an energy network given as --flow-density was refused
// with advice to sample the flow frozen, which then refused it as not one
// flow; train says so at once, and that the file is an energy network.
func TestEnergyAsFlowDensity(t *testing.T) {
	run := trainedRun(t)
	dir := t.TempDir()
	fs, eb := filepath.Join(dir, "fs.onnx"), filepath.Join(dir, "eb.onnx")
	for _, c := range [][]string{{"convert", run, fs, "--what", "flow-sample"}, {"convert", run, eb, "--what", "ebm"}} {
		if _, errOut, code := runCLI(c...); code != 0 {
			t.Fatal(errOut)
		}
	}
	_, errOut, code := runCLI("train", "--flow", fs, "--flow-density", eb, "--iterations", "2", "--out", filepath.Join(dir, "r"))
	for _, want := range []string{"are not one flow", `output is named "energy", as an energy network's`, "in every dimension"} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, want %q in: %s", code, want, errOut)
		}
	}
	if strings.Contains(errOut, "without --train-flow") {
		t.Errorf("advised to sample it frozen: %s", errOut)
	}
}

// Round 81 B3: a second train --seeds on other seeds replaced seeds.json
// with a summary that left out the runs already there, unsaid.
func TestSeedsSummaryNamesRunsLeftOut(t *testing.T) {
	set := filepath.Join(t.TempDir(), "set")
	if _, errOut, code := runCLI("train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", set); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runCLI("train", "--seeds", "2-3", "--iterations", "2", "--quiet", "--out", set)
	if code != 0 || !strings.Contains(out, "also holds the run s1, of a seed this command did not give: seeds.json leaves it out") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
}

// Round 81 B4: a run folder on a read-only file system (or not writable)
// was refused as "open …/.lock: read-only file system".
func TestUnwritableFolderSaid(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "open", Path: "r/.lock", Err: syscall.EROFS}, "r is on a read-only file system (open r/.lock: read-only file system), and plot writes there (its lock first, then its outputs): copy the folder somewhere writable (cp -r r COPY) and give the copy"},
		{&fs.PathError{Op: "open", Path: "r/.lock", Err: syscall.EACCES}, "r is not writable by this user"},
	} {
		err := unwritableFolder("r", "plot", c.err)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.err.(*fs.PathError).Err) {
			t.Errorf("%v: %v, want %q", c.err, err, c.want)
		}
	}
	other := errors.New("other")
	if err := unwritableFolder("r", "plot", other); err != other {
		t.Errorf("another error: %v", err)
	}
}

// Round 81 B5, B7: configuration refusals carried a Go package prefix
// ("c.json: algorithms: train.batch_size -5"), number flags Go's parser's
// words (`strconv.ParseUint: parsing "-1": invalid syntax`).
func TestMessagesWithoutGoInternals(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	if err := os.WriteFile(cfg, []byte(`{"experiment": "two-modes", "train": {"iterations": 30, "algorithm": "flowmc", "batch_size": -5}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--config", cfg, "--out", filepath.Join(dir, "r")}, "flowebm: --config " + cfg + ": train.batch_size -5, want > 0\n"},
		{[]string{"train", "--seed", "-1"}, "flowebm: --seed \"-1\": want a whole number ≥ 0\n"},
		{[]string{"train", "--iterations", "abc"}, "flowebm: --iterations \"abc\": want a whole number\n"},
		{[]string{"sample", "--step", "x"}, "flowebm: --step \"x\": want a number\n"},
		{[]string{"train", "--seed", "99999999999999999999"}, "flowebm: --seed 99999999999999999999: out of range: want a whole number ≥ 0 that a 64-bit unsigned integer holds\n"},
	} {
		if _, errOut, code := runCLI(c.args...); code != 2 || errOut != c.want {
			t.Errorf("%v: exit %d: %q, want %q", c.args, code, errOut, c.want)
		}
	}
	for msg, want := range map[string]string{
		"c.json: algorithms: train.batch_size -5":                 "c.json: train.batch_size -5",
		"experiments: unknown experiment \"x\"":                   "unknown experiment \"x\"",
		"d.npz: npz: no member \"zz\" (onnx: a, --algorithms: b)": "d.npz: no member \"zz\" (a, --algorithms: b)",
	} {
		if got := withoutPackagePrefixes(msg); got != want {
			t.Errorf("%q: %q, want %q", msg, got, want)
		}
	}
}

// Round 81 B6: a --config of a data file without an experiment printed
// a blank name at the start of the header line.
func TestHeaderNamesDataSet(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "d.csv", waveCSV(300))
	cfg := writeFile(t, dir, "c.json", `{"data": {"file": "d.csv"}, "train": {"iterations": 2}}`)
	out, errOut, code := runCLI("train", "--config", cfg, "--quiet", "--out", filepath.Join(dir, "r"))
	if code != 0 || !strings.Contains(out, "data d.csv with flowmc, seed 0: 2 iterations") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
}

// Round 81 B9: compare of runs of several experiments flattened some
// runs' curves unsaid.
func TestCompareNotesMixedExperiments(t *testing.T) {
	a := trainedRun(t)
	b := filepath.Join(t.TempDir(), "rings")
	if _, errOut, code := runCLI("train", "--experiment", "rings", "--iterations", "2", "--quiet", "--out", b); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut, code := runCLI("compare", a, b, "--out", filepath.Join(t.TempDir(), "c"))
	if code != 0 || !strings.Contains(errOut, "note: the runs come from 2 experiments (two-modes, rings)") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 81 B10, B12 and the .npz member note: a --config whose data.file
// is a folder was refused naming neither; a structured .npy was advised
// astype, which NumPy refuses; an .npz's first-member explanation was
// given twice.
func TestDataFileMessages(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "d")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, dir, "c.json", `{"data": {"file": "d"}, "train": {"iterations": 2}}`)
	if _, errOut, code := runCLI("train", "--config", cfg, "--out", filepath.Join(dir, "r")); code != 2 || !strings.Contains(errOut, cfg+": data.file "+folder+" is a folder, want a regular file") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	// A structured .npy: a header of two named float64 fields, and data.
	dict := "{'descr': [('a', '<f8'), ('b', '<f8')], 'fortran_order': False, 'shape': (2, 3), }"
	dict += strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
	st := append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(dict)), byte(len(dict) >> 8)}, dict...)
	st = append(st, make([]byte, 2*3*16)...)
	stPath := filepath.Join(dir, "st.npy")
	if err := os.WriteFile(stPath, st, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("diagnose", stPath); code != 2 || !strings.Contains(errOut, "a structured dtype (named fields)") || !strings.Contains(errOut, "structured_to_unstructured(a)") || strings.Contains(errOut, "astype") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	yx := filepath.Join(dir, "yx.npz")
	if err := npz.WriteFile(yx, map[string]*npy.Array{"a": {Shape: []int{10}, Data: make([]float64, 10)}, "b": {Shape: []int{300, 2}, Data: wave(600)}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI("train", "--data", yx, "--out", filepath.Join(dir, "r2"))
	if code != 2 || strings.Count(errOut, `"a", "b"`) != 1 {
		t.Errorf("exit %d: the members listed %d times: %s", code, strings.Count(errOut, `"a", "b"`), errOut)
	}
}

// Round 81 B11: the same values saved in another byte order were called
// "other data" without saying that files are compared by their bytes.
func TestOtherDataSaysBytesCompared(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.npy")
	if err := npy.WriteFile(a, &npy.Array{Shape: []int{300, 2}, Data: wave(600)}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "b.npy") // the same values, as float32: other bytes
	if err := npy.WriteFile(b, &npy.Array{Shape: []int{300, 2}, Data: wave(600)}, npy.Float32); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "r")
	if _, errOut, code := runCLI("train", "--data", a, "--iterations", "2", "--quiet", "--out", run); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runCLI("train", "--resume", run, "--data", b); code != 2 || !strings.Contains(errOut, "files are compared by the SHA-256 of their bytes, so the same values saved in another dtype") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 82 A3: conv models asked for on images given as --data were
// refused as "data has no images", with "… and … needs".
func TestConvOnDataSetSaysWhy(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img.npy")
	if err := npy.WriteFile(img, &npy.Array{Shape: []int{256, 1, 4, 4}, Data: wave(256 * 16)}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, dir, "c.json", `{"model": {"ebm": "conv", "flow": "conv-realnvp"}, "train": {"iterations": 2}}`)
	_, errOut, code := runCLI("train", "--config", cfg, "--data", img, "--out", filepath.Join(dir, "r"))
	if code != 2 || !strings.Contains(errOut, `model.ebm "conv" and model.flow "conv-realnvp" need an image experiment`) || !strings.Contains(errOut, "a data set (data.file, --data) trains MLP models on its rows, images flattened too") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 79 B1: the refusal of train --resume RUN --data OTHER.npz (no
// --key) advised a new run without the run's member, which read the
// first.
func TestOtherNpzAdviceKeepsTheRunsMember(t *testing.T) {
	dir := t.TempDir()
	arr := &npy.Array{Shape: []int{300, 2}, Data: wave(600)}
	other := &npy.Array{Shape: []int{300, 2}, Data: make([]float64, 600)}
	for i := range other.Data {
		other.Data[i] = 7 + 3*arr.Data[(i*11)%600]
	}
	ab, ot := filepath.Join(dir, "ab.npz"), filepath.Join(dir, "other.npz")
	for path, a := range map[string]*npy.Array{ab: arr, ot: other} {
		if err := npz.WriteFile(path, map[string]*npy.Array{"first": a, "second": a}, npy.Float64); err != nil {
			t.Fatal(err)
		}
	}
	runDir := filepath.Join(dir, "r")
	if _, errOut, code := runCLI("train", "--data", ab, "--key", "second", "--iterations", "2", "--quiet", "--out", runDir); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runCLI("train", "--resume", runDir, "--data", ot); code != 2 || !strings.Contains(errOut, "--data "+ot+" --key second --out NEW") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 79 B2: after an edit of a run's config.json, sample called its
// complete checkpoint incomplete; it says the checkpoint belongs to
// another configuration, how to restore it, and that the checkpoint
// folder reads alone, which works.
func TestEditedConfigSaysSo(t *testing.T) {
	run := trainedRun(t)
	cfgPath := filepath.Join(run, "config.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(b), `"iterations": 2`, `"iterations": 5`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, errOut, code := runCLI("sample", "--model", run, "--chains", "4", "--steps", "4", "--out", filepath.Join(dir, "a.npy"))
	ck := filepath.Join(run, "checkpoint")
	if code != 2 || !strings.Contains(errOut, "checkpoint/ belongs to another configuration") ||
		!strings.Contains(errOut, "cp "+filepath.Join(ck, "run-config.json")+" "+cfgPath+" restores it") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI("sample", "--model", ck, "--chains", "4", "--steps", "4", "--out", filepath.Join(dir, "b.npy")); code != 0 {
		t.Errorf("--model %s: %s", ck, errOut)
	}
}

// Round 79 B3, B4: plot called a run whose config.json is a FIFO "not a
// run folder (no config.json …)"; train's --data, --modes and --config
// and energy's --model, missing, were refused as "open …: no such file"
// without the flag.
func TestInputFlagsNamed(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.npy")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--data", missing, "--out", filepath.Join(dir, "r")}, "--data " + missing + ": no such file"},
		{[]string{"train", "--config", missing, "--out", filepath.Join(dir, "r")}, "--config " + missing + ": no such file"},
		{[]string{"energy", "--model", missing, "--points", missing}, "--model " + missing + ": no such file or folder"},
	} {
		if _, errOut, code := runCLI(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, errOut)
		}
	}
	run := trainedRun(t)
	cfg := filepath.Join(run, "config.json")
	os.Remove(cfg)
	if err := syscall.Mkfifo(cfg, 0o644); err != nil {
		t.Skip(err)
	}
	if _, errOut, code := runCLI("plot", run); code != 2 || !strings.Contains(errOut, cfg+" is a named pipe (FIFO), want a regular file: move it away; the run's checkpoint holds a copy of its configuration: cp ") { // round 96 B4: and how to restore it
		t.Errorf("plot with a FIFO config.json: exit %d, %s", code, errOut)
	}
}

// Round 80 B1, B3: the other-data advice gave --key of the run's member
// to a file that lacks it; a run on data it did not standardise (shift 0,
// scale 1) got the other-units note for its own converted flow.
func TestAdviceKeyOnlyWhereTheFileHasIt(t *testing.T) {
	if got := identityOrNil(&data.Scaling{Shift: []float64{0, 0}, Scale: []float64{1, 1}}); got != nil {
		t.Errorf("identity scaling kept: %v", got)
	}
	if flowUnitsNote("f.onnx", &data.Scaling{Shift: []float64{0}, Scale: []float64{1}}, nil) != "" {
		t.Error("units note for an identity scaling against the data's units")
	}
	dir := t.TempDir()
	arr := &npy.Array{Shape: []int{300, 2}, Data: wave(600)}
	ab, one := filepath.Join(dir, "ab.npz"), filepath.Join(dir, "one.npz")
	if err := npz.WriteFile(ab, map[string]*npy.Array{"first": arr, "second": arr}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	other := &npy.Array{Shape: []int{300, 2}, Data: make([]float64, 600)}
	for i := range other.Data {
		other.Data[i] = 5 + arr.Data[(i*13)%600]
	}
	if err := npz.WriteFile(one, map[string]*npy.Array{"only": other}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "r")
	if _, errOut, code := runCLI("train", "--data", ab, "--key", "second", "--iterations", "2", "--quiet", "--out", runDir); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runCLI("train", "--resume", runDir, "--data", one); code != 2 || !strings.Contains(errOut, "--data "+one+" --out NEW") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 80 B7: a run's moved --modes file left it stuck: resume and plot
// said "open …: no such file" naming no field, and writing the new path
// into config.json was refused as another configuration. The field is
// named, and the edit is taken (a path, as data.file's).
func TestMovedModesFile(t *testing.T) {
	dir := t.TempDir()
	var rows strings.Builder
	for i := range 200 {
		rows.WriteString(strconv.FormatFloat(wave(400)[2*i], 'f', 4, 64) + "," + strconv.FormatFloat(wave(400)[2*i+1], 'f', 4, 64) + "\n")
	}
	d := writeFile(t, dir, "d.csv", rows.String())
	modes := writeFile(t, dir, "m.csv", "-0.5,0.5\n0.5,-0.5\n")
	runDir := filepath.Join(dir, "r")
	if _, errOut, code := runCLI("train", "--data", d, "--modes", modes, "--iterations", "2", "--quiet", "--out", runDir); code != 0 {
		t.Fatal(errOut)
	}
	moved := filepath.Join(dir, "moved.csv")
	if err := os.Rename(modes, moved); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("plot", runDir); code != 2 || !strings.Contains(errOut, "data.modes: open "+modes) || !strings.Contains(errOut, "write where it is now into the configuration's data.modes") {
		t.Fatalf("plot with the modes moved: exit %d, %s", code, errOut)
	}
	cfg := filepath.Join(runDir, "config.json")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(string(b), modes, moved)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("plot", runDir); code != 0 {
		t.Errorf("plot after data.modes was edited: exit %d, %s", code, errOut)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 80 B4: a run's config.json cut short or emptied was refused
// without the cp that restores it (a deleted one got it); following the
// advice resumes the run.
func TestDamagedConfigGetsRestore(t *testing.T) {
	run := trainedRun(t)
	cfgPath := filepath.Join(run, "config.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(run, "checkpoint", "run-config.json")
	restore := "cp " + copied + " " + cfgPath + " restores it"
	for name, damaged := range map[string][]byte{"empty": nil, "cut": b[:len(b)/2], "invalid": []byte(strings.Replace(string(b), `"batch_size": 64`, `"batch_size": 0`, 1))} {
		if err := os.WriteFile(cfgPath, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"train", "--resume", run}, {"plot", run}} {
			if _, errOut, code := runCLI(args...); code != 2 || !strings.Contains(errOut, restore) {
				t.Errorf("%s, %v: exit %d: %s", name, args, code, errOut)
			}
		}
	}
	if err := os.WriteFile(cfgPath, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cfgPath); err != nil { // as cp would: replace, then resume
		t.Fatal(err)
	}
	c, err := os.ReadFile(copied)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, c, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("train", "--resume", run, "--quiet"); code != 0 {
		t.Errorf("resume after the cp: exit %d: %s", code, errOut)
	}
}

// Round 80 B4: a config.json that is a folder got a cp alone (which would
// not replace a folder); round 95 B11: it is told to move it away first.
func TestConfigFolderGetsNoRestore(t *testing.T) {
	run := trainedRun(t)
	cfgPath := filepath.Join(run, "config.json")
	if err := os.Remove(cfgPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(cfgPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("train", "--resume", run); code != 2 || !strings.Contains(errOut, cfgPath+" is a folder, want a regular file: move it away; the run's checkpoint holds a copy of its configuration: cp ") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 80 B2: inputs refused without their flag or without saying what
// is wrong: a FIFO --data, a missing --key member, a cut .npz, a non-ONNX
// --model, a dangling --data-dir link.
func TestInputRefusalsNameFlagAndFault(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	arr := &npy.Array{Shape: []int{300, 2}, Data: wave(600)}
	if err := npz.WriteFile(at("d.npz"), map[string]*npy.Array{"a": arr, "b": arr}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(at("d.npz"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"cut.npz": b[:len(b)/2], "text.onnx": []byte("not a model\n"), "p.npy": nil} {
		if err := os.WriteFile(at(name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := npy.WriteFile(at("p.npy"), &npy.Array{Shape: []int{3, 2}, Data: make([]float64, 6)}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(at("fifo.npy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(at("gone"), at("dangling")); err != nil {
		t.Fatal(err)
	}
	run := trainedRun(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"train", "--data", at("fifo.npy"), "--out", at("r1")}, []string{"--data " + at("fifo.npy") + " is a named pipe (FIFO)"}},
		{[]string{"train", "--data", at("d.npz"), "--key", "zz", "--out", at("r2")}, []string{`--key zz: --data ` + at("d.npz") + ` has no member "zz": give one of "a", "b"`}},
		{[]string{"energy", "--model", run, "--points", at("d.npz"), "--key", "zz"}, []string{`--key zz: --points ` + at("d.npz") + ` has no member "zz"`}},
		{[]string{"diagnose", at("d.npz"), "--key", "zz"}, []string{`--key zz: ` + at("d.npz") + ` has no member "zz"`}},
		{[]string{"train", "--data", at("cut.npz"), "--out", at("r3")}, []string{"--data " + at("cut.npz") + ": ", "it is cut short, damaged, or not an .npz"}},
		{[]string{"energy", "--model", run, "--points", at("cut.npz")}, []string{"--points " + at("cut.npz") + ": ", "cut short"}},
		{[]string{"energy", "--model", at("text.onnx"), "--points", at("p.npy")}, []string{"--model " + at("text.onnx") + ": ", "not an ONNX model, or one cut short or damaged"}},
		{[]string{"train", "--experiment", "mnist28", "--data-dir", at("dangling"), "--out", at("r4")}, []string{"--data-dir " + at("dangling") + " is a link to " + at("gone") + ", which does not exist"}},
	} {
		_, errOut, code := runCLI(c.args...)
		for _, w := range c.want {
			if code != 2 || !strings.Contains(errOut, w) {
				t.Errorf("%v: exit %d, want %q in: %s", c.args, code, w, errOut)
			}
		}
	}
}

// Round 80 B5, B9: the folder of a train --seeds set given as --model
// named no run inside; a run's config.json given as --model or to plot
// was called a file, without the run folder to give; --config given a
// run folder did not name its config.json. Each hint, followed, works.
func TestSetAndRunFileHints(t *testing.T) {
	set := filepath.Join(t.TempDir(), "set")
	if _, errOut, code := runCLI("train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", set); code != 0 {
		t.Fatal(errOut)
	}
	s1 := filepath.Join(set, "s1")
	cfg := filepath.Join(s1, "config.json")
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sample", "--model", set, "--chains", "4", "--steps", "4", "--out", filepath.Join(out, "a.npy")}, "it holds the runs s1, s2 (as train --seeds writes them): give those, e.g. " + s1},
		{[]string{"sample", "--model", cfg, "--chains", "4", "--steps", "4", "--out", filepath.Join(out, "a.npy")}, "it is the config.json of the run " + s1 + ": give the run folder, " + s1},
		{[]string{"plot", cfg}, "it is the config.json of the run " + s1 + ": give the run folder, " + s1},
		{[]string{"train", "--config", s1, "--out", filepath.Join(out, "r")}, "a run's configuration is its config.json: --config " + cfg},
	} {
		if _, errOut, code := runCLI(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %q in: %s", c.args, code, c.want, errOut)
		}
	}
	for _, args := range [][]string{
		{"sample", "--model", s1, "--chains", "4", "--steps", "4", "--out", filepath.Join(out, "b.npy")},
		{"train", "--config", cfg, "--iterations", "2", "--quiet", "--out", filepath.Join(out, "r2")},
	} {
		if _, errOut, code := runCLI(args...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

// Round 80 B8: a train --seeds rerun over a seed whose config.json was
// edited blamed the command ("this command asks for …", numbers quoted
// as strings); it names the edit and the cp that undoes it, and the
// rerun then continues the set.
func TestSeedsRerunNamesEditedConfig(t *testing.T) {
	set := filepath.Join(t.TempDir(), "set")
	args := []string{"train", "--seeds", "1-2", "--iterations", "2", "--quiet", "--out", set}
	if _, errOut, code := runCLI(args...); code != 0 {
		t.Fatal(errOut)
	}
	cfg := filepath.Join(set, "s1", "config.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), `"iterations": 2`, `"iterations": 5`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(set, "s1", "checkpoint", "run-config.json")
	if _, errOut, code := runCLI(args...); code != 2 || !strings.Contains(errOut, `field "train.iterations" is 5, but the checkpoint was written with 2`) || !strings.Contains(errOut, "cp "+copied+" "+cfg+" restores it") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("train", "--seeds", "1-2", "--iterations", "3", "--quiet", "--out", set); code != 2 || !strings.Contains(errOut, "holds a run with train.iterations = 2, this command asks for 3") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(args...); code != 0 {
		t.Errorf("rerun after the restore: exit %d: %s", code, errOut)
	}
}

// Round 80 B9: plot's refusal of a run whose config.json was edited sent
// the user to its checkpoint folder and back; plot of that folder names
// the edit and the cp that undoes it.
func TestPlotEditedRunCheckpointNoLoop(t *testing.T) {
	run := trainedRun(t)
	cfg := filepath.Join(run, "config.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), `"iterations": 2`, `"iterations": 5`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(run, "checkpoint")
	if _, errOut, code := runCLI("plot", ck); code != 2 || !strings.Contains(errOut, "whose config.json was edited after it was written") || !strings.Contains(errOut, "cp "+filepath.Join(ck, "run-config.json")+" "+cfg+" restores it") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Round 80 B7: the file of mode centres overwritten in place was taken
// on resume; its SHA-256 is recorded and checked.
func TestModesFileChecksum(t *testing.T) {
	dir := t.TempDir()
	pts := make([]float64, 600*2)
	for i := range 600 {
		c := -2.0
		if i%2 == 1 {
			c = 2
		}
		pts[2*i], pts[2*i+1] = c+0.3*wave(600)[i], c+0.3*wave(600)[(i*7)%600]
	}
	dataPath, modes := filepath.Join(dir, "d.npy"), filepath.Join(dir, "m.npy")
	if err := npy.WriteFile(dataPath, &npy.Array{Shape: []int{600, 2}, Data: pts}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	writeModes := func(x float64) {
		if err := npy.WriteFile(modes, &npy.Array{Shape: []int{2, 2}, Data: []float64{x, -2, 2, 2}}, npy.Float64); err != nil {
			t.Fatal(err)
		}
	}
	writeModes(-2)
	run := filepath.Join(dir, "r")
	interruptAtFirstCheckpoint(t, run, "train", "--data", dataPath, "--modes", modes, "--iterations", "400", "--quiet", "--out", run)
	writeModes(-3)
	if _, errOut, code := runCLI("train", "--resume", run, "--quiet"); code != 2 || !strings.Contains(errOut, "but data.modes_sha256 records") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	writeModes(-2)
	if _, errOut, code := runCLI("train", "--resume", run, "--quiet"); code != 0 {
		t.Errorf("resume with the file put back: exit %d: %s", code, errOut)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowebm/flowebm/io/checkpoint"
)

// Probe 15: readers without a regular-file check hung on a FIFO (an ONNX
// --model, seeds.json under reproduce --report, a checkpoint's manifest),
// or on a link to /dev/zero read until the process died of memory. Each
// refuses now, naming the file; a reader still blocked after 20 s fails.
func TestReadersRefuseFIFOs(t *testing.T) {
	dir := t.TempDir()
	run := trainedRun(t)
	manifest := makeSpecial(t, filepath.Join(run, "checkpoint", checkpoint.ManifestName), true)
	report := filepath.Join(dir, "rep")
	if err := os.MkdirAll(filepath.Join(report, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(report, "seeds", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	seeds := makeSpecial(t, filepath.Join(report, "seeds", "x", "seeds.json"), true)
	model := makeSpecial(t, filepath.Join(dir, "m.onnx"), true)
	points := filepath.Join("..", "..", "io", "onnx", "testdata", "torch", "relu_f64_x.npy")
	wantRefusals(t, []refusal{
		{[]string{"energy", "--model", model, "--points", points, "--out", filepath.Join(dir, "e.npy")}, model + " is a named pipe (FIFO), want a regular file"},
		{[]string{"energy", "--model", run, "--points", points, "--out", filepath.Join(dir, "e2.npy")}, manifest + " is a named pipe (FIFO), want a regular file"},
		{[]string{"reproduce", "--report", report, "--experiments", "two-modes", "--algorithms", "flowmc"}, seeds + " is a named pipe (FIFO), want a regular file"},
	})
}

// refusal is a command line and the error it must print.
type refusal struct {
	args []string
	want string
}

// wantRefusals runs each command and checks its error; a command still
// running after 20 s (a reader blocked on a FIFO) fails the test.
func wantRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		done := make(chan string, 1)
		go func() { _, stderr, _ := runCLI(c.args...); done <- stderr }()
		select {
		case stderr := <-done:
			if !strings.Contains(stderr, c.want) {
				t.Errorf("%v: %q, want %q", c.args, stderr, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%v: still reading after 20 s", c.args)
		}
	}
}

// makeSpecial puts at path (replacing a file there) a FIFO, or a link to
// /dev/zero, and returns path.
func makeSpecial(t *testing.T, path string, fifo bool) string {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if fifo {
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	} else if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Probe 16: more readers hung on a FIFO or read a link to /dev/zero until
// the process died of memory: --config, a run's config.json and its
// checkpoint files (hashed by the manifest check), compare's metrics.csv,
// diagnose's inputs, --data. Each refuses now, naming the file.
func TestMoreReadersRefuseNonRegular(t *testing.T) {
	dir := t.TempDir()
	spec, cfgRun, cmpRun := trainedRun(t), trainedRun(t), trainedRun(t)
	specFile := makeSpecial(t, filepath.Join(spec, "checkpoint", "spec.json"), false)
	cfgFile := makeSpecial(t, filepath.Join(cfgRun, "config.json"), true)
	metrics := makeSpecial(t, filepath.Join(cmpRun, "metrics.csv"), false)
	points := filepath.Join("..", "..", "io", "onnx", "testdata", "torch", "relu_f64_x.npy")
	wantRefusals(t, []refusal{
		{[]string{"train", "--config", makeSpecial(t, filepath.Join(dir, "c.json"), true), "--print-config"}, "c.json is a named pipe (FIFO), want a regular file"},
		{[]string{"train", "--resume", cfgRun}, cfgFile + " is a named pipe (FIFO), want a regular file"},
		{[]string{"energy", "--model", spec, "--points", points, "--out", filepath.Join(dir, "e.npy")}, specFile + " is a device, want a regular file"},
		{[]string{"compare", cmpRun, "--out", filepath.Join(dir, "cmp")}, metrics + " is a device, want a regular file"},
		{[]string{"diagnose", makeSpecial(t, filepath.Join(dir, "d.npy"), true)}, "d.npy is a named pipe (FIFO), want a regular file"},
		{[]string{"diagnose", makeSpecial(t, filepath.Join(dir, "z.csv"), false)}, "z.csv is a device, want a regular file"},
		{[]string{"train", "--data", makeSpecial(t, filepath.Join(dir, "data.csv"), false), "--iterations", "2", "--out", filepath.Join(dir, "r")}, "data.csv is a device, want a regular file"},
	})
}

// Probe 17: resuming a run whose metrics.csv had become a folder trained
// until the next checkpoint and failed there; probe 18: a figure
// (density.png) made a folder failed only at the end of training. Both are
// refused at start, the kind named in words.
func TestResumeRefusesNonRegularOutputs(t *testing.T) {
	for _, name := range []string{"metrics.csv", "density.png", "rhat.svg"} {
		run := trainedRun(t)
		p := filepath.Join(run, name)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{"train", "--resume", run}
		if strings.HasSuffix(name, ".svg") {
			args = append(args, "--plot-format", "svg")
		}
		wantErr(t, p+" is a folder, want a regular file: the run replaces it as it trains", args...)
	}
	// Probe 19: plot drew, then failed with "rename …: file exists".
	run := trainedRun(t)
	p := filepath.Join(run, "density.png")
	os.Remove(p)
	os.Mkdir(p, 0o755)
	wantErr(t, p+" is a folder, want a regular file: plot replaces it", "plot", run)
}

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
	mkfifo := func(p string) string {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return p
	}
	run := trainedRun(t)
	manifest := filepath.Join(run, "checkpoint", checkpoint.ManifestName)
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	mkfifo(manifest)
	report := filepath.Join(dir, "rep")
	if err := os.MkdirAll(filepath.Join(report, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(report, "seeds", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	seeds := mkfifo(filepath.Join(report, "seeds", "x", "seeds.json"))
	model := mkfifo(filepath.Join(dir, "m.onnx"))
	points := filepath.Join("..", "..", "io", "onnx", "testdata", "torch", "relu_f64_x.npy")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"energy", "--model", model, "--points", points, "--out", filepath.Join(dir, "e.npy")}, model + " is a named pipe (FIFO), want a regular file"},
		{[]string{"energy", "--model", run, "--points", points, "--out", filepath.Join(dir, "e2.npy")}, manifest + " is a named pipe (FIFO), want a regular file"},
		{[]string{"reproduce", "--report", report, "--experiments", "two-modes", "--algorithms", "flowmc"}, seeds + " is a named pipe (FIFO), want a regular file"},
	} {
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

// Probe 16: more readers hung on a FIFO or read a link to /dev/zero until
// the process died of memory: --config, a run's config.json and its
// checkpoint files (hashed by the manifest check), compare's metrics.csv,
// diagnose's inputs, --data. Each refuses now, naming the file.
func TestMoreReadersRefuseNonRegular(t *testing.T) {
	dir := t.TempDir()
	special := func(name string, fifo bool) string {
		p := filepath.Join(dir, name)
		if fifo {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			return p
		}
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	replace := func(path string, fifo bool) string {
		if err := os.Remove(path); err != nil {
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
	spec, cfgRun, cmpRun := trainedRun(t), trainedRun(t), trainedRun(t)
	specFile := replace(filepath.Join(spec, "checkpoint", "spec.json"), false)
	cfgFile := replace(filepath.Join(cfgRun, "config.json"), true)
	metrics := replace(filepath.Join(cmpRun, "metrics.csv"), false)
	points := filepath.Join("..", "..", "io", "onnx", "testdata", "torch", "relu_f64_x.npy")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--config", special("c.json", true), "--print-config"}, "c.json is a named pipe (FIFO), want a regular file"},
		{[]string{"train", "--resume", cfgRun}, cfgFile + " is a named pipe (FIFO), want a regular file"},
		{[]string{"energy", "--model", spec, "--points", points, "--out", filepath.Join(dir, "e.npy")}, specFile + " is a device, want a regular file"},
		{[]string{"compare", cmpRun, "--out", filepath.Join(dir, "cmp")}, metrics + " is a device, want a regular file"},
		{[]string{"diagnose", special("d.npy", true)}, "d.npy is a named pipe (FIFO), want a regular file"},
		{[]string{"diagnose", special("z.csv", false)}, "z.csv is a device, want a regular file"},
		{[]string{"train", "--data", special("data.csv", false), "--iterations", "2", "--out", filepath.Join(dir, "r")}, "data.csv is a device, want a regular file"},
	} {
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

package training

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
)

// writeCSV writes 300 two-dimensional points to path, making its folder.
func writeCSV(t *testing.T, path string) {
	t.Helper()
	var b strings.Builder
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 300; i++ {
		b.WriteString(ftoa(rng.NormFloat64()) + "," + ftoa(rng.NormFloat64()) + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A run on --data with a relative path records the absolute path in its
// config.json, so that it resumes from another working directory (the
// relative path was recorded: "open in/d.csv: no such file or directory").
func TestRelativeDataPathRecordedAbsolute(t *testing.T) {
	dir := t.TempDir()
	writeCSV(t, filepath.Join(dir, "in", "d.csv"))
	t.Chdir(dir)
	p, err := NewPlan(Request{Data: &config.Data{File: filepath.Join("in", "d.csv")}, Algorithm: algorithms.ULA, Iterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Start("run")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	run := filepath.Join(dir, "run")
	cfg, err := ReadRunConfig(run)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "in", "d.csv"); cfg.Data.File != want {
		t.Errorf("config.json records data.file %q, want %q", cfg.Data.File, want)
	}
	if _, err := Resume(run); err != nil {
		t.Errorf("resumed from another directory: %v", err)
	}
}

// A configuration file's relative data.file is relative to the file's
// folder, not to the working directory.
func TestConfigDataFileRelativeToConfig(t *testing.T) {
	dir := t.TempDir()
	writeCSV(t, filepath.Join(dir, "cfg", "data", "d.csv"))
	path := filepath.Join(dir, "cfg", "c.json")
	js := `{"data": {"file": "data/d.csv"}, "train": {"algorithm": "ula", "iterations": 2}}`
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	p, err := NewPlan(Request{ConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Start(filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "cfg", "data", "d.csv"); r.Config.Data.File != want {
		t.Errorf("data.file %q, want %q", r.Config.Data.File, want)
	}
}

// Probe 30: a checkpoint's run-config.json named the trainer's options
// without "train." ("algorithm \"bogus\""), unlike the run's config.json.
func TestCheckpointConfigNamesTrainerFields(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "run-config.json")
	if err := os.WriteFile(ck, []byte(`{"experiment": "two-modes", "train": {"algorithm": "bogus", "iterations": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := sameConfig(filepath.Join(dir, "config.json"), config.Run{}, ck)
	if want := ck + `: algorithms: train.algorithm "bogus", want`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%v, want %q…", err, want)
	}
}

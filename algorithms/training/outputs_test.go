package training

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/internal/jsonfile"
)

// metrics.json names the build that computed the run: Go, BLAS and vector
// math, which decide the rounding of a seed's numbers.
func TestMetricsNameTheBuild(t *testing.T) {
	r := smallRun(t, "flowmc", 2, t.TempDir())
	stepN(t, r, 2)
	path := filepath.Join(t.TempDir(), "metrics.json")
	if err := WriteMetrics(path, r, 0); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Build.BLAS == "" || m.Build.VectorMath == "" || !strings.HasPrefix(m.Build.Go, "go") {
		t.Errorf("build %+v", m.Build)
	}
}

// A run on a CSV file with a header names its plot's axes after the
// columns.
func TestDataColumnsNameAxes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	var b strings.Builder
	b.WriteString("\uFEFFheight, weight\n")
	rng := rand.New(rand.NewPCG(2, 2))
	for i := 0; i < 200; i++ {
		b.WriteString(strings.Join([]string{ftoa(170 + 10*rng.NormFloat64()), ftoa(70 + 8*rng.NormFloat64())}, ",") + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	exp, _, err := config.Data{File: path}.Load(rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(exp.Columns, ",") != "height,weight" {
		t.Errorf("columns %q", exp.Columns)
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// config.json records the build that started the run, and a run resumed
// on another build says so.
func TestConfigRecordsTheBuild(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, "flowmc", 2, dir)
	stepN(t, r, 1)
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadRunConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Build == nil || *cfg.Build != config.CurrentBuild() {
		t.Fatalf("config.json build %v, want %v", cfg.Build, config.CurrentBuild())
	}
	other := *cfg.Build
	other.BLAS = "some other BLAS"
	cfg.Build = &other
	if err := jsonfile.Write(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	r2, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Notes) == 0 || !strings.Contains(r2.Notes[len(r2.Notes)-1], "started with go") || !strings.Contains(r2.Notes[len(r2.Notes)-1], "some other BLAS") {
		t.Errorf("notes %q", r2.Notes)
	}
}

// An empty metrics.csv says so (it said "header: EOF").
func TestEmptyEvalsCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.csv")
	os.WriteFile(path, nil, 0o644)
	if _, err := ReadEvalsCSVModes(path); err == nil || !strings.Contains(err.Error(), path+" is empty: want flowebm's metrics.csv") {
		t.Errorf("empty file: %v", err)
	}
}

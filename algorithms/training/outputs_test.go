package training

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/internal/jsonfile"
)

// metrics.json names the build that computed the run: Go, BLAS and vector
// math, which decide the rounding of a seed's numbers.
func TestMetricsNameTheBuild(t *testing.T) {
	r := smallRun(t, "flowmc", 2, t.TempDir())
	stepN(t, r, 2)
	path := filepath.Join(t.TempDir(), "metrics.json")
	if err := WriteMetrics(path, r); err != nil {
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

// ReadMetrics refuses metrics.json files no run writes, naming the field
// (round-12 probe: reproduce --report printed 1e308 weights, an iteration
// count of 1e18 and a negative time from edited files).
func TestReadMetricsRefusesImpossibleValues(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 4, dir)
	stepN(t, r, 4)
	path := filepath.Join(dir, "metrics.json")
	if err := WriteMetrics(path, r); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMetrics(path); err != nil {
		t.Fatalf("a run's own metrics.json: %v", err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(m map[string]any)
		want string
	}{
		{func(m map[string]any) { m["final"] = nil }, `field "final" is missing or null`},
		{func(m map[string]any) { delete(m, "final") }, `field "final" is missing or null`},
		{func(m map[string]any) { m["iterations"] = 1e18 }, `field "iterations" is 1000000000000000000, want 1 to 1000000000`},
		{func(m map[string]any) { m["seconds"] = -1e300 }, `field "seconds" is -1e+300, want a duration ≥ 0`},
		{func(m map[string]any) { m["final"].(map[string]any)["iter"] = -5 }, `field "final.iter" is -5, outside 1 to field "iterations", 4: one of them was edited`},
		{func(m map[string]any) { m["final"].(map[string]any)["neg_weights"] = []any{0.2} }, `field "final.neg_weights" has 1 weights, want 2`},
		{func(m map[string]any) {
			m["final"].(map[string]any)["neg_weight_intervals"] = []any{map[string]any{"weight": 1e308, "mcse": -1}, map[string]any{"weight": 0.5}}
		}, `field "final.neg_weight_intervals" holds weight 1e+308 ± -1 at mode 1`},
	} {
		var m map[string]any
		if err := json.Unmarshal(orig, &m); err != nil {
			t.Fatal(err)
		}
		c.edit(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadMetrics(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// metrics.json's seconds sum the training time of every invocation of a
// resumed run (probe 14: it counted only the last one). The first
// invocation's clock is set 100 s back, standing for a long first part.
func TestMetricsSecondsSumResumedInvocations(t *testing.T) {
	dir := t.TempDir()
	first := smallRun(t, algorithms.FlowMC, 6, dir)
	first.clock = time.Now().Add(-100 * time.Second)
	stepN(t, first, 3)
	if err := first.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := resumed.Train(nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "metrics.json")
	if err := WriteMetrics(path, resumed); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Seconds < 100 || m.Seconds > 100+600 {
		t.Errorf("seconds %.1f, want the first invocation's 100 s plus the second's", m.Seconds)
	}
	// The final checkpoint carries the sum on, for a later resume.
	again, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s := again.TrainingTime().Seconds(); s < 100 || s > m.Seconds {
		t.Errorf("resumed from the final checkpoint: %.1f s, want 100 s to the %.1f s of metrics.json (written after it)", s, m.Seconds)
	}
}

// A run without an exact density (mnist) writes true_held_out_ll as null,
// and an evaluation without R-hat its R-hats: they read as NaN, not as 0
// (compare's table printed "(0.000)" as mnist's exact log-likelihood).
func TestReadMetricsNullIsNaN(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 2, dir)
	stepN(t, r, 2)
	path := filepath.Join(dir, "metrics.json")
	if err := WriteMetrics(path, r); err != nil {
		t.Fatal(err)
	}
	editJSON(t, path, func(m map[string]any) {
		m["true_held_out_ll"] = nil
		m["final"].(map[string]any)["max_rhat"] = nil
	})
	m, err := ReadMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(m.TrueHeldOutLL) || !math.IsNaN(m.Final.MaxRHat) || math.IsNaN(m.Final.HeldOutLL) {
		t.Errorf("exact LL %v, max R-hat %v, held-out LL %v: want NaN, NaN and a number", m.TrueHeldOutLL, m.Final.MaxRHat, m.Final.HeldOutLL)
	}
}

// Probe 34: a metrics.csv header refused with its first four columns
// quoted, equal to the wanted ones where a later column was wrong. The
// refusal says which column differs, or the count.
func TestEvalsHeaderRefusalSaysWhere(t *testing.T) {
	dir := t.TempDir()
	want := evalsHeader(2)
	swapped := slices.Clone(want)
	swapped[6], swapped[7] = swapped[7], swapped[6]
	for _, c := range []struct {
		head []string
		msg  string
	}{
		{swapped, fmt.Sprintf("column 7 is %q, want %q", want[7], want[6])},
		{append(slices.Clone(want), "extra", "x", "y"), fmt.Sprintf("column %d is %q, want %q", len(want)-3, "neg_w0", "ebm_w2")},
		{want[:len(want)-1], fmt.Sprintf("%d columns, want %d and 3 per mode", len(want)-1, len(want)-6)},
	} {
		path := filepath.Join(dir, "metrics.csv")
		if err := os.WriteFile(path, []byte(strings.Join(c.head, ",")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadEvalsCSVModes(path); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("header %v: %v, want %q", c.head, err, c.msg)
		}
	}
}

// Probe 60 B3: an evaluations file cut inside its last number is refused
// (it was read, the number shortened: 0.54687 for 0.546875), naming the
// file; the same file whole is read.
func TestEvalsCutRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.csv")
	evals := []Eval{{Iter: 1, HeldOutLL: -2.5}, {Iter: 2, HeldOutLL: 0.546875}}
	if err := WriteEvalsCSV(path, evals, 0); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadEvalsCSVModes(path); err != nil || len(got) != 2 {
		t.Fatalf("whole: %v, %v", got, err)
	}
	if err := os.WriteFile(path, whole[:len(whole)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEvalsCSVModes(path); err == nil || !strings.Contains(err.Error(), path+" does not end with a line break: it was cut, or had data appended") {
		t.Errorf("cut: %v", err)
	}
}

// Probe 61 B3: a run's cut metrics.csv names the cp that restores it from
// the run's last checkpoint; restored so, it reads.
func TestCutMetricsRestoreNamed(t *testing.T) {
	dir := checkpointAt(t, 4, 1, 2, true)
	ck, err := LatestCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(ck, "evals.csv"))
	if err != nil || len(b) < 10 {
		t.Fatalf("the checkpoint's evaluations: %v (%d bytes)", err, len(b))
	}
	path := filepath.Join(dir, "metrics.csv")
	os.WriteFile(path, b[:len(b)-3], 0o644)
	_, err = ReadEvalsCSVModes(path)
	if want := "cp " + filepath.Join(ck, "evals.csv") + " " + path + " restores them"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("cut: %v, want %q", err, want)
	}
	os.WriteFile(path, b, 0o644)
	if got, err := ReadEvalsCSVModes(path); err != nil || len(got) != 2 {
		t.Errorf("restored: %d evaluations, %v", len(got), err)
	}
}

// Round 76 B6: a damaged header of a run without modes was said to want
// flowebm's columns "for 0 modes".
func TestEvalsHeaderWithoutModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.csv")
	if err := os.WriteFile(path, []byte("garbage,x\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for modes, want := range map[int]string{0: "…)", 2: "…) for 2 modes"} {
		_, err := ReadEvalsCSV(path, modes)
		if err == nil || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "0 modes") {
			t.Errorf("%d modes: %v", modes, err)
		}
	}
}

// Round 135 B4: a row of evals.csv with a field too many was refused with
// encoding/csv's "record on line 3: wrong number of fields", without the
// count wanted; it is counted against the header.
func TestEvalsRowFieldsCounted(t *testing.T) {
	head := evalsHeader(0)
	row := make([]string, len(head))
	for i := range row {
		row[i] = "1"
	}
	long := append(slices.Clone(row), "NaN")
	row2 := slices.Clone(row)
	row2[0] = "2"
	long[0] = "3"
	text := strings.Join(head, ",") + "\n" + strings.Join(row, ",") + "\n" + strings.Join(row2, ",") + "\n" + strings.Join(long, ",") + "\n"
	path := filepath.Join(t.TempDir(), "evals.csv")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("line 4 has %d fields, want %d", len(head)+1, len(head))
	if _, err := ReadEvalsCSV(path, 0); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
}

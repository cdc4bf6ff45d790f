package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
)

// Round 119 A2 (serious): sample of a run trained on standardised data
// (sd 0.01) said every well-mixed chain was "stranded where the model's
// density is all but 0" (R-hat 1.003): the stranded check took the draws,
// still in the model's coordinates, for the data's. And A4: the scales
// note measured the draws in the data's units (×959) where the chains move
// on equal scales. Neither is said of such a run.
func TestStandardisedRunNoFalseNotes(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]float64, 2*2000)
	for i := range 2000 {
		data[2*i], data[2*i+1] = 0.01*rng.NormFloat64(), 10*rng.NormFloat64()
	}
	path := filepath.Join(dir, "d.npy")
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{2000, 2}, Data: data}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--data", path, "--algorithm", "ula", "--iterations", "30", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := runCLI("sample", "--model", run, "--sampler", "mala", "--chains", "8", "--steps", "40", "--out", filepath.Join(dir, "s.npy"))
	if code != 0 || strings.Contains(stderr, "stranded") || strings.Contains(stdout, "scales differ") {
		t.Errorf("exit %d, %s%s", code, stdout, stderr)
	}
}

// Round 119 B1-B3: compare --force in an --out with no record (an earlier
// version's) deleted a user's held-out-ll.pdf unsaid; a record listing
// summary.md, the lock or a user's file had them deleted; a record that
// was a folder failed the command after the figures were placed. Only
// compare's own figures, recorded, are removed; a bad record is set aside.
func TestCompareRecordDamageSafe(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	for _, c := range []struct {
		name   string
		damage func(out string) error
	}{
		{"no record", func(out string) error { return os.Remove(filepath.Join(out, compareRecord)) }},
		{"listing others", func(out string) error {
			return os.WriteFile(filepath.Join(out, compareRecord), []byte("summary.md\n.lock\nnotes.txt\nsub\n.\n../x\n"), 0o644)
		}},
		{"a folder", func(out string) error {
			if err := os.Remove(filepath.Join(out, compareRecord)); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(out, compareRecord), 0o755)
		}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		if _, stderr, code := runCLI("compare", run, "--out", out); code != 0 {
			t.Fatal(stderr)
		}
		mine := map[string]string{"held-out-ll.pdf": "mine", "notes.txt": "mine", "sub/x": "mine"}
		writeFiles(t, out, mine)
		if err := c.damage(out); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := runCLI("compare", run, "--out", out, "--force", "--plot-format", "svg"); code != 0 {
			t.Errorf("%s: exit %d, %s", c.name, code, stderr)
		}
		checkFiles(t, out, mine)
		if !exists(filepath.Join(out, "summary.md")) || !exists(filepath.Join(out, "held-out-ll.svg")) {
			t.Errorf("%s: the new set is not whole", c.name)
		}
	}
}

// Round 120 A1-A3: a record replaced by a folder left compare's earlier
// figures unsaid (only a missing record was noted), and diagnose noted
// none without a record; a run with --standardize none was said to be in
// "standardised coordinates". Each says what is so.
func TestUnrecordedFiguresNoted(t *testing.T) {
	dir := t.TempDir()
	run := finishedULARun(t, dir, "run", "1")
	out := filepath.Join(dir, "c")
	if _, stderr, code := runCLI("compare", run, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Remove(filepath.Join(out, compareRecord)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(out, compareRecord), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("compare", run, "--out", out, "--force", "--plot-format", "svg"); code != 0 || !strings.Contains(stderr, "also holds 4 files named like compare's that no compare recorded drawing there") {
		t.Errorf("compare, record a folder: exit %d, %s", code, stderr)
	}
	// Round 121 A1: a record of garbage was taken for one of no figures.
	garbled := filepath.Join(dir, "g")
	if _, stderr, code := runCLI("compare", run, "--out", garbled); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.WriteFile(filepath.Join(garbled, compareRecord), []byte("\xff\xfe\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("compare", run, "--out", garbled, "--force", "--plot-format", "svg"); code != 0 || !strings.Contains(stderr, "also holds 4 files named like compare's that no compare recorded drawing there") {
		t.Errorf("compare, record garbled: exit %d, %s", code, stderr)
	}
	draws := normalDraws(t, filepath.Join(dir, "d.npy"), 4, 100, 2)
	plots := filepath.Join(dir, "p")
	if _, stderr, code := runCLI("diagnose", draws, "--plots", plots); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Remove(filepath.Join(plots, figureRecord)); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", draws, "--plots", plots, "--force", "--plot-format", "svg"); code != 0 || !strings.Contains(stderr, "also holds 8 files named like diagnose's figures that no diagnose recorded drawing there") || !exists(filepath.Join(plots, "dim0-trace.png")) {
		t.Errorf("diagnose, no record: exit %d, %s", code, stderr)
	}
	data := normalDraws(t, filepath.Join(dir, "n.npy"), 200, 2)
	none := filepath.Join(dir, "none")
	if _, stderr, code := runCLI("train", "--data", data, "--standardize", "none", "--algorithm", "ula", "--iterations", "3", "--out", none, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	if stdout, stderr, code := runCLI("sample", "--model", none, "--sampler", "ula", "--chains", "4", "--steps", "20", "--out", filepath.Join(dir, "u.npy")); code != 0 || !strings.Contains(stdout, "ULA's draws are biased") || strings.Contains(stdout, "standardised coordinates") {
		t.Errorf("ula, --standardize none: exit %d, %s%s", code, stdout, stderr)
	}
}

// Round 120 A4: a flow of other units than the model's chains was said to
// make the draws "mix slowly", stated as a fact, where they mixed as well
// as with the model's own flow (global acceptance 0.95, R-hat 1.001). It
// is said as a risk to check.
func TestFlowUnitsNoteIsARisk(t *testing.T) {
	model := &data.Scaling{Shift: []float64{0, 0}, Scale: []float64{1, 1000}}
	flow := &data.Scaling{Shift: []float64{0, 0}, Scale: []float64{1, 1}}
	got := flowUnitsNote("f", model, flow)
	if !strings.Contains(got, "may mix slowly (check the global acceptance and R-hat below)") || strings.Contains(got, "but mix slowly") {
		t.Errorf("%q", got)
	}
}

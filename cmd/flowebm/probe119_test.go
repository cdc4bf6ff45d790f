package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

package main

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 77 B1, B5: train --resume RUN --data OTHER.npz --key K advised a
// new run without --key (which read the first member), and for a run
// with mode centres did not say that its data.modes are the old data's.
func TestOtherDataAdviceKeepsKeyAndNamesModes(t *testing.T) {
	dir := t.TempDir()
	var rows strings.Builder
	for i := range 200 {
		fmt.Fprintf(&rows, "%.4f,%.4f\n", math.Sin(float64(i)), math.Cos(float64(3*i)))
	}
	a := writeFile(t, dir, "a.csv", rows.String())
	modes := writeFile(t, dir, "modes.csv", "-0.5,0.5\n0.5,-0.5\n")
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	if code := run([]string{"train", "--data", a, "--modes", modes, "--iterations", "2", "--quiet", "--out", runDir}, &out, &errb); code != 0 {
		t.Fatalf("train: %s", errb.String())
	}
	other := filepath.Join(dir, "other.npz")
	arr := &npy.Array{Shape: []int{200, 3}, Data: make([]float64, 600)}
	for i := range arr.Data {
		arr.Data[i] = math.Sin(float64(i * i))
	}
	if err := npz.WriteFile(other, map[string]*npy.Array{"first": arr, "second": arr}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"train", "--resume", runDir, "--data", other, "--key", "second"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "--data "+other+" --key second --out NEW") ||
		!strings.Contains(errb.String(), "its data.modes, "+modes+", are the centres of the run's data") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// Round 77 B3: diagnose refusing an .npz's first member (read by default)
// did not say that the file holds others, or that --key reads them.
func TestDiagnoseRefusedMemberNamesOthers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "two.npz")
	draws := &npy.Array{Shape: []int{4, 50}, Data: wave(200)}
	if err := npz.WriteFile(path, map[string]*npy.Array{"a": {Shape: []int{3}, Data: []float64{1, 2, 3}}, "b": draws}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	refused(t, `holds 2 arrays ("a", "b"): read "a", the first (--key names another)`, path)
	if _, errOut, status := runCLI("diagnose", "--key", "b", path); status != 0 {
		t.Errorf("--key b: %s", errOut)
	}
}

// Round 77 B4: the note of characters the figures' font lacks quoted
// names already quoted for their invisible characters a second time.
func TestBlankGlyphsNoteQuotesOnce(t *testing.T) {
	note := blankGlyphsNote([]string{shownName("日\u200b本"), shownName("能量")}, 0)
	if !strings.Contains(note, `(in "日\u200b本", "能量")`) {
		t.Errorf("%s", note)
	}
}

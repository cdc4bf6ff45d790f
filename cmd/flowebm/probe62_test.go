package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Probe 62 B2: reproduce --plot-format svg over runs drawn in PNG redrew
// the figures of their evaluations but not their densities (drawn from the
// model), and the report's "Densities" section was empty, with no note.
// They are drawn as plot draws them, and the report shows them.
func TestReproduceRedrawsDensityInFormat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rp")
	args := []string{"reproduce", "--experiments", "rings", "--algorithms", "ula", "--iterations", "10", "--jobs", "1", "--out", out}
	if so, se, code := runCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s %s", code, so, se)
	}
	density := filepath.Join(out, "runs", "rings-ula", "density")
	if !exists(density+".png") || exists(density+".svg") {
		t.Fatalf("the run's density: png %v, svg %v", exists(density+".png"), exists(density+".svg"))
	}
	for _, again := range [][]string{append(args, "--plot-format", "svg"), {"reproduce", "--report", out, "--plot-format", "pdf"}} {
		if so, se, code := runCLI(again...); code != 0 || strings.Contains(so+se, "warning") {
			t.Fatalf("%v: exit %d: %s %s", again, code, so, se)
		}
		ext := "." + again[len(again)-1]
		report, err := os.ReadFile(filepath.Join(out, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !exists(density+ext) || !strings.Contains(string(report), "(runs/rings-ula/density"+ext+")") {
			t.Errorf("%s: density drawn %v; report:\n%s", ext, exists(density+ext), report)
		}
	}
}

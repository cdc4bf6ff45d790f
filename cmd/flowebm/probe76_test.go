package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Round 75 B5 (left then): a header " h",h was refused as two columns
// both named "h", where the file holds " h": the message now says that
// spaces around a name are not part of it.
func TestDuplicateNamesBySpaces(t *testing.T) {
	dir := t.TempDir()
	refused(t, `spaced.csv: line 1: columns 3 and 4 are both named "h" (spaces around a name are not part of it)`,
		writeFile(t, dir, "spaced.csv", drawsCSV(`chain,draw," h",h`, plainRow)))
}

// Round 75 B4 (left then): names that differ in an invisible character
// ("x y" and "x\u00a0y") were quoted in the verdict only; the table and
// the figures' titles printed them alike.
func TestInvisibleCharactersQuotedEverywhere(t *testing.T) {
	dir := t.TempDir()
	out, errOut, status := runCLI("diagnose", writeFile(t, dir, "nbsp.csv", drawsCSV("chain,draw,x y,x\u00a0y", plainRow)))
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	if !strings.Contains(out, " \"x\\u00a0y\"  ") || !strings.Contains(out, " x y  ") {
		t.Errorf("table:\n%s", out)
	}
	plots := filepath.Join(dir, "plots")
	draws := writeFile(t, dir, "zwsp.csv", drawsCSV("chain,draw,a,x\u200by", plainRow))
	if _, errOut, status := runCLI("diagnose", "--plots", plots, "--plot-format", "svg", draws); status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	svgs, err := filepath.Glob(filepath.Join(plots, "*trace.svg"))
	if err != nil || len(svgs) != 2 {
		t.Fatalf("trace plots %v (%v)", svgs, err)
	}
	quoted := 0
	for _, f := range svgs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `&#34;x\u200by&#34;`) || strings.Contains(string(b), `"x\u200by"`) {
			quoted++
		}
	}
	if quoted != 1 {
		t.Errorf("%d of the trace plots title x\u200by quoted, want 1", quoted)
	}
}

// Round 75 B4 (left then): compare's curves and table rows of folders
// whose names differ in a character that does not show read alike.
func TestCurveNamesQuoteInvisible(t *testing.T) {
	got := curveNames([]string{"runs/x y", "runs/x\u00a0y", "runs/a\nb"})
	want := []string{"x y", `"x\u00a0y"`, `"a\nb"`}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("curve %d named %q, want %q", i, got[i], want[i])
		}
	}
}

// Round 73 (left then): names in a script the figures' font lacks (CJK)
// were drawn blank in PNG and PDF, unsaid; diagnose and compare now note
// which characters, and that SVG keeps them.
func TestBlankGlyphsNoted(t *testing.T) {
	dir := t.TempDir()
	draws := writeFile(t, dir, "cjk.csv", drawsCSV("chain,draw,能量,mu", plainRow))
	const note = `note: the figures' font has no glyph for 能量 (in "能量"): PNG draws them blank; --plot-format svg keeps them`
	for _, format := range []string{"png", "svg"} {
		out, errOut, status := runCLI("diagnose", "--plots", filepath.Join(dir, format), "--plot-format", format, draws)
		if status != 0 || strings.Contains(out, "note:") {
			t.Fatalf("%s: status %d, out %s, err %s", format, status, out, errOut)
		}
		if got := strings.Contains(errOut, note); got != (format == "png") {
			t.Errorf("%s: stderr %q", format, errOut)
		}
	}

	a := trainedRun(t)
	cjk := filepath.Join(filepath.Dir(a), "能量")
	if err := os.Rename(a, cjk); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"pdf", "svg"} {
		var stdout, stderr strings.Builder
		if code := run([]string{"compare", cjk, "--out", filepath.Join(dir, "cmp-"+format), "--plot-format", format}, &stdout, &stderr); code != 0 {
			t.Fatalf("compare: %s", stderr.String())
		}
		want := `note: the figures' font has no glyph for 能量 (in "能量"): PDF draws them blank`
		if got := strings.Contains(stderr.String(), want); got != (format == "pdf") {
			t.Errorf("compare %s: stderr %q", format, stderr.String())
		}
	}
}

// Round 73 (left then): the table aligned CJK names by their count of
// characters, each taking two columns in a terminal; every line of the
// table now takes as many columns.
func TestTableAlignsWideNames(t *testing.T) {
	dir := t.TempDir()
	out, errOut, status := runCLI("diagnose", writeFile(t, dir, "cjk.csv", drawsCSV("chain,draw,能量,mu", plainRow)))
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	lines := strings.Split(out, "\n")[2:5] // the header and the two rows
	for _, l := range lines {
		if shownWidth(l) != shownWidth(lines[0]) {
			t.Errorf("table lines of unequal widths:\n%s", strings.Join(lines, "\n"))
			break
		}
	}
	if !strings.HasPrefix(lines[1], "  能量 ") || !strings.HasPrefix(lines[2], "    mu ") {
		t.Errorf("names not right-aligned in two columns each:\n%s", strings.Join(lines, "\n"))
	}
}

package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
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

// Round 76 B1: train --resume RUN --data OTHER advised leaving
// data.sha256 out, a configuration file's advice, which the run's
// checkpoint then refused; it now names the run's data and gives a
// command for a new run on the other data, which runs.
func TestResumeOnOtherDataAdvice(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	var rows [2]strings.Builder
	for i := range 200 {
		fmt.Fprintf(&rows[0], "%.4f,%.4f\n", math.Sin(float64(i)), math.Cos(float64(3*i)))
		fmt.Fprintf(&rows[1], "%.4f,%.4f\n", math.Cos(float64(i)), math.Sin(float64(5*i)))
	}
	writeFile(t, dir, "a.csv", rows[0].String())
	writeFile(t, dir, "b.csv", rows[1].String())
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	if code := run([]string{"train", "--data", a, "--iterations", "2", "--quiet", "--out", runDir}, &out, &errb); code != 0 {
		t.Fatalf("train: %s", errb.String())
	}
	errb.Reset()
	if code := run([]string{"train", "--resume", runDir, "--data", b}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "holds other data than the run in "+runDir+" was trained on ("+a) ||
		strings.Contains(errb.String(), "leave data.sha256 out") {
		t.Fatalf("resume on other data: exit %d, %s", code, errb.String())
	}
	advice := errb.String()[strings.Index(errb.String(), "flowebm train --config "):]
	args := strings.Fields(strings.TrimSpace(strings.Replace(advice, "NEW", filepath.Join(dir, "new"), 1)))[1:]
	errb.Reset()
	if code := run(append(args, "--iterations", "2", "--quiet"), &out, &errb); code != 0 {
		t.Errorf("the advised %v: %s", args, errb.String())
	}
}

// Round 76 B4, B5: ULA chains that run off while staying finite were
// written at exit 0 without a word, beside "acceptance: local 1.00"; a
// note now says they ran off, and the local acceptance reads n/a (as
// train says). Chains at a small step get no note.
func TestULARunOffNoted(t *testing.T) {
	model := trainedRun(t)
	dir := t.TempDir()
	for _, c := range []struct {
		step string
		note bool
	}{{"10", true}, {"0.01", false}} {
		var out, errb bytes.Buffer
		args := []string{"sample", "--model", model, "--sampler", "ula", "--step", c.step, "--chains", "4", "--steps", "10", "--warmup", "0", "--out", filepath.Join(dir, c.step+".npy")}
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("step %s: %s", c.step, errb.String())
		}
		if got := strings.Contains(errb.String(), "the chains ran off (ULA never rejects a step)"); got != c.note {
			t.Errorf("step %s: stderr %q", c.step, errb.String())
		}
		if !strings.Contains(out.String(), "acceptance: local n/a (unadjusted Langevin: no accept step)") {
			t.Errorf("step %s: %s", c.step, out.String())
		}
		// Round 131 A3: R-hat's advice was "sample longer" for chains
		// that run off further the longer they go.
		if c.note && (strings.Contains(out.String(), "sample longer") || !strings.Contains(out.String(), "the chains ran off (said below): lower --step (10)")) {
			t.Errorf("step %s: R-hat's advice: %s", c.step, out.String())
		}
	}
}

// Round 76 B2: diagnose of an .npz of several variables diagnosed the
// first alone, unsaid; a note names the others, beside --json's output.
func TestDiagnoseNpzMembersNoted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "post.npz")
	arr := &npy.Array{Shape: []int{4, 50}, Data: wave(200)}
	if err := npz.WriteFile(path, map[string]*npy.Array{"alpha": arr, "beta": arr}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"diagnose", path}, {"diagnose", "--json", path}} {
		out, errOut, status := runCLI(args...)
		if status != 0 || !strings.Contains(errOut, `note: `+path+` holds 2 arrays ("alpha", "beta"): read "alpha", the first (--key names another); the others are not diagnosed`) || strings.Contains(out, "note:") {
			t.Errorf("%v: status %d, out %q, err %q", args, status, out, errOut)
		}
	}
	if _, errOut, _ := runCLI("diagnose", "--key", "beta", path); strings.Contains(errOut, "note:") {
		t.Errorf("--key beta: %s", errOut)
	}
}

// wave is n values of a sine, rounded to 4 decimals.
func wave(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Round(1e4*math.Sin(float64(7*i))) / 1e4
	}
	return x
}

// waveCSV is a CSV of n rows of two columns of wave's values.
func waveCSV(n int) string {
	w := wave(2 * n)
	var rows strings.Builder
	for i := range n {
		fmt.Fprintf(&rows, "%.4f,%.4f\n", w[2*i], w[2*i+1])
	}
	return rows.String()
}

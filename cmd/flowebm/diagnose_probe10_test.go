package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
)

// drawsCSV is a draws_df-like CSV: header, then 4 chains × 20 draws of
// two parameters, row(chain, draw) giving each line (chain, draw from 1).
func drawsCSV(header string, row func(chain, draw int) string) string {
	var b strings.Builder
	b.WriteString(header + "\n")
	for c := 1; c <= 4; c++ {
		for d := 1; d <= 20; d++ {
			b.WriteString(row(c, d) + "\n")
		}
	}
	return b.String()
}

// plainRow is chain, draw and two parameters.
func plainRow(c, d int) string {
	return fmt.Sprintf("%d,%d,%.6f,%.6f", c, d, math.Sin(float64(7*c+13*d)), math.Cos(float64(3*c*d+d)))
}

// refused runs diagnose with args and checks it fails with one line
// holding want.
func refused(t *testing.T, want string, args ...string) {
	t.Helper()
	out, errOut, status := runCLI(append([]string{"diagnose"}, args...)...)
	if status != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
		t.Errorf("%v: status %d, out %q, err %q; want one line containing %q", args, status, out, errOut, want)
	}
}

// zipMember adds a stored member to z.
func zipMember(t *testing.T, z *zip.Writer, name string, b []byte) {
	t.Helper()
	w, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
	if err == nil {
		_, err = w.Write(b)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// An .npz's member --key is checked from its own header and decoded
// alone: a huge member is refused before any allocation, and a small one
// is read although the other member is broken; the table names it.
func TestDiagnoseNpzReadsOnlyTheKeyMember(t *testing.T) {
	dir := t.TempDir()
	var a strings.Builder
	x := &npy.Array{Shape: []int{4, 50}, Data: make([]float64, 200)}
	for i := range x.Data {
		x.Data[i] = math.Sin(float64(i * i))
	}
	if err := npy.Write(&a, x, npy.Float64); err != nil {
		t.Fatal(err)
	}
	h := "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 100000000, 10), }"
	h += strings.Repeat(" ", 118-len(h)) + "\n"
	huge := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), 0)
	path := filepath.Join(dir, "two.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	zipMember(t, z, "a.npy", []byte(a.String()))
	zipMember(t, z, "b.npy", append(huge, h...))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	refused(t, `two.npz member "b": draws of shape [4 100000000 10] need about 512 GB`, path, "--key", "b")
	out, errOut, status := runCLI("diagnose", path, "--key", "a")
	if status != 0 || !strings.HasPrefix(out, path+` member "a": 4 chains × 50 draws × 1 dim`) {
		t.Errorf("--key a: status %d, out %q, err %q", status, out, errOut)
	}
}

// The CSV reader skips a UTF-8 byte order mark, reads quoted names with
// commas, and refuses numbers no CSV writer writes and syntax errors,
// naming line and column.
func TestDiagnoseCSVQuotingAndBOM(t *testing.T) {
	dir := t.TempDir()
	text := drawsCSV(`chain,draw,"theta[1,2]",tau`, plainRow)
	bom := writeFile(t, dir, "bom.csv", "\ufeff# written by CmdStan\n"+text)
	js, errOut, status := runCLI("diagnose", "--json", bom)
	var rows []map[string]any
	if status != 0 || json.Unmarshal([]byte(js), &rows) != nil || len(rows) != 2 {
		t.Fatalf("status %d, %q, %s", status, js, errOut)
	}
	if rows[0]["name"] != "theta[1,2]" || rows[1]["name"] != "tau" {
		t.Errorf("names %v, %v; want theta[1,2], tau", rows[0]["name"], rows[1]["name"])
	}
	for _, c := range []struct{ bad, want string }{
		{"1_000", `line 4, column 3 (theta[1,2]): "1_000" is not a decimal number`},
		{"0x1p-2", `line 4, column 3 (theta[1,2]): "0x1p-2" is not a decimal number`},
		{`1"2`, `line 4, column 6: bare " in non-quoted-field`},
	} {
		p := writeFile(t, dir, "bad.csv", drawsCSV(`chain,draw,"theta[1,2]",tau`, func(ch, d int) string {
			if ch == 1 && d == 3 {
				return "1,3," + c.bad + ",0.5"
			}
			return plainRow(ch, d)
		}))
		refused(t, "bad.csv: "+c.want, p)
	}
}

// A chain column's values are integers: 1.5 (or NaN, never equal to
// itself) would split the rows into chains of their own.
func TestDiagnoseRefusesNonIntegerChains(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ id, want string }{
		{"1.5", "line 22, column 1 (chain): chain 1.5: want an integer chain number"},
		{"NaN", "line 22, column 1 (chain): chain NaN: want an integer chain number, written in digits"},
	} {
		p := writeFile(t, dir, "ids.csv", drawsCSV("chain,draw,mu,tau", func(ch, d int) string {
			if ch == 2 && d == 1 {
				return c.id + plainRow(ch, d)[1:]
			}
			return plainRow(ch, d)
		}))
		refused(t, "ids.csv: "+c.want, p)
	}
}

// A NaN or infinite draw in a CSV is refused as it is read, naming the
// file, line and column; the sampler's dropped columns may hold one.
func TestDiagnoseRefusesNonFiniteCSVDraws(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"NaN", "inf", "-Infinity", "1e400"} {
		p := writeFile(t, dir, "nan.csv", drawsCSV("chain,draw,mu,tau", func(ch, d int) string {
			if ch == 3 && d == 5 {
				return fmt.Sprintf("3,5,0.5,%s", v)
			}
			return plainRow(ch, d)
		}))
		refused(t, fmt.Sprintf("nan.csv: line 46, column 4 (tau): %q is not finite", v), p)
	}
	lp := func(ch, d int) string { return "nan," + plainRow(ch, d) }
	p := writeFile(t, dir, "lp.csv", drawsCSV("lp__,chain,draw,mu,tau", lp))
	if _, errOut, status := runCLI("diagnose", p); status != 0 {
		t.Errorf("NaN in lp__: %s", errOut)
	}
}

// Rows out of order within a chain (by its draw or iteration column)
// would give another verdict: they are refused.
func TestDiagnoseRefusesRowsOutOfDrawOrder(t *testing.T) {
	dir := t.TempDir()
	for _, col := range []string{"draw", ".iteration"} {
		text := drawsCSV("chain,"+col+",mu,tau", func(ch, d int) string {
			if ch == 2 && (d == 3 || d == 4) {
				return plainRow(ch, 7-d) // draws 4 then 3
			}
			return plainRow(ch, d)
		})
		p := writeFile(t, dir, "shuffled.csv", text)
		refused(t, fmt.Sprintf("shuffled.csv: line 25, column 2 (%s): 3 follows 4 in the same chain", col), p)
	}
	stan := "lp__,iter,mu\n1,1,0.5\n1,3,0.1\n1,2,0.7\n1,4,0.2\n"
	g := writeFile(t, dir, "g.csv", "lp__,iter,mu\n1,1,0.5\n1,2,0.1\n1,3,0.7\n1,4,0.2\n")
	refused(t, "s.csv: line 4, column 2 (iter): 2 follows 3", g, writeFile(t, dir, "s.csv", stan))
}

// Plot files never collide: duplicate and empty column names, a
// dimension given twice and names that sanitise alike are refused, and a
// name starting with a dot makes no hidden file.
func TestDiagnosePlotNamesNeverCollide(t *testing.T) {
	dir := t.TempDir()
	row := func(ch, d int) string { return plainRow(ch, d) + fmt.Sprintf(",%.4f", math.Sin(float64(ch*d))) }
	refused(t, `dup.csv: line 1: columns 3 and 5 are both named "mu"`, writeFile(t, dir, "dup.csv", drawsCSV("chain,draw,mu,tau,mu", row)))
	refused(t, "empty.csv: line 1, column 5: empty column name", writeFile(t, dir, "empty.csv", drawsCSV("chain,draw,mu,tau,", row)))
	names := writeFile(t, dir, "names.csv", drawsCSV(`chain,draw,a b,a_b,.x`, row))
	plots := filepath.Join(dir, "plots")
	refused(t, `--plot-dims 0,0: "0" names dimension a b again`, names, "--plots", plots, "--plot-dims", "0,0")
	refused(t, `--plot-dims a_b,1: "1" names dimension a_b again`, names, "--plots", plots, "--plot-dims", "a_b,1")
	refused(t, `dimensions "a b" and "a_b" would both be drawn to `+filepath.Join(plots, "a_b")+"-*.svg", names, "--plots", plots, "--plot-format", "svg")
	out, errOut, status := runCLI("diagnose", names, "--plots", plots, "--plot-dims", "a b,.x", "--plot-format", "svg")
	if status != 0 || !strings.Contains(out, "8 plots written") {
		t.Fatalf("status %d: %s %s", status, out, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(plots, "*"))
	hidden, _ := filepath.Glob(filepath.Join(plots, ".*"))
	isLock := func(p string) bool { return filepath.Base(p) == ".lock" || filepath.Base(p) == figureRecord } // the folder's lock, as compare's, and the list of diagnose's figures
	files, hidden = slices.DeleteFunc(files, isLock), slices.DeleteFunc(hidden, isLock)
	if len(files) != 8 || len(hidden) != 0 || !exists(filepath.Join(plots, "_.x-trace.svg")) {
		t.Errorf("files %v, hidden %v; want 8, _.x-trace.svg among them", files, hidden)
	}
}

// The same file given twice is not two chains.
func TestDiagnoseRefusesTheSameFileTwice(t *testing.T) {
	dir := t.TempDir()
	g := writeFile(t, dir, "g.csv", "lp__,mu\n1,0.5\n1,0.1\n1,0.7\n1,0.2\n")
	refused(t, "are the same file", g, filepath.Join(dir, ".", "g.csv"))
}

// --quantiles applies to --json, and a quantile is given once by value.
func TestDiagnoseQuantilesFlag(t *testing.T) {
	npyPath := filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy")
	refused(t, "--quantiles 0.5 applies to --json", npyPath, "--quantiles", "0.5")
	refused(t, "--quantiles 0.05,5e-2: 5e-2 is 0.05 again", npyPath, "--json", "--quantiles", "0.05,5e-2")
}

// The folder of --plots is made before any work, the flag named when it
// cannot be, and removed again when the command fails.
func TestDiagnosePlotsFolderUpFront(t *testing.T) {
	dir := t.TempDir()
	npyPath := filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy")
	file := writeFile(t, dir, "f.csv", "x\n")
	refused(t, "--plots "+filepath.Join(file, "sub")+": cannot create the folder", npyPath, "--plots", filepath.Join(file, "sub"))
	made := filepath.Join(dir, "new", "sub")
	refused(t, "bad_rank1.npy", filepath.Join("testdata", "diagnose", "bad_rank1.npy"), "--plots", made)
	if exists(filepath.Join(dir, "new")) {
		t.Errorf("%s left behind by a failed command", made)
	}
}

// A line longer than 64 MB (bufio.Scanner's limit before) is read.
func TestDiagnoseReadsLongCSVLines(t *testing.T) {
	if sysmem.Limit(8<<30) < 5e9 {
		t.Skip("the machine's memory is too small for a 65 MB CSV")
	}
	dir := t.TempDir()
	text := drawsCSV("chain,draw,mu,tau", plainRow)
	p := writeFile(t, dir, "long.csv", "#"+strings.Repeat("x", 65<<20)+"\n"+text)
	if _, errOut, status := runCLI("diagnose", p); status != 0 {
		t.Errorf("status %d: %s", status, errOut)
	}
}

// Probe 29: chain numbers above 2^53 that differ (9007199254740992 and
// …993) were read as one chain, silently merged; draw numbers there were
// said to be out of order. Both are refused, naming the cell.
func TestDiagnoseRefusesInexactChainAndDrawNumbers(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("chain,draw,mu\n")
	for i, c := range []string{"9007199254740992", "9007199254740993"} {
		for d := 1; d <= 20; d++ {
			fmt.Fprintf(&b, "%s,%d,%d.5\n", c, d, i+d%3)
		}
	}
	refused(t, "line 2, column 1 (chain): chain 9007199254740992: want a chain number of magnitude below 2^53 = 9007199254740992", writeFile(t, dir, "ch.csv", b.String()))
	b.Reset()
	b.WriteString("chain,draw,mu\n")
	for c := 1; c <= 2; c++ {
		for d := 0; d < 20; d++ {
			fmt.Fprintf(&b, "%d,%d,%d.5\n", c, 9007199254740990+d, c+d%3)
		}
	}
	refused(t, "line 4, column 2 (draw): draw 9007199254740992: want a number of magnitude below 2^53", writeFile(t, dir, "dr.csv", b.String()))
	// Probe 30: below 2^53, numbers that are not integers as written but
	// round to one were still merged.
	b.Reset()
	b.WriteString("chain,draw,mu\n")
	for i, c := range []string{"1", "1.0000000000000001", "2.0"} {
		for d := 1; d <= 20; d++ {
			fmt.Fprintf(&b, "%s,%d,%d.5\n", c, d, i+d%3)
		}
	}
	refused(t, "line 22, column 1 (chain): chain 1.0000000000000001: want an integer chain number, written in digits", writeFile(t, dir, "c1.csv", b.String()))
	refused(t, "line 3, column 2 (draw): draw 4503599627370496.5: want an integer, written in digits", writeFile(t, dir, "d5.csv", "chain,draw,mu\n1,4503599627370496,0.5\n1,4503599627370496.5,0.7\n"))
	// Probe 31: quoted as written, not rounded (…993 was "…992").
	refused(t, "line 2, column 1 (chain): chain 9007199254740993: want a chain number", writeFile(t, dir, "c3.csv", "chain,draw,mu\n9007199254740993,1,0.5\n"))
	refused(t, "line 2, column 2 (draw): draw 9007199254740993: want a number", writeFile(t, dir, "d3.csv", "chain,draw,mu\n1,9007199254740993,0.5\n"))
	// Probe 32: past float64's range, "not finite".
	refused(t, "line 2, column 1 (chain): chain 1000000000000000000000000000000000000000…: want a chain number of magnitude below 2^53", writeFile(t, dir, "c400.csv", "chain,draw,mu\n1"+strings.Repeat("0", 400)+",1,0.5\n"))
}

// Probe 31: an input named like one of the figures was replaced by it
// with --force (and the refusal without --force advised --force).
func TestDiagnosePlotsNeverReplaceAnInput(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"))
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, dir, "dim0-trace.png", string(b))
	for _, force := range [][]string{nil, {"--force"}} {
		refused(t, "--plots "+dir+": the figure "+in+" is also an input ("+in+"): give another --plots folder", append([]string{in, "--plots", dir}, force...)...)
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(after, b) {
		t.Error("the input was replaced")
	}
}

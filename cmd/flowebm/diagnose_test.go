package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func runCLI(args ...string) (stdout, stderr string, status int) {
	var o, e bytes.Buffer
	status = run(args, &o, &e)
	return o.String(), e.String(), status
}

func TestDiagnoseTableAndJSON(t *testing.T) {
	for _, file := range []string{"iid_4x500_f4", "mixed_4x500x4_f8"} {
		path := filepath.Join("testdata", "diagnose", file+".npy")
		out, errOut, status := runCLI("diagnose", path)
		if status != 0 {
			t.Fatalf("%s: status %d, stderr %s", file, status, errOut)
		}
		golden(t, filepath.Join("diagnose", file+".txt"), []byte(out))
		js, errOut, status := runCLI("diagnose", "--json", path)
		if status != 0 {
			t.Fatalf("%s --json: status %d, stderr %s", file, status, errOut)
		}
		golden(t, filepath.Join("diagnose", file+".json"), []byte(js))

		var rows []map[string]any
		if err := json.Unmarshal([]byte(js), &rows); err != nil {
			t.Fatalf("%s: invalid JSON: %v", file, err)
		}
		for i, r := range rows {
			keys := []string{"dim", "rhat", "rhat_classic", "ess_bulk", "ess_tail", "mean", "sd",
				"ess_mean", "ess_sd", "ess_median", "ess_raw", "mcse_mean", "mcse_sd", "mcse_median"}
			if len(r) != len(keys) {
				t.Errorf("%s row %d has keys %v, want exactly %v", file, i, r, keys)
			}
			for _, k := range keys {
				if _, ok := r[k]; !ok {
					t.Errorf("%s row %d lacks %q", file, i, k)
				}
			}
			if r["dim"] != float64(i) {
				t.Errorf("%s row %d has dim %v", file, i, r["dim"])
			}
		}
	}
}

// The mixed file holds four dimensions built to differ (gen.py): iid draws,
// an AR(1) chain with ρ = 0.95, chains stuck 6σ apart in two modes, and a
// constant. The bounds are those of the diagnostics package's own tests.
func TestDiagnoseSeparatesMixingFromStuckChains(t *testing.T) {
	js, _, status := runCLI("diagnose", "--json", filepath.Join("testdata", "diagnose", "mixed_4x500x4_f8.npy"))
	if status != 0 {
		t.Fatal(status)
	}
	var rows []struct {
		RHat, RHatClassic, ESSBulk *float64
	}
	dec := json.NewDecoder(strings.NewReader(strings.NewReplacer(`"rhat"`, `"RHat"`, `"rhat_classic"`, `"RHatClassic"`, `"ess_bulk"`, `"ESSBulk"`).Replace(js)))
	if err := dec.Decode(&rows); err != nil {
		t.Fatal(err)
	}
	if r := *rows[0].RHat; math.Abs(r-1) > 0.01 {
		t.Errorf("iid dimension: rhat %v, want 1 ± 0.01", r)
	}
	// AR(1) ρ = 0.95: τ = (1 + ρ)/(1 − ρ) = 39, so about 2000/39 ≈ 51 effective draws.
	if e := *rows[1].ESSBulk; e < 20 || e > 150 {
		t.Errorf("AR(1) dimension: ess_bulk %v, want ≈ 51 (20..150)", e)
	}
	if r := *rows[2].RHat; r < 1.5 {
		t.Errorf("stuck dimension: rhat %v, want ≈ 1.66", r)
	}
	if r := *rows[2].RHatClassic; r < 2 {
		t.Errorf("stuck dimension: rhat_classic %v, want > 2", r)
	}
	if rows[3].RHat != nil || rows[3].ESSBulk != nil {
		t.Errorf("constant dimension: rhat %v ess_bulk %v, want null", rows[3].RHat, rows[3].ESSBulk)
	}
}

// One chain (round 130 A5: refused, "need at least 2") gets its split
// R-hat, its two halves compared as posterior and ArviZ compare them, and
// ESS; rhat_classic, between whole chains, is undefined, and the output
// says what one chain cannot show.
func TestDiagnoseOneChain(t *testing.T) {
	path := filepath.Join("testdata", "diagnose", "one_chain.npy")
	out, errOut, status := runCLI("diagnose", path)
	if status != 0 || !strings.Contains(out, "one chain: rhat compares its two halves only") {
		t.Fatalf("status %d, stdout %q, stderr %q", status, out, errOut)
	}
	js, _, status := runCLI("diagnose", "--json", path)
	var rows []struct {
		RHat        *float64 `json:"rhat"`
		RHatClassic *float64 `json:"rhat_classic"`
		ESSBulk     *float64 `json:"ess_bulk"`
	}
	if err := json.Unmarshal([]byte(js), &rows); status != 0 || err != nil || len(rows) != 1 {
		t.Fatalf("status %d, %v: %s", status, err, js)
	}
	// 100 iid N(0, 1) draws (gen.py): halves agree, ESS near 100.
	if r := rows[0]; r.RHat == nil || math.Abs(*r.RHat-1) > 0.05 || r.RHatClassic != nil || r.ESSBulk == nil || *r.ESSBulk < 50 {
		t.Errorf("rhat %v, rhat_classic %v, ess_bulk %v: want ≈ 1, null, ≈ 100", r.RHat, r.RHatClassic, r.ESSBulk)
	}
	// Round 131 A1: CmdStan's output file of a one-chain run, the same
	// draws, was refused ("one CSV file without a chain column"); it is
	// that chain, its R-hat the .npy's.
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := "# stan_version_major = 2\nlp__,accept_stat__,theta\n"
	for _, v := range a.Data {
		text += "-1,0.9," + strconv.FormatFloat(v, 'g', -1, 64) + "\n"
	}
	csvPath := filepath.Join(t.TempDir(), "output_1.csv")
	if err := os.WriteFile(csvPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, status = runCLI("diagnose", csvPath)
	if status != 0 || !strings.HasPrefix(out, csvPath+": 1 chain × 100 draws × 1 dim") || !strings.Contains(out, fmt.Sprintf("%.4f", *rows[0].RHat)) || !strings.Contains(out, "a CSV file without a chain column is one chain") {
		t.Errorf("CmdStan CSV of one chain: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	// Round 132 A3: one chain of 3 draws was told of --nested, which
	// refuses one chain, and its shape was "1 file".
	short := filepath.Join(t.TempDir(), "three.csv")
	if err := os.WriteFile(short, []byte("a,b\n1,2\n2,3\n3,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, status := runCLI("diagnose", short); status == 0 || !strings.Contains(errOut, short+": 3 draws per chain, need at least 4") || strings.Contains(errOut, "--nested") {
		t.Errorf("one chain of 3 draws: status %d, %s", status, errOut)
	}
}

func TestDiagnoseRejectsBadFiles(t *testing.T) {
	cases := map[string]string{
		"bad_rank1.npy":       "shape (10,) has rank 1, want (chains, draws) or (chains, draws, dims)",
		"bad_rank4.npy":       "shape (2, 4, 1, 1) has rank 4",
		"bad_three_draws.npy": "3 draws per chain, need at least 4",
		"bad_nan.npy":         "non-finite value NaN at chain 2, draw 7, dim 1 (numbered from 0, as the array's axes)",
		"bad_bool.npy":        `dtype "|b1", want float32 ('<f4'), float64 ('<f8') or integers: diagnose reads draws of parameters, not bool arrays`,
		"bad_f16.npy":         "float16 is not supported",
		// Probe 62 B4: the reader's list of types, which diagnose then refused.
		"bad_complex.npy":    `dtype "<c16", want float32 ('<f4') or float64 ('<f8'): diagnose reads draws of real parameters`,
		"bad_not_npy.npy":    "not a .npy file",
		"does_not_exist.npy": "no such file",
		"bad_trailing.npy":   "want the file to end there",
	}
	for file, msg := range cases {
		path := filepath.Join("testdata", "diagnose", file)
		out, errOut, status := runCLI("diagnose", path)
		if status != 2 {
			t.Errorf("%s: exit status %d, want 2", file, status)
		}
		if out != "" {
			t.Errorf("%s: printed %q to stdout", file, out)
		}
		if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, path) || !strings.Contains(errOut, msg) {
			t.Errorf("%s: stderr %q, want one line naming the file and %q", file, errOut, msg)
		}
	}
}

// FuzzDiagnose feeds arbitrary bytes through the .npy reader and the
// diagnostics, as "flowebm diagnose" does: any input must give output or an
// error, never a panic. Seeds: the files under testdata/diagnose and the
// committed corpus under testdata/fuzz/FuzzDiagnose.
func FuzzDiagnose(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "diagnose", "*.npy"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, asJSON bool) {
		var out bytes.Buffer
		err := diagnose(bytes.NewReader(b), "fuzz.npy", &out, asJSON)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.npy: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line naming the file", err)
			}
			return
		}
		if asJSON && !json.Valid(out.Bytes()) {
			t.Fatalf("invalid JSON output %q", out.String())
		}
	})
}

// diagnose refuses a folder and, from its header alone, a chains file
// whose diagnostics would not fit in memory (a 64 MB file peaked at 1 GB).
func TestDiagnoseRefusesFoldersAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, status := runCLI("diagnose", dir); status != 2 || !strings.Contains(stderr, "is a folder") {
		t.Errorf("folder: status %d, %q", status, stderr)
	}
	h := "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 100000000, 10), }"
	h += strings.Repeat(" ", 118-len(h)) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), 0)
	path := filepath.Join(dir, "huge.npy")
	os.WriteFile(path, append(b, h...), 0o644)
	if _, stderr, status := runCLI("diagnose", path); status != 2 || !strings.Contains(stderr, "need about 512 GB to diagnose") {
		t.Errorf("huge: status %d, %q", status, stderr)
	}
}

// diagnose reads CmdStan's output files (one per chain, comments and the
// sampler's columns skipped) and posterior's draws_df CSV (a .chain
// column) as the same draws in a .npy (gen_csv.py writes all three): the
// same numbers, with the parameters' names; --quantiles and --nested add
// their keys (golden file).
func TestDiagnoseReadsCSV(t *testing.T) {
	dir := filepath.Join("testdata", "diagnose")
	stan, _ := filepath.Glob(filepath.Join(dir, "cmdstan", "output_*.csv"))
	want, _, status := runCLI("diagnose", "--json", filepath.Join(dir, "csv_same.npy"))
	if status != 0 || len(stan) != 4 {
		t.Fatalf("status %d, %d CmdStan files", status, len(stan))
	}
	var ref []map[string]any
	if err := json.Unmarshal([]byte(want), &ref); err != nil {
		t.Fatal(err)
	}
	names := []string{"mu", "tau", "theta.1", "theta.2"}
	for _, args := range [][]string{stan, {filepath.Join(dir, "draws_df.csv")}} {
		js, errOut, status := runCLI(append([]string{"diagnose", "--json"}, args...)...)
		if status != 0 {
			t.Fatalf("%v: status %d: %s", args, status, errOut)
		}
		var got []map[string]any
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			if r["name"] != names[i] {
				t.Errorf("%v dim %d: name %v, want %s", args, i, r["name"], names[i])
			}
			delete(r, "name")
			if fmt.Sprint(r) != fmt.Sprint(ref[i]) {
				t.Errorf("%v dim %d: %v, the .npy gives %v", args, i, r, ref[i])
			}
		}
	}
	js, errOut, status := runCLI("diagnose", "--json", "--quantiles", "0.05,0.5,0.95", "--nested", "2", filepath.Join(dir, "mixed_4x500x4_f8.npy"))
	if status != 0 {
		t.Fatal(errOut)
	}
	golden(t, filepath.Join("diagnose", "mixed_quantiles_nested.json"), []byte(js))
}

// Bad CSV chains and flags are refused with one line naming the file,
// line and column, or the flag.
func TestDiagnoseRefusesBadCSV(t *testing.T) {
	dir := t.TempDir()
	w := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "# c\nlp__,a,b\n1,2,3\n1,2,4\n1,3,3\n1,5,3\n"
	g1, g2 := w("g1.csv", good), w("g2.csv", good)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{w("ragged.csv", "lp__,a,b\n1,2,3\n1,2\n"), g1}, "ragged.csv: line 3 has 2 columns, want 3"},
		{[]string{w("nan.csv", "lp__,a,b\n1,2,3\n1,x,3\n"), g1}, "nan.csv: line 3, column 2 (a): \"x\" is not a number"},
		{[]string{g1, w("short.csv", "lp__,a,b\n1,2,3\n1,2,4\n1,3,3\n")}, "short.csv: 3 draws, "},
		{[]string{g1, w("other.csv", "lp__,a,c\n1,2,3\n1,2,4\n1,3,3\n1,5,3\n")}, "other.csv: its columns differ"},
		// Probe 18: a file cut inside its last number was read with that
		// number shortened.
		{[]string{g1, w("cut.csv", "# c\nlp__,a,b\n1,2,3\n1,2,4\n1,3,3\n1,5,3")}, "cut.csv does not end with a line break: CmdStan ends every line with one"},
		{[]string{w("chains.csv", "a,chain\n1,1\n2,1\n3,1\n4,1\n1,2\n2,2\n3,2\n"), g2}, "has a chain column"},
		// Probe 59: the file with a chain column second, and a quote
		// left open (the line where it opens named, not the end).
		{[]string{g1, w("draws_df.csv", "chain,draw,a\n1,1,2\n1,2,3\n1,3,1\n1,4,5\n2,1,2\n2,2,3\n2,3,4\n2,4,1\n")}, "draws_df.csv has a chain column \"chain\": give that one file, not several"},
		{[]string{w("unclosed.csv", "a,chain\n\"1,1\n2,1\n3,1\n4,1\n")}, "unclosed.csv: line 2: a quoted field of the record starting there is not closed"},
		{[]string{w("uneven.csv", "a,chain\n1,1\n2,1\n3,1\n4,1\n1,2\n2,2\n3,2\n")}, "chain 2 has 3 draws, chain 1 has 4"},
		{[]string{"--nested", "3", g1, g2}, "--nested 3: want a number of superchains ≥ 2 that divides the 2 chains"},
		{[]string{"--quantiles", "0.5,1.5", g1, g2}, "\"1.5\" is not a probability from 0 to 1"},
		{[]string{"--key", "a", g1, g2}, "--key a names a member of an .npz file"},
	} {
		_, errOut, status := runCLI(append([]string{"diagnose"}, c.args...)...)
		if status != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: status %d, %q; want one line containing %q", c.args, status, errOut, c.want)
		}
	}
}

// No CSV text makes the CSV reader panic, and what it accepts has chains
// of equal length.
func FuzzDiagnoseCSV(f *testing.F) {
	f.Add([]byte("# c\nlp__,a,b\n1,2,3\n1,2,4\n"), []byte("a,.chain\n1,1\n2,2\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, pb := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
		if os.WriteFile(pa, a, 0o644) != nil || os.WriteFile(pb, b, 0o644) != nil {
			t.Skip()
		}
		for _, paths := range [][]string{{pa}, {pb}, {pa, pb}} {
			c, err := readChains(paths, "")
			if err != nil {
				continue
			}
			if len(c.data) != c.chains*c.draws*c.dims {
				t.Fatalf("%d values for %d × %d × %d", len(c.data), c.chains, c.draws, c.dims)
			}
		}
	})
}

// --plots draws four figures for each of the worst dimensions (or those
// of --plot-dims), refuses to replace them without --force, and refuses
// unknown dimensions and --plot-dims without --plots before any work.
func TestDiagnosePlots(t *testing.T) {
	dir := t.TempDir()
	stan, _ := filepath.Glob(filepath.Join("testdata", "diagnose", "cmdstan", "output_*.csv"))
	args := append([]string{"diagnose", "--plots", dir, "--plot-dims", "mu,tau", "--plot-format", "svg"}, stan...)
	out, errOut, status := runCLI(args...)
	if status != 0 || !strings.Contains(out, "8 plots written to") {
		t.Fatalf("status %d: %s %s", status, out, errOut)
	}
	for _, name := range []string{"mu-trace.svg", "mu-rank.svg", "mu-autocorrelation.svg", "tau-ess.svg"} {
		if !exists(filepath.Join(dir, name)) {
			t.Errorf("no %s", name)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{args, "exists: give another name, or replace it with --force"},
		{append([]string{"diagnose", "--plots", dir, "--plot-dims", "sigma"}, stan...), `--plot-dims sigma: no dimension "sigma" (the names "mu", "tau", "theta.1", "theta.2", or indices 0..3; the sampler's name__ columns are not diagnosed)`}, // probe 23: no names were listed
		{append([]string{"diagnose", "--plots", dir, "--plot-dims", "lp__"}, stan...), `no dimension "lp__"`},
		{append([]string{"diagnose", "--plot-dims", "mu"}, stan...), "--plot-dims applies to --plots DIR"},
	} {
		out, errOut, status := runCLI(c.args...)
		if status != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: status %d, out %q, err %q; want a refusal containing %q", c.args[1:4], status, out, errOut, c.want)
		}
	}
	if _, errOut, status := runCLI(append(args[:1:1], append([]string{"--force"}, args[1:]...)...)...); status != 0 {
		t.Errorf("--force: %s", errOut)
	}
	// Unnamed dimensions are chosen as their figures are named (probe 23:
	// dim0 was refused, though the figures are dim0-*.png).
	npyDir := filepath.Join(t.TempDir(), "p")
	chains := filepath.Join("testdata", "diagnose", "mixed_4x500x4_f8.npy")
	if _, errOut, status := runCLI("diagnose", "--plots", npyDir, "--plot-dims", "dim3,1", chains); status != 0 || !exists(filepath.Join(npyDir, "dim3-trace.png")) || !exists(filepath.Join(npyDir, "dim1-trace.png")) {
		t.Errorf("--plot-dims dim3,1: status %d, %s", status, errOut)
	}
	wantErr(t, `--plot-dims dim4: no dimension "dim4" (the data name no dimensions: give indices 0..3 or dim0..dim3)`, "diagnose", "--plots", npyDir+"2", "--plot-dims", "dim4", chains)
	if got, want := clipText(strings.Repeat("€", 20)), strings.Repeat("€", 13)+"…"; got != want { // probe 25: cut mid-character
		t.Errorf("clipText of 20 €: %q, want %q", got, want)
	}
	many := &chainsData{dims: 10, names: []string{strings.Repeat("a", 3000), "b", "c", "d", "e", "f", "g", "h", "i", "j"}}
	if got, want := many.dimChoices(), `the names "`+strings.Repeat("a", 40)+`…", "b", "c", "d", "e", "f", "g", "h", … (10 in all), or indices 0..9; the sampler's name__ columns are not diagnosed`; got != want {
		t.Errorf("ten names: %q, want %q", got, want)
	}
}

// Round-10 probe: --plots draws its set staged and locked (a second
// diagnose into the folder is refused, not mixed in), refuses a run's
// checkpoint folder and a training run, and leaves no temporary files;
// sample refuses, before any work, a --flow-out beside which a killed
// command left a .replaced file.
func TestDiagnosePlotsStagedAndGuarded(t *testing.T) {
	dir := t.TempDir()
	chains := filepath.Join("testdata", "diagnose", "mixed_4x500x4_f8.npy")
	plotsDir := filepath.Join(dir, "p")
	defer func() { testHook = nil }()
	testHook = func(p string) { // another diagnose fills the folder while this one draws
		if p == "compare-drawn" {
			testHook = nil
			if _, errOut, status := runCLI("diagnose", "--plots", plotsDir, chains); status != 2 || !strings.Contains(errOut, "another flowebm process") && !strings.Contains(errOut, "exists") {
				t.Errorf("a second diagnose into the folder: status %d, %q", status, errOut)
			}
		}
	}
	if _, errOut, status := runCLI("diagnose", "--plots", plotsDir, chains); status != 0 {
		t.Fatal(errOut)
	}
	entries, _ := os.ReadDir(plotsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != ".lock" && e.Name() != figureRecord {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	run0 := trainedRun(t)
	for _, p := range []string{filepath.Join(run0, "checkpoint"), run0} {
		if _, errOut, status := runCLI("diagnose", "--plots", p, chains); status != 2 || !strings.Contains(errOut, "--plots "+p) {
			t.Errorf("--plots %s: status %d, %q; want a refusal", p, status, errOut)
		}
	}
	fo := filepath.Join(dir, "fo")
	os.MkdirAll(fo, 0o755)
	os.WriteFile(filepath.Join(fo, "flow_sample.onnx.replaced"), []byte("old"), 0o644)
	out, errOut, status := runCLI("sample", "--model", "../../io/onnx/testdata/flows/bimodal_energy.onnx", "--sampler", "flowmc", "--chains", "4", "--steps", "5", "--flow-out", fo, "--out", filepath.Join(dir, "s.npy"))
	if status != 2 || out != "" || !strings.Contains(errOut, "flow_sample.onnx.replaced is left from a command killed") {
		t.Errorf("--flow-out beside a .replaced file: status %d, %q %q", status, out, errOut)
	}
}

// Round-11 probe: CmdStan's warm-up draws (save_warmup = 1) are dropped;
// --json stays valid with --plots; plot flags without --plots, column
// names with control characters and CR-only line ends are refused; a
// long parameter name gives a short file name; sample sizes i-SIR's
// proposals in its memory check; --train-flow trains a run's own flow.
func TestRound11Diagnose(t *testing.T) {
	dir := t.TempDir()
	stan, _ := filepath.Glob(filepath.Join("testdata", "diagnose", "cmdstan", "output_*.csv"))
	var warm []string
	for i, p := range stan {
		b, _ := os.ReadFile(p)
		text := strings.Replace(string(b), "#   num_samples = 300\n", "#   num_samples = 300\n#   save_warmup = 1\n", 1)
		hdr := strings.Index(text, "\n# Adaptation terminated")
		var rows strings.Builder
		for k := 0; k < 50; k++ {
			rows.WriteString("\n0,0,0,0,0,0,0,1000,1000,1000,1000")
		}
		w := filepath.Join(dir, fmt.Sprintf("w%d.csv", i))
		os.WriteFile(w, []byte(text[:hdr]+rows.String()+text[hdr:]), 0o644)
		warm = append(warm, w)
	}
	want, _, _ := runCLI(append([]string{"diagnose", "--json"}, stan...)...)
	got, errOut, status := runCLI(append([]string{"diagnose", "--json"}, warm...)...)
	if status != 0 || got != want {
		t.Errorf("save_warmup = 1: status %d %s; the draws differ from the files without warm-up", status, errOut)
	}
	js, _, status := runCLI(append([]string{"diagnose", "--json", "--plots", filepath.Join(dir, "p"), "--plot-format", "svg"}, stan...)...)
	var v any
	if status != 0 || json.Unmarshal([]byte(js), &v) != nil {
		t.Errorf("--json with --plots: status %d, stdout not JSON: %q", status, js)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"--plot-format", "svg"}, stan...), "--plot-format applies to --plots DIR"},
		{append([]string{"--force"}, stan...), "--force applies to --plots DIR"},
		{[]string{writeFile(t, dir, "ctl.csv", "chain,a\x1b[31m\n1,1\n1,2\n1,3\n1,4\n2,1\n2,2\n2,3\n2,4\n")}, "holds control characters"},
		{[]string{writeFile(t, dir, "cr.csv", "chain,a\r1,1\r1,2\r")}, "lines end in CR only"},
	} {
		if _, errOut, status := runCLI(append([]string{"diagnose"}, c.args...)...); status != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: status %d, %q; want %q", c.args[:1], status, errOut, c.want)
		}
	}
	long := strings.Repeat("x", 300)
	csv := writeFile(t, dir, "long.csv", "chain,"+long+"\n1,1\n1,2\n1,3\n1,4\n2,2\n2,1\n2,3\n2,5\n")
	if _, errOut, status := runCLI("diagnose", csv, "--plots", filepath.Join(dir, "pl"), "--plot-format", "svg"); status != 0 {
		t.Errorf("a 300-character parameter name: %s", errOut)
	}
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	if _, errOut, status := runCLI("sample", "--model", model, "--sampler", "flowmc", "--chains", "100000", "--steps", "4", "--out", filepath.Join(dir, "z.npy")); status != 2 || !strings.Contains(errOut, "proposals × 8.5 KB") {
		t.Errorf("100000 flowmc chains: status %d, %q", status, errOut)
	}
	run0 := trainedRun(t)
	out, errOut, status := runCLI("sample", "--model", run0, "--sampler", "flowmc", "--train-flow", "--warmup", "10", "--chains", "4", "--steps", "5", "--out", filepath.Join(dir, "t.npy"))
	if status != 0 || !strings.Contains(out, "training the flow of") {
		t.Errorf("--train-flow on a run's own flow: status %d, %q %q", status, out, errOut)
	}
}

// --key takes a member's name with or without .npy, as NumPy does;
// --quantiles refuses Go's hex and underscore number forms.
func TestDiagnoseKeyAndQuantileForms(t *testing.T) {
	dir := t.TempDir()
	a, _ := npy.ReadFile(filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"))
	p := filepath.Join(dir, "c.npz")
	if err := npz.WriteFile(p, map[string]*npy.Array{"y": a}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, errOut, status := runCLI("diagnose", "--key", "y.npy", p); status != 0 {
		t.Errorf("--key y.npy: %s", errOut)
	}
	if _, errOut, status := runCLI("diagnose", "--json", "--quantiles", "0x1p-1", p); status != 2 || !strings.Contains(errOut, "is not a probability") {
		t.Errorf("--quantiles 0x1p-1: status %d, %q", status, errOut)
	}
}

// An interrupt while diagnose computes removes the --plots folder it made
// (round-11 probe: an empty folder was left).
func TestDiagnoseInterruptRemovesPlotFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "plots")
	code, stderr := outputsChild(t, "diagnose-read", "INT", "diagnose", "--plots", dir, filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy"))
	if code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if exists(filepath.Dir(dir)) {
		t.Errorf("%s left after the interrupt", filepath.Dir(dir))
	}
}

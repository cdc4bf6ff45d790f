package diagnostics

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// The golden file testdata/crosscheck.json holds chains and the
// diagnostics that crosscheck/reference.py, an independent NumPy
// implementation of the published definitions, computes for them.
const crossGolden = "testdata/crosscheck.json"

// crossTol is the largest relative difference allowed between the Go
// diagnostics and the reference's: both sum in double precision in
// different orders (FFT sizes, pairwise sums), which leaves ~1e-13.
const crossTol = 1e-8

// num is a JSON number, or one of the strings "NaN", "Inf", "-Inf".
type num float64

func (v *num) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "NaN":
			*v = num(math.NaN())
		case "Inf":
			*v = num(math.Inf(1))
		case "-Inf":
			*v = num(math.Inf(-1))
		default:
			return fmt.Errorf("unknown number %q", s)
		}
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*v = num(f)
	return err
}

type crossCase struct {
	Name        string  `json:"name"`
	Chains      [][]num `json:"chains"`
	Superchains []int   `json:"superchains"`
	Want        struct {
		RHat         num     `json:"rhat"`
		RHatClassic  num     `json:"rhat_classic"`
		ESSRaw       num     `json:"ess_raw"`
		ESSBulk      num     `json:"ess_bulk"`
		ESSTail      num     `json:"ess_tail"`
		ESSMean      num     `json:"ess_mean"`
		ESSSD        num     `json:"ess_sd"`
		ESSMedian    num     `json:"ess_median"`
		MCSEMean     num     `json:"mcse_mean"`
		MCSESD       num     `json:"mcse_sd"`
		MCSEMedian   num     `json:"mcse_median"`
		ESSQuantile  []num   `json:"ess_quantile"`
		MCSEQuantile []num   `json:"mcse_quantile"`
		NestedRHat   []num   `json:"nested_rhat"`
		Bracket      [][]num `json:"mcse_quantile_bracket"`
	} `json:"want"`
}

type crossDoc struct {
	Probs []float64   `json:"probs"`
	Cases []crossCase `json:"cases"`
}

func (c crossCase) chains() [][]float64 {
	x := make([][]float64, len(c.Chains))
	for i, ch := range c.Chains {
		x[i] = make([]float64, len(ch))
		for j, v := range ch {
			x[i][j] = float64(v)
		}
	}
	return x
}

// relDiff is |a − b|/max(|a|, |b|): 0 for equal values (NaN and NaN, the
// same infinity, 0 and 0), +Inf where one is finite and the other not.
func relDiff(a, b float64) float64 {
	switch {
	case a == b || (math.IsNaN(a) && math.IsNaN(b)):
		return 0
	case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0):
		return math.Inf(1)
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// crossChecker compares diagnostics with the reference's, keeping the
// largest relative difference of each.
type crossChecker struct {
	t     *testing.T
	worst map[string]float64
	where map[string]string
}

func (c *crossChecker) check(cs, diag string, got float64, want num) {
	c.t.Helper()
	d := relDiff(got, float64(want))
	if d > crossTol {
		c.t.Errorf("%s: %s = %v, reference %v (relative difference %.3g)", cs, diag, got, float64(want), d)
	}
	if d > c.worst[diag] || c.where[diag] == "" {
		c.worst[diag], c.where[diag] = d, cs
	}
}

func (c *crossChecker) report() {
	names := make([]string, 0, len(c.worst))
	for k := range c.worst {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c.t.Logf("%-14s largest relative difference %.2e (%s)", k, c.worst[k], c.where[k])
	}
}

// checkCrossFile compares every diagnostic with the reference values in
// the file at path.
func checkCrossFile(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc crossDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	c := &crossChecker{t: t, worst: map[string]float64{}, where: map[string]string{}}
	for _, cs := range doc.Cases {
		x, w := cs.chains(), cs.Want
		for _, d := range []struct {
			name string
			got  float64
			want num
		}{
			{"rhat", RHat(x), w.RHat}, {"rhat_classic", ClassicRHat(x), w.RHatClassic},
			{"ess_raw", ESS(x), w.ESSRaw}, {"ess_bulk", BulkESS(x), w.ESSBulk}, {"ess_tail", TailESS(x), w.ESSTail},
			{"ess_mean", ESSMean(x), w.ESSMean}, {"ess_sd", ESSSD(x), w.ESSSD}, {"ess_median", ESSMedian(x), w.ESSMedian},
			{"mcse_mean", MCSEMean(x), w.MCSEMean}, {"mcse_sd", MCSESD(x), w.MCSESD}, {"mcse_median", MCSEMedian(x), w.MCSEMedian},
		} {
			c.check(cs.Name, d.name, d.got, d.want)
		}
		for i, p := range doc.Probs {
			c.check(cs.Name, fmt.Sprintf("ess_q%g", 100*p), ESSQuantile(x, p), w.ESSQuantile[i])
			c.check(cs.Name, fmt.Sprintf("mcse_q%g", 100*p), MCSEQuantile(x, p), w.MCSEQuantile[i])
			checkBracket(t, c, cs.Name, x, p, w.Bracket[i])
		}
		for i, k := range cs.Superchains {
			c.check(cs.Name, "nested_rhat", NestedRHat(x, k), w.NestedRHat[i])
		}
	}
	c.report()
}

// checkBracket compares a₁S and a₂S (MCSEQuantile's Beta quantiles times
// the number of draws) with the reference's, and flags any within 1e-6 of
// an integer, where the order statistic the floor or ceiling picks would
// hang on the last bits of the two Beta quantile implementations.
func checkBracket(t *testing.T, c *crossChecker, cs string, x [][]float64, p float64, want []num) {
	if want == nil {
		return
	}
	e := ESSQuantile(x, p)
	s := float64(len(x) * len(x[0]))
	b := distuv.Beta{Alpha: e*p + 1, Beta: e*(1-p) + 1}
	for i, u := range []float64{0.1586553, 0.8413447} {
		got := b.Quantile(u) * s
		c.check(cs, "beta_bracket", got, want[i])
		if math.Abs(got-math.Round(got)) < 1e-6 {
			t.Errorf("%s: p = %g: a%d·S = %.12g is within 1e-6 of an integer: the golden MCSE is fragile", cs, p, i+1, got)
		}
	}
}

func TestCrossCheckGolden(t *testing.T) {
	checkCrossFile(t, crossGolden)
}

// TestCrossCheckPython re-runs the reference and compares with its fresh
// output, where /usr/bin/python3 has NumPy; the golden file must then be
// what the reference writes (else regenerate it: see reference.py).
func TestCrossCheckPython(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skip("no NumPy for /usr/bin/python3")
	}
	out := filepath.Join(t.TempDir(), "crosscheck.json")
	cmd := exec.Command(py, filepath.Join("crosscheck", "reference.py"), "--out", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference.py: %v\n%s", err, msg)
	}
	checkCrossFile(t, out)
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(crossGolden)
	if err != nil {
		t.Fatal(err)
	}
	var a, b crossDoc
	if json.Unmarshal(fresh, &a) != nil || json.Unmarshal(golden, &b) != nil {
		t.Fatal("cannot decode the reference output or the golden file")
	}
	if len(a.Cases) != len(b.Cases) {
		t.Fatalf("reference writes %d cases, golden file has %d", len(a.Cases), len(b.Cases))
	}
	for i := range a.Cases {
		if fmt.Sprint(a.Cases[i]) != fmt.Sprint(b.Cases[i]) {
			t.Errorf("case %s: golden file differs from the reference's output (NumPy changed its random streams, or reference.py changed without regenerating)", a.Cases[i].Name)
		}
	}
}

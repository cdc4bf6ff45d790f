package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// texRows reads the rows "Name & v & v … \\" of the tabular that follows
// marker in the paper's table excerpt.
func texRows(t *testing.T, tex, marker string) map[string][]float64 {
	t.Helper()
	i := strings.Index(tex, marker)
	if i < 0 {
		t.Fatalf("no %q in the paper excerpt", marker)
	}
	body := tex[i:]
	body = body[:strings.Index(body, `\end{tabular}`)]
	rows := map[string][]float64{}
	strip := regexp.MustCompile(`\\textbf\{([^}]*)\}`)
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSuffix(strings.TrimSpace(strip.ReplaceAllString(line, "$1")), `\\`)
		cells := strings.Split(line, "&")
		if len(cells) < 3 {
			continue
		}
		var vals []float64
		for _, c := range cells[1:] {
			v, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
			if err != nil {
				vals = nil
				break
			}
			vals = append(vals, v)
		}
		if vals != nil {
			rows[strings.TrimSpace(cells[0])] = vals
		}
	}
	return rows
}

// paperTables returns Tables 1 (8 Gaussians, rings), 2 (d = 16, 32, 64)
// and 3 by algorithm name as the paper writes it.
func paperTables(t *testing.T) (t1, t2, t3 map[string][]float64) {
	b, err := os.ReadFile("testdata/paper_tables.tex")
	if err != nil {
		t.Fatal(err)
	}
	tex := string(b)
	return texRows(t, tex, `{table:exp:2d_toys:mse}`), texRows(t, tex, `{table:exp:four_gaussians:rhat}`), texRows(t, tex, `{table:app:motivating_example_extended:metrics}`)
}

// The paper's numbers flowebm keeps (reproduce's paperNumbers) are the
// paper's Tables 1–3, read from a verbatim excerpt of its LaTeX.
func TestPaperNumbers(t *testing.T) {
	t1, t2, t3 := paperTables(t)
	if len(t1) != 4 || len(t2) != 4 || len(t3) != 4 {
		t.Fatalf("parsed %d, %d and %d rows of Tables 1, 2, 3", len(t1), len(t2), len(t3))
	}
	for alg, name := range algorithmNames {
		for i, exp := range []string{"8-gaussians", "rings"} {
			if got, want := paperNumbers.table1[exp][alg], t1[name][i]; got != want {
				t.Errorf("Table 1 %s %s: %v, paper %v", exp, name, got, want)
			}
		}
		for i, d := range []int{16, 32, 64} {
			if got, want := paperNumbers.table2[fmt.Sprintf("four-gaussians-%d", d)][alg], t2[name][i]; got != want {
				t.Errorf("Table 2 d = %d %s: %v, paper %v", d, name, got, want)
			}
		}
		for i := range 3 {
			if got, want := paperNumbers.table3[alg][i], t3[name][i]; got != want {
				t.Errorf("Table 3 %s column %d: %v, paper %v", name, i, got, want)
			}
		}
	}
}

// quoteName maps the names documents use for the algorithms to the
// paper's.
var quoteName = map[string]string{
	"flowMC-EBM": "flowMC-EBM", "flowMC": "flowMC-EBM", "flowmc": "flowMC-EBM",
	"NT-EBM": "NT-EBM", "NT": "NT-EBM", "nt": "NT-EBM",
	"ULA-EBM": "ULA-EBM", "ULA": "ULA-EBM", "ula": "ULA-EBM",
	"CoopFlow": "CoopFlow", "coopflow": "CoopFlow",
}

// agrees reports whether a quoted number is the paper's value as written
// or rounded to the quote's decimals.
func agrees(quote string, paper float64) bool {
	v, err := strconv.ParseFloat(quote, 64)
	if err != nil {
		return false
	}
	dec := 0
	if i := strings.IndexByte(quote, '.'); i >= 0 {
		dec = len(quote) - i - 1
	}
	p := math.Pow(10, float64(dec))
	return v == paper || math.Abs(v-math.Round(paper*p)/p) < 0.5/p/10
}

// Every paper number that README.md, docs/, the notebooks and the
// reproduce report quote equals the paper's table (as written, or rounded to the
// decimals shown): quotes after "paper" of the forms "NAME a / b / c"
// (Table 2) and "NAME a / b" (Table 1), the notebooks' `"name": {a, b}`
// maps, and the report's "ours / paper" table cells.
func TestPaperQuotes(t *testing.T) {
	t1, t2, _ := paperTables(t)
	files := []string{"../../README.md", "../../docs/results/REPORT.md"}
	nbs, _ := filepath.Glob("../../notebooks/*.ipynb")
	docs, _ := filepath.Glob("../../docs/*.md")
	files = append(append(files, nbs...), docs...)
	names := `(flowMC-EBM|NT-EBM|ULA-EBM|CoopFlow|flowMC|flowmc|NT|nt|ULA|ula|coopflow)`
	num := `(\d+\.\d+)`
	triple := regexp.MustCompile(names + `"?:?\s+\{?` + num + `\s*[/,]\s*` + num + `(?:\s*/\s*` + num + `)?`)
	// Quotes: "(paper: …)" or "(paper …)", "Paper Table N (…): …" to the
	// end of the line, and Go maps "paper := map…".
	segment := regexp.MustCompile(`(?s)\(paper:?\s[^)]*\)|Paper Table \d[^:\n]*:[^\n"]*|paper := map[^\n]*`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), `\"`, `"`)
		text = regexp.MustCompile(`"image/png": "[^"]*"`).ReplaceAllString(text, "")
		for _, seg := range segment.FindAllString(text, -1) {
			for _, m := range triple.FindAllStringSubmatch(seg, -1) {
				name := quoteName[m[1]]
				row, what := t2[name], "Table 2"
				if m[4] == "" {
					row, what = t1[name], "Table 1"
				}
				for i, q := range m[2:] {
					if q == "" {
						continue
					}
					checked++
					if !agrees(q, row[i]) {
						t.Errorf("%s quotes %s %s = %s in %q; the paper's %s has %v", f, name, what, q, m[0], what, row[i])
					}
				}
			}
		}
		checked += checkReportCells(t, f, text, t1, t2)
	}
	if checked < 40 {
		t.Errorf("only %d quoted paper numbers found: the patterns no longer match the documents", checked)
	}
	t.Logf("%d quoted paper numbers checked", checked)
}

// checkReportCells checks the report's table rows "| NAME | ours / paper |
// …" in its Table 1 and Table 2 sections (the last number of a cell is the
// paper's).
func checkReportCells(t *testing.T, f, text string, t1, t2 map[string][]float64) int {
	if !strings.HasSuffix(f, "REPORT.md") {
		return 0
	}
	checked := 0
	for _, sec := range []struct {
		head  string
		table map[string][]float64
	}{{"(paper Table 1)", t1}, {"(paper Table 2)", t2}} {
		i := strings.Index(text, sec.head)
		if i < 0 {
			t.Errorf("%s: no section %s", f, sec.head)
			continue
		}
		body := text[i:]
		if j := strings.Index(body[1:], "\n## "); j > 0 {
			body = body[:j+1]
		}
		for _, line := range strings.Split(body, "\n") {
			cells := strings.Split(strings.Trim(line, "| "), "|")
			row, ok := sec.table[quoteName[strings.TrimSpace(cells[0])]]
			if !ok || len(cells) != len(row)+1 {
				continue
			}
			for k, c := range cells[1:] {
				parts := strings.Split(c, "/")
				q := strings.TrimSpace(parts[len(parts)-1])
				checked++
				if !agrees(q, row[k]) {
					t.Errorf("%s %s: row %q quotes %s for the paper, which has %v", f, sec.head, line, q, row[k])
				}
			}
		}
	}
	return checked
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report's table over seeds reads DIR/seeds/*/seeds.json (as "train
// --seeds" writes it), checks flowMC-EBM's d = 64 R-hat against the
// paper's 1.05 on every seed, and names a seeds.json it cannot read.
func TestReportOverSeeds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, reportSeedsFolder, name, "seeds.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("d64", `{"experiment": "four-gaussians-64", "algorithm": "flowmc", "seeds": [2, 3, 4], "runs": ["s2", "s3", "`+filepath.Join(dir, reportSeedsFolder, "d64", "s4")+`"],
		"per_seed": [{"iter": 400, "max_rhat": 1.04, "max_rhat_classic": 1.02, "held_out_ll": -100.5, "ebm_weight_mse": 0.001, "stats": {"global_accept": 0.7}},
		             {"iter": 400, "max_rhat": 1.07, "max_rhat_classic": 1.03, "held_out_ll": -101.5, "ebm_weight_mse": 0.002, "stats": {"global_accept": 0.6}},
		             {"iter": 400, "max_rhat": 1.01, "max_rhat_classic": 1.00, "held_out_ll": -99.5, "ebm_weight_mse": 0.003, "stats": {"global_accept": 0.8}}]}`)
	write("broken", `{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [1, 2], "runs": ["s1"], "per_seed": []}`)
	w := newReportWriter(reproduceFlags{out: dir}, nil)
	if err := w.overSeeds(); err != nil {
		t.Fatal(err)
	}
	report := w.b.String()
	if miss := lacking(report, "## Over seeds", "### four-gaussians-64, flowMC-EBM",
		"| 2 | 1.040 / 1.020 | -100.500 | 1.00e-03 | 0.70 | `seeds/d64/s2` |", "| 4 | 1.010 / 1.000 | -99.500 | 3.00e-03 | 0.80 | `seeds/d64/s4` |",
		"Max rank R-hat over the 3 seeds: 1.040, 1.070, 1.010.",
		"- Not read: "+filepath.Join(dir, reportSeedsFolder, "broken", "seeds.json")+": 2 seeds, 1 runs and 0 per_seed evaluations"); len(miss) > 0 {
		t.Errorf("report lacks %q:\n%s", miss, report)
	}
	checks := strings.Join(w.seedChecks(), "\n")
	if want := "flowMC-EBM max rank R-hat ≤ 1.05 (the paper's) on 2 of 3 seeds (want all of at least 3): FAILS"; !strings.Contains(checks, want) {
		t.Errorf("checks %q lack %q", checks, want)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
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
	write("dup", `{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [7, 7], "runs": ["a", "b"], "per_seed": [{"iter": 1}, {"iter": 1}]}`)
	write("empty", `{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [7], "runs": ["a"], "per_seed": [{}]}`)
	write("unknown", `{"experiment": "no-such", "algorithm": "flowmc", "seeds": [7], "runs": ["a"], "per_seed": [{"iter": 1}]}`)
	// A run whose R-hat train could not compute (written as null) and
	// seeds far above 2^63 (sorted as unsigned numbers).
	write("null", `{"experiment": "four-gaussians-64", "algorithm": "flowmc", "seeds": [18446744073709551615, 3, 5], "runs": ["x", "y", "z"],
		"per_seed": [{"iter": 9, "max_rhat": null}, {"iter": 9, "max_rhat": 1.0}, {"iter": 9, "max_rhat": 1.01}]}`)
	for _, s := range []string{"s2", "s4"} { // the run folders train --seeds made (s3's is gone)
		os.MkdirAll(filepath.Join(dir, reportSeedsFolder, "d64", s), 0o755)
	}
	w := newReportWriter(reproduceFlags{out: dir}, nil)
	if err := w.overSeeds(); err != nil {
		t.Fatal(err)
	}
	report := w.b.String()
	if miss := lacking(report, "## Over seeds", "### four-gaussians-64, flowMC-EBM",
		"| 2 | 400 | 1.040 / 1.020 | -100.500 | 1.00e-03 | 0.70 | `seeds/d64/s2` |", "| 3 | 400 | 1.070 / 1.030 | -101.500 | 2.00e-03 | 0.60 | `s3` |", "| 4 | 400 | 1.010 / 1.000 | -99.500 | 3.00e-03 | 0.80 | `seeds/d64/s4` |",
		"Max rank R-hat over the 3 seeds: 1.040, 1.070, 1.010.",
		"Max rank R-hat over the 3 seeds: 1.000, 1.010, —.",
		"- Not read: "+filepath.Join(dir, reportSeedsFolder, "broken", "seeds.json")+": 2 seeds, 1 runs and 0 per_seed evaluations",
		"dup", "seeds.json: field \"seeds\" names seed 7 twice",
		"empty", "seeds.json: per_seed[0]: no \"iter\"",
		"unknown", "seeds.json: field \"experiment\" is \"no-such\""); len(miss) > 0 {
		t.Errorf("report lacks %q:\n%s", miss, report)
	}
	checks := strings.Join(w.seedChecks(), "\n")
	if want := "flowMC-EBM max rank R-hat ≤ 1.05 (the paper's) on 2 of 3 seeds (want all of at least 3): FAILS"; strings.Count(checks, want) != 2 {
		t.Errorf("checks %q lack %q", checks, want)
	}
}

// readSeedSet never panics on a damaged or hostile seeds.json: it returns
// a set or an error naming the file.
func FuzzReadSeedSet(f *testing.F) {
	f.Add([]byte(`{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [1], "runs": ["s1"], "per_seed": [{"iter": 5, "max_rhat": null}]}`))
	f.Add([]byte(`{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [1, 1], "runs": ["a", "b"], "per_seed": [{}, {"iter": "x"}]}`))
	f.Add([]byte(`{"seeds": [18446744073709551615], "runs": [""], "per_seed": [[]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "seeds.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := readSeedSet(path, dir)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			return
		}
		if len(s.rows) == 0 || s.experiment == "" {
			t.Errorf("accepted a set without seeds or experiment: %+v", s)
		}
	})
}

// Probe 15: seeds trained with other settings were tabulated with the
// others, unmarked, and passed the paper's check. The settings column
// names the first field where a run's config.json differs from the first
// run's (seeds aside), and the check is then not claimed.
func TestReportSeedsSettings(t *testing.T) {
	dir := t.TempDir()
	cfg, stderr, status := runCLI("train", "--experiment", "four-gaussians-64", "--iterations", "9", "--print-config")
	if status != 0 {
		t.Fatal(stderr)
	}
	set := filepath.Join(dir, reportSeedsFolder, "d64")
	for seed, batch := range map[string]string{"s1": "128", "s2": "128", "s3": "64"} {
		if err := os.MkdirAll(filepath.Join(set, seed), 0o755); err != nil {
			t.Fatal(err)
		}
		c := strings.Replace(strings.Replace(cfg, `"batch_size": 128`, `"batch_size": `+batch, 1), `"seed": 1`, `"seed": `+seed[1:], 1)
		if err := os.WriteFile(filepath.Join(set, seed, "config.json"), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	body := `{"experiment": "four-gaussians-64", "algorithm": "flowmc", "seeds": [1, 2, 3], "runs": ["s1", "s2", "s3"], "per_seed": [` +
		`{"iter": 9, "max_rhat": 1.01}, {"iter": 9, "max_rhat": 1.02}, {"iter": 9, "max_rhat": 1.03}]}`
	if err := os.WriteFile(filepath.Join(set, "seeds.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newReportWriter(reproduceFlags{out: dir}, nil)
	if err := w.overSeeds(); err != nil {
		t.Fatal(err)
	}
	if miss := lacking(w.b.String(), "`seeds/d64/s1` | as the first |", "`seeds/d64/s2` | as the first |",
		"`seeds/d64/s3` | train.batch_size 64 (seed 1: 128) |"); len(miss) > 0 {
		t.Errorf("report lacks %q:\n%s", miss, w.b.String())
	}
	if checks := strings.Join(w.seedChecks(), "\n"); !strings.Contains(checks, "on 3 of 3 seeds (want all of at least 3): not checked: the seeds' runs were not shown to share their settings") {
		t.Errorf("checks %q: want the check not claimed", checks)
	}
}

// Probe 16: a set whose runs all share settings other than the defaults
// was tabulated under the defaults' heading, "as the first" on every row,
// and could pass the paper's check. Its heading names the first field
// that differs from what reproduce trains, and the check is not claimed.
func TestReportSeedsOtherThanDefaults(t *testing.T) {
	dir := t.TempDir()
	exp, err := experiments.ByName("four-gaussians-64")
	if err != nil {
		t.Fatal(err)
	}
	cfg, stderr, status := runCLI("train", "--experiment", "four-gaussians-64", "--print-config")
	if status != 0 {
		t.Fatal(stderr)
	}
	cfg = strings.Replace(cfg, `"lr": 0.001`, `"lr": 0.05`, 1)
	set := filepath.Join(dir, reportSeedsFolder, "d64")
	var rows []string
	for _, seed := range []string{"2", "3", "4"} {
		if err := os.MkdirAll(filepath.Join(set, "s"+seed), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(set, "s"+seed, "config.json"), []byte(strings.Replace(cfg, `"seed": 1`, `"seed": `+seed, 1)), 0o644)
		rows = append(rows, `{"iter": 2500, "max_rhat": 1.01}`)
	}
	os.WriteFile(filepath.Join(set, "seeds.json"), []byte(`{"experiment": "four-gaussians-64", "algorithm": "flowmc", "seeds": [2, 3, 4], "runs": ["s2", "s3", "s4"], "per_seed": [`+strings.Join(rows, ", ")+`]}`), 0o644)
	main := &reproRun{experiment: "four-gaussians-64", exp: exp, algorithm: algorithms.FlowMC, dir: filepath.Join(dir, "runs", "four-gaussians-64-flowmc"), state: runMissing}
	w := newReportWriter(reproduceFlags{out: dir, seed: 1}, []*reproRun{main})
	if err := w.overSeeds(); err != nil {
		t.Fatal(err)
	}
	if want := "### four-gaussians-64, flowMC-EBM, other settings than the defaults: train.ebm_optim.lr 0.05 (reproduce: 0.001)"; !strings.Contains(w.b.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, w.b.String())
	}
	if checks := strings.Join(w.seedChecks(), "\n"); !strings.Contains(checks, "not checked: the seeds were trained with other settings than the defaults") {
		t.Errorf("checks %q: want the check not claimed", checks)
	}
}

// Probe 18: seeds.json was read leniently (a key twice in another case, an
// unknown field, iter −5) and its experiment and algorithm were never
// checked against the runs: two-modes runs were shown under "rings". Such
// sets are named as not read.
func TestReportSeedsStrictAndConsistent(t *testing.T) {
	dir := t.TempDir()
	cfg, stderr, status := runCLI("train", "--experiment", "two-modes", "--iterations", "9", "--print-config")
	if status != 0 {
		t.Fatal(stderr)
	}
	write := func(name, body string) string {
		set := filepath.Join(dir, reportSeedsFolder, name)
		if err := os.MkdirAll(filepath.Join(set, "s1"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(set, "s1", "config.json"), []byte(cfg), 0o644)
		p := filepath.Join(set, "seeds.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const rest = `"seeds": [1], "runs": ["s1"], "per_seed": [{"iter": 9, "max_rhat": 1.01}]}`
	rings := write("rings", `{"experiment": "rings", "algorithm": "flowmc", `+rest)
	ula := write("ula", `{"experiment": "two-modes", "algorithm": "ula", `+rest)
	twice := write("twice", `{"experiment": "two-modes", "Experiment": "rings", "algorithm": "flowmc", `+rest)
	extra := write("extra", `{"experiment": "two-modes", "algorithm": "flowmc", "colour": 1, `+rest)
	neg := write("neg", `{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [1], "runs": ["s1"], "per_seed": [{"iter": -5}]}`)
	// Probe 20: values no run has, and an evaluation past the run's length.
	rhat := write("rhat", `{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [1], "runs": ["s1"], "per_seed": [{"iter": 9, "max_rhat": -3}]}`)
	weight := write("weight", `{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [1], "runs": ["s1"], "per_seed": [{"iter": 9, "ebm_weights": [0.5, 7]}]}`)
	late := write("late", `{"experiment": "two-modes", "algorithm": "flowmc", "seeds": [1], "runs": ["s1"], "per_seed": [{"iter": 10}]}`)
	write("good", `{"experiment": "two-modes", "algorithm": "flowmc", `+rest)
	w := newReportWriter(reproduceFlags{out: dir}, nil)
	if err := w.overSeeds(); err != nil {
		t.Fatal(err)
	}
	report := w.b.String()
	if miss := lacking(report,
		"- Not read: "+rings+": experiment rings and algorithm flowmc, but the run of seed 1 (seeds/rings/s1/config.json) is two-modes with flowmc: not shown",
		"- Not read: "+ula+": experiment two-modes and algorithm ula, but the run of seed 1",
		"- Not read: "+twice+": ", "- Not read: "+extra+": ", "colour",
		"- Not read: "+neg+": per_seed[0]: field \"iter\" is -5",
		"- Not read: "+rhat+": per_seed[0]: field \"max_rhat\" is -3, want a finite R-hat > 0",
		"- Not read: "+weight+": per_seed[0]: field \"ebm_weights\" holds 7 at mode 2",
		"- Not read: "+late+": seed 1's final evaluation is at iteration 10, but its run seeds/late/s1/config.json trains 9",
		"### two-modes, flowMC-EBM"); len(miss) > 0 {
		t.Errorf("report lacks %q:\n%s", miss, report)
	}
	if strings.Contains(report, "### rings") || strings.Contains(report, "ULA-EBM") {
		t.Errorf("a set shown under another experiment's or algorithm's heading:\n%s", report)
	}
}

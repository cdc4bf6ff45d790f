package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/training"
)

// reportSeedsFolder is the folder beside runs/ whose subfolders hold "flowebm
// train --seeds" outputs (each with its seeds.json) that the report adds,
// with the run of the same experiment and algorithm in runs/, as a table
// over seeds.
const reportSeedsFolder = "seeds"

// seedRow is one seed's final evaluation in the report's table over seeds.
type seedRow struct {
	seed uint64
	ev   training.Eval
	from string // the folder, relative to the report
}

// seedSet is one experiment × algorithm over seeds.
type seedSet struct {
	experiment string
	algorithm  algorithms.Algorithm
	rows       []seedRow
}

// readSeedSets reads DIR/seeds/*/seeds.json, each joined with the run of
// its experiment and algorithm in runs/ when that run's seed is not among
// them; sets that cannot be read are returned as errors for the report
// to name.
func (w *reportWriter) readSeedSets() (sets []seedSet, bad []string) {
	paths, _ := filepath.Glob(filepath.Join(w.f.out, reportSeedsFolder, "*", "seeds.json"))
	slices.Sort(paths)
	for _, p := range paths {
		s, err := readSeedSet(p, filepath.Dir(filepath.Dir(filepath.Dir(p))))
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if r := w.get(s.experiment, s.algorithm); r != nil && r.hasResult() && !s.has(r.metrics.Seed) {
			s.rows = append(s.rows, seedRow{seed: r.metrics.Seed, ev: r.metrics.Final, from: "runs/" + r.name()})
		}
		slices.SortFunc(s.rows, func(a, b seedRow) int { return int(a.seed) - int(b.seed) })
		sets = append(sets, s)
	}
	return sets, bad
}

func (s seedSet) has(seed uint64) bool {
	return slices.ContainsFunc(s.rows, func(r seedRow) bool { return r.seed == seed })
}

// readSeedSet reads one seeds.json (base: the report's folder).
func readSeedSet(path, base string) (seedSet, error) {
	var s seedSet
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	var raw struct {
		Experiment string            `json:"experiment"`
		Algorithm  string            `json:"algorithm"`
		Seeds      []uint64          `json:"seeds"`
		Runs       []string          `json:"runs"`
		PerSeed    []json.RawMessage `json:"per_seed"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if len(raw.Seeds) == 0 || len(raw.PerSeed) != len(raw.Seeds) || len(raw.Runs) != len(raw.Seeds) {
		return s, fmt.Errorf("%s: %d seeds, %d runs and %d per_seed evaluations: want as many of each, at least one", path, len(raw.Seeds), len(raw.Runs), len(raw.PerSeed))
	}
	s.experiment = raw.Experiment
	if err := s.algorithm.Set(raw.Algorithm); err != nil {
		return s, fmt.Errorf("%s: field \"algorithm\": %w", path, err)
	}
	for i, seed := range raw.Seeds {
		run := raw.Runs[i] // absolute, or relative to seeds.json's folder
		if !filepath.IsAbs(run) {
			run = filepath.Join(filepath.Dir(path), run)
		}
		if rel, err := filepath.Rel(base, run); err == nil {
			run = rel
		}
		row := seedRow{seed: seed, from: filepath.ToSlash(run)}
		if err := json.Unmarshal(raw.PerSeed[i], &row.ev); err != nil {
			return s, fmt.Errorf("%s: per_seed[%d]: %w", path, i, err)
		}
		s.rows = append(s.rows, row)
	}
	return s, nil
}

// overSeeds writes the table over seeds of every set in DIR/seeds.
func (w *reportWriter) overSeeds() error {
	sets, bad := w.readSeedSets()
	if len(sets) == 0 && len(bad) == 0 {
		return nil
	}
	p := w.p
	p("## Over seeds\n\n")
	p("Runs of one experiment and algorithm with other seeds (`flowebm train --seeds LIST --out %s/NAME`, the same defaults), with the run above where its seed is not among them. R-hat as in Table 2 (rank-normalised / classic).\n\n", reportSeedsFolder)
	for _, b := range bad {
		p("- Not read: %s\n", b)
	}
	if len(bad) > 0 {
		p("\n")
	}
	for _, s := range sets {
		p("### %s, %s\n\n", s.experiment, algorithmNames[s.algorithm])
		p("| seed | max R-hat (rank / classic) | held-out LL | EBM weight MSE | global acc. | folder |\n|---|---|---|---|---|---|\n")
		var rhats []string
		for _, r := range s.rows {
			p("| %d | %.3f / %.3f | %s | %s | %s | `%s` |\n", r.seed, r.ev.MaxRHat, r.ev.MaxRHatClassic, fixed3(r.ev.HeldOutLL), sci(r.ev.EBMWeightMSE), fmtRate(r.ev.Stats.GlobalAccept), r.from)
			rhats = append(rhats, fmt.Sprintf("%.3f", r.ev.MaxRHat))
		}
		p("\nMax rank R-hat over the %d seeds: %s.\n\n", len(s.rows), strings.Join(rhats, ", "))
	}
	return nil
}

// seedChecks are the acceptance lines over seeds: flowMC-EBM's max rank
// R-hat at d = 64 against the paper's 1.05 on every seed.
func (w *reportWriter) seedChecks() []string {
	sets, _ := w.readSeedSets()
	var out []string
	for _, s := range sets {
		if s.experiment != "four-gaussians-64" || s.algorithm != algorithms.FlowMC {
			continue
		}
		n := 0
		for _, r := range s.rows {
			if r.ev.MaxRHat <= 1.05 {
				n++
			}
		}
		verdict := "FAILS"
		if n == len(s.rows) && n >= 3 {
			verdict = "holds"
		}
		out = append(out, fmt.Sprintf("four-gaussians-64 over seeds: flowMC-EBM max rank R-hat ≤ 1.05 (the paper's) on %d of %d seeds (want all of at least 3): %s", n, len(s.rows), verdict))
	}
	return out
}

// sci writes v in scientific notation, or — for NaN.
func sci(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2e", v)
}

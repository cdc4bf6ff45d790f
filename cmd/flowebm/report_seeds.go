package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/jsonfile"
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
	raw  json.RawMessage // the evaluation as seeds.json holds it (nil: a run of runs/)
	from string          // the folder, relative to the report
	// settings says how the run's configuration compares with the set's
	// first run's, seed aside: "" where they are the same.
	settings string
}

// seedSet is one experiment × algorithm over seeds.
type seedSet struct {
	experiment string
	algorithm  algorithms.Algorithm
	rows       []seedRow
	// otherSettings says how the set's first run differs from the
	// configuration this report's runs are checked against (seed aside):
	// "" where it does not, or where there is no such run to compare with.
	otherSettings string
}

// seedSets are DIR/seeds/*/seeds.json as read (see readSeedSets).
type seedSets struct {
	sets []seedSet
	bad  []string
}

// readSeedSets returns DIR/seeds/*/seeds.json, read once per report.
func (w *reportWriter) readSeedSets() (sets []seedSet, bad []string) {
	if w.seeds == nil {
		w.seeds = new(seedSets)
		w.seeds.sets, w.seeds.bad = w.loadSeedSets()
	}
	return w.seeds.sets, w.seeds.bad
}

// loadSeedSets reads DIR/seeds/*/seeds.json, each joined with the run of
// its experiment and algorithm in runs/ when that run's seed is not among
// them; sets that cannot be read are returned as errors for the report
// to name.
func (w *reportWriter) loadSeedSets() (sets []seedSet, bad []string) {
	paths, _ := filepath.Glob(filepath.Join(w.f.out, reportSeedsFolder, "*", "seeds.json"))
	slices.Sort(paths)
	for _, p := range paths {
		s, err := readSeedSet(p, filepath.Dir(filepath.Dir(filepath.Dir(p))))
		if err == nil {
			err = s.checkRuns(p, w.f.out)
		}
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if r := w.get(s.experiment, s.algorithm); r != nil && r.hasResult() && r.err == "" && !s.has(r.metrics.Seed) && s.iters() == r.metrics.Final.Iter {
			main := seedRow{seed: r.metrics.Seed, ev: r.metrics.Final, from: "runs/" + r.name()}
			// Joined only when trained alike: a set of other settings
			// stands alone, its difference shown.
			if compareSettings(w.f.out, append([]seedRow{main}, s.rows...)) {
				s.rows = append(s.rows, main)
			}
		}
		slices.SortFunc(s.rows, func(a, b seedRow) int { return cmp.Compare(a.seed, b.seed) })
		compareSettings(w.f.out, s.rows)
		s.otherSettings = w.defaultsDiff(s)
		sets = append(sets, s)
	}
	return sets, bad
}

// checkRuns refuses a set (read from path) one of whose run folders under
// base was trained on another experiment or with another algorithm than
// the set names (its rows would be shown under the wrong heading); a
// config.json that cannot be read is left to the settings column.
func (s seedSet) checkRuns(path, base string) error {
	for _, r := range s.rows {
		c, err := training.ReadRunConfig(filepath.Join(base, filepath.FromSlash(r.from)))
		if err != nil {
			continue
		}
		if c.Experiment != s.experiment || c.Train.Algorithm != s.algorithm {
			return fmt.Errorf("%s: experiment %s and algorithm %s, but the run of seed %d (%s/config.json) is %s with %s: not shown", path, s.experiment, s.algorithm, r.seed, r.from, c.Experiment, c.Train.Algorithm)
		}
		if c.Seed != r.seed {
			return fmt.Errorf("%s: seed %d, but its run %s/config.json has seed %d: not shown", path, r.seed, r.from, c.Seed)
		}
		if n := c.Train.Iterations; n > 0 && r.ev.Iter > n {
			return fmt.Errorf("%s: seed %d's final evaluation is at iteration %d, but its run %s/config.json trains %d: not shown", path, r.seed, r.ev.Iter, r.from, n)
		}
		if err := r.sameAsRun(path, base); err != nil {
			return err
		}
	}
	return nil
}

// sameAsRun checks the row's evaluation, as the seeds.json at path holds
// it, against its run's metrics.json (under base), where that reads:
// rows swapped or edited were shown as the runs' (round 106 B3).
func (r seedRow) sameAsRun(path, base string) error {
	var m struct {
		Final json.RawMessage `json:"final"`
	}
	metrics := filepath.Join(base, filepath.FromSlash(r.from), "metrics.json")
	if r.raw == nil || jsonfile.Read(metrics, &m, jsonfile.Options{AllowUnknown: true}) != nil || m.Final == nil {
		return nil
	}
	var got, want any
	if json.Unmarshal(r.raw, &got) != nil || json.Unmarshal(m.Final, &want) != nil {
		return nil
	}
	if name := training.FirstDiffering("final", got, want); name != "" {
		return fmt.Errorf("%s: seed %d's evaluation, field %q, is not its run's (%s): edited, or rows swapped: not shown; the train --seeds command that made the set, given again, writes seeds.json from its runs", path, r.seed, strings.TrimPrefix(name, "final."), metrics)
	}
	return nil
}

// compareSettings sets each row's settings against the first row's
// configuration (config.json in the run folders under base, seeds aside)
// and reports whether every row has the first's.
func compareSettings(base string, rows []seedRow) bool {
	cfgs := make([]*config.Run, len(rows))
	for i, r := range rows {
		if c, err := training.ReadRunConfig(filepath.Join(base, filepath.FromSlash(r.from))); err == nil {
			c.Seed = 0
			cfgs[i] = &c
		}
	}
	same := true
	for i := range rows {
		rows[i].settings = ""
		switch {
		case cfgs[i] == nil:
			rows[i].settings = "config.json not read"
		case i > 0 && cfgs[0] != nil:
			if field, v, first := training.ConfigDiff(*cfgs[i], *cfgs[0]); field != "" {
				rows[i].settings = fmt.Sprintf("%s %s (seed %d: %s)", field, v, rows[0].seed, first)
			}
		}
		same = same && rows[i].settings == ""
	}
	return same
}

// defaultsDiff compares the configuration of the set's first run with the
// one reproduce trains for its experiment and algorithm (the defaults, at
// this report's length), seed aside: "field F is v (reproduce: w)", or ""
// where they agree or no run of the experiment and algorithm is in runs/
// to take the defaults from.
func (w *reportWriter) defaultsDiff(s seedSet) string {
	r := w.get(s.experiment, s.algorithm)
	if r == nil || r.exp == nil {
		return ""
	}
	have, err := training.ReadRunConfig(filepath.Join(w.f.out, filepath.FromSlash(s.rows[0].from)))
	if err != nil {
		return "config.json not read"
	}
	have.Seed = w.f.seed
	if field, v, want := w.f.configDiff(r, have); field != "" {
		return fmt.Sprintf("%s %s (reproduce: %s)", field, v, want)
	}
	return ""
}

// sameSettings reports whether every run of the set was trained with the
// same configuration (seed aside).
func (s seedSet) sameSettings() bool {
	return s.otherSettings == "" && !slices.ContainsFunc(s.rows, func(r seedRow) bool { return r.settings != "" })
}

// iters is the iteration of the set's final evaluations, or -1 when they
// differ (runs of other lengths).
func (s seedSet) iters() int {
	it := s.rows[0].ev.Iter
	for _, r := range s.rows[1:] {
		if r.ev.Iter != it {
			return -1
		}
	}
	return it
}

func (s seedSet) has(seed uint64) bool {
	return slices.ContainsFunc(s.rows, func(r seedRow) bool { return r.seed == seed })
}

// readSeedSet reads one seeds.json (base: the report's folder).
func readSeedSet(path, base string) (seedSet, error) {
	var s seedSet
	var raw struct {
		Experiment string            `json:"experiment"`
		Algorithm  string            `json:"algorithm"`
		Seeds      []uint64          `json:"seeds"`
		Runs       []string          `json:"runs"`
		PerSeed    []json.RawMessage `json:"per_seed"`
		EBMWeights json.RawMessage   `json:"ebm_weights"` // summaries the report computes itself
		Summary    json.RawMessage   `json:"summary"`
	}
	// As strictly as flowebm's other JSON files (probe 18): a key given
	// twice, an unknown field or a second value is refused, with its line.
	if err := jsonfile.Read(path, &raw, jsonfile.Options{}); err != nil {
		return s, err
	}
	if len(raw.Seeds) == 0 || len(raw.PerSeed) != len(raw.Seeds) || len(raw.Runs) != len(raw.Seeds) {
		return s, fmt.Errorf("%s: %d seeds, %d runs and %d per_seed evaluations: want as many of each, at least one", path, len(raw.Seeds), len(raw.Runs), len(raw.PerSeed))
	}
	if !slices.Contains(experiments.Names(), raw.Experiment) {
		return s, fmt.Errorf("%s: field \"experiment\" is %q: want one of flowebm's experiments (%s)", path, raw.Experiment, strings.Join(experiments.Names(), ", "))
	}
	s.experiment = raw.Experiment
	if err := s.algorithm.Set(raw.Algorithm); err != nil {
		return s, fmt.Errorf("%s: field \"algorithm\": %w", path, err)
	}
	for i, seed := range raw.Seeds {
		if slices.Contains(raw.Seeds[:i], seed) {
			return s, fmt.Errorf("%s: field \"seeds\" names seed %d twice: want each seed once", path, seed)
		}
		ev, err := seedEval(raw.PerSeed[i])
		if err != nil {
			return s, fmt.Errorf("%s: per_seed[%d]: %w", path, i, err)
		}
		s.rows = append(s.rows, seedRow{seed: seed, ev: ev, raw: raw.PerSeed[i], from: seedFolder(path, base, raw.Runs[i])})
	}
	return s, nil
}

// seedEval reads one seed's final evaluation (metrics.json's "final"):
// it must have "iter"; the quantities the report shows read as NaN where
// they are null (train writes NaN as null) or absent, never as 0.
func seedEval(b json.RawMessage) (training.Eval, error) {
	var ev training.Eval
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return ev, fmt.Errorf("%.40s, want an object: the run's final evaluation (metrics.json's \"final\")", b)
	}
	if fields["iter"] == nil || string(fields["iter"]) == "null" {
		return ev, fmt.Errorf("no \"iter\": want the run's final evaluation (metrics.json's \"final\")")
	}
	if err := jsonfile.Decode(b, &ev, jsonfile.Options{}); err != nil { // strictly, in the file's terms (probe 19)
		return ev, err
	}
	if ev.Iter < 1 {
		return ev, fmt.Errorf("field \"iter\" is %d, want the iteration of the run's final evaluation (≥ 1)", ev.Iter)
	}
	for name, dst := range map[string]*float64{"max_rhat": &ev.MaxRHat, "max_rhat_classic": &ev.MaxRHatClassic, "held_out_ll": &ev.HeldOutLL, "ebm_weight_mse": &ev.EBMWeightMSE} {
		if v, ok := fields[name]; !ok || string(v) == "null" {
			*dst = math.NaN()
		}
	}
	var st map[string]json.RawMessage
	if json.Unmarshal(fields["stats"], &st) != nil || st["global_accept"] == nil || string(st["global_accept"]) == "null" {
		ev.Stats.GlobalAccept = math.NaN()
	}
	return ev, checkSeedEval(ev)
}

// checkSeedEval refuses values a run's evaluation cannot have (probe 20:
// an R-hat of −3 and a mode weight of 7 were shown); NaN stands for a
// value the run could not compute.
func checkSeedEval(ev training.Eval) error {
	known := func(v float64) bool { return !math.IsNaN(v) }
	for name, v := range map[string]float64{"max_rhat": ev.MaxRHat, "max_rhat_classic": ev.MaxRHatClassic} {
		if known(v) && !(v > 0 && v <= math.MaxFloat64) {
			return fmt.Errorf("field %q is %v, want a finite R-hat > 0", name, v)
		}
	}
	for name, v := range map[string]float64{"ebm_weight_mse": ev.EBMWeightMSE, "stats.global_accept": ev.Stats.GlobalAccept} {
		if known(v) && !(v >= 0 && v <= 1) {
			return fmt.Errorf("field %q is %v, want a value in [0, 1]", name, v)
		}
	}
	if v := ev.HeldOutLL; known(v) && math.IsInf(v, 0) {
		return fmt.Errorf("field \"held_out_ll\" is %v, want a finite log-likelihood", v)
	}
	for name, w := range map[string][]float64{"ebm_weights": ev.EBMWeights, "neg_weights": ev.NegWeights, "start_weights": ev.StartWeights} {
		if i := slices.IndexFunc(w, func(v float64) bool { return known(v) && !(v >= 0 && v <= 1) }); i >= 0 {
			return fmt.Errorf("field %q holds %v at mode %d, want a weight in [0, 1]", name, w[i], i+1)
		}
	}
	return nil
}

// seedFolder is a seeds.json run folder relative to the report's folder
// base: "train --seeds" records them as given (relative to where it ran),
// so the folder is looked for as written, beside seeds.json, and by its
// last element beside seeds.json (where train --seeds puts it); as written
// if none exists.
func seedFolder(path, base, run string) string {
	dir := filepath.Dir(path)
	for _, c := range []string{run, filepath.Join(dir, run), filepath.Join(dir, filepath.Base(run))} {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			if rel, err := filepath.Rel(base, c); err == nil {
				return filepath.ToSlash(rel)
			}
			return c
		}
	}
	return run
}

// overSeeds writes the table over seeds of every set in DIR/seeds.
func (w *reportWriter) overSeeds() error {
	sets, bad := w.readSeedSets()
	if len(sets) == 0 && len(bad) == 0 {
		return nil
	}
	p := w.p
	p("## Over seeds\n\n")
	p("Runs of one experiment and algorithm with other seeds (`flowebm train --seeds LIST --out %s/NAME`), with the run above where its seed is not among them and it was trained alike (as many iterations, the same configuration). The settings column compares each run's config.json with the first run's, seeds aside. R-hat as in Table 2 (rank-normalised / classic); — where a run could not compute it.\n\n", reportSeedsFolder)
	for _, b := range bad {
		p("- Not read: %s\n", b)
	}
	if len(bad) > 0 {
		p("\n")
	}
	for _, s := range sets {
		if s.otherSettings != "" {
			p("### %s, %s, other settings than the defaults: %s\n\n", s.experiment, algorithmNames[s.algorithm], s.otherSettings)
		} else {
			p("### %s, %s\n\n", s.experiment, algorithmNames[s.algorithm])
		}
		p("| seed | iterations | max R-hat (rank / classic) | held-out LL | EBM weight MSE | global acc. | folder | settings |\n|---|---|---|---|---|---|---|---|\n")
		var rhats []string
		for _, r := range s.rows {
			p("| %d | %d | %s / %s | %s | %s | %s | `%s` | %s |\n", r.seed, r.ev.Iter, dash3(r.ev.MaxRHat), dash3(r.ev.MaxRHatClassic), dash3(r.ev.HeldOutLL), sci(r.ev.EBMWeightMSE), fmtRate(r.ev.Stats.GlobalAccept), r.from, cmp.Or(r.settings, "as the first"))
			rhats = append(rhats, dash3(r.ev.MaxRHat))
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
			if r.ev.MaxRHat <= 1.05 { // NaN fails
				n++
			}
		}
		verdict := "FAILS"
		switch {
		case s.iters() < 0:
			verdict = "not checked: the seeds' runs have different lengths"
		case s.otherSettings != "":
			verdict = "not checked: the seeds were trained with other settings than the defaults (" + s.otherSettings + ")"
		case n == len(s.rows) && n >= 3 && !s.sameSettings():
			verdict = "not checked: the seeds' runs were not shown to share their settings (see the table's settings column)"
		case n == len(s.rows) && n >= 3:
			verdict = "holds"
		}
		out = append(out, fmt.Sprintf("four-gaussians-64 over seeds: flowMC-EBM max rank R-hat ≤ 1.05 (the paper's) on %d of %d seeds (want all of at least 3): %s", n, len(s.rows), verdict))
	}
	return out
}

// dash3 writes v with three decimals, or — for NaN.
func dash3(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fixed3(v)
}

// sci writes v in scientific notation, or — for NaN.
func sci(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2e", v)
}

package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/io/safefile"
)

// parseSeeds parses --seeds: a range "1-5" or a list "1,3,7".
func parseSeeds(s string) ([]uint64, error) {
	bad := fmt.Errorf("--seeds %q: want a range such as 1-5 or a list such as 1,3,7, of at most %d seeds", s, maxSeeds)
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '-' }) {
		if p = strings.TrimSpace(p); len(p) > 1 && p[0] == '0' {
			return nil, fmt.Errorf("--seeds %q: write seed %s in decimal, without leading zeros (as --seed)", s, p)
		}
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		b, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		if err1 != nil || err2 != nil || b < a || b-a >= maxSeeds {
			return nil, bad
		}
		out := make([]uint64, 0, b-a+1)
		for i := uint64(0); i <= b-a; i++ { // a counter from a would wrap at the largest uint64
			out = append(out, a+i)
		}
		return out, nil
	}
	var out []uint64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, bad
		}
		for _, w := range out {
			if w == v {
				return nil, fmt.Errorf("--seeds %q names seed %d twice", s, v)
			}
		}
		out = append(out, v)
	}
	if len(out) > maxSeeds {
		return nil, fmt.Errorf("--seeds %q: %d seeds, want at most %d", s, len(out), maxSeeds)
	}
	return out, nil
}

// maxSeeds bounds the runs one --seeds starts.
const maxSeeds = 100

// seedSpread summarises one quantity over seeds; SD is nil (null) for a
// single seed, whose spread is undefined.
type seedSpread struct {
	Mean float64  `json:"mean"`
	SD   *float64 `json:"sd"`
	Min  float64  `json:"min"`
	Max  float64  `json:"max"`
}

func spreadOf(v []float64) seedSpread {
	s := seedSpread{Mean: stat.Mean(v, nil), Min: math.Inf(1), Max: math.Inf(-1)}
	if len(v) > 1 {
		sd := stat.StdDev(v, nil)
		s.SD = &sd
	}
	for _, x := range v {
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	return s
}

// seedsSummary is seeds.json: each seed's final evaluation (metrics.json's
// "final", as written) and the spread of its quantities over the seeds.
type seedsSummary struct {
	Experiment string                `json:"experiment"`
	Algorithm  string                `json:"algorithm"`
	Seeds      []uint64              `json:"seeds"`
	Runs       []string              `json:"runs"`
	PerSeed    []json.RawMessage     `json:"per_seed"`
	Weights    []seedSpread          `json:"ebm_weights,omitempty"`
	Scalars    map[string]seedSpread `json:"summary"`
}

// runFinal is what the summary reads of a run's metrics.json.
type runFinal struct {
	Experiment  string          `json:"experiment"`
	Algorithm   string          `json:"algorithm"`
	Seed        uint64          `json:"seed"`
	Iterations  int             `json:"iterations"`
	TrueWeights []float64       `json:"true_weights"`
	Final       json.RawMessage `json:"final"`
	// GridHeldOutLL is metrics.json's grid_held_out_ll (2D).
	GridHeldOutLL *float64 `json:"grid_held_out_ll"`
	// GridMissed is metrics.json's grid_missed: the final grid misses
	// the EBM's mass.
	GridMissed *training.MissedMass `json:"grid_missed"`
}

// seedRun is one run's metrics.json, checked: its summary quantities
// (null, a quantity the run does not have, is left out) and EBM weights
// (a null weight reads as NaN).
type seedRun struct {
	path string
	runFinal
	scalars map[string]float64
	weights []float64
}

// summaryScalars are the final quantities summarised over seeds.
// grid_held_out_ll is metrics.json's own (2D: by the grid's log Z; round
// 97 A1: the spread of the importance-sampling one alone, 15 nats off).
var summaryScalars = []string{"ebm_weight_mse", "held_out_ll", "grid_held_out_ll", "max_rhat", "log_density_med_se"}

// readSeedRun reads and checks the metrics.json of the run of seed in dir.
func readSeedRun(dir string, seed uint64) (seedRun, error) {
	r := seedRun{path: filepath.Join(dir, "metrics.json"), scalars: map[string]float64{}}
	b, err := safefile.ReadFile(r.path, jsonfile.DefaultMaxBytes)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r.runFinal); err != nil {
		return r, fmt.Errorf("%s: %w", r.path, err)
	}
	var final map[string]json.RawMessage
	if err := json.Unmarshal(r.Final, &final); err != nil || final["iter"] == nil {
		return r, fmt.Errorf("%s: field \"final\" is %.40s, want the run's final evaluation (an object with \"iter\")", r.path, cmp.Or(string(r.Final), "missing"))
	}
	if r.Seed != seed {
		return r, fmt.Errorf("%s: field \"seed\" is %d, want %d (the seed of this folder)", r.path, r.Seed, seed)
	}
	for _, name := range summaryScalars {
		var v *float64
		if err := json.Unmarshal(final[name], &v); final[name] != nil && err != nil {
			return r, fmt.Errorf("%s: field \"final.%s\" is %.40s, want a finite number or null", r.path, name, final[name])
		}
		if v != nil {
			r.scalars[name] = *v
		}
	}
	if r.GridHeldOutLL != nil {
		r.scalars["grid_held_out_ll"] = *r.GridHeldOutLL
	}
	return r, r.readWeights(final["ebm_weights"])
}

// readWeights reads final.ebm_weights (absent or null: none), which must
// have a weight per mode of the experiment.
func (r *seedRun) readWeights(raw json.RawMessage) error {
	var w []*float64
	if raw != nil && json.Unmarshal(raw, &w) != nil {
		return fmt.Errorf("%s: field \"final.ebm_weights\" is %.40s, want a list of finite numbers or null", r.path, raw)
	}
	if n := len(r.TrueWeights); w != nil && n > 0 && len(w) != n {
		return fmt.Errorf("%s: field \"final.ebm_weights\" has %d weights, want %d (one per mode, as \"true_weights\")", r.path, len(w), n)
	}
	for _, v := range w {
		if v == nil {
			r.weights = append(r.weights, math.NaN())
		} else {
			r.weights = append(r.weights, *v)
		}
	}
	return nil
}

// sameRuns refuses to summarise r with first unless both are runs of one
// experiment and algorithm, of one length and one number of modes.
func sameRuns(first, r seedRun) error {
	for _, c := range []struct {
		field string
		a, b  any
	}{
		{"experiment", first.Experiment, r.Experiment},
		{"algorithm", first.Algorithm, r.Algorithm},
		{"iterations", first.Iterations, r.Iterations},
	} {
		if c.a != c.b {
			return fmt.Errorf("%s: field %q is %v, but %v in %s: a summary over seeds needs runs of one experiment, algorithm and length", r.path, c.field, c.b, c.a, first.path)
		}
	}
	if first.weights != nil && r.weights != nil && len(first.weights) != len(r.weights) {
		return fmt.Errorf("%s: field \"final.ebm_weights\" has %d modes, but %d in %s: a summary over seeds needs runs with the same modes", r.path, len(r.weights), len(first.weights), first.path)
	}
	return nil
}

// writeSeedsSummary reads the runs' metrics.json and writes seeds.json in
// dir, printing the spread of the EBM's weights.
func writeSeedsSummary(dir string, seeds []uint64, runs []string, out io.Writer) error {
	var rs []seedRun
	for i, d := range runs {
		r, err := readSeedRun(d, seeds[i])
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // round 95 B9: a damaged one, no way on named
			return fmt.Errorf("%w; flowebm train --resume %s writes the run's outputs again from its final checkpoint, then give the same --seeds command again", err, shellQuote(d))
		}
		if err == nil && len(rs) > 0 {
			err = sameRuns(rs[0], r)
		}
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	sum := summarise(rs, out)
	sum.Seeds, sum.Runs = seeds, runs
	path := filepath.Join(dir, "seeds.json")
	damaged := damagedSummary(path)
	if err := safefile.Write(path, func(w io.Writer) error {
		hook("seeds-summary")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}); err != nil {
		return err
	}
	hook("seeds-summary-placed")
	fmt.Fprintln(out, "summary in", path)
	if damaged != nil { // round 96 B5: replaced unsaid
		fmt.Fprintf(out, "note: the %s there before could not be read (%v): written again from the runs\n", path, damaged)
	}
	if left := otherSeedRuns(dir, runs); len(left) > 0 { // round 81 B3: an earlier set's runs dropped from the summary, unsaid
		what := "the runs " + strings.Join(left, ", ") + ", of seeds this command did not give: seeds.json leaves them out"
		if len(left) == 1 {
			what = "the run " + left[0] + ", of a seed this command did not give: seeds.json leaves it out"
		}
		fmt.Fprintf(out, "note: %s also holds %s (give every seed to --seeds to summarise them all)\n", dir, what)
	}
	return nil
}

// damagedSummary is why the seeds.json at path, where there is one,
// cannot be read as a summary; nil where it reads or is absent.
func damagedSummary(path string) error {
	b, err := safefile.ReadFile(path, 64<<20) // a regular file of a summary's size (a FIFO there would hang a plain read)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var sum seedsSummary
	return json.Unmarshal(b, &sum)
}

// otherSeedRuns are the names of dir's seed run folders (sN) that are not
// among runs.
func otherSeedRuns(dir string, runs []string) []string {
	var left []string
	for _, name := range runFolders(dir) {
		if _, err := strconv.ParseUint(strings.TrimPrefix(name, "s"), 10, 64); err != nil || !strings.HasPrefix(name, "s") {
			continue
		}
		if !slices.ContainsFunc(runs, func(r string) bool { return filepath.Base(r) == name }) {
			left = append(left, name)
		}
	}
	return left
}

// summarise gives the spread over the runs rs (checked alike) of each
// quantity every run has, printing the EBM weights'.
func summarise(rs []seedRun, out io.Writer) seedsSummary {
	sum := seedsSummary{Experiment: rs[0].Experiment, Algorithm: rs[0].Algorithm, Scalars: map[string]seedSpread{}}
	for _, name := range summaryScalars {
		var v []float64
		for _, r := range rs {
			if x, ok := r.scalars[name]; ok {
				v = append(v, x)
			}
		}
		if len(v) == len(rs) {
			sum.Scalars[name] = spreadOf(v)
		}
	}
	for _, r := range rs {
		sum.PerSeed = append(sum.PerSeed, r.Final)
	}
	for k := range rs[0].weights {
		var w []float64
		for _, r := range rs {
			if k < len(r.weights) && !math.IsNaN(r.weights[k]) {
				w = append(w, r.weights[k])
			}
		}
		if len(w) != len(rs) {
			break
		}
		s := spreadOf(w)
		sum.Weights = append(sum.Weights, s)
		if s.SD == nil {
			fmt.Fprintf(out, "mode %d: EBM weight %.3f (1 seed: no spread)\n", k+1, s.Mean)
			continue
		}
		fmt.Fprintf(out, "mode %d: EBM weight over %d seeds: mean %.3f, sd %.3f (min %.3f, max %.3f)\n", k+1, len(w), s.Mean, *s.SD, s.Min, s.Max) // round 106 A2: "±" read as an MCSE
	}
	var missed []string
	for _, r := range rs {
		if r.GridMissed != nil {
			missed = append(missed, strconv.FormatUint(r.Seed, 10))
		}
	}
	if len(missed) > 0 { // round 111 A1: summarised unsaid
		fmt.Fprintf(out, "note: the quadrature grid of seed %s misses the EBM's mass (as its run warned, metrics.json's grid_missed): its weights, log Z and held-out log-likelihood, in the spreads of seeds.json, are those of the grid's part\n", strings.Join(missed, ", "))
	}
	return sum
}

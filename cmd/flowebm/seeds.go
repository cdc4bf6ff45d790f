package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/flowebm/flowebm/io/safefile"
)

// parseSeeds parses --seeds: a range "1-5" or a list "1,3,7".
func parseSeeds(s string) ([]uint64, error) {
	bad := fmt.Errorf("--seeds %q: want a range such as 1-5 or a list such as 1,3,7", s)
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		b, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		if err1 != nil || err2 != nil || b < a || b-a >= maxSeeds {
			return nil, bad
		}
		var out []uint64
		for v := a; v <= b; v++ {
			out = append(out, v)
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

// seedSpread summarises one quantity over seeds.
type seedSpread struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func spreadOf(v []float64) seedSpread {
	s := seedSpread{Mean: stat.Mean(v, nil), Min: math.Inf(1), Max: math.Inf(-1)}
	if len(v) > 1 {
		s.SD = stat.StdDev(v, nil)
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

// runFinal is what the summary reads of a run's metrics.json: null (a
// quantity the run does not have) stays nil.
type runFinal struct {
	Experiment string          `json:"experiment"`
	Algorithm  string          `json:"algorithm"`
	Final      json.RawMessage `json:"final"`
}

// summaryScalars are the final quantities summarised over seeds.
var summaryScalars = []string{"ebm_weight_mse", "held_out_ll", "max_rhat", "log_density_med_se"}

// writeSeedsSummary reads the runs' metrics.json and writes seeds.json in
// dir, printing the spread of the EBM's weights.
func writeSeedsSummary(dir string, seeds []uint64, runs []string, out io.Writer) error {
	sum := seedsSummary{Seeds: seeds, Runs: runs, Scalars: map[string]seedSpread{}}
	scalars := map[string][]float64{}
	var weights [][]float64
	for _, r := range runs {
		path := filepath.Join(r, "metrics.json")
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m runFinal
		var final map[string]*json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := json.Unmarshal(m.Final, &final); err != nil {
			return fmt.Errorf("%s: field \"final\": %w", path, err)
		}
		sum.Experiment, sum.Algorithm = m.Experiment, m.Algorithm
		sum.PerSeed = append(sum.PerSeed, m.Final)
		for _, name := range summaryScalars {
			var v *float64
			if raw := final[name]; raw != nil && json.Unmarshal(*raw, &v) == nil && v != nil {
				scalars[name] = append(scalars[name], *v)
			}
		}
		var w []float64
		if raw := final["ebm_weights"]; raw != nil {
			json.Unmarshal(*raw, &w)
		}
		for k, x := range w {
			if k == len(weights) {
				weights = append(weights, nil)
			}
			weights[k] = append(weights[k], x)
		}
	}
	for name, v := range scalars {
		if len(v) == len(runs) {
			sum.Scalars[name] = spreadOf(v)
		}
	}
	for k, w := range weights {
		if len(w) != len(runs) {
			break
		}
		s := spreadOf(w)
		sum.Weights = append(sum.Weights, s)
		fmt.Fprintf(out, "mode %d: EBM weight over %d seeds %.3f ± %.3f (min %.3f, max %.3f)\n", k+1, len(w), s.Mean, s.SD, s.Min, s.Max)
	}
	path := filepath.Join(dir, "seeds.json")
	if err := safefile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}); err != nil {
		return err
	}
	fmt.Fprintln(out, "summary in", path)
	return nil
}

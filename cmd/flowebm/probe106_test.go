package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Round 106 B1, B2, B4: grid_error and grid_missed added to a run that
// has neither, seconds set to ten hours, experiment renamed in
// metrics.json passed train --resume ("nothing to do"), whose advice
// reproduce --report gave; compare and --report showed the time. Every
// field is checked against what the run writes from its final checkpoint
// (the seconds against the training time it records), and written again.
func TestEveryMetricsFieldChecked(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	args := []string{"reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", out}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-ula")
	path := filepath.Join(run, "metrics.json")
	for _, c := range []struct {
		edit    func(map[string]any)
		want    string
		readers bool // --report and compare check it too
	}{
		{func(m map[string]any) { m["grid_error"] = 1.0 }, `field "grid_error" is not the run's (as its final checkpoint gives it)`, false},
		{func(m map[string]any) { m["grid_missed"] = map[string]any{"at": []float64{9, 9}, "log_excess": 50} }, `field "grid_missed" is not the run's`, false},
		{func(m map[string]any) { m["experiment"] = "four-modes" }, `field "experiment" is not the run's`, false},
		{func(m map[string]any) { m["seconds"] = 36000 }, `field "seconds" is 36000, but the run's final checkpoint records `, true},
	} {
		good := mustRead(t, path)
		editJSON(t, path, c.edit)
		if c.readers {
			if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("--report: exit %d, %s; want %q", code, stderr, c.want)
			}
			if _, stderr, _ := runCLI("compare", run, "--out", filepath.Join(out, "c")); !strings.Contains(stderr, c.want) {
				t.Errorf("compare: %s; want %q", stderr, c.want)
			}
		}
		_, stderr, code := runCLI("train", "--resume", run, "--quiet")
		if c.readers { // round 139 B1: the seconds have no third record: --resume writes neither over the other, and names both ways
			if code == 0 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "if metrics.json was, remove it and flowebm train --resume") {
				t.Errorf("--resume: exit %d, %s; want %q", code, stderr, c.want)
			}
			if err := os.Remove(path); err != nil { // the way on for an edited metrics.json
				t.Fatal(err)
			}
			_, stderr, code = runCLI("train", "--resume", run, "--quiet")
		} else if !strings.Contains(stderr, c.want) {
			t.Errorf("--resume: %s; want %q", stderr, c.want)
		}
		if code != 0 {
			t.Errorf("--resume: exit %d, %s", code, stderr)
		}
		var got, was map[string]any
		json.Unmarshal(mustRead(t, path), &got)
		json.Unmarshal(good, &was)
		delete(got, "seconds")
		delete(was, "seconds")
		if b1, b2 := jsonText(got), jsonText(was); b1 != b2 {
			t.Errorf("%s: metrics.json not written again as it was:\n%s\nwas\n%s", c.want, b1, b2)
		}
		if _, stderr, code := runCLI("reproduce", "--report", out); code != 0 {
			t.Errorf("--report after: exit %d, %s", code, stderr)
		}
	}
}

// Round 106 B3: seeds.json's per-seed rows, swapped or edited, were shown
// by reproduce --report as the runs' own. A row that is not its run's
// metrics.json's final evaluation is named and the set not shown; the
// advice (train --seeds again) writes seeds.json from the runs.
func TestReportSeedRowsCheckedAgainstRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "R")
	if _, stderr, code := runCLI("reproduce", "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "3", "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	set := filepath.Join(out, "seeds", "two-modes-ula")
	seeds := []string{"train", "--algorithm", "ula", "--iterations", "3", "--seeds", "2-3", "--quiet", "--out", set}
	if _, stderr, code := runCLI(seeds...); code != 0 {
		t.Fatal(stderr)
	}
	path := filepath.Join(set, "seeds.json")
	editJSON(t, path, func(m map[string]any) {
		rows := m["per_seed"].([]any)
		rows[0], rows[1] = rows[1], rows[0]
	})
	want := path + `: seed 2's evaluation, field "`
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "is not its run's ("+filepath.Join(set, "s2", "metrics.json")+"): edited, or rows swapped") {
		t.Errorf("swapped rows: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(seeds...); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("reproduce", "--report", out); code != 0 {
		t.Errorf("the advice followed: exit %d, %s", code, stderr)
	}
}

// Round 106 A3: train printed the sampler's weights with their MCSE and
// interval and no caveat where the R-hat of those chains was 7.64.
func TestTrainSamplerWeightsCaveat(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runCLI("train", "--algorithm", "ula", "--iterations", "60", "--out", filepath.Join(dir, "u"))
	if code != 0 {
		t.Fatal(stderr)
	}
	var rhat string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "max R-hat over dimensions") {
			rhat = l
		}
	}
	if !strings.Contains(stdout, ": those chains have not mixed, so these are not to be trusted") {
		t.Errorf("no caveat beside %q:\n%s", rhat, stdout)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

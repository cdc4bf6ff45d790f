package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for flowebm where reproduce starts
// it as a "train" subprocess (os.Executable), instead of running every
// test again.
//
// This package's tests take 5 to 9 minutes on 2 idle cores, close to go
// test's default limit of 10 (which a loaded machine passed: session 33);
// at that default (go test passes it to the binary as -test.timeout=10m0s,
// given or not), the limit is 30 minutes.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "train" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	if f := flag.Lookup("test.timeout"); f != nil && f.Value.String() == (10*time.Minute).String() {
		f.Value.Set("30m")
	}
	os.Exit(m.Run())
}

// seedMetrics is a seed run's metrics.json with the fields that the
// replacements (a field's JSON text, by name) change.
func seedMetrics(seed int, repl map[string]string) string {
	v := map[string]string{"experiment": `"two-modes"`, "algorithm": `"flowmc"`, "iterations": "20", "true_weights": "[0.333, 0.667]",
		"held_out_ll": "-1.5", "ebm_weights": fmt.Sprintf("[0.3%d, 0.6]", seed)}
	for k, x := range repl {
		v[k] = x
	}
	final := fmt.Sprintf(`{"iter": 20, "ebm_weight_mse": 0.001, "held_out_ll": %s, "max_rhat": 1.02, "log_density_med_se": null, "ebm_weights": %s}`, v["held_out_ll"], v["ebm_weights"])
	if x, ok := repl["final"]; ok {
		final = x
	}
	return fmt.Sprintf(`{"experiment": %s, "algorithm": %s, "seed": %d, "iterations": %s, "true_weights": %s, "final": %s}`,
		v["experiment"], v["algorithm"], seed, v["iterations"], v["true_weights"], final)
}

// The seeds summary refuses a metrics.json with a bad or missing final
// quantity, or of a run unlike the others, naming the file and field, and
// writes no seeds.json; quantities that are null in some run are left out.
func TestSeedsSummaryRobust(t *testing.T) {
	for _, c := range []struct {
		repl map[string]string
		want string
	}{
		{map[string]string{"held_out_ll": `"abc"`}, `s2/metrics.json: field "final.held_out_ll" is "abc", want a finite number`},
		{map[string]string{"held_out_ll": "1e400"}, `s2/metrics.json: field "final.held_out_ll" is 1e400`},
		{map[string]string{"ebm_weights": `"bad"`}, `s2/metrics.json: field "final.ebm_weights" is "bad"`},
		{map[string]string{"final": "null"}, `s2/metrics.json: field "final" is null`},
		{map[string]string{"final": "[]"}, `s2/metrics.json: field "final" is []`},
		{map[string]string{"final": "{}"}, `s2/metrics.json: field "final" is {}`},
		{map[string]string{"ebm_weights": "[1]"}, `s2/metrics.json: field "final.ebm_weights" has 1 weights, want 2`},
		{map[string]string{"ebm_weights": "[1]", "true_weights": "null"}, `s2/metrics.json: field "final.ebm_weights" has 1 modes, but 2 in`},
		{map[string]string{"experiment": `"four-modes"`}, `s2/metrics.json: field "experiment" is four-modes, but two-modes in`},
		{map[string]string{"algorithm": `"ula"`}, `field "algorithm" is ula, but flowmc in`},
		{map[string]string{"iterations": "40"}, `field "iterations" is 40, but 20 in`},
	} {
		dir := t.TempDir()
		runs := []string{filepath.Join(dir, "s1"), filepath.Join(dir, "s2")}
		for i, r := range runs {
			os.Mkdir(r, 0o755)
			m := seedMetrics(i+1, nil)
			if i == 1 {
				m = seedMetrics(i+1, c.repl)
			}
			os.WriteFile(filepath.Join(r, "metrics.json"), []byte(m), 0o644)
		}
		var out bytes.Buffer
		err := writeSeedsSummary(dir, []uint64{1, 2}, runs, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.repl, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "seeds.json")); err == nil {
			t.Errorf("%v: seeds.json written", c.repl)
		}
	}

	dir := t.TempDir()
	runs := []string{filepath.Join(dir, "s1"), filepath.Join(dir, "s2")}
	for i, r := range runs {
		os.Mkdir(r, 0o755)
		os.WriteFile(filepath.Join(r, "metrics.json"), []byte(seedMetrics(i+1, map[string]string{"held_out_ll": []string{"-1.5", "null"}[i]})), 0o644)
	}
	var out bytes.Buffer
	if err := writeSeedsSummary(dir, []uint64{1, 2}, runs, &out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "seeds.json"))
	if !strings.Contains(out.String(), "mode 2: EBM weight over 2 seeds: mean 0.600, sd ") || !strings.Contains(string(b), `"max_rhat"`) || strings.Contains(string(b), `"held_out_ll": {`) {
		t.Errorf("summary %s\n%s", out.String(), b)
	}
	if err := writeSeedsSummary(dir, []uint64{1, 3}, runs, &out); err == nil || !strings.Contains(err.Error(), `s2/metrics.json: field "seed" is 2, want 3`) {
		t.Errorf("a run of another seed: %v", err)
	}
}

// reproduceInto runs reproduce of experiment exp with algorithm alg for 2
// iterations (trainedRun's) into out.
func reproduceInto(out, exp, alg string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run([]string{"reproduce", "--experiments", exp, "--algorithms", alg, "--iterations", "2", "--jobs", "1", "--out", out}, &o, &e)
	return code, o.String(), e.String()
}

// keptRun copies the run src into out/runs/name and returns its folder.
func keptRun(t *testing.T, src, out, name string) string {
	t.Helper()
	dir := filepath.Join(out, "runs", name)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// reproduce keeps only runs of its experiment and algorithm with readable
// evaluations, refuses a second reproduce into its folder, and passes over
// a run another process trains without calling it failed.
func TestReproduceRobust(t *testing.T) {
	src := trainedRun(t) // two-modes, flowmc, seed 1, 2 iterations
	noReport := func(out string) {
		if _, err := os.Stat(filepath.Join(out, "report.md")); err == nil {
			t.Errorf("%s: report.md written", out)
		}
	}
	t.Run("other experiment or algorithm", func(t *testing.T) {
		for _, c := range []struct{ exp, alg, want string }{
			{"two-modes", "ula", `holds a run of experiment "two-modes" with algorithm "flowmc" (its config.json), not two-modes with ula`},
			{"four-modes", "flowmc", `holds a run of experiment "two-modes" with algorithm "flowmc" (its config.json), not four-modes with flowmc`},
		} {
			out := t.TempDir()
			keptRun(t, src, out, c.exp+"-"+c.alg)
			if code, _, stderr := reproduceInto(out, c.exp, c.alg); code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("%s-%s: exit %d, %q", c.exp, c.alg, code, stderr)
			}
			noReport(out)
		}
		out := t.TempDir()
		dir := keptRun(t, src, out, "two-modes-flowmc")
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.json"))
		os.WriteFile(filepath.Join(dir, "metrics.json"), bytes.Replace(b, []byte(`"algorithm": "flowmc"`), []byte(`"algorithm": "ula"`), 1), 0o644)
		// Since round 99 B1, reproduce checks a finished run through train
		// --resume, which writes another run's metrics.json again; --report,
		// which trains nothing, reads it as it is (probe 29), the report
		// marking it.
		if code, stdout, stderr := reproduceInto(out, "two-modes", "flowmc"); code != 0 || !strings.Contains(stdout, "two-modes-flowmc: already done; its damaged outputs written again from its final checkpoint: "+filepath.Join(dir, "metrics.json")+" is of seed 1, ula") {
			t.Errorf("metrics.json of ula: exit %d, %q, %q", code, stdout, stderr)
		}
		os.WriteFile(filepath.Join(dir, "metrics.json"), bytes.Replace(b, []byte(`"algorithm": "flowmc"`), []byte(`"algorithm": "ula"`), 1), 0o644)
		if _, stderr, code := runCLI("reproduce", "--report", out, "--experiments", "two-modes", "--algorithms", "flowmc"); code != 2 || !strings.Contains(stderr, filepath.Join(dir, "metrics.json")+` is of experiment "two-modes" with algorithm "ula", not two-modes with flowmc as the run's config.json: another run's file; flowebm train --resume `+dir+" writes the run's own again") { // round 105 B1: "move the run folder away"
			t.Errorf("--report, metrics.json of ula: exit %d, %q", code, stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(out, "report.md")); !strings.Contains(string(b), "| two-modes-flowmc | unreadable") {
			t.Errorf("the report does not mark the run:\n%s", b)
		}
	})
	t.Run("unreadable metrics.csv", func(t *testing.T) {
		b, _ := os.ReadFile(filepath.Join(src, "metrics.csv"))
		head, _, _ := strings.Cut(string(b), "\n")
		for _, c := range []struct{ csv, want string }{
			{"", "metrics.csv holds no evaluations, yet the run finished"},
			{head + "\n", "metrics.csv holds no evaluations, yet the run finished"},
			{"iter,a,b\n", `metrics.csv: header: column 2 is "a"`},
			{"x,y,z\n1,2,3\n", `metrics.csv: header: column 1 is "x", want "iter"`},
		} {
			out := t.TempDir()
			dir := keptRun(t, src, out, "two-modes-flowmc")
			path := filepath.Join(dir, "metrics.csv")
			os.WriteFile(path, []byte(c.csv), 0o644)
			// --report, which trains nothing, refuses it; reproduce writes
			// it again through train --resume (session 44, as it does a
			// damaged metrics.json since round 99 B1).
			if _, stderr, code := runCLI("reproduce", "--report", out, "--experiments", "two-modes", "--algorithms", "flowmc"); code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("--report, metrics.csv %q: exit %d, %q", c.csv, code, stderr)
			}
			if code, stdout, stderr := reproduceInto(out, "two-modes", "flowmc"); code != 0 || !strings.Contains(stdout, "two-modes-flowmc: already done; its damaged outputs written again from its final checkpoint: "+path) {
				t.Errorf("metrics.csv %q: exit %d, %q, %q", c.csv, code, stdout, stderr)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
				t.Errorf("metrics.csv %q written again as %q", c.csv, got)
			}
		}
	})
	t.Run("config.json deleted", func(t *testing.T) { // probe 61: no way out named
		out := t.TempDir()
		dir := keptRun(t, src, out, "two-modes-flowmc")
		os.Remove(filepath.Join(dir, ".lock"))
		os.Remove(filepath.Join(dir, "config.json"))
		want := "cp " + filepath.Join(dir, "checkpoint", "run-config.json") + " " + filepath.Join(dir, "config.json") + " restores it"
		if code, _, stderr := reproduceInto(out, "two-modes", "flowmc"); code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, %q", code, stderr)
		}
	})
	t.Run("locked output folder", func(t *testing.T) {
		out := t.TempDir()
		keptRun(t, src, out, "two-modes-flowmc")
		release, err := lockRun(out)
		if err != nil {
			t.Fatal(err)
		}
		code, _, stderr := reproduceInto(out, "two-modes", "flowmc")
		if code != 2 || !strings.Contains(stderr, "--out "+out+": another flowebm process is writing into this folder") {
			t.Errorf("exit %d, %q", code, stderr)
		}
		noReport(out)
		release()
		if code, stdout, stderr := reproduceInto(out, "two-modes", "flowmc"); code != 0 || !strings.Contains(stdout, "already done") {
			t.Errorf("unlocked: exit %d, %q, %q", code, stdout, stderr)
		}
	})
	t.Run("run trained by another process", func(t *testing.T) {
		out := t.TempDir()
		dir := filepath.Join(out, "runs", "two-modes-flowmc")
		release, err := lockRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		code, stdout, stderr := reproduceInto(out, "two-modes", "flowmc")
		// Probe 38: the times came after the status, which can end with
		// the run's own command ("… --resume DIR in 0s").
		if line, _, _ := strings.Cut(stdout, "\n"); !strings.HasPrefix(line, "[1/1, ") || !strings.HasSuffix(line, "(it holds "+filepath.Join(dir, ".lock")+")") {
			t.Errorf("status line %q: want the times first and the status last", line)
		}
		// Probe 29: the report called it "failed" (no metrics.json).
		if code != 2 || !strings.Contains(stdout, "two-modes-flowmc: skipped: ") || !strings.Contains(stderr, "1 of 1 runs failed or did not finish: two-modes-flowmc (in progress: starting: another process holds "+filepath.Join(dir, ".lock")+")") {
			t.Errorf("exit %d, %q, %q", code, stdout, stderr)
		}
		for _, f := range []string{"error.txt", "log.txt"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				t.Errorf("%s written in the run another process trains", f)
			}
		}
	})
}

// compare refuses an --out in an input run, and a failure after some
// figures leaves none of them.
func TestCompareRobust(t *testing.T) {
	a := trainedRun(t)
	for _, c := range []struct {
		out   string
		force bool
	}{{filepath.Join(a, "checkpoint"), false}, {a, true}, {filepath.Join(a, "new", "figs"), false}} {
		var stdout, stderr bytes.Buffer
		args := []string{"compare", a, "--out", c.out}
		if c.force {
			args = append(args, "--force")
		}
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--out "+c.out+" is inside the input run "+a+": give another folder") {
			t.Errorf("--out %s: exit %d, %q", c.out, code, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(a, "new")); err == nil {
		t.Error("compare made a folder in the input run")
	}

	// A folder in the way of the fourth figure: the first three are not
	// left behind.
	out := t.TempDir()
	os.MkdirAll(filepath.Join(out, "held-out-ll.svg", "x"), 0o755)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"compare", a, "--out", out, "--plot-format", "svg", "--force"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, %q", code, stderr.String())
	}
	if figs, _ := filepath.Glob(filepath.Join(out, "*.svg")); len(figs) != 1 {
		t.Errorf("figures left after the failure: %v (%s)", figs, stderr.String())
	}
}

// Probe 29: a run of other settings put in place while reproduce trained
// (a train --out into its folder) was reported as this reproduce's. It is
// read as --report reads it: marked, with an error status.
func TestReproduceRereadsRunsAfterTraining(t *testing.T) {
	other := trainedRun(t) // 2 iterations
	out := t.TempDir()
	dir := filepath.Join(out, "runs", "two-modes-flowmc")
	defer func() { testHook = nil }()
	testHook = func(p string) {
		if p == "reproduce-trained" {
			os.RemoveAll(dir)
			if err := os.CopyFS(dir, os.DirFS(other)); err != nil {
				t.Error(err)
			}
		}
	}
	var o, e bytes.Buffer
	code := run([]string{"reproduce", "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "3", "--jobs", "1", "--out", out}, &o, &e)
	if code != 2 || !strings.Contains(e.String(), "two-modes-flowmc (mismatched: "+filepath.Join(dir, "config.json")+" is of experiment \"two-modes\" with algorithm \"flowmc\", seed 1 and 2 iterations") {
		t.Errorf("exit %d: %s %s", code, o.String(), e.String())
	}
	if b, _ := os.ReadFile(filepath.Join(out, "report.md")); !strings.Contains(string(b), "| two-modes-flowmc | mismatched") {
		t.Errorf("the report does not mark the run:\n%s", b)
	}
}

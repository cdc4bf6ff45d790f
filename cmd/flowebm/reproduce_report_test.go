package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportOf runs reproduce --report dir with the extra flags and returns
// its exit status, stdout, stderr and report.md.
func reportOf(t *testing.T, dir string, extra ...string) (code int, stdout, stderr, report string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"reproduce", "--report", dir, "--experiments", "two-modes"}, extra...), &out, &errb)
	b, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	return code, out.String(), errb.String(), string(b)
}

// lacking returns the strings of want that s lacks.
func lacking(s string, want ...string) []string {
	var out []string
	for _, w := range want {
		if !strings.Contains(s, w) {
			out = append(out, w)
		}
	}
	return out
}

// --report on a partial set of runs (one missing, one with a truncated
// metrics.json, one stopped at its checkpoint) writes the report with
// the runs it has, marks the others and every table they leave partial,
// names the unreadable file and exits with an error; a run another
// process trains is "in progress", one whose log ends in a divergence is
// diverged (a result), a plan's line run twice does not make its run
// failed; and --plan over the set names the damaged file, then plans the
// runs left.
func TestReproduceReportPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four short runs")
	}
	out := t.TempDir()
	runDir := func(alg string) string { return filepath.Join(out, "runs", "two-modes-"+alg) }
	for _, a := range []string{"flowmc", "ula", "nt", "coopflow"} {
		var o, e bytes.Buffer
		if code := run([]string{"train", "--algorithm", a, "--iterations", "2", "--quiet", "--out", runDir(a)}, &o, &e); code != 0 {
			t.Fatalf("train %s: %s", a, e.String())
		}
		os.WriteFile(filepath.Join(runDir(a), "log.txt"), o.Bytes(), 0o644) // as a plan's line leaves it
	}
	// nt: a folder holding only the config.json that train writes as it
	// starts (killed before its first checkpoint), then removed below.
	ntConfig, _ := os.ReadFile(filepath.Join(runDir("nt"), "config.json"))
	os.RemoveAll(runDir("nt"))
	m := filepath.Join(runDir("ula"), "metrics.json")
	b, _ := os.ReadFile(m)
	os.WriteFile(m, b[:len(b)/2], 0o644)
	for _, f := range []string{"samples.npy", "metrics.json"} { // stopped at its last checkpoint
		os.Remove(filepath.Join(runDir("coopflow"), f))
	}
	os.MkdirAll(filepath.Join(out, "runs", "rings-nt"), 0o755) // not among --experiments

	code, stdout, stderr, report := reportOf(t, out)
	if code != 2 || !strings.Contains(stderr, "1 run folder(s) or seeds.json file(s) could not be read or hold runs of other settings; the report marks them: "+m+": ") {
		t.Errorf("exit %d, %q; want 2 and the truncated file named", code, stderr)
	}
	if miss := lacking(stdout, "report: "+filepath.Join(out, "report.md")+" (1 of 4 runs have a result)", "two-modes-nt: missing: no folder "+runDir("nt"),
		"two-modes-ula: unreadable: "+m, "two-modes-coopflow: incomplete: stopped (killed, or its time ran out) at its last checkpoint, iteration 2 of 2"); len(miss) > 0 {
		t.Errorf("stdout lacks %q:\n%s", miss, stdout)
	}
	// Probe 19: a run without a checkpoint read "stopped … at its last
	// checkpoint, no checkpoint yet".
	os.MkdirAll(runDir("nt"), 0o755)
	os.WriteFile(filepath.Join(runDir("nt"), "config.json"), ntConfig, 0o644)
	if _, stdout, _, _ := reportOf(t, out); !strings.Contains(stdout, "two-modes-nt: incomplete: stopped before its first checkpoint (of 2 iterations)") {
		t.Errorf("a run without a checkpoint: %s", stdout)
	}
	os.RemoveAll(runDir("nt"))
	if miss := lacking(report,
		"- Mode: 2 iterations per run (not comparable with the paper); seed 1 (seed and length read from the runs' config.json); built by `flowebm reproduce --report`",
		"- **Partial set**: 3 of 4 runs have no result",
		"  - `two-modes-ula`: unreadable: "+m+": ",
		"  - `two-modes-nt`: missing: no folder",
		"  - `two-modes-coopflow`: incomplete: ",
		"- Not in this report: `runs/rings-nt` (not among --experiments × --algorithms).",
		"**Partial set: 1 of 4 runs have a result** (no result: two-modes-ula unreadable, two-modes-nt missing, two-modes-coopflow incomplete (iteration 2 of 2)); its comparisons cover only those.",
		"| flowMC-EBM | 0.", "| ULA-EBM | unreadable |", "| NT-EBM | missing |", "| CoopFlow (incomplete; last checkpoint) | 0.",
		"| two-modes-nt | missing |", "| two-modes-ula | unreadable |", "| two-modes-coopflow | incomplete |",
		"two-modes, flowMC-EBM: top-right weight"); len(miss) > 0 {
		t.Errorf("report lacks %q:\n%s", miss, report)
	}
	if tmp, _ := filepath.Glob(filepath.Join(out, ".*tmp*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	if _, err := os.Stat(filepath.Join(runDir("coopflow"), "metrics.json")); err == nil {
		t.Error("--report finished a run")
	}

	// Another process trains coopflow: in progress, not incomplete.
	release, err := lockRun(runDir("coopflow"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, report = reportOf(t, out)
	release()
	if miss := lacking(report, "two-modes-coopflow in progress (iteration 2 of 2)", "`two-modes-coopflow`: in progress: training now (another process holds "); len(miss) > 0 {
		t.Errorf("a run in progress: report lacks %q:\n%s", miss, report)
	}

	// A plan's line run again refuses, saying so in the log: still
	// incomplete, not failed. A divergence the log ends with is a result.
	logf := filepath.Join(runDir("coopflow"), "log.txt")
	appendLine := func(line string) {
		f, _ := os.OpenFile(logf, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(line + "\n")
		f.Close()
	}
	appendLine("flowebm: " + runDir("coopflow") + " already holds a run: continue it with --resume " + runDir("coopflow") + ", or replace it with --force")
	if _, _, _, report = reportOf(t, out); !strings.Contains(report, "| two-modes-coopflow | incomplete |") {
		t.Errorf("a plan's line run twice: the run is not incomplete:\n%s", report)
	}
	appendLine("flowebm: iteration 2: loss NaN: training diverged; the last good checkpoint is in " + runDir("coopflow") + "/checkpoint")
	_, _, _, report = reportOf(t, out)
	if miss := lacking(report, "| CoopFlow (diverged; last checkpoint) | 0.", "| two-modes-coopflow | diverged |",
		"**Partial set: 2 of 4 runs have a result** (no result: two-modes-ula unreadable, two-modes-nt missing)"); len(miss) > 0 {
		t.Errorf("a diverged run: report lacks %q:\n%s", miss, report)
	}

	// Runs of another seed than asked are marked, not reported as its.
	code, _, stderr, report = reportOf(t, out, "--seed", "2")
	if code != 2 || !strings.Contains(stderr, filepath.Join(runDir("flowmc"), "config.json")+` is of experiment "two-modes" with algorithm "flowmc", seed 1 and 2 iterations, not two-modes with flowmc, seed 2 and 2 iterations`) ||
		!strings.Contains(report, "| flowMC-EBM | mismatched |") || !strings.Contains(report, "two-modes, flowMC-EBM: not checked: the run is mismatched") {
		t.Errorf("--seed 2: exit %d, %q\n%s", code, stderr, report)
	}

	// --plan resumes the finished run whose metrics.json is damaged (its
	// line writes it again from its checkpoint; round 112 B2: "move its
	// folder away", losing it); with its checkpoint damaged too, it names
	// the run and writes nothing; without it, it plans the runs left and
	// leaves out the diverged one.
	plan := filepath.Join(t.TempDir(), "plan.txt")
	var o, e bytes.Buffer
	args := []string{"reproduce", "--plan", plan, "--out", out, "--experiments", "two-modes", "--iterations", "2"}
	if code := run(args, &o, &e); code != 0 || !strings.Contains(string(mustRead(t, plan)), "--resume "+runDir("ula")+" ") {
		t.Errorf("--plan over a finished run's damaged metrics.json: exit %d, %q\n%s", code, e.String(), mustRead(t, plan))
	}
	os.Remove(plan)
	os.Truncate(filepath.Join(runDir("ula"), "checkpoint", "state.npz"), 100)
	e.Reset()
	if code := run(args, &o, &e); code != 2 || !strings.Contains(e.String(), m+": ") || !strings.Contains(e.String(), "its metrics cannot be read, and nor can its checkpoint (") || !strings.Contains(e.String(), "move its folder away to train it again") {
		t.Errorf("--plan over a damaged run: exit %d, %q", code, e.String())
	}
	if _, err := os.Stat(plan); err == nil {
		t.Error("a refused plan was written")
	}
	os.RemoveAll(runDir("ula"))
	o.Reset()
	if code := run(args, &o, &e); code != 0 || !strings.Contains(o.String(), "2 of 4 runs to train") ||
		!strings.Contains(o.String(), "left out: two-modes-coopflow (diverged: a result, not retried), two-modes-flowmc (finished)") {
		t.Fatalf("--plan: exit %d, %s%s", code, o.String(), e.String())
	}
	b, _ = os.ReadFile(plan)
	lines := strings.Split(string(b), "\n")
	if !strings.Contains(lines[0], "--algorithm nt ") || !strings.Contains(lines[1], "--algorithm ula ") || !strings.HasPrefix(lines[2], "# ") {
		t.Errorf("the plan of the runs left:\n%s", b)
	}
}

// A run whose log.txt ends in a divergence (a --plan's train command
// records it only there) is a result for reproduce too: kept, not trained
// again, its error.txt written from the log, and reported diverged.
func TestReproduceKeepsLoggedDivergence(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "runs", "two-modes-ula")
	os.MkdirAll(dir, 0o755)
	// The config.json that train writes as it starts (the run then
	// diverged before its first checkpoint): that of a run of the defaults.
	ref := filepath.Join(t.TempDir(), "ref")
	if _, stderr, status := runCLI("train", "--algorithm", "ula", "--iterations", "2", "--quiet", "--out", ref); status != 0 {
		t.Fatal(stderr)
	}
	b, _ := os.ReadFile(filepath.Join(ref, "config.json"))
	os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	msg := "flowebm: iteration 2: loss NaN: training diverged; it diverged before its first checkpoint (due after iteration 1): nothing to resume, start it again with other settings"
	os.WriteFile(filepath.Join(dir, "log.txt"), []byte("two-modes with ula, seed 1: …\n"+msg+"\n"), 0o644)
	code, stdout, stderr := reproduceInto(out, "two-modes", "ula")
	if code != 0 || !strings.Contains(stdout, "two-modes-ula: diverged before (see error.txt)") {
		t.Errorf("exit %d, %q, %q", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "error.txt")); strings.TrimSpace(string(b)) != msg {
		t.Errorf("error.txt %q, want the log's last line", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "report.md")); !strings.Contains(string(b), "| two-modes-ula | diverged |") {
		t.Errorf("report:\n%s", b)
	}
	// The same folder for --report, and for --plan, which leaves it out.
	os.Remove(filepath.Join(dir, "error.txt"))
	if code, _, stderr, report := reportOf(t, out, "--algorithms", "ula"); code != 0 || !strings.Contains(report, "| two-modes-ula | diverged |") || strings.Contains(report, "Partial") {
		t.Errorf("--report: exit %d, %q\n%s", code, stderr, report)
	}
	var o, e bytes.Buffer
	plan := filepath.Join(t.TempDir(), "plan.txt")
	if code := run([]string{"reproduce", "--plan", plan, "--out", out, "--experiments", "two-modes", "--algorithms", "ula", "--iterations", "2"}, &o, &e); code != 0 ||
		!strings.Contains(o.String(), "0 of 1 runs to train") || !strings.Contains(o.String(), "left out: two-modes-ula (diverged: a result, not retried)") {
		t.Errorf("--plan: exit %d, %s%s", code, o.String(), e.String())
	}
}

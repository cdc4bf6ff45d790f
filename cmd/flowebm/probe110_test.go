package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Round 109 B2, B3: a run's own records given to diagnose were refused for
// what they were not: metrics.csv for its first NaN (with CmdStan's
// advice), metrics.json "not a .npy file … rename it .csv". diagnose names
// them for what they are and gives the command that draws chains of the
// run's model.
func TestDiagnoseNamesRunRecords(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(filepath.Join(run, "checkpoint"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := "iter,loss,flow_ll,local_accept,global_accept,step_size,ebm_weight_mse,neg_mse,start_mse,log_density_med_se,max_rhat,max_rhat_classic,held_out_ll,log_z,log_z_se,is_ess,ebm_w0,ebm_w1,neg_w0,neg_w1,start_w0,start_w1\n"
	row := "1,0,NaN,1,NaN,0.01,0.02,0.006,0.006,9.2,NaN,NaN,-3.69,0.0005,3e-05,0.99,0.49,0.5,0.57,0.42,0.57,0.42\n"
	for name, text := range map[string]string{
		"metrics.csv":          head + row,
		"checkpoint/evals.csv": head + row,
		"metrics.json":         `{"algorithm": "ebm-mala"}`,
		"config.json":          `{"experiment": "two-modes"}`,
	} {
		p := filepath.Join(run, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runCLI("diagnose", p)
		want := "flowebm sample --model " + run + " --out chains.npy"
		if code == 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "CmdStan") || strings.Contains(stderr, "rename") {
			t.Errorf("diagnose %s: status %d, stderr %q; want a refusal naming %q", name, code, stderr, want)
		}
		what := "evaluations table"
		if strings.HasSuffix(name, ".json") {
			what = "JSON record"
		}
		if !strings.Contains(stderr, what) {
			t.Errorf("diagnose %s: %q does not say it is a %s", name, stderr, what)
		}
	}
	// A CSV of draws that happens to have an iter column is still read.
	p := filepath.Join(dir, "draws.csv")
	text := "chain,iter,mu\n"
	for c := 1; c <= 2; c++ {
		for i := 1; i <= 8; i++ {
			text += strings.Join([]string{string(rune('0' + c)), string(rune('0' + i)), "0." + string(rune('0'+(i*c)%10))}, ",") + "\n"
		}
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", p); code != 0 {
		t.Errorf("diagnose of draws with an iter column: %s", stderr)
	}
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
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

// Left from round 109: diagnose given a sample checkpoint read its first
// member (the chains' gradients) as draws. A finished run's checkpoint
// names the file its draws went to, an unfinished one the member of its
// draws so far; a training run's state.npz names sample --model RUN.
func TestDiagnoseNamesCheckpoints(t *testing.T) {
	dir := t.TempDir()
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	done, out := filepath.Join(dir, "done.npz"), filepath.Join(dir, "s.npy")
	if _, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--checkpoint", done, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI("diagnose", done); code == 0 || !strings.Contains(stderr, "sample checkpoint") || !strings.Contains(stderr, "the run went on to write every draw to "+out+": diagnose that file") {
		t.Errorf("diagnose of a finished run's checkpoint: status %d, %q; want a refusal naming %s", code, stderr, out)
	}
	part := filepath.Join(dir, "part.npz")
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", "sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "5", "--checkpoint", part, "--checkpoint-every", "15", "--out", filepath.Join(dir, "p.npy")); code != -1 {
		t.Fatalf("sample not killed at its checkpoint: %d %s", code, stderr)
	}
	_, stderr, code := runCLI("diagnose", part)
	if want := `the 10 draws per chain kept so far are member "draws"`; code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "flowebm sample --resume "+part+" finishes the run") {
		t.Errorf("diagnose of an unfinished run's checkpoint: status %d, %q; want %q", code, stderr, want)
	}
	if _, stderr, code := runCLI("diagnose", "--key", "draws", part); code != 0 {
		t.Errorf("diagnose --key draws, as the refusal says: %s", stderr)
	}
	state := filepath.Join(dir, "run", "checkpoint", "state.npz")
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := npz.WriteFile(state, map[string]*npy.Array{
		"bank":       {Shape: []int{6, 2}, Data: make([]float64, 12)},
		"data_order": {Shape: []int{6}, Data: make([]float64, 6)},
	}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("diagnose", state); code == 0 || !strings.Contains(stderr, "a training run's state") || !strings.Contains(stderr, "flowebm sample --model "+filepath.Join(dir, "run")) {
		t.Errorf("diagnose of a training run's state.npz: status %d, %q", code, stderr)
	}
}

// Round 110 A1: reproduce --report said of the runs a reproduce had
// trained in its own folder that they were trained outside reproduce. The
// folder records how its runs were trained (reproduce --jobs N, a plan's
// lines), and the report says so.
func TestReportSaysHowRunsShared(t *testing.T) {
	out := t.TempDir()
	args := []string{"reproduce", "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "1"}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatal(stderr)
	}
	want := "Time per iteration includes the evaluations, trained one run at a time (reproduce --jobs 1 trained them)."
	if b := mustRead(t, filepath.Join(out, "report.md")); !strings.Contains(string(b), want) {
		t.Errorf("reproduce's report lacks %q", want)
	}
	if code, _, stderr, report := reportOf(t, out, "--algorithms", "ula"); code != 0 || !strings.Contains(report, want) || strings.Contains(report, "outside reproduce") {
		t.Errorf("--report: exit %d, %s; report lacks %q", code, stderr, want)
	}
	// A plan written there, none of its lines run, changes nothing
	// (round 111 B3: counted); its nt line run by hand makes that run's
	// training other than the reproduce's.
	plan := filepath.Join(t.TempDir(), "plan.txt")
	if _, stderr, code := runCLI("reproduce", "--plan", plan, "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula,nt"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr, report := reportOf(t, out, "--algorithms", "ula"); code != 0 || !strings.Contains(report, want) {
		t.Errorf("--report after a plan none of whose lines ran: exit %d, %s; report lacks %q", code, stderr, want)
	}
	line := strings.Split(string(mustRead(t, plan)), "\n")[0]
	cmdline, _, _ := strings.Cut(line, " >> ")
	_, cmdline, _ = strings.Cut(cmdline, " && flowebm ")
	if !strings.Contains(cmdline, "--algorithm nt") {
		t.Fatalf("the plan's first line %q", line)
	}
	os.MkdirAll(filepath.Join(out, "runs", "two-modes-nt"), 0o755)
	if _, stderr, code := runCLI(strings.Fields(cmdline)...); code != 0 {
		t.Fatal(stderr)
	}
	want = "but the runs were trained by reproduce --jobs 1 (two-modes-ula); by a plan's lines or by hand (two-modes-nt), which may differ in how many runs shared a machine" // round 116 B1: each way names its runs
	if code, _, stderr, report := reportOf(t, out, "--algorithms", "ula,nt"); code != 0 || !strings.Contains(report, want) {
		t.Errorf("--report after a plan's line: exit %d, %s; report lacks %q", code, stderr, want)
	}
	// reproduce again with --jobs 2, training nothing: the Mode line
	// says this invocation's, the time note stays the runs' (round 111 B2).
	if _, stderr, code := runCLI("reproduce", "--out", out, "--iterations", "2", "--experiments", "two-modes", "--algorithms", "ula", "--jobs", "2"); code != 0 {
		t.Fatal(stderr)
	}
	b := string(mustRead(t, filepath.Join(out, "report.md")))
	if !strings.Contains(b, "up to 2 runs at a time; how each run was trained: the time note below") || !strings.Contains(b, "trained one run at a time (reproduce --jobs 1 trained them)") {
		t.Errorf("reproduce --jobs 2 over runs --jobs 1 trained:\n%s", b)
	}
}

// Round 110 B1: a checkpoint's window.json forged (a chain weight
// outside its interval, COMPLETE written again) made compare blame
// metrics.json and advise train --resume, which refuses the window. compare
// and reproduce --report name window.json and a way on that works; train
// --resume names it too, with the way on.
func TestForgedWindowNamed(t *testing.T) {
	out := t.TempDir()
	if _, stderr, code := runCLI("reproduce", "--out", out, "--iterations", "3", "--experiments", "two-modes", "--algorithms", "flowmc", "--jobs", "1"); code != 0 {
		t.Fatal(stderr)
	}
	run := filepath.Join(out, "runs", "two-modes-flowmc")
	ck := filepath.Join(run, "checkpoint")
	path := filepath.Join(ck, "window.json")
	editJSON(t, path, func(m map[string]any) {
		cw, ok := m["chain_weights"].([]any)
		if !ok || len(cw) == 0 {
			t.Fatalf("no chain weights in %v", m)
		}
		cw[0].(map[string]any)["weight"] = -0.1
	})
	if err := checkpoint.WriteManifest(ck); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("compare", run, "--out", filepath.Join(t.TempDir(), "c"))
	if code != 0 || !strings.Contains(stderr, path+`: field "chain_weights", mode 1`) || !strings.Contains(stderr, "restore the checkpoint from a copy, or train the run anew") || strings.Contains(stderr, "train --resume") {
		t.Errorf("compare: exit %d, %s", code, stderr)
	}
	// Since round 140 B1 every reader passes such a checkpoint over (its
	// window is checked with the folder), with this way on.
	if _, _, stderr, report := reportOf(t, out, "--algorithms", "flowmc"); !strings.Contains(stderr, path) || !strings.Contains(report, "cannot be checked against it, so they are not reported; restore the checkpoint from a copy, or train the run anew") {
		t.Errorf("--report: %s\n%s", stderr, report)
	}
	if _, stderr, code := runCLI("train", "--resume", run); code == 0 || !strings.Contains(stderr, "restore the checkpoint from a copy, or train the run anew") {
		t.Errorf("train --resume: exit %d, %s", code, stderr)
	}
}

// Round 110 B2: a finished run whose training state (state.npz) was cut
// could no longer be sampled, though its models' files were whole. sample
// (of the run or its checkpoint folder) and energy use the models, with a
// note naming the damage; train --resume still refuses.
func TestDamagedStateKeepsModels(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCLI("train", "--experiment", "two-modes", "--algorithm", "ula", "--iterations", "3", "--out", run, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	state := filepath.Join(run, "checkpoint", "state.npz")
	if err := os.Truncate(state, 100); err != nil {
		t.Fatal(err)
	}
	note := "the models' own files (spec.json, weights.npz) match the sums it records and are used"
	for _, model := range []string{run, filepath.Join(run, "checkpoint")} {
		_, stderr, code := runCLI("sample", "--model", model, "--chains", "4", "--steps", "8", "--out", filepath.Join(t.TempDir(), "s.npy"))
		if code != 0 || !strings.Contains(stderr, state+" does not match") || !strings.Contains(stderr, note) {
			t.Errorf("sample --model %s: exit %d, %s", model, code, stderr)
		}
	}
	x := filepath.Join(dir, "x.npy")
	if err := npy.WriteFile(x, &npy.Array{Shape: []int{2, 2}, Data: []float64{0, 0, 1, 1}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI("energy", "--model", run, "--points", x, "--out", filepath.Join(dir, "e.npy")); code != 0 || !strings.Contains(stderr, note) {
		t.Errorf("energy: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI("train", "--resume", run); code == 0 || !strings.Contains(stderr, state) {
		t.Errorf("train --resume of a damaged state: exit %d, %s", code, stderr)
	}
}

// Round 110 B3, B4: a sample checkpoint whose model changed, or whose
// member was edited, was refused with "the command that started it" (B4)
// or no way on (B3). Both print the command, from the flags the
// checkpoint records, which starts the run again; B3 also says to put the
// model back, naming its SHA-256.
func TestSampleCheckpointWayOnPrinted(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.onnx")
	orig := mustRead(t, "../../io/onnx/testdata/flows/bimodal_energy.onnx")
	if err := os.WriteFile(model, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	ck, out := filepath.Join(dir, "k.npz"), filepath.Join(dir, "s.npy")
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", "sample", "--model", model, "--chains", "4", "--steps", "20", "--warmup", "5", "--checkpoint", ck, "--checkpoint-every", "10", "--out", out); code != -1 {
		t.Fatalf("sample not killed at its checkpoint: %d %s", code, stderr)
	}
	again := "flowebm sample --chains 4 --checkpoint " + ck + " --checkpoint-every 10 --model " + model + " --out " + out + " --steps 20 --warmup 5 --force"
	edited := filepath.Join(dir, "e.npz")
	editCheckpointSums(t, ck, edited, func(a map[string]*npy.Array, _ map[string]any) { a["x"].Data[0] += 1e-9 }, false)
	if _, stderr, code := runCLI("sample", "--resume", edited); code == 0 || !strings.Contains(stderr, again) {
		t.Errorf("an edited member: exit %d, %s; want the way on %q", code, stderr, again)
	}
	other := mustRead(t, "../../io/onnx/testdata/edge/quartic_energy.onnx")
	if err := os.WriteFile(model, other, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI("sample", "--resume", ck)
	sum := sha256.Sum256(orig)
	if code == 0 || !strings.Contains(stderr, "put the one it started with back there to continue it (its SHA-256 was "+hex.EncodeToString(sum[:])+")") || !strings.Contains(stderr, again) {
		t.Errorf("a changed model: exit %d, %s", code, stderr)
	}
	// Followed, the way on starts the run again.
	if err := os.WriteFile(model, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(strings.TrimPrefix(again, "flowebm "))
	if _, stderr, code := runCLI(args...); code != 0 || !exists(out) {
		t.Errorf("the way on, followed: exit %d, %s", code, stderr)
	}
}

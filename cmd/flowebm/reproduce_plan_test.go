package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docsParallelExample returns the command lines of docs/reproducing.md's
// GNU parallel example (the first sh block after its heading).
func docsParallelExample(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/reproducing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n### GNU parallel\n")
	if ok {
		_, after, ok = strings.Cut(after, "```sh\n")
	}
	block, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("docs/reproducing.md has no sh block under ### GNU parallel")
	}
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "flowebm reproduce --plan ") || !strings.Contains(lines[1], "parallel") || !strings.HasPrefix(lines[2], "flowebm reproduce --report ") {
		t.Fatalf("docs/reproducing.md's GNU parallel example is not plan, parallel, report:\n%s", block)
	}
	return lines
}

// reportBody is report.md from its first section on, less the line that
// says how many runs shared the machine (reproduce knows, --report not).
func reportBody(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## ")
	if i < 0 {
		t.Fatalf("%s has no section:\n%s", path, s)
	}
	var keep []string
	for _, l := range strings.Split(s[i:], "\n") {
		if !strings.HasPrefix(l, "Time per iteration includes the evaluations") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// The GNU parallel example of docs/reproducing.md, run as written (the
// plan's commands run this test binary, which stands in for flowebm): the
// plan holds one complete train command per run, the runs train in
// parallel, and --report writes the report that reproduce writes for the
// same runs. The plan is then refused without --force, and written again
// with nothing left to train.
func TestReproducePlanParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three short runs")
	}
	lines := docsParallelExample(t)
	if _, err := exec.LookPath("parallel"); err != nil {
		t.Skip("GNU parallel is not installed (Debian: apt-get install parallel): docs/reproducing.md's example is not run")
	}
	bin, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	flowebm := func(line string, extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append(strings.Fields(strings.TrimPrefix(line, "flowebm ")), extra...), &out, &errb)
		return code, out.String(), errb.String()
	}

	// 1. The plan.
	if code, stdout, stderr := flowebm(lines[0], "--plan-binary", bin); code != 0 || !strings.Contains(stdout, "plan: plan.txt: 3 of 3 runs to train") {
		t.Fatalf("%s: exit %d, %s%s", lines[0], code, stdout, stderr)
	}
	b, err := os.ReadFile("plan.txt")
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, alg := range []string{"nt", "ula", "flowmc"} { // longest first: reproduce's order reversed
		dir := "runs/rp/runs/two-modes-" + alg
		want := "mkdir -p " + dir + " && " + shellQuote(bin) + " train --plot-format png --experiment two-modes --algorithm " + alg +
			" --seed 1 --out " + dir + " --iterations 10 >> " + dir + "/log.txt 2>&1"
		if len(plan) <= i || plan[i] != want {
			t.Errorf("plan line %d:\n%q\nwant\n%q", i+1, plan[min(i, len(plan)-1)], want)
		}
	}
	if len(plan) < 4 || strings.HasPrefix(plan[2], "#") || !strings.HasPrefix(plan[3], "# flowebm reproduce plan: the 3 lines above") {
		t.Errorf("the plan does not hold the 3 runs' lines then its notes:\n%s", b)
	}
	wantReport := "# Then build the report (a partial set is marked as such): " + shellQuote(bin) + strings.TrimPrefix(lines[2], "flowebm")
	if plan[len(plan)-1] != wantReport {
		t.Errorf("the plan's last line\n%q\nis not the report command of docs/reproducing.md\n%q", plan[len(plan)-1], wantReport)
	}
	for _, want := range []string{`# Slurm job array: sbatch --array=1-3 --wrap 'sed -n "${SLURM_ARRAY_TASK_ID}p" plan.txt | sh'`,
		`# Kubernetes Indexed Job (completions: 3): sh -c 'sed -n "$((JOB_COMPLETION_INDEX + 1))p" plan.txt | sh'`} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("the plan lacks %q:\n%s", want, b)
		}
	}

	// 2. GNU parallel, as the example says.
	cmd := exec.Command("sh", "-c", lines[1])
	if out, err := cmd.CombinedOutput(); err != nil {
		logs, _ := filepath.Glob("runs/rp/runs/*/log.txt")
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
		t.Fatalf("%s: %v\n%s", lines[1], err, out)
	}
	for _, alg := range []string{"flowmc", "ula", "nt"} {
		log, err := os.ReadFile("runs/rp/runs/two-modes-" + alg + "/log.txt")
		if err != nil || !strings.Contains(string(log), "outputs in runs/rp/runs/two-modes-"+alg) {
			t.Errorf("two-modes-%s's log.txt: %v\n%s", alg, err, log)
		}
	}

	// 3. The report, and reproduce's for the same runs (kept, not
	// retrained): the same sections and tables.
	code, stdout, stderr := flowebm(lines[2])
	if code != 0 || !strings.Contains(stdout, "report: runs/rp/report.md (3 of 3 runs have a result)") || strings.Contains(stdout, "partial") {
		t.Fatalf("%s: exit %d, %s%s", lines[2], code, stdout, stderr)
	}
	fromReport := reportBody(t, "runs/rp/report.md")
	head, _ := os.ReadFile("runs/rp/report.md")
	for _, want := range []string{"- Mode: 10 iterations per run (not comparable with the paper); seed 1; built by `flowebm reproduce --report`", "3 of 3 runs have a result"} {
		if !strings.Contains(string(head), want) {
			t.Errorf("the report's head lacks %q:\n%s", want, head)
		}
	}
	if strings.Contains(string(head), "Partial") || strings.Contains(string(head), "read from the runs' config.json") {
		t.Errorf("a complete set given by flags is marked partial, or its settings inferred:\n%s", head)
	}
	for _, f := range []string{"runs/rp/two-modes-weights.png", "runs/rp/runs/two-modes-nt/weights.png"} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"reproduce", "--out", "runs/rp", "--experiments", "two-modes", "--algorithms", "flowmc,ula,nt", "--iterations", "10"}, &out, &errb); code != 0 ||
		strings.Count(out.String(), "already done") != 3 {
		t.Fatalf("reproduce over the plan's runs: exit %d, %s%s", code, out.String(), errb.String())
	}
	if fromReproduce := reportBody(t, "runs/rp/report.md"); fromReproduce != fromReport {
		t.Errorf("--report's report differs from reproduce's for the same runs:\n--report:\n%s\nreproduce:\n%s", fromReport, fromReproduce)
	}

	// 4. The plan again: refused without --force (the file is kept), and
	// with it nothing is left to train.
	if code, _, stderr := flowebm(lines[0], "--plan-binary", bin); code != 2 || !strings.Contains(stderr, "--plan plan.txt exists: give another name, or replace it with --force") {
		t.Errorf("an existing plan: exit %d, %q", code, stderr)
	}
	if b2, _ := os.ReadFile("plan.txt"); !bytes.Equal(b, b2) {
		t.Error("a refused plan changed plan.txt")
	}
	if code, stdout, stderr := flowebm(lines[0], "--plan-binary", bin, "--force"); code != 0 || !strings.Contains(stdout, "0 of 3 runs to train") ||
		!strings.Contains(stdout, "left out: two-modes-nt (finished), two-modes-ula (finished), two-modes-flowmc (finished)") {
		t.Errorf("the plan of finished runs: exit %d, %s%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile("plan.txt"); !strings.HasPrefix(string(b), "# flowebm reproduce plan: nothing to train") {
		t.Errorf("the plan of finished runs:\n%s", b)
	}
}

// shellQuote's words reach a command as they were, whatever they hold.
func TestReproduceShellQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"runs/reproduce/runs/two-modes-flowmc", "runs/reproduce/runs/two-modes-flowmc"},
		{"--plot-format", "--plot-format"},
		{"", "''"},
		{"my runs", "'my runs'"},
		{"it's", `'it'\''s'`},
		{"x=y", "'x=y'"},
		{"$HOME", "'$HOME'"},
		{"~/runs", "'~/runs'"},
	} {
		if got := shellQuote(c.in); got != c.want {
			t.Errorf("shellQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	words := []string{"plain", "", "two words", "it's", `"double"`, "$HOME", "$(id)", "`id`", `back\slash`, "*", "?", "[a]", "~", "x=y", "-n", "a;b", "a|b", "a&b", "a>b", "!x", "#c", "tab\there", "é ü", "{a,b}", "%s"}
	out, err := exec.Command("sh", "-c", `printf '%s\n' `+shellJoin(words)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "\x00") != strings.Join(words, "\x00") {
		t.Errorf("sh read the words as\n%q\nwant\n%q", got, words)
	}
	// A first word NAME=VALUE would be an assignment: quoted, it is a command.
	if out, _ := exec.Command("sh", "-c", shellJoin([]string{"A=1", "true"})+" 2>&1; echo $?").Output(); strings.TrimSpace(string(out)) == "0" {
		t.Errorf("an executable named A=1 was taken for an assignment: %q", out)
	}
}

// --plan and --report refuse what they cannot do, naming the flag or file
// and what they want, and write nothing.
func TestReproducePlanFlags(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("plan.txt", []byte("mine\n"), 0o644)
	os.MkdirAll("noruns", 0o755)
	os.MkdirAll("out2", 0o755)
	os.MkdirAll("rp/runs", 0o755)
	os.MkdirAll("rp/seeds/s", 0o755)
	os.MkdirAll("folder.txt", 0o755)
	os.WriteFile("afile", nil, 0o644)
	os.MkdirAll("foreign", 0o755)
	os.WriteFile("foreign/report.md", []byte("# mine"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--plan", "p.txt", "--report", "rp"}, "--plan writes the commands that train the runs, --report reports runs already trained: give one"},
		{[]string{"--plan", "p.txt", "--jobs", "2"}, "--jobs is how many runs reproduce trains at once; with --plan or --report it trains none"},
		{[]string{"--report", "rp", "--jobs", "2"}, "--jobs is how many runs reproduce trains at once"},
		{[]string{"--plan-binary", "bin/flowebm"}, "--plan-binary names the executable of the commands that --plan writes: give it with --plan FILE"},
		{[]string{"--report", "rp", "--plan-binary", "x"}, "--plan-binary names the executable of the commands that --plan writes: drop it with --report"},
		{[]string{"--report", "rp", "--out", "x"}, "--out does not apply to --report DIR"},
		{[]string{"--report", "rp", "--force"}, "--force does not apply to --report DIR"},
		{[]string{"--report", "nowhere"}, "--report nowhere: no such folder: give the folder that reproduce or the commands of reproduce --plan trained into (its --out)"},
		{[]string{"--report", "noruns/../nowhere"}, "--report noruns/../nowhere: no such folder"}, // probe 37: "stat nowhere"
		{[]string{"--report", "afile"}, "--report afile is a file"},
		{[]string{"--report", "noruns"}, "--report noruns holds no runs/ folder: give the --out folder of reproduce or of reproduce --plan"},
		{[]string{"--report", "rp", "--iterations", "2", "--quick"}, "--iterations and --quick both set the runs' length"},
		{[]string{"--plan", "plan.txt", "--experiments", "two-modes"}, "--plan plan.txt exists: give another name, or replace it with --force"},
		{[]string{"--plan", "folder.txt", "--experiments", "two-modes"}, "--plan folder.txt is a folder: give a file name in it"},
		{[]string{"--plan", "no/such/plan.txt", "--experiments", "two-modes"}, "--plan no/such/plan.txt: the folder no/such does not exist"},
		{[]string{"--plan", "p.txt", "--experiments", "two-modes", "--out", "a\nb"}, `--out "a\nb" holds a control character ('\n'): the plan has one command per line`},
		{[]string{"--plan", "p.txt", "--experiments", "two-modes", "--plan-binary", "fl\rowebm"}, "--plan-binary \"fl\\rowebm\" holds a control character"},
		{[]string{"--plan", "p.txt", "--experiments", "three-modes"}, `--experiments three-modes: unknown experiment (known: 8-gaussians`},
		{[]string{"--plan", "p.txt", "--experiments", "two-modes", "--out", "foreign"}, "--out foreign holds report.md but no runs/ of an earlier reproduce: the report that --report builds after the plan would replace it"},
		{[]string{"--plan", "rp/report.md", "--experiments", "two-modes", "--out", "rp"}, "--plan rp/report.md is where --report writes its report (or a figure) in --out rp"},
		// Probe 19: --force wrote the plan over a seed set of --report.
		{[]string{"--plan", "rp/seeds/s/seeds.json", "--out", "rp", "--experiments", "two-modes", "--force"}, "--plan rp/seeds/s/seeds.json is inside rp/seeds, which --report reads"},
		// Probe 18: --force wrote the plan over the executable its lines run.
		{[]string{"--plan", "afile", "--plan-binary", "./afile", "--experiments", "two-modes", "--force"}, "--plan afile is the executable that its lines run (--plan-binary ./afile)"},
		// Round-12 probe: plans whose lines could never run.
		{[]string{"--plan", "out1", "--experiments", "two-modes", "--out", "out1"}, "--plan out1 is the folder out1 that the plan's lines make (--out out1)"},
		{[]string{"--plan", "out2/runs", "--experiments", "two-modes", "--out", "out2"}, "--plan out2/runs is the folder out2/runs that the plan's lines make"},
		{[]string{"--plan", "p.txt", "--experiments", "two-modes", "--iterations", "9223372036854775807"}, "--iterations 9223372036854775807: want a count from 1 to 1000000000"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"reproduce"}, c.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, %q, want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	if b, _ := os.ReadFile("plan.txt"); string(b) != "mine\n" {
		t.Errorf("plan.txt replaced: %q", b)
	}
	for _, f := range []string{"p.txt", "rp/report.md", "rp/.lock", "noruns/report.md"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s written by a refused command", f)
		}
	}
}

// A run stopped before its first checkpoint is started again (--force,
// as reproduce does); while another process trains it, its line only
// resumes it, never starting it over once that process has finished it.
func TestReproducePlanBusyRun(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "runs", "two-modes-flowmc")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"experiment": "two-modes", "seed": 1, "train": {"algorithm": "flowmc", "iterations": 2}}`), 0o644)
	plan := filepath.Join(t.TempDir(), "plan.txt")
	planLine := func() (string, string) {
		var o, e bytes.Buffer
		if code := run([]string{"reproduce", "--plan", plan, "--force", "--out", out, "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "2"}, &o, &e); code != 0 {
			t.Fatalf("exit %d, %s", code, e.String())
		}
		b, _ := os.ReadFile(plan)
		first, _, _ := strings.Cut(string(b), "\n")
		return first, o.String()
	}
	if line, _ := planLine(); !strings.HasSuffix(line, " train --plot-format png --experiment two-modes --algorithm flowmc --seed 1 --out "+shellQuote(dir)+" --force --iterations 2 >> "+shellQuote(dir+"/log.txt")+" 2>&1") {
		t.Errorf("a run stopped before its first checkpoint: %s", line)
	}
	release, err := lockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	line, stdout := planLine()
	if !strings.HasSuffix(line, " train --plot-format png --resume "+shellQuote(dir)+" >> "+shellQuote(dir+"/log.txt")+" 2>&1") || !strings.Contains(stdout, "training now (another process holds their folder): two-modes-flowmc") {
		t.Errorf("a run in progress: %s\n%s", line, stdout)
	}
}

// A working folder whose path holds a line break is written Go-quoted in
// the plan's comment, so that every line that is not a comment is a run
// (round-12 probe: it made an executable line).
func TestReproducePlanCommentQuotesFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nl\nrm -rf x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var out, errb bytes.Buffer
	if code := run([]string{"reproduce", "--plan", "plan.txt", "--experiments", "two-modes", "--algorithms", "flowmc", "--iterations", "10"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile("plan.txt")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !strings.HasPrefix(line, "#") {
			runs++
		}
	}
	if runs != 1 || !strings.Contains(string(b), `nl\nrm -rf x`) {
		t.Errorf("plan of one run has %d command lines:\n%s", runs, b)
	}
}

// Probe 18: --plan, which trains nothing, loaded MNIST and was refused by
// a login node's 4 GB ulimit -v. It checks that the image files are there
// without reading them: files that could not be read as images do not
// stop it (the machines that run its lines read them), a folder not given
// does.
func TestReproducePlanReadsNoImages(t *testing.T) {
	dir := unreadableMNIST(t)
	t.Setenv("FLOWEBM_CIFAR10", "")
	plan := filepath.Join(t.TempDir(), "plan.txt")
	var out, errb bytes.Buffer
	if code := run([]string{"reproduce", "--plan", plan, "--out", filepath.Join(t.TempDir(), "rp"), "--experiments", "mnist,mnist28", "--algorithms", "flowmc"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "2 of 2 runs to train") {
		t.Errorf("--plan over unread images: exit %d, %s%s", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := run([]string{"reproduce", "--plan", plan + "2", "--experiments", "cifar10"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "set FLOWEBM_CIFAR10=DIR") {
		t.Errorf("--plan without CIFAR-10's folder: exit %d, %s", code, errb.String())
	}
	os.Remove(filepath.Join(dir, "t10k-labels-idx1-ubyte"))
	errb.Reset()
	if code := run([]string{"reproduce", "--plan", plan + "3", "--experiments", "mnist", "--algorithms", "flowmc"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "t10k-labels-idx1-ubyte") {
		t.Errorf("--plan with a file missing: exit %d, %s", code, errb.String())
	}
}

// Probe 19: re-planning a folder that holds an image run read the images
// again for its default length and, failing, compared the run's 500
// iterations with 0. The length is known without them.
func TestReproducePlanKeptImageRun(t *testing.T) {
	unreadableMNIST(t)
	out := t.TempDir()
	run0 := filepath.Join(out, "runs", "mnist-flowmc")
	os.MkdirAll(run0, 0o755)
	b, err := os.ReadFile("../../docs/results/runs/mnist-flowmc/config.json") // a run of the defaults: 500 iterations
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(run0, "config.json"), b, 0o644)
	var so, se bytes.Buffer
	if code := run([]string{"reproduce", "--plan", filepath.Join(t.TempDir(), "p.txt"), "--out", out, "--experiments", "mnist", "--algorithms", "flowmc"}, &so, &se); code != 0 || !strings.Contains(so.String(), "1 of 1 runs to train") {
		t.Errorf("exit %d, %s%s", code, so.String(), se.String())
	}
}

// Probe 19: with the default --plan-binary (flowebm, found on PATH), --plan
// naming that executable with --force replaced it.
func TestReproducePlanNotOverPATHBinary(t *testing.T) {
	bin := t.TempDir()
	exe := filepath.Join(bin, "flowebm")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var so, se bytes.Buffer
	if code := run([]string{"reproduce", "--plan", exe, "--experiments", "two-modes", "--out", filepath.Join(t.TempDir(), "rp"), "--force"}, &so, &se); code != 2 || !strings.Contains(se.String(), "is the executable that its lines run (--plan-binary flowebm)") {
		t.Errorf("exit %d, %q", code, se.String())
	}
	if b, _ := os.ReadFile(exe); string(b) != "#!/bin/sh\n" {
		t.Errorf("the executable was replaced: %q", b)
	}
}

// Probe 20: a run folder holding a finished run's results without its
// samples.npy or checkpoint (docs/results keeps runs so) was trained again
// with --force, replacing them.
func TestReproduceKeepsResultsCopy(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "runs", "two-modes-flowmc")
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{"config.json", "metrics.json", "metrics.csv"} {
		b, err := os.ReadFile(filepath.Join("../../docs/results/runs/two-modes-flowmc", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "metrics.json"))
	var so, se bytes.Buffer
	code := run([]string{"reproduce", "--plan", filepath.Join(t.TempDir(), "p.txt"), "--out", out, "--experiments", "two-modes", "--algorithms", "flowmc"}, &so, &se)
	if code != 2 || !strings.Contains(se.String(), "holds a finished run's metrics.json but neither its samples.npy (written last) nor a checkpoint") {
		t.Errorf("--plan: exit %d, %s%s", code, so.String(), se.String())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "metrics.json")); !bytes.Equal(before, after) {
		t.Error("metrics.json changed")
	}
}

// unreadableMNIST is FLOWEBM_MNIST for the test: a folder holding MNIST's
// four file names, none of them an IDX file (read, they are refused).
func unreadableMNIST(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("not an IDX file"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("FLOWEBM_MNIST", dir)
	return dir
}

// Probe 31: with FLOWEBM_CIFAR10 naming a folder without the batches,
// --plan gave a bare stat error and advised setting the variable.
func TestPlanNamesTheImageFolderGiven(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FLOWEBM_CIFAR10", dir)
	_, stderr, code := runCLI("reproduce", "--plan", filepath.Join(t.TempDir(), "p.sh"), "--experiments", "cifar10")
	if want := dir + " lacks data_batch_1.bin"; code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "(the folder that FLOWEBM_CIFAR10 names)") || strings.Contains(stderr, "set FLOWEBM_CIFAR10") {
		t.Errorf("exit %d: %s; want %q", code, stderr, want)
	}
}

package training

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
)

// Epochs become iterations once the data are loaded: passes over the
// training rows (after the held-out split) at the batch size, with the
// decay schedule stretched and the scaling note retimed to match.
func TestPlanEpochsOnDataFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.csv")
	var b strings.Builder
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 1000; i++ {
		b.WriteString(ftoa(rng.NormFloat64()) + "," + ftoa(2*rng.NormFloat64()) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlan(Request{Data: &config.Data{File: path, HoldOut: 0.1}, Epochs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Config.Epochs != 3 {
		t.Fatalf("plan epochs %d, want 3", plan.Config.Epochs)
	}
	r, err := plan.Start(filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Trainer.Data().RawMatrix().Rows
	want := (3*rows + r.Config.Train.BatchSize - 1) / r.Config.Train.BatchSize // whole passes at least (probe 68 B4: rounded down)
	if rows != 900 || r.Config.Train.Iterations != want || want != 43 {
		t.Errorf("%d training rows, %d iterations; want 900 rows and ⌈3 × 900 / %d⌉ = 43 iterations", rows, r.Config.Train.Iterations, r.Config.Train.BatchSize)
	}
	// settings.Defaults decays every iterations/20: 2000/20 = 100, stretched.
	if got, w := r.Config.Train.EBMOptim.DecayEvery, 100*want/2000; got != w {
		t.Errorf("decay every %d, want %d", got, w)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, ftoa(float64(want))+" iterations instead of") || strings.Contains(notes, "2000 iterations instead of") {
		t.Errorf("notes not retimed to %d iterations:\n%s", want, notes)
	}
	// The run and its trainer share one configuration value.
	r.Trainer.Config.FlowSteps = 7
	if r.Config.Train.FlowSteps != 7 {
		t.Error("the trainer's configuration is a copy of the run's")
	}
}

// A request's experiment, algorithm and seed replace a configuration
// file's; what it leaves out keeps the file's.
func TestPlanOverridesConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, []byte(`{"experiment": "rings", "seed": 9, "train": {"algorithm": "ula", "iterations": 40}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Request{ConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Config; c.Experiment != "rings" || c.Seed != 9 || c.Train.Algorithm != algorithms.ULA || c.Train.Iterations != 40 {
		t.Errorf("file alone: %s %d %s %d, want rings 9 ula 40", c.Experiment, c.Seed, c.Train.Algorithm, c.Train.Iterations)
	}
	seed := uint64(4)
	p, err = NewPlan(Request{ConfigFile: path, Experiment: "two-modes", Algorithm: algorithms.NT, Seed: &seed, Iterations: 80})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Config; c.Experiment != "two-modes" || c.Seed != 4 || c.Train.Algorithm != algorithms.NT || c.Train.Iterations != 80 {
		t.Errorf("overridden: %s %d %s %d, want two-modes 4 nt 80", c.Experiment, c.Seed, c.Train.Algorithm, c.Train.Iterations)
	}
	for _, req := range []Request{{Iterations: 5, Epochs: 2}, {Epochs: -1}, {Experiment: "rings", Data: &config.Data{File: path}}} {
		if _, err := NewPlan(req); err == nil {
			t.Errorf("%+v accepted", req)
		}
	}
}

// A recorded checksum must be a SHA-256, and a configuration file's
// checksum is checked against its data file when the run starts (it was
// dropped before: a file's "abc" or another file's sum trained silently).
func TestDataChecksumRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	os.WriteFile(path, []byte("1,2\n3,4\n"), 0o644)
	dc := config.Data{File: path, SHA256: "abc"}
	if _, _, err := (&config.Run{Data: &dc}).LoadExperiment(rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), `data.sha256 "abc": want 64 hexadecimal digits`) {
		t.Errorf("data.sha256 %q: %v", "abc", err)
	}
	cfg := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(cfg, []byte(`{"data": {"file": "`+path+`", "sha256": "`+strings.Repeat("0", 64)+`"}, "train": {"iterations": 1}}`), 0o644)
	p, err := NewPlan(Request{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start(t.TempDir()); err == nil || !strings.Contains(err.Error(), "but data.sha256 records 0000") {
		t.Errorf("another file's checksum: %v", err)
	}
	// Upper-case hexadecimal digits are the same checksum.
	up := filepath.Join(t.TempDir(), "up.json")
	os.WriteFile(up, []byte(`{"data": {"file": "`+path+`", "sha256": "`+strings.ToUpper(sha256Of(t, path))+`"}, "train": {"iterations": 1}}`), 0o644)
	if p, err := NewPlan(Request{ConfigFile: up}); err != nil {
		t.Fatal(err)
	} else if _, err := p.Start(t.TempDir()); err != nil && strings.Contains(err.Error(), "sha256") {
		t.Errorf("upper-case checksum: %v", err)
	}
	// --data naming another file drops the checksum of the file's data.
	other := filepath.Join(t.TempDir(), "e.csv")
	os.WriteFile(other, []byte("1,2\n3,4\n"), 0o644)
	if p, err = NewPlan(Request{ConfigFile: cfg, Data: &config.Data{File: other}}); err != nil || p.Config.Data.SHA256 != "" {
		t.Errorf("--data with another file: checksum %q, %v", p.Config.Data.SHA256, err)
	}
}

// A configuration file that gives both epochs and train.iterations is
// refused (epochs won silently); data settings given without a data file
// adjust the file's data section; fields the algorithm does not use are
// named in the notes; too few training rows for a batch name data_size.
func TestPlanConfigFileChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	both := write("both.json", `{"epochs": 1, "train": {"iterations": 2}}`)
	if _, err := NewPlan(Request{ConfigFile: both}); err == nil || !strings.Contains(err.Error(), both+": epochs 1 and train.iterations 2: give one") {
		t.Errorf("epochs and iterations: %v", err)
	}
	data := write("d.csv", "1,2\n3,4\n")
	withData := write("data.json", `{"data": {"file": "`+data+`", "holdout": 0.2}, "train": {"iterations": 2}}`)
	p, err := NewPlan(Request{ConfigFile: withData, Data: &config.Data{HoldOut: 0.3}, DataGiven: []string{"holdout"}})
	if err != nil || p.Config.Data.File != data || p.Config.Data.HoldOut != 0.3 {
		t.Errorf("--holdout on the file's data: %+v, %v", p.Config.Data, err)
	}
	if _, err := NewPlan(Request{ConfigFile: write("nodata.json", `{"train": {"iterations": 2}}`), Data: &config.Data{HoldOut: 0.3}, DataGiven: []string{"holdout"}}); err == nil || !strings.Contains(err.Error(), "has no data section for holdout to adjust") {
		t.Errorf("--holdout without a data section: %v", err)
	}
	ula := write("ula.json", `{"train": {"algorithm": "ula", "iterations": 2, "flow_optim": {"lr": 0.1}}}`)
	if p, err := NewPlan(Request{ConfigFile: ula}); err != nil || !strings.Contains(strings.Join(p.Notes, "\n"), ula+": train.flow_optim not used by ula: ignored") {
		t.Errorf("unused fields: %v, %v", p.Notes, err)
	}
	keyed := write("key.json", `{"data": {"file": "`+data+`", "key": "x"}, "train": {"iterations": 2}}`)
	if p, err := NewPlan(Request{ConfigFile: keyed}); err != nil {
		t.Fatal(err)
	} else if _, err := p.Start(t.TempDir()); err == nil || !strings.Contains(err.Error(), keyed+`: data.key "x" selects a member of an .npz file`) {
		t.Errorf("data.key on a CSV: %v, want the configuration file named", err)
	}
	ulaFlow := write("ulaflow.json", `{"train": {"algorithm": "ula", "iterations": 2, "start": "flow"}}`)
	if p, err := NewPlan(Request{ConfigFile: ulaFlow}); err != nil {
		t.Fatal(err)
	} else if _, err := p.Start(t.TempDir()); err == nil || !strings.Contains(err.Error(), ulaFlow+`: algorithms: train.start "flow" needs a flow`) {
		t.Errorf("ula with a flow start: %v, want the file and train.start named", err)
	}
	small := write("small.json", `{"data_size": 10, "train": {"iterations": 2}}`)
	p, err = NewPlan(Request{ConfigFile: small})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start(t.TempDir()); err == nil || !strings.Contains(err.Error(), small+": algorithms: experiment two-modes gives 10 training rows (data_size 10): want at least 64, as each training batch takes train.batch_size = 64 rows") {
		t.Errorf("data_size 10: %v", err)
	}
}

// A run's start stops its flow pretraining when its context ends (a
// SIGINT during 1e9 pretraining steps was not honoured).
func TestStartStopsPretraining(t *testing.T) {
	cfg := smallConfig(t, algorithms.CoopFlow, 4)
	cfg.Train.Pretrain = algorithms.PretrainConfig{Steps: algorithms.MaxIterations, LR: 1e-2}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&Plan{Config: cfg}).StartContext(ctx, t.TempDir())
	if !errors.Is(err, algorithms.ErrInterrupted) || !strings.Contains(err.Error(), "pretraining, at step 0 of") {
		t.Errorf("StartContext with an ended context: %v, want an interruption at step 0", err)
	}
}

// sha256Of is the hexadecimal SHA-256 of the file at path.
func sha256Of(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

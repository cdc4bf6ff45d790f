package training

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
)

// Request is what a user asks of a new run (what the command line's flags
// say): an experiment or a data set, an algorithm, optionally a
// configuration file that replaces the defaults, and values that override
// both. A zero field is not given.
type Request struct {
	// Experiment names a built-in experiment (default two-modes); Data a
	// user's data set instead.
	Experiment string
	Data       *config.Data
	// DataGiven names the settings of Data given explicitly ("holdout",
	// "standardize", "modes", "drop_nonfinite"): with a configuration
	// file, the file's data section keeps the others.
	DataGiven []string
	// Algorithm is one of the four (default flowmc).
	Algorithm algorithms.Algorithm
	// ConfigFile, when set, holds the whole configuration: fields it
	// leaves out take the trainer's generic defaults, not the
	// experiment's. Experiment, Data and Algorithm given replace its own.
	ConfigFile string
	// Seed, when set, replaces the configuration's seed.
	Seed *uint64
	// Iterations, or Epochs (passes over the training rows), when
	// positive, set the run's length, stretching the learning-rate decay,
	// the averaging window and CoopFlow's frozen start in proportion.
	Iterations, Epochs int
	// DataDir, when set, is the folder of an image experiment's files
	// (the experiment's environment variable otherwise).
	DataDir string
	// FlowONNX, when set, starts the flow from one exported as ONNX
	// (config.Model.FlowONNX), replacing the RealNVP's settings and the
	// base σ of the defaults or the configuration file.
	FlowONNX *config.FlowFiles
}

// Plan is a new run's configuration resolved from a Request, with the
// notes that say where the paper's settings were scaled or completed.
type Plan struct {
	Config config.Run
	Notes  []string

	exp    *experiments.Experiment // the experiment the defaults were taken from, loaded
	source string                  // the configuration file, if any
}

// NewPlan resolves a request: the configuration file, or the paper's
// settings scaled for 2 CPU cores (Defaults, DataDefaults), then the
// request's overrides. The data are not read: Start does that once.
func NewPlan(req Request) (*Plan, error) {
	if req.Iterations < 0 || req.Epochs < 0 {
		return nil, fmt.Errorf("algorithms: iterations %d, epochs %d: want counts ≥ 0 (unset: the default)", req.Iterations, req.Epochs)
	}
	if req.Iterations > algorithms.MaxIterations {
		return nil, fmt.Errorf("algorithms: iterations %d, want at most %d", req.Iterations, algorithms.MaxIterations)
	}
	if req.Iterations > 0 && req.Epochs > 0 {
		return nil, fmt.Errorf("algorithms: give iterations or epochs, not both")
	}
	if req.Data != nil && req.Experiment != "" {
		return nil, fmt.Errorf("algorithms: give an experiment or a data set, not both")
	}
	p, err := req.base()
	if err != nil {
		return nil, err
	}
	cfg := &p.Config
	if req.Seed != nil {
		cfg.Seed = *req.Seed
	}
	if req.Iterations > 0 {
		cfg.Epochs = 0 // the flag replaces the file's length
		before := cfg.Train
		cfg.Train.SetIterations(req.Iterations)
		p.Notes = retime(p.Notes, before, cfg.Train)
	}
	if req.Epochs > 0 {
		cfg.Epochs = req.Epochs
	}
	if req.FlowONNX != nil {
		p.useFlow(*req.FlowONNX)
	}
	return p, nil
}

// useFlow starts the run's flow from ONNX files, dropping the settings
// they replace (with a note of those that were set).
func (p *Plan) useFlow(f config.FlowFiles) {
	m := &p.Config.Model
	if m.BaseSigma != 0 || m.FlowBlocks != 0 || m.FlowHidden != nil || m.FlowInit != "" || m.FlowMask != "" || m.Flow != "" || m.FlowBins != 0 || m.FlowTailBound != 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("the flow is read from %s: its architecture and base replace model.base_sigma and the flow settings (model.flow, the RealNVP's and the spline's)", f.Sample))
	}
	m.BaseSigma, m.FlowBlocks, m.FlowHidden, m.FlowInit, m.FlowMask = 0, 0, nil, "", ""
	m.Flow, m.FlowBins, m.FlowTailBound = "", 0, 0
	m.FlowONNX = &f
}

// base is the request's configuration file, with the request's
// experiment, data and algorithm, or the defaults for them.
func (req Request) base() (*Plan, error) {
	alg := req.Algorithm
	if req.ConfigFile == "" {
		if alg == "" {
			alg = algorithms.FlowMC
		}
		var p Plan
		var err error
		if req.Data != nil {
			p.Config, p.Notes, err = settings.DataDefaults(*req.Data, alg)
			return &p, err
		}
		if p.exp, err = experiments.ByNameIn(cmp.Or(req.Experiment, "two-modes"), req.DataDir); err != nil {
			return nil, err
		}
		p.Config, p.Notes, err = settings.DefaultsFor(p.exp, alg)
		return &p, err
	}
	return req.fromFile()
}

// fromFile is the request's configuration file with the request's
// experiment, data and algorithm.
func (req Request) fromFile() (*Plan, error) {
	cfg, err := config.Read(req.ConfigFile)
	if err != nil {
		return nil, err
	}
	var notes []string
	if cfg.Epochs > 0 && cfg.Train.Iterations > 0 && cfg.Build == nil { // a run's config.json records both
		return nil, fmt.Errorf("%s: epochs %d and train.iterations %d: give one (epochs sets the iterations)", req.ConfigFile, cfg.Epochs, cfg.Train.Iterations)
	}
	switch {
	case req.Data != nil && req.Data.File == "": // settings for the file's data
		if cfg.Data == nil {
			return nil, fmt.Errorf("%s has no data section for %s to adjust: give --data FILE", req.ConfigFile, strings.Join(req.DataGiven, ", "))
		}
		d := req.mergeData(cfg.Data)
		d.File, d.Key, d.SHA256 = cfg.Data.File, cfg.Data.Key, cfg.Data.SHA256
		cfg.Data = d
	case req.Data != nil:
		if cfg.DataSize > 0 && cfg.Data != nil && cfg.Data.File != "" && (!samePath(req.Data.File, cfg.Data.File) || req.Data.Key != cfg.Data.Key) {
			// The file's data_size counted another data set's rows (a
			// --print-config of another file): all of this one's are
			// used (probe 66: 180 of 1800 training rows, at exit 0).
			notes = append(notes, fmt.Sprintf("%s: data_size %d counted the rows of another data set: all training rows of %s are used", req.ConfigFile, cfg.DataSize, req.Data.File))
			cfg.DataSize = 0
		}
		cfg.Experiment, cfg.Data = "data", req.mergeData(cfg.Data)
	case req.Experiment != "":
		cfg.Experiment, cfg.Data = req.Experiment, nil
	case cfg.Experiment == "" && cfg.Data == nil:
		cfg.Experiment = "two-modes"
	}
	if req.Algorithm != "" || cfg.Train.Algorithm == "" {
		cfg.Train.Algorithm = cmp.Or(req.Algorithm, algorithms.FlowMC)
	}
	p := &Plan{Config: cfg, source: req.ConfigFile, Notes: notes}
	if unused := req.notDefault(cfg, cfg.Unused()); len(unused) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s: %s not used by %s: ignored", req.ConfigFile, strings.Join(unused, ", "), cfg.Train.Algorithm))
	}
	return p, nil
}

// notDefault is the fields of cfg, of those given, whose values differ
// from the defaults of its experiment (or data set) and algorithm at its
// length: a --print-config given back with --config holds the defaults of
// fields its algorithm does not use, which were noted as ignored (probe
// 67 A5).
func (req Request) notDefault(cfg config.Run, fields []string) []string {
	if len(fields) == 0 {
		return nil
	}
	d := Request{Experiment: cmp.Or(cfg.Experiment, "two-modes"), Algorithm: cfg.Train.Algorithm}
	if cfg.Data != nil {
		data := *cfg.Data
		d.Experiment, d.Data = "", &data
	}
	base, err := d.base()
	if err != nil {
		return fields
	}
	if cfg.Train.Iterations > 0 {
		base.Config.Train.SetIterations(cfg.Train.Iterations)
	}
	resolved := base.Config // as config.json records them
	if rt, err := resolved.Train.Resolved(); err == nil {
		resolved.Train = rt
	}
	var changed []string
	for _, f := range fields {
		if v := cfg.Field(f); !reflect.DeepEqual(v, base.Config.Field(f)) && !reflect.DeepEqual(v, resolved.Field(f)) {
			changed = append(changed, f)
		}
	}
	return changed
}

// mergeData is the request's data set with the settings it does not give
// taken from the configuration file's (file nil: none). The file's
// checksum of its data stays only with the same file, where Start checks
// it.
func (req Request) mergeData(file *config.Data) *config.Data {
	d := *req.Data
	if file == nil {
		return &d
	}
	given := func(s string) bool { return slices.Contains(req.DataGiven, s) }
	if !given("holdout") {
		d.HoldOut = file.HoldOut
	}
	if !given("standardize") {
		d.Standardize = file.Standardize
	}
	if !given("modes") {
		d.Modes = file.Modes
	}
	if samePath(d.Modes, file.Modes) {
		d.ModesSHA256 = file.ModesSHA256
	}
	if !given("drop_nonfinite") {
		d.DropNonFinite = file.DropNonFinite
	}
	if samePath(d.File, file.File) && d.Key == file.Key {
		d.SHA256 = file.SHA256
	}
	return &d
}

// Start builds the planned run, writing into dir: it loads the data once,
// turns epochs into iterations, fills every default and builds the models
// and the trainer. The run's Notes are the plan's (retimed where epochs
// changed the length) and the data's.
func (p *Plan) Start(dir string) (*Run, error) { return p.StartContext(context.Background(), dir) }

// StartContext is Start that stops the flow's pretraining when ctx ends
// (the error wraps algorithms.ErrInterrupted).
func (p *Plan) StartContext(ctx context.Context, dir string) (*Run, error) {
	cfg := p.newRunConfig()
	b := config.CurrentBuild()
	cfg.Build = &b
	exp := p.exp
	if exp != nil && (cfg.Data != nil || cfg.Experiment != exp.Name || cfg.DataDir != "") {
		// The configuration was changed since, or reads a data folder,
		// whose checksums loading records, as Resolved does (probe 28:
		// an mnist --data-dir run recorded none, and resumed on other
		// images).
		exp = nil
	}
	r, err := prepare(cfg, dir, from{exp: exp, notes: p.Notes, source: p.source})
	if err != nil {
		return nil, err
	}
	if err := r.Trainer.InitContext(ctx); err != nil {
		if errors.Is(err, algorithms.ErrInterrupted) {
			return nil, err
		}
		return nil, p.fromSource(err) // the start's fields come from the file
	}
	return r, nil
}

// retime rewrites the scaling note's iteration count, decay interval and
// averaging window after the run's length changed from before to after.
func retime(notes []string, before, after algorithms.TrainConfig) []string {
	type swap struct{ then, now string }
	var swaps []swap
	add := func(format string, then, now int) {
		if then != now {
			swaps = append(swaps, swap{fmt.Sprintf(format, then), fmt.Sprintf(format, now)})
		}
	}
	add("%d iterations instead of", before.Iterations, after.Iterations)
	add("decayed ×0.9 every %d iterations", before.EBMOptim.DecayEvery, after.EBMOptim.DecayEvery)
	add("moving average of its parameters over %d iterations", before.AverageWindow, after.AverageWindow)
	out := make([]string, len(notes))
	for i, n := range notes {
		for _, s := range swaps {
			n = strings.Replace(n, s.then, s.now, 1)
		}
		out[i] = n
	}
	return out
}

// samePath reports whether the paths a and b (relative ones to the working
// directory) name the same file path.
func samePath(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// Resolved is the plan's configuration with every default filled in, as
// the run it starts records it in config.json (but for the σ of a gaussian
// start, which the trainer takes from the models): the data are loaded to
// resolve it, as the run would.
func (p *Plan) Resolved() (config.Run, error) {
	cfg := p.newRunConfig()
	if err := cfg.Validate(); err != nil { // as a run's start (probe 59: grid_size 1 printed, then refused)
		return cfg, p.fromSource(err)
	}
	exp := p.exp
	if exp == nil || cfg.DataDir != "" { // a data folder: its checksums recorded, as the run records them
		var err error
		if exp, _, err = cfg.LoadExperiment(rand.New(rand.NewPCG(cfg.Seed, dataStream))); err != nil {
			return cfg, p.fromSource(err)
		}
	}
	if f := cfg.Model.FlowONNX; f != nil { // the flow files' checksums, as the run records them (round 101 B7: --print-config left them out)
		var err error
		if cfg.Model.FlowONNX, err = f.WithSums(); err != nil {
			return cfg, p.fromSource(err)
		}
	}
	return cfg, p.fromSource(cfg.Resolve(exp))
}

// newRunConfig is the plan's configuration for a new run: the memory
// limit a run was accepted under is the run's own to record, not a
// --config file's.
func (p *Plan) newRunConfig() config.Run {
	cfg := p.Config
	cfg.MemoryAccepted = nil
	return cfg
}

// fromSource names the plan's --config file, if any, in err (its fields
// are the file's), as a run's start does.
func (p *Plan) fromSource(err error) error { return sourced(p.source, p.Config.Data, err) }

// sourced is err naming the configuration file source ("" for none) that
// gave the run its fields, unless err is about a file that it names (see
// namesItsFile); a data or modes path that is not a regular file is named
// with its field (round 81 B10: "…/data is a folder" named neither the
// file nor the field).
func sourced(source string, d *config.Data, err error) error {
	if err == nil || source == "" {
		return err
	}
	var notFile *safefile.NotRegularError
	if d != nil && errors.As(err, &notFile) {
		for _, f := range []struct{ field, path string }{{"data.file", d.File}, {"data.modes", d.Modes}} {
			if f.path != "" && notFile.Path == f.path {
				return fmt.Errorf("%s: %s %w", source, f.field, err)
			}
		}
	}
	if namesItsFile(err, d) {
		return err
	}
	return fmt.Errorf("%s: %w", source, err)
}

// namesItsFile says whether err is about a file it names (a data or
// modes file that cannot be opened or read, or whose contents are
// refused), which the --config file did not cause (probe 65: "c.json:
// open …/nonexist.npy"; probe 66: "c.json: …/const.csv: column 2 is
// constant").
func namesItsFile(err error, d *config.Data) bool {
	if errors.As(err, new(*fs.PathError)) || errors.As(err, new(*data.FormatError)) {
		return true
	}
	return d != nil && (d.File != "" && strings.HasPrefix(err.Error(), d.File) || d.Modes != "" && strings.HasPrefix(err.Error(), d.Modes)) // the file's own message, not a field's naming it
}

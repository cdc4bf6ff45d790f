package algorithms

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gorgonia.org/tensor"
)

// ModelConfig describes the EBM and flow of a run.
type ModelConfig struct {
	// EBMHidden are the hidden widths of the energy MLP (default the toy
	// EBM's 32, 64, 64, 64) with LeakyReLU(EBMSlope) (default 0.05).
	EBMHidden []int   `json:"ebm_hidden,omitempty"`
	EBMSlope  float64 `json:"ebm_slope,omitempty"`
	// FlowBlocks and FlowHidden size the RealNVP (defaults 4 blocks of
	// [d, 16, d] couplings: App. C.2).
	FlowBlocks int   `json:"flow_blocks,omitempty"`
	FlowHidden []int `json:"flow_hidden,omitempty"`
	// FlowInit is the RealNVP's initialisation: "small" (default, the
	// paper's: every layer ~1e-6) or "small-last" (only the output layers
	// ~1e-6, hidden layers PyTorch's default). Both start at the identity;
	// see layers.RealNVP.Init.
	FlowInit string `json:"flow_init,omitempty"`
	// FlowMask is the couplings' mask: "half" (default, the reference
	// code's: first half of the coordinates, then the second) or
	// "checkerboard" (even, then odd coordinates); see layers.RealNVP.
	FlowMask string `json:"flow_mask,omitempty"`
	// BaseSigma is σ of the base ρ = N(0, σ²I); 0 means App. C.5's rule:
	// σ² = the largest per-dimension variance of the training data.
	BaseSigma float64 `json:"base_sigma,omitempty"`
	// Float32 builds float32 models (default float64).
	Float32 bool `json:"float32,omitempty"`
}

// DataConfig names a user's data set to train on instead of one of the
// paper's experiments (see experiments.DataSet).
type DataConfig struct {
	// File is the data: .npy (n, d), .npz (member Key, or the first) or
	// .csv (numeric columns, optional header row).
	File string `json:"file"`
	Key  string `json:"key,omitempty"`
	// HoldOut is the held-out fraction (default 0.1).
	HoldOut float64 `json:"holdout,omitempty"`
	// Standardize is "dimension" (default: each coordinate centred and
	// scaled to unit variance), "global" (centred, one common scale) or
	// "none".
	Standardize string `json:"standardize,omitempty"`
	// Modes optionally names a .npy/.npz/.csv file of k mode centres
	// (k, d) in the data's units, whose nearest-centre zones give mode
	// weights.
	Modes string `json:"modes,omitempty"`
	// DropNonFinite drops rows with NaN or Inf instead of refusing them.
	DropNonFinite bool `json:"drop_nonfinite,omitempty"`
	// SHA256 is the file's checksum, recorded when a run starts; a run
	// resumed on a file with another checksum (other data) is refused.
	SHA256 string `json:"sha256,omitempty"`
}

// checkSum records the data file's SHA-256, or checks it against the
// recorded one.
func (c *DataConfig) checkSum() error {
	if c.File == "" {
		return fmt.Errorf("data.file is empty: want the data file's path")
	}
	if c.SHA256 != "" && !sha256Hex.MatchString(c.SHA256) {
		return fmt.Errorf("data.sha256 %q: want 64 hexadecimal digits (the SHA-256 flowebm recorded), or leave it out", c.SHA256)
	}
	f, err := os.Open(c.File)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if c.SHA256 != "" && c.SHA256 != sum {
		return fmt.Errorf("%s: SHA-256 %s, but the run was started on a file with %s (field data.sha256 of config.json): other data would not continue the run; give the original file, or start a new run", c.File, sum[:16]+"…", c.SHA256[:min(16, len(c.SHA256))]+"…")
	}
	c.SHA256 = sum
	return nil
}

// Load reads the data set and builds its experiment; rng shuffles the rows
// before the held-out split. Arrays of images (n, C, H, W) are read as
// their flattened rows (n, C·H·W), the layout imported image models take.
func (c DataConfig) Load(rng *rand.Rand) (*experiments.Experiment, []string, error) {
	if c.Key != "" && strings.ToLower(filepath.Ext(c.File)) != ".npz" {
		return nil, nil, fmt.Errorf("data.key %q selects a member of an .npz file; %s is not one", c.Key, c.File)
	}
	if err := c.checkMemory(); err != nil {
		return nil, nil, err
	}
	x, _, err := data.ReadPoints(c.File, c.Key)
	if err != nil {
		return nil, nil, err
	}
	opt := experiments.DataSetOptions{HoldOut: c.HoldOut, Standardize: c.Standardize, DropNonFinite: c.DropNonFinite, ModesName: c.Modes}
	if opt.Columns, err = csvColumns(c.File); err != nil {
		return nil, nil, err
	}
	if c.Modes != "" {
		if opt.Modes, err = data.ReadMatrix(c.Modes, ""); err != nil {
			return nil, nil, err
		}
	}
	return experiments.DataSet(c.File, x, opt, rng)
}

// dataCopies is about how many float64 copies of a data set a run holds
// while it reads, splits and standardises it, with the garbage collector's
// headroom: measured peak resident memory above a run without data, 3.4×
// the data's float64 size for 4,000,000 × 4 and 4.8× for a 3 GiB array.
const dataCopies = 5

// checkMemory refuses, from the file's header alone, a data set whose
// copies would need more memory than a run may use (an .npz of a few
// megabytes can hold gigabytes).
func (c DataConfig) checkMemory() error {
	shape, err := data.PointsShape(c.File, c.Key)
	if err != nil || len(shape) == 0 {
		return err
	}
	n := 1.0
	for _, s := range shape {
		n *= float64(max(s, 0))
	}
	need, limit := n*8*dataCopies, memoryLimit()
	if need > limit {
		return fmt.Errorf("%s: the data set of shape %v needs about %s of memory (its float64 values held about %d times while it is read, split and standardised), over the limit of %s (%s, or half the machine's memory if less): train on a subset of the rows",
			c.File, shape, bytesString(need), dataCopies, bytesString(limit), bytesString(DefaultMemoryLimit))
	}
	return nil
}

// csvColumns returns the header's column names of a .csv file (nil for
// other formats or no header).
func csvColumns(path string) ([]string, error) {
	if !strings.EqualFold(filepath.Ext(path), ".csv") {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := data.CSVColumns(f)
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	return names, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// dataStream keys the random stream that draws or shuffles a run's data.
const dataStream = 0xda7a5e7

// RunConfig is a whole training job: experiment, seed, models, training and
// evaluation settings. It is what config files hold (JSON).
type RunConfig struct {
	// Experiment names one of the paper's experiments
	// (experiments.Names), or is "data" with Data set.
	Experiment string      `json:"experiment"`
	Data       *DataConfig `json:"data,omitempty"`
	Seed       uint64      `json:"seed"`
	DataSize   int         `json:"data_size,omitempty"` // training points (default 16384; for Data, all)
	// Epochs, when positive, sets train.iterations to this many passes
	// over the training points at train.batch_size (the schedules are
	// stretched as SetIterations does) once the data are loaded.
	Epochs int         `json:"epochs,omitempty"`
	Model  ModelConfig `json:"model"`
	Train  TrainConfig `json:"train"`
	// EvalEvery is the number of iterations between evaluations (default
	// Iterations/50); CheckpointEvery between checkpoints (default
	// Iterations/10).
	EvalEvery       int `json:"eval_every,omitempty"`
	CheckpointEvery int `json:"checkpoint_every,omitempty"`
	// GridSize is the 2D quadrature grid's points per side (default 200).
	GridSize int `json:"grid_size,omitempty"`
	// RHatChains chains (default 128, or the bank's size if smaller) of
	// the negative-sample kernel, run for RHatSteps steps (default the
	// iteration's MCMC steps, at least 8; for flowMC a step is a whole
	// cycle, see Trainer.SampleChains; Defaults keeps the paper's length
	// where it shortens the training chains) from the persistent bank, give the
	// mixing diagnostic of paper Table 2 every RHatEvery iterations
	// (default Iterations/10) and at the end.
	RHatChains int `json:"rhat_chains,omitempty"`
	RHatSteps  int `json:"rhat_steps,omitempty"`
	RHatEvery  int `json:"rhat_every,omitempty"`
	// LogZSamples is the number of draws of the importance-sampling
	// estimate of log Z behind the held-out log-likelihood (default 4096).
	LogZSamples int `json:"log_z_samples,omitempty"`
	// Build is the build that started the run (Go, BLAS, vector math: the
	// same seed gives the same numbers only with the same build). NewRun
	// sets it; it is recorded in the run's config.json, and a run resumed
	// on another build says so.
	Build *Build `json:"build,omitempty"`
}

// EBMWeight returns the EBM's weight of mode (or class) k, NaN where the
// evaluation has none.
func (e Eval) EBMWeight(k int) float64 {
	if k < len(e.EBMWeights) {
		return e.EBMWeights[k]
	}
	return math.NaN()
}

// Eval is one evaluation during training.
type Eval struct {
	Iter int `json:"iter"`
	// EBMWeights are the EBM's mode (or class) weights: by grid quadrature
	// in 2D, otherwise from the final states of the R-hat chains (so only
	// at evaluations with R-hat); NegWeights / StartWeights are those of
	// the negatives and chain starts of every iteration since the previous
	// evaluation, pooled (a single batch of 64 gives weights with a
	// standard error near 0.06, an MSE floor of about 3e-3), by
	// nearest-mode zones or the experiment's classifier; nil without modes
	// or classes.
	EBMWeights   []float64 `json:"ebm_weights,omitempty"`
	NegWeights   []float64 `json:"neg_weights,omitempty"`
	StartWeights []float64 `json:"start_weights,omitempty"`
	// EBMWeightMSE is the MSE of EBMWeights against the truth; NegMSE and
	// StartMSE are the MSEs of the negatives' and starts' weights against
	// the EBM's (paper Table 3).
	EBMWeightMSE float64 `json:"ebm_weight_mse"`
	NegMSE       float64 `json:"neg_mse"`
	StartMSE     float64 `json:"start_mse"`
	// LogDensityMedSE is median over held-out data of the squared error of
	// the EBM's normalised log-density (by grid quadrature) against the
	// exact one (paper Table 1; 2D only).
	LogDensityMedSE float64 `json:"log_density_med_se"`
	// MaxRHat and MaxRHatClassic are the largest rank-normalised split
	// R-hat and classic R-hat over dimensions of RHatChains fresh chains
	// started from the persistent bank (paper Table 2); NaN at evaluations
	// without the diagnostic.
	MaxRHat        float64 `json:"max_rhat"`
	MaxRHatClassic float64 `json:"max_rhat_classic"`
	// HeldOutLL is the mean log-likelihood of held-out data under the
	// normalised EBM, log Z estimated by importance sampling with the
	// companion flow as proposal (the tilt ρ for ula): not in the paper.
	// Compare with Run.TrueHeldOutLL, the same mean under the exact
	// density. For a user's data set it is in the data's units.
	HeldOutLL float64      `json:"held_out_ll"`
	LogZ      LogZEstimate `json:"log_z"`
	Stats     IterStats    `json:"stats"`
}

// Run is a training job on one of the paper's experiments, with its output
// folder.
type Run struct {
	Config     RunConfig
	Experiment *experiments.Experiment
	Trainer    *Trainer
	Dir        string
	Evals      []Eval
	// TrueHeldOutLL is the mean exact log-density of the held-out data
	// (the best HeldOutLL can be, up to Monte Carlo error).
	TrueHeldOutLL float64

	// Notes say what was done to a user's data set (rows dropped,
	// standardisation).
	Notes []string

	heldOut   *mat.Dense
	grid      *Grid
	gridZones []int // the experiment's zone of each grid point
	window    modeWindow
	// checkpointed: dir/checkpoint holds one of this run's checkpoints
	// (written by Checkpoint or resumed from).
	checkpointed bool
}

// modeWindow pools the zone counts of the negatives and chain starts over
// the iterations since the previous evaluation. It is part of a checkpoint
// (window.json) so that a resumed run reports what an uninterrupted one does.
type modeWindow struct {
	Neg   []float64 `json:"neg"`
	Start []float64 `json:"start"`
	// Evals is the number of evaluations in the checkpoint's evals.csv
	// (written by Checkpoint; absent from earlier checkpoints), so that
	// Resume can tell a truncated evals.csv from a run that has not
	// evaluated yet.
	Evals *int `json:"evals,omitempty"`
}

// countZones adds the zone counts of x to counts (allocated on first use).
func (r *Run) countZones(counts *[]float64, x *mat.Dense) {
	if x == nil {
		return
	}
	z := r.Experiment.Zones(x)
	if z == nil {
		return
	}
	if *counts == nil {
		*counts = make([]float64, len(r.Experiment.Weights))
	}
	for _, k := range z {
		(*counts)[k]++
	}
}

// weights normalises counts (nil when nothing was counted).
func weights(counts []float64) []float64 {
	total := floats.Sum(counts)
	if total == 0 {
		return nil
	}
	w := make([]float64, len(counts))
	floats.ScaleTo(w, 1/total, counts)
	return w
}

// NewRun builds the data, models and trainer of cfg, writing into dir (a
// plan without notes).
func NewRun(cfg RunConfig, dir string) (*Run, error) {
	return (&Plan{Config: cfg}).Start(dir)
}

// from is what a run is prepared from besides its configuration, each
// optional: its experiment already loaded, a checkpoint's models, and the
// notes of its configuration's resolution so far.
type from struct {
	exp    *experiments.Experiment
	models *checkpoint.Models
	notes  []string
	source string // the configuration's file, named in its errors ("": none)
}

// prepare loads the data of cfg (unless given), resolves its configuration
// into the one value that the run and its trainer share, checks the memory
// it needs, and builds the models (or takes those given) and the trainer.
// The notes given are retimed if epochs change the run's length.
func prepare(cfg RunConfig, dir string, given from) (*Run, error) {
	inFile := func(err error) error {
		if given.source == "" {
			return err
		}
		return fmt.Errorf("%s: %w", given.source, err)
	}
	if err := cfg.validate(); err != nil {
		return nil, inFile(err)
	}
	// The data come from their own stream so that the same seed gives the
	// same data whatever the algorithm.
	dataRNG := rand.New(rand.NewPCG(cfg.Seed, dataStream))
	exp, dataNotes := given.exp, []string(nil)
	if exp == nil {
		var err error
		if exp, dataNotes, err = cfg.loadExperiment(dataRNG); err != nil {
			return nil, err
		}
	}
	models, notes := given.models, given.notes
	if models != nil && models.EBM.Dim() != exp.Dim() {
		return nil, fmt.Errorf("algorithms: %s has %d dimensions, the checkpoint's models %d", cfg.source(), exp.Dim(), models.EBM.Dim())
	}
	before := cfg.Train
	if err := cfg.resolve(exp); err != nil {
		return nil, inFile(err)
	}
	r := &Run{Config: cfg, Experiment: exp, Dir: dir, Notes: append(retime(notes, before, cfg.Train), dataNotes...)}
	if err := r.build(dataRNG, models); err != nil {
		return nil, err
	}
	return r, nil
}

// source names the run's data: its experiment or its data file.
func (cfg RunConfig) source() string {
	if cfg.Data != nil {
		return "data file " + cfg.Data.File
	}
	return "experiment " + cfg.Experiment
}

// resolve turns --epochs into iterations and fills every default of the
// run and its trainer (but the σ of a gaussian start, which the trainer
// takes from the models), checking each field and the memory the run needs.
func (cfg *RunConfig) resolve(exp *experiments.Experiment) error {
	if cfg.DataSize == 0 {
		cfg.DataSize = 16384
	}
	if cfg.Epochs > 0 {
		rows := cfg.DataSize
		if exp.Kind != experiments.KindDensity {
			rows = min(rows, exp.TrainSet.RawMatrix().Rows)
		}
		batch := cfg.Train.BatchSize
		if batch == 0 {
			batch = 64 // the trainer's default
		}
		it := float64(cfg.Epochs) * float64(rows) / float64(max(1, batch))
		if it > MaxIterations {
			return fmt.Errorf("algorithms: epochs %d of %d rows at batch %d make %.3g iterations, want at most %d", cfg.Epochs, rows, batch, it, MaxIterations)
		}
		cfg.SetIterations(max(1, int(it)))
	}
	tc, err := cfg.Train.withDefaults()
	if err != nil {
		return err
	}
	cfg.Train = tc
	if err := cfg.fillDefaults(); err != nil {
		return err
	}
	if cfg.RHatChains > cfg.Train.Persistent && cfg.Train.PersistentChains() {
		return fmt.Errorf("algorithms: rhat_chains %d exceeds the persistent bank (%d)", cfg.RHatChains, cfg.Train.Persistent)
	}
	return cfg.checkRunMemory(exp)
}

// build splits the data, builds the models (unless given) and the trainer
// on r.Config.Train, and the evaluation's references.
func (r *Run) build(dataRNG *rand.Rand, models *checkpoint.Models) error {
	cfg, exp := &r.Config, r.Experiment
	d := exp.Dim()
	train, held := exp.Split(dataRNG, cfg.DataSize, 4096)
	var err error
	if models == nil {
		if models, err = cfg.newModels(d, train); err != nil {
			return err
		}
	}
	if r.Trainer, err = newTrainer(&cfg.Train, models.EBM, models.Flow, train, NewStreams(cfg.Seed)); err != nil {
		return err
	}
	r.heldOut = held
	r.TrueHeldOutLL = math.NaN()
	if exp.Kind == experiments.KindDensity {
		truth := make([]float64, held.RawMatrix().Rows)
		if err := exp.Target.LogDensity(held, truth); err != nil {
			return err
		}
		r.TrueHeldOutLL = stat.Mean(truth, nil)
	}
	if exp.Box > 0 && d == 2 {
		r.grid = NewGrid(exp.Box, cfg.GridSize)
	}
	return nil
}

// loadExperiment reads the run's data set (checking its checksum and
// that it has a batch's rows) or looks up its experiment; it sets
// cfg.Experiment and, for a data set, cfg.DataSize.
func (cfg *RunConfig) loadExperiment(dataRNG *rand.Rand) (*experiments.Experiment, []string, error) {
	var exp *experiments.Experiment
	var err error
	var notes []string
	if cfg.Data != nil {
		if cfg.Experiment != "data" && cfg.Experiment != "" {
			return nil, nil, fmt.Errorf("algorithms: experiment %q and a data file %s: give one", cfg.Experiment, cfg.Data.File)
		}
		cfg.Experiment = "data"
		if err := cfg.Data.checkSum(); err != nil {
			return nil, nil, err
		}
		if exp, notes, err = cfg.Data.Load(dataRNG); err != nil {
			return nil, nil, err
		}
		n, _ := exp.TrainSet.Dims()
		if cfg.DataSize == 0 {
			cfg.DataSize = n
		}
		if cfg.DataSize > n {
			return nil, nil, fmt.Errorf("data_size %d, but %s has %d training rows (after holding out %d): want at most %d, or 0 for all", cfg.DataSize, cfg.Data.File, n, exp.HeldOutSet.RawMatrix().Rows, n)
		}
		b := cfg.Train.BatchSize
		if b == 0 {
			b = 64 // the trainer's default
		}
		if n < b {
			return nil, nil, fmt.Errorf("%s: %d training rows (after holding out %d), fewer than the batch size %d: give more data or a smaller train.batch_size",
				cfg.Data.File, n, exp.HeldOutSet.RawMatrix().Rows, b)
		}
	} else if cfg.Experiment == "data" {
		return nil, nil, fmt.Errorf("algorithms: experiment \"data\" without a data section: give data.file (or --data FILE)")
	} else if exp, err = experiments.ByName(cfg.Experiment); err != nil {
		return nil, nil, err
	}
	return exp, notes, nil
}

// fillDefaults fills the run's own fields (grid, evaluation schedule,
// R-hat and log Z sizes) and checks them; the trainer's are filled.
func (cfg *RunConfig) fillDefaults() error {
	if cfg.GridSize == 0 {
		cfg.GridSize = 200
	}
	if cfg.Train.Iterations <= 0 {
		return fmt.Errorf("algorithms: train.iterations %d, want > 0", cfg.Train.Iterations)
	}
	if cfg.EvalEvery == 0 {
		cfg.EvalEvery = max(1, cfg.Train.Iterations/50)
	}
	if cfg.CheckpointEvery == 0 {
		cfg.CheckpointEvery = max(1, cfg.Train.Iterations/10)
	}
	if cfg.RHatChains == 0 {
		cfg.RHatChains = 128
		if cfg.Train.Persistent > 0 {
			cfg.RHatChains = min(128, cfg.Train.Persistent)
		}
	}
	if cfg.RHatEvery == 0 {
		cfg.RHatEvery = max(1, cfg.Train.Iterations/10)
	}
	if cfg.LogZSamples == 0 {
		cfg.LogZSamples = 4096
	}
	if cfg.RHatSteps == 0 {
		cfg.RHatSteps = cfg.Train.rhatSteps()
	}
	if cfg.RHatChains < 2 || (cfg.RHatSteps != 0 && cfg.RHatSteps < 4) || cfg.LogZSamples < 2 {
		return fmt.Errorf("algorithms: rhat_chains %d (want ≥ 2), rhat_steps %d (want ≥ 4), log_z_samples %d (want ≥ 2)", cfg.RHatChains, cfg.RHatSteps, cfg.LogZSamples)
	}
	return nil
}

// checkRunMemory bounds the memory of the resolved run cfg before anything
// is allocated.
func (cfg RunConfig) checkRunMemory(exp *experiments.Experiment) error {
	est := cfg
	if exp.Kind != experiments.KindDensity {
		// A data set's run trains on its rows, at most data_size.
		est.DataSize = min(est.DataSize, exp.TrainSet.RawMatrix().Rows)
	}
	return checkMemory(est.memTerms(cfg.Train, exp.Dim()))
}

// newModels builds the run's untrained EBM (E ≡ 0, the base N(0, σ² I)
// with σ from the model configuration or App. C.5's rule on the training
// data) and flow (the identity RealNVP).
func (cfg RunConfig) newModels(d int, train *mat.Dense) (*checkpoint.Models, error) {
	m := cfg.Model
	sigma := m.BaseSigma
	if sigma == 0 {
		v := 0.0
		for j := 0; j < d; j++ {
			v = max(v, stat.Variance(mat.Col(nil, j, train), nil))
		}
		sigma = math.Sqrt(v)
	}
	base := layers.NewIsotropic(d, sigma)
	hidden := m.EBMHidden
	if hidden == nil {
		hidden = []int{32, 64, 64, 64}
	}
	slope := m.EBMSlope
	if slope == 0 {
		slope = 0.05
	}
	net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: append(append([]int{d}, hidden...), 1),
		Hidden: layers.LeakyReLU(slope), Layout: layers.Sequential, LastWeightInit: layers.Zeros, LastBiasInit: layers.Zeros}}
	dt := tensor.Float64
	if m.Float32 {
		dt = tensor.Float32
	}
	initRNG := rand.New(rand.NewPCG(cfg.Seed, 0x3d31))
	ebm, err := graph.NewEBM(net, &base, dt, initRNG)
	if err != nil {
		return nil, err
	}
	blocks, fh := m.FlowBlocks, m.FlowHidden
	if blocks == 0 {
		blocks = 4
	}
	if fh == nil {
		fh = []int{16}
	}
	flow, err := graph.NewFlow(layers.RealNVP{Dim: d, Blocks: blocks, Hidden: fh, Init: cfg.Model.FlowInit, Mask: cfg.Model.FlowMask}, base, dt, initRNG)
	if err != nil {
		return nil, err
	}
	return &checkpoint.Models{EBM: ebm, Flow: flow}, nil
}

// Grid returns the last evaluation's normalised EBM density grid (nil in
// more than 2 dimensions or before the first evaluation).
func (r *Run) Grid() *Grid { return r.grid }

// Evaluate computes the metrics at the current iteration and appends them
// to Evals.
// With Train.AverageWindow set, the averaged EBM is evaluated.
func (r *Run) Evaluate(st IterStats) (ev Eval, err error) {
	err = r.Trainer.WithAveraged(func() error {
		ev, err = r.evaluate(st)
		return err
	})
	return ev, err
}

func (r *Run) evaluate(st IterStats) (Eval, error) {
	ev := Eval{Iter: r.Trainer.Iter, Stats: st, EBMWeightMSE: math.NaN(), NegMSE: math.NaN(), StartMSE: math.NaN(), LogDensityMedSE: math.NaN(),
		MaxRHat: math.NaN(), MaxRHatClassic: math.NaN()}
	exp := r.Experiment
	// The diagnostics draw from their own streams (one each), keyed by the
	// iteration, so that they change nothing in training, do not depend on
	// each other, and a resumed run repeats them exactly.
	if ev.Iter%r.Config.RHatEvery == 0 || ev.Iter == r.Config.Train.Iterations {
		if err := r.mixing(rand.New(rand.NewPCG(r.Config.Seed^0xe7a1, uint64(ev.Iter))), &ev); err != nil {
			return ev, err
		}
	}
	if err := r.heldOutLL(rand.New(rand.NewPCG(r.Config.Seed^0x11e1, uint64(ev.Iter))), &ev); err != nil {
		return ev, err
	}
	if r.grid != nil {
		if err := r.grid.Fill(r.Trainer.EBM.LogDensity); err != nil {
			return ev, err
		}
		if exp.Kind == experiments.KindDensity {
			truth := make([]float64, r.heldOut.RawMatrix().Rows)
			if err := exp.Target.LogDensity(r.heldOut, truth); err != nil {
				return ev, err
			}
			ev.LogDensityMedSE = MedianSquaredError(r.grid.LogDensityAt(r.heldOut), truth)
		}
	}
	if exp.Weights != nil {
		if r.grid != nil && exp.Modes != nil {
			if r.gridZones == nil {
				r.gridZones = exp.Zones(r.grid.Points)
			}
			ev.EBMWeights = r.grid.ZoneWeights(r.gridZones, len(exp.Weights))
			ev.EBMWeightMSE = diagnostics.WeightMSE(ev.EBMWeights, exp.Weights)
		}
		ev.NegWeights, ev.StartWeights = weights(r.window.Neg), weights(r.window.Start)
		if ev.NegWeights == nil && r.Trainer.Negatives() != nil {
			// No iteration since the previous evaluation was counted (an
			// evaluation outside Train): the last batch alone.
			ev.NegWeights = exp.Weigh(r.Trainer.Negatives())
			ev.StartWeights = exp.Weigh(r.Trainer.Starts())
		}
		r.window = modeWindow{}
		if ev.NegWeights != nil {
			if ev.EBMWeights != nil {
				ev.NegMSE = diagnostics.WeightMSE(ev.NegWeights, ev.EBMWeights)
				ev.StartMSE = diagnostics.WeightMSE(ev.StartWeights, ev.EBMWeights)
			}
		}
	}
	r.Evals = append(r.Evals, ev)
	return ev, nil
}

// mixing fills the R-hat diagnostics of ev. Chains that left the reals
// (a diverging sampler) give +Inf.
func (r *Run) mixing(rng *rand.Rand, ev *Eval) error {
	c := r.Config
	d := r.Experiment.Dim()
	draws, err := r.Trainer.SampleChains(rng, c.RHatChains, c.RHatSteps)
	if err != nil {
		return err
	}
	if r.grid == nil && r.Experiment.Weights != nil {
		// Without a grid, the EBM's weights are estimated from the final
		// states of these chains.
		last := mat.NewDense(c.RHatChains, d, nil)
		for ch := 0; ch < c.RHatChains; ch++ {
			last.SetRow(ch, draws[((ch+1)*c.RHatSteps-1)*d:(ch+1)*c.RHatSteps*d])
		}
		ev.EBMWeights = r.Experiment.Weigh(last)
		ev.EBMWeightMSE = diagnostics.WeightMSE(ev.EBMWeights, r.Experiment.Weights)
	}
	sum, err := diagnostics.Summarize(draws, c.RHatChains, c.RHatSteps, d)
	if err != nil {
		ev.MaxRHat, ev.MaxRHatClassic = math.Inf(1), math.Inf(1)
		return nil
	}
	ev.MaxRHat, ev.MaxRHatClassic = math.Inf(-1), math.Inf(-1)
	for _, s := range sum {
		ev.MaxRHat = max(ev.MaxRHat, s.RHat)
		ev.MaxRHatClassic = max(ev.MaxRHatClassic, s.RHatClassic)
	}
	return nil
}

// heldOutLL fills the held-out log-likelihood of ev.
func (r *Run) heldOutLL(rng *rand.Rand, ev *Eval) error {
	ebm := r.Trainer.EBM
	var q samplers.Proposal = r.Trainer.Flow
	if r.Trainer.Flow == nil {
		if ebm.Tilt == nil {
			ev.HeldOutLL, ev.LogZ = math.NaN(), LogZEstimate{LogZ: math.NaN(), SE: math.NaN(), ESS: math.NaN()}
			return nil
		}
		g, err := samplers.NewNormal(make([]float64, ebm.Dim()), diagCov(ebm.Tilt.Sigma))
		if err != nil {
			return err
		}
		q = g
	}
	est, err := EstimateLogZ(ebm.LogDensity, q, rng, r.Config.LogZSamples)
	if err != nil {
		return err
	}
	logp := make([]float64, r.heldOut.RawMatrix().Rows)
	if err := ebm.LogDensity(r.heldOut, logp); err != nil {
		return err
	}
	ev.LogZ = est
	ev.HeldOutLL = stat.Mean(logp, nil) - est.LogZ
	if sc := r.Experiment.Scaling; sc != nil {
		// In the data's units: p_x(x) = p_z(z) / Π scale.
		ev.HeldOutLL -= sc.LogDet()
	}
	return nil
}

func diagCov(sigma []float64) *mat.SymDense {
	c := mat.NewSymDense(len(sigma), nil)
	for i, s := range sigma {
		c.SetSym(i, i, s*s)
	}
	return c
}

// Train runs the remaining iterations: it evaluates every EvalEvery
// iterations and at the end, and every CheckpointEvery iterations and at
// the end writes the checkpoint and metrics.csv. progress, if not nil, is
// called after every iteration with the iteration count. A diverged run
// returns an error wrapping ErrDiverged that names the last good
// checkpoint.
func (r *Run) Train(progress func(iter int)) error {
	return r.TrainContext(context.Background(), progress)
}

// ErrInterrupted is returned (wrapped) by TrainContext when its context
// ends before the run does.
var ErrInterrupted = errors.New("training interrupted")

// TrainContext is Train that stops between iterations when ctx ends (the
// command line's SIGINT/SIGTERM): the iteration under way finishes, a
// checkpoint of the run so far is written (resuming from it reaches the
// same result as an uninterrupted run) and the error wraps ErrInterrupted.
func (r *Run) TrainContext(ctx context.Context, progress func(iter int)) error {
	cfg := r.Config
	total := cfg.Train.Iterations
	if r.Trainer.Iter >= total {
		return r.finishResumed()
	}
	for r.Trainer.Iter < total {
		if ctx.Err() != nil {
			return r.interrupted()
		}
		st, err := r.Step()
		if err != nil {
			if errors.Is(err, ErrDiverged) {
				if !r.checkpointed {
					return fmt.Errorf("%w; no checkpoint was written yet (the first is due at iteration %d)", err, min(cfg.CheckpointEvery, total))
				}
				return fmt.Errorf("%w; the last good checkpoint is in %s", err, filepath.Join(r.Dir, checkpointName))
			}
			return err
		}
		it := r.Trainer.Iter
		if it%cfg.EvalEvery == 0 || it == total {
			if _, err := r.Evaluate(st); err != nil {
				return err
			}
		}
		if it%cfg.CheckpointEvery == 0 || it == total {
			if err := r.Checkpoint(); err != nil {
				return err
			}
			if err := WriteEvalsCSV(filepath.Join(r.Dir, "metrics.csv"), r.Evals, len(r.Experiment.Weights)); err != nil {
				return err
			}
		}
		if progress != nil {
			progress(it)
		}
	}
	return nil
}

// clearOrRecover prepares the run folder for a checkpoint: a resumed
// run (or one that checkpointed already) finishes or undoes an interrupted
// replacement; a new run's first checkpoint removes the checkpoint folders
// of a run it replaces (--force, or one killed before its first
// checkpoint), which are not its own: promoting them would give the folder
// another run's checkpoint.
func (r *Run) clearOrRecover() error {
	if r.checkpointed {
		_, err := recoverCheckpoint(r.Dir)
		return err
	}
	final := filepath.Join(r.Dir, checkpointName)
	for _, p := range []string{final + newSuffix, final + oldSuffix, final} {
		if err := removeIfExists(p); err != nil {
			return err
		}
	}
	return nil
}

// finishResumed completes the outputs of a run resumed from its final
// checkpoint, which trains nothing: the density grid is filled from the
// final model (as its last evaluation did) and metrics.csv, which a kill
// after that checkpoint may have left unwritten or stale, is rewritten.
func (r *Run) finishResumed() error {
	if err := r.FillGrid(); err != nil {
		return err
	}
	return WriteEvalsCSV(filepath.Join(r.Dir, "metrics.csv"), r.Evals, len(r.Experiment.Weights))
}

// FillGrid fills the 2D density grid (Grid) from the EBM as it is saved
// (its averaged parameters), as an evaluation does; a resumed run's grid
// is empty until then. Without a grid it does nothing.
func (r *Run) FillGrid() error {
	if r.grid == nil {
		return nil
	}
	return r.Trainer.WithAveraged(func() error { return r.grid.Fill(r.Trainer.EBM.LogDensity) })
}

// interrupted checkpoints the run where it stopped.
func (r *Run) interrupted() error {
	if err := r.Checkpoint(); err != nil {
		return fmt.Errorf("%w at iteration %d, and writing its checkpoint failed: %v", ErrInterrupted, r.Trainer.Iter, err)
	}
	if err := WriteEvalsCSV(filepath.Join(r.Dir, "metrics.csv"), r.Evals, len(r.Experiment.Weights)); err != nil {
		return err
	}
	return fmt.Errorf("%w at iteration %d of %d; checkpoint written to %s", ErrInterrupted, r.Trainer.Iter, r.Config.Train.Iterations, filepath.Join(r.Dir, checkpointName))
}

// Step runs one training iteration and counts its negatives and chain
// starts into the mode weights of the next evaluation.
func (r *Run) Step() (IterStats, error) {
	st, err := r.Trainer.Step()
	if err != nil {
		return st, err
	}
	if r.Experiment.Weights != nil {
		r.countZones(&r.window.Neg, r.Trainer.Negatives())
		r.countZones(&r.window.Start, r.Trainer.Starts())
	}
	return st, nil
}

// Checkpoint writes dir/checkpoint (models and trainer state), replacing the
// previous one only once the new one is complete, plus config.json and the
// evaluations so far. It first recovers from an interrupted earlier
// replacement (recoverCheckpoint); a crash at any point of this one leaves
// the newest complete checkpoint for Resume to find (see LatestCheckpoint).
func (r *Run) Checkpoint() error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	final := filepath.Join(r.Dir, checkpointName)
	tmp := final + newSuffix
	if err := r.clearOrRecover(); err != nil {
		return err
	}
	if err := removeIfExists(tmp); err != nil {
		return err
	}
	if err := crashPoint("begin"); err != nil {
		return err
	}
	if err := r.writeCheckpoint(tmp); err != nil {
		if crashHook == nil { // a real failure (a full disk), not a simulated kill
			removeIfExists(tmp) // its space back; the last checkpoint stands
		}
		return err
	}
	// config.json before the renames, so that a first checkpoint
	// interrupted from here on can be resumed.
	if err := writeJSON(filepath.Join(r.Dir, "config.json"), r.Config); err != nil {
		return err
	}
	if err := crashPoint("complete"); err != nil {
		return err
	}
	old := final + oldSuffix
	if exists(final) {
		if err := os.Rename(final, old); err != nil {
			return err
		}
	}
	if err := crashPoint("moved-old"); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	syncDir(r.Dir)
	r.checkpointed = true
	if err := crashPoint("moved-new"); err != nil {
		return err
	}
	// A leftover checkpoint.old/ is harmless: the next recovery removes it.
	removeIfExists(old)
	return nil
}

// writeCheckpoint writes the complete checkpoint folder tmp: models,
// trainer state, evaluations, mode counts, the run's configuration and,
// last, the marker.
func (r *Run) writeCheckpoint(tmp string) error {
	err := r.Trainer.WithAveraged(func() error {
		return checkpoint.Save(tmp, checkpoint.Models{EBM: r.Trainer.EBM, Flow: r.Trainer.Flow, Scaling: r.Experiment.Scaling})
	})
	if err != nil {
		return err
	}
	if err := crashPoint("models"); err != nil {
		return err
	}
	if err := r.Trainer.SaveState(tmp); err != nil {
		return err
	}
	if err := WriteEvalsCSV(filepath.Join(tmp, "evals.csv"), r.Evals, len(r.Experiment.Weights)); err != nil {
		return err
	}
	// The configuration the checkpoint belongs to: resume refuses a
	// config.json edited since.
	if err := writeJSON(filepath.Join(tmp, runConfigName), r.Config); err != nil {
		return err
	}
	win := r.window
	nEvals := len(r.Evals)
	win.Evals = &nEvals
	if err := writeJSON(filepath.Join(tmp, "window.json"), win); err != nil {
		return err
	}
	if err := crashPoint("unmarked"); err != nil {
		return err
	}
	if err := writeComplete(tmp); err != nil {
		return err
	}
	syncDir(tmp)
	return nil
}

// Resume reopens the run in dir from its last checkpoint.
func Resume(dir string) (*Run, error) { return resume(dir, nil) }

// ResumeOn reopens the run in dir, trained on a data set, from its last
// checkpoint, reading the data from now on from file (the .npz member key,
// if not empty) instead of the file in its configuration: a moved or
// updated copy. Every other data setting (held-out fraction,
// standardisation, modes) stays as recorded. Its dimension must match the
// checkpoint's; the run continues exactly as an uninterrupted one only if
// the data are the same.
func ResumeOn(dir, file, key string) (*Run, error) {
	return resume(dir, func(cfg *RunConfig) error {
		if cfg.Data == nil {
			return fmt.Errorf("%s: the run trains on the experiment %q, not on a data file: resume it without --data", dir, cfg.Experiment)
		}
		cfg.Data.File, cfg.Data.Key = file, key
		return nil
	})
}

// restoreHistory reads the checkpoint's evaluations (evals.csv) and the
// mode counts pooled since the last one (window.json), checking that the
// history is whole.
func (r *Run) restoreHistory(ck string) error {
	evalsPath := filepath.Join(ck, "evals.csv")
	var err error
	if r.Evals, err = ReadEvalsCSV(evalsPath, len(r.Experiment.Weights)); err != nil {
		return err
	}
	if n := len(r.Evals); n > 0 && r.Evals[n-1].Iter > r.Trainer.Iter {
		return fmt.Errorf("%s: field \"iter\" is %d, but %s holds an evaluation at iteration %d: the checkpoint is inconsistent", filepath.Join(ck, "state.json"), r.Trainer.Iter, evalsPath, r.Evals[n-1].Iter)
	}
	w := filepath.Join(ck, "window.json")
	if err := r.readWindow(w); err != nil {
		return err
	}
	// A truncated evals.csv would silently drop the metrics history (and
	// metrics.csv, rewritten from it at the next checkpoint).
	if n := r.window.Evals; n != nil {
		if *n != len(r.Evals) {
			return fmt.Errorf("%s: %d evaluations, want %d (field \"evals\" of %s): the checkpoint's metrics history is incomplete", evalsPath, len(r.Evals), *n, w)
		}
		return nil
	}
	// An earlier checkpoint, without the count: one past the first
	// evaluation (iteration eval_every, or the last) must hold it.
	if first := min(r.Config.EvalEvery, r.Config.Train.Iterations); r.Trainer.Iter >= first && len(r.Evals) == 0 {
		return fmt.Errorf("%s: no evaluations, want at least 1: the checkpoint is at iteration %d, past the first evaluation (iteration %d, eval_every %d)", evalsPath, r.Trainer.Iter, first, r.Config.EvalEvery)
	}
	return nil
}

// readWindow reads the mode counts pooled since the last evaluation
// (checkpoints written before the pooled weights have none).
func (r *Run) readWindow(path string) error {
	switch err := readJSON(path, &r.window, true); {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	k := len(r.Experiment.Weights)
	for _, c := range []struct {
		name   string
		counts []float64
	}{{"neg", r.window.Neg}, {"start", r.window.Start}} {
		if c.counts != nil && len(c.counts) != k {
			return fmt.Errorf("%s: field %q has %d counts, want %d (the experiment's modes)", path, c.name, len(c.counts), k)
		}
		if i := firstBad(c.counts, true); i >= 0 {
			return fmt.Errorf("%s: field %q holds %v at mode %d, want finite counts ≥ 0", path, c.name, c.counts[i], i+1)
		}
	}
	if n := r.window.Evals; n != nil && *n < 0 {
		return fmt.Errorf("%s: field \"evals\" is %d, want ≥ 0", path, *n)
	}
	return nil
}

// runConfigName is the copy of the run's configuration in each checkpoint
// folder.
const runConfigName = "run-config.json"

// sameConfig refuses a run configuration cfg (read from path) that differs
// from the one its checkpoint was written with (ckPath; checkpoints written
// before it was kept have none), but for where the data file now is and
// the build.
func sameConfig(path string, cfg RunConfig, ckPath string) error {
	var then RunConfig
	switch err := readJSON(ckPath, &then, true); {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	comparable := func(c RunConfig) map[string]any {
		c.Build = nil
		if c.Data != nil {
			d := *c.Data
			d.File, d.Key = "", ""
			c.Data = &d
		}
		b, _ := json.Marshal(c)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	if field, now, was := firstDiff(comparable(cfg), comparable(then), ""); field != "" {
		return fmt.Errorf("%s: field %q is %s, but the checkpoint was written with %s (%s): the run cannot continue under another configuration; undo the edit, or start a new run", path, field, now, was, ckPath)
	}
	return nil
}

// firstDiff returns the first field (a dotted path) where the decoded JSON
// values a and b differ, with both values, or "" if they are equal.
func firstDiff(a, b any, path string) (field, va, vb string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if okA && okB {
		keys := slices.Sorted(maps.Keys(ma))
		for k := range mb {
			if _, ok := ma[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			if f, x, y := firstDiff(ma[k], mb[k], strings.TrimPrefix(path+"."+k, ".")); f != "" {
				return f, x, y
			}
		}
		return "", "", ""
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		if a == nil {
			ja = []byte("absent")
		}
		if b == nil {
			jb = []byte("absent")
		}
		return path, string(ja), string(jb)
	}
	return "", "", ""
}

// ReadRunConfig reads the configuration of the run in dir (its
// config.json).
func ReadRunConfig(dir string) (RunConfig, error) {
	return ReadConfig(filepath.Join(dir, "config.json"))
}

func resume(dir string, amend func(*RunConfig) error) (*Run, error) {
	// Checked as --config files are (an edited config.json with
	// batch_size 0 was accepted on resume).
	cfg, err := ReadRunConfig(dir)
	if err != nil {
		return nil, err
	}
	if amend != nil {
		if err := amend(&cfg); err != nil {
			return nil, err
		}
	}
	// An edited config.json is named as such, before the recovery below
	// (which would only find no checkpoint of this configuration).
	if ck := filepath.Join(dir, checkpointName); exists(filepath.Join(ck, runConfigName)) {
		if err := sameConfig(filepath.Join(dir, "config.json"), cfg, filepath.Join(ck, runConfigName)); err != nil {
			return nil, err
		}
	}
	// Finish or undo a replacement that a crash interrupted, so that
	// dir/checkpoint is the newest complete checkpoint.
	switch ok, err := recoverCheckpoint(dir); {
	case err != nil:
		return nil, err
	case !ok:
		if _, err := LatestCheckpoint(dir); err != nil {
			return nil, err // says why each folder is incomplete
		}
		return nil, noCheckpointError{dir: dir}
	}
	// The checkpoint recovered belongs to config.json (LatestCheckpoint
	// passes over those that do not).
	ck := filepath.Join(dir, checkpointName)
	models, _, err := checkpoint.Load(ck)
	if err != nil {
		return nil, err
	}
	r, err := prepare(cfg, dir, from{models: &models, source: filepath.Join(dir, "config.json")})
	if err != nil {
		return nil, err
	}
	r.checkpointed = true
	if err := r.Trainer.Restore(ck); err != nil {
		return nil, err
	}
	if err := r.restoreHistory(ck); err != nil {
		return nil, err
	}
	r.window.Evals = nil
	if b := CurrentBuild(); cfg.Build != nil && *cfg.Build != b {
		r.Notes = append(r.Notes, fmt.Sprintf("the run was started with %s; resumed with %s: it will differ from an uninterrupted run at round-off", cfg.Build, b))
	}
	if amend != nil {
		// The record says where the data now come from, even if nothing
		// is left to train.
		if err := writeJSON(filepath.Join(dir, "config.json"), r.Config); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func writeJSON(path string, v any) error {
	return safefile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(jsonSafe(v))
	})
}

func readJSON(path string, v any, strict bool) error { // strict: unknown fields are errors
	return jsonfile.Read(path, v, jsonfile.Options{AllowUnknown: !strict})
}

// ReadConfig reads a run configuration file (the fields of config.json),
// strictly: unknown fields, data after the object, and an explicit 0 for a
// field where 0 only stands for "the default" (leave the field out
// instead) are errors naming the file and field.
func ReadConfig(path string) (RunConfig, error) {
	var cfg RunConfig
	if err := readJSON(path, &cfg, true); err != nil {
		return cfg, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	return cfg, explicitZeros(path, b)
}

// zeroMeansDefault are the fields whose zero value stands for a default:
// written out as 0 they are a mistake (a batch of 0 points).
var zeroMeansDefault = [][]string{
	{"train", "batch_size"}, {"train", "sampler", "step_size"}, {"eval_every"}, {"checkpoint_every"},
}

// lookupFold is m[k], matched without regard to case as encoding/json
// matches field names.
func lookupFold(m map[string]any, k string) any {
	for key, v := range m {
		if strings.EqualFold(key, k) {
			return v
		}
	}
	return nil
}

func explicitZeros(path string, b []byte) error {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\uFEFF"))))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, field := range zeroMeansDefault {
		var v any = raw
		for _, k := range field {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = lookupFold(m, k)
		}
		if n, ok := v.(json.Number); ok {
			if f, err := n.Float64(); err == nil && f == 0 {
				return fmt.Errorf("%s: %s 0: want a value > 0 (leave the field out for the default)", path, strings.Join(field, "."))
			}
		}
	}
	return nil
}

// Package training runs a training job from its configuration to its
// outputs: a Plan resolves the configuration once (flags over a config file
// over the scaled paper settings), a Run loads the data, builds the models
// and the trainer, evaluates on its schedule (mode weights, log-density
// error, R-hat of fresh chains, held-out log-likelihood), checkpoints so
// that a kill at any point resumes bit for bit, and writes config.json,
// evals.csv, metrics.json and samples.npy.
package training

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/metrics"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/internal/shellquote"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// dataStream keys the random stream that draws or shuffles a run's data.
const dataStream = 0xda7a5e7

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
	// ChainWeights are the zone weights among the draws of the R-hat
	// chains (RHatChains chains from the persistent bank, the algorithm's
	// own kernel: the model as its sampler sees it), each with its Monte
	// Carlo standard error (diagnostics.ZoneWeights) and 95%
	// interval; at evaluations with R-hat, in metrics.json (not
	// metrics.csv).
	ChainWeights []diagnostics.Weight `json:"chain_weights,omitempty"`
	// NegIntervals are NegWeights with their Monte Carlo standard errors
	// and 95% intervals, from the iteration-to-iteration variation of the
	// negatives' weights over the pooled iterations
	// (diagnostics.BatchWeights); in metrics.json (not metrics.csv).
	NegIntervals []diagnostics.Weight `json:"neg_weight_intervals,omitempty"`
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
	HeldOutLL float64              `json:"held_out_ll"`
	LogZ      metrics.LogZEstimate `json:"log_z"`
	Stats     algorithms.IterStats `json:"stats"`
}

// Run is a training job on one of the paper's experiments, with its output
// folder.
type Run struct {
	Config     config.Run
	Experiment *experiments.Experiment
	Trainer    *algorithms.Trainer
	Dir        string
	Evals      []Eval
	// TrueHeldOutLL is the mean exact log-density of the held-out data
	// (the best HeldOutLL can be, up to Monte Carlo error).
	TrueHeldOutLL float64

	// Notes say what was done to a user's data set (rows dropped,
	// standardisation).
	Notes []string
	// Diverged: the run diverged after its checkpoint read (its folder's
	// error.txt), so its figures, drawn from that checkpoint, say so.
	Diverged bool
	// Guard, if not nil, is called before each checkpoint (a caller
	// writing the outputs calls it first too); its error stops the run
	// before anything is written. flowebm train checks that Dir is still
	// the folder whose lock it holds (probe 47: a link on Dir's path
	// re-pointed while it trained, and it wrote into another run).
	Guard func() error
	// Anchor, if not nil, reaches the run's folder whatever happens to
	// Dir's path: checkpoints and metrics.csv are written through it,
	// and a caller writing the outputs writes through it too (Through).
	Anchor Anchor
	// Waiting, if not nil, is told when a checkpoint waits for another
	// process that reads the run's checkpoint (energy, sample…) and when
	// it goes on without it (see ReadRun).
	Waiting func(msg string)

	readerStuck bool            // a reader outlasted a checkpoint's patience
	stop        <-chan struct{} // closed when TrainContext's context ends

	heldOut   *mat.Dense
	grid      *metrics.Grid
	gridZones *metrics.CellZones // the experiment's zones of the grid's cells
	// beyond is the EBM's mass beyond a built-in experiment's grid box at
	// the evaluation beyondAt (the count of Evals then; GridLogZ).
	beyond   float64
	beyondAt int
	// fills counts the grid's fills; missed is MissedMass's answer at a
	// fill and iteration (asked by the summary, the figures and
	// metrics.json alike).
	fills  int
	missed missedAt
	window modeWindow
	// checkpointed: dir/checkpoint holds one of this run's checkpoints
	// (written by Checkpoint or resumed from), of iteration savedIter.
	checkpointed bool
	savedIter    int
	// priorSeconds is the training time of earlier invocations, up to
	// the checkpoint resumed from; clock is when this one began training.
	priorSeconds float64
	clock        time.Time
}

// modeWindow pools the zone counts of the negatives and chain starts over
// the iterations since the previous evaluation. It is part of a checkpoint
// (window.json) so that a resumed run reports what an uninterrupted one does.
type modeWindow struct {
	Neg   []float64 `json:"neg"`
	Start []float64 `json:"start"`
	// ChainWeights are the last evaluation's (evals.csv does not hold them),
	// so that a resumed run writes the metrics.json of an uninterrupted one.
	ChainWeights []diagnostics.Weight `json:"chain_weights,omitempty"`
	// NegSeries holds each pooled iteration's zone fractions of the
	// negatives, for NegIntervals; NegIntervals are the last evaluation's.
	NegSeries    [][]float64          `json:"neg_series,omitempty"`
	NegIntervals []diagnostics.Weight `json:"neg_weight_intervals,omitempty"`
	// Seconds is the run's training time up to the checkpoint, summed
	// over the invocations that trained it (absent from checkpoints
	// written before it was recorded: 0).
	Seconds float64 `json:"seconds,omitempty"`
	// Evals is the number of evaluations in the checkpoint's evals.csv
	// (written by Checkpoint; absent from earlier checkpoints), so that
	// Resume can tell a truncated evals.csv from a run that has not
	// evaluated yet.
	Evals *int `json:"evals,omitempty"`
}

// countZones adds the zone counts of x to counts (allocated on first use)
// and returns x's zone fractions (nil without zones).
func (r *Run) countZones(counts *[]float64, x *mat.Dense) []float64 {
	if x == nil {
		return nil
	}
	z := r.Experiment.Zones(x)
	if z == nil {
		return nil
	}
	k := len(r.Experiment.Weights)
	if *counts == nil {
		*counts = make([]float64, k)
	}
	frac := make([]float64, k)
	for _, j := range z {
		(*counts)[j]++
		frac[j] += 1 / float64(len(z))
	}
	return frac
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
func NewRun(cfg config.Run, dir string) (*Run, error) {
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
func prepare(cfg config.Run, dir string, given from) (*Run, error) {
	inFile := func(err error) error { return sourced(given.source, cfg.Data, err) }
	if err := cfg.Validate(); err != nil {
		return nil, inFile(err)
	}
	// The data come from their own stream so that the same seed gives the
	// same data whatever the algorithm.
	dataRNG := rand.New(rand.NewPCG(cfg.Seed, dataStream))
	exp, dataNotes := given.exp, []string(nil)
	if exp == nil {
		var err error
		if exp, dataNotes, err = cfg.LoadExperiment(dataRNG); err != nil {
			return nil, inFile(err) // data.* fields come from the file
		}
	}
	models, notes := given.models, given.notes
	if f := cfg.Model.FlowONNX; f != nil && models == nil { // started from its files (a resumed run's flow is its checkpoint's)
		var err error
		if cfg.Model.FlowONNX, err = f.WithSums(); err != nil {
			return nil, inFile(err)
		}
	}
	if models != nil && models.EBM.Dim() != exp.Dim() {
		return nil, fmt.Errorf("algorithms: %s has %d dimensions, the checkpoint's models %d", cfg.Source(), exp.Dim(), models.EBM.Dim())
	}
	before := cfg.Train
	if err := cfg.Resolve(exp); err != nil {
		return nil, inFile(err)
	}
	r := &Run{Config: cfg, Experiment: exp, Dir: dir, Notes: append(retime(notes, before, cfg.Train), dataNotes...)}
	if f := cfg.Model.FlowONNX; f != nil && models == nil && exp.Scaling != nil && !exp.Scaling.Identity() { // probe 69 A3: unsaid
		r.Notes = append(r.Notes, fmt.Sprintf("the flow of %s is taken in the models' coordinates, the data standardised on its training rows (as the EBM sees them), not in the data's units: a flow trained on the data as they are proposes at another scale until training moves it", f.Sample))
	}
	if err := r.build(dataRNG, models); err != nil {
		return nil, inFile(err) // the trainer's checks of its fields
	}
	return r, nil
}

// on r.Config.Train, and the evaluation's references.
func (r *Run) build(dataRNG *rand.Rand, models *checkpoint.Models) error {
	cfg, exp := &r.Config, r.Experiment
	d := exp.Dim()
	train, held := exp.Split(dataRNG, cfg.DataSize, 4096)
	var err error
	if models == nil {
		var image *experiments.ImageShape
		if exp.Kind == experiments.KindImages {
			image = exp.Image
		}
		if models, err = newModelsOf(*cfg, d, image, train); err != nil {
			return err
		}
	}
	par := graph.Parallel{Shards: cfg.Model.WithDefaults().Shards, Workers: runtime.GOMAXPROCS(0)}
	models.EBM.Parallel = par
	if models.Flow != nil {
		models.Flow.Parallel = par
	}
	cfg.Train.MemoryLimit = cfg.MemoryAccepted.Raise(sysmem.Limit(sysmem.DefaultLimit))
	if r.Trainer, err = algorithms.NewTrainer(&cfg.Train, models.EBM, models.Flow, train, algorithms.NewStreams(cfg.Seed)); err != nil {
		return err
	}
	r.heldOut = held
	if r.TrueHeldOutLL, err = exactMeanLogDensity(exp, held); err != nil {
		return err
	}
	if exp.Box > 0 && d == 2 {
		b := exp.GridBox()
		r.grid = metrics.NewGridAt(b.Center, b.Box, b.BoxY, cfg.GridSize)
	}
	return nil
}

// newModels builds the run's EBM at zero energy, tilted by the base ρ, and
// its flow: the identity flow of model.flow over ρ (a RealNVP, a neural
// spline flow or, for the image experiments, a conv RealNVP), or the flow
// of model.flow_onnx, whose base is then ρ. The EBM is model.ebm's: an
// MLP, or for the image experiments the conv EBM (see newModelsOf).
func newModels(cfg config.Run, d int, train *mat.Dense) (*checkpoint.Models, error) {
	return newModelsOf(cfg, d, nil, train)
}

// newModelsOf is newModels for data of d dimensions that are images of
// shape image (nil: not images), which the conv models take.
func newModelsOf(cfg config.Run, d int, image *experiments.ImageShape, train *mat.Dense) (*checkpoint.Models, error) {
	m := cfg.Model
	var flow *graph.Flow
	if f := m.FlowONNX; f != nil {
		var err error
		if flow, err = importedFlow(*f, d, m.Float32); err != nil {
			return nil, err
		}
		if fn, ok := flow.Net.(*onnx.FlowNet); ok && cfg.Train.Algorithm.Kernel() == algorithms.KernelNeuTra {
			if err := fn.NeedInverse(); err != nil {
				return nil, &FlowFilesError{Err: err}
			}
		}
	}
	sigma := m.BaseSigma
	if sigma == 0 {
		v := 0.0
		for j := 0; j < d; j++ {
			v = max(v, stat.Variance(mat.Col(nil, j, train), nil))
		}
		sigma = math.Sqrt(v)
		if !(sigma > 0) || math.IsInf(sigma, 0) || sigma < 1e-150 { // probe 19: "layers: Gaussian sigma[0] = NaN"
			return nil, fmt.Errorf("%s: the largest variance of a column of the training data is %g, so the models' base Gaussian (σ its square root) cannot be made: rescale the data (--standardize, the default for data files, does), or give model.base_sigma", cfg.Source(), v)
		}
	}
	base := layers.NewIsotropic(d, sigma)
	if flow != nil {
		base = flow.Base
	}
	net, err := m.EnergyNet(d, image)
	if err != nil {
		return nil, err
	}
	dt := tensor.Float64
	if m.Float32 {
		dt = tensor.Float32
	}
	initRNG := rand.New(rand.NewPCG(cfg.Seed, 0x3d31))
	ebm, err := graph.NewEBM(net, &base, dt, initRNG)
	if err != nil {
		return nil, err
	}
	if flow == nil && cfg.Train.Algorithm.TrainsFlow() {
		// model.flow's family: the RealNVP (as before the spline flow
		// existed: the same draws of initRNG), the spline flow or the conv
		// RealNVP. An algorithm without a flow (ula) builds none: its
		// model.flow_* fields are ignored, and sized nothing (a
		// flow_blocks of 2^63 panicked; the EBM's initialisation draws
		// come first, so they are the same as when the flow was built).
		fn, err := m.FlowNetFor(d, image)
		if err != nil {
			return nil, err
		}
		if flow, err = graph.NewFlow(fn, base, dt, initRNG); err != nil {
			return nil, err
		}
	}
	return &checkpoint.Models{EBM: ebm, Flow: flow}, nil
}

// importedFlow reads model.flow_onnx, checking its dimension and float
// type against the run's.
func importedFlow(f config.FlowFiles, d int, float32 bool) (*graph.Flow, error) {
	var sigma []float64
	if f.BaseSigma != 0 {
		sigma = []float64{f.BaseSigma}
	}
	flow, err := onnx.ReadFlow(f.Sample, f.Density, onnx.FlowConfig{BaseSigma: sigma})
	if err != nil {
		return nil, &FlowFilesError{Err: err}
	}
	want := tensor.Float64
	if float32 {
		want = tensor.Float32
	}
	if flow.Dim() != d {
		return nil, fmt.Errorf("model.flow_onnx: the flow of %s is in dimension %d, the run's models in dimension %d (the data's or the experiment's): give a flow of the data's dimension", f.Sample, flow.Dim(), d)
	}
	if flow.Params.Dtype() != want {
		promoted, advice := "", " (model.float32 sets the type)"
		if fn, ok := flow.Net.(*onnx.FlowNet); ok && fn.Promoted() != "" {
			promoted, advice = fn.Promoted(), " (a float64 run takes it: model.float32 false)"
		}
		return nil, fmt.Errorf("model.flow_onnx: the flow of %s is %v%s, the run's models %v%s", f.Sample, flow.Params.Dtype(), promoted, want, advice)
	}
	return flow, nil
}

// FlowFilesError is the flow of model.flow_onnx refused as it is read; a
// command line that gave the files as flags names them so.
type FlowFilesError struct{ Err error }

func (e *FlowFilesError) Error() string { return "model.flow_onnx: " + e.Err.Error() }
func (e *FlowFilesError) Unwrap() error { return e.Err }

// GridLogZ is, for a run with a quadrature grid, the EBM's log Z by the
// grid, with the mass beyond a built-in experiment's box where that is
// over metrics.CoverMass (the box's log Z minus log(1 − beyond)), and that
// mass (0 where left out); NaN without a grid. It is measured once per
// evaluation.
func (r *Run) GridLogZ() (logZ, beyond float64, err error) {
	if r.grid == nil {
		return math.NaN(), 0, nil
	}
	if r.beyondAt != len(r.Evals) {
		if r.beyond, err = r.MassBeyondGrid(); err != nil {
			return math.NaN(), 0, err
		}
		r.beyondAt = len(r.Evals)
	}
	if !(r.beyond > metrics.CoverMass) {
		return r.grid.LogZ, 0, nil
	}
	return r.grid.LogZ - math.Log1p(-r.beyond), r.beyond, nil
}

// MassBeyondGrid is the fraction of the (averaged) EBM's mass beyond the
// box of a built-in experiment's quadrature grid (metrics.Grid.MassBeyond;
// round 88 A1: 6.9% of an early CoopFlow EBM's mass lay beyond the box,
// and the grid's log Z and weights were printed unqualified); 0 without a
// grid, and for a data set, whose grid grows to hold the mass.
func (r *Run) MassBeyondGrid() (m float64, err error) {
	if r.grid == nil || r.Experiment.Kind == experiments.KindDataSet {
		return 0, nil
	}
	err = r.Trainer.WithAveraged(func() (err error) {
		m, err = r.grid.MassBeyond(r.Trainer.EBM.LogDensity)
		return err
	})
	return m, err
}

// Grid returns the last evaluation's normalised EBM density grid (nil in
// more than 2 dimensions or before the first evaluation).
func (r *Run) Grid() *metrics.Grid { return r.grid }

// DisplayGrid is the grid a figure of the EBM's density shows, with the
// fraction of the EBM's mass within the data's box: the quadrature grid,
// or, for a data set whose grid grew beyond the data's box to hold the
// EBM's mass, that box's view of it (round 81 B8: data within ±3 drawn on
// a box of ±19, the modes too small to see) while the box holds at least
// half the mass (round 82 B4: 0% in view drew one flat colour; the grown
// grid shows where the mass went). The box is the data's bulk where it
// has a View (far outliers). Nil without a grid.
func (r *Run) DisplayGrid() (g *metrics.Grid, inBox float64, err error) {
	g, exp := r.grid, r.Experiment
	if g == nil {
		return nil, 0, nil
	}
	b := exp.GridBox() // a data set's bulk where far outliers stretch its box (round 89 B4)
	c, bx, by := b.Center, b.Box, b.BoxY
	if gx, gy := g.HalfWidths(); exp.Kind != experiments.KindDataSet || (gx == bx && gy == by && g.Center == c) {
		return g, 1, nil
	}
	var w *metrics.Grid
	err = r.Trainer.WithAveraged(func() (err error) {
		w, inBox, err = g.Window(c, bx, by, r.Trainer.EBM.LogDensity)
		return err
	})
	if err != nil || inBox < 0.5 {
		return g, inBox, err
	}
	return w, inBox, nil
}

// Evaluate computes the metrics at the current iteration and appends them
// to Evals.
// With Train.AverageWindow set, the averaged EBM is evaluated.
func (r *Run) Evaluate(st algorithms.IterStats) (ev Eval, err error) {
	err = r.Trainer.WithAveraged(func() error {
		ev, err = r.evaluate(st)
		return err
	})
	return ev, err
}

func (r *Run) evaluate(st algorithms.IterStats) (Eval, error) {
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
		if err := r.fillGrid(); err != nil {
			return ev, err
		}
		if exp.Kind == experiments.KindDensity {
			truth := make([]float64, r.heldOut.RawMatrix().Rows)
			if err := exp.Target.LogDensity(r.heldOut, truth); err != nil {
				return ev, err
			}
			ev.LogDensityMedSE = metrics.MedianSquaredError(r.grid.LogDensityAt(r.heldOut), truth)
		}
	}
	if exp.Weights != nil {
		if r.grid != nil && exp.Modes != nil {
			if r.gridZones == nil {
				cz := r.grid.Zones(exp.Zones)
				r.gridZones = &cz
			}
			ev.EBMWeights = r.grid.ZoneWeights(*r.gridZones, len(exp.Weights))
			ev.EBMWeightMSE = diagnostics.WeightMSE(ev.EBMWeights, exp.Weights)
		}
		ev.NegWeights, ev.StartWeights = weights(r.window.Neg), weights(r.window.Start)
		if len(r.window.NegSeries) > 0 {
			ev.NegIntervals = diagnostics.BatchWeights(r.window.NegSeries, len(exp.Weights))
		}
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
	ev.ChainWeights = r.chainWeights(draws)
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

// chainWeights are the zone weights of the R-hat chains' draws (chains ×
// steps × d) with their errors, or nil without zones.
func (r *Run) chainWeights(draws []float64) []diagnostics.Weight {
	c, d := r.Config, r.Experiment.Dim()
	z := r.Experiment.Zones(mat.NewDense(c.RHatChains*c.RHatSteps, d, draws))
	if z == nil {
		return nil
	}
	zones := make([][]int, c.RHatChains)
	for ch := range zones {
		zones[ch] = z[ch*c.RHatSteps : (ch+1)*c.RHatSteps]
	}
	return diagnostics.ZoneWeights(zones, len(r.Experiment.Weights))
}

// heldOutLL fills the held-out log-likelihood of ev.
func (r *Run) heldOutLL(rng *rand.Rand, ev *Eval) error {
	ebm := r.Trainer.EBM
	var q samplers.Proposal = r.Trainer.Flow
	if r.Trainer.Flow == nil {
		if ebm.Tilt == nil {
			ev.HeldOutLL, ev.LogZ = math.NaN(), metrics.LogZEstimate{LogZ: math.NaN(), SE: math.NaN(), ESS: math.NaN()}
			return nil
		}
		g, err := samplers.NewNormal(make([]float64, ebm.Dim()), diagCov(ebm.Tilt.Sigma))
		if err != nil {
			return err
		}
		q = g
	}
	logDensity := inChunks(ebm.LogDensity)
	est, err := metrics.EstimateLogZ(logDensity, q, rng, r.Config.LogZSamples)
	if err != nil {
		return err
	}
	logp := make([]float64, r.heldOut.RawMatrix().Rows)
	if err := logDensity(r.heldOut, logp); err != nil {
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

// evalChunk is the most rows the evaluation hands a model at once: the
// held-out data (4,096 rows) and the log Z draws would otherwise each
// compile a graph holding every intermediate value of every row (4.8 GB
// for the conv EBM on 28×28 images).
const evalChunk = 512

// inChunks evaluates f on consecutive blocks of at most evalChunk rows of
// x, so that one compiled graph of evalChunk rows (and one for the rest)
// serves any number of rows.
func inChunks(f func(mat.Matrix, []float64) error) func(mat.Matrix, []float64) error {
	return func(x mat.Matrix, out []float64) error {
		n, d := x.Dims()
		if n <= evalChunk {
			return f(x, out)
		}
		dense, ok := x.(*mat.Dense)
		if !ok {
			dense = mat.DenseCopyOf(x)
		}
		for lo := 0; lo < n; lo += evalChunk {
			hi := min(lo+evalChunk, n)
			if err := f(dense.Slice(lo, hi, 0, d), out[lo:hi]); err != nil {
				return err
			}
		}
		return nil
	}
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
// returns an error wrapping algorithms.ErrDiverged that names the last good
// checkpoint.
func (r *Run) Train(progress func(iter int)) error {
	return r.TrainContext(context.Background(), progress)
}

// TrainContext is Train that stops between iterations when ctx ends (the
// command line's SIGINT/SIGTERM): the iteration under way finishes, a
// checkpoint of the run so far is written (resuming from it reaches the
// same result as an uninterrupted run) and the error wraps algorithms.ErrInterrupted.
func (r *Run) TrainContext(ctx context.Context, progress func(iter int)) error {
	cfg := r.Config
	total := cfg.Train.Iterations
	if r.Trainer.Iter >= total {
		return r.finishResumed()
	}
	if r.clock.IsZero() {
		r.clock = time.Now()
	}
	r.stop = ctx.Done()
	defer func() { r.stop = nil }()
	for r.Trainer.Iter < total {
		if ctx.Err() != nil {
			return r.interrupted()
		}
		st, err := r.Step()
		if err != nil {
			if errors.Is(err, algorithms.ErrDiverged) {
				if !r.checkpointed {
					return fmt.Errorf("%w; it diverged before its first checkpoint (due after iteration %d): nothing to resume, start it again with other settings%s", err, min(cfg.CheckpointEvery, total), uncenteredHint(cfg))
				}
				return fmt.Errorf("%w; the last good checkpoint is in %s%s", err, filepath.Join(r.Dir, checkpointName), uncenteredHint(cfg))
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
			if err := r.writeEvals(); err != nil {
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
	return r.writeEvals()
}

// FillGrid fills the 2D density grid (metrics.Grid) from the EBM as it is saved
// (its averaged parameters), as an evaluation does; a resumed run's grid
// is empty until then. Without a grid it does nothing.
func (r *Run) FillGrid() error {
	if r.grid == nil {
		return nil
	}
	return r.Trainer.WithAveraged(r.fillGrid)
}

// fillGrid fills the grid with the EBM's density. A data set's grid starts
// from the data's box at every evaluation and grows until it holds the
// EBM's mass (metrics.Grid.FillCovering; so a resumed run's evaluations
// are an uninterrupted run's), and at the final iteration gets cells fine
// enough for the EBM's features (metrics.Grid.Resolved: four times the
// points per doubling, which every evaluation would pay: a run of 400
// iterations on a sharp mode took 37 s for 6); an experiment's box is its
// target's, with the paper's cells.
func (r *Run) fillGrid() error {
	r.fills++
	exp := r.Experiment
	if exp.Kind != experiments.KindDataSet {
		return r.grid.Fill(r.Trainer.EBM.LogDensity)
	}
	b := exp.GridBox()
	g, err := metrics.NewGridAt(b.Center, b.Box, b.BoxY, r.Config.GridSize).FillCovering(r.Trainer.EBM.LogDensity)
	if err == nil && r.Trainer.Iter >= r.Config.Train.Iterations { // the final evaluation's numbers on cells fine enough (round 99 A1)
		g, err = g.Resolved(r.Trainer.EBM.LogDensity)
	}
	if g.Box != r.grid.Box || g.BoxY != r.grid.BoxY || g.Center != r.grid.Center || g.N != r.grid.N {
		r.gridZones = nil // of the other grid's points
	}
	r.grid = g
	return err
}

// uncenteredHint is, for a run on unscaled data (data.standardize
// "none"), the setting that centres them (round 95 A3: "other settings"
// named none); "" otherwise.
func uncenteredHint(cfg config.Run) string {
	if cfg.Data == nil || cfg.Data.Standardize != data.NoScaling {
		return ""
	}
	return " (the data are unscaled, data.standardize \"none\": --standardize dimension, the default, or global centres them on the origin, where the models' bases are)"
}

// interrupted checkpoints the run where it stopped, unless its last
// checkpoint is of that iteration (probe 25: an interrupt just after a
// checkpoint wrote it again, waiting again for a stopped reader).
func (r *Run) interrupted() error {
	if r.checkpointed && r.savedIter == r.Trainer.Iter {
		return r.interruptedAt()
	}
	if err := r.Checkpoint(); err != nil {
		return fmt.Errorf("%w at iteration %d, and writing its checkpoint failed: %w", algorithms.ErrInterrupted, r.Trainer.Iter, err)
	}
	return r.interruptedAt()
}

// interruptedAt writes the evaluations beside the run's checkpoint and
// says where the interrupted run stands.
func (r *Run) interruptedAt() error {
	if err := r.writeEvals(); err != nil {
		return err
	}
	return fmt.Errorf("%w at iteration %d of %d; checkpoint written to %s", algorithms.ErrInterrupted, r.Trainer.Iter, r.Config.Train.Iterations, filepath.Join(r.Dir, checkpointName))
}

// TrainingTime is the run's training time so far: that of the
// invocations before this one, up to the checkpoint it resumed from (the
// time between that checkpoint and an interruption is not counted), plus
// this one's since it began training.
func (r *Run) TrainingTime() time.Duration {
	d := time.Duration(r.priorSeconds * float64(time.Second))
	if !r.clock.IsZero() {
		d += time.Since(r.clock)
	}
	return d
}

// Step runs one training iteration and counts its negatives and chain
// starts into the mode weights of the next evaluation.
func (r *Run) Step() (algorithms.IterStats, error) {
	st, err := r.Trainer.Step()
	if err != nil {
		return st, err
	}
	if r.Experiment.Weights != nil {
		if f := r.countZones(&r.window.Neg, r.Trainer.Negatives()); f != nil {
			r.window.NegSeries = append(r.window.NegSeries, f)
		}
		r.countZones(&r.window.Start, r.Trainer.Starts())
	}
	return st, nil
}

// Checkpointed reports whether the run has a checkpoint of its own
// (written by Checkpoint or resumed from).
func (r *Run) Checkpointed() bool { return r.checkpointed }

// Guarded is the run's Guard's verdict (nil without one): call it before
// a write into Dir.
func (r *Run) Guarded() error {
	if r.Guard == nil {
		return nil
	}
	return r.Guard()
}

// writeEvals writes the evaluations so far to Dir/metrics.csv, through
// the Anchor once the Guard allows (probe 48: written by path after a
// checkpoint, it replaced another run's where a link on Dir's path was
// re-pointed).
func (r *Run) writeEvals() error {
	return r.through(func() error {
		return WriteEvalsCSV(filepath.Join(r.Dir, "metrics.csv"), r.Evals, len(r.Experiment.Weights))
	})
}

// Checkpoint writes dir/checkpoint (models and trainer state), replacing the
// previous one only once the new one is complete, plus config.json and the
// evaluations so far. It first recovers from an interrupted earlier
// replacement (recoverCheckpoint); a crash at any point of this one leaves
// the newest complete checkpoint for Resume to find (see LatestCheckpoint).
// It writes through the run's Anchor, once its Guard allows.
func (r *Run) Checkpoint() error { return r.through(r.checkpoint) }

func (r *Run) checkpoint() error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	final := filepath.Join(r.Dir, checkpointName)
	tmp := final + newSuffix
	err := r.withFolders(func() error {
		if err := r.clearOrRecover(); err != nil {
			return err
		}
		return removeIfExists(tmp)
	})
	if err != nil {
		return err
	}
	if err := crashPoint("begin"); err != nil {
		return err
	}
	// config.json before the checkpoint, so that a first checkpoint
	// interrupted after its folder is complete can be resumed (written
	// after it, a failure left a complete checkpoint.new/ that resume
	// could not use).
	if err := jsonfile.Write(filepath.Join(r.Dir, "config.json"), r.Config); err != nil {
		return err
	}
	if err := r.writeCheckpoint(tmp); err != nil {
		if crashHook == nil { // a real failure (a full disk), not a simulated kill
			removeIfExists(tmp) // its space back; the last checkpoint stands
		}
		return err
	}
	if err := crashPoint("complete"); err != nil {
		return err
	}
	return r.withFolders(func() error { return r.replaceCheckpoint(tmp, final) })
}

// replaceCheckpoint puts the complete checkpoint folder tmp in the place
// of final, keeping final as checkpoint.old/ until then.
func (r *Run) replaceCheckpoint(tmp, final string) error {
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
	r.checkpointed, r.savedIter = true, r.Trainer.Iter
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
		return checkpoint.Save(tmp, checkpoint.Models{EBM: r.Trainer.EBM, Flow: r.Trainer.Flow, Scaling: r.Experiment.Scaling, PointShape: r.Experiment.PointShape})
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
	if err := jsonfile.Write(filepath.Join(tmp, runConfigName), r.Config); err != nil {
		return err
	}
	win := r.window
	win.Seconds = r.TrainingTime().Seconds()
	nEvals := len(r.Evals)
	win.Evals = &nEvals
	if nEvals > 0 {
		win.ChainWeights, win.NegIntervals = r.Evals[nEvals-1].ChainWeights, r.Evals[nEvals-1].NegIntervals
	}
	if err := jsonfile.Write(filepath.Join(tmp, "window.json"), win); err != nil {
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

// RunExperiment loads the experiment of the run configured by cfg as the
// run loaded it: a data file read (its recorded checksum checked) and
// split with the run's seed. It draws what a run's evaluations need
// without its checkpoint (its modes, for the weights' figures).
func RunExperiment(cfg config.Run) (*experiments.Experiment, error) {
	exp, _, err := cfg.LoadExperiment(rand.New(rand.NewPCG(cfg.Seed, dataStream)))
	return exp, err
}

// exactMeanLogDensity is the mean exact log-density of the rows of x under
// the experiment's target, NaN where its density is unknown.
func exactMeanLogDensity(exp *experiments.Experiment, x *mat.Dense) (float64, error) {
	if exp.Kind != experiments.KindDensity {
		return math.NaN(), nil
	}
	truth := make([]float64, x.RawMatrix().Rows)
	if err := exp.Target.LogDensity(x, truth); err != nil {
		return 0, err
	}
	return stat.Mean(truth, nil), nil
}

// ExactHeldOutLL is the Run.TrueHeldOutLL of the run configured by cfg
// (its config.json, defaults resolved), its held-out data drawn again from
// its seed as the run drew them, without the run's checkpoint or
// metrics: NaN for a data set or images, whose density is unknown.
func ExactHeldOutLL(cfg config.Run) (float64, error) {
	_, ll, err := experimentTruth(cfg)
	return ll, err
}

// experimentTruth is the experiment of the run configured by cfg, drawn
// as the run drew it, and ExactHeldOutLL; a nil experiment and NaN for a
// data set (not loaded).
func experimentTruth(cfg config.Run) (*experiments.Experiment, float64, error) {
	if cfg.Data != nil || cfg.DataDir != "" {
		return nil, math.NaN(), nil // not loaded: no exact density
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, dataStream))
	exp, _, err := cfg.LoadExperiment(rng)
	if err != nil || exp.Kind != experiments.KindDensity {
		return exp, math.NaN(), err
	}
	_, held := exp.Split(rng, cfg.DataSize, 4096)
	ll, err := exactMeanLogDensity(exp, held)
	return exp, ll, err
}

// Resume reopens the run in dir from its last checkpoint.
func Resume(dir string) (*Run, error) { return ResumeWith(dir, ResumeOptions{}) }

// ResumeOn reopens the run in dir, trained on a data set, reading the data
// from file (the .npz member key, if not empty): ResumeWith with DataFile
// and DataKey.
func ResumeOn(dir, file, key string) (*Run, error) {
	return ResumeWith(dir, ResumeOptions{DataFile: file, DataKey: key})
}

// ResumeOnDataDir reopens the run in dir, an image experiment, reading its
// files from dataDir: ResumeWith with DataDir.
func ResumeOnDataDir(dir, dataDir string) (*Run, error) {
	return ResumeWith(dir, ResumeOptions{DataDir: dataDir})
}

// ResumeOptions are how ResumeWith reopens a run; the zero value reopens
// it as recorded, as Resume does.
type ResumeOptions struct {
	// DataFile, if not empty, is where a run trained on a data set reads
	// its data from now on (the .npz member DataKey, if not empty), instead
	// of the file in its configuration: a moved or updated copy. Every
	// other data setting (held-out fraction, standardisation, modes) stays
	// as recorded. Its dimension must match the checkpoint's; the run
	// continues exactly as an uninterrupted one only if the data are the
	// same.
	DataFile, DataKey string
	// DataDir, if not empty, is where an image experiment reads its files
	// from now on, instead of its configuration's data_dir: a moved copy,
	// whose files must have the checksums the run recorded.
	DataDir string

	// Context, if not nil, shortens the wait for processes reading the
	// run's checkpoint once it is done: resuming finishes a checkpoint
	// replacement that a crash interrupted, which waits for them as a
	// checkpoint does (Run.Waiting).
	Context context.Context
	// Waiting becomes the run's Waiting, and is told of that wait.
	Waiting func(msg string)
	// Anchor, if not nil, is the path through which the run's folder is
	// read and recovered (Through); it becomes the run's Anchor.
	Anchor Anchor
	// ReadOnly reads the run from its newest complete checkpoint where it
	// lies, changing nothing: an interrupted replacement is not recovered
	// (nor a damaged checkpoint/ removed: round 131 B1, by plot), and the
	// run is for reading (plot), not for training on.
	ReadOnly bool
}

// ResumeWith reopens the run in dir from its last checkpoint, as opt says.
func ResumeWith(dir string, opt ResumeOptions) (*Run, error) {
	var r *Run
	err := Through(dir, opt.Anchor, func(at string) error {
		o := opt
		o.Waiting = sayingDir(opt.Waiting, at, dir)
		var err error
		if r, err = resumeWith(at, o); err != nil {
			return err
		}
		r.Dir, r.Waiting, r.Anchor = dir, opt.Waiting, opt.Anchor
		for i, n := range r.Notes {
			r.Notes[i] = strings.ReplaceAll(n, at, dir)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func resumeWith(dir string, opt ResumeOptions) (*Run, error) {
	var amend func(*config.Run) error
	switch {
	case opt.DataFile != "" && opt.DataDir != "":
		return nil, fmt.Errorf("%s: a run reads either a data file or a data folder, not both", dir)
	case opt.DataFile != "":
		amend = func(cfg *config.Run) error {
			if cfg.Data == nil {
				flags := "--data"
				if opt.DataKey != "" {
					flags = "--data and --key"
				}
				return fmt.Errorf("%s: the run trains on the experiment %q, not on a data file: resume it without %s", dir, cfg.Experiment, flags)
			}
			key, err := resumedKey(cfg.Data, opt)
			if err != nil {
				return err
			}
			cfg.Data.File, cfg.Data.Key = opt.DataFile, key
			return nil
		}
	case opt.DataDir != "":
		amend = func(cfg *config.Run) error {
			if cfg.DataDir == "" && cfg.DataDirSHA256 == nil {
				return fmt.Errorf("%s: the run reads no data folder (experiment %q, no data_dir in its config.json): resume it without --data-dir", dir, cfg.Experiment)
			}
			cfg.DataDir = opt.DataDir
			return nil
		}
	}
	return resume(dir, amend, opt)
}

// resumedKey is the .npz member a run resumed on opt.DataFile reads: the
// one it was trained on. Without --key it is the one recorded (round 77
// B2: the first member was read instead, and the run went on training on
// other data, unsaid); a --key naming another member is refused, as other
// data is (the file's SHA-256 alone does not tell the members apart).
func resumedKey(d *config.Data, opt ResumeOptions) (string, error) {
	if opt.DataKey == "" || opt.DataKey == d.Key {
		return d.Key, nil
	}
	trained := d.Member(opt.DataFile)            // the first member of the file given, where the run's was an .npz read without a key
	if trained == "" || opt.DataKey == trained { // other data, or not an .npz: refused by its SHA-256, or with the data
		return opt.DataKey, nil
	}
	return "", fmt.Errorf("--key %s: the run was trained on the member %q of its .npz, not %q: other data would not continue it; resume without --key (or with --key %s), or train a new run on this member", opt.DataKey, trained, opt.DataKey, trained)
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
	if n := len(r.Evals); n > 0 {
		r.Evals[n-1].ChainWeights, r.window.ChainWeights = r.window.ChainWeights, nil
		r.Evals[n-1].NegIntervals, r.window.NegIntervals = r.window.NegIntervals, nil
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
	switch err := jsonfile.Read(path, &r.window, jsonfile.Options{}); {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if err := r.window.check(path, len(r.Experiment.Weights)); err != nil { // round 110 B1: no way on
		return fmt.Errorf("%w: the checkpoint holds what no run writes (edited): restore it from a copy, or train the run anew in another folder", err)
	}
	r.priorSeconds = r.window.Seconds
	return nil
}

// check refuses a window read from path that no run writes: counts of
// other than k modes (k < 0: any), negative or not finite, fractions
// outside [0, 1], a weight outside [0, 1] or its own interval.
func (w *modeWindow) check(path string, k int) error {
	for _, c := range []struct {
		name   string
		counts []float64
	}{{"neg", w.Neg}, {"start", w.Start}} {
		if c.counts != nil && k >= 0 && len(c.counts) != k {
			return fmt.Errorf("%s: field %q has %d counts, want %d (the experiment's modes)", path, c.name, len(c.counts), k)
		}
		if i := slices.IndexFunc(c.counts, func(v float64) bool { return !(v >= 0 && v <= math.MaxFloat64) }); i >= 0 {
			return fmt.Errorf("%s: field %q holds %v at mode %d, want finite counts ≥ 0", path, c.name, c.counts[i], i+1)
		}
	}
	if n := w.Evals; n != nil && *n < 0 {
		return fmt.Errorf("%s: field \"evals\" is %d, want ≥ 0", path, *n)
	}
	if s := w.Seconds; !(s >= 0 && s <= math.MaxFloat64) {
		return fmt.Errorf("%s: field \"seconds\" is %v, want a duration ≥ 0", path, s)
	}
	for i, f := range w.NegSeries {
		if (k >= 0 && len(f) != k) || slices.ContainsFunc(f, func(v float64) bool { return !(v >= 0 && v <= 1) }) {
			return fmt.Errorf("%s: field \"neg_series\" row %d is %v, want %d fractions in [0, 1]", path, i+1, f, k)
		}
	}
	for name, ws := range map[string][]diagnostics.Weight{"chain_weights": w.ChainWeights, "neg_weight_intervals": w.NegIntervals} {
		if i := slices.IndexFunc(ws, badWeight); i >= 0 { // round 109 B1: a weight outside its own interval written as the run's
			return fmt.Errorf("%s: field %q, mode %d: weight %v with interval [%v, %v], MCSE %v and ESS %v: want a weight in [0, 1] within its interval, an MCSE ≥ 0 and an ESS ≥ 0", path, name, i+1, ws[i].Weight, ws[i].Lo, ws[i].Hi, ws[i].MCSE, ws[i].ESS)
		}
	}
	return nil
}

// badWeight reports whether w is no zone weight an evaluation computes:
// outside [0, 1], outside its own interval (where it has one), or with a
// negative or infinite MCSE or ESS (round 135 B2: an ESS of -3 was taken
// and written into metrics.json; undefined ones are NaN).
func badWeight(w diagnostics.Weight) bool {
	if !(w.Weight >= 0 && w.Weight <= 1) {
		return true
	}
	for _, v := range []float64{w.MCSE, w.ESS} {
		if !math.IsNaN(v) && !(v >= 0 && v <= math.MaxFloat64) {
			return true
		}
	}
	return !math.IsNaN(w.Lo) && !math.IsNaN(w.Hi) && !(w.Lo <= w.Weight && w.Weight <= w.Hi)
}

// runConfigName is the copy of the run's configuration in each checkpoint
// folder.
const runConfigName = "run-config.json"

// sameConfig refuses a run configuration cfg (read from path) that differs
// from the one its checkpoint was written with (ckPath; checkpoints written
// before it was kept have none), but for where the data file now is and
// the build.
func sameConfig(path string, cfg config.Run, ckPath string) error {
	if mm := (*checkpoint.MismatchError)(nil); errors.As(checkpoint.CheckListed(filepath.Dir(ckPath), runConfigName), &mm) {
		// The copy is what was changed (round 95 B1: config.json was blamed,
		// and restoring it from the copy replaced the run's configuration
		// with another run's): the checkpoint's own check names it.
		return nil
	}
	then, err := config.ReadAsWritten(ckPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if err := then.Validate(); err != nil { // round 136 B2: an impossible copy (its COMPLETE written again) blamed config.json, and the advised cp made the run unresumable
		return fmt.Errorf("%s: %w: the checkpoint's copy of the configuration holds what no run writes (edited, its %s written again); the run's own is %s: restore the copy from a backup, or train the run anew in another folder", ckPath, err, checkpoint.ManifestName, path)
	}
	then.ResolvePaths(filepath.Dir(path)) // as config.Read does for cfg
	if field, now, was := firstDiff(comparableConfig(cfg), comparableConfig(then), ""); field != "" {
		foreign := otherRunsEvals(filepath.Join(filepath.Dir(path), "metrics.csv"), filepath.Join(filepath.Dir(ckPath), "evals.csv"))
		if copyEdited(path, cfg, then) && !foreign { // another run's checkpoint, whole, is named as such below (round 114 B3)
			return fmt.Errorf("%s: field %q is %s, but the run's config.json and metrics.json hold %s: the checkpoint's copy of the configuration was edited (its %s written again), not the run's %s; restore the copy from a backup, or train the run anew in another folder", ckPath, field, was, now, checkpoint.ManifestName, path)
		}
		return &ConfigEditedError{Path: path, Field: field, Now: now, Was: was, Checkpoint: ckPath, Foreign: foreign, Unwitnessed: !configEdited(path, cfg, then)}
	}
	return nil
}

// copyEdited reports whether the run's finished record (metrics.json
// beside its config.json at path) agrees with the run's configuration cfg
// on its seed, algorithm and length where the checkpoint's copy, then,
// does not: the copy is what was edited (round 137 A2: config.json was
// blamed, and the advised cp of the copy over it spread the edit into the
// resumed run's metrics.json).
func copyEdited(path string, cfg, then config.Run) bool {
	m, err := ReadMetrics(filepath.Join(filepath.Dir(path), "metrics.json"))
	return err == nil && m.OfRun(cfg) && !m.OfRun(then)
}

// configEdited reports whether the run's finished record (metrics.json
// beside its config.json at path) agrees with the checkpoint's copy of the
// configuration, then, on its seed, algorithm and length where config.json,
// cfg, does not: config.json is what was edited.
func configEdited(path string, cfg, then config.Run) bool {
	return copyEdited(path, then, cfg)
}

// ConfigEdited returns a *ConfigEditedError where cfg, read from the
// config.json of the run in dir, differs from the copy its checkpoint
// folder holds (as resume checks first); nil otherwise (no checkpoint, no
// copy, or a copy that cannot be read, which resume reports on).
func ConfigEdited(dir string, cfg config.Run) error {
	var edited *ConfigEditedError
	if err := sameConfig(filepath.Join(dir, "config.json"), cfg, filepath.Join(dir, checkpointName, runConfigName)); errors.As(err, &edited) {
		return edited
	}
	return nil
}

// ConfigEditedError is a run's config.json that differs from the
// configuration its checkpoint was written with (a copy in the checkpoint
// folder).
type ConfigEditedError struct {
	Path, Field, Now, Was, Checkpoint string
	// Foreign: the checkpoint's evaluations are not those of the run's
	// metrics.csv, so the checkpoint is another run's (or config.json and
	// metrics.csv both are): restoring config.json from it would make the
	// folder that other run's.
	Foreign bool
	// Unwitnessed: no third record (metrics.json) says which of the two
	// was edited: config.json, or the checkpoint's copy with its COMPLETE
	// written again (round 138 B1: config.json was blamed, and the copy
	// advised over it shortened the run from 60 iterations to 30).
	Unwitnessed bool
}

func (e *ConfigEditedError) Error() string {
	what := ": the run cannot continue under another configuration"
	if e.Foreign {
		what = ", and its evaluations (evals.csv) are not those of the run's metrics.csv: the checkpoint is another run's, or config.json and metrics.csv both are"
	}
	if e.Unwitnessed && !e.Foreign {
		return fmt.Sprintf("%s: field %q is %s, but the checkpoint's copy of the configuration (%s) holds %s: one of the two was edited%s; %s; a command that only reads the model (sample, energy, convert) takes the checkpoint folder itself, %s", e.Path, e.Field, e.Now, e.Checkpoint, e.Was, what, e.Remedy(), filepath.Dir(e.Checkpoint))
	}
	return fmt.Sprintf("%s: field %q is %s, but the checkpoint was written with %s (%s)%s; %s; a command that only reads the model (sample, energy, convert) takes the checkpoint folder itself, %s", e.Path, e.Field, e.Now, e.Was, e.Checkpoint, what, e.Remedy(), filepath.Dir(e.Checkpoint))
}

// Remedy is what makes the run whole again: config.json restored from
// the checkpoint's copy where it was edited; where the checkpoint is
// another run's (Foreign), that run's configuration would replace this
// run's, so the run's own checkpoint put back instead.
func (e *ConfigEditedError) Remedy() string {
	if e.Foreign {
		return "put the run's own checkpoint back if you keep it, or move this folder away and start a new run (copying the checkpoint's run-config.json over config.json would make this folder that other run's)"
	}
	if e.Unwitnessed {
		return fmt.Sprintf("undo the edit: if config.json was edited, cp %s %s restores it; if the checkpoint's copy was (its %s written again), restore the copy from a backup, or train the run anew in another folder", shellquote.Quote(e.Checkpoint), shellquote.Quote(e.Path), checkpoint.ManifestName)
	}
	return fmt.Sprintf("undo the edit (cp %s %s restores it), or start a new run", shellquote.Quote(e.Checkpoint), shellquote.Quote(e.Path))
}

// comparableConfig is c as decoded JSON without what may differ between
// two runs of one configuration: the build, the memory limit accepted
// under, and where the data are
// (data.file, data.key, data_dir and its files' checksums).
func comparableConfig(c config.Run) map[string]any {
	c.Build, c.DataDir, c.DataDirSHA256 = nil, "", nil // the sums are checked as the data load
	c.MemoryAccepted = nil                             // the machine's, not the run's
	c.PlotFormat = ""                                  // how its figures are drawn
	// A flow file recorded by its checksum is that, wherever it is (round
	// 101 B1, B2); by its path otherwise (runs made before checksums were
	// recorded).
	if f := c.Model.FlowONNX; f != nil {
		g := *f
		if g.SampleSHA256 != "" {
			g.Sample = ""
		}
		if g.DensitySHA256 != "" {
			g.Density = ""
		}
		c.Model.FlowONNX = &g
	}
	if c.Data != nil {
		d := *c.Data
		hasModes := d.Modes != ""
		d.File, d.Key, d.Modes = "", "", "" // where the files are (round 80 B7: a moved modes file's path could not be written)
		if hasModes {
			d.Modes = "(a file of mode centres)" // whether there are centres is the run's (round 128 A6: removed, the checkpoint's evals.csv was blamed)
		}
		d.ModesSHA256 = "" // checked as the data load; runs made before it was recorded have none
		c.Data = &d
	}
	b, _ := json.Marshal(c)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// ConfigDiff returns the first field (a dotted JSON path) where the runs
// configured by a and b differ, with a's and b's values, or "" where they
// are the same configuration (builds and data locations aside).
func ConfigDiff(a, b config.Run) (field, va, vb string) {
	return firstDiff(comparableConfig(a), comparableConfig(b), "")
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

// fallbackNote says, when the run in dir will resume from
// checkpoint.old/ because checkpoint/ is incomplete or damaged, so, and
// that checkpoint/ is removed where removing ("" when it will not).
func fallbackNote(dir string, removing bool) string {
	best, err := LatestCheckpoint(dir)
	final := filepath.Join(dir, checkpointName)
	if err != nil || !strings.HasSuffix(best, oldSuffix) || !exists(final) || checkComplete(final, false) == nil {
		return ""
	}
	note := fmt.Sprintf("%s is incomplete or damaged; using the previous checkpoint, %s", final, filepath.Base(best))
	if it, ok := CheckpointIter(best); ok {
		note += fmt.Sprintf(" (iteration %d)", it)
	}
	if !removing {
		return note
	}
	lost := ", and removing it"
	if it, ok := CheckpointIter(final); ok { // round 131 B2: its iteration, lost, unsaid
		lost = fmt.Sprintf(", and removing it (its state.json says iteration %d)", it)
	}
	return note + lost
}

// NothingToResumeError is Resume's error for a run folder without a
// complete checkpoint; Err (matching ErrNoCheckpoint) says why each
// checkpoint folder there is not one.
type NothingToResumeError struct{ Err error }

// NothingToResumeAdvice ends a NothingToResumeError's message where no
// copy restores the checkpoint (reproduce recognises it in its train
// child's last line, to give its own advice).
const NothingToResumeAdvice = "; nothing to resume: start the run again (with --force on the command line)"

func (e NothingToResumeError) Error() string {
	if e.Restorable() { // round 96 B3: --force advised beside the restore that saves the run
		return e.Err.Error() + "; restored, the run resumes (started again with --force, it would be lost)"
	}
	if nc := (noCheckpointError{}); errors.As(e.Err, &nc) && nc.edited { // round 141 B3: --force advised, losing the iterations of a run a backup of its checkpoint restores
		return e.Err.Error() + "; restored from a backup, the run resumes (started again with --force, its iterations would be lost)"
	}
	return e.Err.Error() + NothingToResumeAdvice
}

// Restorable reports whether a copy restores a checkpoint there (the
// error says which).
func (e NothingToResumeError) Restorable() bool {
	nc := noCheckpointError{}
	return errors.As(e.Err, &nc) && nc.restorable
}

func (e NothingToResumeError) Unwrap() error { return e.Err }

// ReadRunConfig reads the configuration of the run in dir (its
// config.json).
func ReadRunConfig(dir string) (config.Run, error) {
	path := filepath.Join(dir, "config.json")
	cfg, err := config.Read(path)
	if err == nil {
		return cfg, nil
	}
	// Deleted (probe 60: "open …/config.json: no such file", nothing
	// more), or a regular file cut, emptied or edited into something
	// invalid (round 80 B4): the copy in the checkpoint restores it. A
	// folder, FIFO or unreadable file is left to its message: cp would
	// not help there.
	fi, statErr := os.Lstat(path)
	if errors.Is(statErr, fs.ErrNotExist) || (statErr == nil && fi.Mode().IsRegular() && !errors.As(err, new(*fs.PathError))) {
		if restore := ConfigRestore(dir); restore != "" {
			return cfg, fmt.Errorf("%w: %s", err, restore)
		}
	}
	if statErr == nil && !fi.Mode().IsRegular() { // round 95 B11: a dangling link was "no such file", no way on
		if restore := ConfigRestore(dir); restore != "" {
			return cfg, fmt.Errorf("%s: move it away; %s", notAFile(path, fi), restore)
		}
	}
	return cfg, err
}

// notAFile says what the file at path (fi its Lstat), not a regular
// file, is: a link (and to what, if it leads nowhere), a folder, ….
func notAFile(path string, fi fs.FileInfo) string {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		if _, err := os.Stat(path); err != nil {
			return fmt.Sprintf("%s is a link to %s, which does not exist", path, target)
		}
		return fmt.Sprintf("%s is a link to %s, which is not the run's configuration", path, target)
	}
	return safefile.Regular(path, fi).Error()
}

// ConfigRestore says how to restore the config.json of the run in dir
// from the copy its last checkpoint holds, or "" where it holds none.
func ConfigRestore(dir string) string {
	ck, err := LatestCheckpoint(dir)
	if err != nil {
		return ""
	}
	copied := filepath.Join(ck, runConfigName)
	if !exists(copied) {
		return ""
	}
	return fmt.Sprintf("the run's checkpoint holds a copy of its configuration: cp %s %s restores it", shellquote.Quote(copied), shellquote.Quote(filepath.Join(dir, "config.json")))
}

// dataSource names where the path of the data that the run in dir reads
// comes from: the option given, or its config.json.
func dataSource(dir string, opt ResumeOptions) string {
	switch {
	case opt.DataFile != "":
		return "the data file given"
	case opt.DataDir != "":
		return "the data folder given"
	}
	return filepath.Join(dir, "config.json")
}

// dataPresent checks that the data file or folder the run in dir reads
// from now on is there, naming where its path comes from.
func dataPresent(cfg config.Run, dir string, opt ResumeOptions) error {
	from := dataSource(dir, opt)
	switch {
	case cfg.Data != nil:
		fi, err := os.Stat(cfg.Data.File)
		if err == nil {
			err = safefile.Regular(cfg.Data.File, fi) // probe 25: a folder waited, then was named as config.json's
		}
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
	case cfg.DataDir != "":
		fi, err := os.Stat(cfg.DataDir)
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is not a folder", cfg.DataDir)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
	}
	return nil
}

func resume(dir string, amend func(*config.Run) error, opt ResumeOptions) (*Run, error) {
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
	if err := dataPresent(cfg, dir, opt); err != nil {
		return nil, err // before any wait for the run's readers (probe 24: 20 s, then the refusal)
	}
	if opt.ReadOnly {
		return resumeFrom(dir, cfg, opt)
	}
	// Finish or undo a replacement that a crash interrupted, so that
	// dir/checkpoint is the newest complete checkpoint; say so where
	// checkpoint/ itself is passed over for the previous one.
	fallback := fallbackNote(dir, true)
	var ok bool
	recoverFolders := func() (err error) {
		ok, err = recoverCheckpoint(dir)
		return err
	}
	var readerStuck bool
	if final := filepath.Join(dir, checkpointName); exists(final+newSuffix) || exists(final+oldSuffix) {
		if err := cfg.CheckData(); err != nil {
			return nil, fmt.Errorf("%s: %w", dataSource(dir, opt), err) // other data refused before the wait (probe 26), hashed twice only here
		}
		var stop <-chan struct{}
		if opt.Context != nil {
			stop = opt.Context.Done()
		}
		// Folders to rename: readers held off, as by a checkpoint (a
		// stopped reader held resume 20 s, silent and deaf to Ctrl-C, and
		// the first checkpoint 20 s more; probe 23).
		err = writeHeld(dir, &readerStuck, stop, opt.Waiting, leaveOnStop, recoverFolders) // interrupted, nothing is renamed under the reader (probe 24)
	} else {
		err = recoverFolders() // nothing to rename: no lock to wait for (a stopped reader held resume 20 s, probe 22)
	}
	switch {
	case err != nil:
		return nil, err
	case !ok:
		if _, err := LatestCheckpoint(dir); err != nil {
			return nil, NothingToResumeError{err} // says why each folder is incomplete
		}
		return nil, NothingToResumeError{noCheckpointError{dir: dir}}
	}
	// The checkpoint recovered belongs to config.json (LatestCheckpoint
	// passes over those that do not).
	r, err := restoreRun(dir, filepath.Join(dir, checkpointName), cfg, fallback)
	if err != nil {
		return nil, err
	}
	r.readerStuck, r.Waiting = readerStuck, opt.Waiting
	if amend != nil {
		// The record says where the data now come from, even if nothing
		// is left to train.
		if err := jsonfile.Write(filepath.Join(dir, "config.json"), r.Config); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// resumeFrom is resume for ResumeOptions.ReadOnly: the run in dir as its
// newest complete checkpoint holds it, read where it lies (an interrupted
// replacement is left for the next resume or checkpoint to recover).
func resumeFrom(dir string, cfg config.Run, opt ResumeOptions) (*Run, error) {
	ck, err := LatestCheckpoint(dir)
	if errors.Is(err, ErrNoCheckpoint) {
		return nil, NothingToResumeError{err}
	}
	if err != nil {
		return nil, err
	}
	r, err := restoreRun(dir, ck, cfg, fallbackNote(dir, false))
	if err != nil {
		return nil, err
	}
	r.Waiting = opt.Waiting
	return r, nil
}

// restoreRun is the run in dir (configuration cfg) restored from its
// checkpoint folder ck, with the note fallback if not "".
func restoreRun(dir, ck string, cfg config.Run, fallback string) (*Run, error) {
	models, _, err := checkpoint.Load(ck)
	if err != nil {
		return nil, err
	}
	r, err := prepare(cfg, dir, from{models: &models, source: filepath.Join(dir, "config.json")})
	if over := (*sysmem.OverError)(nil); errors.As(err, &over) { // probe 58: "lower these fields", which a resume refuses
		return nil, fmt.Errorf("%w; but a resumed run keeps its fields: %s", err, cfg.MemoryAccepted.Where())
	}
	if err != nil {
		return nil, err
	}
	r.checkpointed, r.savedIter = true, r.Trainer.Iter
	if err := r.Trainer.Restore(ck); err != nil {
		return nil, err
	}
	if err := r.restoreHistory(ck); err != nil {
		return nil, err
	}
	r.window.Evals = nil
	if fallback != "" {
		r.Notes = append(r.Notes, fallback)
	}
	if b := config.CurrentBuild(); cfg.Build != nil && *cfg.Build != b {
		r.Notes = append(r.Notes, fmt.Sprintf("the run was started with %s; resumed with %s: it will differ from an uninterrupted run at round-off", cfg.Build, b))
	}
	return r, nil
}

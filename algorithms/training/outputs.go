package training

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// Metrics is metrics.json: the final evaluation with the run's context.
type Metrics struct {
	Experiment string               `json:"experiment"`
	Algorithm  algorithms.Algorithm `json:"algorithm"`
	Seed       uint64               `json:"seed"`
	Iterations int                  `json:"iterations"`
	// Seconds is the training time, summed over the invocations of a
	// resumed run (each up to its last checkpoint; see Run.TrainingTime).
	Seconds     float64   `json:"seconds"`
	TrueWeights []float64 `json:"true_weights,omitempty"`
	// TrueHeldOutLL is the held-out data's mean exact log-density, the
	// reference for Final.HeldOutLL.
	TrueHeldOutLL float64 `json:"true_held_out_ll"`
	Final         Eval    `json:"final"`
	// GridLogZ is, in 2D, the EBM's log Z by grid quadrature (Run.GridLogZ)
	// and GridHeldOutLL the held-out log-likelihood it gives, beside
	// Final's, whose log Z is the importance-sampling estimate (round 90
	// A2: the run printed the grid's as the right one, 8.8 standard errors
	// away, and the files kept the other alone). Absent without a grid.
	GridLogZ      *float64 `json:"grid_log_z,omitempty"`
	GridHeldOutLL *float64 `json:"grid_held_out_ll,omitempty"`
	// GridMissed, where set, is where the grid misses the EBM's mass
	// (Run.MissedMass): the grid's numbers are those of its part.
	GridMissed *MissedMass `json:"grid_missed,omitempty"`
	// GridError, where set, is the error in the grid's mass that its
	// subgrids estimate where its cells are too coarse for the EBM's
	// features (Run.GridError): the grid's numbers may be off by up to
	// about that.
	GridError float64 `json:"grid_error,omitempty"`
	// Build names what decides the results' rounding (the same seed gives
	// the same numbers only with the same Go, BLAS and vector math).
	Build config.Build `json:"build"`
}

// WriteMetrics writes dir/metrics.json for the run's last evaluation; its
// time is the run's TrainingTime (summed over resumed invocations).
func WriteMetrics(path string, r *Run) error {
	m, err := r.finalMetrics()
	if err != nil {
		return err
	}
	return jsonfile.Write(path, m)
}

// finalMetrics is the metrics.json of the run's last evaluation, its time
// the run's TrainingTime.
func (r *Run) finalMetrics() (Metrics, error) {
	if len(r.Evals) == 0 {
		return Metrics{}, fmt.Errorf("algorithms: no evaluation to report")
	}
	m := Metrics{Experiment: r.Experiment.Name, Algorithm: r.Config.Train.Algorithm, Seed: r.Config.Seed,
		Iterations: r.Trainer.Iter, Seconds: r.TrainingTime().Seconds(), TrueWeights: r.Experiment.Weights, TrueHeldOutLL: r.TrueHeldOutLL, Final: r.Evals[len(r.Evals)-1],
		Build: config.CurrentBuild()}
	z, _, err := r.GridLogZ()
	if err != nil {
		return m, err
	}
	if final := m.Final; !math.IsNaN(z) && !math.IsInf(z, 0) {
		m.GridLogZ = &z
		if ll := final.HeldOutLL + final.LogZ.LogZ - z; !math.IsNaN(ll) && !math.IsInf(ll, 0) {
			m.GridHeldOutLL = &ll
		}
	}
	if m.GridMissed, err = r.MissedMass(); err != nil {
		return m, err
	}
	m.GridError = r.GridError()
	return m, nil
}

// OfRun reports whether m is of the run configured by cfg: its seed,
// algorithm and length (another run's metrics.json, copied in, is not:
// round 95 B3, round 96 B2).
func (m Metrics) OfRun(cfg config.Run) bool {
	return m.Seed == cfg.Seed && m.Iterations == cfg.Train.Iterations && m.Algorithm == cfg.Train.Algorithm
}

// ReadMetrics reads a metrics.json that WriteMetrics wrote. Values written
// as null (NaN or infinite) read as 0, but for the exact held-out
// log-likelihood and the final held-out log-likelihood, R-hats and weight
// MSE, which read as NaN (an experiment without an exact density, an
// evaluation without R-hat: not a value of 0).
func ReadMetrics(path string) (Metrics, error) {
	var raw struct {
		Final         json.RawMessage `json:"final"`
		TrueHeldOutLL json.RawMessage `json:"true_held_out_ll"`
	}
	if err := jsonfile.Read(path, &raw, jsonfile.Options{AllowUnknown: true}); err != nil {
		return Metrics{}, err
	}
	if len(raw.Final) == 0 || string(raw.Final) == "null" {
		return Metrics{}, fmt.Errorf("%s: field \"final\" is missing or null, want the run's last evaluation", path)
	}
	var m Metrics
	if err := jsonfile.Read(path, &m, jsonfile.Options{AllowUnknown: true}); err != nil {
		return m, err
	}
	if isNull(raw.TrueHeldOutLL) {
		m.TrueHeldOutLL = math.NaN()
	}
	var final map[string]json.RawMessage
	if json.Unmarshal(raw.Final, &final) == nil {
		for name, v := range map[string]*float64{"held_out_ll": &m.Final.HeldOutLL, "max_rhat": &m.Final.MaxRHat, "max_rhat_classic": &m.Final.MaxRHatClassic, "ebm_weight_mse": &m.Final.EBMWeightMSE} {
			if isNull(final[name]) {
				*v = math.NaN()
			}
		}
	}
	if err := m.check(); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// isNull reports whether a JSON value is absent or null.
func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

// check refuses metrics no run writes: an iteration count out of range,
// a final evaluation past it, a negative or non-finite time, weights
// outside [0, 1] or of another number of modes than the truth's.
func (m Metrics) check() error {
	if m.Iterations < 1 || m.Iterations > algorithms.MaxIterations {
		return fmt.Errorf("field \"iterations\" is %d, want 1 to %d", m.Iterations, algorithms.MaxIterations)
	}
	if m.Final.Iter < 1 || m.Final.Iter > m.Iterations {
		return fmt.Errorf("field \"final.iter\" is %d, outside 1 to field \"iterations\", %d: one of them was edited", m.Final.Iter, m.Iterations) // round 107 B4: "iterations" edited, "final.iter" blamed
	}
	if !(m.Seconds >= 0 && m.Seconds <= math.MaxFloat64) {
		return fmt.Errorf("field \"seconds\" is %v, want a duration ≥ 0", m.Seconds)
	}
	k := len(m.TrueWeights)
	inUnit := func(v float64) bool { return v >= 0 && v <= 1 }
	for _, f := range []struct {
		name string
		w    []float64
	}{{"true_weights", m.TrueWeights}, {"final.ebm_weights", m.Final.EBMWeights}, {"final.neg_weights", m.Final.NegWeights}, {"final.start_weights", m.Final.StartWeights}} {
		if f.w != nil && len(f.w) != k {
			return fmt.Errorf("field %q has %d weights, want %d (true_weights' modes)", f.name, len(f.w), k)
		}
		if i := slices.IndexFunc(f.w, func(v float64) bool { return !inUnit(v) && !math.IsNaN(v) }); i >= 0 {
			return fmt.Errorf("field %q holds %v at mode %d, want a weight in [0, 1]", f.name, f.w[i], i+1)
		}
	}
	for _, f := range []struct {
		name string
		w    []diagnostics.Weight
	}{{"final.chain_weights", m.Final.ChainWeights}, {"final.neg_weight_intervals", m.Final.NegIntervals}} {
		if f.w != nil && len(f.w) != k {
			return fmt.Errorf("field %q has %d weights, want %d (true_weights' modes)", f.name, len(f.w), k)
		}
		for i, w := range f.w {
			if !inUnit(w.Weight) || w.MCSE < 0 || w.MCSE > 1 {
				return fmt.Errorf("field %q holds weight %v ± %v at mode %d, want a weight in [0, 1] and an MCSE in [0, 1]", f.name, w.Weight, w.MCSE, i+1)
			}
		}
	}
	return nil
}

// inDataUnits returns x mapped to the experiment's data units.
func inDataUnits(exp *experiments.Experiment, x mat.Matrix) mat.Matrix {
	if exp.Scaling == nil {
		return x
	}
	return exp.Scaling.ToData(x)
}

// SamplesOfRun checks the run's samples.npy against what WriteSamples
// writes from its (final) persistent chains: another run's, or a damaged
// one, is an error naming it (round 96 B2: another run's samples.npy was
// kept by every command).
func SamplesOfRun(r *Run) error {
	path := filepath.Join(r.Dir, "samples.npy")
	a, err := npy.ReadFile(path)
	if err != nil {
		return err
	}
	m := inDataUnits(r.Experiment, r.Trainer.Samples())
	n, d := m.Dims()
	unknown := !r.Trainer.Config.PersistentChains() && r.Trainer.Negatives() == nil // CoopFlow's last negatives, which a checkpoint written before they were kept lacks
	if len(a.Shape) != 2 || a.Shape[1] != d || (a.Shape[0] != n && !unknown) {
		return fmt.Errorf("%s has shape %v, but the run's final chains are %d × %d: it is not this run's", path, a.Shape, n, d)
	}
	if unknown {
		return nil
	}
	for i := range n {
		for j := range d {
			if v := m.At(i, j); a.Data[i*d+j] != v && !(math.IsNaN(v) && math.IsNaN(a.Data[i*d+j])) {
				return fmt.Errorf("%s differs from the run's final chains (row %d, numbered from 0 as the array's first axis): it is not this run's, or one of the two was edited", path, i) // round 136 B5, B6: the checkpoint's chains may be the edited ones; the row's base unsaid
			}
		}
	}
	return nil
}

// WriteSamples writes the model's samples in the data's units to
// dir/samples.npy (float64, rows × d), atomically: the persistent chains'
// current states, or for CoopFlow, whose chains start afresh every
// iteration, the last iteration's negatives.
func WriteSamples(r *Run) error {
	m := inDataUnits(r.Experiment, r.Trainer.Samples())
	n, d := m.Dims()
	x, ok := m.(*mat.Dense)
	if !ok || x.RawMatrix().Stride != d { // rows apart in memory: copied together (else written as they are: probe 55, a bank of 100 million copied twice ran out of memory)
		x = mat.DenseCopyOf(m)
	}
	return npy.WriteFile(filepath.Join(r.Dir, "samples.npy"), &npy.Array{Shape: []int{n, d}, Data: x.RawMatrix().Data[:n*d]}, npy.Float64)
}

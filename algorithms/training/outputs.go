package training

import (
	"fmt"
	"path/filepath"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/io/npy"
)

// Metrics is metrics.json: the final evaluation with the run's context.
type Metrics struct {
	Experiment  string               `json:"experiment"`
	Algorithm   algorithms.Algorithm `json:"algorithm"`
	Seed        uint64               `json:"seed"`
	Iterations  int                  `json:"iterations"`
	Seconds     float64              `json:"seconds"`
	TrueWeights []float64            `json:"true_weights,omitempty"`
	// TrueHeldOutLL is the held-out data's mean exact log-density, the
	// reference for Final.HeldOutLL.
	TrueHeldOutLL float64 `json:"true_held_out_ll"`
	Final         Eval    `json:"final"`
	// Build names what decides the results' rounding (the same seed gives
	// the same numbers only with the same Go, BLAS and vector math).
	Build config.Build `json:"build"`
}

// WriteMetrics writes dir/metrics.json for the run's last evaluation.
func WriteMetrics(path string, r *Run, elapsed time.Duration) error {
	if len(r.Evals) == 0 {
		return fmt.Errorf("algorithms: no evaluation to report")
	}
	return jsonfile.Write(path, Metrics{Experiment: r.Experiment.Name, Algorithm: r.Config.Train.Algorithm, Seed: r.Config.Seed,
		Iterations: r.Trainer.Iter, Seconds: elapsed.Seconds(), TrueWeights: r.Experiment.Weights, TrueHeldOutLL: r.TrueHeldOutLL, Final: r.Evals[len(r.Evals)-1],
		Build: config.CurrentBuild()})
}

// ReadMetrics reads a metrics.json that WriteMetrics wrote. Values written
// as null (NaN or infinite) read as 0.
func ReadMetrics(path string) (Metrics, error) {
	var m Metrics
	if err := jsonfile.Read(path, &m, jsonfile.Options{AllowUnknown: true}); err != nil {
		return m, err
	}
	return m, nil
}

// inDataUnits returns x mapped to the experiment's data units.
func inDataUnits(exp *experiments.Experiment, x mat.Matrix) mat.Matrix {
	if exp.Scaling == nil {
		return x
	}
	return exp.Scaling.ToData(x)
}

// WriteSamples writes the model's samples in the data's units to
// dir/samples.npy (float64, rows × d), atomically: the persistent chains'
// current states, or for CoopFlow, whose chains start afresh every
// iteration, the last iteration's negatives.
func WriteSamples(r *Run) error {
	x := mat.DenseCopyOf(inDataUnits(r.Experiment, r.Trainer.Samples()))
	n, d := x.Dims()
	return npy.WriteFile(filepath.Join(r.Dir, "samples.npy"), &npy.Array{Shape: []int{n, d}, Data: x.RawMatrix().Data}, npy.Float64)
}

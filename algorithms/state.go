package algorithms

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/safefile"
	"gonum.org/v1/gonum/mat"
)

// trainerState is state.json: everything of a Trainer that is not an array.
// maxStepSize bounds a restored MALA step: larger steps are corruption
// (the adaptation never reaches them on any target flowebm trains).
const maxStepSize = 1e6

// requireFields refuses a JSON object file lacking any of names, or
// holding null for one (which decodes as zero and would pass as a value).
func requireFields(path string, names ...string) error {
	var raw map[string]json.RawMessage
	if err := readJSON(path, &raw, false); err != nil {
		return err
	}
	for _, n := range names {
		if v, ok := raw[n]; !ok || string(v) == "null" {
			return fmt.Errorf("%s: field %q is missing or null", path, n)
		}
	}
	return nil
}

type trainerState struct {
	Iter     int               `json:"iter"`
	DataPos  int               `json:"data_pos"`
	StepSize float64           `json:"step_size,omitempty"`
	RNG      map[string][]byte `json:"rng"`
}

// SaveState writes the trainer's state (iteration, persistent bank, data
// order, optimiser moments, random streams, MALA step size) to dir/state.json
// and dir/state.npz, each atomically. With the models' checkpoint it is
// enough for Restore to continue exactly as an uninterrupted run.
func (t *Trainer) SaveState(dir string) error {
	st := trainerState{Iter: t.Iter, DataPos: t.dataPos, RNG: map[string][]byte{}}
	if t.kernels.Local != nil {
		st.StepSize = t.kernels.Local.StepSize
	}
	for name, src := range t.streams() {
		b, err := src.MarshalBinary()
		if err != nil {
			return err
		}
		st.RNG[name] = b
	}
	r, d := t.Bank.Dims()
	arrays := map[string]*npy.Array{"bank": {Shape: []int{r, d}, Data: t.Bank.RawMatrix().Data}}
	order := make([]float64, len(t.order))
	for i, v := range t.order {
		order[i] = float64(v)
	}
	arrays["data_order"] = &npy.Array{Shape: []int{len(order)}, Data: order}
	if t.thetaAvg != nil {
		// The checkpoint's EBM is the averaged one; the current iterate,
		// which training continues from, is kept here.
		arrays["ebm_current"] = &npy.Array{Shape: []int{len(t.thetaE)}, Data: t.thetaE}
	}
	addOpt := func(prefix string, o Optimizer) {
		for k, v := range o.State() {
			arrays[prefix+k] = &npy.Array{Shape: []int{len(v)}, Data: v}
		}
	}
	addOpt("ebm_optim.", t.optEBM)
	if t.optFlow != nil {
		addOpt("flow_optim.", t.optFlow)
	}
	if err := npz.WriteFile(filepath.Join(dir, "state.npz"), arrays, npy.Float64); err != nil {
		return err
	}
	return safefile.Write(filepath.Join(dir, "state.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	})
}

func (t *Trainer) streams() map[string]interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
} {
	return map[string]interface {
		MarshalBinary() ([]byte, error)
		UnmarshalBinary([]byte) error
	}{"data": t.rngs.Data, "chains": t.rngs.Chains, "bank": t.rngs.Bank, "init": t.rngs.Init}
}

// Restore loads what SaveState wrote in dir. The trainer must have been
// built with the same configuration and data, and its models loaded from
// the same checkpoint.
func (t *Trainer) Restore(dir string) error {
	path := filepath.Join(dir, "state.json")
	var st trainerState
	if err := readJSON(path, &st, true); err != nil {
		return err
	}
	if err := requireFields(path, "iter", "data_pos", "rng"); err != nil {
		return err
	}
	if st.Iter < 0 || st.Iter > t.Config.Iterations {
		return fmt.Errorf("%s: field \"iter\" is %d, want 0..%d (the run's train.iterations)", path, st.Iter, t.Config.Iterations)
	}
	for name, src := range t.streams() {
		if err := src.UnmarshalBinary(st.RNG[name]); err != nil {
			return fmt.Errorf("%s: field \"rng.%s\": %w", path, name, err)
		}
	}
	arc, err := npz.ReadFile(filepath.Join(dir, "state.npz"))
	if err != nil {
		return err
	}
	bank, err := arc.Get("bank")
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	r, d := t.Bank.Dims()
	if len(bank.Shape) != 2 || bank.Shape[0] != r || bank.Shape[1] != d {
		return fmt.Errorf("%s: state.npz member \"bank\" has shape %v, want [%d %d] (persistent × dim)", dir, bank.Shape, r, d)
	}
	if i := firstBad(bank.Data, false); i >= 0 {
		return fmt.Errorf("%s: state.npz member \"bank\" holds %v at chain %d, want finite states", dir, bank.Data[i], i/d)
	}
	t.Bank = mat.NewDense(r, d, bank.Data)
	order, err := arc.Get("data_order")
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	n, _ := t.data.Dims()
	t.order = make([]int, len(order.Data))
	for i, v := range order.Data {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("%s: state.npz member \"data_order\" holds %v, want indices below %d", dir, v, n)
		}
		t.order[i] = int(v)
	}
	if st.DataPos < 0 || st.DataPos > len(t.order) {
		return fmt.Errorf("%s: field \"data_pos\" is %d, want 0..%d", path, st.DataPos, len(t.order))
	}
	t.dataPos = st.DataPos
	getOpt := func(prefix string, o Optimizer) error {
		m := map[string][]float64{}
		for k := range o.State() {
			a, err := arc.Get(prefix + k)
			if err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
			m[k] = a.Data
		}
		if err := o.SetState(m); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		return nil
	}
	if err := getOpt("ebm_optim.", t.optEBM); err != nil {
		return err
	}
	if t.optFlow != nil {
		if err := getOpt("flow_optim.", t.optFlow); err != nil {
			return err
		}
	}
	if t.kernels.Local != nil {
		if !(st.StepSize > 0 && st.StepSize <= maxStepSize) {
			return fmt.Errorf("%s: field \"step_size\" is %v, want the MALA step in (0, %g]", path, st.StepSize, maxStepSize)
		}
		t.kernels.Local.StepSize = st.StepSize
	}
	t.Iter = st.Iter
	// The models' parameters were loaded from the checkpoint: re-read the
	// flat copies the optimisers update.
	t.EBM.Params.Flatten(t.thetaE)
	if t.thetaAvg != nil {
		copy(t.thetaAvg, t.thetaE)
		cur, err := arc.Get("ebm_current")
		if err != nil {
			return fmt.Errorf("%s: %w (the run averages the EBM: average_window %d)", dir, err, t.Config.AverageWindow)
		}
		if len(cur.Data) != len(t.thetaE) {
			return fmt.Errorf("%s: state.npz member \"ebm_current\" has %d values, want %d (the EBM's parameter count)", dir, len(cur.Data), len(t.thetaE))
		}
		copy(t.thetaE, cur.Data)
		t.EBM.Params.SetFlat(t.thetaE)
	}
	if t.Flow != nil {
		t.Flow.Params.Flatten(t.thetaF)
	}
	return nil
}

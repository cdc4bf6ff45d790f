package algorithms

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/internal/jsonfile"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/safefile"
)

// maxStepSize bounds a restored MALA step: larger steps are corruption
// (the adaptation never reaches them on any target flowebm trains).
const maxStepSize = 1e6

// requireFields refuses a JSON object file lacking any of names, or
// holding null for one (which decodes as zero and would pass as a value).
func requireFields(path string, names ...string) error {
	var raw map[string]json.RawMessage
	if err := jsonfile.Read(path, &raw, jsonfile.Options{AllowUnknown: true}); err != nil {
		return err
	}
	for _, n := range names {
		if v, ok := raw[n]; !ok || string(v) == "null" {
			return fmt.Errorf("%s: field %q is missing or null", path, n)
		}
	}
	return nil
}

// trainerState is state.json: everything of a Trainer that is not an array.
type trainerState struct {
	Iter     int               `json:"iter"`
	DataPos  int               `json:"data_pos"`
	StepSize float64           `json:"step_size,omitempty"`
	RNG      map[string]string `json:"rng"` // each stream's state, base64
}

// CheckStateFiles reports an error if dir's state.json does not decode or
// its state.npz is not a readable archive: a quick check of a checkpoint's
// completeness that reads no array (Restore checks every member).
func CheckStateFiles(dir string) error {
	var st trainerState
	if err := jsonfile.Read(filepath.Join(dir, "state.json"), &st, jsonfile.Options{AllowUnknown: true}); err != nil {
		return err
	}
	zr, err := npz.OpenReader(filepath.Join(dir, "state.npz"))
	if err != nil {
		return err
	}
	return zr.Close()
}

// SaveState writes the trainer's state (iteration, persistent bank, data
// order, optimiser moments, random streams, MALA step size) to dir/state.json
// and dir/state.npz, each atomically. With the models' checkpoint it is
// enough for Restore to continue exactly as an uninterrupted run.
func (t *Trainer) SaveState(dir string) error {
	st := trainerState{Iter: t.Iter, DataPos: t.dataPos, RNG: map[string]string{}}
	if t.kernels.Local != nil {
		st.StepSize = t.kernels.Local.StepSize
	}
	for name, src := range t.streams() {
		b, err := src.MarshalBinary()
		if err != nil {
			return err
		}
		st.RNG[name] = base64.StdEncoding.EncodeToString(b)
	}
	r, d := t.Bank.Dims()
	arrays := map[string]*npy.Array{"bank": {Shape: []int{r, d}, Data: t.Bank.RawMatrix().Data}}
	order := make([]float64, len(t.order))
	for i, v := range t.order {
		order[i] = float64(v)
	}
	arrays["data_order"] = &npy.Array{Shape: []int{len(order)}, Data: order}
	if !t.Config.PersistentChains() && t.neg != nil { // CoopFlow's samples: a resumed run wrote others (round 107 A1, A2)
		n, d := t.neg.Dims()
		arrays["negatives"] = &npy.Array{Shape: []int{n, d}, Data: mat.DenseCopyOf(t.neg).RawMatrix().Data}
	}
	for name, v := range t.masters() {
		// The checkpoint's EBM is the averaged one, and float32 models
		// hold their parameters rounded: the float64 values training
		// continues from are kept here (probe 65: a float32 run resumed
		// from its rounded weights and drifted 1e-7 from an uninterrupted
		// one).
		arrays[name] = &npy.Array{Shape: []int{len(v)}, Data: v}
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
// the same checkpoint. Every value is checked before it is used.
func (t *Trainer) Restore(dir string) error {
	path := filepath.Join(dir, "state.json")
	st, err := t.readState(path)
	if err != nil {
		return err
	}
	arc, err := npz.OpenReader(filepath.Join(dir, "state.npz"))
	if err != nil {
		return err
	}
	defer arc.Close()
	ck := stateArchive{dir: dir, arc: arc}
	if err := t.checkStateMembers(ck); err != nil {
		return err
	}
	if err := t.restoreBank(ck); err != nil {
		return err
	}
	if err := t.restoreOrder(ck, path, st.DataPos); err != nil {
		return err
	}
	if err := t.restoreNegatives(ck); err != nil {
		return err
	}
	if err := ck.optimiser("ebm_optim.", t.optEBM); err != nil {
		return err
	}
	if t.optFlow != nil {
		if err := ck.optimiser("flow_optim.", t.optFlow); err != nil {
			return err
		}
	}
	if t.kernels.Local != nil {
		t.kernels.Local.StepSize = st.StepSize
	}
	t.Iter = st.Iter
	// The models' parameters were loaded from the checkpoint: re-read the
	// flat copies the optimisers update.
	t.EBM.Params.Flatten(t.thetaE)
	if t.Flow != nil {
		t.Flow.Params.Flatten(t.thetaF)
	}
	if err := t.restoreAveraged(ck); err != nil {
		return err
	}
	return t.restoreMasters(ck)
}

// restoreMasters restores a float32 run's float64 parameters where its
// checkpoint has them (one written before session 36 has not: its run
// continues from the rounded weights, as it did).
func (t *Trainer) restoreMasters(s stateArchive) error {
	for name, v := range t.masters() {
		if name == "ebm_current" && t.thetaAvg != nil || !slices.Contains(s.arc.Names, name) {
			continue // the averaged run's current EBM: restoreAveraged's
		}
		got, _, err := s.get(name, len(v), "the float64 parameters the float32 model rounds")
		if err != nil {
			return err
		}
		copy(v, got)
	}
	return nil
}

// readState reads state.json, checks its fields and restores the random
// streams.
func (t *Trainer) readState(path string) (trainerState, error) {
	var st trainerState
	if err := jsonfile.Read(path, &st, jsonfile.Options{}); err != nil {
		return st, err
	}
	if err := requireFields(path, "iter", "data_pos", "rng"); err != nil {
		return st, err
	}
	if st.Iter < 0 || st.Iter > t.Config.Iterations {
		return st, fmt.Errorf("%s: field \"iter\" is %d, want 0..%d (the run's train.iterations)", path, st.Iter, t.Config.Iterations)
	}
	if t.kernels.Local != nil && !(st.StepSize > 0 && st.StepSize <= maxStepSize) {
		return st, fmt.Errorf("%s: field \"step_size\" is %v, want the MALA step in (0, %g]", path, st.StepSize, maxStepSize)
	}
	streams := t.streams()
	for name := range st.RNG {
		if _, ok := streams[name]; !ok { // probe 19: accepted unread
			return st, fmt.Errorf("%s: field \"rng.%s\" names no random stream of this run: want only %s", path, name, strings.Join(slices.Sorted(maps.Keys(streams)), ", "))
		}
	}
	for name, src := range streams {
		if _, ok := st.RNG[name]; !ok {
			return st, fmt.Errorf("%s: field \"rng.%s\" is missing: want the state of the %s random stream, as flowebm wrote it", path, name, name)
		}
		b, err := base64.StdEncoding.DecodeString(st.RNG[name])
		if err == nil {
			err = src.UnmarshalBinary(b)
		}
		if err != nil {
			return st, fmt.Errorf("%s: field \"rng.%s\": %w", path, name, err)
		}
	}
	return st, nil
}

// stateArchive is a checkpoint's state.npz.
type stateArchive struct {
	dir string
	arc *npz.Reader // members are decoded when asked for
}

// get returns member name, which must hold n finite values (n < 0: any
// number); what is the member's meaning in messages.
func (s stateArchive) get(name string, n int, what string) ([]float64, []int, error) {
	a, err := s.arc.Get(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s.dir, err)
	}
	if n >= 0 && len(a.Data) != n {
		return nil, nil, fmt.Errorf("%s: state.npz member %q has %d values, want %d (%s)", s.dir, name, len(a.Data), n, what)
	}
	if i := firstBad(a.Data, false); i >= 0 {
		return nil, nil, fmt.Errorf("%s: state.npz member %q holds %v at index %d, want finite values (%s)", s.dir, name, a.Data[i], i, what)
	}
	return a.Data, a.Shape, nil
}

// masters are the float64 parameter vectors that the checkpoint's models
// do not hold exactly, by their state.npz names: the current EBM where the
// checkpoint holds the average, the average and the current EBM, and the
// flow, where the models are float32.
func (t *Trainer) masters() map[string][]float64 {
	m := map[string][]float64{}
	narrowE := t.EBM.Params.Dtype() == tensor.Float32
	if t.thetaAvg != nil || narrowE {
		m["ebm_current"] = t.thetaE
	}
	if t.thetaAvg != nil && narrowE {
		m["ebm_average"] = t.thetaAvg
	}
	if t.Flow != nil && t.Flow.Params.Dtype() == tensor.Float32 {
		m["flow_current"] = t.thetaF
	}
	return m
}

// checkStateMembers refuses members state.npz should not hold (they are
// never decoded: one could be large).
func (t *Trainer) checkStateMembers(s stateArchive) error {
	want := map[string]bool{"bank": true, "data_order": true, "negatives": !t.Config.PersistentChains()}
	for name := range t.masters() {
		want[name] = true
	}
	for prefix, o := range map[string]Optimizer{"ebm_optim.": t.optEBM, "flow_optim.": t.optFlow} {
		if o == nil {
			continue
		}
		for k := range o.State() {
			want[prefix+k] = true
		}
	}
	for _, n := range s.arc.Names {
		if !want[n] {
			return fmt.Errorf("%s: state.npz holds the member %q, which this run's state has no place for", s.dir, n)
		}
	}
	return nil
}

// optimiser restores an optimiser's state from the members prefix+key.
func (s stateArchive) optimiser(prefix string, o Optimizer) error {
	m := map[string][]float64{}
	for k := range o.State() {
		a, err := s.arc.Get(prefix + k)
		if err != nil {
			return fmt.Errorf("%s: %w", s.dir, err)
		}
		m[k] = a.Data
	}
	if err := o.SetState(m); err != nil {
		return fmt.Errorf("%s: %w", s.dir, err)
	}
	return nil
}

// restoreBank restores the persistent chains, decoded into the bank the
// run has allocated (probe 56: a bank of 10⁸ chains, which the run had
// room for once, was refused on resuming for want of room for a copy).
func (t *Trainer) restoreBank(s stateArchive) error {
	r, d := t.Bank.Dims()
	h, err := s.arc.Header("bank")
	if err != nil {
		return fmt.Errorf("%s: %w", s.dir, err)
	}
	if len(h.Shape) != 2 || h.Shape[0] != r || h.Shape[1] != d {
		return fmt.Errorf("%s: state.npz member \"bank\" has shape %v, want [%d %d] (persistent × dim)", s.dir, h.Shape, r, d)
	}
	raw := t.Bank.RawMatrix() // a NewDense: rows contiguous
	if _, err := s.arc.GetInto("bank", raw.Data[:r*d]); err != nil {
		return fmt.Errorf("%s: %w", s.dir, err)
	}
	if i := firstBad(raw.Data[:r*d], false); i >= 0 {
		return fmt.Errorf("%s: state.npz member \"bank\" holds %v at index %d, want finite values (persistent × dim)", s.dir, raw.Data[i], i)
	}
	return nil
}

// restoreNegatives restores the last negatives of a run whose chains
// start afresh (CoopFlow: its samples), where the checkpoint holds them
// (those written before did not: the run then has none until its next
// iteration).
func (t *Trainer) restoreNegatives(s stateArchive) error {
	if !slices.Contains(s.arc.Names, "negatives") {
		return nil
	}
	_, d := t.Bank.Dims()
	most := t.Config.Chains() * max(1, t.Config.Sampler.Steps) // every state of every chain ("all"), at most
	h, err := s.arc.Header("negatives")
	if err != nil {
		return fmt.Errorf("%s: %w", s.dir, err)
	}
	if len(h.Shape) != 2 || h.Shape[0] < 1 || h.Shape[0] > most || h.Shape[1] != d {
		return fmt.Errorf("%s: state.npz member \"negatives\" has shape %v, want [n %d] (the last negatives, n from 1 to %d)", s.dir, h.Shape, d, most)
	}
	a, err := s.arc.Get("negatives")
	if err != nil {
		return fmt.Errorf("%s: %w", s.dir, err)
	}
	if i := firstBad(a.Data, false); i >= 0 {
		return fmt.Errorf("%s: state.npz member \"negatives\" holds %v at index %d, want finite values", s.dir, a.Data[i], i)
	}
	t.neg = mat.NewDense(h.Shape[0], d, a.Data)
	return nil
}

// restoreOrder restores the epoch's shuffled order of the training rows
// (empty before the first batch, else a permutation of them) and the
// position in it.
func (t *Trainer) restoreOrder(s stateArchive, path string, pos int) error {
	n, _ := t.data.Dims()
	order, _, err := s.get("data_order", -1, "the epoch's order of the training rows")
	if err != nil {
		return err
	}
	if len(order) != 0 && len(order) != n {
		return fmt.Errorf("%s: state.npz member \"data_order\" has %d values, want %d (a permutation of the training rows)", s.dir, len(order), n)
	}
	seen := make([]bool, n)
	t.order = make([]int, len(order))
	for i, v := range order {
		if v < 0 || v >= float64(n) || v != math.Trunc(v) || seen[int(v)] {
			return fmt.Errorf("%s: state.npz member \"data_order\" holds %v at index %d, want a permutation of 0..%d (each row once)", s.dir, v, i, n-1)
		}
		seen[int(v)] = true
		t.order[i] = int(v)
	}
	if pos < 0 || pos > len(t.order) {
		return fmt.Errorf("%s: field \"data_pos\" is %d, want 0..%d", path, pos, len(t.order))
	}
	t.dataPos = pos
	return nil
}

// restoreAveraged restores the EBM's current parameters where the run
// averages them (the checkpoint's weights are the average).
func (t *Trainer) restoreAveraged(s stateArchive) error {
	if t.thetaAvg == nil {
		return nil
	}
	copy(t.thetaAvg, t.thetaE)
	if slices.Contains(s.arc.Names, "ebm_average") { // a float32 run's average, unrounded
		avg, _, err := s.get("ebm_average", len(t.thetaAvg), "the EBM's averaged parameters")
		if err != nil {
			return err
		}
		copy(t.thetaAvg, avg)
	}
	cur, _, err := s.get("ebm_current", len(t.thetaE), fmt.Sprintf("the EBM's parameters; the run averages them over average_window %d", t.Config.AverageWindow))
	if err != nil {
		return err
	}
	copy(t.thetaE, cur)
	t.EBM.Params.SetFlat(t.thetaE)
	return nil
}

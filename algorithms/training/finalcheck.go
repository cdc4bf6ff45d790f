package training

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/internal/shellquote"
	"github.com/flowebm/flowebm/io/checkpoint"
)

// CheckFinal checks the metrics.json at path against the run's last
// evaluation last, which source names ("as its checkpoint holds it",
// "metrics.csv's last row"): every field last holds, compared as the JSON
// WriteMetrics writes, and grid_held_out_ll against what grid_log_z
// gives. A one-digit edit of a mode weight passed the checks of its
// shape and seed, and train --seeds averaged it into seeds.json (round
// 104 B1). Nil where they agree.
func CheckFinal(path string, last Eval, source string) error {
	var raw map[string]json.RawMessage
	if err := jsonfile.Read(path, &raw, jsonfile.Options{AllowUnknown: true}); err != nil {
		return err
	}
	var got, want any
	if err := json.Unmarshal(raw["final"], &got); err != nil {
		return fmt.Errorf("%s: field \"final\": %w", path, err)
	}
	b, err := json.Marshal(jsonfile.Safe(last))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &want); err != nil {
		return err
	}
	if it, ok := finalIter(got); ok && it > last.Iter { // round 124 B2: a finished run resumed from an older checkpoint, interrupted, was "edited"
		return fmt.Errorf("%s is of iteration %d, the run's last evaluation (%s) of iteration %d: the run finished, but its final checkpoint is missing (a train --resume from an older one, interrupted?)", path, it, source, last.Iter)
	}
	if name := FirstDiffering("final", got, want); name != "" {
		return fmt.Errorf("%s: field %q is not the run's last evaluation (iteration %d, %s): edited, or another run's", path, name, last.Iter, source)
	}
	return checkGridHeldOut(path, raw, last)
}

// finalIter is the iteration of metrics.json's decoded "final", and
// whether it has one.
func finalIter(final any) (int, bool) {
	m, ok := final.(map[string]any)
	if !ok {
		return 0, false
	}
	v, ok := m["iter"].(float64)
	return int(v), ok && v == math.Trunc(v)
}

// FirstDiffering names the first field (dotted, from name) of want, a
// decoded JSON value, whose value in got differs; "" where none does.
// Fields got has and want lacks are not compared.
func FirstDiffering(name string, got, want any) string {
	w, ok := want.(map[string]any)
	if !ok {
		if reflect.DeepEqual(got, want) {
			return ""
		}
		return name
	}
	g, ok := got.(map[string]any)
	if !ok {
		return name
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if d := FirstDiffering(name+"."+k, g[k], w[k]); d != "" {
			return d
		}
	}
	return ""
}

// checkGridHeldOut checks that grid_held_out_ll is the held-out
// log-likelihood that grid_log_z gives with last's (as WriteMetrics
// computes it).
func checkGridHeldOut(path string, raw map[string]json.RawMessage, last Eval) error {
	var z, ll *float64
	if json.Unmarshal(raw["grid_log_z"], &z) != nil || json.Unmarshal(raw["grid_held_out_ll"], &ll) != nil || z == nil || ll == nil {
		return nil // absent (no grid) or refused by ReadMetrics
	}
	if want := last.HeldOutLL + last.LogZ.LogZ - *z; *ll != want {
		return fmt.Errorf("%s: fields \"grid_log_z\" (%v) and \"grid_held_out_ll\" (%v) disagree with the run's last evaluation (held_out_ll + log_z − grid_log_z gives %v): one of them was edited", path, *z, *ll, want) // round 105 A3: the field left as it was blamed
	}
	return nil
}

// CheckpointLastEval is the last evaluation of the run in dir as its
// newest complete checkpoint holds it: evals.csv's last row with
// window.json's chain weights and negatives' intervals, all that
// metrics.json's final holds (round 105 B2: an edited chain weight was
// reported, metrics.csv holding none); ok is false where the checkpoint
// holds no evaluation; seconds is the training time it records (0 where
// it records none). modes < 0 takes the modes from evals.csv's header.
func CheckpointLastEval(dir string, modes int) (last Eval, seconds float64, ok bool, err error) {
	err = ReadLatest(dir, func(ck string) (err error) {
		last, seconds, ok, err = lastEvalOf(dir, ck, modes)
		return err
	})
	return last, seconds, ok, err
}

// lastEvalOf is CheckpointLastEval of the checkpoint folder ck of the run
// in dir.
func lastEvalOf(dir, ck string, modes int) (last Eval, seconds float64, ok bool, err error) {
	path := filepath.Join(ck, "evals.csv")
	var evals []Eval
	if modes < 0 {
		evals, err = ReadEvalsCSVModes(path)
	} else {
		evals, err = ReadEvalsCSV(path, modes)
	}
	if err != nil || len(evals) == 0 {
		return last, 0, false, err
	}
	var w modeWindow
	wpath := filepath.Join(ck, "window.json")
	if err := jsonfile.Read(wpath, &w, jsonfile.Options{}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return last, 0, false, err
	}
	if err := w.check(wpath, modes); err != nil { // round 110 B1: metrics.json blamed for the window's forged weight
		return last, 0, false, EditedCheckpointError{err}
	}
	last = evals[len(evals)-1]
	last.ChainWeights, last.NegIntervals = w.ChainWeights, w.NegIntervals
	return last, w.Seconds, true, outvoted(dir, ck, last)
}

// CheckpointEvalsEdited refuses the run in dir where its newest
// checkpoint's last evaluation is outvoted by the run's outputs
// (outvoted); nil otherwise, or where the checkpoint does not read (its
// readers report on it).
func CheckpointEvalsEdited(dir string) error {
	_, _, _, err := CheckpointLastEval(dir, -1)
	if errors.As(err, new(EditedCheckpointError)) {
		return err
	}
	return nil
}

// outvoted refuses a finished run's checkpoint ck whose last evaluation,
// last, differs from metrics.json's final where metrics.json's final is
// metrics.csv's last row, of the same iteration: the run's two outputs
// agree, so the checkpoint's evaluations (evals.csv) are what
// was edited, its COMPLETE written again (round 136 B3: train --resume
// wrote the edit into metrics.json and metrics.csv, and compare advised
// copying it over metrics.csv). Nil otherwise: without both outputs there
// is no majority, and an edited output is named by its own check.
func outvoted(dir, ck string, last Eval) error {
	mpath := filepath.Join(dir, "metrics.json")
	bare := last // what metrics.csv holds too: window.json's weights have no third record (round 105 B2: an edited chain weight in metrics.json was blamed on the checkpoint)
	bare.ChainWeights, bare.NegIntervals = nil, nil
	if !exists(mpath) || CheckFinal(mpath, bare, "") == nil {
		return nil
	}
	rows, err := ReadEvalsCSVModes(filepath.Join(dir, "metrics.csv"))
	if err != nil || len(rows) == 0 || rows[len(rows)-1].Iter != last.Iter || CheckFinal(mpath, rows[len(rows)-1], "") != nil {
		return nil
	}
	return EditedCheckpointError{fmt.Errorf("%s: its last evaluation (iteration %d, evals.csv) differs from the one the run's metrics.json and metrics.csv both hold: the checkpoint was edited (its %s written again), not those outputs; restore the checkpoint from a backup (train --resume writes the outputs from it, and every reader checks them against it), or train the run anew in another folder", ck, last.Iter, checkpoint.ManifestName)}
}

// EditedCheckpointError is CheckpointLastEval's error for a checkpoint
// that reads but holds what no run writes (edited, its manifest written
// again): the run's outputs cannot be checked against it.
type EditedCheckpointError struct{ Err error }

func (e EditedCheckpointError) Error() string { return e.Err.Error() }
func (e EditedCheckpointError) Unwrap() error { return e.Err }

// CheckExactLL checks metrics.json's true_held_out_ll (m's, read from
// path) against want, the run's exact held-out log-likelihood
// (Run.TrueHeldOutLL, or ExactHeldOutLL of its configuration), NaN
// equal to NaN (round 105 B3: an edit was printed as the run's).
func CheckExactLL(path string, m Metrics, want float64) error {
	if got := m.TrueHeldOutLL; got == want || math.IsNaN(got) && math.IsNaN(want) {
		return nil
	}
	if math.IsNaN(want) { // round 107 A3: "give NaN"
		return fmt.Errorf("%s: field \"true_held_out_ll\" is %v, but the run has no exact density (a data set, or images): want null; edited, or another run's", path, m.TrueHeldOutLL)
	}
	return fmt.Errorf("%s: field \"true_held_out_ll\" is %v, but the run's held-out data, drawn again from its seed, give %v: edited, or another run's", path, m.TrueHeldOutLL, want)
}

// CheckTruth checks metrics.json's true_held_out_ll and true_weights (m's,
// read from path) against the run configured by cfg: its held-out data
// drawn again from its seed (CheckExactLL) and its experiment's weights
// (round 106 A1: an edit found by train --resume alone). A data set has
// no exact density (its weights are not checked: its data are not
// loaded); a configuration that cannot load its experiment is not
// checked (its readers say why).
func CheckTruth(path string, m Metrics, cfg config.Run) error {
	exp, ll, err := experimentTruth(cfg)
	if err == nil && exp == nil { // a data set: no exact density (round 108 B3: an edited one shown as exact)
		return CheckExactLL(path, m, math.NaN())
	}
	if err != nil {
		return nil
	}
	if !slices.Equal(m.TrueWeights, exp.Weights) {
		return fmt.Errorf("%s: field \"true_weights\" is %v, but the experiment's are %v: edited, or another run's", path, m.TrueWeights, exp.Weights)
	}
	return CheckExactLL(path, m, ll)
}

// CheckMetrics checks the metrics.json at path, read as m, against what
// the finished run writes (its grid filled from the final model, as its
// last evaluation filled it): its final evaluation (CheckFinal), truth,
// every other field WriteMetrics writes but the build (the binary's that
// wrote it), and its seconds against the training time its final
// checkpoint records. A grid field added or changed, another
// experiment's name or a time of ten hours passed (round 106 B1, B2,
// B4). Nil where they agree.
func (r *Run) CheckMetrics(path string, m Metrics) error {
	if n := len(r.Evals); n > 0 {
		if err := CheckFinal(path, r.Evals[n-1], "as its checkpoint holds it"); err != nil { // round 104 B1
			return err
		}
	}
	if err := CheckExactLL(path, m, r.TrueHeldOutLL); err != nil { // round 105 B3
		return err
	}
	if !slices.Equal(m.TrueWeights, r.Experiment.Weights) {
		return fmt.Errorf("%s: field \"true_weights\" is %v, but the experiment's are %v: edited, or another run's", path, m.TrueWeights, r.Experiment.Weights)
	}
	if err := CheckSeconds(path, m, r.priorSeconds); err != nil {
		return err
	}
	if err := r.FillGrid(); err != nil {
		return err
	}
	want, err := r.finalMetrics()
	if err != nil {
		return err
	}
	return sameFields(path, want)
}

// sameFields checks the fields of the metrics.json at path against
// want's, but for seconds and build (checked apart, or not the run's); a
// field want leaves out that the file holds differs too.
func sameFields(path string, want Metrics) error {
	var got map[string]any
	if err := jsonfile.Read(path, &got, jsonfile.Options{AllowUnknown: true}); err != nil {
		return err
	}
	b, err := json.Marshal(jsonfile.Safe(want))
	if err != nil {
		return err
	}
	var w map[string]any
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	for _, k := range []string{"grid_log_z", "grid_held_out_ll", "grid_missed", "grid_error", "true_weights"} { // left out where absent (omitempty)
		if _, ok := w[k]; !ok {
			if _, ok := got[k]; ok {
				w[k] = nil
			}
		}
	}
	delete(w, "seconds")
	delete(w, "build")
	if name := FirstDiffering("", got, w); name != "" {
		return fmt.Errorf("%s: field %q is not the run's (as its final checkpoint gives it): edited, or another run's", path, strings.TrimPrefix(name, "."))
	}
	return nil
}

// CheckSeconds checks metrics.json's seconds (m's, read from path)
// against checkpointed, the training time the run's final checkpoint
// records (0: not recorded, not checked): at least that, and not more
// than the outputs' writing after it can add (5 s, or half as much
// again).
func CheckSeconds(path string, m Metrics, checkpointed float64) error {
	if checkpointed <= 0 || m.Seconds >= checkpointed-1e-6 && m.Seconds <= checkpointed+max(5, checkpointed/2) {
		return nil
	}
	return &SecondsError{Path: path, Seconds: m.Seconds, Checkpointed: checkpointed}
}

// SecondsError is a metrics.json whose training time disagrees with the
// one its run's final checkpoint records (window.json). No other record
// holds it, so either may be the edited one (round 139 B1: metrics.json
// was blamed for an edit of window.json, its COMPLETE written again, and
// train --resume, advised, wrote the edit over the true time): both ways
// on are named, and train --resume writes neither over the other.
type SecondsError struct {
	Path                  string
	Seconds, Checkpointed float64
}

func (e *SecondsError) Error() string {
	dir := filepath.Dir(e.Path)
	return fmt.Sprintf("%s: field \"seconds\" is %v, but the run's final checkpoint records %.4g s of training (its window.json): one of the two was edited, or metrics.json is another run's; if metrics.json was, remove it and flowebm train --resume %s writes it again from the checkpoint; if window.json was (the checkpoint's %s written again), restore the checkpoint from a backup", e.Path, e.Seconds, e.Checkpointed, shellquote.Quote(dir), checkpoint.ManifestName)
}

package training

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/shellquote"
	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/safefile"
)

// evalColumns are the scalar columns of metrics.csv after iter, before the
// per-mode weight columns; evalScalars points at the fields they hold.
var evalColumns = []string{"loss", "flow_ll", "local_accept", "global_accept", "step_size",
	"ebm_weight_mse", "neg_mse", "start_mse", "log_density_med_se",
	"max_rhat", "max_rhat_classic", "held_out_ll", "log_z", "log_z_se", "is_ess"}

func evalScalars(e *Eval) []*float64 {
	s := &e.Stats
	return []*float64{&s.Loss, &s.FlowLL, &s.LocalAccept, &s.GlobalAccept, &s.StepSize,
		&e.EBMWeightMSE, &e.NegMSE, &e.StartMSE, &e.LogDensityMedSE,
		&e.MaxRHat, &e.MaxRHatClassic, &e.HeldOutLL, &e.LogZ.LogZ, &e.LogZ.SE, &e.LogZ.ESS}
}

// WriteEvalsCSV writes evaluations as CSV: the columns of evalColumns, then
// ebm_w<k>, neg_w<k>, start_w<k> for each of k modes. NaN is written "NaN".
func WriteEvalsCSV(path string, evals []Eval, modes int) error {
	return safefile.Write(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write(evalsHeader(modes))
		for _, e := range evals {
			row := []string{strconv.Itoa(e.Iter)}
			for _, v := range evalScalars(&e) {
				row = append(row, strconv.FormatFloat(*v, 'g', -1, 64))
			}
			for _, ws := range [][]float64{e.EBMWeights, e.NegWeights, e.StartWeights} {
				for k := 0; k < modes; k++ {
					v := math.NaN()
					if k < len(ws) {
						v = ws[k]
					}
					row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
				}
			}
			cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	})
}

// evalsHeader is the header of an evaluations CSV with modes modes.
func evalsHeader(modes int) []string {
	head := append([]string{"iter"}, evalColumns...)
	for _, p := range []string{"ebm_w", "neg_w", "start_w"} {
		for k := 0; k < modes; k++ {
			head = append(head, p+strconv.Itoa(k))
		}
	}
	return head
}

// headerDiff says where the header got first differs from want: the
// column, or the count (probe 34: the first four columns were quoted,
// equal to the wanted ones where a later column was wrong).
func headerDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("column %d is %q, want %q", i+1, textclip.Cut(got[i], 40), want[i])
		}
	}
	return fmt.Sprintf("%d columns, want %d", len(got), len(want))
}

// maxEvalsBytes bounds the evaluations files read (metrics.csv,
// evals.csv): a row per evaluation.
const maxEvalsBytes = 256 << 20

// ReadEvalsCSVModes reads what WriteEvalsCSV wrote, the number of modes
// taken from the header (whose columns it checks).
func ReadEvalsCSVModes(path string) ([]Eval, error) {
	f, err := safefile.OpenLimited(path, maxEvalsBytes, "flowebm's evaluations are kilobytes to megabytes")
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	head, err := csv.NewReader(br).Read()
	f.Close()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s is empty: want flowebm's metrics.csv (a header iter, %s, … and a row per evaluation)%s", path, strings.Join(evalColumns[:3], ", "), EvalsRestore(path))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w%s", path, err, EvalsRestore(path))
	}
	fixed := evalsHeader(0)
	extra := len(head) - len(fixed)
	modes := max(0, extra) / 3
	why := ""
	switch {
	case !slices.Equal(head[:min(len(head), len(fixed))], fixed[:min(len(head), len(fixed))]):
		why = headerDiff(head, fixed)
	case extra < 0 || extra%3 != 0:
		why = fmt.Sprintf("%d columns, want %d and 3 per mode", len(head), len(fixed))
	case !slices.Equal(head, evalsHeader(modes)):
		why = headerDiff(head, evalsHeader(modes))
	}
	if why != "" {
		return nil, fmt.Errorf("%s: header: %s; want flowebm's metrics.csv columns (iter, %s, then the modes' weights)%s", path, why, strings.Join(evalColumns[:3], ", "), EvalsRestore(path)) // round 98 B1: a garbage header named no way on
	}
	return ReadEvalsCSV(path, modes)
}

// ReadEvalsCSV reads what WriteEvalsCSV wrote.
func ReadEvalsCSV(path string, modes int) ([]Eval, error) {
	f, err := safefile.OpenLimited(path, maxEvalsBytes, "flowebm's evaluations are kilobytes to megabytes")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	text, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	text = bytes.TrimPrefix(text, utf8BOM)          // a spreadsheet's re-save (round 102 B3)
	if len(text) > 0 && text[len(text)-1] != '\n' { // probe 60: cut inside its last number, read as 0.54687 for 0.546875
		return nil, fmt.Errorf("%s does not end with a line break: it was cut, or had data appended (flowebm ends every row with one), and its last row may be partial%s", path, EvalsRestore(path)) // round 96 B7: "cut" alone
	}
	r := csv.NewReader(bytes.NewReader(text))
	r.FieldsPerRecord = -1 // counted below, against the header (round 135 B4: "record on line 3: wrong number of fields")
	rows, err := r.ReadAll()
	if err != nil { // round 94 B1: a damaged row named no way on
		return nil, fmt.Errorf("%s: %w%s", path, err, EvalsRestore(path))
	}
	head := evalsHeader(modes)
	if len(rows) == 0 {
		return nil, nil // no header, no evaluations (resume checks the count)
	}
	if !slices.Equal(rows[0], head) {
		forModes := "" // round 76 B6: "for 0 modes"
		if modes > 0 {
			forModes = fmt.Sprintf(" for %d modes", modes)
		}
		return nil, fmt.Errorf("%s: header: %s; want flowebm's %d columns (iter, %s, …)%s%s", path, headerDiff(rows[0], head), len(head), strings.Join(evalColumns[:3], ", "), forModes, EvalsRestore(path))
	}
	var evals []Eval
	last := 0
	for i, row := range rows[1:] {
		line := i + 2
		if len(row) != len(head) {
			fields := "fields"
			if len(row) == 1 {
				fields = "field"
			}
			return nil, fmt.Errorf("%s: line %d has %d %s, want %d%s", path, line, len(row), fields, len(head), EvalsRestore(path))
		}
		iter, err := strconv.Atoi(row[0])
		if err != nil || iter <= last {
			return nil, fmt.Errorf("%s: line %d: iter %q, want an integer iteration after %d%s", path, line, row[0], last, EvalsRestore(path))
		}
		last = iter
		v := make([]float64, len(row))
		for j, s := range row[1:] {
			if v[j+1], err = strconv.ParseFloat(s, 64); err != nil {
				return nil, fmt.Errorf("%s: line %d, column %d (%s): %w%s", path, line, j+2, head[j+1], err, EvalsRestore(path))
			}
		}
		e := Eval{Iter: iter, Stats: algorithms.IterStats{Iter: iter}}
		for j, p := range evalScalars(&e) {
			*p = v[1+j]
		}
		if modes > 0 {
			w := v[1+len(evalColumns):]
			e.EBMWeights, e.NegWeights, e.StartWeights = nanNil(w[:modes]), nanNil(w[modes:2*modes]), nanNil(w[2*modes:])
		}
		evals = append(evals, e)
	}
	return evals, nil
}

func nanNil(w []float64) []float64 {
	for _, v := range w {
		if !math.IsNaN(v) {
			return append([]float64(nil), w...)
		}
	}
	return nil
}

// CheckEvalsOfRun checks the run in dir's metrics.csv against its latest
// checkpoint's evaluations (evals.csv, which the checkpoint's manifest
// guards): those are the first rows of metrics.csv, all of them for a
// finished run (round 95 B3: another run's metrics.csv was reported as
// this run's). Nil where the run has no metrics.csv or no readable
// checkpoint (their readers say why).
func CheckEvalsOfRun(dir string) error {
	path := filepath.Join(dir, "metrics.csv")
	got, err := safefile.ReadFile(path, maxEvalsBytes)
	if err != nil {
		return nil
	}
	var want []byte
	var ck string
	if ReadLatest(dir, func(c string) (err error) {
		ck = c
		want, err = safefile.ReadFile(filepath.Join(c, "evals.csv"), maxEvalsBytes)
		return err
	}) != nil {
		return nil
	}
	if bytes.HasPrefix(got, want) || sameLeadingRows(got, want) {
		return rowsAfterFinal(dir, ck, path, got, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "metrics.json")); errors.Is(err, fs.ErrNotExist) && behindRows(got, want) { // metrics.json comes after metrics.csv: without it, a kill between the checkpoint and metrics.csv
		return nil
	}
	if err := CheckpointEvalsEdited(dir); err != nil { // round 136 B3: the edited checkpoint's rows advised over metrics.csv
		return err
	}
	if it, ok := valuesDiffer(got, want); ok && !csvOutvoted(dir, ck) { // round 140 B2: the checkpoint's edit advised over metrics.csv, the true values lost
		return &EvalsDisagreeError{fmt.Errorf("%s and the run's last checkpoint's %s hold the same iterations but differ in their values from iteration %s: one of the two was edited; if metrics.csv was, cp %s %s restores it; if the checkpoint's evals.csv was (its %s written again), restore the checkpoint from a backup (train --resume would carry its values on)", path, filepath.Join(ck, "evals.csv"), it, shellquote.Quote(filepath.Join(ck, "evals.csv")), shellquote.Quote(path), checkpoint.ManifestName)}
	}
	if lost := finalLost(dir, ck); lost != "" {
		return fmt.Errorf("%s is not this run's: its rows are not those of the run's last checkpoint (%s) and after: another run's, or edited; %s", path, filepath.Join(ck, "evals.csv"), lost)
	}
	return fmt.Errorf("%s is not this run's: its rows are not those of the run's last checkpoint (%s) and after: another run's, or edited; cp %s %s restores them", path, filepath.Join(ck, "evals.csv"), shellquote.Quote(filepath.Join(ck, "evals.csv")), shellquote.Quote(path))
}

// rowsAfterFinal refuses a metrics.csv (got, at path) that holds rows
// after those of the run's checkpoint ck (want) where that checkpoint is
// the run's final one: no run evaluates after its last iteration (round
// 136 B4: a row of iteration 400 in a run of 40 was blamed on
// metrics.json, and train --resume, advised, had nothing to do). Nil
// otherwise (an unfinished run evaluates before its next checkpoint).
func rowsAfterFinal(dir, ck, path string, got, want []byte) error {
	it, ok := CheckpointIter(ck)
	cfg, err := ReadRunConfig(dir)
	if !ok || err != nil || it < cfg.Train.Iterations || bytes.Count(got, []byte("\n")) <= bytes.Count(want, []byte("\n")) {
		return nil
	}
	return fmt.Errorf("%s holds rows after the run's final evaluation (iteration %d of %d, its last checkpoint's): edited; cp %s %s restores it", path, it, cfg.Train.Iterations, shellquote.Quote(filepath.Join(ck, "evals.csv")), shellquote.Quote(path))
}

// utf8BOM is the byte order mark a spreadsheet may put before a CSV it
// saves.
var utf8BOM = []byte("\ufeff")

// sameLeadingRows reports whether the CSV got begins with want's rows,
// field by field, the numbers compared by value: the same evaluations
// re-saved with CRLF line ends, quoted fields, a byte order mark or
// numbers written another way (1e-05 for 0.00001) are the run's (round
// 102 B3: refused as another run's).
func sameLeadingRows(got, want []byte) bool {
	g, w, ok := csvRows(got, want)
	return ok && len(g) >= len(w) && !rowsDiffer(g, w, len(w))
}

// behindRows reports whether got holds the header and first rows of want
// and no other: a metrics.csv that a kill left behind its checkpoint's
// evaluations (the checkpoint is written first, then metrics.csv, and
// metrics.json at the end: round 124 B3, such a run was called "another
// run's, or edited"). Resuming writes it again.
func behindRows(got, want []byte) bool {
	g, w, ok := csvRows(got, want)
	return ok && len(g) >= 1 && len(g) < len(w) && !rowsDiffer(g, w, len(g))
}

// csvOutvoted reports whether the finished run in dir has a metrics.json
// whose final is its checkpoint ck's last evaluation but not its
// metrics.csv's last row: metrics.csv is the odd one (round 93: another
// run's metrics.csv, swapped in, is named as such).
func csvOutvoted(dir, ck string) bool {
	mpath := filepath.Join(dir, "metrics.json")
	if !exists(mpath) {
		return false
	}
	last, _, ok, err := lastEvalOf(dir, ck, -1)
	if err != nil || !ok {
		return false
	}
	last.ChainWeights, last.NegIntervals = nil, nil
	rows, err := ReadEvalsCSVModes(filepath.Join(dir, "metrics.csv"))
	return err == nil && len(rows) > 0 && CheckFinal(mpath, last, "") == nil && CheckFinal(mpath, rows[len(rows)-1], "") != nil
}

// EvalsDisagreeError is a run's metrics.csv that holds the iterations of
// its last checkpoint's evaluations with other values: either may be the
// edited one, and train --resume, which writes metrics.csv from the
// checkpoint, refuses it rather than choose.
type EvalsDisagreeError struct{ error }

func (e *EvalsDisagreeError) Unwrap() error { return e.error }

// valuesDiffer reports whether got and want hold the same header and the
// same iterations, row for row, but differ in some value, and the
// iteration of the first row where they do: no third record says which
// was edited.
func valuesDiffer(got, want []byte) (iter string, ok bool) {
	g, w, parsed := csvRows(got, want)
	if !parsed || len(g) != len(w) || len(w) < 2 || !slices.Equal(g[0], w[0]) {
		return "", false
	}
	for i := 1; i < len(w); i++ {
		if len(g[i]) == 0 || len(w[i]) == 0 || g[i][0] != w[i][0] {
			return "", false
		}
	}
	for i := 1; i < len(w); i++ {
		if rowsDiffer(g[i:i+1], w[i:i+1], 1) {
			return w[i][0], true
		}
	}
	return "", false
}

// csvRows parses two CSV files' bytes (got's byte order mark dropped);
// ok is false where either does not parse.
func csvRows(got, want []byte) (g, w [][]string, ok bool) {
	g, err1 := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(got, utf8BOM))).ReadAll()
	w, err2 := csv.NewReader(bytes.NewReader(want)).ReadAll()
	return g, w, err1 == nil && err2 == nil
}

// rowsDiffer reports whether the first n rows of g and w differ, field
// by field (sameField).
func rowsDiffer(g, w [][]string, n int) bool {
	for i := range n {
		if len(g[i]) != len(w[i]) {
			return true
		}
		for j := range w[i] {
			if !sameField(g[i][j], w[i][j]) {
				return true
			}
		}
	}
	return false
}

// otherRunsEvals reports whether the run's metrics.csv and its
// checkpoint's evals.csv, both readable, differ in a row they both hold:
// the checkpoint did not write those evaluations (round 114 B3: a
// checkpoint swapped in from another run blamed config.json, and the
// cp advised made the folder that run's, its own outputs replaced).
func otherRunsEvals(metrics, evals string) bool {
	got, err1 := safefile.ReadFile(metrics, maxEvalsBytes)
	want, err2 := safefile.ReadFile(evals, maxEvalsBytes)
	if err1 != nil || err2 != nil {
		return false
	}
	g, w, ok := csvRows(got, want)
	return ok && rowsDiffer(g, w, min(len(g), len(w)))
}

// sameField reports whether two CSV fields are equal as text or hold the
// same number (NaN equal to NaN).
func sameField(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && (x == y || math.IsNaN(x) && math.IsNaN(y))
}

// EvalsRestore is how to restore a run's cut metrics.csv from its last
// checkpoint, which holds its evaluations up to there (probe 61: none was
// named), or "".
func EvalsRestore(path string) string {
	if filepath.Base(path) != "metrics.csv" {
		return ""
	}
	dir := filepath.Dir(path)
	ck, err := LatestCheckpoint(dir)
	if err != nil || !exists(filepath.Join(ck, "evals.csv")) {
		return ""
	}
	if lost := finalLost(dir, ck); lost != "" {
		return "; " + lost
	}
	return fmt.Sprintf("; the run's last checkpoint holds its evaluations up to there: cp %s %s restores them", shellquote.Quote(filepath.Join(ck, "evals.csv")), shellquote.Quote(path))
}

// finalLost says, of a finished run in dir (it has its metrics.json) whose
// newest checkpoint ck is of an iteration before its last, that its final
// checkpoint is missing and how to write its evaluations again (round 124
// B1: the cp of ck's evals.csv advised lost the rows after it); "" for
// others.
func finalLost(dir, ck string) string {
	it, ok := CheckpointIter(ck)
	if !ok || !exists(filepath.Join(dir, "metrics.json")) {
		return ""
	}
	cfg, err := ReadRunConfig(dir)
	if err != nil || it >= cfg.Train.Iterations {
		return ""
	}
	return fmt.Sprintf("the run finished (its metrics.json) but its final checkpoint is missing, and the newest, of iteration %d of %d, holds only the evaluations before: flowebm train --resume %s writes them all again", it, cfg.Train.Iterations, shellquote.Quote(dir))
}

// IsEvalsHeader reports whether header is that of an evaluations table
// (metrics.csv, evals.csv) of any number of modes: it begins with the
// fixed columns. diagnose names such a file for what it is.
func IsEvalsHeader(header []string) bool {
	fixed := evalsHeader(0)
	return len(header) >= len(fixed) && slices.Equal(header[:len(fixed)], fixed)
}

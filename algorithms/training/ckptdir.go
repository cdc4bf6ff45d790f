package training

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/internal/shellquote"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/safefile"
)

// A run's checkpoint is replaced in steps (Run.Checkpoint):
//
//  1. write checkpoint.new/ (models, state, evaluations, window), and last
//     the marker checkpoint.new/COMPLETE with the SHA-256 of each file;
//  2. rename checkpoint/ to checkpoint.old/;
//  3. rename checkpoint.new/ to checkpoint/;
//  4. remove checkpoint.old/.
//
// A process killed anywhere in between leaves at most these three folders,
// and the newest complete checkpoint among them is, in this order of
// preference: checkpoint.new/ if it holds the marker and all its files
// load (it was finished after checkpoint/ was); else checkpoint/ if all
// its files load; else checkpoint.old/ if all its files load. Resume and
// the next Checkpoint first move that one into checkpoint/ (recoverCheckpoint)
// by steps whose own interruption the same rule resolves the same way.
const (
	checkpointName = "checkpoint"
	newSuffix      = ".new"
	oldSuffix      = ".old"
	// completeMarker is written into a new checkpoint folder after all its
	// other files: a checkpoint.new/ without it was interrupted.
	completeMarker = checkpoint.ManifestName
)

// ErrNoCheckpoint is returned (wrapped, with fs.ErrNotExist) when a run
// folder holds no complete checkpoint.
var ErrNoCheckpoint = errors.New("no complete checkpoint")

// EditedCheckpoint reports whether err, LatestCheckpoint's, passed over a
// checkpoint folder whose files match their sums but whose records were
// edited: a backup of it restores the run.
func EditedCheckpoint(err error) bool {
	nc := noCheckpointError{}
	return errors.As(err, &nc) && nc.edited
}

type noCheckpointError struct {
	dir string
	// why each folder that exists is not a complete checkpoint
	why []string
	// restorable: one of them a copy restores (restorableError)
	restorable bool
	// edited: one of them holds its marker and files matching its sums,
	// its records edited (a backup of it restores the run)
	edited bool
}

func (e noCheckpointError) Error() string {
	msg := fmt.Sprintf("%s: no complete checkpoint (looked for %s/, %s/ and %s/)", e.dir,
		checkpointName, checkpointName+newSuffix, checkpointName+oldSuffix)
	if len(e.why) > 0 {
		msg += ": " + strings.Join(e.why, "; ")
	}
	return msg
}

func (e noCheckpointError) Is(target error) bool {
	return target == ErrNoCheckpoint || target == fs.ErrNotExist
}

// crashHook, if not nil, is called at each step of Run.Checkpoint's
// replacement with the step's name; an error from it stops Checkpoint
// there as a kill would. Tests use it to simulate crashes.
var crashHook func(point string) error

func crashPoint(point string) error {
	if crashHook != nil {
		return crashHook(point)
	}
	return nil
}

// LatestCheckpoint returns the folder of the newest complete checkpoint of
// the run in dir: normally dir/checkpoint, but dir/checkpoint.new or
// dir/checkpoint.old after a replacement was interrupted (see the rule
// above). It changes nothing on disk. With no complete checkpoint the error
// matches ErrNoCheckpoint and fs.ErrNotExist.
func LatestCheckpoint(dir string) (string, error) {
	final := filepath.Join(dir, checkpointName)
	e := noCheckpointError{dir: dir}
	candidates := []struct {
		path   string
		strict bool
	}{{final + newSuffix, true}, {final, false}, {final + oldSuffix, false}}
	// the errors of the folders passed over that held their marker
	// before their check (one being written gets its marker last, and
	// is renamed only under the lock a reader holds: it is then still)
	markedErrs := make([]error, len(candidates))
	for i, c := range candidates {
		marked := exists(filepath.Join(c.path, completeMarker))
		err := checkComplete(c.path, c.strict)
		if err == nil {
			for _, later := range candidates[i+1:] {
				if err := outOfOrder(c.path, later.path, later.strict); err != nil {
					return "", err
				}
			}
			for j, earlier := range candidates[:i] {
				if err := damagedNewer(earlier.path, c.path, markedErrs[j]); err != nil {
					return "", err
				}
			}
			return c.path, nil
		}
		if marked {
			markedErrs[i] = err
		}
		if _, statErr := os.Stat(c.path); statErr == nil {
			state := "is incomplete"
			switch {
			case errors.Is(err, fs.ErrPermission): // probe 22 on: not incomplete, unreadable to this user
				state = "cannot be read"
			case errors.As(err, new(*ConfigEditedError)): // round 79 B2: complete, and called incomplete
				state = "belongs to another configuration"
			case marked && checkpoint.CheckManifest(c.path, checkpointFiles...) == nil: // round 141 A2: complete, its records edited, called incomplete
				state = "was edited (its files match the sums its " + checkpoint.ManifestName + " records, but what they hold contradicts itself or the run)"
				e.edited = true
			}
			e.why = append(e.why, fmt.Sprintf("%s/ %s (%v)", filepath.Base(c.path), state, err))
			e.restorable = e.restorable || errors.As(err, new(restorableError))
		}
	}
	return "", e
}

// outOfOrder refuses a complete checkpoint folder later of a later
// iteration than best, which the replacement rule prefers: no interrupted
// replacement leaves that (each folder it leaves is older than the one
// before it in the rule's order), so the folders were copied or moved by
// hand, and which is the run's is for the user to say (round 124 B4: an
// older checkpoint copied in as checkpoint.new/ was used, "newer", and
// train --resume removed the final one in checkpoint.old/). Nil otherwise.
func outOfOrder(best, later string, strict bool) error {
	if _, err := os.Stat(later); err != nil || checkComplete(later, strict) != nil {
		return nil
	}
	bi, bok := CheckpointIter(best)
	li, lok := CheckpointIter(later)
	if !bok || !lok || li <= bi {
		return nil
	}
	return &OutOfOrderError{fmt.Errorf("%s: its checkpoint folders are out of order: %s/ is of iteration %d, %s/ of iteration %d, which no interrupted replacement leaves (of %s/, %s/ and %s/, each is older than the one before, and the first complete one is read): they were copied or moved by hand; keep the one the run is to continue from as %s/ and move the other out of the run folder",
		filepath.Dir(best), filepath.Base(later), li, filepath.Base(best), bi, checkpointName+newSuffix, checkpointName, checkpointName+oldSuffix, checkpointName)}
}

// damagedNewer refuses to pass over the checkpoint folder tmp, which
// failed its check with err while it held its marker, for the complete
// folder best, which the rule prefers it to: it was finished after best
// and damaged since, so best is older and the run would lose the
// iterations between them, and the recovery would remove tmp (a run's own
// files may restore it: err says how where they do; round 131 B1-B3: a
// damaged checkpoint/ beside checkpoint.old/ was removed by plot and
// train --resume, and energy called checkpoint.old/ the newest). A folder
// of another configuration, or of an iteration not after best's (a copy),
// is passed over as before. Nil otherwise.
func damagedNewer(tmp, best string, err error) error {
	if err == nil || errors.As(err, new(*ConfigEditedError)) {
		return nil
	}
	bi, bok := CheckpointIter(best)
	ti, tok := CheckpointIter(tmp)
	at := "of an iteration its state.json no longer tells"
	switch {
	case tok && bok && ti <= bi:
		return nil
	case tok:
		at = fmt.Sprintf("of iteration %d", ti)
	}
	why := strings.TrimSuffix(err.Error(), "; restore it, or start a new run") // its way on is said here
	return &OutOfOrderError{&DamagedNewerError{Folder: tmp, msg: fmt.Sprintf("%s: %s/ is complete (its %s was written) and %s, newer than %s/ (iteration %d), but it no longer passes its check: restore it, or, to go on from %s/ and lose the iterations after %d, move %s/ out of the run folder (%s)",
		filepath.Dir(best), filepath.Base(tmp), completeMarker, at, filepath.Base(best), bi, filepath.Base(best), bi, filepath.Base(tmp), why), err: err}}
}

// DamagedNewerError is damagedNewer's refusal: the checkpoint Folder was
// finished after the complete one LatestCheckpoint would read, and fails
// its check since (the cause it unwraps to). A reader of the models alone
// may use Folder's where its damage lies in other files.
type DamagedNewerError struct {
	Folder string
	msg    string
	err    error
}

func (e *DamagedNewerError) Error() string { return e.msg }
func (e *DamagedNewerError) Unwrap() error { return e.err }

// OutOfOrderError is LatestCheckpoint's refusal of checkpoint folders that
// no interrupted replacement leaves (outOfOrder), or whose newest was
// damaged after it was finished (damagedNewer): its words say what to do.
type OutOfOrderError struct{ Err error }

func (e *OutOfOrderError) Error() string { return e.Err.Error() }
func (e *OutOfOrderError) Unwrap() error { return e.Err }

// CheckpointIter is the iteration of the checkpoint folder dir (its
// state.json's iter), and whether it reads.
func CheckpointIter(dir string) (int, bool) {
	var st struct {
		Iter *int `json:"iter"`
	}
	if jsonfile.Read(filepath.Join(dir, "state.json"), &st, jsonfile.Options{AllowUnknown: true}) != nil || st.Iter == nil {
		return 0, false
	}
	return *st.Iter, true
}

// withCopyRestore adds to a manifest error on a checkpoint's copy of a
// run file (run-config.json of config.json, evals.csv of metrics.csv) how
// to restore it where the run's file has the bytes the manifest records
// (round 95 B1: config.json was blamed for the changed copy, and its
// restore from the copy lost the run's configuration; round 97 B2: a cut
// evals.csv advised --force, losing the run).
func withCopyRestore(err error) error {
	var mm *checkpoint.MismatchError
	if !errors.As(err, &mm) {
		return err
	}
	own, ok := map[string]string{runConfigName: "config.json", "evals.csv": "metrics.csv"}[filepath.Base(mm.Path)]
	if !ok {
		return err
	}
	src := filepath.Join(filepath.Dir(filepath.Dir(mm.Path)), own)
	if sum, serr := safefile.SHA256(src); serr != nil || sum != mm.Sum {
		return err
	}
	return restorableError{fmt.Errorf("%w (the run's %s has the bytes it records: cp %s %s restores the copy)", err, src, shellquote.Quote(src), shellquote.Quote(mm.Path))}
}

// restorableError is a checkpoint's damage that a copy restores (its
// words say how): the run is not lost.
type restorableError struct{ error }

func (e restorableError) Unwrap() error { return e.error }

// checkComplete returns nil if the checkpoint folder dir holds all the
// files Resume reads and they parse. strict (for checkpoint.new/, which an
// interrupted write leaves half written) also wants the marker and
// window.json, which checkpoints written by earlier versions lack.
func checkComplete(dir string, strict bool) error {
	cfg, cfgErr := runConfigOf(dir) // read once, for belongsToRun and iterOfRun
	if err := belongsToRun(dir, cfg, cfgErr); err != nil {
		return err
	}
	// A checkpoint with the copy of its configuration was written after
	// the marker existed: without it, it is incomplete or was tampered
	// with (round 81 B1: a removed COMPLETE turned every check off).
	strict = strict || exists(filepath.Join(dir, runConfigName))
	switch err := checkpoint.CheckManifest(dir, checkpointFiles...); {
	case errors.Is(err, fs.ErrNotExist) && !strict:
		// an old-style checkpoint/, written before the marker existed
	case err != nil:
		return withCopyRestore(err)
	}
	if _, _, err := checkpoint.Load(dir); err != nil {
		return err
	}
	if err := algorithms.CheckStateFiles(dir); err != nil {
		return err
	}
	if err := configOutvoted(dir, cfg, cfgErr); err != nil { // before iterOfRun, which would blame state.json (round 141 B2)
		return err
	}
	if err := iterOfRun(dir, cfg, cfgErr); err != nil {
		return err
	}
	evals := filepath.Join(dir, "evals.csv")
	f, err := safefile.OpenLimited(evals, maxEvalsBytes, "flowebm's evaluations are kilobytes to megabytes")
	if err != nil {
		return err
	}
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1 // rows counted here; their fields, by ReadEvalsCSV
	rows, err := r.ReadAll()
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", evals, err)
	}
	if err := evalsWithinIter(dir, evals, rows); err != nil {
		return err
	}
	path := filepath.Join(dir, "window.json")
	var w modeWindow
	switch err := jsonfile.Read(path, &w, jsonfile.Options{AllowUnknown: true}); {
	case errors.Is(err, fs.ErrNotExist) && !strict:
	case err != nil:
		return err
	case w.Evals != nil && *w.Evals != max(0, len(rows)-1): // round 141 B3: worded as evals.csv's fault, where window.json was the edited one
		return fmt.Errorf("%s holds %d evaluations, but field \"evals\" of %s says %d: they disagree (one of them was edited or cut)", evals, max(0, len(rows)-1), path, *w.Evals)
	default:
		return w.check(path, -1) // round 140 B1: an impossible chain weight (its COMPLETE written again) passed compare and reproduce --report, while plot and resume refused it
	}
	return nil
}

// RecordEdited is, for a run's checkpoint folder ck whose files all match
// the sums its COMPLETE records and whose models load, why its records
// contradict each other or the run (its copy of the configuration shown
// edited or impossible, its state.json's iteration beyond the run or
// before its evaluations): edited, the manifest written again. Its
// models' own files are what the run wrote, so a reader may use them
// saying so, where train --resume cannot continue from it (round 138 B3:
// the run folder refused while the folder itself was used unsaid). Nil
// where there is no such contradiction, or other damage (the manifest's
// own check reports it), or config.json alone differs
// (ConfigEditedError: its ways on are the run's).
func RecordEdited(ck string) error {
	if !exists(filepath.Join(ck, runConfigName)) || checkpoint.CheckManifest(ck, checkpointFiles...) != nil {
		return nil
	}
	if _, _, err := checkpoint.Load(ck); err != nil {
		return nil
	}
	err := checkComplete(ck, true)
	if errors.As(err, new(*ConfigEditedError)) {
		return nil
	}
	if err != nil {
		return err
	}
	return LastEvalEdited(ck)
}

// LastEvalEdited is, for a run's checkpoint folder ck that passed its
// check (LatestCheckpoint's choice), why its last evaluation is shown
// edited: one the run's outputs outvote (round 139 B2: used unsaid); nil
// otherwise. It reads what RecordEdited reads after the check, without
// hashing the folder's files again.
func LastEvalEdited(ck string) error {
	if _, _, _, err := lastEvalOf(filepath.Dir(ck), ck, -1); errors.As(err, new(EditedCheckpointError)) {
		return err
	}
	return nil
}

// evalsWithinIter refuses a checkpoint folder dir whose evaluations
// (rows of evals.csv, its header first) go past the iteration its
// state.json holds, as Resume does, so that every reader gives its verdict
// (round 137 A3: state.json's iteration edited to 120 of 200, its
// COMPLETE written again: sample called the model iteration 120's and
// advised a resume that refused). Rows whose iteration does not read are
// left to ReadEvalsCSV.
func evalsWithinIter(dir, evals string, rows [][]string) error {
	it, ok := CheckpointIter(dir)
	if !ok || len(rows) < 2 || len(rows[0]) == 0 || rows[0][0] != "iter" || len(rows[len(rows)-1]) == 0 {
		return nil
	}
	last, err := strconv.Atoi(rows[len(rows)-1][0])
	if err != nil || last <= it {
		return nil
	}
	return fmt.Errorf("%s: field \"iter\" is %d, but %s holds an evaluation at iteration %d: the checkpoint is inconsistent (one of them was edited, its %s written again); restore it from a backup, or start a new run", filepath.Join(dir, "state.json"), it, evals, last, checkpoint.ManifestName)
}

// configOutvoted refuses the checkpoint folder ck of a finished run whose
// metrics.json is of another length than its config.json, cfg (and so
// than the checkpoint's copy, which belongsToRun found the same), while
// ck's iteration and last evaluation are metrics.json's last (its final):
// the run's results and its checkpoint agree, so the configuration was
// edited in both copies, the checkpoint's
// COMPLETE written again (round 141 B1, B2: 60 iterations edited to 100
// were "a final checkpoint missing", and train --resume trained 40 more
// over the run's results; edited to 40, state.json was blamed). Nil
// otherwise (another run's metrics.json is its own check's).
func configOutvoted(ck string, cfg config.Run, cfgErr error) error {
	if cfgErr != nil {
		return nil
	}
	dir := filepath.Dir(ck)
	mpath := filepath.Join(dir, "metrics.json")
	m, err := ReadMetrics(mpath)
	if err != nil || m.Seed != cfg.Seed || m.Algorithm != cfg.Train.Algorithm || m.Iterations == cfg.Train.Iterations {
		return nil // only the length has a third witness, the checkpoint's own iteration (an edited algorithm in metrics.json is metrics.json's: runs_robust_test)
	}
	it, itOK := CheckpointIter(ck)
	last, _, ok, err := lastEvalOf(dir, ck, -1)
	if (err != nil && !errors.As(err, new(EditedCheckpointError))) || !ok || !itOK || it != m.Iterations || last.Iter != m.Iterations || CheckFinal(mpath, last, "") != nil {
		return nil
	}
	return fmt.Errorf("%s and the checkpoint's copy (%s) configure seed %d, %s, %d iterations, but the run's %s, whose final evaluation is the checkpoint's last, is of seed %d, %s, %d: the configuration was edited in both (the copy's %s written again), not the run; restore both from a backup, or train the run anew in another folder",
		filepath.Join(dir, "config.json"), filepath.Join(ck, runConfigName), cfg.Seed, cfg.Train.Algorithm, cfg.Train.Iterations, mpath, m.Seed, m.Algorithm, m.Iterations, checkpoint.ManifestName)
}

// ConfigOutvoted is configOutvoted of the run in dir and its checkpoint/.
func ConfigOutvoted(dir string) error {
	cfg, err := ReadRunConfig(dir)
	return configOutvoted(filepath.Join(dir, checkpointName), cfg, err)
}

// iterOfRun refuses a checkpoint folder dir whose state.json's iteration
// lies outside 0..the run's train.iterations (its config.json), as Resume
// does, so that every reader passes it over (round 136 B1: one of
// iteration 400 in a run of 40, its COMPLETE written again, was reported
// by reproduce --report and compare as the run's, while plot and train
// --resume refused it). cfg is the run's (runConfigOf); nil where either
// file cannot be read (cfgErr, or state.json: their readers report on
// them).
func iterOfRun(dir string, cfg config.Run, cfgErr error) error {
	it, ok := CheckpointIter(dir)
	if cfgErr != nil || !ok || (it >= 0 && it <= cfg.Train.Iterations) {
		return nil
	}
	return fmt.Errorf("%s: field \"iter\" is %d, want 0..%d (the run's train.iterations)", filepath.Join(dir, "state.json"), it, cfg.Train.Iterations)
}

// runConfigOf reads the config.json of the run whose checkpoint folder is
// dir.
func runConfigOf(dir string) (config.Run, error) {
	return config.Read(filepath.Join(filepath.Dir(dir), "config.json"))
}

// belongsToRun refuses a checkpoint folder written under a configuration
// other than its run's config.json, cfg (a checkpoint.new/ copied in from
// another run would otherwise replace the run's own checkpoint). Folders
// or runs without the records pass, as do runs whose config.json does
// not read (cfgErr: a first checkpoint, or one resume reports on).
func belongsToRun(dir string, cfg config.Run, cfgErr error) error {
	if cfgErr != nil {
		return nil
	}
	return sameConfig(filepath.Join(filepath.Dir(dir), "config.json"), cfg, filepath.Join(dir, runConfigName))
}

// recoverCheckpoint finishes or undoes an interrupted checkpoint
// replacement in the run folder dir: it moves the newest complete
// checkpoint (LatestCheckpoint) into dir/checkpoint and removes
// dir/checkpoint.new and dir/checkpoint.old. It reports whether dir has a
// complete checkpoint; without one it removes only a half-written
// checkpoint.new. Every step leaves a state that LatestCheckpoint resolves
// to the same checkpoint, so recoverCheckpoint may itself be interrupted.
func recoverCheckpoint(dir string) (bool, error) {
	final := filepath.Join(dir, checkpointName)
	tmp, old := final+newSuffix, final+oldSuffix
	best, err := LatestCheckpoint(dir)
	if errors.Is(err, ErrNoCheckpoint) {
		// Nothing to recover; keep a damaged checkpoint/ or
		// checkpoint.old/ for inspection, and a checkpoint.new/ that was
		// completed (its marker written) and damaged since: only a write
		// cut short is removed (round 125 B3: one was removed, and the
		// refusal then named checkpoint/ alone).
		if exists(filepath.Join(tmp, completeMarker)) {
			return false, nil
		}
		return false, removeIfExists(tmp)
	}
	if err != nil {
		return false, err
	}
	switch best {
	case tmp: // finish the replacement
		if exists(final) {
			if err := removeIfExists(old); err != nil {
				return true, err
			}
			if err := os.Rename(final, old); err != nil {
				return true, err
			}
		}
		if err := os.Rename(tmp, final); err != nil {
			return true, err
		}
		syncDir(dir)
		return true, removeIfExists(old)
	case final:
		if err := removeIfExists(tmp); err != nil {
			return true, err
		}
		return true, removeIfExists(old)
	default: // old: undo the replacement
		if err := removeIfExists(tmp); err != nil {
			return true, err
		}
		if exists(final) {
			// Damaged (not complete). Renamed, not removed, so that a
			// half-removed folder never looks like a complete old-style
			// checkpoint/: as checkpoint.new/ it lacks the marker or
			// does not load.
			if err := os.Rename(final, tmp); err != nil {
				return true, err
			}
		}
		if err := os.Rename(old, final); err != nil {
			return true, err
		}
		syncDir(dir)
		return true, removeIfExists(tmp)
	}
}

// writeComplete writes the marker of a finished checkpoint folder, with
// the SHA-256 of its files (checkpoint.WriteManifest).
func writeComplete(dir string) error { return checkpoint.WriteManifest(dir) }

// checkpointFiles are the files of a checkpoint that Resume reads, which
// its marker must list.
var checkpointFiles = []string{"spec.json", "weights.npz", "state.json", "state.npz", "evals.csv", "window.json", runConfigName}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func removeIfExists(path string) error {
	if !exists(path) {
		return nil
	}
	return os.RemoveAll(path)
}

// holdFolders takes the lock on the checkpoint folders of the run folder
// dir (an advisory flock on dir itself): exclusive while they are renamed
// or removed (a checkpoint replacement, a recovery), shared while a reader
// finds and reads the newest complete one (ReadRun). A run being trained
// then never replaces the checkpoint a reader is in the middle of, and a
// reader never meets a replacement halfway. The returned release drops
// the lock.
//
// Neither side waits for ever (each holds the lock for milliseconds to
// seconds): a writer goes on without the lock after patience, reporting
// timedOut (a reader stopped with Ctrl-Z must not stall the training and
// its Ctrl-C; probe 19), and calls waiting (if not nil) once it has waited
// waitingNote; a reader gives up with an error after readerPatience. A
// folder this user may enter but not list (mode 711: it cannot be opened
// to be locked, and was read before the lock existed) is read and written
// without the lock.
func holdFolders(dir string, exclusive bool, w wait) (release func(), timedOut bool, err error) {
	// The gate: RUN/checkpoint itself, locked before the run folder, so
	// that a writer waiting for the readers of the folder keeps new ones
	// out (Linux grants new shared flocks while an exclusive one waits:
	// six reader loops slowed training tenfold and starved it for 12 s,
	// probe 20). Missing (no checkpoint yet) or unreadable, it is passed
	// over: it only orders the waits; the folder's lock keeps the reads
	// whole.
	gate, gateTimedOut := func() {}, false
	// Only a real folder (a link to the run folder itself made the writer
	// wait for its own lock, probe 22; other kinds are the readers' to name).
	if fi, err := os.Lstat(filepath.Join(dir, checkpointName)); err == nil && fi.IsDir() {
		if gate, gateTimedOut, err = lockPath(filepath.Join(dir, checkpointName), exclusive, true, w); err != nil {
			return nil, gateTimedOut, err
		}
	}
	folder, timedOut, err := lockPath(dir, exclusive, false, w)
	if err != nil {
		gate()
		return nil, timedOut, err
	}
	if !exclusive {
		gate() // a reader holds the gate only to pass it
		return folder, timedOut, nil
	}
	return func() { folder(); gate() }, timedOut || gateTimedOut, nil
}

// wait says how long holdFolders waits for a lock: patience, telling
// waiting (if not nil) once it has waited waitingNote; once stop is closed
// (the run interrupted: Ctrl-C waited out the patience, probe 20), at most
// interruptedPatience more.
type wait struct {
	patience time.Duration
	waiting  func()
	stop     <-chan struct{}
}

// interruptedPatience is how long a replacement still waits for readers
// once the run is interrupted.
const interruptedPatience = time.Second

// lockPath is holdFolders' flock of one folder, dir: a missing folder
// (optional) or one that cannot be opened (mode 711) is passed over.
func lockPath(dir string, exclusive, optional bool, w wait) (release func(), timedOut bool, err error) {
	patience, waiting := w.patience, w.waiting
	// Non-blocking: a FIFO in the folder's place would block the open for
	// ever (probe 21), before any check of its kind.
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrPermission) || optional && errors.Is(err, fs.ErrNotExist) {
		return func() {}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		if optional || err != nil {
			return func() {}, false, err // not a folder: the readers say what it is
		}
		return nil, false, fmt.Errorf("%s is not a folder, want a run folder", dir)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	release = func() { f.Close() }
	err = flock(f, how|syscall.LOCK_NB)
	if err == nil {
		return release, false, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, fmt.Errorf("%s: locking its checkpoint folders: %w", dir, err)
	}
	giveUp := func() (func(), bool, error) {
		if exclusive {
			return func() {}, true, nil
		}
		return nil, true, fmt.Errorf("%s: another process has held its checkpoint folders for %s (replacing a checkpoint takes well under a second: a flowebm process stopped with Ctrl-Z?): try again once it goes on (fuser %s names it)", dir, patience.Round(time.Second), dir)
	}
	if patience <= 0 {
		f.Close()
		return giveUp()
	}
	// Wait blocking, so that the kernel hands the lock over the moment it
	// is free (polling lost it to readers that follow one another), in a
	// goroutine that the patience can leave behind: the lock it gets
	// then is dropped at once.
	got := make(chan error, 1)
	go func() { got <- flock(f, how) }()
	note, timeout := time.NewTimer(waitingNote), time.NewTimer(patience)
	defer note.Stop()
	defer timeout.Stop()
	stop := w.stop
	for {
		select {
		case <-stop:
			stop = nil
			if timeout.Stop() {
				timeout.Reset(interruptedPatience)
			}
		case err := <-got:
			if err != nil {
				f.Close()
				return nil, false, fmt.Errorf("%s: locking its checkpoint folders: %w", dir, err)
			}
			return release, false, nil
		case <-note.C:
			if waiting != nil {
				waiting()
			}
		case <-timeout.C:
			go func() { <-got; f.Close() }()
			return giveUp()
		}
	}
}

// flock is syscall.Flock on f, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		if err := syscall.Flock(int(f.Fd()), how); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// writerPatience is how long a checkpoint replacement waits for the
// readers of the run to finish (reading a checkpoint takes milliseconds
// to seconds); stuckPatience, once a reader has outlasted it, is how long
// the run's later replacements wait (that reader is stuck, likely
// stopped: 0, they only try); readerPatience is how long a reader waits for a replacement;
// waitingNote is when a waiting writer says so. Variables for tests.
var (
	writerPatience = 20 * time.Second
	stuckPatience  = time.Duration(0)
	readerPatience = 60 * time.Second
	waitingNote    = 2 * time.Second
)

// withFolders runs f holding the exclusive lock on the run's checkpoint
// folders (writeHeld); an interrupt that ends the wait still writes.
func (r *Run) withFolders(f func() error) error {
	return writeHeld(r.Dir, &r.readerStuck, r.stop, r.Waiting, writeOnStop, f)
}

// onStop is what writeHeld does when it is stopped while a reader still
// holds the checkpoint folders.
type onStop int

const (
	writeOnStop onStop = iota // write without the lock: a checkpoint due is not lost
	leaveOnStop               // write nothing: no folder is renamed under the reader
)

// writeHeld runs f holding the exclusive lock on the checkpoint folders of
// the run folder dir (holdFolders), or without it once writerPatience has
// passed, or only stuckPatience once *stuck says a reader outlasted it
// before. It tells say (if not nil) when it waits for a reader and when it
// goes on without one. Once stop is closed it waits at most
// interruptedPatience more; if the lock is not free by then, f runs
// without it (writeOnStop), or does not run (leaveOnStop): the error then
// wraps algorithms.ErrInterrupted.
func writeHeld(dir string, stuck *bool, stop <-chan struct{}, say func(string), stopped onStop, f func() error) error {
	if say == nil {
		say = func(string) {}
	}
	patience := writerPatience
	if *stuck {
		patience = stuckPatience
	}
	start := time.Now()
	release, timedOut, err := holdFolders(dir, true, wait{patience: patience, stop: stop, waiting: func() {
		say(fmt.Sprintf("waiting up to %s for another process that reads %s's checkpoint", patience.Round(time.Second), dir))
	}})
	if err != nil {
		return err
	}
	defer release()
	waited := time.Since(start).Round(100 * time.Millisecond)
	switch {
	case !timedOut:
		*stuck = false // the reader went on
	case closed(stop) && stopped == leaveOnStop:
		return fmt.Errorf("%w after waiting %s for a process that reads %s's checkpoint: its folders are left as they are (the next --resume finishes the replacement that a crash interrupted)", algorithms.ErrInterrupted, waited, dir)
	case *stuck: // told already: the run's later writes neither wait for it again nor say so (probe 25)
	case closed(stop): // the user's interrupt, not the reader's patience, ended the wait (probe 24)
		*stuck = true
		say(fmt.Sprintf("the interrupt ended, after %s, the wait for a process that reads %s's checkpoint: the checkpoint is replaced without waiting for it, and that reader may fail", waited, dir))
	default:
		*stuck = true
		say(fmt.Sprintf("a process reading %s's checkpoint held it for the %s waited (stopped with Ctrl-Z?): the checkpoint is replaced without waiting for it, and that reader may fail", dir, waited))
	}
	return f()
}

// closed reports whether stop (nil: never) is closed.
func closed(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// ReadRun runs read holding the shared lock on the checkpoint folders of
// the run folder dir: a process training the run replaces its checkpoint
// only once read returns, so that read sees one checkpoint whole (found
// with LatestCheckpoint) even while the run is being trained. read must not
// call ReadRun for dir again: the inner call would wait at the gate behind
// a replacement that waits for the outer one (until writerPatience).
func ReadRun(dir string, read func() error) error {
	release, _, err := holdFolders(dir, false, wait{patience: readerPatience})
	if err != nil {
		return err
	}
	defer release()
	before := checkpointFolders(dir)
	err = read()
	if err != nil && !sameFolders(before, checkpointFolders(dir)) {
		// A trainer that waited writerPatience for this reader (stopped
		// with Ctrl-Z) replaced the checkpoint under it: the run is whole
		// (probe 26: "checkpoint/ is incomplete … start a new run").
		return fmt.Errorf("%s: the run replaced its checkpoint while this process was reading it (its trainer waits at most %s for readers, and not at all while one of them is stopped or once it is interrupted): run the command again; if it fails again, a process stopped with Ctrl-Z holds the run (fuser %s names it): let it go on or end it", dir, writerPatience.Round(time.Second), dir)
	}
	return err
}

// checkpointFolders describes the checkpoint folders of the run in dir
// (nil where one is missing), for sameFolders.
func checkpointFolders(dir string) []os.FileInfo {
	var fis []os.FileInfo
	for _, suffix := range []string{"", newSuffix, oldSuffix} {
		fi, _ := os.Lstat(filepath.Join(dir, checkpointName+suffix))
		fis = append(fis, fi)
	}
	return fis
}

// sameFolders reports whether a and b (checkpointFolders) describe the
// same folders: nothing was renamed or replaced between them.
func sameFolders(a, b []os.FileInfo) bool {
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) || a[i] != nil && !os.SameFile(a[i], b[i]) {
			return false
		}
	}
	return true
}

// ReadLatest calls read with the newest complete checkpoint of the run in
// dir (LatestCheckpoint), under ReadRun.
func ReadLatest(dir string, read func(ck string) error) error {
	return ReadRun(dir, func() error {
		ck, err := LatestCheckpoint(dir)
		if err != nil {
			return err
		}
		return read(ck)
	})
}

// syncDir flushes dir's entries (renames) to disk, where the system
// allows; failures are ignored (some file systems cannot sync a folder).
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

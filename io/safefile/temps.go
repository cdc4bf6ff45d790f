package safefile

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// temps are the temporary files and folders being written, which
// RemoveTemps removes; hold holds RemoveTemps off while Hold runs.
var temps = struct {
	hold   sync.Mutex
	mu     sync.Mutex
	paths  map[int]string
	undos  map[int]func() // OnRemoveTemps's, run after paths are removed
	next   int
	closed bool // RemoveTemps ran: the process is exiting
}{paths: map[int]string{}, undos: map[int]func(){}}

// register adds path to temps; temps.mu is held.
func register(path string) (untrack func()) { return add(temps.paths, path) }

// add adds v to m, one of temps' maps, under a new key; temps.mu is held.
// remove takes it out.
func add[T any](m map[int]T, v T) (remove func()) {
	id := temps.next
	temps.next++
	m[id] = v
	return func() {
		temps.mu.Lock()
		delete(m, id)
		temps.mu.Unlock()
	}
}

// errExiting is createTracked's error once RemoveTemps has run.
var errExiting = errors.New("the process is exiting (interrupted): no temporary file is made")

// createTracked makes a temporary file or folder (create returns its
// path) and registers it for RemoveTemps as one step, which RemoveTemps
// cannot cut in two (probe 32: an interrupt between them left an empty
// .report.md.tmpN, the message saying the partial files were removed).
func createTracked(create func() (string, error)) (path string, untrack func(), err error) {
	temps.mu.Lock()
	defer temps.mu.Unlock()
	if temps.closed {
		return "", nil, errExiting
	}
	if path, err = create(); err != nil {
		return "", nil, err
	}
	return path, register(path), nil
}

// OnRemoveTemps registers undo to run when RemoveTemps does, after the
// tracked paths are removed and before the undos registered earlier,
// until cancel is called; after RemoveTemps has run, undo runs at once.
// It is for what is not a path to remove whole: a folder made for
// outputs, to remove only while it is empty (another process may have put
// files there: probe 34 saw RemoveAll delete them), or a lock file.
// Register it in the Hold that makes what it undoes.
func OnRemoveTemps(undo func()) (cancel func()) {
	temps.mu.Lock()
	defer temps.mu.Unlock()
	if temps.closed {
		undo()
		return func() {}
	}
	return add(temps.undos, undo)
}

// RemoveTemps removes every tracked temporary file and folder, then runs
// the undos of OnRemoveTemps, the last registered first, after the Hold
// under way if any; a signal handler calls it as its last step before the
// process exits (a Hold after it never returns). It returns the paths
// removed.
func RemoveTemps() []string {
	temps.hold.Lock()
	defer temps.hold.Unlock()
	temps.mu.Lock()
	defer temps.mu.Unlock()
	temps.closed = true
	var removed []string
	for id, p := range temps.paths {
		if removeAllSettled(p) {
			removed = append(removed, p)
		}
		delete(temps.paths, id)
	}
	ids := slices.Sorted(maps.Keys(temps.undos))
	slices.Reverse(ids)
	for _, id := range ids {
		temps.undos[id]()
		delete(temps.undos, id)
	}
	return removed
}

// removeAll is os.RemoveAll; tests replace it.
var removeAll = os.RemoveAll

// removeAllSettled removes path if it exists, and reports whether it did.
// A folder is removed again while it fills meanwhile: a file being put
// in it as the cleanup runs (a rename, outside Hold) makes RemoveAll fail
// with "directory not empty" (probe 38: compare left .compare-N holding
// one figure in 5 of 506 signals).
func removeAllSettled(path string) bool {
	for try := 0; try < 20; try++ {
		if _, err := os.Lstat(path); err != nil {
			return try > 0
		}
		if removeAll(path) == nil {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// Hold runs f while RemoveTemps waits: steps that must not be cut in two
// (a folder swap and the untracking of what it put in place) run in f.
// Once RemoveTemps has run, the process is exiting: Hold then blocks and
// never runs f, so that nothing is made again that the cleanup removed
// (probe 36: diagnose --plots made its folder again, and locked it, as
// the signal's handler exited, leaving it).
func Hold(f func() error) error {
	temps.hold.Lock()
	if exiting() {
		temps.hold.Unlock()
		select {} // until the handler that ran RemoveTemps exits
	}
	defer temps.hold.Unlock()
	return f()
}

// exiting reports whether RemoveTemps has run.
func exiting() bool {
	temps.mu.Lock()
	defer temps.mu.Unlock()
	return temps.closed
}

// errNoExchange is exchange's error where the system cannot swap two
// paths atomically.
var errNoExchange = errors.New("atomic exchange not supported")

// ReplaceDir puts the complete folder tmp in place of the folder dir,
// which must exist; tmp then holds the old folder, which the caller
// removes. Where the system can, the two are exchanged atomically, so
// that dir always holds one or the other complete. Elsewhere dir is first
// renamed to aside, then tmp to dir: a kill in between leaves the old
// folder at aside (RestoreAside puts it back). Run it in Hold, so that a
// signal's RemoveTemps waits for it.
func ReplaceDir(tmp, dir, aside string) error {
	err := exchange(tmp, dir)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errNoExchange) {
		return fmt.Errorf("replacing %s: %w", dir, err)
	}
	if err := os.Rename(dir, aside); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.Rename(aside, dir)
		return err
	}
	return os.Rename(aside, tmp)
}

// RestoreAside moves the files of the folder aside (that ReplaceDir moved
// there and was killed before finishing) back into dir, the file last
// after the others (it marks the folder complete), and removes aside; the
// files named in skip stay behind and go with aside.
func RestoreAside(aside, dir, last string, skip ...string) error {
	entries, err := os.ReadDir(aside)
	if err != nil {
		return err
	}
	names := []string{}
	for _, e := range entries {
		if e.Name() != last && !slices.Contains(skip, e.Name()) {
			names = append(names, e.Name())
		}
	}
	if _, err := os.Lstat(filepath.Join(aside, last)); err == nil {
		names = append(names, last)
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(aside, n), filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return os.RemoveAll(aside)
}

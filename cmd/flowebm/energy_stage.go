package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowebm/flowebm/io/safefile"
)

// stagedOutputs are output files written whole beside their places, to
// be put in place together. Each is staged under a name of this process's
// own (safefile.Stage), locked until it is in place: another process
// writing the same outputs neither removes it nor replaces it.
type stagedOutputs struct {
	files []stagedFile
	// placed, if not nil, is called once every file is in place, before
	// a signal's cleanup may run.
	placed func()
}

type stagedFile struct {
	flag, path string
	force      bool
	staged     *safefile.Staged
}

// stage writes path's content into its staging file.
func (s *stagedOutputs) stage(flag, path string, force bool, write func(io.Writer) error) error {
	if err := safefile.RemoveStale(path); err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	st, err := safefile.Stage(path, func(w io.Writer) error { hook("output-writing"); return write(w) })
	if err != nil {
		return fmt.Errorf("%s %w", flag, err) // "--out PATH: …": Stage's errors begin with the path
	}
	s.files = append(s.files, stagedFile{flag, path, force, st})
	return nil
}

// place puts every staged file in place while a signal's cleanup waits,
// and while no other energy process puts files in the same folders (the
// pairs of two would mix); without force an output written meanwhile by
// another process stops it before anything is replaced.
func (s *stagedOutputs) place() error {
	unlock, err := lockFolders(s.paths())
	if err != nil {
		return err
	}
	defer unlock()
	return safefile.Hold(func() error {
		if err := s.placeAll(); err != nil {
			return err // nothing was replaced
		}
		if s.placed != nil {
			s.placed()
		}
		return nil
	})
}

// paths are the outputs' paths.
func (s *stagedOutputs) paths() []string {
	var p []string
	for _, f := range s.files {
		p = append(p, f.path)
	}
	return p
}

// placeAll puts the staged files in place, keeping each file replaced
// aside (a hard link, PATH.replaced) until every new one is in place, and
// putting the replaced ones back if one fails.
func (s *stagedOutputs) placeAll() error {
	for _, f := range s.files {
		if !f.force && exists(f.path) {
			return existsMeanwhile(f.flag, f.path)
		}
		// Checked again: a run may have started in the folder meanwhile
		// (probe 47: sample's chains, placed as a new run's samples.npy,
		// were replaced by the run's at its end, both at exit 0).
		if err := checkNotInRun(f.flag, f.path, filepath.Dir(f.path)); err != nil {
			return fmt.Errorf("%w (since this command started; nothing was written)", err)
		}
	}
	var placed []stagedFile
	undo := func(cause error) error {
		putBack(placed)
		return fmt.Errorf("%w; nothing was replaced", cause)
	}
	for _, f := range s.files {
		if err := keepAside(f.flag, f.path); err != nil {
			return undo(err)
		}
		if err := f.staged.Place(f.force); err != nil {
			os.Remove(f.path + replacedSuffix)
			return undo(err)
		}
		placed = append(placed, f)
	}
	for _, f := range placed {
		os.Remove(f.path + replacedSuffix)
	}
	return nil
}

// putBack undoes the placement of the files placed: each file replaced
// goes back, a new file is removed.
func putBack(placed []stagedFile) {
	for _, f := range placed {
		if exists(f.path + replacedSuffix) {
			os.Rename(f.path+replacedSuffix, f.path)
		} else {
			os.Remove(f.path)
		}
	}
}

// replacedSuffix names the file that an output replaces, kept aside
// while energy puts its outputs in place.
const replacedSuffix = ".replaced"

// keepAside links the existing output path of flag to PATH.replaced; one
// already there, left by a killed energy, is not overwritten: it is
// reported.
func keepAside(flag, path string) error {
	if err := checkNoReplacedLeft(flag, path); err != nil || !exists(path) {
		return err
	}
	err := os.Link(path, path+replacedSuffix)
	if errors.Is(err, fs.ErrExist) {
		return replacedLeft(flag, path)
	}
	return err
}

// checkNoReplacedLeft refuses an output path of flag beside which a
// killed energy left the file it was replacing (see replacedLeft).
func checkNoReplacedLeft(flag, path string) error {
	if path == "" {
		return nil
	}
	kept, err := os.Lstat(path + replacedSuffix)
	if err != nil {
		return nil
	}
	if now, err := os.Lstat(path); err == nil && os.SameFile(kept, now) {
		// Killed before the new file was put in place: PATH.replaced is
		// PATH itself (a hard link), which nothing replaced (probe 28: the
		// advised mv failed, "are the same file").
		return os.Remove(path + replacedSuffix)
	}
	return replacedLeft(flag, path)
}

// replacedLeft is the error of an output path of flag beside which an
// energy killed while putting its outputs in place left PATH.replaced:
// path may be new and the other output old, or both new; the user
// decides which to keep.
func replacedLeft(flag, path string) error {
	old := path + replacedSuffix
	return fmt.Errorf("%s %s: %s is left from a command killed while putting its outputs in place (energy's --out and --grad, sample's --out and --flow-out): it is the file that %s replaced, and %s may be newer than the other outputs written with it; put it back (mv %s %s) or delete it, then run again", flag, path, old, path, path, old, path)
}

// lockFolders takes exclusive locks on the folders of paths (each once,
// in order), waiting for another process's; unlock releases them.
func lockFolders(paths []string) (unlock func(), err error) {
	type folder struct{ real, given string }
	var dirs []folder
	var seen []os.FileInfo
	for _, p := range paths {
		d := filepath.Dir(p)
		fi, err := os.Stat(d)
		if err != nil || slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(s, fi) }) {
			continue // one folder by two names is locked once (probe 25: energy waited for its own lock)
		}
		// Ordered by the real names, so that every process locks in one
		// order, however long (probe 46: a link whose target is deeper
		// than PATH_MAX left its folder unlocked); opened by the name
		// given, which the system takes.
		dirs, seen = append(dirs, folder{resolvedPath(d), d}), append(seen, fi)
	}
	slices.SortFunc(dirs, func(a, b folder) int { return strings.Compare(a.real, b.real) })
	var held []*os.File
	unlock = func() {
		for _, f := range held {
			f.Close() // releases its lock
		}
	}
	for _, d := range dirs {
		f, err := lockFolder(d.given)
		if err != nil {
			unlock()
			return nil, err
		}
		held = append(held, f)
	}
	return unlock, nil
}

// lockFolder opens the folder dir and takes its exclusive lock, waiting
// for another process's: saying so after outputLockNote, giving up after
// outputLockPatience (putting outputs in place takes milliseconds: the
// holder is stopped; probe 24: energy and sample waited silently for ever
// behind one stopped with Ctrl-Z). Closing it releases the lock.
func lockFolder(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	start, noted := time.Now(), false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		waited := time.Since(start)
		switch {
		case !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR):
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", dir, err)
		case waited >= outputLockPatience:
			f.Close()
			return nil, fmt.Errorf("%s: another flowebm process has been putting its outputs in this folder for %s (that takes milliseconds: a process stopped with Ctrl-Z? fuser %s names it): nothing was written", dir, seconds(waited), dir)
		case waited >= outputLockNote && !noted:
			noted = true
			fmt.Fprintf(os.Stderr, "flowebm: note: waiting up to %s for another flowebm process that puts its outputs in %s\n", seconds(outputLockPatience), dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seconds is d in seconds, as the other waits say it ("60s", not
// "1m0s": probe 25).
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'g', 3, 64) + "s"
}

// outputLockNote and outputLockPatience are when lockFolder says that it
// waits, and when it gives up. Variables for tests.
var (
	outputLockNote     = 2 * time.Second
	outputLockPatience = 60 * time.Second
)

// discard removes the staging files not put in place.
func (s *stagedOutputs) discard() {
	for _, f := range s.files {
		f.staged.Close()
	}
}

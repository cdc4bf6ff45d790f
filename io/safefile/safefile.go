// Package safefile writes files atomically, so that an interrupted or failed
// write never leaves a half-written file behind.
//
// The temporary files and folders being written are registered
// (Track): a signal handler calls RemoveTemps to remove them before the
// process exits, and RemoveStale removes those that a killed process
// left (a temporary file stays locked while its writer lives).
package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Options change how Write puts the finished file in place.
type Options struct {
	// NoReplace makes the final step fail with an *ExistsError, leaving
	// the file as it is, when path exists by then (another process wrote
	// it meanwhile), instead of replacing it.
	NoReplace bool
}

// ExistsError is Write's error, with Options.NoReplace, when the file it
// would have put in place exists. It matches fs.ErrExist.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s exists (another process wrote it meanwhile?)", e.Path)
}

func (e *ExistsError) Is(target error) bool { return target == fs.ErrExist }

// Write calls write with a buffered writer on a temporary file in path's
// folder and, once write and the final flush and sync succeed, renames the
// temporary file to path. On any error the temporary file is removed and
// path is left as it was. Errors from write are prefixed with path.
func Write(path string, write func(io.Writer) error) error {
	return WriteOptions(path, Options{}, write)
}

// WriteNew is Write that never replaces an existing path: see
// Options.NoReplace.
func WriteNew(path string, write func(io.Writer) error) error {
	return WriteOptions(path, Options{NoReplace: true}, write)
}

// WriteOptions is Write with options.
func WriteOptions(path string, o Options, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	// The lock tells RemoveStale that the file's writer lives; it lasts
	// until the file is in place (closed last).
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	untrack := Track(f.Name())
	defer untrack()
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if err = write(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; give it the usual mode.
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	return Place(f.Name(), path, !o.NoReplace)
}

// Place renames the file tmp to path. Unless replace, it fails with an
// *ExistsError when path exists, leaving both as they are: the file is
// linked to path, which fails if path exists, and then tmp is removed.
func Place(tmp, path string, replace bool) error {
	if replace {
		return os.Rename(tmp, path)
	}
	err := os.Link(tmp, path)
	switch {
	case errors.Is(err, fs.ErrExist):
		return &ExistsError{Path: path}
	case err != nil:
		// A file system without hard links: check, then rename (a
		// file written in between is replaced).
		if _, err := os.Lstat(path); err == nil {
			return &ExistsError{Path: path}
		}
		return os.Rename(tmp, path)
	}
	return os.Remove(tmp)
}

// RemoveStale removes the temporary files (.NAME.tmpN) that a killed Write
// of path left in its folder; those whose writer still lives are locked
// and kept.
func RemoveStale(path string) error {
	pattern := filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+".tmp*")
	tmps, err := filepath.Glob(pattern)
	if err != nil {
		return err
	}
	for _, t := range tmps {
		if err := removeUnlocked(t); err != nil {
			return err
		}
	}
	return nil
}

// removeUnlocked removes the file t unless another process holds its lock.
func removeUnlocked(t string) error {
	f, err := os.Open(t)
	if err != nil {
		return nil // gone meanwhile
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return nil
	}
	if err := os.Remove(t); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// globEscape escapes the characters that filepath.Glob treats specially.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

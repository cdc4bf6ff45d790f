// Package safefile writes files atomically, so that an interrupted or failed
// write never leaves a half-written file behind.
//
// The temporary files and folders being written are registered as they
// are made (Stage, MkdirTempTracked): a signal handler calls RemoveTemps
// to remove them before the process exits, and RemoveStale removes those
// that a killed process left (a temporary file stays locked while its writer lives).
package safefile

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
func WriteOptions(path string, o Options, write func(io.Writer) error) error {
	s, err := Stage(path, write)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Place(!o.NoReplace)
}

// Staged is a complete file written beside its place (.NAME.tmpN, as
// Write makes them), not yet put there. It stays locked until Close, so
// that RemoveStale of another process keeps it: each process stages
// under a name of its own, which no other one removes or replaces.
type Staged struct {
	f       *os.File
	path    string
	untrack func()
	placed  bool
}

// Stage calls write with a buffered writer on a temporary file in path's
// folder, then flushes and syncs it; on an error the file is removed.
// Errors from write are prefixed with path. Call Close when done.
func Stage(path string, write func(io.Writer) error) (*Staged, error) {
	var f *os.File
	_, untrack, err := createTracked(func() (string, error) {
		return makeTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp", func(name string) (err error) {
			// The mode a new file gets under the user's umask (probe 24:
			// the outputs were 0644 under umask 077).
			f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
			return err
		})
	})
	if err != nil {
		return nil, atPath(path, err)
	}
	// The lock tells RemoveStale that the file's writer lives; it lasts
	// until Close.
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	s := &Staged{f: f, path: path, untrack: untrack}
	if err := s.fill(write); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// fill writes the content and syncs it.
func (s *Staged) fill(write func(io.Writer) error) error {
	bw := bufio.NewWriter(s.f)
	if err := write(bw); err != nil {
		return atPath(s.path, err)
	}
	if err := bw.Flush(); err != nil {
		return atPath(s.path, err)
	}
	return atPath(s.path, s.f.Sync())
}

// atPath prefixes err with path, the file being written, in place of the
// temporary file's name that the system's errors carry (a name that the
// user never sees on disk): "out.npy: write: no space left on device".
func atPath(path string, err error) error {
	if err == nil {
		return nil
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && strings.Contains(filepath.Base(pe.Path), ".tmp") {
		return fmt.Errorf("%s: %s: %w", path, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Name is the staged file's temporary path.
func (s *Staged) Name() string { return s.f.Name() }

// Place puts the staged file at its path (see the function Place).
func (s *Staged) Place(replace bool) error {
	if err := Place(s.f.Name(), s.path, replace); err != nil {
		return err
	}
	s.placed = true
	s.untrack()
	return nil
}

// Close removes the staged file unless it was put in place, and unlocks
// it.
func (s *Staged) Close() {
	if !s.placed {
		os.Remove(s.f.Name())
	}
	s.untrack()
	s.f.Close()
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
	return RemoveStaleIn(filepath.Dir(path), filepath.Base(path))
}

// RemoveStaleIn removes from the folder dir the temporary files that
// killed Writes of the files names left there: exactly .NAME.tmpN, N the
// digits that Stage chooses. Those whose writer still lives are
// locked and kept. The folder's entries are listed, so that no character
// of dir or of a name is read as a pattern.
func RemoveStaleIn(dir string, names ...string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && isTempOf(e.Name(), names) {
			if err := removeUnlocked(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// isTempOf reports whether name is the temporary file of a Write of one
// of names.
func isTempOf(name string, names []string) bool {
	for _, n := range names {
		if IsTemp(name, "."+n+".tmp") {
			return true
		}
	}
	return false
}

// MkdirTemp makes a new folder in dir named prefix and digits, as
// os.MkdirTemp does (IsTemp knows the name), but with the mode os.Mkdir
// gives 0o755 under the user's umask instead of 0700: for a folder renamed
// into place as an output (probe 23: convert's checkpoint folder could be
// read by its owner only).
func MkdirTemp(dir, prefix string) (string, error) {
	return makeTemp(dir, prefix, func(name string) error { return os.Mkdir(name, 0o755) })
}

// MkdirTempTracked is MkdirTemp with the folder registered for
// RemoveTemps in the same step: an interrupt leaves no folder.
func MkdirTempTracked(dir, prefix string) (path string, untrack func(), err error) {
	return createTracked(func() (string, error) { return MkdirTemp(dir, prefix) })
}

// maxNameBytes is the longest file name most file systems take (Linux's
// NAME_MAX); maxPIDDigits, the most digits of a process ID (Linux's
// pid_max is at most 4194304).
const (
	maxNameBytes = 255
	maxPIDDigits = 7
)

// tempDigits is the most digits makeTemp puts after a prefix: whatever
// this process's ID (probe 26: the limit moved with it).
const tempDigits = maxPIDDigits + 4

// fits says by how much a temporary name prefix+N is too long (probe 25:
// a bare "file name too long"), or returns nil.
func fits(prefix string) error {
	if over := len(prefix) + tempDigits - maxNameBytes; over > 0 {
		return fmt.Errorf("the name is %d bytes too long: it is written first as %sN (N %d digits), and a file name may have at most %d bytes", over, prefix, tempDigits, maxNameBytes)
	}
	return nil
}

// NameFits says whether Write can write path: its staging name
// (.NAME.tmpN) must fit in a file name; the error says by how much it is
// too long.
func NameFits(path string) error {
	if err := fits("." + filepath.Base(path) + ".tmp"); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// makeTemp calls create with new names in dir, prefix and digits, until
// one does not exist yet, and returns it.
func makeTemp(dir, prefix string, create func(name string) error) (string, error) {
	const tries = 10000
	if err := fits(prefix); err != nil {
		return "", err
	}
	for try := range tries {
		name := filepath.Join(dir, prefix+strconv.Itoa(os.Getpid())+strconv.Itoa(try))
		err := create(name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: no free name %s… after %d tries", dir, prefix, tries)
}

// IsTemp reports whether name is one that Stage or MkdirTemp (or
// os.CreateTemp and os.MkdirTemp, from the pattern prefix+"*") makes:
// prefix, then only digits.
func IsTemp(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// removeUnlocked removes the file t unless another process holds its lock.
func removeUnlocked(t string) error {
	f, err := os.OpenFile(t, os.O_RDONLY|openNonblock, 0) // a FIFO named so does not block
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

// SHA256 is the hexadecimal SHA-256 of the regular file at path (see
// Open).
func SHA256(path string) (string, error) {
	f, err := Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Open opens the file at path (following links) for reading, refusing
// anything but a regular file before reading it: a FIFO would block for
// ever (it is opened without waiting for a writer), a device such as
// /dev/zero never end.
func Open(path string) (*os.File, error) { return openRegular(path, os.O_RDONLY, 0) }

// openRegular opens the file at path with flag (and perm, where it is
// made), without waiting for the other end of a FIFO, and refuses it
// unless it is a regular file.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|openNonblock, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = regular(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenAppend opens the regular file at path for appending, creating it
// (a log). A symbolic link, or a file that is not regular, is refused
// before anything is written through it: a FIFO would block the open, or
// take the lines. A file with other hard links (a copy of its folder made
// with cp -al shares it) is first replaced, through a temporary file, by
// a copy of its own, so that the other names keep what they hold.
func OpenAppend(path string) (*os.File, error) {
	for range 3 {
		f, err := openRegular(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|openNoFollow, 0o644)
		if err != nil {
			if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
				return nil, regular(path, fi) // a link (ELOOP), a FIFO without a reader (ENXIO), named
			}
			return nil, err
		}
		if fi, err := f.Stat(); err != nil || links(fi) == 1 {
			if err != nil {
				f.Close()
				return nil, err
			}
			return f, nil
		}
		f.Close()
		if err := Write(path, func(w io.Writer) error { return copyFile(w, path) }); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s has other hard links again after each of 3 copies of its own: another program links it", path)
}

// copyFile copies the regular file at path to w.
func copyFile(w io.Writer, path string) error {
	src, err := Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(w, src)
	return err
}

// ReadFile reads the regular file at path (see Open), refusing, before
// reading, a file of more than max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, want at most %d", path, fi.Size(), max)
	}
	// One buffer of the file's size (io.ReadAll's doubling took 2.5 times
	// a large file at its peak), grown only if the file grows meanwhile.
	b := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if int64(len(b)) > max {
			return nil, fmt.Errorf("%s: more than %d bytes, want at most %d", path, max, max)
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	return b, nil
}

// OpenLimited is Open for a file of at most max bytes (refused before it
// is read, naming the limit's reason why).
func OpenLimited(path string, max int64, why string) (*os.File, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() > max {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %d bytes, want at most %d (%s)", path, fi.Size(), max, why)
	}
	return f, nil
}

// Regular refuses a file (described by fi, from os.Stat or os.Lstat) that
// is not a regular file, naming its kind in words: "PATH is a folder, want
// a regular file".
func Regular(path string, fi fs.FileInfo) error { return regular(path, fi) }

// NotRegularError is the refusal of a path that is not a regular file:
// "PATH is a folder, want a regular file".
type NotRegularError struct {
	Path, Kind string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, want a regular file", e.Path, e.Kind)
}

// regular refuses a file that is not a regular file, naming its kind.
func regular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	kind := "not a regular file"
	switch t := fi.Mode().Type(); {
	case fi.IsDir():
		kind = "a folder"
	case t&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		kind = "a socket"
	case t&fs.ModeDevice != 0:
		kind = "a device"
	case t&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	}
	return &NotRegularError{Path: path, Kind: kind}
}

// Package pathcheck refuses paths that the system and Go's path
// functions read differently: a .. after a symbolic link, which the
// system resolves through the link and filepath.Clean, Join and Dir drop
// as text. A program that checks a path with one reading and reads or
// writes it with the other names two places.
package pathcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DotDot refuses a path with a .. that the system and Go's path
// functions read differently. The system resolves the part before a ..
// first, through any symbolic link, and takes the parent of what it
// finds; filepath.Clean, Join and Dir drop the last name as text. Where
// the two parents differ (a link, L/./.., L//..), or the part before
// does not exist, the checks and the reads or writes would name different
// places (probe 37: energy --out lnk/../metrics.csv replaced a file of
// the input run; probe 38: L/./../x got past the check of L/../x, and an
// input L/.. was read as the working folder).
func DotDot(path string) error {
	parts := strings.Split(path, string(filepath.Separator))
	system, text := ".", "." // the system's reading of the parts so far, and Go's
	if filepath.IsAbs(path) {
		system, text = string(filepath.Separator), string(filepath.Separator)
	}
	// before is the path up to the i-th part, as the messages name it:
	// made only for a message, so that the check's cost grows with the
	// number of parts, not its square (probe 41: 16,000 ..s took 1.7 s).
	before := func(i int) string {
		b := strings.Join(parts[:i], string(filepath.Separator))
		if !slices.Contains(parts[:i], "..") { // L/. and L/ named as L
			b = filepath.Clean(b)
		}
		return b
	}
	// system is kept resolved name by name: each name costs one lstat,
	// and a link one resolution, so that the check's cost grows with the
	// number of parts times the depth (probes 45, 46: each .. resolved the
	// whole prefix again, 79 s for 1,000 names and 700 x/.. pairs).
	var broken error // why the parts so far cannot be resolved
	for i, p := range parts {
		switch p {
		case "", ".":
			continue
		default:
			text = filepath.Join(text, p)
			if broken == nil {
				system, broken = step(system, p)
			}
			continue
		case "..":
		}
		if broken != nil {
			return fmt.Errorf(".. follows %s, %w: give the path without ..", before(i), broken)
		}
		parent, err := systemParent(system)
		if err != nil {
			return fmt.Errorf(".. follows %s, %w: give the path without ..", before(i), err)
		}
		text = filepath.Join(text, "..")
		same, err := sameFolder(parent, text)
		if err != nil {
			return fmt.Errorf(".. follows %s: %w", before(i), err)
		}
		if !same {
			b := before(i)
			return fmt.Errorf(".. follows %s, which the system resolves through a symbolic link: there %s/.. is %s, while flowebm's checks would take it for %s; give the path without ..", b, b, parent, text)
		}
		system = parent
	}
	return nil
}

// step is the system's reading of the name p in the resolved folder
// path dir: where it is a symbolic link, what it leads to; err says why it
// cannot be followed.
func step(dir, p string) (string, error) {
	next := filepath.Join(dir, p)
	fi, err := os.Lstat(next)
	if err != nil {
		return next, unfollowable(err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return next, nil
	}
	real, err := filepath.EvalSymlinks(next)
	if err != nil {
		return next, unfollowable(err)
	}
	return real, nil
}

// unfollowable says why a name cannot be followed, from the error of its
// lstat or its links' resolution.
func unfollowable(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("which does not exist")
	}
	return fmt.Errorf("which cannot be resolved (%v)", err)
}

// systemParent is the folder that the system reaches by .. after the
// resolved path: its parent, where it is a folder.
func systemParent(path string) (string, error) {
	if fi, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("which cannot be read (%v)", err)
	} else if !fi.IsDir() {
		return "", errors.New("which is not a folder")
	}
	if b := filepath.Base(path); b == "." || b == ".." { // the working folder's parents
		return filepath.Join(path, ".."), nil
	}
	return filepath.Dir(path), nil
}

// sameFolder reports whether the folders a and b are one; err says why
// one cannot be read.
func sameFolder(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // Go's reading names no folder: not the system's
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

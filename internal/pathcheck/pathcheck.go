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
	resolved := false // system is a resolved folder (after a ..): its parent needs no walk (probe 45: each .. walked the whole prefix again)
	for i, p := range parts {
		switch p {
		case "", ".":
			continue
		default:
			system, text = filepath.Join(system, p), filepath.Join(text, p)
			resolved = false
			continue
		case "..":
		}
		parent, err := systemParent(system, resolved)
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
		system, resolved = parent, true
	}
	return nil
}

// systemParent is the folder that the system reaches by .. after path
// (which holds no .. after a name): the parent of the folder path leads
// to, links resolved; resolved says path is such a parent already.
func systemParent(path string, resolved bool) (string, error) {
	if resolved { // a folder found by the system's ..: no links to follow
		if b := filepath.Base(path); b == "." || b == ".." {
			return filepath.Join(path, ".."), nil
		}
		return filepath.Dir(path), nil
	}
	real, err := filepath.EvalSymlinks(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", errors.New("which does not exist")
	case err != nil:
		return "", fmt.Errorf("which cannot be resolved (%v)", err)
	}
	if fi, err := os.Stat(real); err != nil {
		return "", fmt.Errorf("which cannot be read (%v)", err)
	} else if !fi.IsDir() {
		return "", errors.New("which is not a folder")
	}
	if b := filepath.Base(real); b == "." || b == ".." { // the working folder's parents
		return filepath.Join(real, ".."), nil
	}
	return filepath.Dir(real), nil
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

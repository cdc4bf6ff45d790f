package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pathAnnotation marks the flags whose values are paths (markPathFlags):
// checkPaths checks them before the command runs.
const pathAnnotation = "flowebm:path"

// markPathFlags marks the flags names of fl as paths; a name that is not
// a flag of fl is a programming error.
func markPathFlags(fl *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fl.SetAnnotation(n, pathAnnotation, []string{"path"}); err != nil {
			panic(err)
		}
	}
}

// checkPaths refuses, before cmd runs, a path given as an argument or a
// path flag whose .. the system reads differently from Go's path
// functions (dotDotAmbiguity): the command's checks and its reads or
// writes would name different places.
func checkPaths(cmd *cobra.Command, args []string) error {
	for i, a := range args {
		if err := dotDotAmbiguity(a); err != nil {
			return fmt.Errorf("argument %d, %s: %w", i+1, a, err)
		}
	}
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[pathAnnotation]; ok && err == nil {
			if e := dotDotAmbiguity(f.Value.String()); e != nil {
				err = fmt.Errorf("--%s %s: %w", f.Name, f.Value, e)
			}
		}
	})
	return err
}

// dotDotAmbiguity refuses a path with a .. that the system and Go's path
// functions read differently. The system resolves the part before a ..
// first, through any symbolic link, and takes the parent of what it
// finds; filepath.Clean, Join and Dir drop the last name as text. Where
// the two parents differ (a link, L/./.., L//..), or the part before
// does not exist, the checks and the reads or writes would name different
// places (probe 37: energy --out lnk/../metrics.csv replaced a file of
// the input run; probe 38: L/./../x got past the check of L/../x, and an
// input L/.. was read as the working folder).
func dotDotAmbiguity(path string) error {
	parts := strings.Split(path, string(filepath.Separator))
	system, text := ".", "." // the system's reading of the parts so far, and Go's
	if filepath.IsAbs(path) {
		system, text = string(filepath.Separator), string(filepath.Separator)
	}
	for i, p := range parts {
		switch p {
		case "", ".":
			continue
		default:
			system, text = filepath.Join(system, p), filepath.Join(text, p)
			continue
		case "..":
		}
		before := strings.Join(parts[:i], string(filepath.Separator))
		if !slices.Contains(parts[:i], "..") { // L/. and L/ named as L
			before = filepath.Clean(before)
		}
		parent, err := systemParent(system)
		if err != nil {
			return fmt.Errorf(".. follows %s, %w: give the path without ..", before, err)
		}
		text = filepath.Join(text, "..")
		if !sameFolder(parent, text) {
			return fmt.Errorf(".. follows %s, which the system resolves through a symbolic link: there %s/.. is %s, while flowebm's checks would take it for %s; give the path without ..", before, before, parent, text)
		}
		system = parent
	}
	return nil
}

// systemParent is the folder that the system reaches by .. after path
// (which holds no .. after a name): the parent of the folder path leads
// to, links resolved.
func systemParent(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", errors.New("which does not exist")
	case err != nil:
		return "", fmt.Errorf("which cannot be resolved (%v)", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", errors.New("which is not a folder")
	}
	if b := filepath.Base(real); b == "." || b == ".." { // the working folder's parents
		return filepath.Join(real, ".."), nil
	}
	return filepath.Dir(real), nil
}

// sameFolder reports whether the folders a and b are one.
func sameFolder(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

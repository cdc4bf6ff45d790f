package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flowebm/flowebm/internal/pathcheck"
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
// functions (pathcheck.DotDot): the command's checks and its reads or
// writes would name different places.
func checkPaths(cmd *cobra.Command, args []string) error {
	for i, a := range args {
		if err := pathcheck.DotDot(a); err != nil {
			return fmt.Errorf("argument %d, %s: %w", i+1, a, err)
		}
	}
	return checkPathFlags(cmd.Flags())
}

// checkPathFlags is checkPaths for the path flags set in fl.
func checkPathFlags(fl *pflag.FlagSet) error {
	var err error
	fl.Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[pathAnnotation]; ok && err == nil {
			if e := pathcheck.DotDot(f.Value.String()); e != nil {
				err = fmt.Errorf("--%s %s: %w", f.Name, f.Value, e)
			}
		}
	})
	return err
}

// withoutDotDot is path cleaned (filepath.Clean) where it has a ..,
// keeping a final separator (x2.onnx/ names a folder); path otherwise.
// Once pathcheck.DotDot passed, both name the same place; a command that
// removes folders on the way takes the cleaned one (probe 47: train
// --out RUN/checkpoint/.. --force removed the run's checkpoint, then could
// not open its --out, and advised a --resume that the check refuses).
func withoutDotDot(path string) string {
	if !slices.Contains(strings.Split(path, string(filepath.Separator)), "..") {
		return path
	}
	c := filepath.Clean(path)
	if strings.HasSuffix(path, string(filepath.Separator)) && c != string(filepath.Separator) {
		c += string(filepath.Separator)
	}
	return c
}

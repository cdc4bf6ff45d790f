package main

import (
	"fmt"

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

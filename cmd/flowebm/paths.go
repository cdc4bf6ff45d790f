package main

import (
	"fmt"
	"os"

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
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[pathAnnotation]; ok && err == nil {
			if e := pathcheck.DotDot(f.Value.String()); e != nil {
				err = fmt.Errorf("--%s %s: %w", f.Name, f.Value, e)
			}
		}
	})
	return err
}

// checkDataDirEnvs checks the folders that the image experiments' variables
// name (FLOWEBM_MNIST, …) as checkPaths checks the path flags (probe 39:
// FLOWEBM_MNIST=L/../mn was looked up in ./mn).
func checkDataDirEnvs() error {
	for _, e := range []string{"mnist", "fashion-mnist", "cifar10"} {
		name, _ := dataDirEnv(e)
		if v := os.Getenv(name); v != "" {
			if err := pathcheck.DotDot(v); err != nil {
				return fmt.Errorf("%s=%s: %w", name, v, err)
			}
		}
	}
	return nil
}

// Command flowebm trains and samples energy-based models with flow-assisted
// MCMC (Grenioux, Moulines, Gabrié 2023). Run "flowebm help" for the
// subcommands.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status: 0 on
// success, 2 on any error, which is printed to stderr as one line.
func run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "flowebm",
		Short:         "Train and sample energy-based models with flow-assisted MCMC",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(gradcheckCmd(), diagnoseCmd(), trainCmd(), reproduceCmd(), energyCmd(), convertCmd(), sampleCmd())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "flowebm:", err)
		return 2
	}
	return 0
}

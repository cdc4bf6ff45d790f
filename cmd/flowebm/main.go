// Command flowebm trains and samples energy-based models with flow-assisted
// MCMC (Grenioux, Moulines, Gabrié 2023). Run "flowebm help" for the
// subcommands.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "flowebm",
		Short:         "Train and sample energy-based models with flow-assisted MCMC",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(gradcheckCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "flowebm:", err)
		os.Exit(2)
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"github.com/spf13/cobra"
)

func diagnoseCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diagnose [--json] CHAINS.npy",
		Short: "Convergence diagnostics (R-hat, ESS) of MCMC chains stored as a NumPy array",
		Long: `diagnose reads MCMC draws from a .npy file of shape (chains, draws) or
(chains, draws, dims), float32 or float64, written by NumPy, PyTorch
(tensor.numpy()), JAX or flowebm, and prints for each dimension:

  rhat          rank-normalised split R-hat (Vehtari et al. 2021)
  rhat_classic  unsplit Gelman–Rubin R-hat
  ess_bulk      bulk effective sample size
  ess_tail      tail effective sample size (5% and 95% quantiles)
  mean, sd      pooled mean and standard deviation

with the definitions of ArviZ 0.21 and Stan's posterior package. With --json
it prints a JSON array with one object per dimension holding exactly the keys
dim, rhat, rhat_classic, ess_bulk, ess_tail, mean and sd (null where a value
is undefined, e.g. ESS of a constant chain, or infinite: the R-hat of chains
each constant but differing from one another, +Inf in the table).

Files with another rank, fewer than 2 chains or 4 draws, a NaN or infinite
draw, or a dtype other than float32/float64 are refused with a one-line error
and exit status 2.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDiagnoseMemory(args[0]); err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			out := bufio.NewWriter(cmd.OutOrStdout())
			if err := diagnose(bufio.NewReader(f), args[0], out, asJSON); err != nil {
				return err
			}
			return out.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array instead of a table")
	return cmd
}

// diagnoseCopies is about how many float64 copies of a dimension's draws
// the diagnostics hold at once (rank normalisation, folding, the FFT's
// padded buffers): measured peak 1 GB for a 64 MB file.
const diagnoseCopies = 16

// checkDiagnoseMemory refuses, from its header, a chains file whose
// diagnostics would need more memory than 8 GiB or half the machine's,
// and a folder given as the file.
func checkDiagnoseMemory(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a folder: give a .npy file of chains", path)
	}
	shape, err := data.PointsShape(path, "")
	if err != nil || len(shape) == 0 {
		return nil // the reader reports what is wrong
	}
	n := 1.0
	for _, s := range shape {
		n *= float64(max(s, 0))
	}
	if need, limit := n*8*diagnoseCopies, sysmem.Limit(8<<30); need > limit {
		return fmt.Errorf("%s: draws of shape %v need about %.3g GB to diagnose (about %d float64 copies), over the limit of %.3g GB (8 GiB, or half the machine's memory if less): thin the chains or split the dimensions", path, shape, need/1e9, diagnoseCopies, limit/1e9)
	}
	return nil
}

// diagnose reads a chains array in .npy format from r, which must end with
// the array's data (as npy.ReadFile requires), and writes its
// per-dimension diagnostics to w. Errors name the file.
func diagnose(r io.Reader, name string, w io.Writer, asJSON bool) error {
	a, err := npy.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if a.Dtype[1:] != "f4" && a.Dtype[1:] != "f8" {
		return fmt.Errorf("%s: dtype %q, want float32 ('<f4') or float64 ('<f8')", name, a.Dtype)
	}
	var chains, draws, dims int
	switch len(a.Shape) {
	case 2:
		chains, draws, dims = a.Shape[0], a.Shape[1], 1
	case 3:
		chains, draws, dims = a.Shape[0], a.Shape[1], a.Shape[2]
	default:
		return fmt.Errorf("%s: shape %s has rank %d, want (chains, draws) or (chains, draws, dims)", name, shapeString(a.Shape), len(a.Shape))
	}
	s, err := diagnostics.Summarize(a.Data, chains, draws, dims)
	if err != nil {
		return fmt.Errorf("%s: shape %s: %s", name, shapeString(a.Shape), strings.TrimPrefix(err.Error(), "diagnostics: "))
	}
	if asJSON {
		return writeSummaryJSON(w, s)
	}
	fmt.Fprintf(w, "%s: %d chains × %d draws × %d dims (%s)\n\n", name, chains, draws, dims, a.Dtype)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dim\trhat\trhat_classic\tess_bulk\tess_tail\tmean\tsd\t")
	for _, d := range s {
		fmt.Fprintf(tw, "%d\t%.4f\t%.4f\t%.0f\t%.0f\t%.4g\t%.4g\t\n", d.Dim, d.RHat, d.RHatClassic, d.ESSBulk, d.ESSTail, d.Mean, d.SD)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeVerdict(w, s)
}

// writeVerdict writes what the table's R-hats say: the dimensions whose
// chains are each constant but apart (not mixed at all: R-hat infinite),
// those without R-hat (the draws do not vary), and the largest R-hat.
func writeVerdict(w io.Writer, s []diagnostics.Summary) error {
	worst, undefined, apart := math.Inf(-1), 0, 0
	for _, d := range s {
		switch {
		case math.IsInf(d.RHatClassic, 1): // within-chain variance 0, between > 0
			apart++
			worst = math.Inf(1)
		case math.IsNaN(d.RHat):
			undefined++
		default:
			worst = max(worst, d.RHat)
		}
	}
	if apart > 0 {
		fmt.Fprintf(w, "\n%d dim(s) whose chains are each constant but differ from one another: not mixed at all (R-hat infinite: +Inf in the table, null in --json)\n", apart)
	}
	if undefined > 0 {
		fmt.Fprintf(w, "\n%d dim(s) without rhat: the draws, or their distances to the median, do not vary (every draw equal, or two values symmetric about the median)\n", undefined)
	}
	if undefined == len(s) {
		return nil
	}
	verdict := "below 1.01: no sign of non-convergence"
	if worst >= 1.01 {
		verdict = "not below 1.01: the chains have not mixed"
	}
	_, err := fmt.Fprintf(w, "\nmax rhat %.4f, %s (Vehtari et al. 2021)\n", worst, verdict)
	return err
}

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, s := range shape {
		parts[i] = strconv.Itoa(s)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func writeSummaryJSON(w io.Writer, s []diagnostics.Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/spf13/cobra"
)

func energyCmd() *cobra.Command {
	var ckpt, key, out string
	cmd := &cobra.Command{
		Use:   "energy --checkpoint DIR POINTS",
		Short: "Evaluate a trained model's energy at given points, in the data's units",
		Long: `energy reads points (n, d) from POINTS (.npy, .npz with --key, or .csv with an
optional header) and writes, for each, minus the log of the learned
unnormalised density there: E(z) − log ρ(z) + Σ log scale, with z the point
standardised as in training (identity for the built-in experiments) and ρ the
normalised base N(0, diag σ²). exp(−energy) summed over a grid, times the cell
volume, is the model's mass there up to the EBM's normaliser Z (1 at
initialisation).

DIR is a checkpoint folder (spec.json, weights.npz) or a run folder holding
checkpoint/. --out FILE writes .npy (float64, shape (n,)) or .csv; without it
the energies are printed one per line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ckpt == "" {
				return fmt.Errorf("give --checkpoint DIR")
			}
			m, err := loadCheckpoint(ckpt)
			if err != nil {
				return err
			}
			x, err := data.ReadMatrix(args[0], key)
			if err != nil {
				return err
			}
			n, d := x.Dims()
			if d != m.EBM.Dim() {
				return fmt.Errorf("%s: points have %d columns, the model in %s has %d dimensions", args[0], d, ckpt, m.EBM.Dim())
			}
			e := make([]float64, n)
			if err := m.Energy(x, e); err != nil {
				return err
			}
			return writeVector(cmd, out, e, "energy")
		},
	}
	cmd.Flags().StringVar(&ckpt, "checkpoint", "", "checkpoint folder, or a run folder holding checkpoint/")
	cmd.Flags().StringVar(&key, "key", "", "member of an .npz points file (default the first)")
	cmd.Flags().StringVar(&out, "out", "", "output file (.npy or .csv); default: print")
	return cmd
}

// loadCheckpoint loads the models of a checkpoint folder or of a run
// folder's checkpoint/.
func loadCheckpoint(dir string) (checkpoint.Models, error) {
	if _, err := os.Stat(filepath.Join(dir, "spec.json")); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, "checkpoint", "spec.json")); err2 == nil {
			dir = filepath.Join(dir, "checkpoint")
		}
	}
	m, _, err := checkpoint.Load(dir)
	return m, err
}

// writeVector writes v to path (.npy or .csv), or prints it one value per
// line when path is empty.
func writeVector(cmd *cobra.Command, path string, v []float64, name string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case "":
		if path != "" {
			break
		}
		w := bufio.NewWriter(cmd.OutOrStdout())
		for _, x := range v {
			w.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
			w.WriteByte('\n')
		}
		return w.Flush()
	case ".npy":
		return npy.WriteFile(path, &npy.Array{Shape: []int{len(v)}, Data: v}, npy.Float64)
	case ".csv":
		return safefile.Write(path, func(w0 io.Writer) error {
			w := bufio.NewWriter(w0)
			w.WriteString(name + "\n")
			for _, x := range v {
				w.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
				w.WriteByte('\n')
			}
			return w.Flush()
		})
	}
	return fmt.Errorf("--out %s: want a .npy or .csv file", path)
}

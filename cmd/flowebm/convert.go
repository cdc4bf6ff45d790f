package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flowebm/flowebm/io/onnx"
	"github.com/spf13/cobra"
)

func convertCmd() *cobra.Command {
	var what string
	var f32, f64 bool
	cmd := &cobra.Command{
		Use:   "convert CHECKPOINT OUT.onnx",
		Short: "Export a flowebm checkpoint's EBM or flow as ONNX (IR 7, opset 13)",
		Long: `convert writes one model of a checkpoint (a folder with spec.json and
weights.npz, or a run folder holding checkpoint/) as an ONNX file with a
dynamic batch dimension, in the checkpoint's dtype unless --float32 or
--float64:

  --what ebm           input x (batch, d), output energy (batch, 1): the network's E(x),
                       as torch.onnx.export writes the same nn.Sequential (Gemm per Linear)
  --what energy        the same, with the model's whole energy in the data's units:
                       E(z) − log ρ(z) + Σ log scale, z the standardised x (as "flowebm energy")
  --what flow-sample   input z (batch, d), base draws; outputs x = T(z) and log_density (batch)
  --what flow-density  input x (batch, d), output log_density (batch) = log λ(x)

The flow graphs work in the models' coordinates (standardised, for a run on
your own data; spec.json's "standardization" maps them to your units).
In float64, LeakyRelu, Softplus and Elu are written with elementary ops (ONNX
Runtime's CPU provider has no double kernels for them). Every export passes
onnx.checker.check_model(full_check=True) and runs in ONNX Runtime 1.30 with
outputs within 1e-10 (float64) and 1e-5 (float32) of flowebm's (tested).
Importing ONNX into a checkpoint is not available yet.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, out := args[0], args[1]
			if strings.ToLower(filepath.Ext(in)) == ".onnx" {
				return fmt.Errorf("%s: importing ONNX models is not available yet; convert exports checkpoints to ONNX", in)
			}
			if strings.ToLower(filepath.Ext(out)) != ".onnx" {
				return fmt.Errorf("%s: want an output file ending in .onnx", out)
			}
			m, err := loadCheckpoint(in)
			if err != nil {
				return err
			}
			o := onnx.Options{Float32: f32, Float64: f64}
			var b []byte
			switch what {
			case "ebm":
				b, err = onnx.EBM(m.EBM, o)
			case "energy":
				o.Full, o.Scaling = true, m.Scaling
				b, err = onnx.EBM(m.EBM, o)
			case "flow-sample", "flow-density":
				if m.Flow == nil {
					return fmt.Errorf("%s: the checkpoint has no flow", in)
				}
				if what == "flow-sample" {
					b, err = onnx.FlowSample(m.Flow, o)
				} else {
					b, err = onnx.FlowDensity(m.Flow, o)
				}
			default:
				return fmt.Errorf("--what %q, want ebm, energy, flow-sample or flow-density", what)
			}
			if err != nil {
				return err
			}
			if err := onnx.WriteFile(out, b); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes)\n", out, len(b))
			return nil
		},
	}
	cmd.Flags().StringVar(&what, "what", "ebm", "ebm, energy, flow-sample or flow-density")
	cmd.Flags().BoolVar(&f32, "float32", false, "write float32")
	cmd.Flags().BoolVar(&f64, "float64", false, "write float64")
	return cmd
}

package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

func gradcheckCmd() *cobra.Command {
	var seed uint64
	var tol float64
	cmd := &cobra.Command{
		Args:  cobra.NoArgs,
		Use:   "gradcheck",
		Short: "Build the paper's toy EBM and flow, check every gradient against finite differences, time them",
		Long: `gradcheck builds the toy EBM of the paper (Nijkamp et al. 2020, 2→32→64→64→64→1,
LeakyReLU 0.05) and the App. C.2 RealNVP flow, verifies that the EBM is 0 at
initialisation, and compares the x-gradient, the training-loss gradient and the
flow's maximum-likelihood gradient with central finite differences. For the
gradient checks the last EBM layer and the flow get random (non-identity)
weights, so that every term is exercised. It exits with status 2 if a relative
error exceeds --tol.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGradcheck(cmd, seed, tol)
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().Float64Var(&tol, "tol", 1e-6, "largest accepted norm-wise relative error")
	return cmd
}

func runGradcheck(cmd *cobra.Command, seed uint64, tol float64) error {
	if !(tol > 0) || math.IsInf(tol, 0) {
		return fmt.Errorf("--tol %v, want a finite tolerance > 0", tol)
	}
	out := cmd.OutOrStdout()
	rng := rand.New(rand.NewPCG(seed, 0x666c6f77))
	base := layers.NewIsotropic(2, 1)

	flow, err := describeInit(out, rng, base)
	if err != nil {
		return err
	}
	ebm, failed, err := checkGradients(out, rng, base, tol)
	if err != nil {
		return err
	}
	if err := printTimings(out, rng, ebm, flow); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d gradient check(s) above tolerance %g", failed, tol)
	}
	return nil
}

// describeInit prints the toy EBM's and the RealNVP's state at
// initialisation (E ≡ 0, T ≈ identity) and returns the flow.
func describeInit(out io.Writer, rng *rand.Rand, base layers.Gaussian) (*graph.Flow, error) {
	start, err := graph.NewEBM(graph.ToyEnergyNet(2, true), &base, tensor.Float64, rng)
	if err != nil {
		return nil, err
	}
	probe := mat.NewDense(256, 2, nil)
	for i := range probe.RawMatrix().Data {
		probe.RawMatrix().Data[i] = 3 * rng.NormFloat64()
	}
	en := make([]float64, 256)
	if err := start.Energy(probe, en); err != nil {
		return nil, err
	}
	maxE := 0.0
	for _, v := range en {
		maxE = max(maxE, v, -v)
	}
	fmt.Fprintf(out, "toy EBM: %d parameters; at initialisation max |E(x)| over 256 points = %g (E ≡ 0)\n", start.Params.Count(), maxE)

	flowNet := layers.RealNVP{Dim: 2, Blocks: 4, Hidden: []int{16}}
	flow, err := graph.NewFlow(flowNet, base, tensor.Float64, rng)
	if err != nil {
		return nil, err
	}
	z, x, ld := mat.NewDense(256, 2, nil), mat.NewDense(256, 2, nil), make([]float64, 256)
	if err := flow.SampleLatent(rng, z, x, ld); err != nil {
		return nil, err
	}
	x.Sub(x, z)
	fmt.Fprintf(out, "RealNVP (App. C.2, 4 blocks × 2 couplings of [2,16,2]): %d parameters; at initialisation max |T(z) − z| = %.2g\n\n",
		flow.Params.Count(), mat.Norm(x, math.Inf(1)))

	return flow, nil
}

// checkGradients checks every gradient of a toy EBM and a RealNVP against
// finite differences, prints them and returns the EBM and the failures.
func checkGradients(out io.Writer, rng *rand.Rand, base layers.Gaussian, tol float64) (*graph.EBM, int, error) {
	ebm, err := graph.NewEBM(graph.ToyEnergyNet(2, false), &base, tensor.Float64, rng)
	if err != nil {
		return nil, 0, err
	}
	pos, neg := mat.NewDense(16, 2, nil), mat.NewDense(16, 2, nil)
	for i := range pos.RawMatrix().Data {
		pos.RawMatrix().Data[i] = 1.5 + 0.3*rng.NormFloat64()
		neg.RawMatrix().Data[i] = rng.NormFloat64()
	}
	t0 := time.Now()
	checks, err := graph.CheckEBM(ebm, pos, neg, 1e-2)
	if err != nil {
		return nil, 0, err
	}
	// The same RealNVP with weights of unit scale (at initialisation its
	// couplings are nearly the identity, a weak test of their gradients).
	rflow, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 4, Hidden: []int{16}, InitScale: 1}, base, tensor.Float64, rng)
	if err != nil {
		return nil, 0, err
	}
	fc, err := graph.CheckFlow(rflow, neg)
	if err != nil {
		return nil, 0, err
	}
	checks = append(checks, fc)
	fmt.Fprintf(out, "gradients against central finite differences (gonum diff/fd), %.1fs:\n", time.Since(t0).Seconds())
	failed := 0
	for _, c := range checks {
		status := "ok"
		if !(c.RelErr <= tol) {
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(out, "  %s   %s\n", c, status)
	}

	return ebm, failed, nil
}

// printTimings prints the median time of the EBM's log-density gradient and
// of flow sampling at two batch sizes.
func printTimings(out io.Writer, rng *rand.Rand, ebm *graph.EBM, flow *graph.Flow) error {
	fmt.Fprintln(out, "\ntimings (median of 20 calls, compiled graph reused):")
	for _, n := range []int{64, 1024} {
		xb := mat.NewDense(n, 2, nil)
		for i := range xb.RawMatrix().Data {
			xb.RawMatrix().Data[i] = rng.NormFloat64()
		}
		lp, g := make([]float64, n), mat.NewDense(n, 2, nil)
		d, err := medianTime(20, func() error { return ebm.LogDensityGrad(xb, lp, g) })
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  toy EBM log p̃ + ∇ₓ, B = %-5d %8.3f ms\n", n, d.Seconds()*1e3)
		xs, lq := mat.NewDense(n, 2, nil), make([]float64, n)
		d, err = medianTime(20, func() error { return flow.Sample(rng, xs, lq) })
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  flow sample + log λ, B = %-5d %8.3f ms\n", n, d.Seconds()*1e3)
	}
	return nil
}

func medianTime(reps int, f func() error) (time.Duration, error) {
	if err := f(); err != nil { // compile
		return 0, err
	}
	ds := make([]time.Duration, reps)
	for i := range ds {
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ds[i] = time.Since(t)
	}
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j] < ds[j-1]; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	return ds[reps/2], nil
}

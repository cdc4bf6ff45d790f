package main

import (
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/training"
)

// The acceptance checks compare flowMC-EBM's class-weight MSE on the image
// experiments with every baseline's: "holds" only when it is the smallest.
func TestAcceptanceChecksImageWeights(t *testing.T) {
	mse := map[algorithms.Algorithm]float64{algorithms.FlowMC: 0.01, algorithms.ULA: 0.02, algorithms.NT: 0.005, algorithms.CoopFlow: 0.03}
	runs := map[algorithms.Algorithm]*reproRun{}
	for a, v := range mse {
		runs[a] = &reproRun{experiment: "mnist28", algorithm: a, evals: []training.Eval{{Iter: 200, EBMWeightMSE: v}}}
	}
	get := func(e string, a algorithms.Algorithm) *reproRun {
		if e != "mnist28" {
			return nil
		}
		return runs[a]
	}
	checks := strings.Join(acceptanceChecks(get), "\n")
	want := "mnist28: flowMC-EBM class-weight MSE 1.00e-02 smaller than every baseline's (ULA-EBM 2.00e-02, NT-EBM 5.00e-03, CoopFlow 3.00e-02): FAILS"
	if !strings.Contains(checks, want) {
		t.Errorf("checks:\n%s\nwant %q", checks, want)
	}
	runs[algorithms.NT].evals[0].EBMWeightMSE = 0.02
	if checks := strings.Join(acceptanceChecks(get), "\n"); !strings.Contains(checks, "CoopFlow 3.00e-02): holds") {
		t.Errorf("checks:\n%s\nwant the check to hold", checks)
	}
}

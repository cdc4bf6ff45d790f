package main

import (
	"os/exec"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
)

// TestIterationFLOPs counts two-modes' matrix-product FLOPs by hand: d = 2,
// EBM 2→32→64→64→64→1, RealNVP of 8 couplings with s and t 2→16→2, batch
// 64, 2 cycles of 1 i-SIR (32 particles) + 4 MALA, negatives the last
// states.
func TestIterationFLOPs(t *testing.T) {
	cfg, _, err := algorithms.Defaults("two-modes", algorithms.FlowMC)
	if err != nil {
		t.Fatal(err)
	}
	run, err := algorithms.NewRun(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := peerSpec(run.Trainer)
	if err != nil {
		t.Fatal(err)
	}
	ebm := func(rows float64) float64 { return 2 * rows * (2*32 + 32*64 + 64*64 + 64*64 + 64) }
	flow := func(rows float64) float64 { return 16 * 2 * rows * (2*16 + 16*2) }
	m, p := 64.0, 64.0*31
	cycle := ebm(m) + flow(m) + flow(p) + ebm(p) + // i-SIR: current point's log π and log λ, proposals
		2*ebm(m) + 4*2*ebm(m) // MALA: gradient after the move, then 4 proposals
	want := 2*cycle - ebm(m) + // the second cycle's log π is known
		3*ebm(128) + 3*flow(64) + ebm(64) // EBM step, flow step, divergence guard
	if got := iterationFLOPs(sp); got != want {
		t.Errorf("FLOPs per iteration %g, want %g", got, want)
	}
	if sp.Batch != 64 || sp.Particles != 32 || sp.Steps != 10 || sp.GlobalSteps != 1 || sp.LocalSteps != 4 || len(sp.FlowMasks) != 8 {
		t.Errorf("spec %+v does not describe App. C.2's flowMC-EBM", sp)
	}
}

// TestPeerRuns starts the PyTorch peer on two-modes and times two
// iterations and each primitive (skipped without PyTorch).
func TestPeerRuns(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		t.Skip("PyTorch not installed for /usr/bin/python3 (Debian python3-torch)")
	}
	dir := t.TempDir()
	if err := peerInputs("two-modes", dir); err != nil {
		t.Fatal(err)
	}
	py, err := startPeer("/usr/bin/python3", dir, "float64", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer py.close()
	for _, task := range []string{"iter", "mala", "isir", "gemm"} {
		if s, err := py.run(task, 2); err != nil || !(s > 0) {
			t.Errorf("%s: %v s, %v", task, s, err)
		}
	}
}

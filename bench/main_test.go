package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/algorithms/training"
)

// TestIterationFLOPs counts two-modes' matrix-product FLOPs by hand: d = 2,
// EBM 2→32→64→64→64→1, RealNVP of 8 couplings with s and t 2→16→2, batch
// 64, 2 cycles of 1 i-SIR (32 particles) + 4 MALA, negatives the last
// states.
func TestIterationFLOPs(t *testing.T) {
	cfg, _, err := settings.Defaults("two-modes", algorithms.FlowMC)
	if err != nil {
		t.Fatal(err)
	}
	run, err := training.NewRun(cfg, "")
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
	skipWithoutTorch(t)
	dir := t.TempDir()
	if err := peerInputs("two-modes", dir); err != nil {
		t.Fatal(err)
	}
	py, err := startPeer("/usr/bin/python3", dir, "float64", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer py.close()
	for _, task := range []string{"iter", "mala", "isir", "isirwide", "gemm"} {
		if s, err := py.run(task, 2); err != nil || !(s > 0) {
			t.Errorf("%s: %v s, %v", task, s, err)
		}
	}
}

func skipWithoutTorch(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		cross.Skip(t, t.Name()+" against PyTorch", "PyTorch not installed for /usr/bin/python3 (apt-get install python3-torch)")
	}
}

// TestConvEBM exports conv_ebm.py's model in each float type, imports it,
// checks flowebm's E and ∇ₓE against PyTorch's (convSetup fails beyond
// convTolerance), and times one call on each side (skipped without
// PyTorch).
func TestConvEBM(t *testing.T) {
	skipWithoutTorch(t)
	b := &bench{python: "/usr/bin/python3"}
	for _, dtype := range []string{"float32", "float64"} {
		t.Run(dtype, func(t *testing.T) {
			dir := t.TempDir()
			var r row
			ebm, x, err := b.convSetup(dir, dtype, &r)
			if err != nil {
				t.Fatal(err)
			}
			if r.params != 351297 {
				t.Errorf("%d parameters, want 351297 (640 + 65600 + 131200 + 147584 + 6273)", r.params)
			}
			if n, d := x.Dims(); n != convBatch || d != 28*28 {
				t.Errorf("x is %d×%d, want %d×784", n, d, convBatch)
			}
			py, err := launch(b.python, 1, "conv_ebm.py", "--serve", dir, "--dtype", dtype, "--threads", "1")
			if err != nil {
				t.Fatal(err)
			}
			defer py.close()
			for name, s := range map[string]side{"flowebm": convRunner(ebm, x, func() {}), "PyTorch": py.run} {
				if sec, err := s("grad", 1); err != nil || !(sec > 0) {
					t.Errorf("%s grad: %v s, %v", name, sec, err)
				}
			}
		})
	}
}

// TestConvReport checks that a run of conv-ebm-28 alone reports its table
// and not the flowMC-EBM ones.
func TestConvReport(t *testing.T) {
	r := row{experiment: convExperiment, dtype: "float32", threads: 2, conv: true, params: 351297, iterFLOPs: convFLOPs,
		goIter: 0.1, pyIter: 0.05, goGemm: 100e9, pyGemm: 200e9, relEnergy: 1e-7, relGrad: 2e-7}
	rep := report([]row{r}, 5)
	for _, want := range []string{"| conv-ebm-28 | float32 | 2 | 100.00 | 50.00 | 2.00 | 68.99 (69.0%) | 137.99 (69.0%) | 100.0 | 200.0 | 1.0e-07 | 2.0e-07 |", "351297 parameters"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	if strings.Contains(rep, "MALA") {
		t.Errorf("report has the flowMC-EBM tables:\n%s", rep)
	}
}

// BenchmarkConvEnergyGrad times flowebm's side of conv-ebm-28 alone, for
// profiling (skipped without PyTorch, which exports the model):
//
//	go test ./bench -run '^$' -bench ConvEnergyGrad -cpu 1,2 -cpuprofile cpu.out
func BenchmarkConvEnergyGrad(b *testing.B) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		b.Skip("PyTorch not installed for /usr/bin/python3 (Debian python3-torch)")
	}
	dir := b.TempDir()
	params, err := exportConv("/usr/bin/python3", dir, "float32")
	if err != nil {
		b.Fatal(err)
	}
	ebm, x, err := loadConv(dir, params)
	if err != nil {
		b.Fatal(err)
	}
	grad := convRunner(ebm, x, nil)
	if _, err := grad("grad", 1); err != nil { // compiles the program
		b.Fatal(err)
	}
	b.ResetTimer()
	if _, err := grad("grad", b.N); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(convFLOPs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

package training

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/settings"
	"github.com/flowebm/flowebm/graph"
)

// TestImageIterationTime times training iterations of the image defaults
// (settings.Defaults for mnist28) with the BLAS the command line picks:
// FLOWEBM_TIME_IMAGES=ALG[,ALG…] runs it (FLOWEBM_TIME_ITERS iterations
// each, default 3), after one untimed iteration that compiles the graphs;
// it logs the seconds per iteration and of one evaluation with R-hat.
// Skipped otherwise: it loads MNIST and takes minutes.
func TestImageIterationTime(t *testing.T) {
	algs := os.Getenv("FLOWEBM_TIME_IMAGES")
	if algs == "" {
		t.Skip("set FLOWEBM_TIME_IMAGES=flowmc (or a list) to time the image defaults")
	}
	name, err := graph.UseBLASFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	iters, _ := strconv.Atoi(os.Getenv("FLOWEBM_TIME_ITERS"))
	iters = max(iters, 1)
	if iters == 1 && os.Getenv("FLOWEBM_TIME_ITERS") == "" {
		iters = 3
	}
	for _, a := range strings.Split(algs, ",") {
		cfg, notes, err := settings.Defaults("mnist28", algorithms.Algorithm(a))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", a, strings.Join(notes, "\n"))
		t0 := time.Now()
		r, err := NewRun(cfg, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Trainer.Init(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: memory estimate %s", a, estimate(r))
		t.Logf("%s: set up in %.1fs (BLAS %s); EBM %d parameters, flow %d", a, time.Since(t0).Seconds(), name, r.Trainer.EBM.Params.Count(), flowParams(r))
		t1 := time.Now()
		st, err := r.Step()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: first iteration (compiling the graphs) %.1f s, peak resident memory %s", a, time.Since(t1).Seconds(), peakRSS())
		t1 = time.Now()
		for i := 0; i < iters; i++ {
			if st, err = r.Step(); err != nil {
				t.Fatal(err)
			}
		}
		per := time.Since(t1).Seconds() / float64(iters)
		t2 := time.Now()
		r.Config.RHatEvery = 1 // this evaluation runs R-hat
		if _, err := r.Evaluate(st); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.2f s per iteration (%d timed), evaluation with R-hat %.1f s; stats %+v; peak resident memory %s", a, per, iters, time.Since(t2).Seconds(), st, peakRSS())
	}
}

func flowParams(r *Run) int {
	if r.Trainer.Flow == nil {
		return 0
	}
	return r.Trainer.Flow.Params.Count()
}

// peakRSS is the process's peak resident memory (VmHWM), as Linux reports it.
func peakRSS() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "?"
}

// estimate sums the trainer's memory estimate of the run's models.
func estimate(r *Run) string {
	tc := r.Config.Train
	terms := tc.MemoryTerms(r.Experiment.Dim(), algorithms.SizesOf(r.Trainer.EBM, r.Trainer.Flow))
	total := 0.0
	var parts []string
	for _, tm := range terms {
		total += tm.Bytes
		if tm.Bytes > 1e8 {
			parts = append(parts, fmt.Sprintf("%s: %.2f GB", tm.What, tm.Bytes/1e9))
		}
	}
	return fmt.Sprintf("%.2f GB (%s)", total/1e9, strings.Join(parts, "; "))
}

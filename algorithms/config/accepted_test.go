package config

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/sysmem"
)

// Probe 57 B1: the limit under ulimit -v moves between identical
// processes, and a run accepted at its start was refused on resuming.
// Resolve records the limit it accepted a run under, and holds a run
// that records one to it: with the limit now just under the estimate,
// a run recorded as accepted just over it resolves, a run recording none
// is refused; a record beyond the drift measured (sysmem.MaxDrift) is not
// honoured.
func TestResolveHoldsTheAcceptedLimit(t *testing.T) {
	defer func(f func() float64) { memoryLimit = f }(memoryLimit)
	path := dataFile(t, 400, 2, rand.New(rand.NewPCG(57, 1)).NormFloat64)
	resolve := func(accepted *sysmem.Accepted) (Run, error) {
		return resolveData(t, Run{Data: &Data{File: path}, Train: algorithms.TrainConfig{Iterations: 10}, MemoryAccepted: accepted})
	}
	memoryLimit = func() float64 { return sysmem.DefaultLimit }
	start, err := resolve(nil)
	if err != nil || start.MemoryAccepted == nil || start.MemoryAccepted.Limit != sysmem.DefaultLimit {
		t.Fatalf("start: %+v, %v; want the limit recorded", start.MemoryAccepted, err)
	}
	// The estimate: the smallest limit that accepts the run, to 1%.
	lo, hi := 0.0, float64(sysmem.DefaultLimit)
	for hi-lo > hi/100 {
		mid := (lo + hi) / 2
		memoryLimit = func() float64 { return mid }
		if _, err := resolve(nil); err == nil {
			hi = mid
		} else {
			lo = mid
		}
	}
	memoryLimit = func() float64 { return lo }
	var over *sysmem.OverError
	if _, err := resolve(nil); !errors.As(err, &over) {
		t.Fatalf("no limit recorded, under the estimate: %v, want a refusal", err)
	}
	if _, err := resolve(sysmem.Accept(hi)); err != nil {
		t.Errorf("a start accepted just over the estimate: %v", err)
	}
	memoryLimit = func() float64 { return lo - sysmem.MaxDrift - 1<<20 }
	if _, err := resolve(start.MemoryAccepted); !errors.As(err, &over) {
		t.Errorf("a record %s over the limit now: %v, want a refusal", sysmem.Bytes(start.MemoryAccepted.Limit-(lo-sysmem.MaxDrift)), err)
	}
}

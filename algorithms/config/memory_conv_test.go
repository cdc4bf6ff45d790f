package config

import (
	"math"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/layers"
)

// mnist28Defaults is flowebm train's flowMC-EBM default configuration of
// mnist28 (algorithms/settings' imageScaling, 60,000 training images),
// with the conv EBM's channels and the conv RealNVP's width.
func mnist28Defaults(t *testing.T, ebmChannels []int, flowHidden int, edit func(*Run)) (Run, algorithms.TrainConfig) {
	t.Helper()
	optim := algorithms.OptimConfig{LR: 1e-3, Decay: 0.9, DecayEvery: 10}
	c := Run{Experiment: "mnist28", DataSize: 60000, LogZSamples: 512, RHatChains: 64, RHatSteps: 8, GridSize: 200,
		Model: Model{EBM: EBMConv, EBMChannels: ebmChannels, Flow: FlowConvRealNVP, FlowBlocks: 1, FlowHidden: []int{flowHidden}},
		Train: algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Iterations: 200, BatchSize: 64, Persistent: 1024, L2: 1e-4,
			EBMOptim: optim, FlowOptim: optim, Sampler: algorithms.SamplerConfig{Global: algorithms.ISIR, Particles: 8, Steps: 3,
				GlobalSteps: 1, LocalSteps: 8, Stacked: true}}}
	if edit != nil {
		edit(&c)
	}
	tc, err := c.Train.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	return c, tc
}

// mnist28Terms are the memory terms of the configuration.
func mnist28Terms(t *testing.T, ebmChannels []int, flowHidden int, edit func(*Run)) []sysmem.Term {
	t.Helper()
	c, tc := mnist28Defaults(t, ebmChannels, flowHidden, edit)
	return c.memoryTermsFor(tc, 784, &layers.ImageShape{C: 1, H: 28, W: 28})
}

// total sums the terms.
func total(terms []sysmem.Term) float64 {
	s := 0.0
	for _, tm := range terms {
		s += tm.Bytes
	}
	return s
}

// underDefaultLimit sets the memory limit to sysmem.DefaultLimit for the
// test.
func underDefaultLimit(t *testing.T) {
	old := memoryLimit
	memoryLimit = func() float64 { return sysmem.DefaultLimit }
	t.Cleanup(func() { memoryLimit = old })
}

// The tester's models (r/m28a: EBM channels 16, 32, 32, flow width 16)
// and the defaults' (8, 16, 16 and 8).
var mnist28Models = []struct {
	ch []int
	h  int
}{{[]int{16, 32, 32}, 16}, {[]int{8, 16, 16}, 8}}

// The R-hat chains run through the conv models' graphs: rhat_chains 4096
// with persistent 4096 on mnist28 passed the estimate (counted as stored
// draws only) and ran out of memory; the chains' EBM gradient and i-SIR's
// 8 × 4096 proposals through both networks are now counted, and refused.
func TestConvMemoryCountsRHatChains(t *testing.T) {
	underDefaultLimit(t)
	for _, m := range mnist28Models {
		c, _ := mnist28Defaults(t, m.ch, m.h, func(c *Run) { c.RHatChains, c.Train.Persistent = 4096, 4096 })
		err := c.checkRunMemory(fakeImages(600, 28, 28), memoryLimit())
		if err == nil || !strings.Contains(err.Error(), "algorithms: the configuration needs about") || !strings.Contains(err.Error(), "sampler.particles 8 × rhat_chains 4096") {
			t.Errorf("channels %v: %v, want the memory message naming the R-hat chains' proposals", m.ch, err)
		}
	}
}

// The bank's flow start runs in chunks of 512 rows (the trainer's
// initChains; one pass over persistent 16384 ran out of memory): the
// estimate counts one chunk's graph, and the configuration is accepted.
func TestConvMemoryCountsBankChunk(t *testing.T) {
	underDefaultLimit(t)
	for _, m := range mnist28Models {
		edit := func(c *Run) { c.Train.Persistent = 16384 }
		c, _ := mnist28Defaults(t, m.ch, m.h, edit)
		if err := c.checkRunMemory(fakeImages(600, 28, 28), memoryLimit()); err != nil {
			t.Errorf("channels %v, persistent 16384: %v", m.ch, err)
		}
		f := layers.ImageRealNVP{Image: layers.ImageShape{C: 1, H: 28, W: 28}, Hidden: m.h, Checkerboard: 1, ChannelWise: 1}
		found := false
		for _, tm := range mnist28Terms(t, m.ch, m.h, edit) {
			if strings.Contains(tm.What, "persistent 16384's start in chunks of 512") {
				found = true
				if tm.Bytes > 512*f.GraphValues(true)*8 {
					t.Errorf("channels %v: %s = %g B, more than one chunk of 512 rows", m.ch, tm.What, tm.Bytes)
				}
			}
		}
		if !found {
			t.Errorf("channels %v: no term for the bank's start", m.ch)
		}
	}
}

// Every graph of the conv models is counted, not only the largest: the
// EBM's loss (64 positives and 64 negatives), its gradient and log density
// at the 64 chains (training's, R-hat's, the figures'), its log density
// on i-SIR's 8 × 64 proposals and the evaluation's chunks of 512; the
// flow's maximum-likelihood gradient, its 512 proposals and draws (i-SIR,
// the bank's start, log Z) and its density at the chains; with the
// collector's headroom. The run measured by gcHeadroom (the defaults on
// 600 images) peaked at 3.92 GB resident: the estimate is within 15%.
func TestConvMemoryCountsEveryGraph(t *testing.T) {
	ch, h := []int{8, 16, 16}, 8
	terms := mnist28Terms(t, ch, h, func(c *Run) { c.DataSize = 600 })
	e := layers.ImageEnergy{Image: layers.ImageShape{C: 1, H: 28, W: 28}, Channels: ch}
	f := layers.ImageRealNVP{Image: layers.ImageShape{C: 1, H: 28, W: 28}, Hidden: h, Checkerboard: 1, ChannelWise: 1}
	ebm := (128+64)*e.GraphValues(true) + (512+64)*e.GraphValues(false)
	flow := 64*f.GraphValues(true) + 512*f.GraphValues(true) + 64*f.GraphValues(false)
	var got float64
	for _, tm := range terms {
		if strings.Contains(tm.What, "intermediate values") {
			got += tm.Bytes
		}
	}
	if want := (ebm + flow) * 8; math.Abs(got-want) > 1e-9*want {
		t.Errorf("graph values %g B, want %g B (each distinct graph once); terms %v", got, want, terms)
	}
	if tot := total(terms); tot < 3.92e9/1.15 || tot > 3.92e9*1.15 {
		t.Errorf("estimate %.3g B, measured peak 3.92e9 B", tot)
	}
}

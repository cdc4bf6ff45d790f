package config

import (
	"encoding/json"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
)

// Unused names the fields of c, as given (before defaults are filled),
// that its algorithm does not use: a run ignores them. A configuration
// file's run reports them in its notes.
func (c Run) Unused() []string { return c.unused(false) }

// unused lists the fields of c that its algorithm does not use: those
// given, or all of them.
func (c Run) unused(all bool) []string {
	var out []string
	c.visitUnused(func(given bool, field string, _ func()) {
		if given || all {
			out = append(out, field)
		}
	})
	return out
}

// visitUnused calls f with each field of c that its algorithm does not
// use: whether it is given (not zero), its JSON path, and what sets it to
// zero.
func (c *Run) visitUnused(f func(given bool, field string, clear func())) {
	t, m := &c.Train, &c.Model
	alg := t.Algorithm
	if !alg.TrainsFlow() {
		f(t.FlowOptim != (algorithms.OptimConfig{}), "train.flow_optim", func() { t.FlowOptim = algorithms.OptimConfig{} })
		f(t.Pretrain != (algorithms.PretrainConfig{}), "train.pretrain", func() { t.Pretrain = algorithms.PretrainConfig{} })
		f(t.FlowSteps != 0, "train.flow_steps", func() { t.FlowSteps = 0 })
		f(t.FreezeFlow != 0, "train.freeze_flow", func() { t.FreezeFlow = 0 })
		f(m.FlowBlocks != 0, "model.flow_blocks", func() { m.FlowBlocks = 0 })
		f(m.FlowHidden != nil, "model.flow_hidden", func() { m.FlowHidden = nil })
		f(m.FlowInit != "", "model.flow_init", func() { m.FlowInit = "" })
		f(m.FlowMask != "", "model.flow_mask", func() { m.FlowMask = "" })
		f(m.Flow != "", "model.flow", func() { m.Flow = "" })
		f(m.FlowBins != 0, "model.flow_bins", func() { m.FlowBins = 0 })
		f(m.FlowTailBound != 0, "model.flow_tail_bound", func() { m.FlowTailBound = 0 })
	}
	if alg.Kernel() != algorithms.KernelFlowMC {
		s := &t.Sampler
		f(s.Global != "", "train.sampler.global", func() { s.Global = "" })
		f(s.Particles != 0, "train.sampler.particles", func() { s.Particles = 0 })
		f(s.GlobalSteps != 0, "train.sampler.global_steps", func() { s.GlobalSteps = 0 })
		f(s.LocalSteps != 0, "train.sampler.local_steps", func() { s.LocalSteps = 0 })
		f(s.Stacked, "train.sampler.stacked", func() { s.Stacked = false })
	}
	if !t.PersistentChains() { // CoopFlow's chains start afresh from the flow
		f(t.Persistent != 0, "train.persistent", func() { t.Persistent = 0 })
		f(t.Start != "", "train.start", func() { t.Start = "" })
		f(t.StartScale != 0, "train.start_scale", func() { t.StartScale = 0 })
	} else if rt, err := t.Resolved(); err == nil && rt.Start == algorithms.StartFlow {
		f(t.StartScale != 0, "train.start_scale", func() { t.StartScale = 0 })
	}
	switch k := alg.Kernel(); {
	case k == algorithms.KernelULA || k == algorithms.KernelLangevinNoiseFree: // no accept/reject step
		f(t.Sampler.TargetAccept != 0, "train.sampler.target_accept", func() { t.Sampler.TargetAccept = 0 })
		f(t.Sampler.FixedStep, "train.sampler.fixed_step", func() { t.Sampler.FixedStep = false })
	case t.Sampler.FixedStep:
		f(t.Sampler.TargetAccept != 0, "train.sampler.target_accept", func() { t.Sampler.TargetAccept = 0 })
	}
}

// Field is the value of c at a field's JSON path (train.flow_optim), as
// decoded JSON: nil where c has none.
func (c Run) Field(path string) any { return jsonPath(jsonMap(c), path) }

// jsonMap is v as decoded JSON.
func jsonMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// jsonPath is the value at the dotted path in decoded JSON (nil if none).
func jsonPath(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, _ := v.(map[string]any)
		v = lookupFold(mm, k)
	}
	return v
}

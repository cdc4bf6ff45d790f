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
	t, m := c.Train, c.Model
	var out []string
	add := func(given bool, field string) {
		if given || all {
			out = append(out, field)
		}
	}
	alg := t.Algorithm
	if !alg.TrainsFlow() {
		add(t.FlowOptim != (algorithms.OptimConfig{}), "train.flow_optim")
		add(t.Pretrain != (algorithms.PretrainConfig{}), "train.pretrain")
		add(t.FlowSteps != 0, "train.flow_steps")
		add(t.FreezeFlow != 0, "train.freeze_flow")
		add(m.FlowBlocks != 0, "model.flow_blocks")
		add(m.FlowHidden != nil, "model.flow_hidden")
		add(m.FlowInit != "", "model.flow_init")
		add(m.FlowMask != "", "model.flow_mask")
		add(m.Flow != "", "model.flow")
		add(m.FlowBins != 0, "model.flow_bins")
		add(m.FlowTailBound != 0, "model.flow_tail_bound")
	}
	if alg.Kernel() != algorithms.KernelFlowMC {
		s := t.Sampler
		add(s.Global != "", "train.sampler.global")
		add(s.Particles != 0, "train.sampler.particles")
		add(s.GlobalSteps != 0, "train.sampler.global_steps")
		add(s.LocalSteps != 0, "train.sampler.local_steps")
		add(s.Stacked, "train.sampler.stacked")
	}
	if !t.PersistentChains() { // CoopFlow's chains start afresh from the flow
		add(t.Persistent != 0, "train.persistent")
		add(t.Start != "", "train.start")
		add(t.StartScale != 0, "train.start_scale")
	} else if rt, err := t.Resolved(); err == nil && rt.Start == algorithms.StartFlow {
		add(t.StartScale != 0, "train.start_scale")
	}
	switch k := alg.Kernel(); {
	case k == algorithms.KernelULA || k == algorithms.KernelLangevinNoiseFree: // no accept/reject step
		add(t.Sampler.TargetAccept != 0, "train.sampler.target_accept")
		add(t.Sampler.FixedStep, "train.sampler.fixed_step")
	case t.Sampler.FixedStep:
		add(t.Sampler.TargetAccept != 0, "train.sampler.target_accept")
	}
	return out
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

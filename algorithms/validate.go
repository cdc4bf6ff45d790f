package algorithms

import (
	"cmp"
	"fmt"
	"math"

	"github.com/flowebm/flowebm/internal/sysmem"
)

// MemoryTerms estimates the trainer's largest buffers for c (with
// defaults) in d dimensions: 8-byte floats.
func (c TrainConfig) MemoryTerms(d int) []sysmem.Term {
	fd := float64(d)
	s := c.Sampler
	chains := float64(c.Chains())
	chainsOf := fmt.Sprintf("batch_size %d chains", c.Chains())
	if s.Negatives == NegativesSubsample {
		chainsOf = fmt.Sprintf("batch_size/sampler.subsample %d chains", c.Chains())
	}
	terms := []sysmem.Term{
		term(fmt.Sprintf("persistent %d × %d dims × 8 B", c.Persistent, d), float64(c.Persistent)*fd*8),
		// positives, starts, negatives and the last starts
		term(fmt.Sprintf("batch_size %d × %d dims × 4 buffers × 8 B", c.BatchSize, d), float64(c.BatchSize)*fd*8*4),
	}
	if s.Negatives == "all" {
		terms = append(terms, term(fmt.Sprintf("sampler.steps %d × %s × %d dims × 8 B (sampler.negatives \"all\")", s.Steps, chainsOf, d),
			float64(s.Steps)*chains*fd*8))
	}
	if c.Algorithm.strategy().kernel() == KernelFlowMC && s.Global == ISIR {
		terms = append(terms, term(fmt.Sprintf("sampler.particles %d × %s × %d dims × 8 B", s.Particles, chainsOf, d),
			float64(s.Particles)*chains*(fd+2)*8))
	}
	if c.Pretrain.Steps > 0 {
		terms = append(terms, term(fmt.Sprintf("pretrain.batch_size %d × %d dims × 8 B", c.Pretrain.BatchSize, d),
			float64(c.Pretrain.BatchSize)*(fd+1)*8))
	}
	return terms
}

// validate checks every field of an optimiser's configuration, naming
// the field under prefix (ebm_optim, flow_optim) and its file's value.
func (c OptimConfig) validate(prefix string) error {
	if err := c.validateKind(prefix); err != nil {
		return err
	}
	if math.IsNaN(c.Decay) || c.Decay < 0 || c.Decay > 1 {
		return fmt.Errorf("algorithms: %s.decay %v, want in (0, 1] (0 or 1: no decay)", prefix, c.Decay)
	}
	if c.DecayEvery < 0 {
		return fmt.Errorf("algorithms: %s.decay_every %d, want ≥ 1 (0 only without decay)", prefix, c.DecayEvery)
	}
	if c.DecayEvery == 0 && c.Decay > 0 && c.Decay < 1 {
		return fmt.Errorf("algorithms: %s.decay_every 0 with %s.decay %v: want decay_every ≥ 1 (the decay would never apply)", prefix, prefix, c.Decay)
	}
	if math.IsInf(c.LR, 0) || math.IsNaN(c.LR) || c.LR < 0 {
		return fmt.Errorf("algorithms: %s.lr %v, want a finite value > 0 (unset: the default 1e-3)", prefix, c.LR)
	}
	return nil
}

// validateKind checks the optimiser's name and its own fields, refusing
// the other optimiser's (they would be ignored).
func (c OptimConfig) validateKind(prefix string) error {
	switch c.Name {
	case "", "adam":
		d := c.WithDefaults()
		b1, b2, eps := d.Beta1, d.Beta2, d.Eps
		if !(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1 && eps > 0 && !math.IsInf(eps, 1)) {
			return fmt.Errorf("algorithms: %s.beta1 %v, beta2 %v, eps %v (unset ones at their defaults 0.9, 0.999, 1e-8): want betas in [0, 1) and a finite eps > 0", prefix, b1, b2, eps)
		}
		if c.Momentum != 0 {
			return fmt.Errorf("algorithms: %s.momentum %v is SGD's; %s.name is %q: drop it, or set name \"sgd\"", prefix, c.Momentum, prefix, cmp.Or(c.Name, "adam"))
		}
	case "sgd":
		if !(c.Momentum >= 0 && c.Momentum < 1) {
			return fmt.Errorf("algorithms: %s.momentum %v, want [0, 1)", prefix, c.Momentum)
		}
		if c.Beta1 != 0 || c.Beta2 != 0 || c.Eps != 0 {
			return fmt.Errorf("algorithms: %s.beta1, beta2 and eps are Adam's; %s.name is \"sgd\": drop them", prefix, prefix)
		}
	default:
		return fmt.Errorf("algorithms: %s.name %q, want \"adam\" or \"sgd\"", prefix, c.Name)
	}
	return nil
}

// term is a memory estimate's term.
func term(what string, bytes float64) sysmem.Term { return sysmem.Term{What: what, Bytes: bytes} }

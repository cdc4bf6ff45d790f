package algorithms

import (
	"cmp"
	"fmt"
	"math"
)

// Optimizer updates a flat parameter vector from its gradient. The
// algorithms descend: Step moves params against grad.
//
// flowebm's models keep their parameters in flat vectors and compute
// gradients without Gorgonia dual values (so gradients can never accumulate
// across MCMC calls, REFERENCE §6); the optimisers therefore work on those
// vectors directly rather than through Gorgonia's node-based solvers.
type Optimizer interface {
	// Step updates params in place given the gradient of the loss.
	Step(params, grad []float64)
	// SetLR changes the learning rate (for decay schedules).
	SetLR(lr float64)
	// LR returns the current learning rate.
	LR() float64
	// State returns the optimiser's internal vectors and counters for a
	// checkpoint; SetState restores them.
	State() map[string][]float64
	SetState(map[string][]float64) error
}

// OptimConfig selects and configures an optimiser. The zero value is Adam
// with learning rate 1e-3 and no decay.
type OptimConfig struct {
	// Name is "adam" (default) or "sgd".
	Name string `json:"name,omitempty"`
	// LR is the initial learning rate (default 1e-3).
	LR float64 `json:"lr,omitempty"`
	// Momentum is SGD's momentum (default 0).
	Momentum float64 `json:"momentum,omitempty"`
	// Beta1, Beta2, Eps are Adam's (defaults 0.9, 0.999, 1e-8, PyTorch's).
	Beta1 float64 `json:"beta1,omitempty"`
	Beta2 float64 `json:"beta2,omitempty"`
	Eps   float64 `json:"eps,omitempty"`
	// Decay multiplies the learning rate every DecayEvery steps (App. C.6:
	// 0.99 every 50 batches); 0 or 1 means none.
	Decay      float64 `json:"decay,omitempty"`
	DecayEvery int     `json:"decay_every,omitempty"`
}

// WithDefaults is c with its unset fields at their defaults: learning
// rate 1e-3 and, for Adam, betas 0.9, 0.999 and eps 1e-8.
func (c OptimConfig) WithDefaults() OptimConfig {
	c.LR = cmp.Or(c.LR, 1e-3)
	if c.Name != "sgd" {
		c.Beta1, c.Beta2, c.Eps = cmp.Or(c.Beta1, 0.9), cmp.Or(c.Beta2, 0.999), cmp.Or(c.Eps, 1e-8)
	}
	return c
}

// New builds the optimiser for n parameters.
func (c OptimConfig) New(n int) (Optimizer, error) {
	if err := c.validate("optimiser"); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	if c.Name == "sgd" {
		return &SGD{lr: c.LR, Momentum: c.Momentum, buf: make([]float64, n)}, nil
	}
	return &Adam{lr: c.LR, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps, m: make([]float64, n), v: make([]float64, n)}, nil
}

// scheduledLR returns the learning rate after step steps of c's decay.
func (c OptimConfig) scheduledLR(step int) float64 {
	lr := c.WithDefaults().LR
	if c.Decay > 0 && c.Decay != 1 && c.DecayEvery > 0 {
		lr *= math.Pow(c.Decay, float64(step/c.DecayEvery))
	}
	return lr
}

// Adam is Kingma & Ba's optimiser with bias correction, as torch.optim.Adam.
type Adam struct {
	Beta1, Beta2, Eps float64

	lr   float64
	t    float64
	m, v []float64
}

// Step applies one Adam update.
func (a *Adam) Step(params, grad []float64) {
	a.t++
	c1 := 1 - math.Pow(a.Beta1, a.t)
	c2 := 1 - math.Pow(a.Beta2, a.t)
	for i, g := range grad {
		a.m[i] = a.Beta1*a.m[i] + (1-a.Beta1)*g
		a.v[i] = a.Beta2*a.v[i] + (1-a.Beta2)*g*g
		params[i] -= a.lr * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + a.Eps)
	}
}

// SetLR sets the learning rate.
func (a *Adam) SetLR(lr float64) { a.lr = lr }

// LR returns the learning rate.
func (a *Adam) LR() float64 { return a.lr }

// State returns m, v and the step count.
func (a *Adam) State() map[string][]float64 {
	return map[string][]float64{"m": a.m, "v": a.v, "t": {a.t}}
}

// SetState restores m, v and the step count.
func (a *Adam) SetState(s map[string][]float64) error {
	if len(s["m"]) != len(a.m) || len(s["v"]) != len(a.v) || len(s["t"]) != 1 {
		return fmt.Errorf("algorithms: Adam state has %d/%d/%d values, want %d/%d/1", len(s["m"]), len(s["v"]), len(s["t"]), len(a.m), len(a.v))
	}
	t := s["t"][0]
	if !(t >= 0) || t != math.Trunc(t) || math.IsInf(t, 0) {
		return fmt.Errorf("algorithms: Adam state t is %v, want a whole number of steps ≥ 0", t)
	}
	if i := firstBad(s["m"], false); i >= 0 {
		return fmt.Errorf("algorithms: Adam state m[%d] is %v, want finite", i, s["m"][i])
	}
	if i := firstBad(s["v"], true); i >= 0 {
		return fmt.Errorf("algorithms: Adam state v[%d] is %v, want finite and ≥ 0 (a mean of squares)", i, s["v"][i])
	}
	copy(a.m, s["m"])
	copy(a.v, s["v"])
	a.t = t
	return nil
}

// firstBad returns the index of the first value of v that is not finite
// (or negative, if nonNegative), or −1.
func firstBad(v []float64, nonNegative bool) int {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || (nonNegative && x < 0) {
			return i
		}
	}
	return -1
}

// SGD is stochastic gradient descent with optional momentum, as
// torch.optim.SGD (buf ← μ·buf + g; p ← p − lr·buf).
type SGD struct {
	Momentum float64

	lr  float64
	buf []float64
}

// Step applies one SGD update.
func (s *SGD) Step(params, grad []float64) {
	for i, g := range grad {
		if s.Momentum > 0 {
			s.buf[i] = s.Momentum*s.buf[i] + g
			g = s.buf[i]
		}
		params[i] -= s.lr * g
	}
}

// SetLR sets the learning rate.
func (s *SGD) SetLR(lr float64) { s.lr = lr }

// LR returns the learning rate.
func (s *SGD) LR() float64 { return s.lr }

// State returns the momentum buffer.
func (s *SGD) State() map[string][]float64 { return map[string][]float64{"momentum_buffer": s.buf} }

// SetState restores the momentum buffer.
func (s *SGD) SetState(st map[string][]float64) error {
	if len(st["momentum_buffer"]) != len(s.buf) {
		return fmt.Errorf("algorithms: SGD state has %d values, want %d", len(st["momentum_buffer"]), len(s.buf))
	}
	if i := firstBad(st["momentum_buffer"], false); i >= 0 {
		return fmt.Errorf("algorithms: SGD state momentum_buffer[%d] is %v, want finite", i, st["momentum_buffer"][i])
	}
	copy(s.buf, st["momentum_buffer"])
	return nil
}

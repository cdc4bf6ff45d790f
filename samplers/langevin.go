package samplers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// langevinPropose writes y = x + η∇log π(x) + noise·√(2η)ξ into y.
func langevinPropose(rng *rand.Rand, x, grad, y *mat.Dense, eta float64, noise bool) {
	m, d := x.Dims()
	sd := math.Sqrt(2 * eta)
	for i := 0; i < m; i++ {
		xr, gr, yr := x.RawRowView(i), grad.RawRowView(i), y.RawRowView(i)
		for j := 0; j < d; j++ {
			yr[j] = xr[j] + eta*gr[j]
			if noise {
				yr[j] += sd * rng.NormFloat64()
			}
		}
	}
}

// ULA is the unadjusted Langevin algorithm (paper Alg. 2, Eq. 4 corrected):
// x ← x + η∇log π(x) + √(2η)ξ. With NoiseFree the noise is dropped (the
// deterministic Langevin descent CoopFlow uses).
type ULA struct {
	Target    Target
	StepSize  float64 // η > 0
	NoiseFree bool

	y *mat.Dense
}

// Step moves every chain once; it reports Local = 1.
func (k *ULA) Step(rng *rand.Rand, s *State) (Stats, error) {
	if !(k.StepSize > 0) {
		return noStats(), fmt.Errorf("samplers: ULA step size %v, want > 0", k.StepSize)
	}
	if err := checkDim("ULA target", k.Target.Dim(), s.Dim()); err != nil {
		return noStats(), err
	}
	if err := s.ensureGrad(k.Target); err != nil {
		return noStats(), err
	}
	if err := CheckDefined("ULA", s.X, s.LogP); err != nil {
		return noStats(), err
	}
	for i := range s.LogP {
		if gradUndefined(s.LogP[i], s.Grad.RawRowView(i)) {
			return noStats(), &UndefinedError{Sampler: "ULA", Chain: i, LogP: s.LogP[i], Point: mat.Row(nil, i, s.X), GradOnly: true}
		}
	}
	k.y = reuse(k.y, s.Chains(), s.Dim())
	langevinPropose(rng, s.X, s.Grad, k.y, k.StepSize, !k.NoiseFree)
	s.X.Copy(k.y)
	s.moved(false, false)
	st := noStats()
	st.Local, st.StepSize = 1, k.StepSize
	return st, nil
}

// MALA is the Metropolis-adjusted Langevin algorithm (paper Alg. 4) with the
// step adaptation of the companion code: after every step, with a the mean
// acceptance over chains, η ← 1.05η if a − target > 0.03 and η ← η/1.05 if
// target − a > 0.03.
type MALA struct {
	Target       Target
	StepSize     float64 // η > 0; adapted in place unless Frozen
	TargetAccept float64 // 0 means 0.75, the paper's value
	Frozen       bool    // no adaptation

	y, gy *mat.Dense
	lpy   []float64
}

// malaLogAlpha is the log acceptance ratio of a move x → y:
// [log π(y) + log q(x|y)] − [log π(x) + log q(y|x)], with
// log q(a|b) = −‖a − b − η∇log π(b)‖²/(4η).
func malaLogAlpha(x, y, gx, gy []float64, lpx, lpy, eta float64) float64 {
	qxy, qyx := 0.0, 0.0
	for j := range x {
		a := x[j] - y[j] - eta*gy[j]
		b := y[j] - x[j] - eta*gx[j]
		qxy += a * a
		qyx += b * b
	}
	return lpy - lpx - (qxy-qyx)/(4*eta)
}

// Step proposes a Langevin move for every chain and accepts or rejects it.
func (k *MALA) Step(rng *rand.Rand, s *State) (Stats, error) {
	if !(k.StepSize > 0) {
		return noStats(), fmt.Errorf("samplers: MALA step size %v, want > 0", k.StepSize)
	}
	if err := checkDim("MALA target", k.Target.Dim(), s.Dim()); err != nil {
		return noStats(), err
	}
	if err := s.ensureGrad(k.Target); err != nil {
		return noStats(), err
	}
	m, d := s.Chains(), s.Dim()
	k.y, k.gy = reuse(k.y, m, d), reuse(k.gy, m, d)
	if len(k.lpy) != m {
		k.lpy = make([]float64, m)
	}
	langevinPropose(rng, s.X, s.Grad, k.y, k.StepSize, true)
	if err := k.Target.LogDensityGrad(k.y, k.lpy, k.gy); err != nil {
		return noStats(), err
	}
	acc := 0
	st := noStats()
	for i := 0; i < m; i++ {
		if gradUndefined(k.lpy[i], k.gy.RawRowView(i)) {
			st.GradUndefined++
		}
		la := malaLogAlpha(s.X.RawRowView(i), k.y.RawRowView(i), s.Grad.RawRowView(i), k.gy.RawRowView(i), s.LogP[i], k.lpy[i], k.StepSize)
		if accept(rng, la) {
			acc++
			copy(s.X.RawRowView(i), k.y.RawRowView(i))
			copy(s.Grad.RawRowView(i), k.gy.RawRowView(i))
			s.LogP[i] = k.lpy[i]
		}
	}
	s.moved(true, true)
	rate := float64(acc) / float64(m)
	if !k.Frozen {
		k.StepSize = adaptStep(k.StepSize, rate, k.TargetAccept)
	}
	st.Local, st.StepSize = rate, k.StepSize
	return st, nil
}

// gradUndefined says whether a point's gradient g is NaN or ±Inf
// somewhere while its log density lp is finite.
func gradUndefined(lp float64, g []float64) bool {
	if math.IsNaN(lp) || math.IsInf(lp, 0) {
		return false
	}
	for _, v := range g {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return true
		}
	}
	return false
}

// adaptStep is the acceptance-targeting rule of REFERENCE §4.
func adaptStep(eta, rate, target float64) float64 {
	if target == 0 {
		target = 0.75
	}
	switch {
	case rate-target > 0.03:
		return eta * 1.05
	case target-rate > 0.03:
		return eta / 1.05
	}
	return eta
}

// reuse returns m if it is r × c, else a new r × c matrix.
func reuse(m *mat.Dense, r, c int) *mat.Dense {
	if m != nil {
		if a, b := m.Dims(); a == r && b == c {
			return m
		}
	}
	return mat.NewDense(r, c, nil)
}

// UndefinedError is a chain of an unadjusted sampler (ULA) at a point
// where log π is NaN or ±Inf, outside the target's domain: such a
// sampler never rejects a step, and its gradient may be finite there
// (probe 54: −log(x + 2) has the gradient −1/(x + 2) beyond x = −2, and
// ULA's draws went there at exit 0).
type UndefinedError struct {
	Sampler string
	Chain   int // from 0
	LogP    float64
	Point   []float64 // the chain's point (a copy)
	// GradOnly: log π is finite there, its gradient is not (its next
	// step would be NaN).
	GradOnly bool
}

func (e *UndefinedError) Error() string {
	if e.GradOnly {
		return fmt.Sprintf("samplers: %s chain %d is at a point where log π is %v but its gradient is NaN or infinite (an unadjusted sampler never rejects a step)", e.Sampler, e.Chain, e.LogP)
	}
	return fmt.Sprintf("samplers: %s chain %d is at a point where log π is %v, outside the target's domain (an unadjusted sampler never rejects a step)", e.Sampler, e.Chain, e.LogP)
}

// CheckDefined returns an UndefinedError for the first of the chains'
// log densities logp that is NaN or ±Inf (a density of 0 is outside the
// target's support too) at their points x, or nil.
func CheckDefined(sampler string, x *mat.Dense, logp []float64) error {
	for i, v := range logp {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &UndefinedError{Sampler: sampler, Chain: i, LogP: v, Point: mat.Row(nil, i, x)}
		}
	}
	return nil
}

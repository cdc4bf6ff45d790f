package samplers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// IMH is independent Metropolis–Hastings with proposal λ (paper Alg. 5,
// steps 1.a–1.b): y ~ λ is accepted with probability
// min(1, [π(y)/λ(y)] / [π(x)/λ(x)]).
type IMH struct {
	Target   Target
	Proposal Proposal

	props proposals
}

// Step proposes one independent draw per chain.
func (k *IMH) Step(rng *rand.Rand, s *State) (Stats, error) {
	if err := prepareIndependent(k.Target, k.Proposal, s); err != nil {
		return noStats(), err
	}
	m := s.Chains()
	if err := k.props.draw(rng, k.Target, k.Proposal, m, s.Dim()); err != nil {
		return noStats(), err
	}
	acc := 0
	for i := 0; i < m; i++ {
		la := (k.props.lp[i] - k.props.lq[i]) - (s.LogP[i] - s.LogQ[i])
		if accept(rng, la) {
			acc++
			k.props.moveTo(s, i, i)
		}
	}
	return globalStats(s, acc), nil
}

// ISIR is iterated sampling importance resampling with N particles (paper
// Alg. 6): slot 0 holds the current state, slots 1…N−1 fresh draws from λ;
// one slot is picked with probability ∝ π/λ (weights normalised by
// log-sum-exp; NaN weights count as 0). All M·(N−1) proposals are drawn and
// evaluated as one batch.
type ISIR struct {
	Target    Target
	Proposal  Proposal
	Particles int // N ≥ 2

	props proposals
	logw  []float64
}

// Step performs one i-SIR move per chain; Global is the fraction of chains
// whose pick is not slot 0.
func (k *ISIR) Step(rng *rand.Rand, s *State) (Stats, error) {
	if k.Particles < 2 {
		return noStats(), fmt.Errorf("samplers: i-SIR needs at least 2 particles, have %d", k.Particles)
	}
	if err := prepareIndependent(k.Target, k.Proposal, s); err != nil {
		return noStats(), err
	}
	m, n := s.Chains(), k.Particles
	if len(k.logw) != n {
		k.logw = make([]float64, n)
	}
	if err := k.props.draw(rng, k.Target, k.Proposal, m*(n-1), s.Dim()); err != nil {
		return noStats(), err
	}
	moved := 0
	for i := 0; i < m; i++ {
		k.logw[0] = s.LogP[i] - s.LogQ[i]
		for j := 1; j < n; j++ {
			r := i*(n-1) + j - 1
			k.logw[j] = k.props.lp[r] - k.props.lq[r]
		}
		if pick := categoricalLog(rng, k.logw); pick > 0 {
			moved++
			k.props.moveTo(s, i, i*(n-1)+pick-1)
		}
	}
	return globalStats(s, moved), nil
}

// categoricalLog draws an index with probability ∝ exp(logw[i]); NaN
// weights count as 0; if every weight is 0 it returns 0 (stay).
func categoricalLog(rng *rand.Rand, logw []float64) int {
	mx := math.Inf(-1)
	for _, w := range logw {
		if !math.IsNaN(w) && w > mx {
			mx = w
		}
	}
	if math.IsInf(mx, -1) {
		return 0
	}
	if math.IsInf(mx, 1) {
		for i, w := range logw { // an infinite weight takes all the mass
			if math.IsInf(w, 1) {
				return i
			}
		}
	}
	sum := 0.0
	for _, w := range logw {
		if !math.IsNaN(w) {
			sum += math.Exp(w - mx)
		}
	}
	u := rng.Float64() * sum
	last := 0
	for i, w := range logw {
		if math.IsNaN(w) {
			continue
		}
		p := math.Exp(w - mx)
		if u < p {
			return i
		}
		u -= p
		if p > 0 {
			last = i
		}
	}
	return last // round-off
}

// prepareIndependent validates an independent-proposal kernel against the
// chains and makes log π and log λ at the current points available.
func prepareIndependent(t Target, p Proposal, s *State) error {
	if t == nil || p == nil {
		return fmt.Errorf("samplers: independent proposals need a target and a proposal")
	}
	if err := checkDim("target", t.Dim(), s.Dim()); err != nil {
		return err
	}
	if err := checkDim("proposal", p.Dim(), s.Dim()); err != nil {
		return err
	}
	if err := s.ensureLogP(t); err != nil {
		return err
	}
	return s.ensureLogQ(p)
}

// proposals is the buffer of independent proposals of IMH and i-SIR: the
// points y with their target (lp) and proposal (lq) log-densities.
type proposals struct {
	y      *mat.Dense
	lp, lq []float64
}

// draw fills the buffer with rows independent proposals of dimension d.
func (b *proposals) draw(rng *rand.Rand, t Target, p Proposal, rows, d int) error {
	b.y = reuse(b.y, rows, d)
	if len(b.lp) != rows {
		b.lp, b.lq = make([]float64, rows), make([]float64, rows)
	}
	if err := p.Sample(rng, b.y, b.lq); err != nil {
		return err
	}
	return t.LogDensity(b.y, b.lp)
}

// moveTo moves chain i of s to proposal r, with its cached densities.
func (b *proposals) moveTo(s *State, i, r int) {
	copy(s.X.RawRowView(i), b.y.RawRowView(r))
	s.LogP[i], s.LogQ[i] = b.lp[r], b.lq[r]
}

// globalStats are the statistics of a global step in which moved chains
// moved; their gradients are stale unless none moved.
func globalStats(s *State, moved int) Stats {
	s.HasGrad = s.HasGrad && moved == 0
	st := noStats()
	st.Global = float64(moved) / float64(s.Chains())
	return st
}

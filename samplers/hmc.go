package samplers

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// HMC is Hamiltonian Monte Carlo with an identity mass matrix: L leapfrog
// steps of size ε from a fresh momentum p ~ N(0, I), then a Metropolis–
// Hastings test on H = −log π(x) + ‖p‖²/2.
type HMC struct {
	Target   Target
	StepSize float64 // ε > 0
	Leapfrog int     // L ≥ 1

	q, p, g   *mat.Dense
	lp, h0    []float64
	undefined []bool // chains whose trajectory met an undefined gradient
}

// Step runs one trajectory per chain (L gradient evaluations).
func (k *HMC) Step(rng *rand.Rand, s *State) (Stats, error) {
	if !(k.StepSize > 0) || k.Leapfrog < 1 {
		return noStats(), fmt.Errorf("samplers: HMC needs step size > 0 and ≥ 1 leapfrog step, have %v and %d", k.StepSize, k.Leapfrog)
	}
	if err := checkDim("HMC target", k.Target.Dim(), s.Dim()); err != nil {
		return noStats(), err
	}
	if err := s.ensureGrad(k.Target); err != nil {
		return noStats(), err
	}
	m, d := s.Chains(), s.Dim()
	k.q, k.p, k.g = reuse(k.q, m, d), reuse(k.p, m, d), reuse(k.g, m, d)
	if len(k.lp) != m {
		k.lp, k.h0 = make([]float64, m), make([]float64, m)
	}
	eps, h0 := k.StepSize, k.h0
	if len(k.undefined) != m {
		k.undefined = make([]bool, m)
	}
	clear(k.undefined)
	k.q.Copy(s.X)
	k.g.Copy(s.Grad)
	for i := 0; i < m; i++ {
		pr := k.p.RawRowView(i)
		kin := 0.0
		for j := range pr {
			pr[j] = rng.NormFloat64()
			kin += pr[j] * pr[j] / 2
		}
		h0[i] = -s.LogP[i] + kin
	}
	for l := 0; l < k.Leapfrog; l++ {
		half := 0.5
		if l > 0 {
			half = 1 // merge the two half kicks between positions
		}
		k.p.Apply(func(i, j int, v float64) float64 { return v + half*eps*k.g.At(i, j) }, k.p)
		k.q.Apply(func(i, j int, v float64) float64 { return v + eps*k.p.At(i, j) }, k.q)
		if err := k.Target.LogDensityGrad(k.q, k.lp, k.g); err != nil {
			return noStats(), err
		}
		for i := range k.undefined {
			k.undefined[i] = k.undefined[i] || gradUndefined(k.lp[i], k.g.RawRowView(i))
		}
	}
	k.p.Apply(func(i, j int, v float64) float64 { return v + 0.5*eps*k.g.At(i, j) }, k.p)
	acc := 0
	for i := 0; i < m; i++ {
		kin := 0.0
		for _, v := range k.p.RawRowView(i) {
			kin += v * v / 2
		}
		if accept(rng, h0[i]-(-k.lp[i]+kin)) {
			acc++
			copy(s.X.RawRowView(i), k.q.RawRowView(i))
			copy(s.Grad.RawRowView(i), k.g.RawRowView(i))
			s.LogP[i] = k.lp[i]
		}
	}
	s.moved(true, true)
	st := noStats()
	st.Local, st.StepSize = float64(acc)/float64(m), eps
	for _, u := range k.undefined {
		if u {
			st.GradUndefined++
		}
	}
	return st, nil
}

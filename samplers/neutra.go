package samplers

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// LatentTarget is a target on a flow's latent space, log π(T(z)) + log|J_T(z)|,
// with the maps between the spaces (graph.Latent implements it).
type LatentTarget interface {
	Target
	// Push writes x = T(z) for each row.
	Push(z mat.Matrix, x *mat.Dense) error
	// Pull writes z = T⁻¹(x) for each row.
	Pull(x mat.Matrix, z *mat.Dense) error
}

// NeuTra runs MALA in the flow's latent space (Hoffman et al. 2019; the
// paper's NT-EBM) and returns the states in x-space: after each step the
// State's X is T(z). The latent chains start at T⁻¹ of the State's points on
// the first step, or after Reset.
type NeuTra struct {
	Latent LatentTarget
	// Local is the latent MALA's configuration; its Target is set to Latent.
	Local MALA

	z *State
}

// Reset makes the next step restart the latent chains from the State.
func (k *NeuTra) Reset() { k.z = nil }

// LatentState returns the latent chains' state (nil before the first step).
func (k *NeuTra) LatentState() *State { return k.z }

// SetLatentState makes z the latent chains' state (as LatentState returned
// it, e.g. restored from a checkpoint); nil is Reset.
func (k *NeuTra) SetLatentState(z *State) { k.z = z }

// Step moves every chain by one latent MALA step.
func (k *NeuTra) Step(rng *rand.Rand, s *State) (Stats, error) {
	if err := checkDim("latent target", k.Latent.Dim(), s.Dim()); err != nil {
		return noStats(), err
	}
	if k.z == nil || k.z.Chains() != s.Chains() {
		z := mat.NewDense(s.Chains(), s.Dim(), nil)
		if err := k.Latent.Pull(s.X, z); err != nil {
			return noStats(), err
		}
		k.z = NewState(z)
	}
	k.Local.Target = k.Latent
	st, err := k.Local.Step(rng, k.z)
	if err != nil {
		return noStats(), err
	}
	if err := k.Latent.Push(k.z.X, s.X); err != nil {
		return noStats(), err
	}
	s.moved(false, false)
	return st, nil
}

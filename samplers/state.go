package samplers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Target is an unnormalised log-density evaluated on a batch: one point per
// row, results written into caller-owned buffers (as gonum's distmv.LogProber,
// batched).
type Target interface {
	Dim() int
	// LogDensity writes log π(x_i) for each row x_i into logp.
	LogDensity(x mat.Matrix, logp []float64) error
	// LogDensityGrad writes log π(x_i) into logp and ∇ log π(x_i) into the
	// rows of grad.
	LogDensityGrad(x mat.Matrix, logp []float64, grad *mat.Dense) error
}

// Proposal is an independent proposal with a tractable density, such as a
// normalizing flow.
type Proposal interface {
	Dim() int
	// Sample fills the rows of x with draws and logq with their log-densities.
	Sample(rng *rand.Rand, x *mat.Dense, logq []float64) error
	// LogDensity writes log λ(x_i) for each row.
	LogDensity(x mat.Matrix, logq []float64) error
}

// Kernel advances every chain of a State by one step.
type Kernel interface {
	Step(rng *rand.Rand, s *State) (Stats, error)
}

// Stats describes one kernel step.
type Stats struct {
	// Local is the mean acceptance of local (gradient) moves over chains
	// and sub-steps; NaN if none ran. ULA reports 1.
	Local float64
	// Global is the mean acceptance of global (independent-proposal) moves:
	// for i-SIR the fraction of chains that picked a new particle; NaN if
	// none ran.
	Global float64
	// StepSize is the local step size after the step (after adaptation);
	// NaN for kernels without one.
	StepSize float64
	// GradUndefined counts the proposals rejected because the gradient of
	// log π was NaN or ±Inf where log π is finite (MALA, HMC): the chains
	// never go where the gradient is undefined, and where that region has
	// mass they sample π restricted to the rest (probe 57: 76% of a
	// target's mass, silently).
	GradUndefined int
}

func noStats() Stats { return Stats{Local: math.NaN(), Global: math.NaN(), StepSize: math.NaN()} }

// State is M chains in dimension d with cached quantities at the current
// points.
type State struct {
	X    *mat.Dense // M × d, one chain per row
	LogP []float64  // log π(X), valid when HasLogP
	Grad *mat.Dense // ∇ log π(X), valid when HasGrad
	LogQ []float64  // log λ(X) of the global proposal, valid when HasLogQ

	HasLogP, HasGrad, HasLogQ bool
}

// NewState wraps x (M × d, not copied) as the chains' current points.
func NewState(x *mat.Dense) *State {
	m, d := x.Dims()
	return &State{X: x, LogP: make([]float64, m), Grad: mat.NewDense(m, d, nil), LogQ: make([]float64, m)}
}

// Chains is the number of chains.
func (s *State) Chains() int { r, _ := s.X.Dims(); return r }

// Dim is the dimension.
func (s *State) Dim() int { _, c := s.X.Dims(); return c }

// Invalidate forgets everything cached (call it after the target changed or
// X was written from outside).
func (s *State) Invalidate() { s.HasLogP, s.HasGrad, s.HasLogQ = false, false, false }

// InvalidateProposal forgets the cached proposal density (after a flow update).
func (s *State) InvalidateProposal() { s.HasLogQ = false }

// moved marks the points as changed in place with log π and its gradient
// known or not.
func (s *State) moved(logp, grad bool) {
	s.HasLogP, s.HasGrad, s.HasLogQ = logp, grad, false
}

func (s *State) ensureLogP(t Target) error {
	if s.HasLogP {
		return nil
	}
	if err := t.LogDensity(s.X, s.LogP); err != nil {
		return err
	}
	s.HasLogP = true
	return nil
}

func (s *State) ensureGrad(t Target) error {
	if s.HasGrad && s.HasLogP {
		return nil
	}
	if err := t.LogDensityGrad(s.X, s.LogP, s.Grad); err != nil {
		return err
	}
	s.HasLogP, s.HasGrad = true, true
	return nil
}

func (s *State) ensureLogQ(p Proposal) error {
	if s.HasLogQ {
		return nil
	}
	if err := p.LogDensity(s.X, s.LogQ); err != nil {
		return err
	}
	s.HasLogQ = true
	return nil
}

func checkDim(what string, have, want int) error {
	if have != want {
		return fmt.Errorf("samplers: %s has dimension %d, chains have %d", what, have, want)
	}
	return nil
}

// accept returns whether a move with log acceptance ratio logAlpha is taken;
// NaN ratios are rejected.
func accept(rng *rand.Rand, logAlpha float64) bool {
	if math.IsNaN(logAlpha) {
		return false
	}
	return logAlpha >= 0 || math.Log(rng.Float64()) < logAlpha
}

// NewRand returns a random generator seeded with seed (PCG, stream fixed):
// for notebooks on the gophernotes kernel, whose interpreter cannot import
// math/rand/v2 itself but can hold the generator and pass it on.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e62)) }

// Draw returns m fresh draws (m × d) of p, e.g. chain starts from a flow.
func Draw(rng *rand.Rand, p Proposal, m int) (*mat.Dense, error) {
	x := mat.NewDense(m, p.Dim(), nil)
	if err := p.Sample(rng, x, make([]float64, m)); err != nil {
		return nil, err
	}
	return x, nil
}

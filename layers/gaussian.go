package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// Gaussian is the centred diagonal Gaussian N(0, diag(Sigma²)), the base ρ
// of flows and the tilt of EBMs.
type Gaussian struct {
	Sigma []float64
}

// NewIsotropic returns N(0, σ²I) in dimension d.
func NewIsotropic(d int, sigma float64) Gaussian {
	s := make([]float64, d)
	for i := range s {
		s[i] = sigma
	}
	return Gaussian{Sigma: s}
}

// NewDiagonal returns N(0, diag(σ²)); it copies sigma.
func NewDiagonal(sigma []float64) Gaussian {
	return Gaussian{Sigma: append([]float64(nil), sigma...)}
}

// Dim is the dimension.
func (g Gaussian) Dim() int { return len(g.Sigma) }

// Validate reports a non-positive or non-finite σ.
func (g Gaussian) Validate() error {
	if len(g.Sigma) == 0 {
		return fmt.Errorf("layers: Gaussian has no dimensions")
	}
	for i, s := range g.Sigma {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("layers: Gaussian sigma[%d] = %v, want a finite positive value", i, s)
		}
	}
	return nil
}

// LogNorm is log ρ's normalising term, −(d/2)·log 2π − Σᵢ log σᵢ.
func (g Gaussian) LogNorm() float64 {
	c := -0.5 * float64(len(g.Sigma)) * math.Log(2*math.Pi)
	for _, s := range g.Sigma {
		c -= math.Log(s)
	}
	return c
}

// LogProb returns log ρ(x).
func (g Gaussian) LogProb(x []float64) float64 { return g.LogProbNormed(g.LogNorm(), x) }

// LogProbNormed returns log ρ(x) given c = LogNorm(), so that a loop over
// many points takes the d logarithms once.
func (g Gaussian) LogProbNormed(c float64, x []float64) float64 {
	q := 0.0
	for i, s := range g.Sigma {
		v := x[i] / s
		q += v * v
	}
	return c - 0.5*q
}

// GradLogProb writes ∇ log ρ(x) = −x/σ² into dst.
func (g Gaussian) GradLogProb(x, dst []float64) {
	for i, s := range g.Sigma {
		dst[i] = -x[i] / (s * s)
	}
}

// Sample writes a draw into z using rng.
func (g Gaussian) Sample(rng *rand.Rand, z []float64) {
	for i, s := range g.Sigma {
		z[i] = s * rng.NormFloat64()
	}
}

// Apply adds log ρ(x) (B) for x (B, d) to the graph.
func (g Gaussian) Apply(b Binder, x *G.Node) (*G.Node, error) {
	bsz, d, err := batchOf(x)
	if err != nil {
		return nil, err
	}
	if d != len(g.Sigma) {
		return nil, fmt.Errorf("layers: Gaussian has dimension %d, input has %d", len(g.Sigma), d)
	}
	w := make([]float64, bsz*d)
	for i := 0; i < bsz; i++ {
		for j, s := range g.Sigma {
			w[i*d+j] = -0.5 / (s * s)
		}
	}
	sq, err := G.Square(x)
	if err != nil {
		return nil, err
	}
	wq, err := G.HadamardProd(sq, Constant(b, "−1/(2σ²)", w, bsz, d))
	if err != nil {
		return nil, err
	}
	q, err := G.Sum(wq, 1)
	if err != nil {
		return nil, err
	}
	return G.Add(q, Scalar(b, g.LogNorm()))
}

package samplers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"
)

// Normal is the target and proposal N(mean, cov).
type Normal struct {
	dist *distmv.Normal
	prec *mat.SymDense
	mean []float64
}

// NewNormal returns N(mean, cov); cov must be positive definite.
func NewNormal(mean []float64, cov mat.Symmetric) (*Normal, error) {
	dist, ok := distmv.NewNormal(mean, cov, nil)
	if !ok {
		return nil, fmt.Errorf("samplers: covariance is not positive definite")
	}
	var chol mat.Cholesky
	chol.Factorize(cov)
	prec := mat.NewSymDense(len(mean), nil)
	if err := chol.InverseTo(prec); err != nil {
		return nil, err
	}
	return &Normal{dist: dist, prec: prec, mean: append([]float64(nil), mean...)}, nil
}

// Dim is the dimension.
func (g *Normal) Dim() int { return len(g.mean) }

// LogDensity writes the normalised log-density of each row.
func (g *Normal) LogDensity(x mat.Matrix, logp []float64) error {
	r, _ := x.Dims()
	row := make([]float64, g.Dim())
	for i := 0; i < r; i++ {
		logp[i] = g.dist.LogProb(mat.Row(row, i, x))
	}
	return nil
}

// LogDensityGrad adds ∇ log π(x) = −Σ⁻¹(x − μ).
func (g *Normal) LogDensityGrad(x mat.Matrix, logp []float64, grad *mat.Dense) error {
	if err := g.LogDensity(x, logp); err != nil {
		return err
	}
	r, _ := x.Dims()
	diff := mat.NewVecDense(g.Dim(), nil)
	out := mat.NewVecDense(g.Dim(), nil)
	for i := 0; i < r; i++ {
		for j := range g.mean {
			diff.SetVec(j, x.At(i, j)-g.mean[j])
		}
		out.MulVec(g.prec, diff)
		for j := range g.mean {
			grad.Set(i, j, -out.AtVec(j))
		}
	}
	return nil
}

// Sample draws rows from N(mean, cov) using rng.
func (g *Normal) Sample(rng *rand.Rand, x *mat.Dense, logq []float64) error {
	r, _ := x.Dims()
	cov := mat.NewSymDense(g.Dim(), nil)
	g.dist.CovarianceMatrix(cov)
	var chol mat.Cholesky
	chol.Factorize(cov)
	var u mat.TriDense
	chol.UTo(&u)
	z := mat.NewVecDense(g.Dim(), nil)
	y := mat.NewVecDense(g.Dim(), nil)
	for i := 0; i < r; i++ {
		for j := range g.mean {
			z.SetVec(j, rng.NormFloat64())
		}
		y.MulVec(u.T(), z)
		for j := range g.mean {
			x.Set(i, j, g.mean[j]+y.AtVec(j))
		}
	}
	return g.LogDensity(x, logq)
}

// Mixture is the target and proposal Σ_k w_k N(μ_k, σ_k² I), with zones
// for mode weights given by the nearest mean.
type Mixture struct {
	Weights []float64
	Means   [][]float64
	Sigmas  []float64
}

// NewMixture validates and copies a mixture of isotropic Gaussians; the
// weights are normalised.
func NewMixture(weights []float64, means [][]float64, sigmas []float64) (*Mixture, error) {
	if len(weights) == 0 || len(weights) != len(means) || len(weights) != len(sigmas) {
		return nil, fmt.Errorf("samplers: mixture needs as many weights, means and sigmas (%d, %d, %d)", len(weights), len(means), len(sigmas))
	}
	s := floats.Sum(weights)
	m := &Mixture{}
	for k := range weights {
		if !(weights[k] > 0) || !(sigmas[k] > 0) || len(means[k]) != len(means[0]) {
			return nil, fmt.Errorf("samplers: mixture component %d is invalid", k)
		}
		m.Weights = append(m.Weights, weights[k]/s)
		m.Means = append(m.Means, append([]float64(nil), means[k]...))
		m.Sigmas = append(m.Sigmas, sigmas[k])
	}
	return m, nil
}

// Dim is the dimension.
func (m *Mixture) Dim() int { return len(m.Means[0]) }

// logComponents writes log(w_k N(x; μ_k, σ_k²I)) into lc and returns their log-sum-exp.
func (m *Mixture) logComponents(x, lc []float64) float64 {
	d := float64(len(x))
	for k, mu := range m.Means {
		s := m.Sigmas[k]
		q := 0.0
		for j, v := range x {
			u := (v - mu[j]) / s
			q += u * u
		}
		lc[k] = math.Log(m.Weights[k]) - 0.5*q - d*math.Log(s) - 0.5*d*math.Log(2*math.Pi)
	}
	return floats.LogSumExp(lc)
}

// LogDensity writes the normalised log-density of each row.
func (m *Mixture) LogDensity(x mat.Matrix, logp []float64) error {
	r, _ := x.Dims()
	row, lc := make([]float64, m.Dim()), make([]float64, len(m.Weights))
	for i := 0; i < r; i++ {
		logp[i] = m.logComponents(mat.Row(row, i, x), lc)
	}
	return nil
}

// LogDensityGrad adds ∇ log π(x) = Σ_k r_k(x)(μ_k − x)/σ_k², r_k the responsibilities.
func (m *Mixture) LogDensityGrad(x mat.Matrix, logp []float64, grad *mat.Dense) error {
	r, _ := x.Dims()
	row, lc := make([]float64, m.Dim()), make([]float64, len(m.Weights))
	for i := 0; i < r; i++ {
		mat.Row(row, i, x)
		logp[i] = m.logComponents(row, lc)
		g := grad.RawRowView(i)
		for j := range g {
			g[j] = 0
		}
		for k, mu := range m.Means {
			resp := math.Exp(lc[k] - logp[i])
			for j := range g {
				g[j] += resp * (mu[j] - row[j]) / (m.Sigmas[k] * m.Sigmas[k])
			}
		}
	}
	return nil
}

// Sample draws rows from the mixture using rng.
func (m *Mixture) Sample(rng *rand.Rand, x *mat.Dense, logq []float64) error {
	r, _ := x.Dims()
	for i := 0; i < r; i++ {
		u, k := rng.Float64(), 0
		for k < len(m.Weights)-1 && u >= m.Weights[k] {
			u -= m.Weights[k]
			k++
		}
		for j, mu := range m.Means[k] {
			x.Set(i, j, mu+m.Sigmas[k]*rng.NormFloat64())
		}
	}
	return m.LogDensity(x, logq)
}

package samplers_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed+99)) }

// correlated returns N(μ, Σ) in d = 5 with a dense covariance.
func correlated(t *testing.T) (*samplers.Normal, []float64, *mat.SymDense) {
	r := rng(1)
	a := mat.NewDense(5, 5, nil)
	for i := range a.RawMatrix().Data {
		a.RawMatrix().Data[i] = 0.5 * r.NormFloat64()
	}
	cov := mat.NewSymDense(5, nil)
	cov.SymOuterK(1, a)
	for i := 0; i < 5; i++ {
		cov.SetSym(i, i, cov.At(i, i)+0.3)
	}
	mu := []float64{1, -2, 0.5, 0, 3}
	g, err := samplers.NewNormal(mu, cov)
	if err != nil {
		t.Fatal(err)
	}
	return g, mu, cov
}

func exactDraws(t *testing.T, p samplers.Proposal, r *rand.Rand, m int) *mat.Dense {
	x := mat.NewDense(m, p.Dim(), nil)
	if err := p.Sample(r, x, make([]float64, m)); err != nil {
		t.Fatal(err)
	}
	return x
}

// checkMoments: chains started from exact draws of π stay distributed as π
// under a π-invariant kernel, and distinct chains are independent, so the M
// final states are iid draws of π. A sample mean then has standard error
// √(Σ_ii/M), a sample covariance entry √((Σ_ii Σ_jj + Σ_ij²)/M); each is
// checked within 4.5 standard errors (false-alarm rate ~1e-5 per entry).
func checkMoments(t *testing.T, name string, x *mat.Dense, mu []float64, cov *mat.SymDense) {
	t.Helper()
	m, d := x.Dims()
	var got mat.SymDense
	stat.CovarianceMatrix(&got, x, nil)
	for j := 0; j < d; j++ {
		mean := stat.Mean(mat.Col(nil, j, x), nil)
		if se := math.Sqrt(cov.At(j, j) / float64(m)); math.Abs(mean-mu[j]) > 4.5*se {
			t.Errorf("%s: mean[%d] = %.4f, want %.4f ± %.4f", name, j, mean, mu[j], 4.5*se)
		}
		for k := 0; k <= j; k++ {
			se := math.Sqrt((cov.At(j, j)*cov.At(k, k) + cov.At(j, k)*cov.At(j, k)) / float64(m))
			if math.Abs(got.At(j, k)-cov.At(j, k)) > 4.5*se {
				t.Errorf("%s: cov[%d,%d] = %.4f, want %.4f ± %.4f", name, j, k, got.At(j, k), cov.At(j, k), 4.5*se)
			}
		}
	}
}

func TestKernelsLeaveCorrelatedGaussianInvariant(t *testing.T) {
	target, mu, cov := correlated(t)
	inflated := mat.NewSymDense(5, nil)
	inflated.ScaleSym(2.25, cov)
	prop, err := samplers.NewNormal(mu, inflated)
	if err != nil {
		t.Fatal(err)
	}
	kernels := map[string]func() samplers.Kernel{
		"MALA": func() samplers.Kernel { return &samplers.MALA{Target: target, StepSize: 0.05, Frozen: true} },
		"HMC":  func() samplers.Kernel { return &samplers.HMC{Target: target, StepSize: 0.1, Leapfrog: 5} },
		"IMH":  func() samplers.Kernel { return &samplers.IMH{Target: target, Proposal: prop} },
		"ISIR": func() samplers.Kernel { return &samplers.ISIR{Target: target, Proposal: prop, Particles: 8} },
		"FlowMC": func() samplers.Kernel {
			return &samplers.FlowMC{
				Global: &samplers.ISIR{Target: target, Proposal: prop, Particles: 4}, GlobalSteps: 1,
				Local: &samplers.MALA{Target: target, StepSize: 0.05, Frozen: true}, LocalSteps: 3,
			}
		},
	}
	seed := uint64(10)
	for name, mk := range kernels {
		seed++
		r := rng(seed)
		s := samplers.NewState(exactDraws(t, target, r, 4000))
		k := mk()
		acc := 0.0
		for step := 0; step < 40; step++ {
			st, err := k.Step(r, s)
			if err != nil {
				t.Fatal(err)
			}
			if !math.IsNaN(st.Local) {
				acc = st.Local
			} else {
				acc = st.Global
			}
		}
		if acc < 0.1 {
			t.Errorf("%s: acceptance %.3f: the test would not exercise the kernel", name, acc)
		}
		checkMoments(t, name, s.X, mu, cov)
	}
}

func twoModes(t *testing.T) *samplers.Mixture {
	m, err := samplers.NewMixture([]float64{1, 2}, [][]float64{{-1.5, -1.5}, {1.5, 1.5}}, []float64{math.Sqrt(0.05), math.Sqrt(0.1)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGlobalMovesRecoverModeWeights: chains all started in the 1/3 mode
// reach the 1/3–2/3 split with i-SIR, IMH and flowMC moves proposed by a
// broad Gaussian covering both modes, but not with MALA alone. After mixing
// the final states are iid, so the fraction in the top mode has standard
// error √(p(1−p)/M) = 0.0105 for M = 2,000; the bound is 4.5 of those.
func TestGlobalMovesRecoverModeWeights(t *testing.T) {
	target := twoModes(t)
	broadCov := mat.NewSymDense(2, []float64{4, 0, 0, 4})
	prop, err := samplers.NewNormal([]float64{0, 0}, broadCov)
	if err != nil {
		t.Fatal(err)
	}
	minor, _ := samplers.NewMixture([]float64{1}, [][]float64{{-1.5, -1.5}}, []float64{math.Sqrt(0.05)})
	const m = 2000
	cases := []struct {
		name  string
		k     samplers.Kernel
		steps int
		mixes bool
	}{
		{"ISIR", &samplers.ISIR{Target: target, Proposal: prop, Particles: 32}, 60, true},
		{"IMH", &samplers.IMH{Target: target, Proposal: prop}, 600, true},
		{"FlowMC", &samplers.FlowMC{Global: &samplers.ISIR{Target: target, Proposal: prop, Particles: 32}, GlobalSteps: 1,
			Local: &samplers.MALA{Target: target, StepSize: 0.01}, LocalSteps: 4}, 200, true},
		{"MALA", &samplers.MALA{Target: target, StepSize: 0.01}, 200, false},
	}
	for i, c := range cases {
		r := rng(uint64(20 + i))
		s := samplers.NewState(exactDraws(t, minor, r, m))
		for step := 0; step < c.steps; step++ {
			if _, err := c.k.Step(r, s); err != nil {
				t.Fatal(err)
			}
		}
		top := diagnostics.ModeWeights(s.X, target.Means)[1]
		if c.mixes {
			if se := math.Sqrt(2.0 / 9 / m); math.Abs(top-2.0/3) > 4.5*se {
				t.Errorf("%s: top-mode weight %.4f, want 2/3 ± %.3f", c.name, top, 4.5*se)
			}
		} else if top > 0.01 {
			t.Errorf("%s alone moved %.3f of the chains to the other mode; it should not cross", c.name, top)
		}
	}
}

// With the proposal equal to the target every weight π/λ is equal, so i-SIR
// picks uniformly among N slots and its acceptance (pick ≠ slot 0) is
// (N−1)/N; standard error √(p(1−p)/M) per step, averaged over 20 steps.
func TestISIRAcceptanceDefinition(t *testing.T) {
	target := twoModes(t)
	const m, n = 4000, 4
	r := rng(30)
	s := samplers.NewState(exactDraws(t, target, r, m))
	k := &samplers.ISIR{Target: target, Proposal: target, Particles: n}
	sum := 0.0
	for step := 0; step < 20; step++ {
		st, err := k.Step(r, s)
		if err != nil {
			t.Fatal(err)
		}
		sum += st.Global
	}
	p := float64(n-1) / n
	if se := math.Sqrt(p * (1 - p) / m / 20); math.Abs(sum/20-p) > 4.5*se {
		t.Errorf("acceptance %.4f, want %.4f", sum/20, p)
	}
}

// ULA on N(0,1) is the AR(1) x ← (1−η)x + √(2η)ξ, whose stationary variance
// is 1/(1 − η/2): ULA is biased, and the test shows it. The sample variance
// of M = 20,000 chains has standard error √(2/M)·v = 0.011.
func TestULAStationaryVariance(t *testing.T) {
	target, err := samplers.NewNormal([]float64{0}, mat.NewSymDense(1, []float64{1}))
	if err != nil {
		t.Fatal(err)
	}
	const m, eta = 20000, 0.2
	r := rng(31)
	s := samplers.NewState(exactDraws(t, target, r, m))
	k := &samplers.ULA{Target: target, StepSize: eta}
	for step := 0; step < 100; step++ {
		if _, err := k.Step(r, s); err != nil {
			t.Fatal(err)
		}
	}
	want := 1 / (1 - eta/2)
	v := stat.Variance(s.X.RawMatrix().Data, nil)
	if se := math.Sqrt(2.0/m) * want; math.Abs(v-want) > 4.5*se {
		t.Errorf("ULA variance %.4f, closed form %.4f", v, want)
	}
	// Noise-free ULA is gradient ascent: it contracts to the mode.
	k.NoiseFree = true
	for step := 0; step < 200; step++ {
		if _, err := k.Step(r, s); err != nil {
			t.Fatal(err)
		}
	}
	if mx := mat.Norm(s.X, math.Inf(1)); mx > 1e-6 {
		t.Errorf("noise-free ULA left points at distance %v from the mode", mx)
	}
}

func TestMALAAdaptationTargetsAcceptance(t *testing.T) {
	target, _, _ := correlated(t)
	for _, eta := range []float64{5, 1e-5} {
		r := rng(32)
		s := samplers.NewState(exactDraws(t, target, r, 500))
		k := &samplers.MALA{Target: target, StepSize: eta}
		var last samplers.Stats
		acc := 0.0
		for step := 0; step < 400; step++ {
			st, err := k.Step(r, s)
			if err != nil {
				t.Fatal(err)
			}
			last = st
			if step >= 300 {
				acc += st.Local / 100
			}
		}
		if math.Abs(acc-0.75) > 0.06 {
			t.Errorf("start η = %g: mean acceptance over the last 100 steps %.3f, want 0.75 ± 0.06", eta, acc)
		}
		if eta > 1 && !(last.StepSize < eta) || eta < 1 && !(last.StepSize > eta) {
			t.Errorf("start η = %g: step size went to %g, the wrong way", eta, last.StepSize)
		}
	}
}

// countingKernel records how often it ran.
type countingKernel struct{ n int }

func (c *countingKernel) Step(*rand.Rand, *samplers.State) (samplers.Stats, error) {
	c.n++
	return samplers.Stats{Local: 1, Global: math.NaN(), StepSize: 0.1}, nil
}

func TestFlowMCSchedule(t *testing.T) {
	s := samplers.NewState(mat.NewDense(3, 2, nil))
	for _, stacked := range []bool{false, true} {
		g, l := &countingKernel{}, &countingKernel{}
		adapts, rows := 0, 0
		k := &samplers.FlowMC{Global: g, Local: l, GlobalSteps: 1, LocalSteps: 3, Stacked: stacked,
			Adapt: func(v *mat.Dense) error { adapts++; rows, _ = v.Dims(); return nil }}
		steps := 8
		if stacked {
			steps = 2
		}
		for i := 0; i < steps; i++ {
			if _, err := k.Step(rng(1), s); err != nil {
				t.Fatal(err)
			}
		}
		if g.n != 2 || l.n != 6 || adapts != 2 || rows != 12 {
			t.Errorf("stacked=%v: %d global, %d local, %d adaptations on %d rows; want 2, 6, 2, 12", stacked, g.n, l.n, adapts, rows)
		}
	}
}

func TestStoreRingAndThinning(t *testing.T) {
	st, err := samplers.NewStore(2, 1, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // records calls 0, 2, 4, 6, 8; keeps the last 3
		st.Record(mat.NewDense(2, 1, []float64{float64(i), float64(-i)}))
	}
	c := st.Chains(0)
	if st.Len() != 3 || c[0][0] != 4 || c[0][1] != 6 || c[0][2] != 8 || c[1][2] != -8 {
		t.Errorf("chains %v, want [[4 6 8] [-4 -6 -8]]", c)
	}
	if d := st.Draws(); d[0] != 4 || d[2] != 8 || d[3] != -4 {
		t.Errorf("draws %v, want chain-major [4 6 8 -4 -6 -8]", d)
	}
}

func TestBadConfigurationsAreErrors(t *testing.T) {
	target := twoModes(t)
	s := samplers.NewState(mat.NewDense(4, 2, nil))
	for name, k := range map[string]samplers.Kernel{
		"MALA step 0":     &samplers.MALA{Target: target},
		"ULA step -1":     &samplers.ULA{Target: target, StepSize: -1},
		"HMC no leapfrog": &samplers.HMC{Target: target, StepSize: 0.1},
		"ISIR 1 particle": &samplers.ISIR{Target: target, Proposal: target, Particles: 1},
		"IMH no proposal": &samplers.IMH{Target: target},
		"FlowMC empty":    &samplers.FlowMC{},
	} {
		if _, err := k.Step(rng(1), s); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	wrong := samplers.NewState(mat.NewDense(4, 3, nil))
	if _, err := (&samplers.MALA{Target: target, StepSize: 0.1}).Step(rng(1), wrong); err == nil {
		t.Error("dimension mismatch: no error")
	}
}

package samplers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// halfNaN is N(0, 1) in one dimension whose gradient is NaN below cut
// (its log density finite everywhere), as an exported graph can be.
type halfNaN struct{ cut float64 }

func (halfNaN) Dim() int { return 1 }

func (h halfNaN) LogDensity(x mat.Matrix, logp []float64) error {
	for i := range logp {
		v := x.At(i, 0)
		logp[i] = -v * v / 2
	}
	return nil
}

func (h halfNaN) LogDensityGrad(x mat.Matrix, logp []float64, grad *mat.Dense) error {
	h.LogDensity(x, logp)
	for i := range logp {
		g := -x.At(i, 0)
		if x.At(i, 0) < h.cut {
			g = math.NaN()
		}
		grad.Set(i, 0, g)
	}
	return nil
}

// Probe 57: MALA and HMC rejected every proposal whose gradient was NaN
// where log π is finite, without a word, and sampled π without that
// region (76% of a target's mass). The rejections are counted: at a cut
// of −0.5 (31% of N(0, 1) below it), many; with the cut at −∞, none.
func TestGradUndefinedCounted(t *testing.T) {
	for _, cut := range []float64{-0.5, math.Inf(-1)} {
		for name, k := range map[string]Kernel{
			"mala": &MALA{Target: halfNaN{cut}, StepSize: 0.5},
			"hmc":  &HMC{Target: halfNaN{cut}, StepSize: 0.3, Leapfrog: 5},
		} {
			rng := rand.New(rand.NewPCG(57, 1))
			x := mat.NewDense(64, 1, nil)
			for i := 0; i < 64; i++ {
				x.Set(i, 0, 1)
			}
			s := NewState(x)
			n := 0
			for range 50 {
				st, err := k.Step(rng, s)
				if err != nil {
					t.Fatal(err)
				}
				n += st.GradUndefined
			}
			below := 0
			for i := 0; i < 64; i++ {
				if x.At(i, 0) < cut {
					below++
				}
			}
			switch {
			case math.IsInf(cut, -1) && n != 0:
				t.Errorf("%s, gradient defined everywhere: %d rejections counted", name, n)
			case !math.IsInf(cut, -1) && (n < 100 || below > 0):
				t.Errorf("%s, gradient NaN below %v: %d rejections counted over 50 steps of 64 chains, %d chains below it; want many, and none", name, cut, n, below)
			}
		}
	}
}

package graph

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
)

// GradCheck is the agreement between an analytic gradient and central finite
// differences (gonum diff/fd, default step).
type GradCheck struct {
	What   string  // which gradient
	Coords int     // number of coordinates compared
	RelErr float64 // ‖analytic − fd‖∞ / max(‖analytic‖∞, ‖fd‖∞)
}

// String formats the check as one line.
func (c GradCheck) String() string {
	return fmt.Sprintf("%-40s %8d coords   rel. error %.2e", c.What, c.Coords, c.RelErr)
}

// finiteDiff returns central finite differences of f at x (gonum diff/fd)
// to compare with the gradient got: each coordinate's from the default
// step (about 6e-6) or from a step of 1e-7, whichever is closer to got. A
// central difference whose step straddles a LeakyReLU kink is off by the
// jump in slope (gradcheck failed so for about one seed in five, at 3e-2);
// the smaller step rarely straddles it, while a real error in got shows
// at both steps.
func finiteDiff(got []float64, f func([]float64) float64, x []float64) []float64 {
	coarse := fd.Gradient(nil, f, x, &fd.Settings{Formula: fd.Central})
	fine := fd.Gradient(nil, f, x, &fd.Settings{Formula: fd.Central, Step: 1e-7})
	for i := range coarse {
		if math.Abs(got[i]-fine[i]) < math.Abs(got[i]-coarse[i]) {
			coarse[i] = fine[i]
		}
	}
	return coarse
}

// RelErrInf is ‖a − b‖∞ / max(‖a‖∞, ‖b‖∞) (‖a − b‖∞ where both are 0),
// the norm-wise relative error that GradCheck.RelErr reports.
func RelErrInf(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range a {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Max(math.Abs(a[i]), math.Abs(b[i])))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// relErrInf is RelErrInf.
func relErrInf(a, b []float64) float64 { return RelErrInf(a, b) }

// CheckEBM compares the EBM's x-gradient (of log p̃ at each row of neg) and
// its training-loss parameter gradient with central finite differences. The
// parameter check costs two loss evaluations per parameter.
func CheckEBM(e *EBM, pos, neg *mat.Dense, l2 float64) ([]GradCheck, error) {
	n, d := neg.Dims()
	lp := make([]float64, n)
	grad := mat.NewDense(n, d, nil)
	if err := e.LogDensityGrad(neg, lp, grad); err != nil {
		return nil, err
	}
	var evalErr error
	one, oneLp := mat.NewDense(1, d, nil), make([]float64, 1)
	xCheck := GradCheck{What: "∇ₓ log p̃(x) (tilted EBM)"}
	for i := 0; i < n; i++ {
		f := func(v []float64) float64 {
			one.SetRow(0, v)
			if err := e.LogDensity(one, oneLp); err != nil {
				evalErr = err
			}
			return oneLp[0]
		}
		want := finiteDiff(grad.RawRowView(i), f, mat.Row(nil, i, neg))
		xCheck.Coords += d
		xCheck.RelErr = math.Max(xCheck.RelErr, relErrInf(grad.RawRowView(i), want))
	}
	pgrad := make([]float64, e.Params.Count())
	if _, err := e.LossGrad(pos, neg, l2, pgrad); err != nil {
		return nil, err
	}
	np, _ := pos.Dims()
	ep, en := make([]float64, np), make([]float64, n)
	theta := e.Params.Flatten(nil)
	loss := func(v []float64) float64 {
		e.Params.SetFlat(v)
		defer e.Params.SetFlat(theta)
		if err := e.Energy(pos, ep); err != nil {
			evalErr = err
		}
		if err := e.Energy(neg, en); err != nil {
			evalErr = err
		}
		l := 0.0
		for _, x := range ep {
			l += (x + l2*x*x) / float64(np)
		}
		for _, x := range en {
			l += (-x + l2*x*x) / float64(n)
		}
		return l
	}
	want := finiteDiff(pgrad, loss, theta)
	if evalErr != nil {
		return nil, evalErr
	}
	return []GradCheck{xCheck, {What: "∇θ training loss (EBM)", Coords: len(theta), RelErr: relErrInf(pgrad, want)}}, nil
}

// CheckFlow compares the flow's maximum-likelihood parameter gradient at the
// rows of x with central finite differences.
func CheckFlow(f *Flow, x *mat.Dense) (GradCheck, error) {
	grad := make([]float64, f.Params.Count())
	if _, err := f.MLGrad(x, grad); err != nil {
		return GradCheck{}, err
	}
	n, _ := x.Dims()
	lq := make([]float64, n)
	theta := f.Params.Flatten(nil)
	var evalErr error
	obj := func(v []float64) float64 {
		f.Params.SetFlat(v)
		defer f.Params.SetFlat(theta)
		if err := f.LogDensity(x, lq); err != nil {
			evalErr = err
		}
		return mean(lq)
	}
	want := finiteDiff(grad, obj, theta)
	if evalErr != nil {
		return GradCheck{}, evalErr
	}
	return GradCheck{What: "∇α mean log λ(x) (flow)", Coords: len(theta), RelErr: relErrInf(grad, want)}, nil
}

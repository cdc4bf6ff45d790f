package samplers_test

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distmv"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// irisBinary reads scikit-learn's iris data (testdata/iris.csv, as Debian's
// python3-sklearn 1.2.1 ships it: a header "150,4,names…", then four
// measurements and the class per row) and keeps versicolor (y = 0) and
// virginica (y = 1): X is 100 × 5, an intercept column then the four
// measurements standardised.
func irisBinary() (*mat.Dense, []float64, error) {
	f, err := os.Open("testdata/iris.csv")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	var rows [][]float64
	var y []float64
	for sc.Scan() {
		parts := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(parts) != 5 || parts[4] == "0" {
			continue
		}
		row := []float64{1}
		for _, p := range parts[:4] {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("iris.csv: %v", err)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
		y = append(y, map[string]float64{"1": 0, "2": 1}[parts[4]])
	}
	x := mat.NewDense(len(rows), 5, nil)
	for i, r := range rows {
		x.SetRow(i, r)
	}
	for j := 1; j < 5; j++ {
		col := mat.Col(nil, j, x)
		m, s := stat.MeanStdDev(col, nil)
		for i, v := range col {
			x.Set(i, j, (v-m)/s)
		}
	}
	return x, y, sc.Err()
}

// logisticPosterior is the posterior of a Bayesian logistic regression,
// log π(β) = Σᵢ [yᵢ ηᵢ − log(1 + e^ηᵢ)] − |β|²/(2σ²) with η = Xβ, as a
// Gorgonia expression of a batch of β (n × d): Gorgonia derives ∇ log π.
// log(1 + e^η) is Gorgonia's Softplus, which does not overflow (and whose
// derivative is the sigmoid, also at η = 0, where max(η, 0) +
// log1p(e^−|η|) would take the kinks' one-sided derivatives).
func logisticPosterior(x *mat.Dense, y []float64, sigma float64) graph.Expression {
	n, d := x.Dims()
	xt := tensor.New(tensor.WithShape(d, n), tensor.WithBacking(mat.DenseCopyOf(x.T()).RawMatrix().Data))
	yt := tensor.New(tensor.WithShape(n), tensor.WithBacking(append([]float64(nil), y...)))
	return graph.Expression{D: d, LogDensity: func(beta *G.Node) (*G.Node, error) {
		eta := G.Must(G.Mul(beta, G.NewConstant(xt, G.WithName("Xᵀ")))) // (batch, n)
		fit := G.Must(G.Mul(eta, G.NewConstant(yt, G.WithName("y"))))   // Σᵢ yᵢ ηᵢ
		lse := G.Must(G.Sum(G.Must(G.Softplus(eta)), 1))                // Σᵢ log(1 + e^ηᵢ)
		prior := G.Must(G.Mul(G.Must(G.Sum(G.Must(G.Square(beta)), 1)), G.NewConstant(-0.5/(sigma*sigma))))
		return G.Add(G.Must(G.Sub(fit, lse)), prior)
	}}
}

// logPosterior is the same posterior in plain Go, for the checks.
func logPosterior(x *mat.Dense, y []float64, sigma float64, beta []float64) float64 {
	eta := mat.NewVecDense(len(y), nil)
	eta.MulVec(x, mat.NewVecDense(len(beta), beta))
	lp := 0.0
	for i, v := range eta.RawVector().Data {
		lp += y[i]*v - (math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))))
	}
	for _, b := range beta {
		lp -= b * b / (2 * sigma * sigma)
	}
	return lp
}

// A Bayesian logistic regression on iris (versicolor against virginica,
// four standardised measurements and an intercept, prior N(0, 2² I)),
// written as a Gorgonia expression and sampled with MALA: the posterior
// means of the coefficients, to the unit (their Monte Carlo error here is
// about 0.05; TestLogisticPosteriorMean checks them to that precision).
func Example_logisticRegression() {
	x, y, err := irisBinary()
	if err != nil {
		panic(err)
	}
	target, err := graph.NewTarget(logisticPosterior(x, y, 2), tensor.Float64)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	starts := mat.NewDense(16, 5, nil)
	mala := &samplers.MALA{Target: target, StepSize: 0.01}
	draws, _, _, err := samplers.RunChains(rng, mala, starts, 500, 1000, func() { mala.Frozen = true })
	if err != nil {
		panic(err)
	}
	mean := make([]float64, 5)
	for i, v := range draws {
		mean[i%5] += v / float64(len(draws)/5)
	}
	fmt.Printf("posterior mean of β (intercept, sepal length, sepal width, petal length, petal width):\n%.0f\n", mean)
	// Output:
	// posterior mean of β (intercept, sepal length, sepal width, petal length, petal width):
	// [0 -1 -1 4 4]
}

// The Gorgonia expression's log π and gradient agree with the posterior
// written in Go and with its central finite differences (gonum diff/fd,
// 1e-6 relative). log π agrees to 1.2e-5: Gorgonia's Softplus returns η
// itself above η = 16, an error below e^−16 ≈ 1.1e-7 per observation (100
// here).
func TestLogisticPosteriorGradient(t *testing.T) {
	x, y, target := irisTarget(t)
	beta := mat.NewDense(3, 5, []float64{0, 0, 0, 0, 0, -0.3, -1.4, -1, 5.3, 5.1, 1, 2, -3, 4, -5})
	lp, g := make([]float64, 3), mat.NewDense(3, 5, nil)
	if err := target.LogDensityGrad(beta, lp, g); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		row := mat.Row(nil, i, beta)
		f := func(b []float64) float64 { return logPosterior(x, y, 2, b) }
		if want := f(row); math.Abs(lp[i]-want) > 1.2e-5 {
			t.Errorf("row %d: log π %v, Go %v", i, lp[i], want)
		}
		want := fd.Gradient(nil, f, row, &fd.Settings{Formula: fd.Central})
		for j := range 5 {
			if math.Abs(g.At(i, j)-want[j]) > 1e-6*(1+math.Abs(want[j])) {
				t.Errorf("row %d: ∂%d = %v, finite differences %v", i, j, g.At(i, j), want[j])
			}
		}
	}
}

// MALA's posterior means agree with a reference computed another way:
// self-normalised importance sampling from a Student t (ν = 5) around the
// posterior mode with the inverse Hessian as scale (200,000 draws). Each
// coordinate's difference is within 4.5 standard errors, the MALA error
// from its bulk ESS and the importance-sampling error by the delta
// method (false alarm ≈ 7e-6 per coordinate).
func TestLogisticPosteriorMean(t *testing.T) {
	x, y, target := irisTarget(t)
	rng := rand.New(rand.NewPCG(5, 8))
	const chains, steps, d = 32, 2000, 5
	mala := &samplers.MALA{Target: target, StepSize: 0.01}
	draws, acc, _, err := samplers.RunChains(rng, mala, mat.NewDense(chains, d, nil), 1000, steps, func() { mala.Frozen = true })
	if err != nil {
		t.Fatal(err)
	}
	ref, refSE, ess := importanceReference(t, x, y, rng)
	for j := range d {
		c := make([][]float64, chains)
		var all []float64
		for k := range chains {
			for s := range steps {
				c[k] = append(c[k], draws[(k*steps+s)*d+j])
			}
			all = append(all, c[k]...)
		}
		m, sd := stat.MeanStdDev(all, nil)
		mcse := sd / math.Sqrt(diagnostics.BulkESS(c))
		if se := math.Hypot(mcse, refSE[j]); math.Abs(m-ref[j]) > 4.5*se {
			t.Errorf("β%d: MALA mean %.4f, importance sampling %.4f, difference beyond 4.5 × %.4f", j, m, ref[j], se)
		}
		t.Logf("β%d: MALA %.4f ± %.4f (bulk ESS %.0f), importance sampling %.4f ± %.4f", j, m, mcse, diagnostics.BulkESS(c), ref[j], refSE[j])
	}
	t.Logf("MALA acceptance %.2f, step %.3g; importance sampling ESS %.0f of 200000", acc, mala.StepSize, ess)
}

// importanceReference is the posterior mean by self-normalised importance
// sampling from a Student t at the mode (Newton's method) with the inverse
// Hessian as scale, with its standard errors and effective sample size.
func importanceReference(t *testing.T, x *mat.Dense, y []float64, rng *rand.Rand) (mean, se []float64, ess float64) {
	t.Helper()
	_, d := x.Dims()
	f := func(b []float64) float64 { return logPosterior(x, y, 2, b) }
	mode := make([]float64, d)
	h := mat.NewSymDense(d, nil)
	for range 50 { // Newton's method on a strictly concave function
		g := fd.Gradient(nil, f, mode, &fd.Settings{Formula: fd.Central})
		fd.Hessian(h, f, mode, nil)
		var step mat.VecDense
		if err := step.SolveVec(h, mat.NewVecDense(d, g)); err != nil {
			t.Fatal(err)
		}
		for j := range mode {
			mode[j] -= step.AtVec(j)
		}
	}
	h.ScaleSym(-1, h)
	var chol mat.Cholesky
	if !chol.Factorize(h) {
		t.Fatal("the negative Hessian at the mode is not positive definite")
	}
	var cov mat.SymDense
	if err := chol.InverseTo(&cov); err != nil {
		t.Fatal(err)
	}
	prop, ok := distmv.NewStudentsT(mode, &cov, 5, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	if !ok {
		t.Fatal("bad proposal")
	}
	const n = 200000
	pts := make([][]float64, n)
	lw := make([]float64, n)
	for i := range pts {
		pts[i] = prop.Rand(nil)
		lw[i] = f(pts[i]) - prop.LogProb(pts[i])
	}
	mx := lw[0]
	for _, v := range lw {
		mx = math.Max(mx, v)
	}
	w, sw, sw2 := make([]float64, n), 0.0, 0.0
	for i, v := range lw {
		w[i] = math.Exp(v - mx)
		sw += w[i]
		sw2 += w[i] * w[i]
	}
	mean, se = make([]float64, d), make([]float64, d)
	for i, p := range pts {
		for j := range d {
			mean[j] += w[i] * p[j] / sw
		}
	}
	for i, p := range pts {
		for j := range d {
			se[j] += (w[i] * (p[j] - mean[j]) / sw) * (w[i] * (p[j] - mean[j]) / sw)
		}
	}
	for j := range se {
		se[j] = math.Sqrt(se[j])
	}
	return mean, se, sw * sw / sw2
}

// irisTarget is the iris posterior (prior N(0, 2² I)) with its data.
func irisTarget(t *testing.T) (*mat.Dense, []float64, *graph.Target) {
	t.Helper()
	x, y, err := irisBinary()
	if err != nil {
		t.Fatal(err)
	}
	target, err := graph.NewTarget(logisticPosterior(x, y, 2), tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	return x, y, target
}

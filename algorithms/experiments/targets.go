// Package experiments defines the paper's target distributions (App. C), each
// with its exact log-density for evaluation and, where the target is a
// mixture, the mode centres and weights that the mode-weight metrics use.
package experiments

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/samplers"
	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Experiment is one of the paper's data distributions.
type Experiment struct {
	// Name is the command-line name ("two-modes", "four-gaussians-16", ...).
	Name string
	// Kind says which of the fields below the experiment has.
	Kind Kind
	// Description says where in the paper the experiment comes from.
	Description string
	// Target draws data and evaluates the exact log-density (nil for a
	// data set); samplers.Mixture and Rings implement it.
	Target samplers.Proposal
	// Modes are the centres whose nearest-centre zones define mode
	// weights, and Weights their true weights; both nil for the rings.
	Modes   [][]float64
	Weights []float64
	// Box is the square [−Box, Box]^2 used for plots and grid quadrature
	// in 2D (0 in higher dimensions); with BoxY > 0, the rectangle
	// [−Box, Box] × [−BoxY, BoxY] (a data set's, whose coordinates may
	// differ in range: probe 68 B2).
	Box, BoxY float64
	// Center is the box's centre: the origin but for a data set whose
	// points lie off it (--standardize none; round 84 A1: a box about the
	// origin had coarser cells, and weights off in the third decimal).
	Center [2]float64
	// View, when its half-widths are not 0, is the part of the box that
	// figures show: a data set's bulk (all but its 0.5% outermost points
	// along each axis) where the box is over three times as wide, as a
	// far outlier makes it (round 89 B4: the bulk filled 1% of the
	// density figure); quadrature starts from it too (GridBox).
	View View

	// Data-set experiments have no exact density: Target is nil, TrainSet
	// and HeldOutSet hold the data (HeldOutLabels the held-out classes,
	// to calibrate the classifier), Classify assigns points to the classes
	// whose true weights are Weights (named by ClassNames), and Image is
	// the shape of one data point seen as an image (nil otherwise).
	TrainSet, HeldOutSet *mat.Dense
	HeldOutLabels        []int
	Classify             func(x mat.Matrix) []int
	ClassNames           []string
	Image                *ImageShape
	// Scaling, for a user's data set, maps the standardised coordinates
	// in which TrainSet, HeldOutSet and the models live to the data's
	// units; Modes are then in the data's units (nil: no scaling).
	Scaling *data.Scaling
	// Columns names the data's coordinates (from a CSV header) for plot
	// axes; nil: x1, x2, ….
	Columns []string
	// PointShape, for a user's data set of points with two axes or more
	// ((n, C, H, W) images), is one point's shape; nil: rows.
	PointShape []int
}

// View is a rectangle [c₀ − Box, c₀ + Box] × [c₁ − BoxY, c₁ + BoxY].
type View struct {
	Center    [2]float64
	Box, BoxY float64
}

// GridBox is where a 2-D experiment's quadrature grid starts (and its
// density figure is framed): the View where it has one, the box
// otherwise. A grid of 200 cells over a box that far outliers stretched
// to ±1e5 gave the bulk one cell, and zone weights, log Z and the
// density figure's colour bar were all wrong (round 95 A1); from the
// bulk, the grid grows where the EBM's mass lies beyond it
// (metrics.Grid.FillCovering).
func (e *Experiment) GridBox() View {
	if e.View.Box > 0 {
		return e.View
	}
	return View{Center: e.Center, Box: e.Box, BoxY: cmp.Or(e.BoxY, e.Box)}
}

// Kind is what an experiment is made of.
type Kind int

// The kinds of experiments.
const (
	// KindDensity: a target with an exact density (Target), which draws
	// the data; mode weights are counted in the zones of Modes (if any).
	KindDensity Kind = iota
	// KindDataSet: a user's data set (TrainSet, HeldOutSet) in
	// standardised coordinates (Scaling), with optional mode centres.
	KindDataSet
	// KindImages: labelled images (TrainSet, HeldOutSet, Image), whose
	// classes (Classify) have the true weights Weights.
	KindImages
)

// ImageShape is the shape of a data point laid out channel-major.
type ImageShape struct{ Channels, Height, Width int }

// Dim returns the dimension of the data.
func (e *Experiment) Dim() int {
	if e.Kind != KindDensity {
		_, c := e.TrainSet.Dims()
		return c
	}
	return e.Target.Dim()
}

// Split returns n training points and held held-out points: fresh draws
// from the target, or for a data set its first n training rows (all if
// fewer) and first held held-out rows (the sets are shuffled once when the
// experiment is built).
func (e *Experiment) Split(rng *rand.Rand, n, held int) (train, heldOut *mat.Dense) {
	if e.Kind == KindDensity {
		return e.Data(rng, n), e.Data(rng, held)
	}
	rows := func(m *mat.Dense, k int) *mat.Dense {
		r, c := m.Dims()
		return mat.DenseCopyOf(m.Slice(0, min(r, k), 0, c))
	}
	return rows(e.TrainSet, n), rows(e.HeldOutSet, held)
}

// Zones returns, for every row of x (in the models' coordinates), its class
// (Classify) or the index of its nearest mode (measured in the data's
// units), or nil if the experiment has neither.
func (e *Experiment) Zones(x mat.Matrix) []int {
	switch {
	case e.Kind == KindImages:
		return e.Classify(x)
	case e.Modes != nil:
		if e.Scaling != nil {
			x = e.Scaling.ToData(x)
		}
		r, c := x.Dims()
		zones := make([]int, r)
		row := make([]float64, c)
		for i := range zones {
			zones[i] = diagnostics.NearestMode(mat.Row(row, i, x), e.Modes)
		}
		return zones
	}
	return nil
}

// Weigh returns the fraction of the rows of x in each zone (see Zones), or
// nil if the experiment has no zones.
func (e *Experiment) Weigh(x mat.Matrix) []float64 {
	if z := e.Zones(x); z != nil {
		return data.LabelWeights(z, len(e.Weights))
	}
	return nil
}

func mixture(name, desc string, w []float64, means [][]float64, sigma []float64, box float64) *Experiment {
	m, err := samplers.NewMixture(w, means, sigma)
	if err != nil {
		panic(err) // the definitions below are constants
	}
	return &Experiment{Name: name, Description: desc, Target: m, Modes: m.Means, Weights: m.Weights, Box: box}
}

// TwoModes is App. C.2's motivating example:
// ⅓ N(−1.5·1, 0.05 I) + ⅔ N(1.5·1, 0.1 I) in 2D (0.05 and 0.1 are variances).
func TwoModes() *Experiment {
	return mixture("two-modes", "paper Fig. 1 and App. C.2: 1/3 N(-1.5·1, 0.05 I) + 2/3 N(1.5·1, 0.1 I)",
		[]float64{1. / 3, 2. / 3}, [][]float64{{-1.5, -1.5}, {1.5, 1.5}}, []float64{math.Sqrt(0.05), math.Sqrt(0.1)}, 3.5)
}

// FourModes is App. C.3's extended example: weights 0.1..0.4 on means
// evenly spaced on the horizontal axis from −3 to 3, covariance 0.05 I.
func FourModes() *Experiment {
	s := math.Sqrt(0.05)
	return mixture("four-modes", "App. C.3: sum_i w_i N(mu_i, 0.05 I), w = (0.1, 0.2, 0.3, 0.4), mu_i on the x-axis from -3 to 3",
		[]float64{0.1, 0.2, 0.3, 0.4}, [][]float64{{-3, 0}, {-1, 0}, {1, 0}, {3, 0}}, []float64{s, s, s, s}, 4.5)
}

// EightGaussians is App. C.4's mixture of 8 equal Gaussians N(μ_i, 0.15² I)
// with μ_i = (cos 2πi/8, sin 2πi/8).
func EightGaussians() *Experiment {
	var means [][]float64
	var w, s []float64
	for i := 0; i < 8; i++ {
		t := 2 * math.Pi * float64(i) / 8
		means = append(means, []float64{math.Cos(t), math.Sin(t)})
		w, s = append(w, 1), append(s, 0.15)
	}
	return mixture("8-gaussians", "App. C.4: 8 equal N(mu_i, 0.15^2 I), mu_i on the unit circle", w, means, s, 2)
}

// FourGaussians is App. C.5's equal mixture of N(μ_i, I_d) with μ₁ = a·1,
// μ₂ = a·(−1,…,−1, 1,…,1) (first half negative), μ₃ = −μ₂, μ₄ = −μ₁.
//
// With paperScale the magnitude is the paper's a = 0.5919; otherwise it is
// the companion code's 0.5910·√(2 ln d), the default, which is the one that
// gives the paper's claimed ≤ 1e-10 misassignment probability (REFERENCE §2:
// a = 0.5919 gives 4.7e-2 at d = 16).
func FourGaussians(d int, paperScale bool) (*Experiment, error) {
	if d < 2 || d%2 != 0 {
		return nil, fmt.Errorf("experiments: four-gaussians needs an even dimension ≥ 2, not %d", d)
	}
	a := 0.5910 * math.Sqrt(2*math.Log(float64(d)))
	scale := "0.5910·sqrt(2 ln d)"
	if paperScale {
		a, scale = 0.5919, "0.5919 (paper)"
	}
	mu := make([][]float64, 4)
	for i := range mu {
		mu[i] = make([]float64, d)
	}
	for j := 0; j < d; j++ {
		s := 1.0
		if j < d/2 {
			s = -1
		}
		mu[0][j], mu[1][j], mu[2][j], mu[3][j] = a, s*a, -s*a, -a
	}
	name := fmt.Sprintf("four-gaussians-%d", d)
	if paperScale {
		name += "-paper"
	}
	return mixture(name, fmt.Sprintf("App. C.5: 4 equal N(mu_i, I_%d), |mu_ij| = %s = %.4f", d, scale, a),
		[]float64{1, 1, 1, 1}, mu, []float64{1, 1, 1, 1}, 0), nil
}

// Rings is App. C.4's rings: radius r ~ ¼ Σ_k N(k+1, 0.15²), k = 0..3, angle
// uniform, so that the density in the plane is p_r(|x|)/(2π|x|) (REFERENCE §2).
type Rings struct{}

// Dim is 2.
func (Rings) Dim() int { return 2 }

const ringSigma = 0.15

func ringRadialLogDensity(r float64) float64 {
	var lc [4]float64
	for k := range lc {
		u := (r - float64(k+1)) / ringSigma
		lc[k] = math.Log(0.25) - 0.5*u*u - math.Log(ringSigma) - 0.5*math.Log(2*math.Pi)
	}
	return floats.LogSumExp(lc[:])
}

// LogDensity writes log p(x) = log p_r(|x|) − log(2π|x|) for each row. The
// radial mixture puts mass N(0; k+1, 0.15²) ≈ 1e-11 below r = 0, which the
// polar construction folds away; the density is normalised to that precision.
func (Rings) LogDensity(x mat.Matrix, logp []float64) error {
	n, _ := x.Dims()
	for i := 0; i < n; i++ {
		r := math.Hypot(x.At(i, 0), x.At(i, 1))
		logp[i] = ringRadialLogDensity(r) - math.Log(2*math.Pi*r)
	}
	return nil
}

// Sample draws rows with rng; radii below 0 (probability ≈ 1e-11) are redrawn.
func (g Rings) Sample(rng *rand.Rand, x *mat.Dense, logq []float64) error {
	n, _ := x.Dims()
	for i := 0; i < n; i++ {
		r := -1.0
		for r <= 0 {
			r = float64(rng.IntN(4)+1) + ringSigma*rng.NormFloat64()
		}
		t := 2 * math.Pi * rng.Float64()
		x.Set(i, 0, r*math.Cos(t))
		x.Set(i, 1, r*math.Sin(t))
	}
	if logq == nil {
		return nil
	}
	return g.LogDensity(x, logq)
}

// RingsExperiment is the rings experiment of App. C.4.
func RingsExperiment() *Experiment {
	return &Experiment{Name: "rings", Description: "App. C.4: radius ~ 1/4 sum_k N(k+1, 0.15^2), uniform angle", Target: Rings{}, Box: 5}
}

// Names lists the experiments ByName knows.
func Names() []string {
	n := []string{"two-modes", "four-modes", "8-gaussians", "rings", "mnist", "mnist28", "fashion-mnist", "cifar10",
		"four-gaussians-16", "four-gaussians-32", "four-gaussians-64",
		"four-gaussians-16-paper", "four-gaussians-32-paper", "four-gaussians-64-paper"}
	sort.Strings(n)
	return n
}

// ByName returns the experiment with the given name (see Names). The image
// experiments read their files from the folders MNISTDir and
// FashionMNISTDir find; cifar10 from the folder named by FLOWEBM_CIFAR10,
// and is an error without it (CIFAR10 takes the folder as an argument).
func ByName(name string) (*Experiment, error) {
	switch name {
	case "two-modes":
		return TwoModes(), nil
	case "four-modes":
		return FourModes(), nil
	case "8-gaussians":
		return EightGaussians(), nil
	case "rings":
		return RingsExperiment(), nil
	case "mnist":
		return MNIST("", 4)
	case "mnist28":
		return MNIST28("")
	case "fashion-mnist":
		return FashionMNIST("")
	case "cifar10":
		return CIFAR10("")
	}
	if rest, ok := strings.CutPrefix(name, "four-gaussians-"); ok {
		paper := false
		if r, ok := strings.CutSuffix(rest, "-paper"); ok {
			rest, paper = r, true
		}
		var d int
		if _, err := fmt.Sscanf(rest, "%d", &d); err == nil && fmt.Sprint(d) == rest {
			return FourGaussians(d, paper)
		}
	}
	return nil, &UnknownError{Name: name}
}

// UnknownError is the refusal of an experiment name that is none of
// Names.
type UnknownError struct{ Name string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("experiments: unknown experiment %q (%s)", e.Name, e.Known())
}

// Known lists the experiments there are: "known: a, b, …".
func (e *UnknownError) Known() string { return "known: " + strings.Join(Names(), ", ") }

// Data draws n points from the experiment's target.
func (e *Experiment) Data(rng *rand.Rand, n int) *mat.Dense {
	x := mat.NewDense(n, e.Dim(), nil)
	if err := e.Target.Sample(rng, x, make([]float64, n)); err != nil {
		panic(err) // the built-in targets do not fail
	}
	return x
}

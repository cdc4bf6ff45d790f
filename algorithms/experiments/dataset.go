package experiments

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/flowebm/flowebm/internal/shapes"
	"github.com/flowebm/flowebm/io/data"
)

// DataSetOptions configure an experiment on a user's data set. The zero
// value means the defaults given per field.
type DataSetOptions struct {
	// HoldOut is the fraction of the rows held out for the held-out
	// log-likelihood (default 0.1; at least one row).
	HoldOut float64
	// Standardize is data.PerDimension (default), data.Global or
	// data.NoScaling. The scaling is computed on the training rows.
	Standardize string
	// Modes, if not nil, are k mode centres (k × d, in the data's units):
	// mode weights are then measured by nearest-centre zones, and the
	// reference weights are the fractions of the data in each zone.
	Modes *mat.Dense
	// FlowGiven says that the run's flow is given as ONNX files (not the
	// default RealNVP), for the refusal of 1-D data.
	FlowGiven bool
	// ModesName names the centres in messages (their file; default
	// "modes").
	ModesName string
	// DropNonFinite drops rows holding NaN or Inf instead of refusing the
	// data.
	DropNonFinite bool
	// Columns names the data's d columns (a CSV header), for plots; other
	// lengths are ignored.
	Columns []string
	// PointShape is the shape of one point in the data file where it has
	// two axes or more ((n, C, H, W) images: [C, H, W]), recorded in the
	// run's checkpoints; others are ignored.
	PointShape []int
}

// DataSet builds an experiment on the rows of x (n points × d), a user's
// data set named name (the file, in errors): the rows are shuffled with
// rng, split into training and held-out sets and standardised. It returns
// notes on what was done (rows dropped, the scaling). Data that cannot be
// trained on are an error naming the problem: non-finite values (unless
// DropNonFinite), constant columns, fewer than two rows, modes whose
// dimension differs.
func DataSet(name string, x *mat.Dense, opt DataSetOptions, rng *rand.Rand) (*Experiment, []string, error) {
	var notes []string
	n, d := x.Dims()
	if d < 2 && opt.FlowGiven { // round 73 A2: the refusal blamed a RealNVP not used
		return nil, nil, fmt.Errorf("%s: %d column, want at least 2: training runs are built for d ≥ 2 (their evaluations and figures, and every algorithm's default flow), and a flow given as ONNX files does not lift that. "+
			"For 1-D data, add a second column of independent N(0, 1) noise and give a flow of d = 2: the EBM then learns your density times N(0, 1), whose first coordinate is your data's", name, d)
	}
	if d < 2 {
		return nil, nil, fmt.Errorf("%s: %d column, want at least 2: every algorithm uses a RealNVP flow (for its negatives, or to estimate log Z), and its couplings need 2 dimensions or more. "+
			"For 1-D data, add a second column of independent N(0, 1) noise: the EBM then learns your density times N(0, 1), whose first coordinate is your data's", name, d)
	}
	finite, dropped := data.Finite(x)
	if dropped > 0 {
		if !opt.DropNonFinite {
			return nil, nil, fmt.Errorf("%s: %d of %d rows hold NaN or Inf values (the first is row %d); drop them with --drop-nonfinite (drop_nonfinite in a config) or fix the file",
				name, dropped, n, firstNonFinite(x)+1)
		}
		if finite == nil {
			return nil, nil, fmt.Errorf("%s: all %d rows hold NaN or Inf values", name, n)
		}
		notes = append(notes, fmt.Sprintf("%s: dropped %d of %d rows holding NaN or Inf", name, dropped, n))
		x = finite
		n, _ = x.Dims()
	}
	h := opt.HoldOut
	if h == 0 {
		h = 0.1
	}
	if !(h > 0 && h < 1) {
		return nil, nil, fmt.Errorf("%s: holdout %v, want a fraction in (0, 1)", name, opt.HoldOut)
	}
	held := max(1, int(math.Round(h*float64(n))))
	if n-held < 2 {
		return nil, nil, fmt.Errorf("%s: %d rows leave %d for training after holding out %d, want at least 2", name, n, n-held, held)
	}
	perm := rng.Perm(n)
	rows := func(idx []int) *mat.Dense {
		m := mat.NewDense(len(idx), d, nil)
		for i, k := range idx {
			m.SetRow(i, x.RawRowView(k))
		}
		return m
	}
	trainX, heldX := rows(perm[held:]), rows(perm[:held])
	sc, err := data.Standardize(trainX, opt.Standardize)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	cols := sc // the columns' own scales, whatever the standardisation (probe 54: unscaled, 1e±300 failed later, for another reason)
	if opt.Standardize != "" && opt.Standardize != data.PerDimension {
		if cols, err = data.Standardize(trainX, data.PerDimension); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	for j, v := range cols.Scale {
		// Densities are reported per unit of the data: at scales beyond
		// 1e±150 they leave float64's range (and the density plot with
		// them).
		if v < 1e-150 || v > 1e150 {
			return nil, nil, fmt.Errorf("%s: column %d has scale %g: densities in the data's units would leave float64's range; rescale it to within 1e-150..1e150 first", name, j+1, v)
		}
	}
	kind := opt.Standardize
	if kind == "" {
		kind = data.PerDimension
	}
	notes = append(notes, fmt.Sprintf("%s: %d training and %d held-out rows in %d dimensions, standardised (%s) on the training rows", name, n-held, held, d, kind))
	if far := farFromOrigin(cols); kind == data.NoScaling && far > FarFromOrigin { // round 95 A3: diverged at iteration 16, unsaid why
		notes = append(notes, fmt.Sprintf("%s: --standardize none leaves the data %.3g standard deviations from the origin, where the models' Gaussian bases are centred: training may diverge; --standardize dimension (the default) or global centres them", name, far))
	}
	e := &Experiment{
		Name:        "data",
		Kind:        KindDataSet,
		Description: fmt.Sprintf("the data set %s (%d points in %d dimensions)", name, n, d),
		TrainSet:    sc.FromData(trainX),
		HeldOutSet:  sc.FromData(heldX),
		Scaling:     &sc,
	}
	if len(opt.Columns) == d {
		e.Columns = opt.Columns
	}
	if prod := shapes.Product(opt.PointShape); len(opt.PointShape) >= 2 && prod == d {
		e.PointShape = slices.Clone(opt.PointShape)
	}
	if d == 2 {
		// The plot and quadrature box holds every training point with a
		// margin, in standardised units, rounded up to a half, along each
		// axis: unstandardised (or globally standardised) coordinates of
		// different ranges fell in one square's single row of cells, and
		// their quadrature weights were wrong (probe 68 B2).
		e.Center, e.Box, e.BoxY = dataBox(e.TrainSet)
		e.View = bulkView(e.TrainSet, e.Center, [2]float64{e.Box, e.BoxY})
	}
	if opt.Modes != nil {
		if err := e.setModes(opt, n); err != nil {
			return nil, nil, err
		}
	}
	return e, notes, nil
}

// dataBox is the centre and half-widths of the plot and quadrature box
// of 2-dimensional points x: about the origin where it holds the points
// in a box at most half as wide again as one about their midrange (data
// standardised, the default), about that midrange otherwise (rounded to
// a tenth of the leading digit of the half-range).
func dataBox(x *mat.Dense) (center [2]float64, bx, by float64) {
	raw := x.RawMatrix()
	var lo, hi, b [2]float64
	for j := range 2 {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
	}
	for i := 0; i < raw.Rows; i++ {
		for j := range 2 {
			v := raw.Data[i*raw.Stride+j]
			lo[j], hi[j] = min(lo[j], v), max(hi[j], v)
			b[j] = max(b[j], math.Abs(v))
		}
	}
	for j := range 2 {
		half := (hi[j] - lo[j]) / 2
		if !(half > 0 && b[j] > 1.5*half) { // also no points, or a constant column
			continue
		}
		perUnit := 10 / math.Pow(10, math.Floor(math.Log10(half))) // a tenth of the half-width's leading digit
		center[j] = math.Round((lo[j]+hi[j])/2*perUnit) / perUnit
		b[j] = max(hi[j]-center[j], center[j]-lo[j])
	}
	return center, boxHalfWidth(b[0]), boxHalfWidth(b[1])
}

// FarFromOrigin is how many standard deviations from the origin along an
// axis unscaled data (--standardize none) lie before a run is told so:
// unit-spread data 1.4e4 from it diverged at iteration 16.
const FarFromOrigin = 10

// farFromOrigin is the largest |mean|/sd over the columns of per-dimension
// standardisation cols.
func farFromOrigin(cols data.Scaling) float64 {
	far := 0.0
	for j, m := range cols.Shift {
		far = max(far, math.Abs(m)/cols.Scale[j])
	}
	return far
}

// bulkView is the view of 2-dimensional points x in the box about center
// of half-widths box: along an axis where the points but the 0.5% at
// each end span less than a third of the box, a box about them (as
// dataBox draws one about all the points), the box's extent along the
// other; the zero View where neither axis is so.
func bulkView(x *mat.Dense, center, box [2]float64) View {
	v := View{Center: center, Box: box[0], BoxY: box[1]}
	narrower := false
	col := make([]float64, x.RawMatrix().Rows)
	for j := range 2 {
		mat.Col(col, j, x)
		sort.Float64s(col)
		lo, hi := stat.Quantile(0.005, stat.Empirical, col, nil), stat.Quantile(0.995, stat.Empirical, col, nil)
		mid := (lo + hi) / 2
		half := boxHalfWidth((hi - lo) / 2)
		if !(half < box[j]/3) || half == 0 {
			continue
		}
		narrower = true
		v.Center[j] = mid
		if j == 0 {
			v.Box = half
		} else {
			v.BoxY = half
		}
	}
	if !narrower {
		return View{}
	}
	return v
}

// boxHalfWidth is the half-width of the plot and quadrature box along an
// axis whose points reach |x| = b: 1.15 b rounded up to a half, or below
// 1 to a half of its leading decimal digit (a range of ±0.005, globally
// standardised beside one of ±1, got a box of ±0.5).
func boxHalfWidth(b float64) float64 {
	unit := 1.0
	if v := 1.15 * b; v > 0 && v < 1 {
		unit = math.Pow(10, math.Floor(math.Log10(v)))
	}
	return math.Ceil(2*1.15*b/unit) / 2 * unit
}

// setModes checks the mode centres of opt (finite, distinct, the data's
// dimension, no more than the n rows) and sets them with their reference
// weights: the data's own fractions in their zones.
func (e *Experiment) setModes(opt DataSetOptions, n int) error {
	name := cmp.Or(opt.ModesName, "modes")
	k, c := opt.Modes.Dims()
	if d := e.Dim(); c != d {
		return fmt.Errorf("%s: %d centres in %d dimensions, want the data's %d", name, k, c, d)
	}
	if k > n {
		// More zones than points leaves most empty, and every iteration
		// pays for each zone.
		return fmt.Errorf("%s: %d centres for %d data rows, want at most one centre per row", name, k, n)
	}
	seen := map[string]int{}
	for i := 0; i < k; i++ {
		row := mat.Row(nil, i, opt.Modes)
		for j, v := range row {
			if !(math.Abs(v) <= 1e150) {
				return fmt.Errorf("%s: centre %d, coordinate %d is %v, want a finite coordinate within ±1e150", name, i+1, j+1, v)
			}
			row[j] = v + 0 // −0 is 0
		}
		key := fmt.Sprint(row)
		if first, ok := seen[key]; ok {
			return fmt.Errorf("%s: centres %d and %d are equal, want distinct centres (their zones would be one)", name, first+1, i+1)
		}
		seen[key] = i
		e.Modes = append(e.Modes, row)
	}
	e.Weights = make([]float64, k) // Weigh counts in as many zones
	all := mat.NewDense(n, c, nil)
	all.Stack(e.TrainSet, e.HeldOutSet)
	e.Weights = e.Weigh(all)
	return nil
}

func firstNonFinite(x *mat.Dense) int {
	for i, v := range x.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i / x.RawMatrix().Stride
		}
	}
	return -1
}

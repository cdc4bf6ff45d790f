package experiments

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/flowebm/flowebm/io/data"
)

// points draws n rows from a 2D mixture of three Gaussians in units far
// from standard (centres near (12, −2), spreads 0.3–0.5).
func points(rng *rand.Rand, n int, w []float64) (*mat.Dense, *mat.Dense) {
	modes := mat.NewDense(3, 2, []float64{10, -3, 14, -3, 12, 0})
	x := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		u, k := rng.Float64(), 0
		for k < 2 && u > w[k] {
			u -= w[k]
			k++
		}
		x.Set(i, 0, modes.At(k, 0)+0.5*rng.NormFloat64())
		x.Set(i, 1, modes.At(k, 1)+0.3*rng.NormFloat64())
	}
	return x, modes
}

func TestDataSetSplitsStandardisesAndWeighs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, modes := points(rng, 2000, []float64{0.2, 0.3, 0.5})
	e, notes, err := DataSet("mix.npy", x, DataSetOptions{Modes: modes}, rng)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "1800 training and 200 held-out rows") {
		t.Errorf("notes %q", notes)
	}
	if e.Dim() != 2 || e.Box <= 0 || e.Scaling == nil {
		t.Fatalf("dim %d, box %v, scaling %v", e.Dim(), e.Box, e.Scaling)
	}
	// Standardised on the training rows: mean 0, variance 1 per column.
	for j := 0; j < 2; j++ {
		m, v := stat.MeanVariance(mat.Col(nil, j, e.TrainSet), nil)
		if math.Abs(m) > 1e-9 || math.Abs(v-1) > 1e-9 {
			t.Errorf("column %d: mean %v, variance %v after standardising", j, m, v)
		}
	}
	// The reference weights are the data's own fractions in the zones of
	// the modes, computed here in the data's units; Weigh measures zones
	// in the data's units too, from standardised input.
	want := data.LabelWeights(nearest(x, modes), 3)
	for k := range want {
		if math.Abs(e.Weights[k]-want[k]) > 1e-12 {
			t.Errorf("weights %v, want %v", e.Weights, want)
		}
	}
	if got := e.Weigh(e.Scaling.FromData(x)); math.Abs(got[2]-want[2]) > 1e-12 {
		t.Errorf("Weigh on standardised data %v, want %v", got, want)
	}
}

func nearest(x, modes *mat.Dense) []int {
	r, _ := x.Dims()
	k, _ := modes.Dims()
	z := make([]int, r)
	for i := range z {
		best := math.Inf(1)
		for m := 0; m < k; m++ {
			dx, dy := x.At(i, 0)-modes.At(m, 0), x.At(i, 1)-modes.At(m, 1)
			if d := dx*dx + dy*dy; d < best {
				best, z[i] = d, m
			}
		}
	}
	return z
}

func TestDataSetRefusesBadData(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	x, modes := points(rng, 100, []float64{0.2, 0.3, 0.5})
	nan := mat.DenseCopyOf(x)
	nan.Set(7, 1, math.NaN())
	nan.Set(42, 0, math.Inf(1))
	constant := mat.DenseCopyOf(x)
	for i := 0; i < 100; i++ {
		constant.Set(i, 1, 4)
	}
	cases := []struct {
		name string
		x    *mat.Dense
		opt  DataSetOptions
		want string
	}{
		{"nan", nan, DataSetOptions{}, "f: 2 of 100 rows hold NaN or Inf values (the first is row 8); drop them with --drop-nonfinite"},
		{"constant", constant, DataSetOptions{}, "f: column 2 is constant (every value 4)"},
		{"holdout", x, DataSetOptions{HoldOut: 1.5}, "f: holdout 1.5, want a fraction in (0, 1)"},
		{"rows", mat.NewDense(2, 2, []float64{1, 2, 3, 4}), DataSetOptions{}, "f: 2 rows leave 1 for training"},
		{"modes", x, DataSetOptions{Modes: mat.NewDense(1, 3, nil)}, "modes: 1 centres in 3 dimensions, want the data's 2"},
		{"1-D", mat.NewDense(10, 1, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), DataSetOptions{}, "f: 1 column, want at least 2"},
		{"NaN mode", x, DataSetOptions{Modes: mat.NewDense(1, 2, []float64{0, math.NaN()})}, "modes: centre 1, coordinate 2 is NaN, want a finite coordinate within ±1e150"},
		{"too many modes", x, DataSetOptions{Modes: mat.NewDense(101, 2, nil)}, "modes: 101 centres for 100 data rows"},
	}
	for _, c := range cases {
		_, _, err := DataSet("f", c.x, c.opt, rng)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	e, notes, err := DataSet("f", nan, DataSetOptions{DropNonFinite: true, Modes: modes}, rng)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := e.TrainSet.Dims(); r+e.HeldOutSet.RawMatrix().Rows != 98 || !strings.Contains(notes[0], "dropped 2 of 100 rows") {
		t.Errorf("dropping: %d training rows, notes %q", r, notes)
	}
}

// Probe 68 B2: unstandardised (or globally standardised) coordinates of
// different ranges shared one square box, sized by the widest: a
// coordinate of sd 0.3 beside one at ±500 fell in one column of cells,
// and the EBM's quadrature weights were 0.513/0.487 for 0.470/0.530. The
// box is sized along each axis, and a narrow range keeps its digits.
func TestDataSetBoxPerAxis(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := mat.NewDense(400, 2, nil)
	for i := 0; i < 400; i++ {
		s := float64(1 - 2*(i%2))
		x.Set(i, 0, 2*s+0.3*rng.NormFloat64())
		x.Set(i, 1, -500*s+20*rng.NormFloat64())
	}
	for _, c := range []struct {
		standardize string
		xMax, yMin  float64 // the x half-width at most, the y half-width at least
	}{{data.NoScaling, 5, 500}, {data.Global, 0.02, 1}} {
		e, _, err := DataSet("d", x, DataSetOptions{Standardize: c.standardize}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if !(e.Box <= c.xMax && e.Box > 0 && e.BoxY >= c.yMin) {
			t.Errorf("%s: box ±%v × ±%v, want x within ±%v and y beyond ±%v", c.standardize, e.Box, e.BoxY, c.xMax, c.yMin)
		}
		raw := e.TrainSet.RawMatrix()
		for i := 0; i < raw.Rows; i++ {
			if math.Abs(raw.Data[i*raw.Stride]) > e.Box || math.Abs(raw.Data[i*raw.Stride+1]) > e.BoxY {
				t.Fatalf("%s: training row %d outside the box", c.standardize, i)
			}
		}
	}
	if got := boxHalfWidth(2); got != 2.5 {
		t.Errorf("boxHalfWidth(2) = %v, want 2.5 (as before)", got)
	}
}

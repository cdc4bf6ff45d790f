package data

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// Scaling is an affine map between standardised coordinates z, in which
// models are trained, and the data's own units x: x = Shift + Scale ⊙ z,
// coordinate by coordinate.
type Scaling struct {
	Shift []float64 `json:"shift"`
	Scale []float64 `json:"scale"`
}

// Standardization kinds for Standardize.
const (
	PerDimension = "dimension" // each coordinate centred and divided by its own standard deviation
	Global       = "global"    // each coordinate centred, all divided by one standard deviation (the root mean variance)
	NoScaling    = "none"      // identity
)

// Standardize returns the scaling that standardises the rows of x: centred
// on the mean, and divided per dimension by each coordinate's standard
// deviation (PerDimension), or by the square root of the mean variance
// (Global, which keeps the data's shape). A coordinate that does not vary
// is an error naming it: the data have no extent there, and standardising
// would divide by zero.
func Standardize(x *mat.Dense, kind string) (Scaling, error) {
	n, d := x.Dims()
	s := Scaling{Shift: make([]float64, d), Scale: make([]float64, d)}
	col := make([]float64, n)
	for j := 0; j < d; j++ {
		mat.Col(col, j, x)
		m, sd, err := meanSD(col)
		if err != nil {
			return s, fmt.Errorf("column %d %w", j+1, err)
		}
		s.Shift[j], s.Scale[j] = m, sd
	}
	switch kind {
	case PerDimension, "":
	case Global:
		g := rms(s.Scale)
		for j := range s.Scale {
			s.Scale[j] = g
		}
	case NoScaling:
		for j := range s.Scale {
			s.Shift[j], s.Scale[j] = 0, 1
		}
	default:
		return s, fmt.Errorf("standardize %q, want %q, %q or %q", kind, PerDimension, Global, NoScaling)
	}
	return s, nil
}

// rms is the root mean square of the positive sd, computed relative to
// the largest so that it neither overflows nor underflows (probe 54: at
// scales of 1e±300 the global scale was +Inf or 0).
func rms(sd []float64) float64 {
	direct := 0.0
	for _, v := range sd {
		direct += v / float64(len(sd)) * v
	}
	if direct >= 0x1p-1022 && !math.IsInf(direct, 0) { // as always computed (bit for bit)
		return math.Sqrt(direct)
	}
	big := 0.0
	for _, v := range sd {
		big = math.Max(big, v)
	}
	meanSq := 0.0
	for _, v := range sd {
		meanSq += (v / big) * (v / big) / float64(len(sd))
	}
	return big * math.Sqrt(meanSq)
}

// meanSD returns the mean and standard deviation of v. When the direct
// computation overflows (values near the float64 range, 1e300, or one
// outlier, 1e200, among small values) it works on v divided by its
// largest magnitude; it says what is wrong when they cannot be used.
func meanSD(v []float64) (mean, sd float64, err error) {
	// The direct computation, when it is finite (every ordinary column:
	// results stay bit for bit what they were).
	if m, variance := stat.MeanVariance(v, nil); variance > 0 && !math.IsInf(variance, 0) && !math.IsInf(m, 0) {
		return m, math.Sqrt(variance), nil
	}
	big := 0.0
	for _, x := range v {
		big = math.Max(big, math.Abs(x))
	}
	if big == 0 || math.IsInf(big, 0) || math.IsNaN(big) {
		if big == 0 {
			return 0, 0, fmt.Errorf("is constant (every value 0): remove it, the model cannot learn a density that does not extend there")
		}
		return 0, 0, fmt.Errorf("holds %v", big)
	}
	scaled := make([]float64, len(v))
	for i, x := range v {
		scaled[i] = x / big
	}
	m, variance := stat.MeanVariance(scaled, nil)
	sd = math.Sqrt(variance) * big
	mean = m * big
	switch {
	case !(variance > 0) || sd == 0:
		return 0, 0, fmt.Errorf("is constant (every value %v): remove it, the model cannot learn a density that does not extend there", v[0])
	case math.IsInf(sd, 0) || math.IsInf(mean, 0):
		return 0, 0, fmt.Errorf("spreads beyond what float64 can standardise (largest magnitude %g): rescale the column", big)
	}
	return mean, sd, nil
}

// Dim returns the number of coordinates.
func (s Scaling) Dim() int { return len(s.Scale) }

// Identity says whether the scaling leaves every coordinate as it is
// (--standardize none: shift 0, scale 1).
func (s Scaling) Identity() bool {
	for j := range s.Scale {
		if s.Scale[j] != 1 || s.Shift[j] != 0 {
			return false
		}
	}
	return true
}

// Validate reports a scaling whose lengths differ or whose scales are not
// positive and finite.
func (s Scaling) Validate() error {
	if len(s.Shift) != len(s.Scale) || len(s.Scale) == 0 {
		return fmt.Errorf("shift has %d values and scale %d, want the same positive number", len(s.Shift), len(s.Scale))
	}
	for j, v := range s.Scale {
		if !(v > 0) || math.IsInf(v, 0) || math.IsNaN(s.Shift[j]) || math.IsInf(s.Shift[j], 0) {
			return fmt.Errorf("coordinate %d: shift %v, scale %v, want a finite shift and a positive finite scale", j+1, s.Shift[j], v)
		}
	}
	return nil
}

// ToData returns x = Shift + Scale ⊙ z for every row of z.
func (s Scaling) ToData(z mat.Matrix) *mat.Dense {
	x := mat.DenseCopyOf(z)
	s.ToDataInPlace(x.RawMatrix().Data)
	return x
}

// ToDataInPlace maps the consecutive points of v (len(Shift) values each,
// as a row-major array of draws) to the data's units, in place.
func (s Scaling) ToDataInPlace(v []float64) {
	d := len(s.Shift)
	for i := range v {
		j := i % d
		v[i] = s.Shift[j] + s.Scale[j]*v[i]
	}
}

// FromData returns z = (x − Shift) / Scale for every row of x.
func (s Scaling) FromData(x mat.Matrix) *mat.Dense {
	r, c := x.Dims()
	z := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			z.Set(i, j, (x.At(i, j)-s.Shift[j])/s.Scale[j])
		}
	}
	return z
}

// LogDet returns Σ log Scale: a density in z becomes one in x by
// subtracting it (p_x(x) = p_z(z) / Π Scale).
func (s Scaling) LogDet() float64 {
	v := 0.0
	for _, c := range s.Scale {
		v += math.Log(c)
	}
	return v
}

// Equal says whether s and o map the same units (nil: the data's own).
func (s *Scaling) Equal(o *Scaling) bool {
	if s == nil || o == nil {
		return s == nil && o == nil
	}
	return slices.Equal(s.Shift, o.Shift) && slices.Equal(s.Scale, o.Scale)
}

package plots

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// newPlot is plot.New with axes whose tick labels read apart
// (readableTicks).
func newPlot() *plot.Plot {
	p := plot.New()
	p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
	return p
}

// readableTicks places gonum's default ticks and labels them with as
// many digits as they need to read apart, and no more: gonum's labels of
// values that vary little beside their size were all alike ("1", "1",
// "1" for 1 ± 1e-7; "1e+06" thrice for 1e6 ± 1e-3), and large round ones
// carried decimals ("25000.00") (probe 63).
//
// With integer, ticks fall on whole numbers only (an axis of draws or
// iterations: chains of 4 draws were labelled 3, 3.5, 4, 4.5, 5; probe
// 67 B5).
type readableTicks struct{ integer bool }

// Ticks returns the ticks between min and max.
func (r readableTicks) Ticks(min, max float64) []plot.Tick {
	ticks := roundTicks(min, max, r.integer)
	if ticks == nil && r.integer {
		ticks = roundTicks(min, max, false) // too many whole numbers: their default spacing
	}
	if ticks == nil {
		ticks = plot.DefaultTicks{}.Ticks(min, max)
	}
	var values []float64
	for _, t := range ticks {
		if t.Label != "" {
			values = append(values, t.Value)
		}
	}
	step := math.Inf(1)
	for i := 1; i < len(values); i++ {
		step = math.Min(step, values[i]-values[i-1])
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return ticks
	}
	// One style for the axis: plain decimals or exponents, whichever
	// writes the longest label shorter.
	labels := map[byte][]string{}
	for _, style := range []byte{'f', 'g'} {
		for _, t := range ticks {
			if t.Label != "" {
				labels[style] = append(labels[style], tickLabel(t.Value, step, style))
			}
		}
	}
	style := byte('f')
	if longest(labels['g']) < longest(labels['f']) {
		style = 'g'
	}
	k := 0
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = labels[style][k]
			k++
		}
	}
	return ticks
}

// roundTicks places labelled ticks at the multiples of a step of 1, 2 or
// 5 times a power of ten that fall in [min, max], 3 to 6 of them, and
// unlabelled ones between; nil where the range is empty or its positions
// would not be exact (gonum's own ticks on 1 ± 2.5e-12 landed on
// 0.9999999999979999, and on ±1e-99 off 0: probe 64).
func roundTicks(min, max float64, integer bool) []plot.Tick {
	span := max - min
	if !(span > 0) || math.IsInf(span, 0) {
		return nil
	}
	mag := math.Pow(10, math.Floor(math.Log10(span/5)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; span/step <= 6 {
			break
		}
	}
	if integer {
		step = math.Max(step, 1)
	}
	first, last := math.Ceil(min/step), math.Floor(max/step)
	if !(last-first < 10) || math.Abs(first) > 1e15 || math.Abs(last) > 1e15 {
		return nil
	}
	var ticks []plot.Tick
	for k := first; k <= last; k++ {
		ticks = append(ticks, plot.Tick{Value: k * step, Label: "x"}) // labelled by Ticks
		for j := 1; j < 5; j++ {
			if v := (k*5 + float64(j)) * step / 5; v <= max && (!integer || v == math.Trunc(v)) {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	for j := 1; j < 5; j++ { // minor ticks before the first
		if v := (first*5 - float64(j)) * step / 5; v >= min && (!integer || v == math.Trunc(v)) {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// tickLabel writes v in style ('f' plain decimals, 'g' the shortest
// exponent form) with the fewest digits that keep it within a thousandth
// of step of its value, or within 4 float64 steps of it where a
// thousandth of step is finer than float64 holds v (1.7e9 ± 3e-5, round
// 71 B5: a tick at 1699999999.99998 is 1699999999.9999802 as a float64).
func tickLabel(v, step float64, style byte) string {
	if v == 0 {
		v = 0 // not "-0" (probe 67 B5: a tick at -1 × step × 0)
	}
	tol := math.Max(1e-3*step, 4*ulp(v))
	for d := 0; d <= 17; d++ {
		prec := d
		if style == 'g' {
			prec = d + 1
		}
		s := strconv.FormatFloat(v, style, prec, 64)
		if u, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(u-v) <= tol {
			return s
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// ulp is the spacing of float64 values at v.
func ulp(v float64) float64 {
	v = math.Abs(v)
	return math.Nextafter(v, math.Inf(1)) - v
}

// longest is the length of the longest of labels.
func longest(labels []string) int {
	n := 0
	for _, l := range labels {
		n = max(n, len(l))
	}
	return n
}

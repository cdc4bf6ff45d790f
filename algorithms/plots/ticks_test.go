package plots

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// Probe 63 B1, B2: labels of values that vary little beside their size
// were alike ("1" thrice for 1 ± 1e-7, "1e+06" thrice for 1e6 ± 1e-3), a
// large round value carried decimals ("25000.00"), and a log axis read
// "4.9999999999999996e-06"; probe 64: ticks landed on 0.9999999999979999
// and, over ±1e-99, off 0. Each label reads apart from the others, within
// a thousandth of a step of its value, without rounding noise.
func TestTickLabelsReadApart(t *testing.T) {
	for _, r := range [][2]float64{{1 - 1e-7, 1 + 1e-7}, {1e8 - 1e-4, 1e8 + 1e-4}, {1e6 - 1e-3, 1e6 + 1e-3}, {-123456.789 - 2e-3, -123456.789 + 2e-3},
		{0, 250000}, {0, 1}, {-3, 3}, {1e-9, 3e-9}, {1 - 2.5e-12, 1 + 2.5e-12}, {1e8 - 2e-3, 1e8 + 2e-3}, {-1.3e-99, 1.35e-99},
		{1e12 - 0.03, 1e12 + 0.03}, {1.7e9 - 3e-5, 1.7e9 + 3e-5}} { // round 71 B5
		seen := map[string]bool{}
		var prev float64
		for i, tk := range (readableTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			if seen[tk.Label] {
				t.Errorf("%v: label %q twice", r, tk.Label)
			}
			seen[tk.Label] = true
			v, err := strconv.ParseFloat(tk.Label, 64)
			// a thousandth of the step, or 4 float64 steps where that is
			// finer than float64 holds the tick (1.7e9 ± 3e-5)
			if err != nil || (i > 0 && math.Abs(v-tk.Value) > math.Max(1e-3*math.Abs(tk.Value-prev), 4*ulp(tk.Value))) {
				t.Errorf("%v: label %q for %v", r, tk.Label, tk.Value)
			}
			if _, frac, ok := strings.Cut(tk.Label, "."); ok && !strings.Contains(tk.Label, "e") && len(frac) > 1-int(math.Floor(math.Log10(r[1]-r[0]))) { // probe 64: 0.9999999999979999
				t.Errorf("%v: label %q", r, tk.Label)
			}
			prev = tk.Value
		}
		if len(seen) < 2 {
			t.Errorf("%v: %d labels", r, len(seen))
		}
	}
	for _, tk := range (logTicks{}).Ticks(1e-6, 1e-3) {
		if len(tk.Label) > 6 {
			t.Errorf("log axis label %q", tk.Label)
		}
	}
}

// Probe 63 B1: draws at 1e8 ± 1e-4 were drawn flat on an axis from 5e7 to
// 1.5e8: the axis is fitted to the values.
func TestAxisFitsNarrowValues(t *testing.T) {
	// Round 71 B5: 1e12 ± 0.03 and 1.7e9 ± 3e-5 (80 and 250 float64
	// steps) were drawn flat, taken for equal values.
	for _, r := range [][2]float64{{1e8 - 1e-4, 1e8 + 1e-4}, {1e12 - 0.03, 1e12 + 0.03}, {1.7e9 - 3e-5, 1.7e9 + 3e-5}} {
		fig := Figure{Title: "t", Curves: []Curve{{Name: "a", Points: plotter.XYs{{X: 0, Y: r[0]}, {X: 1, Y: r[1]}}}}}
		p, _, err := fig.layout()
		if err != nil {
			t.Fatal(err)
		}
		p.Add()
		if p.Y.Max-p.Y.Min > 10*(r[1]-r[0]) {
			t.Errorf("%v: y from %v to %v", r, p.Y.Min, p.Y.Max)
		}
	}
}

// Ticks over a range of mixed signs include 0 (probe 64: ±1e-99 had
// 2.7022e-101 in the middle).
func TestTicksIncludeZero(t *testing.T) {
	for _, r := range [][2]float64{{-1.3e-99, 1.35e-99}, {-3, 2.5}, {-1e6, 7e5}} {
		found := false
		for _, tk := range (readableTicks{}).Ticks(r[0], r[1]) {
			found = found || (tk.Label == "0" && tk.Value == 0)
		}
		if !found {
			t.Errorf("%v: no tick at 0", r)
		}
	}
}

// Probe 67 B5: chains of 4 draws were ticked 3, 3.5, 4, 4.5, 5 draws per
// chain, a zero tick was labelled "-0", and the ESS figure of a constant
// dimension was an axis from -1 to 1 draws over ESS 399 to 401.
func TestWholeNumberTicksAndZero(t *testing.T) {
	var labels []string
	for _, tk := range (readableTicks{integer: true}).Ticks(2.8, 5.2) {
		if tk.Value != math.Trunc(tk.Value) {
			t.Errorf("a tick at %v on a whole-number axis", tk.Value)
		}
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if strings.Join(labels, " ") != "3 4 5" {
		t.Errorf("labels %q, want 3 4 5", labels)
	}
	if got := tickLabel(math.Copysign(0, -1), 0.5, 'f'); got != "0" {
		t.Errorf("-0 labelled %q", got)
	}
	f := Figure{Curves: []Curve{{Name: "a", Points: plotter.XYs{{X: 4, Y: 1}, {X: 5, Y: 2}}}}}
	if !f.wholeX() {
		t.Error("draws 4, 5 not read as whole numbers")
	}
	constant := [][]float64{{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}}
	if e := essFigure(constant, "mu"); e.Curves != nil || e.XMin != 0 || e.XMax != 5 || e.YMax != 800 {
		t.Errorf("ESS of constant chains: curves %v, x %v..%v, y %v..%v", e.Curves, e.XMin, e.XMax, e.YMin, e.YMax)
	}
}

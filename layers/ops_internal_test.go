package layers

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestLeakyReLUValues checks the fused activation and its gradient
// elementwise against their definitions, in float64 and float32, including
// infinities (ReLU(−∞) = 0, not NaN) and NaN.
func TestLeakyReLUValues(t *testing.T) {
	inf := math.Inf(1)
	xs := []float64{-inf, -2, -1e-300, 0, 1e-300, 0.5, 3, inf, math.NaN()}
	for _, slope := range []float64{0, 0.05, 0.2} {
		want := func(x float64) float64 {
			if x > 0 || math.IsNaN(x) {
				return x
			}
			if x == 0 || (slope == 0 && x < 0) {
				return 0
			}
			return slope * x
		}
		wantGrad := func(x, g float64) float64 {
			if x > 0 || math.IsNaN(x) { // NaN's sign bit is clear here: factor 1
				return g
			}
			if x == 0 && !math.Signbit(x) { // +0: the sign bit is clear; −0 takes slope
				return g
			}
			if slope == 0 {
				return 0
			}
			return slope * g
		}
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			x := tensor.New(tensor.WithShape(1, len(xs)), tensor.Of(dt))
			g := tensor.New(tensor.WithShape(1, len(xs)), tensor.Of(dt))
			for i, v := range xs {
				if dt == tensor.Float32 {
					x.Data().([]float32)[i], g.Data().([]float32)[i] = float32(v), float32(i+1)
				} else {
					x.Data().([]float64)[i], g.Data().([]float64)[i] = v, float64(i+1)
				}
			}
			y, err := leakyReLU{slope: slope}.Do(x)
			if err != nil {
				t.Fatal(err)
			}
			dy, err := leakyReLUGrad{slope: slope}.Do(x, g)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range xs {
				var got, gotGrad float64
				if dt == tensor.Float32 {
					got, gotGrad = float64(y.(*tensor.Dense).Data().([]float32)[i]), float64(dy.(*tensor.Dense).Data().([]float32)[i])
					v = float64(float32(v))
				} else {
					got, gotGrad = y.(*tensor.Dense).Data().([]float64)[i], dy.(*tensor.Dense).Data().([]float64)[i]
				}
				w, wg := want(v), wantGrad(v, float64(i+1))
				if dt == tensor.Float32 {
					w, wg = float64(float32(w)), float64(float32(wg))
				}
				if !(got == w || math.IsNaN(got) && math.IsNaN(w)) || gotGrad != wg {
					t.Errorf("slope %v, %v, x = %v: value %v (want %v), gradient %v (want %v)", slope, dt, v, got, w, gotGrad, wg)
				}
			}
		}
	}
}

// TestExpTanhOps checks the vectorised exp, exp(−x) and tanh against Go's
// math over a range of arguments with special values. Tolerance: glibc's
// vector functions are within 4 ulp of the correctly rounded result, so a
// relative error of 1e-15 (float64, about 4.5 ulp) and 1e-6 (float32, about
// 8 ulp, as the float32 path rounds once more) must hold.
func TestExpTanhOps(t *testing.T) {
	inf := math.Inf(1)
	xs := []float64{-inf, -800, -50, -3.3, -1, -1e-8, 0, 1e-8, 0.5, 1, 2.7, 20, 88, 700, inf, math.NaN()}
	for i := 0; i < 200; i++ {
		xs = append(xs, -30+0.3*float64(i))
	}
	check := func(name string, got, want, tol float64) {
		t.Helper()
		if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && got != want && math.Abs(got-want) > tol*math.Abs(want)) {
			t.Errorf("%s: %v, want %v (tolerance %g relative)", name, got, want, tol)
		}
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		x := tensor.New(tensor.WithShape(1, len(xs)), tensor.Of(dt))
		for i, v := range xs {
			if dt == tensor.Float32 {
				x.Data().([]float32)[i] = float32(v)
			} else {
				x.Data().([]float64)[i] = v
			}
		}
		for _, c := range []struct {
			name string
			op   interface {
				Do(...G.Value) (G.Value, error)
			}
			f func(float64) float64
		}{
			{"exp", mathOp{fn: fnExp}, math.Exp},
			{"exp(−x)", mathOp{fn: fnExpNeg}, func(v float64) float64 { return math.Exp(-v) }},
			{"tanh", mathOp{fn: fnTanh}, math.Tanh},
		} {
			y, err := c.op.Do(x)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range xs {
				if dt == tensor.Float32 {
					v32 := float64(float32(v))
					check(fmt.Sprintf("%s %v(%v)", dt, c.name, v32), float64(y.(*tensor.Dense).Data().([]float32)[i]), float64(float32(c.f(v32))), 1e-6)
				} else {
					check(fmt.Sprintf("%s %v(%v)", dt, c.name, v), y.(*tensor.Dense).Data().([]float64)[i], c.f(v), 1e-15)
				}
			}
		}
	}
}

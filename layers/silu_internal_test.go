package layers

import (
	"math"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// siluRef is x·σ(x) in Go's math.
func siluRef(x float64) float64 { return x / (1 + math.Exp(-x)) }

// TestSiLUValues checks the fused SiLU and its gradient elementwise: values
// against x/(1 + exp(−x)), gradients against central finite differences of
// it (step 1e-6: error about 1e-10), in float64 and float32, over more
// values than one block of siluBlock, with the gradient written over g
// (aliased, as Gorgonia's registers may be).
func TestSiLUValues(t *testing.T) {
	xs := []float64{-800, -40, -1e-300, 0, 1e-300, 700, math.Inf(1)}
	for i := 0; i < 1200; i++ {
		xs = append(xs, -30+0.05*float64(i))
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		x := tensor.New(tensor.WithShape(1, len(xs)), tensor.Of(dt))
		g := tensor.New(tensor.WithShape(1, len(xs)), tensor.Of(dt))
		at := func(v *tensor.Dense, i int) float64 {
			if dt == tensor.Float32 {
				return float64(v.Data().([]float32)[i])
			}
			return v.Data().([]float64)[i]
		}
		for i, v := range xs {
			if dt == tensor.Float32 {
				x.Data().([]float32)[i], g.Data().([]float32)[i] = float32(v), float32(1+i%3)
			} else {
				x.Data().([]float64)[i], g.Data().([]float64)[i] = v, float64(1+i%3)
			}
		}
		y, err := siLU{}.Do(x)
		if err != nil {
			t.Fatal(err)
		}
		gv := g.Clone().(*tensor.Dense)
		dy, err := siLUGrad{}.UsePreallocDo(g, x, g) // result over g
		if err != nil {
			t.Fatal(err)
		}
		if dy.(*tensor.Dense) != g {
			t.Fatalf("%v: the gradient was not written over g", dt)
		}
		tol, gtol := 1e-15, 1e-9
		if dt == tensor.Float32 {
			tol, gtol = 1e-6, 1e-6
		}
		for i := range xs {
			v := at(x, i)
			want := siluRef(v)
			got := at(y.(*tensor.Dense), i)
			if !(got == want || math.Abs(got-want) <= tol*math.Abs(want)+1e-300) {
				t.Errorf("%v: SiLU(%v) = %v, want %v", dt, v, got, want)
			}
			if math.IsInf(v, 0) {
				continue
			}
			h := 1e-6 * max(1, math.Abs(v))
			fd := (siluRef(v+h) - siluRef(v-h)) / (2 * h)
			wantGrad := at(gv, i) * fd
			if gotGrad := at(dy.(*tensor.Dense), i); math.Abs(gotGrad-wantGrad) > gtol*max(1, math.Abs(wantGrad)) {
				t.Errorf("%v: SiLU'(%v)·%v = %v, finite differences %v", dt, v, at(gv, i), gotGrad, wantGrad)
			}
		}
	}
}

// TestSiLUGraph checks the fused SiLU in a graph against Gorgonia's
// Sigmoid·x (Activation.Apply's): the same values and the same gradient of
// Σ w⊙SiLU(x) with respect to x, to rounding, in float64.
func TestSiLUGraph(t *testing.T) {
	n := 3000
	xv, wv := make([]float64, n), make([]float64, n)
	for i := range xv {
		xv[i] = 12 * math.Sin(float64(i)*0.37)
		wv[i] = math.Cos(float64(i) * 0.11)
	}
	run := func(fused bool) (y, grad []float64) {
		g := G.NewGraph()
		x := G.NewMatrix(g, tensor.Float64, G.WithShape(2, n/2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(2, n/2), tensor.WithBacking(slices.Clone(xv)))))
		w := G.NewMatrix(g, tensor.Float64, G.WithShape(2, n/2), G.WithName("w"), G.WithValue(tensor.New(tensor.WithShape(2, n/2), tensor.WithBacking(slices.Clone(wv)))))
		var s *G.Node
		var err error
		if fused {
			s, err = applyActivation(nil, SiLU, x)
		} else {
			s, err = SiLU.Apply(nil, x)
		}
		if err != nil {
			t.Fatal(err)
		}
		var yv G.Value
		G.Read(s, &yv)
		cost := G.Must(G.Sum(G.Must(G.HadamardProd(s, w))))
		gr, err := G.Grad(cost, x)
		if err != nil {
			t.Fatal(err)
		}
		m := G.NewTapeMachine(g)
		defer m.Close()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(yv.Data().([]float64)), slices.Clone(gr[0].Value().Data().([]float64))
	}
	y1, g1 := run(true)
	y0, g0 := run(false)
	for i := range y0 {
		if math.Abs(y1[i]-y0[i]) > 1e-14*max(1, math.Abs(y0[i])) || math.Abs(g1[i]-g0[i]) > 1e-14*max(1, math.Abs(g0[i])) {
			t.Fatalf("x = %v: fused SiLU %v, gradient %v; Gorgonia's %v, %v", xv[i], y1[i], g1[i], y0[i], g0[i])
		}
	}
}

package layers

import (
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// squeeze and unsqueeze in the graph move coordinates as squeezeIndex says
// (the index map the image flow's masks are built with), and unsqueeze
// undoes squeeze.
func TestImageSqueezeIndex(t *testing.T) {
	for _, c := range []struct {
		s ImageShape
		q int
	}{{ImageShape{1, 4, 4}, 1}, {ImageShape{2, 4, 8}, 2}, {ImageShape{3, 6, 2}, 1}} {
		d := c.s.Dim()
		v := make([]float64, 2*d)
		for i := range v {
			v[i] = float64(i)
		}
		g := G.NewGraph()
		x := G.NewMatrix(g, tensor.Float64, G.WithShape(2, d), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(2, d), tensor.WithBacking(v))))
		h, err := ToImage(x, c.s)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < c.q; i++ {
			if h, err = squeeze(h); err != nil {
				t.Fatal(err)
			}
		}
		sq, err := G.Reshape(h, tensor.Shape{2, d})
		if err != nil {
			t.Fatal(err)
		}
		back := h
		for i := 0; i < c.q; i++ {
			if back, err = unsqueeze(back); err != nil {
				t.Fatal(err)
			}
		}
		if back, err = Flatten(back); err != nil {
			t.Fatal(err)
		}
		var sqV, backV G.Value
		G.Read(sq, &sqV)
		G.Read(back, &backV)
		m := G.NewTapeMachine(g)
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		m.Close()
		idx, shape := squeezeIndex(c.s, c.q)
		if want := (ImageShape{c.s.C << (2 * c.q), c.s.H >> c.q, c.s.W >> c.q}); shape != want {
			t.Errorf("%v squeezed %d times: shape %v, want %v", c.s, c.q, shape, want)
		}
		got := sqV.Data().([]float64)
		for r := 0; r < 2; r++ {
			for k, i := range idx {
				if got[r*d+k] != v[r*d+i] {
					t.Fatalf("%v squeezed %d times: coordinate %d is x[%v], squeezeIndex says x[%d]", c.s, c.q, k, got[r*d+k]-float64(r*d), i)
				}
			}
		}
		if !slices.Equal(backV.Data().([]float64), v) {
			t.Errorf("%v: unsqueeze(squeeze(x)) ≠ x", c.s)
		}
	}
}

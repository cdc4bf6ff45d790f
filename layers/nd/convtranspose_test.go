package nd

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// convTransposeRef is a direct transposed convolution loop: every input
// element times every tap added to the output element it meets.
func convTransposeRef(c convCase, x, w, b input) ([]float64, []int) {
	d := len(c.strides)
	cg := c.xs[1] / c.group
	mg := c.ws[1]
	out := []int{c.xs[0], mg * c.group}
	for a := 0; a < d; a++ {
		out = append(out, c.strides[a]*(c.xs[a+2]-1)+c.outPad[a]+c.dil[a]*(c.ws[a+2]-1)+1-c.pb[a]-c.pe[a])
	}
	y := make([]float64, prod(out))
	if c.bias {
		for f := range y {
			y[f] = b.vals[unravel(f, out)[1]]
		}
	}
	for f, v := range x.vals {
		i := unravel(f, c.xs)
		g := i[1] / cg
		for m := 0; m < mg; m++ {
			taps(c.ws[2:], func(t []int) {
				pos := []int{i[0], g*mg + m}
				for a := 0; a < d; a++ {
					p := i[a+2]*c.strides[a] - c.pb[a] + t[a]*c.dil[a]
					if p < 0 || p >= out[a+2] {
						return
					}
					pos = append(pos, p)
				}
				y[ravel(pos, out)] += v * w.vals[ravel(append([]int{i[1], m}, t...), c.ws)]
			})
		}
	}
	return y, out
}

var convTransposeCases = []convCase{
	{xs: []int{2, 4, 3, 4}, ws: []int{4, 3, 3, 2}, strides: []int{2, 3}, dil: []int{1, 2}, pb: []int{1, 0}, pe: []int{0, 2}, outPad: []int{1, 2}, group: 2, bias: true},
	{xs: []int{2, 3, 5}, ws: []int{3, 2, 4}, strides: []int{2}, dil: []int{1}, pb: []int{1}, pe: []int{2}, outPad: []int{1}, group: 1},
	{xs: []int{2, 3, 4, 4}, ws: []int{3, 5, 1, 1}, strides: []int{1, 1}, dil: []int{1, 1}, pb: []int{0, 0}, pe: []int{0, 0}, outPad: []int{0, 0}, group: 1, bias: true},
	{xs: []int{1, 2, 2, 3, 2}, ws: []int{2, 2, 2, 2, 3}, strides: []int{2, 1, 2}, dil: []int{1, 2, 1}, pb: []int{0, 1, 1}, pe: []int{1, 0, 0}, outPad: []int{1, 0, 1}, group: 1, bias: true},
	{xs: []int{1, 2, 3, 3}, ws: []int{2, 1, 3, 3}, strides: []int{2, 2}, dil: []int{1, 1}, pb: []int{1, 1}, pe: []int{1, 1}, outPad: []int{1, 1}, group: 2},
	{xs: []int{3, 2, 5, 4}, ws: []int{2, 3, 3, 3}, strides: []int{1, 1}, dil: []int{1, 1}, pb: []int{1, 1}, pe: []int{1, 1}, outPad: []int{0, 0}, group: 1, bias: true},
	{xs: []int{2, 2, 4, 5}, ws: []int{2, 2, 3, 2}, strides: []int{1, 1}, dil: []int{2, 1}, pb: []int{0, 0}, pe: []int{0, 0}, outPad: []int{0, 0}, group: 1},
}

func TestConvTransposeValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, c := range convTransposeCases {
		op := ConvTranspose{Strides: c.strides, Dilations: c.dil, PadsBegin: c.pb, PadsEnd: c.pe, OutputPadding: c.outPad, Group: c.group, Bias: c.bias}
		ins := c.inputs(rng)
		got := checkOp(t, op, gradTol, ins...)
		var b input
		if c.bias {
			b = ins[2]
		}
		want, _ := convTransposeRef(c, ins[0], ins[1], b)
		wantClose(t, op.String(), got, want, 1e-12)
	}
}

func TestConvTransposeErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(1, 4, 3, 3), tensor.Of(tensor.Float64))
	w := tensor.New(tensor.WithShape(4, 2, 3, 3), tensor.Of(tensor.Float64))
	ok := ConvTranspose{Strides: []int{1, 1}, Dilations: []int{1, 1}, PadsBegin: []int{0, 0}, PadsEnd: []int{0, 0}, OutputPadding: []int{0, 0}, Group: 2}
	if _, err := Eval(ok, x, w); err != nil {
		t.Fatal(err)
	}
	bad := []ConvTranspose{ok, ok, ok, ok}
	bad[0].Group = 3
	bad[1].OutputPadding = nil
	bad[2].PadsBegin = []int{3, 0}
	bad[2].PadsEnd = []int{3, 0}
	bad[3].OutputPadding = []int{-1, 0}
	for _, op := range bad {
		if _, err := Eval(op, x, w); err == nil {
			t.Errorf("%v: no error", op)
		}
	}
}

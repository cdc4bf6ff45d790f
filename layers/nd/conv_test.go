package nd

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// convCase is a convolution test: shapes of x and w, attributes.
type convCase struct {
	xs, ws               []int
	strides, dil, pb, pe []int
	outPad               []int // ConvTranspose only
	group                int
	bias                 bool
}

// taps calls f with each kernel tap of shape k.
func taps(k []int, f func(t []int)) {
	for i := 0; i < prod(k); i++ {
		f(unravel(i, k))
	}
}

// convRef is a direct convolution loop.
func convRef(c convCase, x, w, b input) ([]float64, []int) {
	d := len(c.strides)
	m, cg := c.ws[0], c.ws[1]
	mg := m / c.group
	out := []int{c.xs[0], m}
	for a := 0; a < d; a++ {
		out = append(out, (c.xs[a+2]+c.pb[a]+c.pe[a]-c.dil[a]*(c.ws[a+2]-1)-1)/c.strides[a]+1)
	}
	y := make([]float64, prod(out))
	for f := range y {
		o := unravel(f, out)
		g := o[1] / mg
		if c.bias {
			y[f] = b.vals[o[1]]
		}
		for ci := 0; ci < cg; ci++ {
			taps(c.ws[2:], func(t []int) {
				pos := []int{o[0], g*cg + ci}
				for a := 0; a < d; a++ {
					p := o[a+2]*c.strides[a] - c.pb[a] + t[a]*c.dil[a]
					if p < 0 || p >= c.xs[a+2] {
						return
					}
					pos = append(pos, p)
				}
				y[f] += x.vals[ravel(pos, c.xs)] * w.vals[ravel(append([]int{o[1], ci}, t...), c.ws)]
			})
		}
	}
	return y, out
}

func (c convCase) inputs(rng *rand.Rand) []input {
	ins := []input{randInput(rng, c.xs...), randInput(rng, c.ws...)}
	if c.bias {
		n := c.ws[0]
		if c.outPad != nil {
			n = c.ws[1] * c.group
		}
		ins = append(ins, randInput(rng, n))
	}
	return ins
}

var convCases = []convCase{
	{xs: []int{2, 4, 7, 6}, ws: []int{6, 2, 3, 2}, strides: []int{2, 1}, dil: []int{1, 2}, pb: []int{1, 0}, pe: []int{2, 1}, group: 2, bias: true},
	{xs: []int{3, 2, 9}, ws: []int{4, 2, 3}, strides: []int{2}, dil: []int{1}, pb: []int{1}, pe: []int{1}, group: 1},
	{xs: []int{1, 2, 4, 5, 3}, ws: []int{4, 1, 2, 3, 2}, strides: []int{1, 2, 1}, dil: []int{1, 1, 2}, pb: []int{1, 0, 1}, pe: []int{0, 1, 1}, group: 2, bias: true},
	{xs: []int{2, 3, 5, 5}, ws: []int{4, 3, 1, 1}, strides: []int{1, 1}, dil: []int{1, 1}, pb: []int{0, 0}, pe: []int{0, 0}, group: 1, bias: true},
	{xs: []int{2, 3, 6, 5}, ws: []int{3, 1, 3, 3}, strides: []int{1, 2}, dil: []int{1, 1}, pb: []int{1, 1}, pe: []int{1, 1}, group: 3},
	{xs: []int{1, 1, 4, 4}, ws: []int{2, 1, 2, 2}, strides: []int{3, 3}, dil: []int{1, 1}, pb: []int{0, 0}, pe: []int{0, 0}, group: 1},
	// Stride 1 with lines of the input's width (im2col by shifted runs).
	{xs: []int{3, 2, 6, 5}, ws: []int{4, 2, 3, 3}, strides: []int{1, 1}, dil: []int{1, 1}, pb: []int{1, 1}, pe: []int{1, 1}, group: 1, bias: true},
	{xs: []int{2, 2, 7, 6}, ws: []int{3, 2, 2, 3}, strides: []int{1, 1}, dil: []int{2, 2}, pb: []int{0, 2}, pe: []int{2, 2}, group: 1},
	{xs: []int{2, 2, 5}, ws: []int{2, 2, 3}, strides: []int{1}, dil: []int{1}, pb: []int{2}, pe: []int{0}, group: 1},
	{xs: []int{1, 2, 3, 4, 5}, ws: []int{2, 2, 3, 3, 3}, strides: []int{1, 1, 1}, dil: []int{1, 1, 1}, pb: []int{1, 1, 1}, pe: []int{1, 1, 1}, group: 1, bias: true},
	{xs: []int{1, 2, 3, 4, 5}, ws: []int{2, 2, 2, 3, 3}, strides: []int{2, 1, 1}, dil: []int{1, 1, 1}, pb: []int{0, 1, 1}, pe: []int{0, 1, 1}, group: 1},
	// Kernel wider than the input along an axis, within the padding.
	{xs: []int{1, 1, 2, 3}, ws: []int{1, 1, 4, 3}, strides: []int{1, 1}, dil: []int{1, 1}, pb: []int{2, 1}, pe: []int{1, 1}, group: 1},
}

func TestConvValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, c := range convCases {
		op := Conv{Strides: c.strides, Dilations: c.dil, PadsBegin: c.pb, PadsEnd: c.pe, Group: c.group, Bias: c.bias}
		ins := c.inputs(rng)
		got := checkOp(t, op, gradTol, ins...)
		var b input
		if c.bias {
			b = ins[2]
		}
		want, _ := convRef(c, ins[0], ins[1], b)
		wantClose(t, op.String(), got, want, 1e-12)
	}
}

// TestConvParallel checks the convolutions and pooling with the work
// split between goroutines.
func TestConvParallel(t *testing.T) {
	defer func(w int) { parallelWork = w }(parallelWork)
	parallelWork = 1
	rng := rand.New(rand.NewPCG(27, 28))
	c := convCases[0]
	c.xs = []int{5, 4, 7, 6}
	op := Conv{Strides: c.strides, Dilations: c.dil, PadsBegin: c.pb, PadsEnd: c.pe, Group: c.group, Bias: c.bias}
	ins := c.inputs(rng)
	got := checkOp(t, op, gradTol, ins...)
	want, _ := convRef(c, ins[0], ins[1], ins[2])
	wantClose(t, op.String(), got, want, 1e-12)
	ct := convTransposeCases[0]
	ct.xs = []int{5, 4, 3, 4}
	opT := ConvTranspose{Strides: ct.strides, Dilations: ct.dil, PadsBegin: ct.pb, PadsEnd: ct.pe, OutputPadding: ct.outPad, Group: ct.group, Bias: ct.bias}
	ins = ct.inputs(rng)
	got = checkOp(t, opT, gradTol, ins...)
	want, _ = convTransposeRef(ct, ins[0], ins[1], ins[2])
	wantClose(t, opT.String(), got, want, 1e-12)
	x := randInput(rng, 3, 2, 6, 7)
	for _, kind := range []PoolKind{AvgPool, MaxPool} {
		op := Pool{Kind: kind, Kernel: []int{3, 3}, Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{1, 1}, PadsEnd: []int{1, 1}, CeilMode: true}
		got := checkOp(t, op, gradTol, x)
		want, _ := poolRef(op, x)
		wantClose(t, op.String(), got, want, 1e-14)
	}
}

func TestConvErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(1, 4, 5, 5), tensor.Of(tensor.Float64))
	w := tensor.New(tensor.WithShape(6, 2, 3, 3), tensor.Of(tensor.Float64))
	ok := Conv{Strides: []int{1, 1}, Dilations: []int{1, 1}, PadsBegin: []int{0, 0}, PadsEnd: []int{0, 0}, Group: 2}
	if _, err := Eval(ok, x, w); err != nil {
		t.Fatal(err)
	}
	bad := []Conv{ok, ok, ok, ok}
	bad[0].Group = 4
	bad[1].Strides = []int{0, 1}
	bad[2].Dilations = []int{3, 1}
	bad[3].PadsBegin = []int{0}
	for _, op := range bad {
		if _, err := Eval(op, x, w); err == nil {
			t.Errorf("%v: no error", op)
		}
	}
	if _, err := Eval(ok, x, w, tensor.New(tensor.WithShape(5), tensor.Of(tensor.Float64))); err == nil {
		t.Error("bias of the wrong size: no error")
	}
}

// TestConvGraph checks Type and the gradient ops' shapes in a graph with
// float32 values.
func TestConvGraph(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 8, 8), G.WithName("x"), G.WithInit(G.GlorotN(1)))
	w := G.NewTensor(g, tensor.Float32, 4, G.WithShape(5, 3, 3, 3), G.WithName("w"), G.WithInit(G.GlorotN(1)))
	b := G.NewVector(g, tensor.Float32, G.WithShape(5), G.WithName("b"), G.WithInit(G.Zeroes()))
	op := Conv{Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{1, 1}, PadsEnd: []int{1, 1}, Group: 1, Bias: true}
	y, err := Apply(op, x, w, b)
	if err != nil {
		t.Fatal(err)
	}
	cost := G.Must(G.Sum(y))
	grads, err := G.Grad(cost, x, w, b)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	for i, n := range []*G.Node{x, w, b} {
		if !grads[i].Shape().Eq(n.Shape()) || grads[i].Value().Dtype() != tensor.Float32 {
			t.Errorf("gradient %d: %v %v", i, grads[i].Shape(), grads[i].Value().Dtype())
		}
	}
}

func benchConv(b *testing.B, xs, ws []int, pad int, backward bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	x32, w32 := dense32(randInput(rng, xs...)), dense32(randInput(rng, ws...))
	op := Conv{Strides: []int{1, 1}, Dilations: []int{1, 1}, PadsBegin: []int{pad, pad}, PadsEnd: []int{pad, pad}, Group: 1}
	y, err := Eval(op, x32, w32)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := op.dims(shapeOf(x32), shapeOf(w32), nil)
	dx := convGrad{kind: convGradData, dims: c}
	dw := convGrad{kind: convGradFilter, dims: c}
	gx, _ := dx.Do(y, w32)
	gw, _ := dw.Do(x32, y)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op.UsePreallocDo(y, x32, w32)
		if backward {
			dx.UsePreallocDo(gx, y, w32)
			dw.UsePreallocDo(gw, x32, y)
		}
	}
}

// Layers of a small convolutional network on MNIST at batch 64, float32.
func BenchmarkConv1to32Forward(b *testing.B) {
	benchConv(b, []int{64, 1, 28, 28}, []int{32, 1, 3, 3}, 1, false)
}
func BenchmarkConv1to32Train(b *testing.B) {
	benchConv(b, []int{64, 1, 28, 28}, []int{32, 1, 3, 3}, 1, true)
}
func BenchmarkConv32to64Forward(b *testing.B) {
	benchConv(b, []int{64, 32, 14, 14}, []int{64, 32, 3, 3}, 1, false)
}
func BenchmarkConv32to64Train(b *testing.B) {
	benchConv(b, []int{64, 32, 14, 14}, []int{64, 32, 3, 3}, 1, true)
}

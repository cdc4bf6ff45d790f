package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// poolOutSize is PyTorch's pooling_output_shape.
func poolOutSize(in, k, s, d, pb, pe int, ceil bool) int {
	num := in + pb + pe - d*(k-1) - 1
	if ceil {
		num += s - 1
	}
	out := num/s + 1
	if ceil && (out-1)*s >= in+pb {
		out--
	}
	return out
}

// poolRef pools naively: per output, the window's taps, PyTorch's divisors
// (hend = min(hstart + k, in + padEnd) before clipping to the input).
func poolRef(op Pool, x input) ([]float64, []int) {
	d := len(op.Kernel)
	out := []int{x.shape[0], x.shape[1]}
	for a := 0; a < d; a++ {
		out = append(out, poolOutSize(x.shape[a+2], op.Kernel[a], op.Strides[a], op.Dilations[a], op.PadsBegin[a], op.PadsEnd[a], op.CeilMode))
	}
	y := make([]float64, prod(out))
	for f := range y {
		o := unravel(f, out)
		best, sum, n, padded := math.Inf(-1), 0.0, 1, 1
		for a := 0; a < d; a++ {
			start := o[a+2]*op.Strides[a] - op.PadsBegin[a]
			end := min(start+op.Dilations[a]*(op.Kernel[a]-1)+1, x.shape[a+2]+op.PadsEnd[a])
			padded *= (end - start + op.Dilations[a] - 1) / op.Dilations[a]
		}
		taps(op.Kernel, func(t []int) {
			c := []int{o[0], o[1]}
			for a := 0; a < d; a++ {
				p := o[a+2]*op.Strides[a] - op.PadsBegin[a] + t[a]*op.Dilations[a]
				if p < 0 || p >= x.shape[a+2] {
					return
				}
				c = append(c, p)
			}
			v := x.vals[ravel(c, x.shape)]
			best = math.Max(best, v)
			sum += v
		})
		n = 0
		taps(op.Kernel, func(t []int) {
			for a := 0; a < d; a++ {
				p := o[a+2]*op.Strides[a] - op.PadsBegin[a] + t[a]*op.Dilations[a]
				if p < 0 || p >= x.shape[a+2] {
					return
				}
			}
			n++
		})
		switch {
		case op.Kind == MaxPool:
			y[f] = best
		case op.CountIncludePad:
			y[f] = sum / float64(padded)
		case n > 0:
			y[f] = sum / float64(n)
		}
	}
	return y, out
}

func TestPoolValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct {
		xs []int
		op Pool
	}{
		{[]int{2, 3, 6, 6}, Pool{Kind: MaxPool, Kernel: []int{2, 2}, Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{0, 0}, PadsEnd: []int{0, 0}}},
		{[]int{2, 2, 7, 6}, Pool{Kind: MaxPool, Kernel: []int{3, 2}, Strides: []int{2, 2}, Dilations: []int{1, 2}, PadsBegin: []int{1, 0}, PadsEnd: []int{1, 1}, CeilMode: true}},
		{[]int{2, 2, 6, 7}, Pool{Kind: AvgPool, Kernel: []int{3, 3}, Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{1, 1}, PadsEnd: []int{1, 1}, CountIncludePad: true, CeilMode: true}},
		{[]int{2, 2, 6, 7}, Pool{Kind: AvgPool, Kernel: []int{3, 3}, Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{1, 1}, PadsEnd: []int{1, 1}, CeilMode: true}},
		{[]int{1, 2, 5, 6}, Pool{Kind: AvgPool, Kernel: []int{2, 3}, Strides: []int{1, 2}, Dilations: []int{2, 1}, PadsBegin: []int{0, 1}, PadsEnd: []int{1, 0}, CountIncludePad: true}},
		{[]int{3, 2, 9}, Pool{Kind: AvgPool, Kernel: []int{4}, Strides: []int{3}, Dilations: []int{1}, PadsBegin: []int{2}, PadsEnd: []int{1}, CountIncludePad: true, CeilMode: true}},
		{[]int{3, 2, 9}, Pool{Kind: MaxPool, Kernel: []int{3}, Strides: []int{2}, Dilations: []int{1}, PadsBegin: []int{1}, PadsEnd: []int{1}}},
		{[]int{1, 2, 4, 5, 3}, Pool{Kind: AvgPool, Kernel: []int{2, 3, 2}, Strides: []int{2, 1, 1}, Dilations: []int{1, 1, 1}, PadsBegin: []int{0, 1, 1}, PadsEnd: []int{1, 1, 0}, CeilMode: true}},
		{[]int{1, 2, 4, 5, 3}, Pool{Kind: MaxPool, Kernel: []int{2, 2, 2}, Strides: []int{2, 2, 2}, Dilations: []int{1, 1, 1}, PadsBegin: []int{0, 0, 0}, PadsEnd: []int{0, 0, 0}, CeilMode: true}},
		{[]int{2, 3, 4, 4}, Pool{Kind: AvgPool, Kernel: []int{4, 4}, Strides: []int{1, 1}, Dilations: []int{1, 1}, PadsBegin: []int{0, 0}, PadsEnd: []int{0, 0}}},
	} {
		x := randInput(rng, c.xs...)
		got := checkOp(t, c.op, gradTol, x)
		want, _ := poolRef(c.op, x)
		wantClose(t, c.op.String(), got, want, 1e-14)
	}
}

// TestPoolCeilDivisors checks AvgPool's divisors at the ends of ceil-mode
// outputs on an input of ones against values worked out by hand from
// PyTorch's avg_pool2d.
func TestPoolCeilDivisors(t *testing.T) {
	ones := func(n int) *tensor.Dense {
		v := make([]float64, n*n)
		for i := range v {
			v[i] = 1
		}
		return tensor.New(tensor.WithShape(1, 1, n, n), tensor.WithBacking(v))
	}
	op := Pool{Kind: AvgPool, Kernel: []int{3, 3}, Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{1, 1}, PadsEnd: []int{1, 1}, CountIncludePad: true, CeilMode: true}
	// 6 wide: 4 windows starting at -1, 1, 3, 5; the last covers 5 (in),
	// 6 (padding) and 7 (past the padding): divisor 2 along that axis.
	y, err := Eval(op, ones(6))
	if err != nil {
		t.Fatal(err)
	}
	row := []float64{2.0 / 3, 1, 1, 1.0 / 2}
	var want []float64
	for _, r := range row {
		for _, c := range row {
			want = append(want, r*c)
		}
	}
	wantClose(t, "include pad", y.Data().([]float64), want, 1e-15)
	op.CountIncludePad = false
	y, _ = Eval(op, ones(6))
	for i, v := range y.Data().([]float64) {
		if math.Abs(v-1) > 1e-15 {
			t.Fatalf("exclude pad: value %d = %v, want 1", i, v)
		}
	}
	// A last window wholly in the end padding is dropped: 3 wide, kernel
	// 1, stride 2, pads 1: windows at -1 and 1 only.
	drop := Pool{Kind: AvgPool, Kernel: []int{1, 1}, Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{1, 1}, PadsEnd: []int{1, 1}, CeilMode: true}
	if s, err := drop.InferShape(tensor.Shape{1, 1, 3, 3}); err != nil || !s.Eq(tensor.Shape{1, 1, 2, 2}) {
		t.Fatalf("ceil mode shape %v (%v), want (1, 1, 2, 2)", s, err)
	}
}

func TestMaxPoolFirstMaximum(t *testing.T) {
	x := tensor.New(tensor.WithShape(1, 1, 1, 4), tensor.WithBacking([]float64{3, 3, 1, 3}))
	op := Pool{Kind: MaxPool, Kernel: []int{1, 4}, Strides: []int{1, 1}, Dilations: []int{1, 1}, PadsBegin: []int{0, 0}, PadsEnd: []int{0, 0}}
	g := tensor.New(tensor.WithShape(1, 1, 1, 1), tensor.WithBacking([]float64{1}))
	y, err := Eval(op, x)
	if err != nil {
		t.Fatal(err)
	}
	dx, err := poolGrad{op: op, x: x.Shape().Clone()}.Do(x, y, g)
	if err != nil {
		t.Fatal(err)
	}
	wantClose(t, "max gradient", dx.(*tensor.Dense).Data().([]float64), []float64{1, 0, 0, 0}, 0)
}

func TestPoolErrors(t *testing.T) {
	x := tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.Of(tensor.Float64))
	ok := Pool{Kind: MaxPool, Kernel: []int{2, 2}, Strides: []int{1, 1}, Dilations: []int{1, 1}, PadsBegin: []int{0, 0}, PadsEnd: []int{0, 0}}
	bad := []Pool{ok, ok, ok, ok, ok}
	bad[0].Kernel = []int{4, 2}
	bad[1].Strides = []int{0, 1}
	bad[2].Kind = PoolKind(5)
	bad[3].PadsEnd = []int{0}
	bad[4].Kernel = []int{2}
	for _, op := range bad {
		if _, err := Eval(op, x); err == nil {
			t.Errorf("%v: no error", op)
		}
	}
}

func BenchmarkMaxPoolTrain(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := dense32(randInput(rng, 64, 32, 28, 28))
	op := Pool{Kind: MaxPool, Kernel: []int{2, 2}, Strides: []int{2, 2}, Dilations: []int{1, 1}, PadsBegin: []int{0, 0}, PadsEnd: []int{0, 0}}
	y, _ := Eval(op, x)
	gop := poolGrad{op: op, x: x.Shape().Clone()}
	dx, _ := gop.Do(x, y, y)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op.UsePreallocDo(y, x)
		gop.UsePreallocDo(dx, x, y, y)
	}
}

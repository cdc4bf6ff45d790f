package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// reduceRef reduces x along axes (none: all) by combining the elements of
// each group with f and finishing with fin, keeping the reduced axes.
func reduceRef(x input, axes []int, f func(vs []float64) float64) []float64 {
	keep := append([]int(nil), x.shape...)
	for a := range keep {
		if len(axes) == 0 || containsInt(axes, a) {
			keep[a] = 1
		}
	}
	groups := make([][]float64, prod(keep))
	for i, v := range x.vals {
		c := unravel(i, x.shape)
		for a := range c {
			if keep[a] == 1 {
				c[a] = 0
			}
		}
		j := ravel(c, keep)
		groups[j] = append(groups[j], v)
	}
	out := make([]float64, len(groups))
	for j, g := range groups {
		out[j] = f(g)
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// reduceRefs are the reductions by definition.
var reduceRefs = map[ReduceKind]func(vs []float64) float64{
	ReduceSum: func(vs []float64) float64 { return fold(vs, 0, func(a, v float64) float64 { return a + v }) },
	ReduceMean: func(vs []float64) float64 {
		return fold(vs, 0, func(a, v float64) float64 { return a + v }) / float64(len(vs))
	},
	ReduceMax:  func(vs []float64) float64 { return fold(vs, math.Inf(-1), math.Max) },
	ReduceMin:  func(vs []float64) float64 { return fold(vs, math.Inf(1), math.Min) },
	ReduceProd: func(vs []float64) float64 { return fold(vs, 1, func(a, v float64) float64 { return a * v }) },
	ReduceLogSumExp: func(vs []float64) float64 {
		return math.Log(fold(vs, 0, func(a, v float64) float64 { return a + math.Exp(v) }))
	},
	ReduceSumSquare: func(vs []float64) float64 { return fold(vs, 0, func(a, v float64) float64 { return a + v*v }) },
	ReduceL1:        func(vs []float64) float64 { return fold(vs, 0, func(a, v float64) float64 { return a + math.Abs(v) }) },
	ReduceL2: func(vs []float64) float64 {
		return math.Sqrt(fold(vs, 0, func(a, v float64) float64 { return a + v*v }))
	},
	ReduceLogSum: func(vs []float64) float64 { return math.Log(fold(vs, 0, func(a, v float64) float64 { return a + v })) },
}

func fold(vs []float64, init float64, f func(a, v float64) float64) float64 {
	for _, v := range vs {
		init = f(init, v)
	}
	return init
}

func TestReduceValuesAndGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct {
		shape []int
		axes  []int
	}{
		{[]int{2, 3, 4}, nil},
		{[]int{2, 3, 4}, []int{1}},
		{[]int{2, 3, 4}, []int{0, 2}},
		{[]int{2, 3, 4}, []int{2}},
		{[]int{2, 3, 4}, []int{0, 1, 2}},
		{[]int{5}, []int{0}},
		{[]int{1}, nil},
		{[]int{3, 1, 2}, []int{1}},
		{[]int{2, 3, 2, 2}, []int{1, 3}},
	} {
		for k := ReduceSum; k <= ReduceLogSum; k++ {
			for _, keep := range []bool{false, true} {
				x := randInput(rng, c.shape...)
				if k == ReduceLogSum {
					x = posInput(rng, c.shape...)
				} else if k == ReduceL1 || k == ReduceL2 {
					x = awayInput(rng, c.shape...)
				}
				op := Reduce{Kind: k, Axes: c.axes, KeepDims: keep, Rank: len(c.shape)}
				got := checkOp(t, op, smoothTol, x)
				wantClose(t, op.String(), got, reduceRef(x, c.axes, reduceRefs[k]), 1e-14)
			}
		}
	}
}

func TestReduceShapes(t *testing.T) {
	for _, c := range []struct {
		op       Reduce
		in, want []int
	}{
		{Reduce{Axes: []int{1}, Rank: 3}, []int{2, 3, 4}, []int{2, 4}},
		{Reduce{Axes: []int{1}, KeepDims: true}, []int{2, 3, 4}, []int{2, 1, 4}},
		{Reduce{Rank: 3}, []int{2, 3, 4}, []int{1}},
		{Reduce{KeepDims: true}, []int{2, 3, 4}, []int{1, 1, 1}},
		{Reduce{Axes: []int{0}, Rank: 1}, []int{5}, []int{1}},
		{Reduce{Axes: []int{0, 1}, Rank: 3}, []int{2, 1, 4}, []int{4}},
	} {
		s, err := c.op.InferShape(tensor.Shape(c.in))
		if err != nil || !s.Eq(tensor.Shape(c.want)) {
			t.Errorf("%v of %v: %v %v, want %v", c.op, c.in, s, err, c.want)
		}
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, len(c.in), G.WithShape(c.in...), G.WithName("x"))
		if y, err := Apply(c.op, x); err != nil || !y.Shape().Eq(tensor.Shape(c.want)) || y.Dims() != len(c.want) {
			t.Errorf("%v of %v applied: %v", c.op, c.in, err)
		}
	}
	for _, op := range []Reduce{
		{Axes: []int{3}, Rank: 3}, {Axes: []int{1, 1}, Rank: 3}, {Axes: []int{2, 1}, Rank: 3},
		{Axes: []int{-1}, Rank: 3}, {Axes: []int{1}}, {Axes: []int{1}, Rank: 2}, {Kind: 99, Rank: 3},
	} {
		if _, err := op.InferShape(tensor.Shape{2, 3, 4}); err == nil {
			t.Errorf("%v of (2, 3, 4) accepted", op)
		}
	}
}

// TestReduceEdges checks ties, zeros and infinities.
func TestReduceEdges(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		k        ReduceKind
		x        []float64
		y        float64
		dx       []float64
		checkGrd bool
	}{
		{ReduceMax, []float64{1, 3, 3, 2}, 3, []float64{0, 0.5, 0.5, 0}, true},
		{ReduceMin, []float64{1, 1, 1, 2}, 1, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3, 0}, true},
		{ReduceMax, []float64{1, nan, 3}, nan, []float64{0, 0, 0}, true},
		{ReduceMin, []float64{1, nan, -3}, nan, nil, false},
		{ReduceMax, []float64{-inf, -inf}, -inf, nil, false},
		{ReduceProd, []float64{2, 0, 3}, 0, []float64{0, 6, 0}, true},
		{ReduceProd, []float64{2, 0, 0}, 0, []float64{0, 0, 0}, true},
		{ReduceProd, []float64{2, 4, 3}, 24, []float64{12, 6, 8}, true},
		{ReduceLogSumExp, []float64{1000, 1000}, 1000 + math.Ln2, []float64{0.5, 0.5}, true},
		{ReduceLogSumExp, []float64{-inf, -inf}, -inf, nil, false},
		{ReduceLogSumExp, []float64{inf, 1}, inf, nil, false},
		{ReduceLogSumExp, []float64{nan, 1}, nan, nil, false},
		{ReduceL2, []float64{0, 0}, 0, []float64{0, 0}, true},
		{ReduceL2, []float64{3, 4}, 5, []float64{0.6, 0.8}, true},
		{ReduceL1, []float64{0, -2, 3}, 5, []float64{0, -1, 1}, true},
		{ReduceMean, []float64{1, 2, 6}, 3, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, true},
		{ReduceLogSum, []float64{1, 3}, math.Log(4), []float64{0.25, 0.25}, true},
		{ReduceSum, []float64{inf, 1}, inf, nil, false},
		{ReduceSumSquare, []float64{1, -2}, 5, []float64{2, -4}, true},
	} {
		op := Reduce{Kind: c.k, Rank: 1}
		x := vals([]int{len(c.x)}, c.x...)
		y, s := eval64(t, op, x)
		if !s.Eq(tensor.Shape{1}) {
			t.Fatalf("%v: shape %v", op, s)
		}
		sameVals(t, op.String(), y, []float64{c.y})
		if c.checkGrd {
			dx, _ := eval64(t, reduceGrad{op: op, in: tensor.Shape{len(c.x)}}, x, vals([]int{1}, y...), vals([]int{1}, 1))
			wantClose(t, op.String()+" gradient", dx, c.dx, 1e-12) // LogSumExp: e^(x−y) with y ≈ 1000 rounded
		}
	}
}

// TestReduceProdZeroGradient checks Prod's gradient with zeros against
// finite differences (the product is linear in each element).
func TestReduceProdZeroGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	x := randInput(rng, 3, 4)
	x.vals[1], x.vals[5], x.vals[6] = 0, 0, 0 // one zero in column 1, two in row 1
	for _, axes := range [][]int{{0}, {1}, nil} {
		checkOp(t, Reduce{Kind: ReduceProd, Axes: axes, Rank: 2}, gradTol, x)
	}
}

func TestReduceGraph32(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for k := ReduceSum; k <= ReduceLogSum; k++ {
		checkGraph32(t, Reduce{Kind: k, Axes: []int{1}, Rank: 3}, posInput(rng, 2, 3, 4))
		checkGraph32(t, Reduce{Kind: k, KeepDims: true}, posInput(rng, 2, 3))
	}
}

// TestReduceLp checks the Lp norm's values against its definition and its
// gradient against finite differences (elements kept away from 0, where
// |x|ᵖ is not differentiable for p ≤ 1), at orders PyTorch's vector_norm
// exports as a chain (probe 58 A1).
func TestReduceLp(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, p := range []float64{-2, -1, -0.5, 0.5, 1, 1.5, 3, 4} {
		ref := func(vs []float64) float64 {
			return math.Pow(fold(vs, 0, func(a, v float64) float64 { return a + math.Pow(math.Abs(v), p) }), 1/p)
		}
		for _, axes := range [][]int{nil, {1}, {0, 2}} {
			x := awayInput(rng, 2, 3, 4)
			op := Reduce{Kind: ReduceLp, P: p, Axes: axes, KeepDims: len(axes) == 1, Rank: 3}
			got := checkOp(t, op, smoothTol, x)
			wantClose(t, op.String(), got, reduceRef(x, axes, ref), 1e-14)
		}
		checkGraph32(t, Reduce{Kind: ReduceLp, P: p, Axes: []int{1}, Rank: 2}, posInput(rng, 3, 4))
	}
}

// TestReduceLpZeros checks PyTorch's gradient where the chain rule gives
// ∞·0: 0 for every element of a zero row, and 0 for a zero element of a
// norm of order below 1 (torch.linalg.vector_norm's backward).
func TestReduceLpZeros(t *testing.T) {
	for _, c := range []struct {
		p  float64
		x  []float64
		y  float64
		dx []float64
	}{
		{3, []float64{0, 0, 0}, 0, []float64{0, 0, 0}},
		{0.5, []float64{0, 0}, 0, []float64{0, 0}},
		{1, []float64{0, -2, 3}, 5, []float64{0, -1, 1}},
		{0.5, []float64{0, 4}, 4, []float64{0, 1}},
		{3, []float64{0, -2}, 2, []float64{0, -1}},
		{-1, []float64{0, 2}, 0, []float64{0, 0}}, // Σ|x|⁻¹ = ∞: the norm is 0 (probe 60)
		{-1, []float64{1, -1}, 0.5, []float64{0.25, -0.25}},
		{4, []float64{1, 1}, math.Pow(2, 0.25), []float64{math.Pow(2, -0.75), math.Pow(2, -0.75)}},
	} {
		op := Reduce{Kind: ReduceLp, P: c.p, Rank: 1}
		x := vals([]int{len(c.x)}, c.x...)
		y, _ := eval64(t, op, x)
		wantClose(t, op.String(), y, []float64{c.y}, 1e-15)
		dx, _ := eval64(t, reduceGrad{op: op, in: tensor.Shape{len(c.x)}}, x, vals([]int{1}, y...), vals([]int{1}, 1))
		wantClose(t, op.String()+" gradient", dx, c.dx, 1e-15)
	}
	for _, op := range []Reduce{
		{Kind: ReduceLp, Rank: 1}, {Kind: ReduceLp, P: math.NaN(), Rank: 1}, {Kind: ReduceLp, P: math.Inf(-1), Rank: 1},
		{Kind: ReduceLp, P: math.Inf(1), Rank: 1}, {Kind: ReduceL2, P: 2, Rank: 1},
	} {
		if _, err := op.InferShape(tensor.Shape{3}); err == nil {
			t.Errorf("%v accepted", op)
		}
	}
}

// Round 79 A4: with FirstTie, ReduceMax gives its gradient whole to the
// first of tied maxima (PyTorch's max pooling), without it split (amax).
func TestReduceFirstTie(t *testing.T) {
	x := vals([]int{4}, 2, 1, 2, 0)
	for _, c := range []struct {
		first bool
		dx    []float64
	}{{true, []float64{1, 0, 0, 0}}, {false, []float64{0.5, 0, 0.5, 0}}} {
		op := Reduce{Kind: ReduceMax, Rank: 1, FirstTie: c.first}
		y, _ := eval64(t, op, x)
		dx, _ := eval64(t, reduceGrad{op: op, in: tensor.Shape{4}}, x, vals([]int{1}, y...), vals([]int{1}, 1))
		wantClose(t, op.String()+" gradient", dx, c.dx, 0)
	}
	if a, b := (Reduce{Kind: ReduceMax, Rank: 1}).String(), (Reduce{Kind: ReduceMax, Rank: 1, FirstTie: true}).String(); a == b {
		t.Errorf("the two reductions hash alike: %s", a)
	}
}

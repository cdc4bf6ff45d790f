package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// condInput is a random non-differentiated 0/1 input.
func condInput(rng *rand.Rand, shape ...int) input {
	in := randInput(rng, shape...)
	in.diff = false
	return mapInput(in, func(x float64) float64 { return step(x > 0) })
}

func TestWhereGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, s := range [][3][]int{
		{{2, 3}, {2, 3}, {2, 3}},
		{{2, 1, 4}, {3, 4}, {1}},
		{{4}, {2, 3, 5, 4}, {5, 1}},
		{{1}, {2, 2}, {2, 2}},
		{{3, 1}, {1}, {1, 6}},
	} {
		op := Where{RankCond: len(s[0]), RankA: len(s[1]), RankB: len(s[2])}
		c, a, b := condInput(rng, s[0]...), randInput(rng, s[1]...), randInput(rng, s[2]...)
		got := checkOp(t, op, gradTol, c, a, b)
		// Compare with a reference selection.
		out, _ := broadcastShapes(s[0], s[1], s[2])
		for i := range got {
			co := unravel(i, out)
			v := b.vals[ravel(alignCoords(co, s[2]), s[2])]
			if c.vals[ravel(alignCoords(co, s[0]), s[0])] != 0 {
				v = a.vals[ravel(alignCoords(co, s[1]), s[1])]
			}
			if got[i] != v {
				t.Fatalf("%v %v: value %d = %v, want %v", op, s, i, got[i], v)
			}
		}
		checkGraph32(t, op, c, a, b)
	}
}

// TestWhereNoLeak checks that NaN and Inf in the branch not taken reach
// neither the result nor the gradients, with the condition computed in
// the graph.
func TestWhereNoLeak(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	g := G.NewGraph()
	xv := tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{-2, -1, 1, 2}))
	x := G.NewTensor(g, tensor.Float64, 1, G.WithShape(4), G.WithValue(xv), G.WithName("x"))
	zero := G.NewConstant(tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{0})), G.WithName("zero"))
	cond := G.Must(Apply(Binary{Kind: Greater, RankA: 1, RankB: 1}, x, zero))
	// ln x (NaN for x < 0) where x > 0, else x·∞ = −∞.
	lg := G.Must(Apply(Unary{Fn: Log}, x))
	bad := G.Must(Apply(Binary{Kind: Mul}, x, G.NewConstant(tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{inf, inf, 5, 5})))))
	y := G.Must(Apply(Where{}, cond, lg, bad))
	cost := G.Must(G.Sum(y))
	grads, err := G.Grad(cost, x)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	yv := y.Value().Data().([]float64)
	sameVals(t, "Where values", yv, []float64{-inf, -inf, 0, math.Ln2})
	gv := grads[0].Value().Data().([]float64)
	sameVals(t, "Where gradient", gv, []float64{inf, inf, 1, 0.5})
	// The gradients of Where's own inputs are masked: a NaN branch gives
	// none.
	c := vals([]int{3}, 1, 0, 1)
	a := vals([]int{3}, 1, nan, 3)
	b := vals([]int{3}, inf, 2, nan)
	got, _ := eval64(t, Where{}, c, a, b)
	sameVals(t, "Where", got, []float64{1, 2, 3})
	for i, want := range [][]float64{{1, 0, 1}, {0, 1, 0}} {
		gr, _ := eval64(t, whereGrad{which: i + 1, cond: tensor.Shape{3}, y: tensor.Shape{3}, to: tensor.Shape{3}}, c, vals([]int{3}, 1, 1, 1))
		sameVals(t, "Where gradient", gr, want)
	}
}

func TestWhereErrors(t *testing.T) {
	if _, err := (Where{}).InferShape(tensor.Shape{2}, tensor.Shape{3}, tensor.Shape{1}); err == nil {
		t.Error("shapes (2), (3), (1) broadcast")
	}
	if _, err := (Where{}).InferShape(tensor.Shape{2}, tensor.Shape{2, 2}, tensor.Shape{1}); err == nil {
		t.Error("unranked Where of ranks 1, 2, 1 accepted")
	}
	if d := (Where{}).DiffWRT(3); d[0] || !d[1] || !d[2] {
		t.Errorf("DiffWRT %v", d)
	}
}

package nd

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// broadcastRef is f over the NumPy broadcast of a and b, element by
// element from coordinates.
func broadcastRef(f func(x, y float64) float64, a, b input) ([]float64, []int) {
	s, err := broadcastShapes(a.shape, b.shape)
	if err != nil {
		panic(err)
	}
	out := make([]float64, prod(s))
	for i := range out {
		c := unravel(i, s)
		out[i] = f(a.vals[ravel(alignCoords(c, a.shape), a.shape)], b.vals[ravel(alignCoords(c, b.shape), b.shape)])
	}
	return out, s
}

// alignCoords returns the coordinates in shape s of the element that
// coordinates c of a broadcast result come from.
func alignCoords(c, s []int) []int {
	r := make([]int, len(s))
	for i := range s {
		if s[i] > 1 {
			r[i] = c[len(c)-len(s)+i]
		}
	}
	return r
}

// binaryShapes are pairs of operand shapes that broadcast.
var binaryShapes = [][2][]int{
	{{2, 3, 4}, {2, 3, 4}},
	{{2, 3, 4, 5}, {5}},
	{{4}, {2, 3, 1, 4}},
	{{3, 1, 5}, {4, 1}},
	{{1}, {2, 3}},
	{{2, 3}, {1}},
	{{1}, {1}},
	{{2, 1, 3, 1}, {1, 4, 1, 5}},
	{{6, 1}, {1, 7}},
}

// rankedBinary is Binary of kind k with the rank fields set for operands of shapes s.
func rankedBinary(k BinaryKind, s [2][]int) Binary {
	return Binary{Kind: k, RankA: len(s[0]), RankB: len(s[1])}
}

func TestBinaryGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range binaryShapes {
		for k := Add; k <= Fmod; k++ {
			a, b := randInput(rng, s[0]...), randInput(rng, s[1]...)
			switch k {
			case Div, Mod, Fmod:
				b = awayInput(rng, s[1]...)
			case Pow:
				a = posInput(rng, s[0]...)
			}
			checkOp(t, rankedBinary(k, s), smoothTol, a, b)
		}
	}
}

func TestBinaryBroadcastValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range binaryShapes {
		for k := Add; k <= Xor; k++ {
			a, b := randInput(rng, s[0]...), randInput(rng, s[1]...)
			// Comparisons and logic with ties and zeros.
			a.vals[0], b.vals[0] = 0, 0
			got, shape := eval64(t, rankedBinary(k, s), a, b)
			want, ws := broadcastRef(binaryDefs[k].f, a, b)
			if !shape.Eq(tensor.Shape(ws)) {
				t.Fatalf("%v %v: shape %v, want %v", k, s, shape, ws)
			}
			sameVals(t, k.String(), got, want)
		}
	}
}

func TestBinaryValues(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		k          BinaryKind
		a, b, want []float64
	}{
		{Add, []float64{1, inf, inf, nan}, []float64{2, 1, -inf, 0}, []float64{3, inf, nan, nan}},
		{Sub, []float64{1, 5}, []float64{2, 5}, []float64{-1, 0}},
		{Mul, []float64{3, 0, nan}, []float64{-2, inf, 1}, []float64{-6, nan, nan}},
		{Div, []float64{1, 1, 0, -1}, []float64{4, 0, 0, 0}, []float64{0.25, inf, nan, -inf}},
		{Pow, []float64{2, 4, 0, -2, -8, 0}, []float64{3, 0.5, 0, 2, 1.0 / 3, -1}, []float64{8, 2, 1, 4, nan, inf}},
		{Min, []float64{1, 3, nan, 2}, []float64{2, -inf, 1, nan}, []float64{1, -inf, nan, nan}},
		{Max, []float64{1, 3, nan, 2}, []float64{2, -inf, 1, nan}, []float64{2, 3, nan, nan}},
		{Mod, []float64{7, -7, 7, -7, 6, 5.5}, []float64{3, 3, -3, -3, 3, 2}, []float64{1, 2, -2, -1, 0, 1.5}},
		{Fmod, []float64{7, -7, 7, -7, 5.5}, []float64{3, 3, -3, -3, 2}, []float64{1, -1, 1, -1, 1.5}},
		{Equal, []float64{1, 1, nan}, []float64{1, 2, nan}, []float64{1, 0, 0}},
		{Less, []float64{1, 2, 3, nan}, []float64{2, 2, 2, 1}, []float64{1, 0, 0, 0}},
		{LessOrEqual, []float64{1, 2, 3}, []float64{2, 2, 2}, []float64{1, 1, 0}},
		{Greater, []float64{1, 2, 3}, []float64{2, 2, 2}, []float64{0, 0, 1}},
		{GreaterOrEqual, []float64{1, 2, 3, inf}, []float64{2, 2, 2, inf}, []float64{0, 1, 1, 1}},
		{And, []float64{0, 0, 1, 2}, []float64{0, 1, 0, -1}, []float64{0, 0, 0, 1}},
		{Or, []float64{0, 0, 1, 2}, []float64{0, 1, 0, -1}, []float64{0, 1, 1, 1}},
		{Xor, []float64{0, 0, 1, 2}, []float64{0, 1, 0, -1}, []float64{0, 1, 1, 0}},
	} {
		n := []int{len(c.a)}
		got, _ := eval64(t, Binary{Kind: c.k}, vals(n, c.a...), vals(n, c.b...))
		sameVals(t, c.k.String(), got, c.want)
	}
}

// TestBinaryGradientEdges checks the gradients at ties and at Pow's
// special points.
func TestBinaryGradientEdges(t *testing.T) {
	for _, c := range []struct {
		k            BinaryKind
		a, b, da, db []float64
	}{
		{k: Max, a: []float64{1, 2, 3}, b: []float64{1, 1, 4}, da: []float64{0.5, 1, 0}, db: []float64{0.5, 0, 1}},
		{k: Min, a: []float64{1, 2, 3}, b: []float64{1, 1, 4}, da: []float64{0.5, 0, 1}, db: []float64{0.5, 1, 0}},
		// d/da aᵇ = 0 where b = 0; d/db = aᵇ ln a where a > 0, else 0.
		{k: Pow, a: []float64{0, 2, 0, -2, 3}, b: []float64{0, 0, 2, 2, 2}, da: []float64{0, 0, 0, -4, 6}, db: []float64{0, math.Ln2, 0, 0, 9 * math.Log(3)}},
		{k: Mod, a: []float64{-7, 7}, b: []float64{3, 3}, da: []float64{1, 1}, db: []float64{3, -2}},
		{k: Fmod, a: []float64{-7, 7}, b: []float64{3, 3}, da: []float64{1, 1}, db: []float64{2, -2}},
	} {
		n := []int{len(c.a)}
		a, b := vals(n, c.a...), vals(n, c.b...)
		y, _ := eval64(t, Binary{Kind: c.k}, a, b)
		g := make([]float64, len(y))
		for i := range g {
			g[i] = 1
		}
		for i, want := range [][]float64{c.da, c.db} {
			got, _ := eval64(t, binaryGrad{kind: c.k, which: i, a: n, b: n}, a, b, vals(n, y...), vals(n, g...))
			wantClose(t, c.k.String()+" gradient", got, want, 1e-15)
		}
	}
}

func TestBinaryGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range binaryShapes[:4] {
		for _, k := range []BinaryKind{Add, Sub, Mul, Div, Max} {
			checkGraph32(t, rankedBinary(k, s), randInput(rng, s[0]...), awayInput(rng, s[1]...))
		}
	}
	// Without ranks, inputs of one rank only.
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 2, G.WithShape(2, 3), G.WithName("x"))
	v := G.NewTensor(g, tensor.Float64, 1, G.WithShape(3), G.WithName("v"))
	if y, err := Apply(Binary{Kind: Mul}, x, x); err != nil || y.Dims() != 2 {
		t.Errorf("unranked Mul of matrices: %v", err)
	}
	if _, err := Apply(Binary{Kind: Mul}, x, v); err == nil {
		t.Error("unranked Mul of a matrix and a vector applied")
	}
	if _, err := Apply(Binary{Kind: Mul, RankA: 2, RankB: 2}, x, v); err == nil {
		t.Error("wrong ranks accepted")
	}
	if y, err := Apply(Binary{Kind: Less, RankA: 1, RankB: 2}, v, x); err != nil || !y.Shape().Eq(tensor.Shape{2, 3}) {
		t.Errorf("ranked Less of a vector and a matrix: %v", err)
	}
}

func TestBinaryErrors(t *testing.T) {
	if _, err := (Binary{Kind: Add}).InferShape(tensor.Shape{2, 3}, tensor.Shape{2, 4}); err == nil {
		t.Error("shapes (2, 3) and (2, 4) broadcast")
	}
	if _, err := Eval(Binary{Kind: Add}, dense64(vals([]int{3}, 1, 2, 3)), dense64(vals([]int{2}, 1, 2))); err == nil {
		t.Error("Do of shapes (3) and (2)")
	}
	if _, err := (Binary{Kind: BinaryKind(-1)}).InferShape(tensor.Shape{2}, tensor.Shape{2}); err == nil {
		t.Error("unknown kind accepted")
	}
	for k := Equal; k <= Xor; k++ {
		if d := (Binary{Kind: k}).DiffWRT(2); d[0] || d[1] {
			t.Errorf("%v differentiable", k)
		}
	}
}

func benchBinary(b *testing.B, k BinaryKind, sa, sb []int) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := dense64(awayInput(rng, sa...)), dense64(awayInput(rng, sb...))
	op := Binary{Kind: k, RankA: len(sa), RankB: len(sb)}
	out, err := op.Do(x, y)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err = op.UsePreallocDo(out, x, y); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBinaryAddSame(b *testing.B)   { benchBinary(b, Add, []int{256, 1024}, []int{256, 1024}) }
func BenchmarkBinaryMulScalar(b *testing.B) { benchBinary(b, Mul, []int{256, 1024}, []int{1}) }
func BenchmarkBinaryAddBias(b *testing.B)   { benchBinary(b, Add, []int{256, 1024}, []int{1024}) }
func BenchmarkBinaryAddColumn(b *testing.B) { benchBinary(b, Add, []int{256, 1024}, []int{256, 1}) }
func BenchmarkBinaryMaxSame(b *testing.B)   { benchBinary(b, Max, []int{256, 1024}, []int{256, 1024}) }

// Round 78 A2: the operand Max or Min does not take gets no gradient,
// however large the incoming one (√ of max(x, 0) at x < 0 sent +Inf, and
// ∞·0 made NaN where PyTorch's maximum backward masks it); Mul multiplies.
func TestMaxSelectsZero(t *testing.T) {
	n := []int{2}
	a, b := vals(n, -1, 3), vals(n, 0, 0)
	inf := math.Inf(1)
	for _, c := range []struct {
		k      BinaryKind
		da, db []float64
	}{
		{Max, []float64{0, inf}, []float64{inf, 0}},
		{Min, []float64{inf, 0}, []float64{0, inf}},
	} {
		y, _ := eval64(t, Binary{Kind: c.k}, a, b)
		g := vals(n, inf, inf)
		for i, want := range [][]float64{c.da, c.db} {
			got, _ := eval64(t, binaryGrad{kind: c.k, which: i, a: n, b: n}, a, b, vals(n, y...), g)
			if got[0] != want[0] || got[1] != want[1] {
				t.Errorf("%v operand %d gradient with g = +Inf: %v, want %v", c.k, i, got, want)
			}
		}
	}
	y, _ := eval64(t, Binary{Kind: Mul}, a, b)
	if got, _ := eval64(t, binaryGrad{kind: Mul, which: 0, a: n, b: n}, a, b, vals(n, y...), vals(n, inf, inf)); !math.IsNaN(got[0]) {
		t.Errorf("Mul by 0 with g = +Inf: %v, want NaN", got)
	}
}

package onnx

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/graph"
)

// torch.topk(x ** 2, 2).values.sum(1) + ½|x|², refused before as TopK of
// data (probe 57 A4's fixture), against its energy and gradient written
// out: the two largest squares count twice in the gradient's 2x + x.
func TestTopKOfData(t *testing.T) {
	net, err := ReadFile(filepath.Join("testdata", "pinned", "topk_data_dyn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	ebm, err := graph.NewEBM(net, nil, net.Dtype, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n, d = 7, 3
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = rng.NormFloat64()
	}
	e, g := make([]float64, n), mat.NewDense(n, d, nil)
	if err := ebm.EnergyGrad(x, e, g); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		order := []int{0, 1, 2}
		sort.Slice(order, func(a, b int) bool { return row[order[a]]*row[order[a]] > row[order[b]]*row[order[b]] })
		want, grad := 0.0, make([]float64, d)
		for j, v := range row {
			want += v * v / 2
			grad[j] = v
		}
		for _, j := range order[:2] {
			want += row[j] * row[j]
			grad[j] += 2 * row[j]
		}
		if math.Abs(e[i]-want) > 1e-12*math.Max(1, want) {
			t.Errorf("point %d: energy %v, want %v", i, e[i], want)
		}
		for j := range grad {
			if math.Abs(g.At(i, j)-grad[j]) > 1e-12 {
				t.Errorf("point %d: gradient %v, want %v", i, g.RawRowView(i), grad)
				break
			}
		}
	}
}

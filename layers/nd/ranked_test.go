package nd

import (
	"reflect"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestRankedApply applies each operation, its rank fields left unset and
// filled by Ranked, to graph nodes, and checks the result's rank and shape.
func TestRankedApply(t *testing.T) {
	for _, c := range []struct {
		op  Op
		in  [][]int
		out []int
	}{
		{Concat{Axis: 1}, [][]int{{2, 3}, {2, 1}, {2, 2}}, []int{2, 6}},
		{Gather{Axis: 0, Indices: []int{1}}, [][]int{{4}}, []int{1}},
		{Gather{Axis: 1, Indices: []int{0, 1, 0, 2}, IndicesShape: []int{2, 2}}, [][]int{{2, 3}}, []int{2, 2, 2}},
		{GatherElements{Axis: 1}, [][]int{{2, 3}, {2, 2}}, []int{2, 2}},
		{GatherND{}, [][]int{{3, 4, 5}, {6, 2}}, []int{6, 5}},
		{GatherND{}, [][]int{{3, 4}, {2}}, []int{1}},
		{ScatterND{}, [][]int{{3, 4, 5}, {6, 2}, {6, 5}}, []int{3, 4, 5}},
		{MatMul{}, [][]int{{2, 3, 4}, {4, 5}}, []int{2, 3, 5}},
		{MatMul{TransA: true}, [][]int{{4, 3}, {2, 2, 4, 5}}, []int{2, 2, 3, 5}},
		{Conv{Strides: []int{1}, Dilations: []int{1}, PadsBegin: []int{0}, PadsEnd: []int{0}, Group: 1}, [][]int{{2, 3, 5}, {4, 3, 2}, {4}}, []int{2, 4, 4}},
		{ConvTranspose{Strides: []int{1}, Dilations: []int{1}, PadsBegin: []int{0}, PadsEnd: []int{0}, OutputPadding: []int{0}, Group: 1}, [][]int{{2, 3, 5}, {3, 4, 2}}, []int{2, 4, 6}},
		{Slice{Starts: []int{1}, Steps: []int{1}, Counts: []int{2}}, [][]int{{4}}, []int{2}},
	} {
		g := G.NewGraph()
		nodes := make([]*G.Node, len(c.in))
		shapes := make([]tensor.Shape, len(c.in))
		for i, s := range c.in {
			nodes[i] = G.NewTensor(g, tensor.Float64, len(s), G.WithShape(s...), G.WithName(string(rune('a'+i))))
			shapes[i] = s
		}
		if _, err := Apply(c.op, nodes...); err == nil && !reflect.DeepEqual(c.op, Ranked(c.op, shapes...)) {
			t.Errorf("%v: applied without its ranks", c.op)
		}
		op := Ranked(c.op, shapes...)
		y, err := Apply(op, nodes...)
		if err != nil {
			t.Errorf("%v: %v", op, err)
			continue
		}
		if !y.Shape().Eq(tensor.Shape(c.out)) || y.Dims() != len(c.out) {
			t.Errorf("%v: result of type %v and shape %v, want shape %v", op, y.Type(), y.Shape(), c.out)
		}
	}
}

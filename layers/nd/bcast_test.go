package nd

import (
	"testing"

	"gorgonia.org/tensor"
)

func TestBroadcastShapes(t *testing.T) {
	for _, c := range []struct {
		in   [][]int
		want []int
	}{
		{[][]int{{2, 3}, {2, 3}}, []int{2, 3}},
		{[][]int{{2, 3, 4, 5}, {5}}, []int{2, 3, 4, 5}},
		{[][]int{{3, 1, 5}, {4, 1}}, []int{3, 4, 5}},
		{[][]int{{1}, {2, 3}}, []int{2, 3}},
		{[][]int{{2, 1}, {1, 3}, {1}}, []int{2, 3}},
		{[][]int{}, []int{1}},
	} {
		in := make([]tensor.Shape, len(c.in))
		for i, s := range c.in {
			in[i] = s
		}
		got, err := broadcastShapes(in...)
		if err != nil || !got.Eq(tensor.Shape(c.want)) {
			t.Errorf("broadcastShapes%v = %v %v, want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range [][]tensor.Shape{{{2, 3}, {3, 2}}, {{2}, {3}}, {{2, 0}, {2, 1}}} {
		if _, err := broadcastShapes(in...); err == nil {
			t.Errorf("broadcastShapes%v accepted", in)
		}
	}
}

// TestBcastRows checks that axes are merged into long rows and that the
// offsets follow the operands.
func TestBcastRows(t *testing.T) {
	for _, c := range []struct {
		out  []int
		ops  [][]int
		rows int // number of rows
	}{
		{[]int{2, 3, 4}, [][]int{{2, 3, 4}, {2, 3, 4}}, 1},
		{[]int{2, 3, 4}, [][]int{{2, 3, 4}, {1}}, 1},
		{[]int{2, 3, 4}, [][]int{{2, 3, 4}, {4}}, 6},
		{[]int{2, 3, 4}, [][]int{{2, 1, 1}, {3, 4}}, 2},
		{[]int{2, 1, 3}, [][]int{{2, 1, 3}, {2, 1, 1}}, 2},
		{[]int{1, 1}, [][]int{{1}}, 1},
	} {
		ops := make([]tensor.Shape, len(c.ops))
		for i, s := range c.ops {
			ops[i] = s
		}
		b := newBcast(c.out, ops...)
		n := 0
		seen := make([]bool, prod(c.out))
		b.rows(func(o int, off []int) {
			n++
			for i := 0; i < b.row(); i++ {
				co := unravel(o+i, c.out)
				seen[o+i] = true
				for k, s := range c.ops {
					if want := ravel(alignCoords(co, s), s); off[k]+i*b.inner(k) != want {
						t.Fatalf("%v %v: operand %d at %d: offset %d, want %d", c.out, c.ops, k, o+i, off[k]+i*b.inner(k), want)
					}
				}
			}
		})
		if n != c.rows {
			t.Errorf("%v %v: %d rows, want %d", c.out, c.ops, n, c.rows)
		}
		for i, s := range seen {
			if !s {
				t.Errorf("%v %v: element %d not visited", c.out, c.ops, i)
			}
		}
	}
}

package shapes

import (
	"fmt"
	"slices"
	"testing"
)

func TestProductAndSqueezed(t *testing.T) {
	for _, c := range []struct {
		shape    []int
		product  int
		squeezed []int
	}{
		{nil, 1, []int{}},
		{[]int{3, 4, 4}, 48, []int{3, 4, 4}},
		{[]int{1, 28, 1, 28}, 784, []int{28, 28}},
		{[]int{1, 1}, 1, []int{}},
		{[]int{5, 0}, 0, []int{5, 0}},
	} {
		if got := Product(c.shape); got != c.product {
			t.Errorf("Product(%v) = %d, want %d", c.shape, got, c.product)
		}
		if got := Squeezed(c.shape); !slices.Equal(got, c.squeezed) {
			t.Errorf("Squeezed(%v) = %v, want %v", c.shape, got, c.squeezed)
		}
	}
	s := []int{1, 3}
	Squeezed(s)
	if s[0] != 1 {
		t.Errorf("Squeezed changed its argument: %v", s)
	}
}

func ExampleSqueezed() {
	fmt.Println(Squeezed([]int{1, 8, 8}), Squeezed([]int{8, 8, 1}), Product([]int{1, 8, 8}))
	// Output: [8 8] [8 8] 64
}

package npy_test

import (
	"bytes"
	"fmt"

	"github.com/flowebm/flowebm/io/npy"
)

// Write an array of 2 chains × 3 draws as float32 and read it back as
// float64, the way "flowebm diagnose" reads chains saved by NumPy.
func Example() {
	chains := &npy.Array{Shape: []int{2, 3}, Data: []float64{0.5, 1, 1.5, -0.5, -1, -1.5}}
	var file bytes.Buffer
	if err := npy.Write(&file, chains, npy.Float32); err != nil {
		panic(err)
	}
	a, err := npy.Read(&file)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Shape, a.Dtype, a.Data)
	// Output:
	// [2 3] <f4 [0.5 1 1.5 -0.5 -1 -1.5]
}

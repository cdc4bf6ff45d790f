package onnx

import (
	"strings"
	"testing"
)

// Round 103 A2: a gradient NaN where the energy is finite, from a square
// root of a negative number in the branch torch.where discards, named no
// node. NonFiniteNodeAt names the Sqrt there; nothing where every node is
// finite (the branch clamped, as its advice says) or where the energy
// itself is not.
func TestNonFiniteNodeAt(t *testing.T) {
	read := func(name string) *Net {
		t.Helper()
		n, err := ReadFile("testdata/edge/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sqrt := read("where_sqrt_energy.onnx")
	var named int
	for _, x := range [][]float64{{3, -2}, {-3, 2}, {0.5, 0.5}} { // its 8 hidden units: some negative at each
		got := sqrt.NonFiniteNodeAt(x)
		if got != "" {
			named++
			if want := `node "/Sqrt" (Sqrt) computes NaN there`; !strings.HasPrefix(got, want) {
				t.Errorf("where_sqrt at %v: %q, want %q…", x, got, want)
			}
		}
	}
	if named == 0 {
		t.Error("where_sqrt: no node named at any point")
	}
	if got := read("gamma_placeholder_energy.onnx").NonFiniteNodeAt([]float64{-1}); got != "" {
		t.Errorf("clamped branch: %q, want none", got)
	}
	if got := read("gamma_energy.onnx").NonFiniteNodeAt([]float64{-1, 1}); got != "" {
		t.Errorf("energy NaN itself: %q, want none", got)
	}
	if got := sqrt.NonFiniteNodeAt([]float64{1}); got != "" {
		t.Errorf("a point of the wrong size: %q", got)
	}
}

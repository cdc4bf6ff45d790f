package layers_test

import (
	"testing"

	"github.com/flowebm/flowebm/layers"
)

// FuzzParseActivation: any input either fails cleanly or yields an
// activation whose String parses back to itself.
func FuzzParseActivation(f *testing.F) {
	for _, s := range []string{"relu", "leaky_relu(0.05)", "LEAKY_RELU( 2 )", "silu", "elu", "leaky_relu(nan)", "leaky_relu(inf)", "leaky_relu(", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := layers.ParseActivation(s)
		if err != nil {
			return
		}
		b, err := layers.ParseActivation(a.String())
		if err != nil {
			t.Fatalf("%q parsed to %v whose String %q does not parse: %v", s, a, a.String(), err)
		}
		if b != a {
			t.Fatalf("%q: %v round-trips to %v", s, a, b)
		}
	})
}

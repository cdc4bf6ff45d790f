package algorithms

import (
	"math"
	"strings"
	"testing"
)

// Restored optimiser state must be possible: Adam's step count a whole
// number ≥ 0, its moments finite and v ≥ 0 (a negative or NaN state was
// reported later as "training diverged").
func TestOptimiserStateChecked(t *testing.T) {
	o, err := OptimConfig{}.New(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		state map[string][]float64
		want  string
	}{
		{map[string][]float64{"m": {0, 0}, "v": {0, 0}, "t": {-1}}, "t is -1"},
		{map[string][]float64{"m": {0, 0}, "v": {0, 0}, "t": {math.NaN()}}, "t is NaN"},
		{map[string][]float64{"m": {0, 0}, "v": {0, -1e-3}, "t": {3}}, "v[1] is -0.001"},
		{map[string][]float64{"m": {math.Inf(1), 0}, "v": {0, 0}, "t": {3}}, "m[0] is +Inf"},
	} {
		if err := o.SetState(c.state); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.state, err, c.want)
		}
	}
	if err := o.SetState(map[string][]float64{"m": {0.1, 0}, "v": {0.2, 0}, "t": {3}}); err != nil {
		t.Error(err)
	}
}

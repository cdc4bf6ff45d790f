package checkpoint

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

func models(t *testing.T, dt tensor.Dtype) Models {
	rng := rand.New(rand.NewPCG(1, 1))
	base := layers.NewIsotropic(2, 1.3)
	ebm, err := graph.NewEBM(graph.ToyEnergyNet(2, false), &base, dt, rng)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := graph.NewFlow(layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}, InitScale: 1}, base, dt, rng)
	if err != nil {
		t.Fatal(err)
	}
	return Models{EBM: ebm, Flow: flow}
}

// Saving and loading gives models with the same energies and flow densities
// (bit for bit in float64; float32 weights are stored as float32).
func TestSaveLoadRoundTrip(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		m := models(t, dt)
		dir := filepath.Join(t.TempDir(), "ck")
		if err := Save(dir, m); err != nil {
			t.Fatal(err)
		}
		got, spec, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Dtype != dt.String() || spec.Flow == nil || spec.Flow.Blocks != 2 {
			t.Errorf("spec %+v", spec)
		}
		x := mat.NewDense(5, 2, []float64{0, 0, 1, -1, 2, 0.5, -3, 1, 0.1, 0.2})
		e1, e2 := make([]float64, 5), make([]float64, 5)
		m.EBM.LogDensity(x, e1)
		got.EBM.LogDensity(x, e2)
		l1, l2 := make([]float64, 5), make([]float64, 5)
		m.Flow.LogDensity(x, l1)
		got.Flow.LogDensity(x, l2)
		for i := range e1 {
			if e1[i] != e2[i] || l1[i] != l2[i] {
				t.Errorf("%v row %d: log p %v vs %v, log λ %v vs %v", dt, i, e1[i], e2[i], l1[i], l2[i])
			}
		}
	}
}

func TestLoadErrorsNameFileAndField(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, models(t, tensor.Float64)); err != nil {
		t.Fatal(err)
	}
	spec, _ := os.ReadFile(filepath.Join(dir, "spec.json"))
	cases := map[string]string{
		`"dtype": "float64"`:               `"dtype": "float16"`,
		`"layout": "sequential"`:           `"layout": "dict"`,
		`"format": "flowebm-checkpoint/1"`: `"format": "other/2"`,
	}
	for from, to := range cases {
		bad := t.TempDir()
		os.WriteFile(filepath.Join(bad, "spec.json"), []byte(strings.Replace(string(spec), from, to, 1)), 0o644)
		b, _ := os.ReadFile(filepath.Join(dir, "weights.npz"))
		os.WriteFile(filepath.Join(bad, "weights.npz"), b, 0o644)
		field := strings.Split(from, `"`)[1]
		if _, _, err := Load(bad); err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s → %s: error %v", from, to, err)
		}
	}
	// A spec whose sizes do not match the weights.
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "spec.json"), []byte(strings.Replace(string(spec), "32,", "33,", 1)), 0o644)
	b, _ := os.ReadFile(filepath.Join(dir, "weights.npz"))
	os.WriteFile(filepath.Join(bad, "weights.npz"), b, 0o644)
	if _, _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "ebm.net.0.weight") {
		t.Errorf("mismatched shapes: error %v", err)
	}
}

package checkpoint

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/onnx"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// A checkpoint keeps a flow read from ONNX (nflows' MAF here) as its two
// graphs with the checkpoint's weights: after a change of weights, Save
// then Load gives the same log-densities, the spec names the files, and a
// missing graph is refused with the file's name.
func TestCheckpointKeepsONNXFlow(t *testing.T) {
	flow, err := onnx.ReadFlow("../onnx/testdata/flows/maf_f64_sample.onnx", "../onnx/testdata/flows/maf_f64_density.onnx", onnx.FlowConfig{})
	if err != nil {
		t.Fatal(err)
	}
	theta := flow.Params.Flatten(nil)
	for i := range theta {
		theta[i] *= 0.9 // weights that are not the files'
	}
	flow.Params.SetFlat(theta)
	rng := rand.New(rand.NewPCG(1, 2))
	base := flow.Base
	ebm, err := graph.NewEBM(graph.ToyEnergyNet(3, false), &base, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	if err := Save(dir, Models{EBM: ebm, Flow: flow}); err != nil {
		t.Fatal(err)
	}
	m, spec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if spec.FlowONNX == nil || spec.Flow != nil {
		t.Fatalf("spec: flow %v, flow_onnx %v", spec.Flow, spec.FlowONNX)
	}
	x := mat.NewDense(4, 3, []float64{0, 0, 0, 1, -1, 0.5, 2, 1, -1, -0.5, 0.3, 0.2})
	a, b := make([]float64, 4), make([]float64, 4)
	if err := flow.LogDensity(x, a); err != nil {
		t.Fatal(err)
	}
	if err := m.Flow.LogDensity(x, b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("row %d: log q %v after Save and Load, %v before", i, b[i], a[i])
		}
	}
	if err := os.Remove(filepath.Join(dir, FlowDensityFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), FlowDensityFile) {
		t.Errorf("a checkpoint without its density graph: %v", err)
	}
}

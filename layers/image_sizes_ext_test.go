package layers_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// TestImageGraphValues measures the memory the image models' graphs hold
// per row, for layers' imageGradValues and imageEvalValues:
// FLOWEBM_MEASURE_IMAGE=KIND:ROWS runs, on ROWS images, the scaled
// defaults' model (EBM channels 16, 32, 32; RealNVP of 1 coupling of each
// kind per scale, 16 channels) as the trainer does: ebm (energies),
// ebm-grad (E and ∇ₓE), ebm-loss (the parameters' gradient on ROWS/2
// positives and negatives), flow-sample, flow-density, flow-ml (maximum
// likelihood gradient); it logs the peak resident memory (VmHWM) before
// and after, with the model's GraphValues. Run one fresh process per
// measurement, at two batch sizes, and take the slope. Skipped otherwise.
func TestImageGraphValues(t *testing.T) {
	spec := os.Getenv("FLOWEBM_MEASURE_IMAGE")
	if spec == "" {
		t.Skip("set FLOWEBM_MEASURE_IMAGE=ebm-grad:512 (or ebm, ebm-loss, flow-sample, flow-density, flow-ml) to measure")
	}
	kind, rowsText, _ := strings.Cut(spec, ":")
	rows, err := strconv.Atoi(rowsText)
	if err != nil {
		t.Fatal(err)
	}
	graph.UseBLASFromEnv()
	e := layers.ImageEnergy{Channels: []int{16, 32, 32}}
	f := layers.ImageRealNVP{Hidden: 16, Checkerboard: 1, ChannelWise: 1}
	rng := rand.New(rand.NewPCG(1, 2))
	x := mat.NewDense(rows, 784, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = 2*rng.Float64() - 1
	}
	out, v := make([]float64, rows), mat.NewDense(rows, 784, nil)
	base := layers.NewIsotropic(784, 1)
	par := graph.Parallel{Shards: 4, Workers: 2}
	before := vmHWM()
	var perRow float64
	switch {
	case strings.HasPrefix(kind, "ebm"):
		ebm, err := graph.NewEBM(e, &base, tensor.Float64, rng)
		if err != nil {
			t.Fatal(err)
		}
		ebm.Parallel = par
		perRow = e.GraphValues(kind != "ebm")
		switch kind {
		case "ebm":
			err = ebm.Energy(x, out)
		case "ebm-grad":
			err = ebm.EnergyGrad(x, out, v)
		case "ebm-loss":
			g := make([]float64, ebm.Params.Count())
			_, err = ebm.LossGrad(x.Slice(0, rows/2, 0, 784), x.Slice(rows/2, rows, 0, 784), 0.1, g)
		}
		if err != nil {
			t.Fatal(err)
		}
	default:
		flow, err := graph.NewFlow(f, base, tensor.Float64, rng)
		if err != nil {
			t.Fatal(err)
		}
		flow.Parallel = par
		perRow = f.GraphValues(kind == "flow-ml")
		switch kind {
		case "flow-sample":
			err = flow.Sample(rng, v, out)
		case "flow-density":
			err = flow.LogDensity(x, out)
		case "flow-ml":
			_, err = flow.MLGrad(x, make([]float64, flow.Params.Count()))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	after := vmHWM()
	t.Logf("%s at %d rows: peak resident memory %.0f MB → %.0f MB, %.0f KB per row; bound %.0f values per row, %.0f KB",
		kind, rows, before/1e6, after/1e6, (after-before)/float64(rows)/1e3, perRow, perRow*8/1e3)
}

// vmHWM is the process's peak resident memory in bytes.
func vmHWM() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb * 1024
		}
	}
	return 0
}

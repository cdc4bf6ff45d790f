package onnx

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/graph"
)

// Round 77 A1: LayerNormalization's Mean and InvStdDev outputs and
// MaxPool's Indices, named by PyTorch 2's exporter and read by nothing,
// made the file refused; they are refused only where read.
func TestUnreadOptionalOutputs(t *testing.T) {
	ax := hgInt64s("ax1", []int64{1}, 1)
	scale := mdTensor("scale", TypeFloat, []int64{3}, mdRawF32(1, 2, 3))
	sum := func(in, out string) msg {
		return mdNode(out, "ReduceSum", []string{in, "ax1"}, []string{out}, intAttr("keepdims", 0).encode())
	}
	ln := mdNode("ln", "LayerNormalization", []string{"x", "scale"}, []string{"c", "mean", "inv"})
	unread := lmModel(hgGraphBatch("N", []msg{ln, sum("c", "y")}, []msg{ax, scale}, "y"), 8, 17)
	if _, err := DecodeConfig(unread, "ln.onnx", Config{}); err != nil {
		t.Errorf("LayerNormalization, Mean and InvStdDev unread: %v", err)
	}
	read := lmModel(hgGraphBatch("N", []msg{ln, sum("c", "s"), sum("mean", "m"),
		mdNode("y", "Add", []string{"s", "m"}, []string{"y"})}, []msg{ax, scale}, "y"), 8, 17)
	if _, err := DecodeConfig(read, "ln.onnx", Config{}); err == nil || !strings.Contains(err.Error(), "the Mean and InvStdDev outputs of LayerNormalization are not supported") {
		t.Errorf("LayerNormalization, Mean read: %v", err)
	}
	shp := hgInt64s("shp", []int64{3}, 0, 1, 3)
	ax12 := hgInt64s("ax12", []int64{2}, 1, 2)
	pool := []msg{
		mdNode("r", "Reshape", []string{"x", "shp"}, []string{"r"}),
		mdNode("p", "MaxPool", []string{"r"}, []string{"p", "idx"}, intsAttr("kernel_shape", 2)),
		mdNode("y", "ReduceSum", []string{"p", "ax12"}, []string{"y"}, intAttr("keepdims", 0).encode()),
	}
	if _, err := DecodeConfig(lmModel(hgGraphBatch("N", pool, []msg{shp, ax12}, "y"), 8, 13), "pool.onnx", Config{}); err != nil {
		t.Errorf("MaxPool, Indices unread: %v", err)
	}
}

// Round 77 A2: round 76's derivative 0 at 0 was given to square roots
// that are neither x.std nor cosine_similarity's denominator (a variance
// times data; squares averaged over other axes than they were centred
// on), where PyTorch's gradient is NaN. Only the two exports get it.
func TestSqrtFlatAtZeroOnlyForStdAndCosine(t *testing.T) {
	for name, want := range map[string]bool{
		"std_rows_dyn": true, "cosine_rows_dyn": true, "cosine_rows_o9_dyn": true,
		"sqrt_crossaxis_dyn": false, "sqrt_scaled_var_dyn": false,
		// Round 78 A1: a variance times 0.5, or times n alone.
		"std_correction2_dyn": true, "sqrt_half_var_dyn": false,
	} {
		n, err := ReadFile(filepath.Join("testdata", "pinned", name+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		sqrts, flat := 0, 0
		for _, nd := range n.nodes {
			if nd.OpType == "Sqrt" {
				sqrts++
				if nd.flatAtZero {
					flat++
				}
			}
		}
		if sqrts == 0 || (flat == sqrts) != want || (flat == 0) == want {
			t.Errorf("%s: %d of %d square roots flat at 0, want all: %v", name, flat, sqrts, want)
		}
	}
}

// Round 77 A3: an opset-18 reduction over no axis (noop_with_empty_axes,
// no axes) returned x, where ONNX Runtime and the corrected specification
// apply the reduction's elementwise step (x², |x|, log x).
func TestReduceOverNoAxis(t *testing.T) {
	ax := hgInt64s("ax1", []int64{1}, 1)
	x := mat.NewDense(2, 3, []float64{0.5, -2, 3, 1.5, 0.25, -0.75})
	for op, f := range map[string]func(float64) float64{
		"ReduceSumSquare": func(v float64) float64 { return v * v },
		"ReduceL1":        math.Abs,
		"ReduceL2":        math.Abs,
		"ReduceLogSum":    func(v float64) float64 { return math.Log(math.Abs(v)) },
		"ReduceMean":      func(v float64) float64 { return v },
		"ReduceMax":       func(v float64) float64 { return v },
	} {
		nodes := []msg{mdNode("c0", "Abs", []string{"x"}, []string{"c0"})}
		in := "x"
		if op == "ReduceLogSum" {
			in = "c0"
		}
		nodes = append(nodes, mdNode("c", op, []string{in}, []string{"c"}, intAttr("noop_with_empty_axes", 1).encode()),
			mdNode("y", "ReduceSum", []string{"c", "ax1"}, []string{"y"}, intAttr("keepdims", 0).encode()))
		n, err := Decode(lmModel(hgGraphBatch("N", nodes, []msg{ax}, "y"), 8, 18), op+".onnx")
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		e, err := graph.NewEBM(n, nil, n.Dtype, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float64, 2)
		if err := e.Energy(x, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			want := 0.0
			for _, v := range x.RawRowView(i) {
				want += f(v)
			}
			if math.Abs(got[i]-want) > 1e-5*math.Max(1, math.Abs(want)) { // the graph is float32
				t.Errorf("%s over no axis, point %d: %v, want %v", op, i, got[i], want)
			}
		}
	}
}

package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// splineExportNets are the spline flows the export tests write: defaults
// (K = 8, B = 5, ReLU), a checkerboard with K = 3, B = 3 and tanh, and
// K = 2 (one interior derivative) with a linear conditioner.
var splineExportNets = []layers.SplineFlow{
	{Dim: 3, Blocks: 2, Hidden: []int{8}},
	{Dim: 4, Blocks: 1, Hidden: []int{6, 6}, Mask: layers.MaskCheckerboard, Activation: layers.Tanh, Spline: layers.RQSpline{Bins: 3, TailBound: 3}},
	{Dim: 2, Blocks: 1, Spline: layers.RQSpline{Bins: 2, TailBound: 2}},
}

// splineFlowFor returns a flow of net in dt with its parameters moved by
// 0.15·N(0, 1) away from the identity.
func splineFlowFor(t *testing.T, net layers.SplineFlow, dt tensor.Dtype, seed uint64) *graph.Flow {
	t.Helper()
	base := layers.NewIsotropic(net.Dim, 1.2)
	f, err := graph.NewFlow(net, base, dt, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	perturb(f.Params, rand.New(rand.NewPCG(seed, 2)), 0.15)
	return f
}

// splinePoints returns n points of scale 2 with coordinates in both tails
// and on the tail bounds ±b, rounded to dt.
func splineTestPoints(rng *rand.Rand, n, d int, b float64, dt tensor.Dtype) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, 2*rng.NormFloat64())
		}
	}
	for k, v := range []float64{b, -b, 1.5 * b, -2 * b, 0} {
		x.Set(k%n, k%d, v)
	}
	if dt == tensor.Float32 {
		for i, v := range x.RawMatrix().Data {
			x.RawMatrix().Data[i] = float64(float32(v))
		}
	}
	return x
}

// A spline flow written by FlowSample and FlowDensity reads back with
// DecodeFlow (whose own check runs both graphs against each other) as the
// same flow: samples, log-densities, the inverse and the
// maximum-likelihood gradient through the imported graphs agree with
// flowebm's fused operations to 1e-10 in float64 (1e-4 in float32).
func TestSplineFlowExportImportRoundTrip(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := roundTripTol(dt)
		for ni, net := range splineExportNets {
			f := splineFlowFor(t, net, dt, uint64(ni+1))
			label := fmt.Sprintf("%v %+v", dt, net)
			g := decodeExport(t, f, label)
			if g.Params.Dtype() != dt || !slices.Equal(g.Base.Sigma, f.Base.Sigma) {
				t.Errorf("%s: imported as %v with base σ %v", label, g.Params.Dtype(), g.Base.Sigma)
			}
			n, d := 12, net.Dim
			rng := rand.New(rand.NewPCG(uint64(ni), 9))
			b := net.Spline.WithDefaults().TailBound
			z, x := splineTestPoints(rng, n, d, b, dt), splineTestPoints(rng, n, d, b, dt)
			want, got := evalFlow(t, f, z, x), evalFlow(t, g, z, x)
			// The gradient relative to its largest coordinate.
			grad := gradByName(t, f, g, got.grad, label)
			num, den := 0.0, 0.0
			for i := range grad {
				num = math.Max(num, math.Abs(grad[i]-want.grad[i]))
				den = math.Max(den, math.Abs(want.grad[i]))
			}
			checkWorst(t, fmt.Sprintf("%s (%d-d, K=%d)", label, d, net.Spline.WithDefaults().Bins), map[string]float64{
				"x = T(z)":        relDiff(got.x.RawMatrix().Data, want.x.RawMatrix().Data),
				"log|det J_T(z)|": relDiff(got.ld, want.ld),
				"log λ(x)":        relDiff(got.lq, want.lq),
				"z = T⁻¹(x)":      relDiff(got.zx.RawMatrix().Data, want.zx.RawMatrix().Data),
				"∇α mean log λ":   num / den,
			}, tol)
		}
	}
}

// writeSplineFixtures writes every spline export in both float types with
// inputs (tails and tail bounds included) and flowebm's outputs, and the
// manifest that ort_check.js reads.
func writeSplineFixtures(t *testing.T, dir string) []fixture {
	t.Helper()
	var fx []fixture
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tag, _ := dtypeTag(dt)
		for ni, net := range splineExportNets {
			f := splineFlowFor(t, net, dt, uint64(ni+1))
			rng := rand.New(rand.NewPCG(uint64(ni), 5))
			pts := splineTestPoints(rng, 9, net.Dim, net.Spline.WithDefaults().TailBound, dt)
			fx = append(fx, writeFlowFixtures(t, dir, "spline"+string(rune('a'+ni))+"_"+tag, f, pts, true)...)
		}
	}
	writeManifest(t, dir, fx)
	return fx
}

// ONNX Runtime (onnxruntime-node) runs every spline export, sampling and
// density graphs, float64 and float32, and matches flowebm's outputs
// within crosscheck/ort_check.js's bounds (1e-10 relative in float64,
// 1e-5 in float32). Skipped unless FLOWEBM_ORT (default the user cache's
// flowebm-ort) names a folder holding node_modules/onnxruntime-node.
func TestSplineFlowExportRunsInONNXRuntime(t *testing.T) {
	checkInONNXRuntime(t, "ONNX Runtime runs the spline-flow exports", writeSplineFixtures)
}

// python3-onnx's full checker accepts every spline export (skipped
// without it).
func TestSplineFlowExportPassesONNXChecker(t *testing.T) {
	checkWithONNXChecker(t, "onnx.checker on the spline-flow exports", writeSplineFixtures)
}

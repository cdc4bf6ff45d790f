package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/layers"
)

func TestToyEnergyNetParameters(t *testing.T) {
	e := mustEBM(t, ToyEnergyNet(2, true), nil, tensor.Float64, 1)
	if got := e.Params.Count(); got != 10593 {
		t.Errorf("toy EBM has %d parameters, want 10,593 (REFERENCE §3)", got)
	}
	want := []string{"net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias", "net.4.weight", "net.4.bias", "net.6.weight", "net.6.bias", "net.8.weight", "net.8.bias"}
	names := e.Params.Names()
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if s := e.Params.Get("net.0.weight").Shape; fmt.Sprint(s) != "[32 2]" {
		t.Errorf("net.0.weight shape %v, want PyTorch's (out, in) = [32 2]", s)
	}
	// PyTorch's default init: U(−1/√fan_in, 1/√fan_in).
	w := e.Params.Get("net.2.weight").Float64s()
	bound, maxAbs := 1/math.Sqrt(32), 0.0
	for _, v := range w {
		maxAbs = math.Max(maxAbs, math.Abs(v))
	}
	if maxAbs > bound || maxAbs < 0.9*bound {
		t.Errorf("net.2.weight max |w| = %v, want just under 1/√32 = %v", maxAbs, bound)
	}
}

func TestToyEBMIsZeroAtStart(t *testing.T) {
	base := layers.NewIsotropic(2, 1.5)
	e := mustEBM(t, ToyEnergyNet(2, true), &base, tensor.Float64, 2)
	x := randMatrix(newRNG(3), 50, 2, 3)
	en := make([]float64, 50)
	grad := mat.NewDense(50, 2, nil)
	if err := e.EnergyGrad(x, en, grad); err != nil {
		t.Fatal(err)
	}
	for i, v := range en {
		if v != 0 {
			t.Fatalf("E(x_%d) = %v at start, want 0", i, v)
		}
	}
	if n := mat.Norm(grad, math.Inf(1)); n != 0 {
		t.Fatalf("‖∇E‖ = %v at start, want 0", n)
	}
	// The tilted density is then exactly the base.
	lp := make([]float64, 50)
	if err := e.LogDensity(x, lp); err != nil {
		t.Fatal(err)
	}
	for i := range lp {
		if want := base.LogProb(x.RawRowView(i)); math.Abs(lp[i]-want) > 1e-14 {
			t.Fatalf("log p̃(x_%d) = %v, want log ρ = %v", i, lp[i], want)
		}
	}
}

// activationNets covers every activation with a 3→7→5→1 MLP.
func activationNets() map[string]EnergyNet {
	acts := []layers.Activation{layers.ReLU, layers.LeakyReLU(0.2), layers.SiLU, layers.Softplus, layers.Tanh, layers.ELU, layers.Identity}
	nets := make(map[string]EnergyNet)
	for _, a := range acts {
		nets[a.String()] = MLPEnergy{layers.MLP{Name: "f", Sizes: []int{3, 7, 5, 1}, Hidden: a, Output: a}}
	}
	nets["toy"] = ToyEnergyNet(3, false)
	return nets
}

func TestEnergyGradMatchesFiniteDifferences(t *testing.T) {
	for name, net := range activationNets() {
		t.Run(name, func(t *testing.T) {
			e := mustEBM(t, net, nil, tensor.Float64, 4)
			const n = 6
			x := randMatrix(newRNG(5), n, 3, 1.5)
			en := make([]float64, n)
			grad := mat.NewDense(n, 3, nil)
			if err := e.EnergyGrad(x, en, grad); err != nil {
				t.Fatal(err)
			}
			one := make([]float64, 1)
			for i := 0; i < n; i++ {
				f := func(v []float64) float64 {
					if err := e.Energy(mat.NewDense(1, 3, v), one); err != nil {
						t.Fatal(err)
					}
					return one[0]
				}
				row := mat.Row(nil, i, x)
				if math.Abs(f(row)-en[i]) > 1e-12*math.Max(1, math.Abs(en[i])) {
					t.Errorf("E of row %d alone %v ≠ in batch %v", i, f(row), en[i])
				}
				want := fdGrad(f, row)
				if r := relErr(grad.RawRowView(i), want); r > fdRelTol {
					t.Errorf("row %d: ∇ₓE = %v, finite differences %v (rel. error %.2g)", i, grad.RawRowView(i), want, r)
				}
			}
		})
	}
}

func TestLossGradMatchesFiniteDifferences(t *testing.T) {
	for name, net := range activationNets() {
		t.Run(name, func(t *testing.T) {
			e := mustEBM(t, net, nil, tensor.Float64, 6)
			rng := newRNG(7)
			pos, neg := randMatrix(rng, 5, 3, 1), randMatrix(rng, 4, 3, 2)
			const l2 = 0.3
			grad := make([]float64, e.Params.Count())
			loss, err := e.LossGrad(pos, neg, l2, grad)
			if err != nil {
				t.Fatal(err)
			}
			theta := e.Params.Flatten(nil)
			f := func(v []float64) float64 {
				e.Params.SetFlat(v)
				defer e.Params.SetFlat(theta)
				return referenceLoss(t, e, pos, neg, l2)
			}
			if ref := f(theta); math.Abs(ref-loss) > 1e-12*math.Max(1, math.Abs(ref)) {
				t.Errorf("loss %v, reference %v", loss, ref)
			}
			if r := relErr(grad, fdGrad(f, theta)); r > fdRelTol {
				t.Errorf("parameter gradient rel. error %.2g > %g", r, fdRelTol)
			}
		})
	}
}

// referenceLoss evaluates the loss from energies alone.
func referenceLoss(t testing.TB, e *EBM, pos, neg *mat.Dense, l2 float64) float64 {
	mom := func(x *mat.Dense) (m1, m2 float64) {
		n, _ := x.Dims()
		en := make([]float64, n)
		if err := e.Energy(x, en); err != nil {
			t.Fatal(err)
		}
		for _, v := range en {
			m1 += v / float64(n)
			m2 += v * v / float64(n)
		}
		return
	}
	p1, p2 := mom(pos)
	n1, n2 := mom(neg)
	return p1 - n1 + l2*(p2+n2)
}

func TestTiltedLogDensityGrad(t *testing.T) {
	base := layers.NewDiagonal([]float64{0.7, 1.3, 2})
	e := mustEBM(t, ToyEnergyNet(3, false), &base, tensor.Float64, 8)
	const n = 4
	x := randMatrix(newRNG(9), n, 3, 1)
	lp := make([]float64, n)
	grad := mat.NewDense(n, 3, nil)
	if err := e.LogDensityGrad(x, lp, grad); err != nil {
		t.Fatal(err)
	}
	one := make([]float64, 1)
	for i := 0; i < n; i++ {
		f := func(v []float64) float64 {
			if err := e.LogDensity(mat.NewDense(1, 3, v), one); err != nil {
				t.Fatal(err)
			}
			return one[0]
		}
		row := mat.Row(nil, i, x)
		// Value: −E + log ρ.
		en := make([]float64, 1)
		if err := e.Energy(mat.NewDense(1, 3, row), en); err != nil {
			t.Fatal(err)
		}
		if want := -en[0] + base.LogProb(row); math.Abs(lp[i]-want) > 1e-12 {
			t.Errorf("log p̃ = %v, want %v", lp[i], want)
		}
		if r := relErr(grad.RawRowView(i), fdGrad(f, row)); r > fdRelTol {
			t.Errorf("row %d: ∇ log p̃ rel. error %.2g", i, r)
		}
	}
}

// TestNoGradientAccumulation checks the trap of REFERENCE §6: a parameter
// gradient computed after many x-gradient, energy and sampling calls equals
// one computed fresh, bit for bit.
func TestNoGradientAccumulation(t *testing.T) {
	base := layers.NewIsotropic(2, 1)
	e := mustEBM(t, ToyEnergyNet(2, false), &base, tensor.Float64, 10)
	f := randomFlow(t, layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8}}, 1, tensor.Float64, 11)
	rng := newRNG(12)
	pos, neg := randMatrix(rng, 16, 2, 1), randMatrix(rng, 16, 2, 1)
	fresh := make([]float64, e.Params.Count())
	if _, err := e.LossGrad(pos, neg, 0.1, fresh); err != nil {
		t.Fatal(err)
	}
	freshFlow := make([]float64, f.Params.Count())
	if _, err := f.MLGrad(neg, freshFlow); err != nil {
		t.Fatal(err)
	}
	lat, err := NewLatent(f, e)
	if err != nil {
		t.Fatal(err)
	}
	lp := make([]float64, 16)
	g := mat.NewDense(16, 2, nil)
	x := mat.NewDense(16, 2, nil)
	for k := 0; k < 25; k++ {
		if err := e.LogDensityGrad(neg, lp, g); err != nil {
			t.Fatal(err)
		}
		if err := f.Sample(rng, x, lp); err != nil {
			t.Fatal(err)
		}
		if err := lat.LogDensityGrad(x, lp, g); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReverseKLGrad(x, e, make([]float64, f.Params.Count())); err != nil {
			t.Fatal(err)
		}
	}
	again := make([]float64, e.Params.Count())
	if _, err := e.LossGrad(pos, neg, 0.1, again); err != nil {
		t.Fatal(err)
	}
	againFlow := make([]float64, f.Params.Count())
	if _, err := f.MLGrad(neg, againFlow); err != nil {
		t.Fatal(err)
	}
	for i := range fresh {
		if fresh[i] != again[i] {
			t.Fatalf("EBM gradient[%d] changed from %v to %v after other calls", i, fresh[i], again[i])
		}
	}
	for i := range freshFlow {
		if freshFlow[i] != againFlow[i] {
			t.Fatalf("flow gradient[%d] changed from %v to %v after other calls", i, freshFlow[i], againFlow[i])
		}
	}
}

func TestRepeatedCallsAndBatchSizes(t *testing.T) {
	e := mustEBM(t, ToyEnergyNet(2, false), nil, tensor.Float64, 13)
	x := randMatrix(newRNG(14), 33, 2, 2)
	x0 := mat.DenseCopyOf(x)
	theta := e.Params.Flatten(nil)
	first := make([]float64, 33)
	if err := e.Energy(x, first); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 7, 33} {
		part := make([]float64, n)
		for rep := 0; rep < 3; rep++ {
			if err := e.Energy(x.Slice(0, n, 0, 2), part); err != nil {
				t.Fatal(err)
			}
			for i := range part {
				if math.Abs(part[i]-first[i]) > 1e-13 {
					t.Fatalf("batch %d, repeat %d: E[%d] = %v, full batch gives %v", n, rep, i, part[i], first[i])
				}
			}
		}
	}
	if !mat.Equal(x, x0) {
		t.Fatal("evaluation modified its input")
	}
	g := mat.NewDense(33, 2, nil)
	if err := e.EnergyGrad(x, first, g); err != nil {
		t.Fatal(err)
	}
	if _, err := e.LossGrad(x, x, 0.5, make([]float64, e.Params.Count())); err != nil {
		t.Fatal(err)
	}
	again := e.Params.Flatten(nil)
	for i := range theta {
		if theta[i] != again[i] {
			t.Fatal("evaluation modified the parameters")
		}
	}
}

func TestBadInputsAreErrors(t *testing.T) {
	e := mustEBM(t, ToyEnergyNet(2, false), nil, tensor.Float64, 15)
	if err := e.Energy(mat.NewDense(3, 4, nil), make([]float64, 3)); err == nil {
		t.Error("wrong number of columns: no error")
	}
	if err := e.Energy(mat.NewDense(3, 2, nil), make([]float64, 2)); err == nil {
		t.Error("short energy buffer: no error")
	}
	if _, err := e.LossGrad(mat.NewDense(3, 2, nil), mat.NewDense(3, 2, nil), 0, make([]float64, 5)); err == nil {
		t.Error("short gradient buffer: no error")
	}
	bad := layers.NewIsotropic(3, 1)
	if _, err := NewEBM(ToyEnergyNet(2, true), &bad, tensor.Float64, newRNG(1)); err == nil {
		t.Error("tilt of the wrong dimension: no error")
	}
	if _, err := NewEBM(ToyEnergyNet(2, true), nil, tensor.Int, newRNG(1)); err == nil {
		t.Error("integer dtype: no error")
	}
}

// TestFloat32MatchesFloat64 compares float32 gradients with the float64
// model holding the same (float32-rounded) weights. Float32 has unit
// round-off 6e-8; through five layers of sums of at most 64 terms the
// accumulated relative error stays below about 64·5·6e-8 ≈ 2e-5, so the
// bound is 1e-4.
func TestFloat32MatchesFloat64(t *testing.T) {
	const tol = 1e-4
	e32 := mustEBM(t, ToyEnergyNet(2, false), nil, tensor.Float32, 16)
	e64 := mustEBM(t, ToyEnergyNet(2, false), nil, tensor.Float64, 16)
	e64.Params.SetFlat(e32.Params.Flatten(nil))
	rng := newRNG(17)
	x := randMatrix(rng, 20, 2, 1.5)
	for i, v := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = float64(float32(v))
	}
	en32, en64 := make([]float64, 20), make([]float64, 20)
	g32, g64 := mat.NewDense(20, 2, nil), mat.NewDense(20, 2, nil)
	if err := e32.EnergyGrad(x, en32, g32); err != nil {
		t.Fatal(err)
	}
	if err := e64.EnergyGrad(x, en64, g64); err != nil {
		t.Fatal(err)
	}
	if r := relErr(en32, en64); r > tol {
		t.Errorf("float32 energies rel. error %.2g", r)
	}
	if r := relErr(g32.RawMatrix().Data, g64.RawMatrix().Data); r > tol {
		t.Errorf("float32 x-gradients rel. error %.2g", r)
	}
	p32, p64 := make([]float64, e32.Params.Count()), make([]float64, e64.Params.Count())
	neg := randMatrix(rng, 20, 2, 1)
	if _, err := e32.LossGrad(x, neg, 0.1, p32); err != nil {
		t.Fatal(err)
	}
	if _, err := e64.LossGrad(x, neg, 0.1, p64); err != nil {
		t.Fatal(err)
	}
	if r := relErr(p32, p64); r > tol {
		t.Errorf("float32 parameter gradient rel. error %.2g", r)
	}
}

// Probe 68 A1: a parameter of no values (an ONNX file's empty float
// initializer) panicked in NewParams; it is refused, named.
func TestNewParamsRefusesEmpty(t *testing.T) {
	_, err := NewParams([]layers.ParamSpec{{Name: "scales", Shape: []int{0}}}, tensor.Float64, rand.New(rand.NewPCG(1, 2)))
	if err == nil || !strings.Contains(err.Error(), `parameter "scales" has shape [0], no values`) {
		t.Errorf("%v", err)
	}
}

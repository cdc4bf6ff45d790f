package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	G "gorgonia.org/gorgonia"
)

// Defaults of RQSpline and SplineFlow.
const (
	DefaultSplineBins      = 8    // K, the number of bins
	DefaultSplineTailBound = 5.0  // B: the spline maps [−B, B] onto itself
	DefaultSplineMinBin    = 1e-3 // min_bin_width, min_bin_height and min_derivative
)

// RQSpline is the monotone rational-quadratic spline of Durkan, Bekasov,
// Murray and Papamakarios (2019, "Neural Spline Flows") with linear tails,
// parametrised as nflows' unconstrained_rational_quadratic_spline. From
// 3K−1 unconstrained numbers per coordinate (K widths u_w, K heights u_h,
// K−1 interior derivatives u_d):
//
//	w = m_w + (1 − K·m_w)·softmax(u_w),  knots X_0 = −B, X_k = −B + 2B·Σ_{i<k} w_i, X_K = B,
//	h = m_h + (1 − K·m_h)·softmax(u_h),  knots Y_k likewise,
//	δ_k = m_δ + softplus(u_d[k−1]) for 0 < k < K,  δ_0 = δ_K = 1,
//
// and in bin k (X_k ≤ x < X_{k+1}), with W = X_{k+1} − X_k, H = Y_{k+1} −
// Y_k, s = H/W and ξ = (x − X_k)/W,
//
//	y = Y_k + H·(s ξ² + δ_k ξ(1−ξ)) / (s + (δ_k + δ_{k+1} − 2s) ξ(1−ξ)),
//	dy/dx = s²(δ_{k+1} ξ² + 2s ξ(1−ξ) + δ_k (1−ξ)²) / (s + (δ_k + δ_{k+1} − 2s) ξ(1−ξ))².
//
// Outside [−B, B] the spline is the identity (log-derivative 0); the
// boundary derivatives are 1, so the map is C¹. nflows gets δ_0 = δ_K = 1
// from the padding constant log(e^{1−m_δ} − 1), which softplus maps to
// 1 − m_δ; flowebm sets them to 1 exactly (the two agree to rounding). The
// inverse solves the quadratic for ξ with nflows' root formula
// ξ = 2c / (−b − √(b² − 4ac)).
//
// Zero fields take the defaults: Bins DefaultSplineBins, TailBound
// DefaultSplineTailBound, the three minima DefaultSplineMinBin.
type RQSpline struct {
	Bins          int     // K
	TailBound     float64 // B
	MinBinWidth   float64 // m_w
	MinBinHeight  float64 // m_h
	MinDerivative float64 // m_δ
}

// WithDefaults returns s with its zero fields set to the defaults.
func (s RQSpline) WithDefaults() RQSpline {
	if s.Bins == 0 {
		s.Bins = DefaultSplineBins
	}
	if s.TailBound == 0 {
		s.TailBound = DefaultSplineTailBound
	}
	if s.MinBinWidth == 0 {
		s.MinBinWidth = DefaultSplineMinBin
	}
	if s.MinBinHeight == 0 {
		s.MinBinHeight = DefaultSplineMinBin
	}
	if s.MinDerivative == 0 {
		s.MinDerivative = DefaultSplineMinBin
	}
	return s
}

// Validate checks the spline's settings (after WithDefaults).
func (s RQSpline) Validate() error {
	switch {
	case s.Bins < 2 || s.Bins > 1<<16:
		return fmt.Errorf("layers: spline with %d bins, want 2 to 65536 (with one bin and unit end derivatives the spline is the identity)", s.Bins)
	case !(s.TailBound > 0) || math.IsInf(s.TailBound, 0):
		return fmt.Errorf("layers: spline tail bound %v, want a positive finite number", s.TailBound)
	case !(s.MinBinWidth > 0) || s.MinBinWidth*float64(s.Bins) >= 1:
		return fmt.Errorf("layers: spline min bin width %v with %d bins, want 0 < K·width < 1", s.MinBinWidth, s.Bins)
	case !(s.MinBinHeight > 0) || s.MinBinHeight*float64(s.Bins) >= 1:
		return fmt.Errorf("layers: spline min bin height %v with %d bins, want 0 < K·height < 1", s.MinBinHeight, s.Bins)
	case !(s.MinDerivative > 0) || s.MinDerivative >= 1:
		return fmt.Errorf("layers: spline min derivative %v, want in (0, 1)", s.MinDerivative)
	}
	return nil
}

// ParamsPerCoord is 3K−1, the number of unconstrained parameters of one
// coordinate's spline: K widths, K heights, K−1 derivatives, in that order.
func (s RQSpline) ParamsPerCoord() int { return 3*s.Bins - 1 }

// DerivativeOffset is log(e^{1−m_δ} − 1), the raw derivative parameter
// that softplus maps to derivative 1 (nflows' boundary constant). A
// conditioner whose derivative outputs equal it, with equal width and
// height outputs, makes the spline the identity.
func (s RQSpline) DerivativeOffset() float64 { return math.Log(math.Expm1(1 - s.MinDerivative)) }

// Forward returns y = s(x) and log(dy/dx) for one coordinate with raw
// parameters raw (len ParamsPerCoord(), after WithDefaults), as the fused
// Gorgonia operations compute them. Zero fields of s take the defaults.
func (s RQSpline) Forward(x float64, raw []float64) (y, logdet float64) {
	return s.evalOne(x, raw, false)
}

// Inverse returns x = s⁻¹(y) and log(dx/dy) = −log(s'(x)).
func (s RQSpline) Inverse(y float64, raw []float64) (x, logdet float64) {
	return s.evalOne(y, raw, true)
}

// evalOne is Forward (inverse: Inverse) at v.
func (s RQSpline) evalOne(v float64, raw []float64, inverse bool) (out, logdet float64) {
	s = s.WithDefaults()
	var e rqEval
	s.eval(newRQKnots(s.Bins), v, raw, inverse, &e, false)
	return e.out, e.ld
}

// SplineCoupling is one coupling of a SplineFlow: the coordinates
// Transformed go through the spline, whose parameters the conditioner Net
// computes from the coordinates Identity, which pass unchanged:
//
//	y[Identity] = x[Identity],  y[Transformed] = s(x[Transformed]; Net(x[Identity])),
//
// Net maps len(Identity) inputs to len(Transformed)·(3K−1) outputs, the
// parameters of coordinate Transformed[j] at [j·(3K−1), (j+1)·(3K−1)) (as
// nflows' PiecewiseRationalQuadraticCouplingTransform lays them out; unlike
// it with a ResidualNet conditioner, the raw widths and heights are not
// divided by √hidden_features).
type SplineCoupling struct {
	Dim                   int
	Identity, Transformed []int
	Net                   MLP
	Spline                RQSpline // with its defaults set
}

// ParamSpecs lists the conditioner's parameters.
func (c SplineCoupling) ParamSpecs() []ParamSpec { return c.Net.ParamSpecs() }

// Forward returns y and log|det ∂y/∂x| (B).
func (c SplineCoupling) Forward(b Binder, x *G.Node) (y, logdet *G.Node, err error) {
	return c.apply(b, x, false)
}

// Inverse returns x = Forward⁻¹(y) and log|det ∂x/∂y| (B).
func (c SplineCoupling) Inverse(b Binder, y *G.Node) (x, logdet *G.Node, err error) {
	return c.apply(b, y, true)
}

func (c SplineCoupling) apply(b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error) {
	_, d, err := batchOf(x)
	if err != nil {
		return nil, nil, err
	}
	if d != c.Dim {
		return nil, nil, fmt.Errorf("layers: spline coupling %s has dimension %d, input has %d", c.Net.Name, c.Dim, d)
	}
	xc, err := G.ApplyOp(splineColumns{cols: c.Identity}, x)
	if err != nil {
		return nil, nil, err
	}
	theta, err := c.Net.Apply(b, xc)
	if err != nil {
		return nil, nil, err
	}
	// One evaluation of the splines gives y and the log-determinant
	// (B, d+1), split into the two outputs.
	yld, err := G.ApplyOp(rqsOp{spline: c.Spline, cols: c.Transformed, inverse: inverse, joint: true}, x, theta)
	if err != nil {
		return nil, nil, err
	}
	y, err := G.ApplyOp(splinePart{d: d}, yld)
	if err != nil {
		return nil, nil, err
	}
	ld, err := G.ApplyOp(splinePart{d: d, logdet: true}, yld)
	if err != nil {
		return nil, nil, err
	}
	return y, ld, nil
}

// SplineFlow is a normalizing flow of rational-quadratic neural spline
// couplings (Durkan et al. 2019; flowMC's default flow), beside RealNVP:
// Blocks blocks of two SplineCouplings with complementary masks (Mask as
// RealNVP's: 1 marks a transformed coordinate of the odd couplings, even
// couplings transform the complement). Coupling k's conditioner is an MLP
// len(Identity) → Hidden… → len(Transformed)·(3K−1) with parameters
// Name.k.net.i.{weight,bias}. Hidden layers get PyTorch's default
// initialisation; the last layer's weights are 0 (or N(0,
// (InitScale/√fan_in)²)) and its bias is 0 on the width and height outputs
// and RQSpline.DerivativeOffset on the derivative outputs, so that with
// InitScale 0 every spline, and the flow, starts as the identity.
//
// SplineFlow implements graph.FlowNet.
type SplineFlow struct {
	Dim        int
	Blocks     int
	Hidden     []int      // hidden widths of the conditioners
	Activation Activation // hidden activation; zero value means ReLU
	Mask       string     // MaskHalf (default), MaskCheckerboard or MaskCheckerboard2D
	MaskWidth  int        // grid width for MaskCheckerboard2D
	Name       string     // parameter prefix; "" means "splines"
	// InitScale is the scale of the conditioners' last-layer weights at
	// initialisation; 0 (the default) makes them zero and the flow the
	// identity.
	InitScale float64
	// Spline sets the bins, tail bound and minima (zero fields: defaults,
	// K = 8, B = 5, minima 1e-3).
	Spline RQSpline
}

// BaseMask returns the mask of the odd couplings (1 = transformed); even
// couplings use its complement. The masks are RealNVP's.
func (f SplineFlow) BaseMask() ([]float64, error) { return baseMask(f.Mask, f.Dim, f.MaskWidth) }

// Couplings returns the 2·Blocks couplings in forward order.
func (f SplineFlow) Couplings() ([]SplineCoupling, error) {
	if f.Dim < 2 || f.Blocks < 1 {
		return nil, fmt.Errorf("layers: SplineFlow needs Dim ≥ 2 and Blocks ≥ 1, have %d and %d", f.Dim, f.Blocks)
	}
	if f.InitScale < 0 || math.IsNaN(f.InitScale) || math.IsInf(f.InitScale, 0) {
		return nil, fmt.Errorf("layers: SplineFlow init scale %v, want ≥ 0", f.InitScale)
	}
	for _, h := range f.Hidden {
		if h < 1 {
			return nil, fmt.Errorf("layers: SplineFlow hidden widths %v, want positive", f.Hidden)
		}
	}
	sp := f.Spline.WithDefaults()
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	base, err := f.BaseMask()
	if err != nil {
		return nil, err
	}
	act := f.Activation
	if act.Kind == "" {
		act = ReLU
	}
	prefix := f.Name
	if prefix == "" {
		prefix = "splines"
	}
	p := sp.ParamsPerCoord()
	cs := make([]SplineCoupling, 2*f.Blocks)
	for k := range cs {
		var id, tr []int
		for i, m := range base {
			if (m == 1) == (k%2 == 1) {
				tr = append(tr, i)
			} else {
				id = append(id, i)
			}
		}
		if len(id) == 0 || len(tr) == 0 {
			return nil, fmt.Errorf("layers: SplineFlow mask %v leaves a coupling with nothing to transform or condition on", base)
		}
		sizes := append(append([]int{len(id)}, f.Hidden...), len(tr)*p)
		net := MLP{Name: prefix + "." + strconv.Itoa(k) + ".net", Sizes: sizes, Hidden: act,
			LastWeightInit: Zeros, LastBiasInit: splineBiasInit(sp)}
		if f.InitScale > 0 {
			net.LastWeightInit = ScaledNormal(f.InitScale)
		}
		cs[k] = SplineCoupling{Dim: f.Dim, Identity: id, Transformed: tr, Net: net, Spline: sp}
	}
	return cs, nil
}

// splineBiasInit sets a conditioner's last bias so that its splines start
// as the identity: 0 for widths and heights, DerivativeOffset for the
// derivatives.
func splineBiasInit(s RQSpline) Init {
	k, p, c := s.Bins, s.ParamsPerCoord(), s.DerivativeOffset()
	return func(_ *rand.Rand, _ int, values []float64) {
		for i := range values {
			values[i] = 0
			if i%p >= 2*k {
				values[i] = c
			}
		}
	}
}

// ParamSpecs lists the parameters of every coupling.
func (f SplineFlow) ParamSpecs() ([]ParamSpec, error) { return couplingParamSpecs(f.Couplings()) }

// Forward returns x = T(z) and log|det J_T(z)| (B).
func (f SplineFlow) Forward(b Binder, z *G.Node) (x, logdet *G.Node, err error) {
	return f.pass(b, z, false)
}

// Inverse returns z = T⁻¹(x) and log|det J_{T⁻¹}(x)| (B).
func (f SplineFlow) Inverse(b Binder, x *G.Node) (z, logdet *G.Node, err error) {
	return f.pass(b, x, true)
}

func (f SplineFlow) pass(b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error) {
	cs, err := f.Couplings()
	if err != nil {
		return nil, nil, err
	}
	return flowPass(b, x, cs, inverse)
}

// Dimension is Dim: the dimension of z and x (graph.FlowNet).
func (f SplineFlow) Dimension() int { return f.Dim }

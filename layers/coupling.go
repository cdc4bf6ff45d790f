package layers

import (
	"fmt"
	"strconv"

	G "gorgonia.org/gorgonia"
)

// Coupling is the residual affine coupling of h2o64/flow_mcmc. With mask m
// (1 where coordinates are transformed) and x_c = x⊙(1−m):
//
//	s = tanh(S(x_c))⊙m·dt,  t = T(x_c)⊙m·dt,
//	y = (x + t)⊙exp(s),     log|det ∂y/∂x| = Σ_j s_j,
//
// and the inverse is x = y⊙exp(−s) − t with s, t computed from y⊙(1−m) = x_c.
// S and T map the full dimension to itself; their input is the masked x.
// In a graph, everything but S and T is fused Gorgonia operations with
// their own gradient operations (coupling_op.go).
type Coupling struct {
	Mask []float64
	S, T MLP
	Dt   float64
}

// ParamSpecs lists S's then T's parameters.
func (c Coupling) ParamSpecs() []ParamSpec {
	return append(c.S.ParamSpecs(), c.T.ParamSpecs()...)
}

// Forward returns y and log|det ∂y/∂x| (B).
func (c Coupling) Forward(b Binder, x *G.Node) (y, logdet *G.Node, err error) {
	return c.apply(b, x, false)
}

// Inverse returns x = Forward⁻¹(y) and log|det ∂x/∂y| (B).
func (c Coupling) Inverse(b Binder, y *G.Node) (x, logdet *G.Node, err error) {
	return c.apply(b, y, true)
}

// apply adds the coupling (inverse: its inverse) of x to x's graph: the
// masked input, the S and T networks, and the fused elementwise
// operations of coupling_op.go for a = tanh(S(x_c)), exp(±s), the output
// and the log-determinant, whose gradients are fused operations too.
func (c Coupling) apply(b Binder, x *G.Node, inverse bool) (y, logdet *G.Node, err error) {
	if _, d, err := batchOf(x); err != nil {
		return nil, nil, err
	} else if d != len(c.Mask) {
		return nil, nil, fmt.Errorf("layers: coupling %s has dimension %d, input has %d", c.S.Name, len(c.Mask), d)
	}
	// The mask and tanh do not depend on the direction: their operations
	// are the forward ones, so that both directions of a coupling on one
	// input share those nodes.
	fwd := couplingOp{spec: newCouplingSpec(c.Mask, c.Dt)}
	op := fwd
	op.inverse = inverse
	xc, err := G.ApplyOp(fwd.with(couplingMask), x)
	if err != nil {
		return nil, nil, err
	}
	sRaw, err := c.S.Apply(b, xc)
	if err != nil {
		return nil, nil, err
	}
	tRaw, err := c.T.Apply(b, xc)
	if err != nil {
		return nil, nil, err
	}
	a, err := G.ApplyOp(fwd.with(couplingTanh), sRaw)
	if err != nil {
		return nil, nil, err
	}
	e, err := G.ApplyOp(op.with(couplingExp), a)
	if err != nil {
		return nil, nil, err
	}
	if y, err = G.ApplyOp(op.with(couplingAffine), x, sRaw, tRaw, e, a); err != nil {
		return nil, nil, err
	}
	logdet, err = G.ApplyOp(op.with(couplingLogDet), sRaw, a)
	return y, logdet, err
}

// Mask kinds of RealNVP.
const (
	MaskHalf           = "half"           // the first ⌊d/2⌋ coordinates, then the rest
	MaskCheckerboard   = "checkerboard"   // even, then odd coordinates
	MaskCheckerboard2D = "checkerboard2d" // (row+col) even, then odd, on a grid of MaskWidth columns
)

// RealNVP initialisations (RealNVP.Init).
const (
	InitSmall     = "small"
	InitSmallLast = "small-last"
)

// RealNVP is the flow of h2o64/flow_mcmc: Blocks blocks of two couplings with
// complementary masks, each block applied BlockDepth times with shared
// weights, dt = 2/(Blocks·2·BlockDepth), every layer initialised
// N(0, (InitScale/√fan_in)²) with zero biases so that the flow starts at the
// identity. Coupling k (k = 2·block + j) has parameters
// Name.k.s.i.{weight,bias} and Name.k.t.i.{weight,bias}.
type RealNVP struct {
	Dim        int
	Blocks     int
	BlockDepth int        // 0 means 1
	Hidden     []int      // hidden widths of the s and t MLPs: Dim→Hidden…→Dim
	Activation Activation // hidden activation of s and t; zero value means ReLU (the reference's default)
	Mask       string     // MaskHalf (default), MaskCheckerboard or MaskCheckerboard2D
	MaskWidth  int        // grid width for MaskCheckerboard2D
	InitScale  float64    // 0 means 1e-6
	Name       string     // parameter prefix; "" means "couplings"
	// Init is InitSmall (default: every layer of s and t drawn at
	// InitScale, as h2o64/flow_mcmc) or InitSmallLast (hidden layers
	// PyTorch's default, only the output layers at InitScale). Both start
	// at the identity up to about InitScale; with InitSmall the gradients
	// of the hidden layers are products of InitScale-sized weights, far
	// below Adam's ε, so the couplings take thousands of steps to become
	// more than affine maps.
	Init string
}

func (r RealNVP) depth() int {
	if r.BlockDepth <= 0 {
		return 1
	}
	return r.BlockDepth
}

// BaseMask returns the mask of the odd couplings (1 = transformed); even
// couplings use its complement.
func (r RealNVP) BaseMask() ([]float64, error) { return baseMask(r.Mask, r.Dim, r.MaskWidth) }

// baseMask is the mask of the odd couplings of a RealNVP or a SplineFlow
// of dimension dim with mask kind (MaskHalf if ""; width is
// MaskCheckerboard2D's number of columns).
func baseMask(kind string, dim, width int) ([]float64, error) {
	m := make([]float64, dim)
	switch kind {
	case "", MaskHalf:
		for i := dim / 2; i < dim; i++ {
			m[i] = 1
		}
	case MaskCheckerboard:
		for i := 1; i < dim; i += 2 {
			m[i] = 1
		}
	case MaskCheckerboard2D:
		if width <= 0 || dim%width != 0 {
			return nil, fmt.Errorf("layers: checkerboard2d mask needs a width dividing %d, have %d", dim, width)
		}
		for i := range m {
			if (i/width+i%width)%2 == 1 {
				m[i] = 1
			}
		}
	default:
		return nil, fmt.Errorf("layers: unknown mask %q (want %s, %s or %s)", kind, MaskHalf, MaskCheckerboard, MaskCheckerboard2D)
	}
	return m, nil
}

// Couplings returns the 2·Blocks distinct couplings in forward order of one pass.
func (r RealNVP) Couplings() ([]Coupling, error) {
	if r.Dim < 2 || r.Blocks < 1 {
		return nil, fmt.Errorf("layers: RealNVP needs Dim ≥ 2 and Blocks ≥ 1, have %d and %d", r.Dim, r.Blocks)
	}
	base, err := r.BaseMask()
	if err != nil {
		return nil, err
	}
	if r.Init != "" && r.Init != InitSmall && r.Init != InitSmallLast {
		return nil, fmt.Errorf("layers: RealNVP init %q, want %q or %q", r.Init, InitSmall, InitSmallLast)
	}
	act := r.Activation
	if act.Kind == "" {
		act = ReLU
	}
	scale := r.InitScale
	if scale == 0 {
		scale = 1e-6
	}
	prefix := r.Name
	if prefix == "" {
		prefix = "couplings"
	}
	sizes := append(append([]int{r.Dim}, r.Hidden...), r.Dim)
	dt := 2 / float64(r.Blocks*2*r.depth())
	cs := make([]Coupling, 2*r.Blocks)
	for k := range cs {
		mask := make([]float64, r.Dim)
		for i, m := range base {
			if k%2 == 0 {
				mask[i] = 1 - m
			} else {
				mask[i] = m
			}
		}
		name := prefix + "." + strconv.Itoa(k)
		mlp := func(n string) MLP {
			m := MLP{Name: name + "." + n, Sizes: sizes, Hidden: act, WeightInit: ScaledNormal(scale), BiasInit: Zeros}
			if r.Init == InitSmallLast {
				m.WeightInit, m.BiasInit = TorchUniform, TorchUniform
				m.LastWeightInit, m.LastBiasInit = ScaledNormal(scale), Zeros
			}
			return m
		}
		cs[k] = Coupling{Mask: mask, S: mlp("s"), T: mlp("t"), Dt: dt}
	}
	return cs, nil
}

// ParamSpecs lists the parameters of every coupling.
func (r RealNVP) ParamSpecs() ([]ParamSpec, error) { return couplingParamSpecs(r.Couplings()) }

// couplingParamSpecs lists the parameters of the couplings cs of a flow
// (err: the error of making them).
func couplingParamSpecs[C interface{ ParamSpecs() []ParamSpec }](cs []C, err error) ([]ParamSpec, error) {
	if err != nil {
		return nil, err
	}
	var s []ParamSpec
	for _, c := range cs {
		s = append(s, c.ParamSpecs()...)
	}
	return s, nil
}

// Forward returns x = T(z) and log|det J_T(z)| (B).
func (r RealNVP) Forward(b Binder, z *G.Node) (x, logdet *G.Node, err error) {
	return r.pass(b, z, false)
}

// Inverse returns z = T⁻¹(x) and log|det J_{T⁻¹}(x)| (B).
func (r RealNVP) Inverse(b Binder, x *G.Node) (z, logdet *G.Node, err error) {
	return r.pass(b, x, true)
}

func (r RealNVP) pass(b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error) {
	cs, err := r.Couplings()
	if err != nil {
		return nil, nil, err
	}
	// Each block's pair of couplings runs depth times.
	var steps []Coupling
	for blk := range r.Blocks {
		for range r.depth() {
			steps = append(steps, cs[2*blk], cs[2*blk+1])
		}
	}
	return flowPass(b, x, steps, inverse)
}

// flowPass runs the couplings steps of a flow's forward pass on x in
// their order (inverse: their inverses in reverse order) and returns the
// output and the summed log-determinant (B).
func flowPass[C interface {
	apply(b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error)
}](b Binder, x *G.Node, steps []C, inverse bool) (*G.Node, *G.Node, error) {
	var total *G.Node
	for j := range steps {
		c := steps[j]
		if inverse {
			c = steps[len(steps)-1-j]
		}
		var ld *G.Node
		var err error
		if x, ld, err = c.apply(b, x, inverse); err != nil {
			return nil, nil, err
		}
		if total == nil {
			total = ld
		} else if total, err = G.Add(total, ld); err != nil {
			return nil, nil, err
		}
	}
	return x, total, nil
}

// Dimension is Dim: the dimension of z and x (graph.FlowNet).
func (r RealNVP) Dimension() int { return r.Dim }

package layers

import (
	"fmt"
	"strconv"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Image coupling kinds (ImageCoupling.Kind).
const (
	// CouplingCheckerboard transforms the pixels (i, j) of the squeezed
	// image with i + j of one parity, all channels.
	CouplingCheckerboard = "checkerboard"
	// CouplingChannel transforms one half of the channels of the squeezed
	// image.
	CouplingChannel = "channel"
)

// ImageRealNVP is a RealNVP for images with convolutional coupling
// networks, in Dinh et al. (2017)'s multi-scale layout scaled to a CPU,
// with the residual affine couplings of h2o64/flow_mcmc (layers.Coupling):
// with mask m (1 where coordinates are transformed) and x_c = x⊙(1 − m),
//
//	s = tanh(S(x_c))⊙m·dt,  t = T(x_c)⊙m·dt,
//	y = (x + t)⊙exp(s),     log|det ∂y/∂x| = Σ s,
//
// inverse x = y⊙exp(−s) − t. Scale k = 0 … Scales−1 has Checkerboard
// couplings with checkerboard masks on the image squeezed k times (the
// parity alternating), then ChannelWise couplings with channel masks on
// the image squeezed k + 1 times (the halves alternating); squeezing is
// space-to-depth (C, H, W) → (4C, H/2, W/2) in Glow's order (channel
// 4c + 2·dy + dx holds pixel (2i + dy, 2j + dx) of channel c). Unlike
// Dinh et al., no dimensions are factored out: every coupling sees the
// whole image, and x keeps the (C, H, W) layout of z, so that the flow is
// a map of images (B, C·H·W) → (B, C·H·W).
//
// The conditioner of a coupling squeezed q times is a small ResNet on
// (B, 4^q·C, H/2^q, W/2^q): a 3×3 convolution to Hidden channels,
// ResBlocks residual blocks, the activation, and two 3×3 heads s and t
// back to 4^q·C channels, whose outputs are unsqueezed to the image.
// Coupling k has parameters Name.k.in, Name.k.blocks.r.conv{1,2},
// Name.k.s and Name.k.t (weight and bias each). The heads are
// initialised N(0, (InitScale/√fan_in)²) with zero biases and the rest
// with PyTorch's default (RealNVP's InitSmallLast), so the flow starts as
// the identity up to about InitScale.
//
// The zero value is the default flow for 1×28×28 images: 2 scales of 2
// checkerboard and 2 channel couplings (8 couplings, dt = 1/4), 32 hidden
// channels, one residual block, ReLU, 191,524 parameters. It implements
// graph.FlowNet.
type ImageRealNVP struct {
	Name  string     // parameter prefix; "" means "couplings"
	Image ImageShape // zero value means 1×28×28
	// Scales is the number of scales; 0 means 2. H and W must be
	// divisible by 2^Scales.
	Scales int
	// Checkerboard and ChannelWise are the numbers of couplings of each
	// kind per scale; 0 means 2, a negative number none.
	Checkerboard, ChannelWise int
	// Hidden is the conditioners' width; 0 means 32.
	Hidden int
	// ResBlocks is the number of residual blocks of each conditioner: 0
	// means 1, a negative number none.
	ResBlocks int
	// Activation is the conditioners' non-linearity; the zero value means
	// ReLU (the reference RealNVP's default).
	Activation Activation
	// InitScale is the scale of the heads' initialisation; 0 means 1e-6.
	InitScale float64
	// Dt is the couplings' step; 0 means 2/(number of couplings), as
	// RealNVP's 2/(Blocks·2·BlockDepth): each coordinate moves for a total
	// time of about 1.
	Dt float64
}

// ImageCoupling is one coupling of an ImageRealNVP.
type ImageCoupling struct {
	Kind    string // CouplingCheckerboard or CouplingChannel
	Squeeze int    // times the conditioner's input is squeezed
	Parity  int    // which half is transformed: 0 or 1
	// Mask is 1 where coordinates are transformed, in the (C, H, W) layout
	// of the image.
	Mask []float64
	// In, Blocks, S and T are the conditioner's layers.
	In     Conv2d
	Blocks []ResBlock
	S, T   Conv2d
	Act    Activation
	Dt     float64
	Image  ImageShape // the unsqueezed image
}

func defaultCount(n int) int {
	switch {
	case n == 0:
		return 2
	case n < 0:
		return 0
	}
	return n
}

// WithDefaults returns r with every zero field set to its default.
func (r ImageRealNVP) WithDefaults() ImageRealNVP {
	if r.Name == "" {
		r.Name = "couplings"
	}
	if r.Image == (ImageShape{}) {
		r.Image = ImageShape{C: 1, H: 28, W: 28}
	}
	if r.Scales == 0 {
		r.Scales = 2
	}
	r.Checkerboard, r.ChannelWise = defaultCount(r.Checkerboard), defaultCount(r.ChannelWise)
	if r.Hidden == 0 {
		r.Hidden = 32
	}
	switch {
	case r.ResBlocks == 0:
		r.ResBlocks = 1
	case r.ResBlocks < 0:
		r.ResBlocks = 0
	}
	if r.Activation.Kind == "" {
		r.Activation = ReLU
	}
	if r.InitScale == 0 {
		r.InitScale = 1e-6
	}
	return r
}

// Dimension is C·H·W, the dimension of z and x (graph.FlowNet).
func (r ImageRealNVP) Dimension() int { return r.WithDefaults().Image.Dim() }

// Couplings returns the couplings in forward order, or an error for an
// invalid configuration.
func (r ImageRealNVP) Couplings() ([]ImageCoupling, error) {
	r = r.WithDefaults()
	im := r.Image
	if err := im.Validate(); err != nil {
		return nil, err
	}
	if r.Scales < 1 || r.Hidden < 1 {
		return nil, fmt.Errorf("layers: image RealNVP needs Scales ≥ 1 and Hidden ≥ 1, have %d and %d", r.Scales, r.Hidden)
	}
	if f := 1 << r.Scales; im.H%f != 0 || im.W%f != 0 {
		return nil, fmt.Errorf("layers: image RealNVP with %d scales needs H and W divisible by %d, have %v", r.Scales, f, im)
	}
	n := r.Scales * (r.Checkerboard + r.ChannelWise)
	if n == 0 {
		return nil, fmt.Errorf("layers: image RealNVP has no couplings")
	}
	dt := r.Dt
	if dt == 0 {
		dt = 2 / float64(n)
	}
	var cs []ImageCoupling
	add := func(kind string, q, parity int) {
		idx, sq := squeezeIndex(im, q)
		mask := make([]float64, im.Dim())
		hw := sq.H * sq.W
		for k, orig := range idx {
			c, i, j := k/hw, k%hw/sq.W, k%sq.W
			var on bool
			if kind == CouplingCheckerboard {
				on = (i+j)%2 == parity
			} else {
				on = (c < sq.C/2) == (parity == 0)
			}
			if on {
				mask[orig] = 1
			}
		}
		name := r.Name + "." + strconv.Itoa(len(cs))
		c := ImageCoupling{Kind: kind, Squeeze: q, Parity: parity, Mask: mask, Act: r.Activation, Dt: dt, Image: im,
			In: Conv2d{Name: name + ".in", In: sq.C, Out: r.Hidden, Kernel: 3, Padding: 1}}
		for b := 0; b < r.ResBlocks; b++ {
			c.Blocks = append(c.Blocks, ResBlock{Name: name + ".blocks." + strconv.Itoa(b), Channels: r.Hidden, Activation: r.Activation})
		}
		head := Conv2d{In: r.Hidden, Out: sq.C, Kernel: 3, Padding: 1, WeightInit: ScaledNormal(r.InitScale), BiasInit: Zeros}
		c.S, c.T = head, head
		c.S.Name, c.T.Name = name+".s", name+".t"
		cs = append(cs, c)
	}
	for k := 0; k < r.Scales; k++ {
		for i := 0; i < r.Checkerboard; i++ {
			add(CouplingCheckerboard, k, i%2)
		}
		for i := 0; i < r.ChannelWise; i++ {
			add(CouplingChannel, k+1, i%2)
		}
	}
	return cs, nil
}

// ParamSpecs lists the parameters of every coupling: in, blocks, s, t.
func (c ImageCoupling) ParamSpecs() []ParamSpec {
	s := c.In.ParamSpecs()
	for _, b := range c.Blocks {
		s = append(s, b.ParamSpecs()...)
	}
	return append(append(s, c.S.ParamSpecs()...), c.T.ParamSpecs()...)
}

// ParamSpecs lists the parameters of every coupling in forward order.
func (r ImageRealNVP) ParamSpecs() ([]ParamSpec, error) {
	cs, err := r.Couplings()
	if err != nil {
		return nil, err
	}
	var s []ParamSpec
	for _, c := range cs {
		s = append(s, c.ParamSpecs()...)
	}
	return s, nil
}

// shiftScale returns s and t (B, D) for the conditioning input xc (B, D).
func (c ImageCoupling) shiftScale(b Binder, xc *G.Node, bsz int) (s, t *G.Node, err error) {
	h, err := ToImage(xc, c.Image)
	if err != nil {
		return nil, nil, err
	}
	for q := 0; q < c.Squeeze; q++ {
		if h, err = squeeze(h); err != nil {
			return nil, nil, err
		}
	}
	if h, err = c.In.Apply(b, h); err != nil {
		return nil, nil, err
	}
	for _, blk := range c.Blocks {
		if h, err = blk.Apply(b, h); err != nil {
			return nil, nil, err
		}
	}
	if h, err = applyActivation(b, c.Act, h); err != nil {
		return nil, nil, err
	}
	d := c.Image.Dim()
	mdt := make([]float64, bsz*d)
	for i := 0; i < bsz; i++ {
		for j, m := range c.Mask {
			mdt[i*d+j] = m * c.Dt
		}
	}
	mdtN := Constant(b, "image mask·dt", mdt, bsz, d)
	head := func(conv Conv2d, tanh bool) (*G.Node, error) {
		y, err := conv.Apply(b, h)
		if err != nil {
			return nil, err
		}
		for q := 0; q < c.Squeeze; q++ {
			if y, err = unsqueeze(y); err != nil {
				return nil, err
			}
		}
		if y, err = G.Reshape(y, tensor.Shape{bsz, d}); err != nil {
			return nil, err
		}
		if tanh {
			if y, err = applyMath(fnTanh, y); err != nil {
				return nil, err
			}
		}
		return G.HadamardProd(y, mdtN)
	}
	if s, err = head(c.S, true); err != nil {
		return nil, nil, err
	}
	t, err = head(c.T, false)
	return s, t, err
}

// conditioner returns x⊙(1 − m) and the batch size.
func (c ImageCoupling) conditioner(b Binder, x *G.Node) (*G.Node, int, error) {
	bsz, d, err := batchOf(x)
	if err != nil {
		return nil, 0, err
	}
	if d != len(c.Mask) {
		return nil, 0, fmt.Errorf("layers: image coupling %s has dimension %d, input has %d", c.In.Name, len(c.Mask), d)
	}
	keep := make([]float64, bsz*d)
	for i := 0; i < bsz; i++ {
		for j, m := range c.Mask {
			keep[i*d+j] = 1 - m
		}
	}
	xc, err := G.HadamardProd(x, Constant(b, "image 1−mask", keep, bsz, d))
	return xc, bsz, err
}

// Forward returns y and log|det ∂y/∂x| (B) for x (B, C·H·W).
func (c ImageCoupling) Forward(b Binder, x *G.Node) (y, logdet *G.Node, err error) {
	xc, bsz, err := c.conditioner(b, x)
	if err != nil {
		return nil, nil, err
	}
	s, t, err := c.shiftScale(b, xc, bsz)
	if err != nil {
		return nil, nil, err
	}
	xt, err := G.Add(x, t)
	if err != nil {
		return nil, nil, err
	}
	es, err := applyMath(fnExp, s)
	if err != nil {
		return nil, nil, err
	}
	if y, err = G.HadamardProd(xt, es); err != nil {
		return nil, nil, err
	}
	logdet, err = G.Sum(s, 1)
	return y, logdet, err
}

// Inverse returns x = Forward⁻¹(y) and log|det ∂x/∂y| (B).
func (c ImageCoupling) Inverse(b Binder, y *G.Node) (x, logdet *G.Node, err error) {
	yc, bsz, err := c.conditioner(b, y)
	if err != nil {
		return nil, nil, err
	}
	s, t, err := c.shiftScale(b, yc, bsz)
	if err != nil {
		return nil, nil, err
	}
	ens, err := applyMath(fnExpNeg, s)
	if err != nil {
		return nil, nil, err
	}
	ye, err := G.HadamardProd(y, ens)
	if err != nil {
		return nil, nil, err
	}
	if x, err = G.Sub(ye, t); err != nil {
		return nil, nil, err
	}
	if logdet, err = G.Sum(s, 1); err != nil {
		return nil, nil, err
	}
	logdet, err = G.Neg(logdet)
	return x, logdet, err
}

// apply is Forward, or Inverse where inverse is set (flowPass).
func (c ImageCoupling) apply(b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error) {
	if inverse {
		return c.Inverse(b, x)
	}
	return c.Forward(b, x)
}

// Forward returns x = T(z) and log|det J_T(z)| (B) for z (B, C·H·W).
func (r ImageRealNVP) Forward(b Binder, z *G.Node) (x, logdet *G.Node, err error) {
	return r.pass(b, z, false)
}

// Inverse returns z = T⁻¹(x) and log|det J_{T⁻¹}(x)| (B).
func (r ImageRealNVP) Inverse(b Binder, x *G.Node) (z, logdet *G.Node, err error) {
	return r.pass(b, x, true)
}

func (r ImageRealNVP) pass(b Binder, x *G.Node, inverse bool) (*G.Node, *G.Node, error) {
	cs, err := r.Couplings()
	if err != nil {
		return nil, nil, err
	}
	return flowPass(b, x, cs, inverse)
}

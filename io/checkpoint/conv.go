package checkpoint

import (
	"fmt"
	"math/big"
	"math/bits"

	"github.com/flowebm/flowebm/layers"
)

// This file holds the specs of the image models: the conv EBM
// (layers.ImageEnergy, "ebm": {"kind": "conv", …}) and the conv RealNVP
// (layers.ImageRealNVP, "flow": {"kind": "conv-realnvp", …}):
//
//	"ebm": {"kind": "conv", "activation": "silu", "name": "net",
//	        "image": [1, 28, 28], "channels": [32, 64, 64], "blocks": 1,
//	        "downsample": "conv"}
//	"flow": {"kind": "conv-realnvp", "dim": 784, "hidden": [32],
//	         "activation": "relu", "name": "couplings", "image": [1, 28, 28],
//	         "scales": 2, "checkerboard": 2, "channel": 2, "res_blocks": 1,
//	         "dt": 0.25, "init_scale": 1e-6}
//
// weights.npz names their parameters as layers.ImageEnergy and
// layers.ImageRealNVP do ("ebm.net.stem.weight", "flow.couplings.0.in.weight", …).

// Limits of the image models' specs, beyond those of the MLPs'.
const (
	maxStages      = 16   // ebm.channels
	maxConvBlocks  = 64   // ebm.blocks, flow.res_blocks, flow.checkerboard, flow.channel
	maxScales      = 16   // flow.scales
	maxCouplings   = 1024 // flow.scales × (checkerboard + channel)
	maxMaskValues  = 1 << 24
	maxImageLayers = 4096 // convolutions of one pass
)

// imageDim is C·H·W of an [C, H, W] image field (0 unless it has 3
// positive sizes).
func imageDim(im []int) int {
	if len(im) != 3 {
		return 0
	}
	return im[0] * im[1] * im[2]
}

// imageShape is the layers' shape of an [C, H, W] image field.
func imageShape(im []int) layers.ImageShape {
	return layers.ImageShape{C: im[0], H: im[1], W: im[2]}
}

// checkImage checks an [C, H, W] image field: three sizes in 1..2^20
// whose product is at most 2^20 (flow.dim's bound).
func checkImage(field string, im []int) error {
	if len(im) != 3 {
		return fmt.Errorf("spec.json: field %q is %v, want [C, H, W] (the images' channels, height and width)", field, clipInts(im))
	}
	if err := checkSizes(field, im); err != nil {
		return err
	}
	if n := int64(im[0]) * int64(im[1]) * int64(im[2]); n > maxSize {
		return fmt.Errorf("spec.json: field %q is %v, %d values per image, want at most 2^20", field, im, n)
	}
	return nil
}

// count maps a spec's count (0: none) to the layers' (negative: none).
func count(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// convEBMSpec describes an ImageEnergy, in full.
func convEBMSpec(n layers.ImageEnergy) EBMSpec {
	e := n.WithDefaults()
	return EBMSpec{Kind: EBMKindConv, Activation: e.Activation.String(), Name: e.Name,
		Image: []int{e.Image.C, e.Image.H, e.Image.W}, Channels: e.Channels, Blocks: max(e.Blocks, 0), Downsample: e.Downsample}
}

// imageEnergy is the ImageEnergy of a conv EBM's spec (validated), its
// last layer zero as a fresh one's.
func (e EBMSpec) imageEnergy(act layers.Activation) layers.ImageEnergy {
	return layers.ImageEnergy{Name: e.Name, Image: imageShape(e.Image), Channels: e.Channels, Blocks: count(e.Blocks), Activation: act, Downsample: e.Downsample}
}

// validateConv checks the fields of a conv EBM's spec, and returns its
// parameter count and arrays.
func (e EBMSpec) validateConv() (*big.Int, int, error) {
	for _, c := range []struct {
		field string
		set   bool
	}{{"sizes", e.Sizes != nil}, {"layout", e.Layout != ""}} {
		if c.set {
			return nil, 0, fmt.Errorf("spec.json: field \"ebm.%s\" is an MLP's, but \"ebm.kind\" is %q: drop it", c.field, EBMKindConv)
		}
	}
	if err := checkImage("ebm.image", e.Image); err != nil {
		return nil, 0, err
	}
	if len(e.Channels) < 1 || len(e.Channels) > maxStages {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.channels\" has %d widths, want 1..%d stages", len(e.Channels), maxStages)
	}
	if err := checkSizes("ebm.channels", e.Channels); err != nil {
		return nil, 0, err
	}
	if e.Blocks < 0 || e.Blocks > maxConvBlocks {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.blocks\" is %d, want 0..%d residual blocks per stage", e.Blocks, maxConvBlocks)
	}
	if e.Downsample != layers.DownConv && e.Downsample != layers.DownAvgPool {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.downsample\" is %q, want %q or %q", clip(e.Downsample), layers.DownConv, layers.DownAvgPool)
	}
	if e.Activation == "" {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.activation\" is missing or empty, want the conv EBM's activation (\"silu\", \"leaky_relu(0.2)\", …)")
	}
	if _, err := layers.ParseActivation(e.Activation); err != nil {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.activation\": %w", err)
	}
	if _, err := e.imageEnergy(layers.SiLU).Layers(); err != nil {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm\": %w", err)
	}
	n, arrays := e.convParams()
	if n.Cmp(big.NewInt(maxParams)) > 0 {
		return nil, 0, fmt.Errorf("spec.json: fields \"ebm.image\" %v, \"ebm.channels\" %v and \"ebm.blocks\" %d imply %v parameters, want at most %d (2^%d)",
			e.Image, clipInts(e.Channels), e.Blocks, n, maxParams, bits.Len64(uint64(maxParams))-1)
	}
	return n, arrays, nil
}

// convParams counts a conv EBM's parameters and arrays exactly (after
// validateConv's bounds: at most 16 stages of 64 blocks).
func (e EBMSpec) convParams() (*big.Int, int) {
	n := new(big.Int)
	specs := e.imageEnergy(layers.SiLU).ParamSpecs()
	for _, s := range specs {
		n.Add(n, big.NewInt(int64(s.Size())))
	}
	return n, len(specs)
}

// convFlowSpec describes an ImageRealNVP, in full (its step resolved).
func convFlowSpec(n layers.ImageRealNVP) *FlowSpec {
	r := n.WithDefaults()
	dt := r.Dt
	if dt == 0 {
		dt = 2 / float64(r.Scales*(r.Checkerboard+r.ChannelWise))
	}
	return &FlowSpec{Kind: FlowKindConvRealNVP, Dim: r.Image.Dim(), Hidden: []int{r.Hidden}, Activation: r.Activation.String(), Name: r.Name,
		Image: []int{r.Image.C, r.Image.H, r.Image.W}, Scales: r.Scales, Checkerboard: r.Checkerboard, Channel: r.ChannelWise,
		ResBlocks: r.ResBlocks, Dt: dt, InitScale: r.InitScale}
}

// imageRealNVP is the ImageRealNVP of a conv RealNVP's spec (validated).
func (f *FlowSpec) imageRealNVP(act layers.Activation) layers.ImageRealNVP {
	return layers.ImageRealNVP{Name: f.Name, Image: imageShape(f.Image), Scales: f.Scales, Checkerboard: count(f.Checkerboard),
		ChannelWise: count(f.Channel), Hidden: f.Hidden[0], ResBlocks: count(f.ResBlocks), Activation: act, InitScale: f.InitScale, Dt: f.Dt}
}

// noConvFields refuses the conv RealNVP's fields in another flow's spec.
func (f *FlowSpec) noConvFields() error {
	for _, c := range []struct {
		field string
		set   bool
	}{{"image", f.Image != nil}, {"scales", f.Scales != 0}, {"checkerboard", f.Checkerboard != 0}, {"channel", f.Channel != 0},
		{"res_blocks", f.ResBlocks != 0}, {"dt", f.Dt != 0}, {"init_scale", f.InitScale != 0}} {
		if c.set {
			return fmt.Errorf("spec.json: field \"flow.%s\" is a conv RealNVP's, but \"flow.kind\" is %q: want \"kind\": %q with it, or no %s", c.field, or(f.Kind, FlowKindRealNVP), FlowKindConvRealNVP, c.field)
		}
	}
	return nil
}

// validateConv checks a conv RealNVP's spec in dimension d, with the
// EBM's parameters and arrays, allocating nothing in proportion to its
// sizes.
func (f *FlowSpec) validateConv(d int, total *big.Int, arrays int) error {
	for _, c := range []struct{ field, v string }{{"flow.activation", f.Activation}, {"flow.mask", f.Mask}, {"flow.name", f.Name}} {
		if err := checkString(c.field, c.v); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		field string
		set   bool
	}{{"blocks", f.Blocks != 0}, {"block_depth", f.BlockDepth != 0}, {"mask", f.Mask != ""}, {"mask_width", f.MaskWidth != 0},
		{"bins", f.Bins != 0}, {"tail_bound", f.TailBound != 0}, {"min_bin_width", f.MinBinWidth != 0}, {"min_bin_height", f.MinBinHeight != 0},
		{"min_derivative", f.MinDerivative != 0}} {
		if c.set {
			return fmt.Errorf("spec.json: field \"flow.%s\" is not a conv RealNVP's (\"flow.kind\" %q): drop it", c.field, FlowKindConvRealNVP)
		}
	}
	if err := checkImage("flow.image", f.Image); err != nil {
		return err
	}
	if f.Dim != d || imageDim(f.Image) != d {
		return fmt.Errorf("spec.json: fields \"flow.dim\" %d and \"flow.image\" %v, want dimension %d (the EBM's)", f.Dim, f.Image, d)
	}
	if f.Activation == "" {
		return fmt.Errorf("spec.json: field \"flow.activation\" is missing or empty, want the conditioners' activation (\"relu\", …)")
	}
	if _, err := layers.ParseActivation(f.Activation); err != nil {
		return fmt.Errorf("spec.json: field \"flow.activation\": %w", err)
	}
	if f.Scales < 1 || f.Scales > maxScales {
		return fmt.Errorf("spec.json: field \"flow.scales\" is %d, want 1..%d", f.Scales, maxScales)
	}
	if m := 1 << f.Scales; f.Image[1]%m != 0 || f.Image[2]%m != 0 {
		return fmt.Errorf("spec.json: field \"flow.image\" is %v: %d scales need a height and width divisible by %d", f.Image, f.Scales, m)
	}
	for _, c := range []struct {
		field string
		v     int
	}{{"checkerboard", f.Checkerboard}, {"channel", f.Channel}, {"res_blocks", f.ResBlocks}} {
		if c.v < 0 || c.v > maxConvBlocks {
			return fmt.Errorf("spec.json: field \"flow.%s\" is %d, want 0..%d", c.field, c.v, maxConvBlocks)
		}
	}
	n := f.Scales * (f.Checkerboard + f.Channel)
	if n == 0 {
		return fmt.Errorf("spec.json: fields \"flow.checkerboard\" and \"flow.channel\" are 0: the conv RealNVP has no couplings")
	}
	if n > maxCouplings || int64(n)*int64(d) > maxMaskValues || n*(4+2*f.ResBlocks) > maxImageLayers {
		return fmt.Errorf("spec.json: fields \"flow.scales\" %d, \"flow.checkerboard\" %d, \"flow.channel\" %d and \"flow.res_blocks\" %d imply %d couplings of %d convolutions on %d values, want at most %d couplings, %d convolutions and 2^24 mask values",
			f.Scales, f.Checkerboard, f.Channel, f.ResBlocks, n, 4+2*f.ResBlocks, d, maxCouplings, maxImageLayers)
	}
	if len(f.Hidden) != 1 {
		return fmt.Errorf("spec.json: field \"flow.hidden\" is %v, want one width (the conditioners' channels)", clipInts(f.Hidden))
	}
	if err := checkSizes("flow.hidden", f.Hidden); err != nil {
		return err
	}
	for _, c := range []struct {
		field string
		v     float64
	}{{"dt", f.Dt}, {"init_scale", f.InitScale}} {
		if !(c.v > 0 && c.v <= MaxBaseSigma) {
			return fmt.Errorf("spec.json: field \"flow.%s\" is %v, want a finite value > 0", c.field, c.v)
		}
	}
	flowN, flowArrays := f.convParams()
	if flowN.Cmp(big.NewInt(maxParams)) > 0 {
		return fmt.Errorf("spec.json: fields \"flow.image\" %v, \"flow.hidden\" %v and the couplings imply %v flow parameters, want at most %d (2^%d)",
			f.Image, f.Hidden, flowN, maxParams, bits.Len64(uint64(maxParams))-1)
	}
	total.Add(total, flowN)
	if total.Cmp(big.NewInt(maxParams)) > 0 {
		return fmt.Errorf("spec.json: fields \"ebm\" and \"flow\" imply %v parameters in all, want at most %d (2^%d)", total, maxParams, bits.Len64(uint64(maxParams))-1)
	}
	if arrays += flowArrays; arrays > maxArrays {
		return fmt.Errorf("spec.json: fields \"ebm\" and \"flow\" imply %d parameter arrays, want at most %d", arrays, maxArrays)
	}
	return nil
}

// convParams counts a conv RealNVP's parameters and arrays exactly from
// its fields (validated up to the couplings' bounds), without building its
// couplings: a coupling squeezed q times conditions on 4^q·C channels
// through a 3×3 convolution to Hidden channels, ResBlocks blocks of two
// 3×3 convolutions and two 3×3 heads back.
func (f *FlowSpec) convParams() (*big.Int, int) {
	h := big.NewInt(int64(f.Hidden[0]))
	conv := func(in, out *big.Int) *big.Int { // 3×3 weights and a bias
		w := new(big.Int).Mul(in, out)
		w.Mul(w, big.NewInt(9))
		return w.Add(w, out)
	}
	block := conv(h, h)
	block.Mul(block, big.NewInt(int64(2*f.ResBlocks)))
	n := new(big.Int)
	arrays := 0
	add := func(q int) {
		cq := new(big.Int).Lsh(big.NewInt(int64(f.Image[0])), uint(2*q))
		n.Add(n, conv(cq, h))
		n.Add(n, block)
		heads := conv(h, cq)
		n.Add(n, heads.Mul(heads, big.NewInt(2)))
		arrays += 2 + 4*f.ResBlocks + 4
	}
	for k := 0; k < f.Scales; k++ {
		for i := 0; i < f.Checkerboard; i++ {
			add(k)
		}
		for i := 0; i < f.Channel; i++ {
			add(k + 1)
		}
	}
	return n, arrays
}

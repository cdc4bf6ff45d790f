package onnx

import (
	"fmt"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
)

// The export of layers.ImageEnergy (EBM dispatches here). The graph is
// what torch.onnx.export writes for the same PyTorch module:
//
//	h = Reshape(x, [−1, C, H, W])
//	Conv (kernel_shape, strides, pads) per convolution, with its bias;
//	the activations as for an MLP (SiLU as x·Sigmoid(x) in float32 and
//	x/(1+exp(−x)) in float64; LeakyRelu as itself in float32, with Relu
//	in float64, where ONNX Runtime has no double kernel); Add for the residual connections; AveragePool
//	(kernel 2, stride 2) before an average-pool downsampling;
//	GlobalAveragePool, Flatten and Gemm (transB = 1) for the head.
//
// Every operator is one flowebm's importer differentiates, so the file
// reads back as a trainable graph.EnergyNet with the same energies and
// gradients.

// AttributeProto type INTS.
const attrInts = 7

// intsAttr is an INTS attribute.
func intsAttrMsg(name string, v ...int) msg {
	var m msg
	m.str(1, name)
	for _, x := range v {
		m.varint(8, int64(x))
	}
	m.varint(20, attrInts)
	return m
}

// conv2d adds Conv(x, weight, bias) as PyTorch exports nn.Conv2d.
func (b *builder) conv2d(c layers.Conv2d, x string) (string, error) {
	in, err := b.weightAndBias(x, c.Name, c.NoBias)
	if err != nil {
		return "", err
	}
	s, p := max(1, c.Stride), c.Padding
	return b.nodeAttrs("Conv", in, intsAttrMsg("dilations", 1, 1), intAttr("group", 1).encode(),
		intsAttrMsg("kernel_shape", c.Kernel, c.Kernel), intsAttrMsg("pads", p, p, p, p), intsAttrMsg("strides", s, s)), nil
}

// avgPool2d adds AveragePool as PyTorch exports nn.AvgPool2d.
func (b *builder) avgPool2d(p layers.AvgPool2d, x string) string {
	s := p.Stride
	if s <= 0 {
		s = p.Kernel
	}
	q := p.Padding
	return b.nodeAttrs("AveragePool", []string{x}, intAttr("ceil_mode", 0).encode(), intAttr("count_include_pad", 1).encode(),
		intsAttrMsg("kernel_shape", p.Kernel, p.Kernel), intsAttrMsg("pads", q, q, q, q), intsAttrMsg("strides", s, s))
}

// resBlock adds x + conv2(act(conv1(act(x)))).
func (b *builder) resBlock(r layers.ResBlock, x string) (string, error) {
	c1, c2 := r.Convs()
	h, err := b.activation(r.Activation, x)
	if err != nil {
		return "", err
	}
	if h, err = b.conv2d(c1, h); err != nil {
		return "", err
	}
	if h, err = b.activation(r.Activation, h); err != nil {
		return "", err
	}
	if h, err = b.conv2d(c2, h); err != nil {
		return "", err
	}
	return b.node("Add", []string{x, h}), nil
}

// imageEnergy adds the network's E(x) (batch, 1) for x (batch, C·H·W).
func (b *builder) imageEnergy(net layers.ImageEnergy, x string) (string, error) {
	l, err := net.Layers()
	if err != nil {
		return "", err
	}
	net = net.WithDefaults()
	im := net.Image
	h := b.node("Reshape", []string{x, b.int64s(fmt.Sprintf("shape_image_%d_%d_%d", im.C, im.H, im.W), -1, im.C, im.H, im.W)})
	if h, err = b.conv2d(l.Stem, h); err != nil {
		return "", err
	}
	for i, bs := range l.Blocks {
		if i > 0 {
			if h, err = b.activation(net.Activation, h); err != nil {
				return "", err
			}
			if net.Downsample == layers.DownAvgPool {
				h = b.avgPool2d(layers.AvgPool2d{Kernel: 2}, h)
			}
			if h, err = b.conv2d(l.Down[i-1], h); err != nil {
				return "", err
			}
		}
		for _, r := range bs {
			if h, err = b.resBlock(r, h); err != nil {
				return "", err
			}
		}
	}
	if h, err = b.activation(net.Activation, h); err != nil {
		return "", err
	}
	h = b.node("Flatten", []string{b.node("GlobalAveragePool", []string{h})}, intAttr("axis", 1))
	return b.linear(l.Out, h)
}

// imageEBM is EBM for an ImageEnergy network: input "x" (batch, C·H·W),
// output "energy" (batch, 1); Options as for an MLP energy.
func imageEBM(e *graph.EBM, net layers.ImageEnergy, o Options) ([]byte, error) {
	doc := "flowebm image EBM: energy E(x) of the convolutional network, x of " + net.WithDefaults().Image.String() + " images flattened"
	return ebmModel(e, o, doc, "flowebm image EBM: whole energy in the data's units, E(z) − log ρ(z) + Σ log scale",
		func(b *builder, x string) (string, error) { return b.imageEnergy(net, x) })
}

// The export of layers.ImageRealNVP (FlowSample and FlowDensity dispatch
// here), in the flow convention of docs/models-and-samplers.md: the
// sampling graph z ↦ (x = T(z), log λ(x)) and the density graph
// x ↦ (log λ(x), z = T⁻¹(x)). Each coupling is written as its Go graph:
// Mul by the constant 1 − m, Reshape to images, squeeze as
// Reshape (B, C, H/2, 2, W/2, 2) → Transpose (0, 1, 3, 5, 2, 4) → Reshape
// (B, 4C, H/2, W/2), the conditioner's Conv and activations, the heads
// unsqueezed by the inverse Transpose, Tanh, Mul by m·dt, and the affine
// update with Exp and ReduceSum.

// squeezeImage adds the space-to-depth of images of shape s.
func (b *builder) squeezeImage(x string, s layers.ImageShape) (string, layers.ImageShape) {
	h := b.node("Reshape", []string{x, b.int64s(fmt.Sprintf("shape_split_%d_%d_%d", s.C, s.H, s.W), -1, s.C, s.H/2, 2, s.W/2, 2)})
	h = b.nodeAttrs("Transpose", []string{h}, intsAttrMsg("perm", 0, 1, 3, 5, 2, 4))
	t := layers.ImageShape{C: 4 * s.C, H: s.H / 2, W: s.W / 2}
	return b.node("Reshape", []string{h, b.int64s(fmt.Sprintf("shape_image_%d_%d_%d", t.C, t.H, t.W), -1, t.C, t.H, t.W)}), t
}

// unsqueezeImage adds the inverse of squeezeImage for images of shape s
// (the squeezed shape).
func (b *builder) unsqueezeImage(x string, s layers.ImageShape) (string, layers.ImageShape) {
	h := b.node("Reshape", []string{x, b.int64s(fmt.Sprintf("shape_merge_%d_%d_%d", s.C, s.H, s.W), -1, s.C/4, 2, 2, s.H, s.W)})
	h = b.nodeAttrs("Transpose", []string{h}, intsAttrMsg("perm", 0, 1, 4, 2, 5, 3))
	t := layers.ImageShape{C: s.C / 4, H: 2 * s.H, W: 2 * s.W}
	return b.node("Reshape", []string{h, b.int64s(fmt.Sprintf("shape_image_%d_%d_%d", t.C, t.H, t.W), -1, t.C, t.H, t.W)}), t
}

// imageCoupling adds one coupling's forward or inverse pass; it returns
// the output (B, D) and its log-determinant (B).
func (b *builder) imageCoupling(c layers.ImageCoupling, x string, inverse bool) (string, string, error) {
	d := len(c.Mask)
	keepN, mdtN := b.couplingMask(c.Mask, c.Dt)
	im := c.Image
	h := b.node("Reshape", []string{b.node("Mul", []string{x, keepN}), b.int64s(fmt.Sprintf("shape_image_%d_%d_%d", im.C, im.H, im.W), -1, im.C, im.H, im.W)})
	s := im
	for q := 0; q < c.Squeeze; q++ {
		h, s = b.squeezeImage(h, s)
	}
	h, err := b.conv2d(c.In, h)
	if err != nil {
		return "", "", err
	}
	for _, r := range c.Blocks {
		if h, err = b.resBlock(r, h); err != nil {
			return "", "", err
		}
	}
	if h, err = b.activation(c.Act, h); err != nil {
		return "", "", err
	}
	head := func(conv layers.Conv2d) (string, error) {
		y, err := b.conv2d(conv, h)
		if err != nil {
			return "", err
		}
		hs := s
		for q := 0; q < c.Squeeze; q++ {
			y, hs = b.unsqueezeImage(y, hs)
		}
		return b.node("Reshape", []string{y, b.int64s(fmt.Sprintf("shape_batch_%d", d), -1, d)}), nil
	}
	sRaw, err := head(c.S)
	if err != nil {
		return "", "", err
	}
	tRaw, err := head(c.T)
	if err != nil {
		return "", "", err
	}
	sc := b.node("Mul", []string{b.node("Tanh", []string{sRaw}), mdtN})
	t := b.node("Mul", []string{tRaw, mdtN})
	y, ld := b.affineUpdate(x, sc, t, inverse)
	return y, ld, nil
}

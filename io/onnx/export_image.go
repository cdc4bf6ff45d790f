package onnx

import (
	"fmt"
	"strconv"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
)

// The export of layers.ImageEnergy (EBM dispatches here). The graph is
// what torch.onnx.export writes for the same PyTorch module:
//
//	h = Reshape(x, [−1, C, H, W])
//	Conv (kernel_shape, strides, pads) per convolution, with its bias;
//	the activations as for an MLP (SiLU as x·Sigmoid(x); LeakyRelu as
//	itself in float32, with Relu in float64, where ONNX Runtime has no
//	double kernel); Add for the residual connections; AveragePool
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

// nodeAttrs is builder.node with encoded attributes of any type.
func (b *builder) nodeAttrs(op string, inputs []string, attrs ...msg) string {
	b.n++
	out := op + "_" + strconv.Itoa(b.n)
	var m msg
	for _, in := range inputs {
		m.str(1, in)
	}
	m.str(2, out)
	m.str(3, out)
	m.str(4, op)
	for _, a := range attrs {
		m.bytes(5, a)
	}
	b.nodes = append(b.nodes, m)
	return out
}

// conv2d adds Conv(x, weight, bias) as PyTorch exports nn.Conv2d.
func (b *builder) conv2d(c layers.Conv2d, x string) (string, error) {
	w, err := b.param(c.Name + ".weight")
	if err != nil {
		return "", err
	}
	in := []string{x, w}
	if !c.NoBias {
		bias, err := b.param(c.Name + ".bias")
		if err != nil {
			return "", err
		}
		in = append(in, bias)
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
	dt, err := o.dtype(e.Params)
	if err != nil {
		return nil, err
	}
	d := e.Dim()
	b := newBuilder(dt, e.Params)
	x := "x"
	var logdet float64
	if o.Full && o.Scaling != nil {
		if err := o.Scaling.Validate(); err != nil {
			return nil, fmt.Errorf("onnx: scaling: %w", err)
		}
		if o.Scaling.Dim() != d {
			return nil, fmt.Errorf("onnx: scaling has %d coordinates, the EBM %d", o.Scaling.Dim(), d)
		}
		x = b.node("Div", []string{b.node("Sub", []string{x, b.constant("shift", []int{1, d}, o.Scaling.Shift)}), b.constant("scale", []int{1, d}, o.Scaling.Scale)})
		logdet = o.Scaling.LogDet()
	}
	energy, err := b.imageEnergy(net, x)
	if err != nil {
		return nil, err
	}
	if o.Full {
		if e.Tilt != nil {
			lr := b.node("Unsqueeze", []string{b.gaussianLogProb(*e.Tilt, x), b.int64s("axis_1", 1)})
			energy = b.node("Sub", []string{energy, lr})
		}
		if logdet != 0 {
			energy = b.node("Add", []string{energy, b.scalar(logdet)})
		}
	}
	b.rename(energy, "energy")
	doc := "flowebm image EBM: energy E(x) of the convolutional network, x of " + net.WithDefaults().Image.String() + " images flattened"
	if o.Full {
		doc = "flowebm image EBM: whole energy in the data's units, E(z) − log ρ(z) + Σ log scale"
	}
	g := b.graph("ebm", []msg{valueInfo("x", dt, "batch", d)}, []msg{valueInfo("energy", dt, "batch", 1)})
	return model(g, doc, parametersEntry(e.Params)), nil
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
	keep, mdt := make([]float64, d), make([]float64, d)
	for j, m := range c.Mask {
		keep[j], mdt[j] = 1-m, m*c.Dt
	}
	keepN := b.constant("keep_"+strconv.Itoa(b.n), []int{1, d}, keep)
	mdtN := b.constant("mask_dt_"+strconv.Itoa(b.n), []int{1, d}, mdt)
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
	if !inverse {
		y := b.node("Mul", []string{b.node("Add", []string{x, t}), b.node("Exp", []string{sc})})
		return y, b.sumRows(sc), nil
	}
	ns := b.node("Neg", []string{sc})
	y := b.node("Sub", []string{b.node("Mul", []string{x, b.node("Exp", []string{ns})}), t})
	return y, b.sumRows(ns), nil
}

// imageRealNVP adds the flow's forward (z → x) or inverse (x → z) pass
// and the summed log-determinant (B).
func (b *builder) imageRealNVP(r layers.ImageRealNVP, x string, inverse bool) (string, string, error) {
	cs, err := r.Couplings()
	if err != nil {
		return "", "", err
	}
	total := ""
	for i := range cs {
		c := cs[i]
		if inverse {
			c = cs[len(cs)-1-i]
		}
		var ld string
		if x, ld, err = b.imageCoupling(c, x, inverse); err != nil {
			return "", "", err
		}
		if total == "" {
			total = ld
		} else {
			total = b.node("Add", []string{total, ld})
		}
	}
	return x, total, nil
}

// imageFlowSample is FlowSample for an ImageRealNVP.
func imageFlowSample(f *graph.Flow, r layers.ImageRealNVP, o Options) ([]byte, error) {
	dt, err := o.dtype(f.Params)
	if err != nil {
		return nil, err
	}
	d := f.Dim()
	b := newBuilder(dt, f.Params)
	x, ld, err := b.imageRealNVP(r, "z", false)
	if err != nil {
		return nil, err
	}
	b.rename(x, FlowX)
	b.rename(b.node("Sub", []string{b.gaussianLogProb(f.Base, "z"), ld}), FlowLogDensity)
	g := b.graph("flow_sample", []msg{valueInfo("z", dt, "batch", d)}, []msg{valueInfo(FlowX, dt, "batch", d), valueInfo(FlowLogDensity, dt, "batch")})
	return model(g, "flowebm image RealNVP: z ↦ (x = T(z), log λ(x))", parametersEntry(f.Params), baseEntry(f.Base)), nil
}

// imageFlowDensity is FlowDensity for an ImageRealNVP; its graph also
// outputs z = T⁻¹(x) (FlowLatent).
func imageFlowDensity(f *graph.Flow, r layers.ImageRealNVP, o Options) ([]byte, error) {
	dt, err := o.dtype(f.Params)
	if err != nil {
		return nil, err
	}
	d := f.Dim()
	b := newBuilder(dt, f.Params)
	z, ld, err := b.imageRealNVP(r, "x", true)
	if err != nil {
		return nil, err
	}
	b.rename(b.node("Add", []string{b.gaussianLogProb(f.Base, z), ld}), FlowLogDensity)
	b.rename(z, FlowLatent)
	g := b.graph("flow_density", []msg{valueInfo("x", dt, "batch", d)}, []msg{valueInfo(FlowLogDensity, dt, "batch"), valueInfo(FlowLatent, dt, "batch", d)})
	return model(g, "flowebm image RealNVP: x ↦ (log λ(x), z = T⁻¹(x))", parametersEntry(f.Params), baseEntry(f.Base)), nil
}

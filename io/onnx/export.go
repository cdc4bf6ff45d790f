package onnx

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/shapes"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
)

// Options configure an export. The zero value writes the model's own dtype
// and, for an EBM, the network's energy E(x) alone.
type Options struct {
	// Float32 writes float32 weights, inputs and outputs; Float64 float64
	// (neither: the model's dtype).
	Float32, Float64 bool
	// Full makes an EBM's output its whole energy in the data's units:
	// E(z) − log ρ(z) + Σ log scale with z = (x − shift)/scale (Scaling
	// nil: z = x), minus the log of the learned unnormalised density, as
	// checkpoint.Models.Energy computes it.
	Full    bool
	Scaling *data.Scaling
	// Latent makes FlowDensity of a RealNVP also output z = T⁻¹(x)
	// (FlowLatent), as it does for spline flows and image RealNVPs: NeuTra
	// needs it (probe 57: the pair sample --flow-out wrote could not
	// drive it).
	Latent bool
	// PointShape, for an MLP EBM trained on points of two axes or more
	// (checkpoint.Models.PointShape: [C, H, W] of images), makes the
	// input "x" (batch, PointShape…), flattened by the graph's first node,
	// so that ONNX Runtime and flowebm take the points as the run did
	// (round 122 A1: a channels-last array was taken by the export of a
	// run that refuses it). Nil or one axis: (batch, d).
	PointShape []int
}

func (o Options) dtype(p *graph.Params) (int, error) {
	switch {
	case o.Float32 && o.Float64:
		return 0, fmt.Errorf("onnx: Float32 and Float64 both set")
	case o.Float32:
		return typeFloat, nil
	case o.Float64:
		return typeDouble, nil
	case p.Dtype() == tensor.Float32:
		return typeFloat, nil
	}
	return typeDouble, nil
}

// builder accumulates the nodes and initializers of a graph.
type builder struct {
	dtype  int
	params map[string]*graph.Param
	nodes  []msg
	inits  []msg
	names  map[string]bool
	n      int
}

func newBuilder(dtype int, p *graph.Params) *builder {
	b := &builder{dtype: dtype, params: map[string]*graph.Param{}, names: map[string]bool{}}
	if p != nil {
		for _, q := range p.List() {
			b.params[q.Name] = q
		}
	}
	return b
}

// node adds op(inputs) with one output and returns the output's name.
func (b *builder) node(op string, inputs []string, attrs ...attr) string {
	enc := make([]msg, len(attrs))
	for i, a := range attrs {
		enc[i] = a.encode()
	}
	return b.nodeAttrs(op, inputs, enc...)
}

// nodeAttrs is node with encoded attributes of any type.
func (b *builder) nodeAttrs(op string, inputs []string, attrs ...msg) string {
	b.n++
	out := op + "_" + strconv.Itoa(b.n)
	b.emit(op, inputs, out, attrs...)
	return out
}

// emit appends the node op(inputs), named as its one output out.
func (b *builder) emit(op string, inputs []string, out string, attrs ...msg) {
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
}

// initializer adds the initializer name of the given type, unless the
// graph has it, and returns its name.
func (b *builder) initializer(name string, dims []int, dtype int, v []float64) string {
	if !b.names[name] {
		b.names[name] = true
		b.inits = append(b.inits, tensorProto(name, dims, dtype, v))
	}
	return name
}

// constant adds an initializer in the graph's dtype and returns its name.
func (b *builder) constant(name string, dims []int, v []float64) string {
	return b.initializer(name, dims, b.dtype, v)
}

// int64s adds the int64 vector v as an initializer and returns its name.
func (b *builder) int64s(name string, v ...int) string {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return b.initializer(name, []int{len(v)}, typeInt64, f)
}

// scalar adds a 0-d Constant node holding v, as PyTorch writes a Python
// float in forward (a Constant node, not an initializer: importers take
// float initializers for parameters).
func (b *builder) scalar(v float64) string {
	name := "const_" + strconv.FormatFloat(v, 'g', -1, 64)
	if b.names[name] {
		return name
	}
	b.names[name] = true
	var a msg
	a.str(1, "value")
	a.bytes(5, tensorProto(name, nil, b.dtype, []float64{v}))
	a.varint(20, 4) // TENSOR
	b.emit("Constant", nil, name, a)
	return name
}

// param adds the named model parameter as an initializer.
func (b *builder) param(name string) (string, error) {
	q, ok := b.params[name]
	if !ok {
		return "", fmt.Errorf("onnx: the model has no parameter %q", name)
	}
	return b.constant(name, q.Shape, q.Float64s()), nil
}

// linear adds Gemm(x, W, b, transB = 1): PyTorch's export of nn.Linear.
func (b *builder) linear(l layers.Linear, x string) (string, error) {
	in, err := b.weightAndBias(x, l.Name, l.NoBias)
	if err != nil {
		return "", err
	}
	return b.node("Gemm", in, intAttr("transB", 1)), nil
}

// weightAndBias adds the parameters name.weight and, unless noBias,
// name.bias of a layer and returns its inputs: x, the weight, the bias.
func (b *builder) weightAndBias(x, name string, noBias bool) ([]string, error) {
	w, err := b.param(name + ".weight")
	if err != nil {
		return nil, err
	}
	if noBias {
		return []string{x, w}, nil
	}
	bias, err := b.param(name + ".bias")
	if err != nil {
		return nil, err
	}
	return []string{x, w, bias}, nil
}

// activation adds a as PyTorch exports it; in float64, LeakyRelu, Softplus
// and Elu, for which ONNX Runtime's CPU provider has no double kernels, are
// written with elementary ops:
//
//	LeakyRelu(x) = Relu(x) − α·Relu(−x)
//	Softplus(x)  = Relu(x) + log(1 + exp(−Relu(x) − Relu(−x)))
//	Elu(x)       = Relu(x) + exp(−Relu(−x)) − 1
//	SiLU(x)      = x / (1 + exp(−x))
//
// (only operators that Net imports; SiLU's x·Sigmoid(x) has double
// kernels, but ONNX Runtime's default optimisation fuses it into
// QuickGelu, which has none).
func (b *builder) activation(a layers.Activation, x string) (string, error) {
	double := b.dtype == typeDouble
	relu := func(v string) string { return b.node("Relu", []string{v}) }
	switch a.Kind {
	case "", "identity":
		return x, nil
	case "relu":
		return relu(x), nil
	case "leaky_relu":
		if double {
			neg := b.node("Mul", []string{relu(b.node("Neg", []string{x})), b.scalar(a.Slope)})
			return b.node("Sub", []string{relu(x), neg}), nil
		}
		return b.node("LeakyRelu", []string{x}, floatAttr("alpha", a.Slope)), nil
	case "tanh":
		return b.node("Tanh", []string{x}), nil
	case "softplus":
		if double {
			abs := b.node("Add", []string{relu(x), relu(b.node("Neg", []string{x}))})
			e := b.node("Exp", []string{b.node("Neg", []string{abs})})
			return b.node("Add", []string{relu(x), b.node("Log", []string{b.node("Add", []string{e, b.scalar(1)})})}), nil
		}
		return b.node("Softplus", []string{x}), nil
	case "elu":
		if double {
			e := b.node("Exp", []string{b.node("Neg", []string{relu(b.node("Neg", []string{x}))})})
			return b.node("Add", []string{relu(x), b.node("Sub", []string{e, b.scalar(1)})}), nil
		}
		return b.node("Elu", []string{x}, floatAttr("alpha", 1)), nil
	case "silu":
		if double { // round 81 A1: ORT's default optimisation fuses x·Sigmoid(x) into QuickGelu, which has no double kernel
			e := b.node("Exp", []string{b.node("Neg", []string{x})})
			return b.node("Div", []string{x, b.node("Add", []string{e, b.scalar(1)})}), nil
		}
		return b.node("Mul", []string{x, b.node("Sigmoid", []string{x})}), nil
	}
	return "", fmt.Errorf("onnx: activation %q cannot be exported", a)
}

func (b *builder) mlp(m layers.MLP, x string) (string, error) {
	ls := m.Linears()
	h := x
	for i, l := range ls {
		var err error
		if h, err = b.linear(l, h); err != nil {
			return "", err
		}
		act := m.Hidden
		if i == len(ls)-1 {
			act = m.Output
		}
		if h, err = b.activation(act, h); err != nil {
			return "", err
		}
	}
	return h, nil
}

// sumRows adds ReduceSum over axis 1 without keeping it: (B, d) → (B).
func (b *builder) sumRows(x string) string {
	return b.node("ReduceSum", []string{x, b.int64s("axis_1", 1)}, intAttr("keepdims", 0))
}

// gaussianLogProb adds log N(z; 0, diag σ²) per row: (B, d) → (B).
func (b *builder) gaussianLogProb(g layers.Gaussian, z string) string {
	d := g.Dim()
	inv := make([]float64, d)
	c := -0.5 * float64(d) * math.Log(2*math.Pi)
	for j, s := range g.Sigma {
		inv[j] = -0.5 / (s * s)
		c -= math.Log(s)
	}
	sq := b.node("Mul", []string{z, z})
	w := b.node("Mul", []string{sq, b.constant(fmt.Sprintf("base_neg_half_inv_var_%d", b.n), []int{1, d}, inv)})
	return b.node("Add", []string{b.sumRows(w), b.scalar(c)})
}

// coupling adds one coupling's forward or inverse pass; it returns the
// output and its log-determinant (B).
func (b *builder) coupling(c layers.Coupling, x string, inverse bool) (string, string, error) {
	keepN, mdtN := b.couplingMask(c.Mask, c.Dt)
	xc := b.node("Mul", []string{x, keepN})
	sRaw, err := b.mlp(c.S, xc)
	if err != nil {
		return "", "", err
	}
	s := b.node("Mul", []string{b.node("Tanh", []string{sRaw}), mdtN})
	tRaw, err := b.mlp(c.T, xc)
	if err != nil {
		return "", "", err
	}
	t := b.node("Mul", []string{tRaw, mdtN})
	y, ld := b.affineUpdate(x, s, t, inverse)
	return y, ld, nil
}

// couplingMask adds the constants 1 − m and m·dt (1, d) of a coupling
// with mask m and step dt.
func (b *builder) couplingMask(mask []float64, dt float64) (keep, mdt string) {
	d := len(mask)
	k, md := make([]float64, d), make([]float64, d)
	for j, m := range mask {
		k[j], md[j] = 1-m, m*dt
	}
	return b.constant("keep_"+strconv.Itoa(b.n), []int{1, d}, k), b.constant("mask_dt_"+strconv.Itoa(b.n), []int{1, d}, md)
}

// affineUpdate adds a residual affine coupling's output and
// log-determinant (B) from its scale s and shift t: (x + t)⊙exp(s) and
// Σ s, or for the inverse x⊙exp(−s) − t and −Σ s.
func (b *builder) affineUpdate(x, s, t string, inverse bool) (y, logdet string) {
	if !inverse {
		y = b.node("Mul", []string{b.node("Add", []string{x, t}), b.node("Exp", []string{s})})
		return y, b.sumRows(s)
	}
	ns := b.node("Neg", []string{s})
	y = b.node("Sub", []string{b.node("Mul", []string{x, b.node("Exp", []string{ns})}), t})
	return y, b.sumRows(ns)
}

// rename adds Identity(x) named name (graph outputs get stable names).
func (b *builder) rename(x, name string) { b.emit("Identity", []string{x}, name) }

func (b *builder) graph(name string, inputs, outputs []msg) msg {
	var g msg
	for _, n := range b.nodes {
		g.bytes(1, n)
	}
	g.str(2, name)
	for _, t := range b.inits {
		g.bytes(5, t)
	}
	for _, in := range inputs {
		g.bytes(11, in)
	}
	for _, out := range outputs {
		g.bytes(12, out)
	}
	return g
}

// EBM returns the ONNX model of e: input "x" (batch, d), output "energy"
// (batch, 1), the network's E(x) as PyTorch would export the same module
// (Gemm with transB = 1 per Linear, activations as themselves, SiLU as
// Sigmoid·x); with o.Full the whole energy (see Options). The network must
// be a graph.MLPEnergy or a layers.ImageEnergy (export_image.go).
func EBM(e *graph.EBM, o Options) ([]byte, error) {
	if img, ok := e.Net.(layers.ImageEnergy); ok {
		return imageEBM(e, img, o) // export_image.go
	}
	net, ok := e.Net.(graph.MLPEnergy)
	if !ok {
		return nil, fmt.Errorf("onnx: energy network %T cannot be exported (only MLP energies can)", e.Net)
	}
	return ebmModel(e, o, "flowebm EBM: energy E(x) of the network", "flowebm EBM: whole energy in the data's units, E(z) − log ρ(z) + Σ log scale",
		func(b *builder, x string) (string, error) { return b.mlp(net.MLP, x) })
}

// ebmModel is the model of an EBM: input "x" (batch, d), output "energy"
// (batch, 1), the network's E(x) as energy adds it to b (doc the graph's
// doc string) or with o.Full the whole energy (fullDoc).
func ebmModel(e *graph.EBM, o Options, doc, fullDoc string, energy func(b *builder, x string) (string, error)) ([]byte, error) {
	dt, err := o.dtype(e.Params)
	if err != nil {
		return nil, err
	}
	d := e.Dim()
	b := newBuilder(dt, e.Params)
	in, x := []any{"batch", d}, "x"
	if len(o.PointShape) >= 2 {
		if n := shapes.Product(o.PointShape); n != d {
			return nil, fmt.Errorf("onnx: point shape %v has %d values, the EBM %d", o.PointShape, n, d)
		}
		in = []any{"batch"}
		for _, s := range o.PointShape {
			in = append(in, s)
		}
		x = b.node("Flatten", []string{x}, intAttr("axis", 1))
	}
	x, logdet, err := b.standardized(x, o, d)
	if err != nil {
		return nil, err
	}
	en, err := energy(b, x)
	if err != nil {
		return nil, err
	}
	if o.Full {
		if e.Tilt != nil {
			lr := b.node("Unsqueeze", []string{b.gaussianLogProb(*e.Tilt, x), b.int64s("axis_1", 1)})
			en = b.node("Sub", []string{en, lr})
		}
		if logdet != 0 {
			en = b.node("Add", []string{en, b.scalar(logdet)})
		}
		doc = fullDoc
	}
	b.rename(en, "energy")
	g := b.graph("ebm", []msg{valueInfo("x", dt, in...)}, []msg{valueInfo("energy", dt, "batch", 1)})
	return model(g, doc, parametersEntry(e.Params)), nil
}

// standardized adds z = (x − shift)/scale for o.Full with a Scaling of d
// coordinates and returns z and Σ log scale (else x and 0).
func (b *builder) standardized(x string, o Options, d int) (string, float64, error) {
	if !o.Full || o.Scaling == nil {
		return x, 0, nil
	}
	if err := o.Scaling.Validate(); err != nil {
		return "", 0, fmt.Errorf("onnx: scaling: %w", err)
	}
	if o.Scaling.Dim() != d {
		return "", 0, fmt.Errorf("onnx: scaling has %d coordinates, the EBM %d", o.Scaling.Dim(), d)
	}
	x = b.node("Div", []string{b.node("Sub", []string{x, b.constant("shift", []int{1, d}, o.Scaling.Shift)}), b.constant("scale", []int{1, d}, o.Scaling.Scale)})
	return x, o.Scaling.LogDet(), nil
}

// parametersEntry lists p's names under ParametersKey, so that an import
// trains them and not the constants the export adds (a tilt's or a base's
// σ, a standardization).
func parametersEntry(p *graph.Params) [2]string {
	b, _ := json.Marshal(p.Names()) // strings always marshal
	return [2]string{ParametersKey, string(b)}
}

// baseEntry declares a flow's base σ under BaseSigmaKey.
func baseEntry(g layers.Gaussian) [2]string {
	parts := make([]string, len(g.Sigma))
	for i, s := range g.Sigma {
		parts[i] = strconv.FormatFloat(s, 'g', -1, 64)
	}
	return [2]string{BaseSigmaKey, "[" + strings.Join(parts, ", ") + "]"}
}

// flowEntries are a flow's metadata_props: its weights, its base's σ and,
// for a flow in standardised coordinates, the scaling (round 78 B3: sample
// took the exports of a run's flow to be in the data's units).
func flowEntries(f *graph.Flow, s *data.Scaling) [][2]string {
	entries := [][2]string{parametersEntry(f.Params), baseEntry(f.Base)}
	if s != nil {
		b, _ := json.Marshal(s) // floats of a valid scaling always marshal
		entries = append(entries, [2]string{StandardizationKey, string(b)})
	}
	return entries
}

// FlowSample returns the ONNX model of f's sampling direction: input "z"
// (batch, d), base draws; outputs "x" (batch, d) = T(z) and "log_density"
// (batch) = log λ(x) = log ρ(z) − log|det J_T(z)|.
func FlowSample(f *graph.Flow, o Options) ([]byte, error) {
	fe := flowExportOf(f)
	dt, err := o.dtype(f.Params)
	if err != nil {
		return nil, err
	}
	d := f.Dim()
	b := newBuilder(dt, f.Params)
	x, ld, err := fe.pass(b, "z", false)
	if err != nil {
		return nil, err
	}
	b.rename(x, FlowX)
	b.rename(b.node("Sub", []string{b.gaussianLogProb(f.Base, "z"), ld}), FlowLogDensity)
	g := b.graph("flow_sample", []msg{valueInfo("z", dt, "batch", d)}, []msg{valueInfo(FlowX, dt, "batch", d), valueInfo(FlowLogDensity, dt, "batch")})
	return model(g, fe.what+": z ↦ (x = T(z), log λ(x))", flowEntries(f, o.Scaling)...), nil
}

// FlowDensity returns the ONNX model of f's density: input "x" (batch, d),
// output "log_density" (batch) = log ρ(T⁻¹(x)) + log|det J_{T⁻¹}(x)|; for
// a spline flow or an image RealNVP, or with o.Latent, also "z" (batch,
// d) = T⁻¹(x) (FlowLatent).
func FlowDensity(f *graph.Flow, o Options) ([]byte, error) {
	fe := flowExportOf(f)
	dt, err := o.dtype(f.Params)
	if err != nil {
		return nil, err
	}
	d := f.Dim()
	b := newBuilder(dt, f.Params)
	z, ld, err := fe.pass(b, "x", true)
	if err != nil {
		return nil, err
	}
	b.rename(b.node("Add", []string{b.gaussianLogProb(f.Base, z), ld}), FlowLogDensity)
	outputs, doc := []msg{valueInfo(FlowLogDensity, dt, "batch")}, fe.what+": x ↦ log λ(x)"
	if fe.latent || o.Latent {
		b.rename(z, FlowLatent)
		outputs, doc = append(outputs, valueInfo(FlowLatent, dt, "batch", d)), fe.what+": x ↦ (log λ(x), z = T⁻¹(x))"
	}
	g := b.graph("flow_density", []msg{valueInfo("x", dt, "batch", d)}, outputs)
	return model(g, doc, flowEntries(f, o.Scaling)...), nil
}

// flowExport is how FlowSample and FlowDensity write one kind of flow.
type flowExport struct {
	what   string // the start of the models' doc strings
	latent bool   // the density graph also outputs z = T⁻¹(x)
	// pass adds the forward (z → x) or inverse (x → z) pass and its
	// summed log-determinant (B).
	pass func(b *builder, x string, inverse bool) (string, string, error)
}

// flowExportOf is the export of f's map: a SplineFlow (export_spline.go),
// an ImageRealNVP (export_image.go) or a RealNVP (any other map: its pass
// fails with realNVPOf's error).
func flowExportOf(f *graph.Flow) flowExport {
	switch net := f.Net.(type) {
	case layers.SplineFlow:
		return flowExport{"flowebm neural spline flow", true, passOf(net.Couplings, (*builder).splineCoupling)}
	case layers.ImageRealNVP:
		return flowExport{"flowebm image RealNVP", true, passOf(net.Couplings, (*builder).imageCoupling)}
	}
	return flowExport{"flowebm flow", false, passOf(func() ([]layers.Coupling, error) { return realNVPSteps(f) }, (*builder).coupling)}
}

// passOf is the pass of a flow whose forward pass runs the couplings that
// steps returns in their order (the inverse pass their inverses in
// reverse order), coupling adding one of them; it sums their
// log-determinants.
func passOf[C any](steps func() ([]C, error), coupling func(b *builder, c C, x string, inverse bool) (string, string, error)) func(*builder, string, bool) (string, string, error) {
	return func(b *builder, x string, inverse bool) (string, string, error) {
		cs, err := steps()
		if err != nil {
			return "", "", err
		}
		total := ""
		for j := range cs {
			c := cs[j]
			if inverse {
				c = cs[len(cs)-1-j]
			}
			var ld string
			if x, ld, err = coupling(b, c, x, inverse); err != nil {
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
}

// realNVPSteps is the couplings of f's RealNVP in the order of its
// forward pass, as layers.RealNVP runs them: each block's pair of
// couplings BlockDepth times.
func realNVPSteps(f *graph.Flow) ([]layers.Coupling, error) {
	r, err := realNVPOf(f)
	if err != nil {
		return nil, err
	}
	cs, err := r.Couplings()
	if err != nil {
		return nil, err
	}
	var steps []layers.Coupling
	for blk := range r.Blocks {
		for range max(1, r.BlockDepth) {
			steps = append(steps, cs[2*blk], cs[2*blk+1])
		}
	}
	return steps, nil
}

// realNVPOf is f's map as a RealNVP: the only flow the exporter writes
// (an imported flow is written back with Flow.WriteWeights).
func realNVPOf(f *graph.Flow) (layers.RealNVP, error) {
	nvp, ok := f.Net.(layers.RealNVP)
	if !ok {
		return layers.RealNVP{}, fmt.Errorf("onnx: the exporter writes flowebm's RealNVP, not %T (write an imported flow's trained weights back into its files with Flow.WriteWeights)", f.Net)
	}
	return nvp, nil
}

// WriteFile writes an encoded model to path atomically.
func WriteFile(path string, model []byte) error {
	return safefile.Write(path, func(w io.Writer) error {
		_, err := w.Write(model)
		return err
	})
}

package onnx

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
	"gorgonia.org/tensor"
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
		m.bytes(5, a.encode())
	}
	b.nodes = append(b.nodes, m)
	return out
}

// constant adds an initializer in the graph's dtype and returns its name.
func (b *builder) constant(name string, dims []int, v []float64) string {
	if b.names[name] {
		return name
	}
	b.names[name] = true
	b.inits = append(b.inits, tensorProto(name, dims, b.dtype, v))
	return name
}

func (b *builder) int64s(name string, v ...int) string {
	if b.names[name] {
		return name
	}
	b.names[name] = true
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	b.inits = append(b.inits, tensorProto(name, []int{len(v)}, typeInt64, f))
	return name
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
	var m msg
	m.str(2, name)
	m.str(3, name)
	m.str(4, "Constant")
	m.bytes(5, a)
	b.nodes = append(b.nodes, m)
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
	w, err := b.param(l.Name + ".weight")
	if err != nil {
		return "", err
	}
	in := []string{x, w}
	if !l.NoBias {
		bias, err := b.param(l.Name + ".bias")
		if err != nil {
			return "", err
		}
		in = append(in, bias)
	}
	return b.node("Gemm", in, intAttr("transB", 1)), nil
}

// activation adds a as PyTorch exports it; in float64, LeakyRelu, Softplus
// and Elu, for which ONNX Runtime's CPU provider has no double kernels, are
// written with elementary ops:
//
//	LeakyRelu(x) = Relu(x) − α·Relu(−x)
//	Softplus(x)  = Relu(x) + log(1 + exp(−Relu(x) − Relu(−x)))
//	Elu(x)       = Relu(x) + exp(−Relu(−x)) − 1
//
// (only operators that Net imports).
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
	d := len(c.Mask)
	keep, mdt := make([]float64, d), make([]float64, d)
	for j, m := range c.Mask {
		keep[j], mdt[j] = 1-m, m*c.Dt
	}
	keepN := b.constant("keep_"+strconv.Itoa(b.n), []int{1, d}, keep)
	mdtN := b.constant("mask_dt_"+strconv.Itoa(b.n), []int{1, d}, mdt)
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
	if !inverse {
		y := b.node("Mul", []string{b.node("Add", []string{x, t}), b.node("Exp", []string{s})})
		return y, b.sumRows(s), nil
	}
	ns := b.node("Neg", []string{s})
	y := b.node("Sub", []string{b.node("Mul", []string{x, b.node("Exp", []string{ns})}), t})
	return y, b.sumRows(ns), nil
}

// realNVP adds the flow's forward (z → x) or inverse (x → z) pass and the
// summed log-determinant.
func (b *builder) realNVP(r layers.RealNVP, x string, inverse bool) (string, string, error) {
	cs, err := r.Couplings()
	if err != nil {
		return "", "", err
	}
	depth := max(1, r.BlockDepth)
	var order []int
	for blk := 0; blk < r.Blocks; blk++ {
		for rep := 0; rep < depth; rep++ {
			order = append(order, 2*blk, 2*blk+1)
		}
	}
	if inverse {
		for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
			order[i], order[j] = order[j], order[i]
		}
	}
	total := ""
	for _, k := range order {
		var ld string
		if x, ld, err = b.coupling(cs[k], x, inverse); err != nil {
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

// rename adds Identity(x) named name (graph outputs get stable names).
func (b *builder) rename(x, name string) {
	var m msg
	m.str(1, x)
	m.str(2, name)
	m.str(3, name)
	m.str(4, "Identity")
	b.nodes = append(b.nodes, m)
}

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
	energy, err := b.mlp(net.MLP, x)
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
	doc := "flowebm EBM: energy E(x) of the network"
	if o.Full {
		doc = "flowebm EBM: whole energy in the data's units, E(z) − log ρ(z) + Σ log scale"
	}
	g := b.graph("ebm", []msg{valueInfo("x", dt, "batch", d)}, []msg{valueInfo("energy", dt, "batch", 1)})
	return model(g, doc, parametersEntry(e.Params)), nil
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

// FlowSample returns the ONNX model of f's sampling direction: input "z"
// (batch, d), base draws; outputs "x" (batch, d) = T(z) and "log_density"
// (batch) = log λ(x) = log ρ(z) − log|det J_T(z)|.
func FlowSample(f *graph.Flow, o Options) ([]byte, error) {
	if sf, ok := f.Net.(layers.SplineFlow); ok {
		return splineFlowSample(f, sf, o)
	}
	if im, ok := f.Net.(layers.ImageRealNVP); ok {
		return imageFlowSample(f, im, o) // export_image.go
	}
	dt, err := o.dtype(f.Params)
	if err != nil {
		return nil, err
	}
	d := f.Dim()
	nvp, err := realNVPOf(f)
	if err != nil {
		return nil, err
	}
	b := newBuilder(dt, f.Params)
	x, ld, err := b.realNVP(nvp, "z", false)
	if err != nil {
		return nil, err
	}
	b.rename(x, "x")
	b.rename(b.node("Sub", []string{b.gaussianLogProb(f.Base, "z"), ld}), "log_density")
	g := b.graph("flow_sample", []msg{valueInfo("z", dt, "batch", d)}, []msg{valueInfo("x", dt, "batch", d), valueInfo("log_density", dt, "batch")})
	return model(g, "flowebm flow: z ↦ (x = T(z), log λ(x))", parametersEntry(f.Params), baseEntry(f.Base)), nil
}

// FlowDensity returns the ONNX model of f's density: input "x" (batch, d),
// output "log_density" (batch) = log ρ(T⁻¹(x)) + log|det J_{T⁻¹}(x)|.
func FlowDensity(f *graph.Flow, o Options) ([]byte, error) {
	if sf, ok := f.Net.(layers.SplineFlow); ok {
		return splineFlowDensity(f, sf, o)
	}
	if im, ok := f.Net.(layers.ImageRealNVP); ok {
		return imageFlowDensity(f, im, o) // export_image.go
	}
	dt, err := o.dtype(f.Params)
	if err != nil {
		return nil, err
	}
	d := f.Dim()
	nvp, err := realNVPOf(f)
	if err != nil {
		return nil, err
	}
	b := newBuilder(dt, f.Params)
	z, ld, err := b.realNVP(nvp, "x", true)
	if err != nil {
		return nil, err
	}
	b.rename(b.node("Add", []string{b.gaussianLogProb(f.Base, z), ld}), "log_density")
	g := b.graph("flow_density", []msg{valueInfo("x", dt, "batch", d)}, []msg{valueInfo("log_density", dt, "batch")})
	return model(g, "flowebm flow: x ↦ log λ(x)", parametersEntry(f.Params), baseEntry(f.Base)), nil
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

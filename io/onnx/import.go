package onnx

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	onnxgo "github.com/owulveryck/onnx-go"
	gograph "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"google.golang.org/protobuf/encoding/protowire"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Supported lists the ONNX operators Net can import.
var Supported = []string{"Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Neg", "Sigmoid", "Tanh", "Relu", "LeakyRelu",
	"Softplus", "Elu", "Exp", "Log", "Identity", "Reshape", "Flatten", "Constant"}

// Net is an energy network read from an ONNX file: it implements
// graph.EnergyNet, so an EBM built on it evaluates E and ∇ₓE, samples with
// flowebm's kernels and trains further. Its float initializers are the
// EBM's parameters, under their ONNX names (for a PyTorch export, the
// state_dict's: "net.0.weight", ...), initialised to the file's values;
// integer initializers (shapes) are constants. Every operator is built from
// differentiable Gorgonia operations.
type Net struct {
	// File names the source, for errors.
	File string
	// Dtype is the file's float type (tensor.Float32 or tensor.Float64).
	Dtype tensor.Dtype

	dim    int
	input  string
	output string
	nodes  []opNode
	specs  []layers.ParamSpec
	ints   map[string][]int64
	consts map[string]*tensor.Dense // float constants from Constant nodes
}

type opNode struct {
	op     string
	name   string // the output's name
	inputs []string
	attrs  map[string]any
}

// ReadFile reads an ONNX energy network: one float input (batch, d) with a
// fixed or symbolic batch, one output of shape (batch) or (batch, 1).
func ReadFile(path string) (*Net, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(b, path)
}

// Decode reads an ONNX energy network from b; file names it in errors.
func Decode(b []byte, file string) (n *Net, err error) {
	defer func() {
		// onnx-go's decoder panics on some malformed files: report them
		// as errors.
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("%s: malformed ONNX model: %v", file, r)
		}
	}()
	if err := checkDeclaredShapes(b); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	sg := simple.NewWeightedDirectedGraph(-1, -1)
	be := &recorder{WeightedDirectedGraph: sg, g: sg}
	m := onnxgo.NewModel(be)
	if err := m.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if be.err != nil {
		return nil, fmt.Errorf("%s: %w", file, be.err)
	}
	n = &Net{File: file, ints: map[string][]int64{}, consts: map[string]*tensor.Dense{}}
	if len(m.Input) != 1 || len(m.Output) != 1 {
		return nil, fmt.Errorf("%s: %d inputs and %d outputs (not counting initializers), want one input x (batch, d) and one output, the energy", file, len(m.Input), len(m.Output))
	}
	in := be.g.Node(m.Input[0]).(*recNode)
	out := be.g.Node(m.Output[0]).(*recNode)
	n.input, n.output = in.name, out.name
	if in.value == nil || len(in.value.Shape()) == 0 {
		return nil, fmt.Errorf("%s: input %q has no shape, want (batch, d)", file, in.name)
	}
	shape := in.value.Shape()
	n.dim = shape[len(shape)-1]
	if len(shape) > 2 || n.dim < 1 {
		return nil, fmt.Errorf("%s: input %q has shape %v, want (batch, d)", file, in.name, shape)
	}
	switch in.value.Dtype() {
	case tensor.Float32, tensor.Float64:
		n.Dtype = in.value.Dtype()
	default:
		return nil, fmt.Errorf("%s: input %q is %v, want float32 or float64", file, in.name, in.value.Dtype())
	}
	// Initializers: nodes holding data that no operation produces.
	produced := map[string]bool{}
	for _, o := range be.ops {
		produced[o.name] = true
	}
	var names []string
	for _, rn := range be.nodes {
		if rn == in || rn.value == nil || produced[rn.name] || rn.name == out.name {
			continue
		}
		names = append(names, rn.name)
	}
	sort.Strings(names)
	byName := map[string]*recNode{}
	for _, rn := range be.nodes {
		byName[rn.name] = rn
	}
	for _, name := range names {
		t := byName[name].value
		switch t.Dtype() {
		case tensor.Float32, tensor.Float64:
			vals, err := floats(t)
			if err != nil {
				return nil, fmt.Errorf("%s: initializer %q: %w", file, name, err)
			}
			shp := append([]int(nil), t.Shape()...)
			if len(shp) == 0 {
				shp = []int{1}
			}
			n.specs = append(n.specs, layers.ParamSpec{Name: name, Shape: shp, FanIn: 1, Init: copyInit(vals)})
		case tensor.Int64:
			n.ints[name] = append([]int64(nil), t.Data().([]int64)...)
		default:
			return nil, fmt.Errorf("%s: initializer %q is %v, want float32, float64 or int64", file, name, t.Dtype())
		}
	}
	n.nodes = be.ops
	for _, o := range n.nodes {
		if !isSupported(o.op) {
			return nil, fmt.Errorf("%s: node %q: operator %s is not supported (supported: %v)", file, o.name, o.op, Supported)
		}
		if o.op == "Constant" {
			t, ok := o.attrs["value"].(tensor.Tensor)
			if !ok {
				return nil, fmt.Errorf("%s: node %q: Constant without a tensor \"value\" attribute", file, o.name)
			}
			switch t.Dtype() {
			case tensor.Int64:
				n.ints[o.name] = append([]int64(nil), t.Data().([]int64)...)
			case tensor.Float32, tensor.Float64:
				v, err := floats(t)
				if err != nil {
					return nil, fmt.Errorf("%s: node %q: %w", file, o.name, err)
				}
				n.consts[o.name] = tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(v))
			default:
				return nil, fmt.Errorf("%s: node %q: Constant of type %v, want float or int64", file, o.name, t.Dtype())
			}
		}
	}
	// Check that the graph builds, at batch 2, before anyone uses it.
	if err := n.check(); err != nil {
		return nil, err
	}
	return n, nil
}

func isSupported(op string) bool {
	for _, s := range Supported {
		if s == op {
			return true
		}
	}
	return false
}

func floats(t tensor.Tensor) ([]float64, error) {
	switch d := t.Data().(type) {
	case []float64:
		return append([]float64(nil), d...), nil
	case []float32:
		v := make([]float64, len(d))
		for i, x := range d {
			v[i] = float64(x)
		}
		return v, nil
	case float64:
		return []float64{d}, nil
	case float32:
		return []float64{float64(d)}, nil
	}
	return nil, fmt.Errorf("data of type %T, want float32 or float64 values", t.Data())
}

func copyInit(v []float64) layers.Init {
	return func(_ *rand.Rand, _ int, dst []float64) { copy(dst, v) }
}

// Dim is the input dimension d.
func (n *Net) Dim() int { return n.dim }

// ParamSpecs lists the float initializers, initialised to the file's values.
func (n *Net) ParamSpecs() []layers.ParamSpec { return n.specs }

// check builds the graph once on a batch of 2.
func (n *Net) check() error {
	g := G.NewGraph()
	b := &checkBinder{g: g, dtype: tensor.Float64, specs: n.specs}
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(2, n.dim), G.WithName("x"))
	_, err := n.Energy(b, x)
	return err
}

type checkBinder struct {
	g     *G.ExprGraph
	dtype tensor.Dtype
	specs []layers.ParamSpec
}

func (c *checkBinder) Graph() *G.ExprGraph { return c.g }
func (c *checkBinder) Dtype() tensor.Dtype { return c.dtype }
func (c *checkBinder) Param(name string, shape ...int) (*G.Node, error) {
	for _, s := range c.specs {
		if s.Name == name {
			return G.NewTensor(c.g, c.dtype, len(shape), G.WithShape(shape...), G.WithName(name)), nil
		}
	}
	return nil, fmt.Errorf("no parameter %q", name)
}

// Energy adds the network to b's graph for the batch x (B, d) and returns
// the energies (B).
func (n *Net) Energy(b layers.Binder, x *G.Node) (*G.Node, error) {
	vals := map[string]*G.Node{n.input: x}
	shapes := map[string][]int{}
	for _, s := range n.specs {
		shapes[s.Name] = s.Shape
	}
	get := func(o opNode, i int) (*G.Node, error) {
		if i >= len(o.inputs) {
			return nil, fmt.Errorf("%s: node %q (%s) has %d inputs, want at least %d", n.File, o.name, o.op, len(o.inputs), i+1)
		}
		name := o.inputs[i]
		if v, ok := vals[name]; ok {
			return v, nil
		}
		if shp, ok := shapes[name]; ok {
			p, err := b.Param(name, shp...)
			if err != nil {
				return nil, err
			}
			vals[name] = p
			return p, nil
		}
		return nil, fmt.Errorf("%s: node %q (%s): input %q is neither computed before it nor a float initializer", n.File, o.name, o.op, name)
	}
	for _, o := range n.nodes {
		var y *G.Node
		var err error
		switch o.op {
		case "Constant":
			if c, ok := n.consts[o.name]; ok {
				y = layers.Constant(b, o.name, c.Data().([]float64), c.Shape()...)
			} else {
				continue // int64: read through n.ints
			}
		default:
			y, err = n.apply(b, o, get)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: node %q (%s): %w", n.File, o.name, o.op, err)
		}
		vals[o.name] = y
	}
	y, ok := vals[n.output]
	if !ok {
		return nil, fmt.Errorf("%s: output %q is not computed by any node", n.File, n.output)
	}
	s := y.Shape()
	bsz := x.Shape()[0]
	switch {
	case len(s) == 1 && s[0] == bsz:
		return y, nil
	case len(s) == 2 && s[0] == bsz && s[1] == 1:
		return G.Sum(y, 1)
	}
	return nil, fmt.Errorf("%s: output %q has shape %v for a batch of %d, want (%d) or (%d, 1)", n.File, n.output, s, bsz, bsz, bsz)
}

func intAttrOf(o opNode, name string, def int64) int64 {
	if v, ok := o.attrs[name].(int64); ok {
		return v
	}
	return def
}

// floatAttrOf reads a float attribute. ONNX stores them as float32; the
// value is taken as the shortest decimal that rounds to that float32 (the
// 0.05 a PyTorch module was written with, not 0.0500000007…), which makes
// float64 imports agree with PyTorch to round-off instead of 1e-10.
func floatAttrOf(o opNode, name string, def float64) float64 {
	if v, ok := o.attrs[name].(float32); ok {
		f, err := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
		if err != nil {
			return float64(v)
		}
		return f
	}
	return def
}

// apply builds one operator.
func (n *Net) apply(b layers.Binder, o opNode, get func(opNode, int) (*G.Node, error)) (*G.Node, error) {
	unary := func(f func(*G.Node) (*G.Node, error)) (*G.Node, error) {
		a, err := get(o, 0)
		if err != nil {
			return nil, err
		}
		return f(a)
	}
	act := func(a layers.Activation) (*G.Node, error) {
		return unary(func(x *G.Node) (*G.Node, error) { return a.Apply(b, x) })
	}
	binary := func(kind string) (*G.Node, error) {
		a, err := get(o, 0)
		if err != nil {
			return nil, err
		}
		c, err := get(o, 1)
		if err != nil {
			return nil, err
		}
		return broadcast(kind, a, c)
	}
	switch o.op {
	case "Identity":
		return unary(func(x *G.Node) (*G.Node, error) { return x, nil })
	case "Neg":
		return unary(G.Neg)
	case "Exp":
		return unary(G.Exp)
	case "Log":
		return unary(G.Log)
	case "Sigmoid":
		return unary(G.Sigmoid)
	case "Tanh":
		return unary(G.Tanh)
	case "Relu":
		return act(layers.ReLU)
	case "LeakyRelu":
		return act(layers.LeakyReLU(floatAttrOf(o, "alpha", 0.01)))
	case "Softplus":
		return act(layers.Softplus)
	case "Elu":
		if a := floatAttrOf(o, "alpha", 1); a != 1 {
			return nil, fmt.Errorf("alpha %v: only alpha 1 (PyTorch's default) is supported", a)
		}
		return act(layers.ELU)
	case "Add", "Sub", "Mul", "Div":
		return binary(o.op)
	case "MatMul":
		a, err := get(o, 0)
		if err != nil {
			return nil, err
		}
		w, err := get(o, 1)
		if err != nil {
			return nil, err
		}
		if len(a.Shape()) != 2 || len(w.Shape()) != 2 {
			return nil, fmt.Errorf("MatMul of shapes %v and %v: only matrices are supported", a.Shape(), w.Shape())
		}
		return G.Mul(a, w)
	case "Gemm":
		return n.gemm(b, o, get)
	case "Flatten":
		a, err := get(o, 0)
		if err != nil {
			return nil, err
		}
		axis := int(intAttrOf(o, "axis", 1))
		s := a.Shape()
		if axis < 0 {
			axis += len(s)
		}
		if axis < 0 || axis > len(s) {
			return nil, fmt.Errorf("axis %d for shape %v", axis, s)
		}
		outer, inner := 1, 1
		for i, v := range s {
			if i < axis {
				outer *= v
			} else {
				inner *= v
			}
		}
		return G.Reshape(a, tensor.Shape{outer, inner})
	case "Reshape":
		a, err := get(o, 0)
		if err != nil {
			return nil, err
		}
		if len(o.inputs) < 2 {
			return nil, fmt.Errorf("no shape input (opsets before 5 are not supported)")
		}
		spec, ok := n.ints[o.inputs[1]]
		if !ok {
			return nil, fmt.Errorf("shape %q is not a constant int64 tensor", o.inputs[1])
		}
		shape, err := reshapeTo(a.Shape(), spec)
		if err != nil {
			return nil, err
		}
		return G.Reshape(a, shape)
	}
	return nil, fmt.Errorf("operator %s is not supported (supported: %v)", o.op, Supported)
}

// gemm builds α·A'·B' + β·C with A' = A or Aᵀ (transA), B' likewise.
func (n *Net) gemm(b layers.Binder, o opNode, get func(opNode, int) (*G.Node, error)) (*G.Node, error) {
	a, err := get(o, 0)
	if err != nil {
		return nil, err
	}
	w, err := get(o, 1)
	if err != nil {
		return nil, err
	}
	if len(a.Shape()) != 2 || len(w.Shape()) != 2 {
		return nil, fmt.Errorf("inputs of shapes %v and %v, want matrices", a.Shape(), w.Shape())
	}
	if intAttrOf(o, "transA", 0) != 0 {
		if a, err = G.Transpose(a); err != nil {
			return nil, err
		}
	}
	if intAttrOf(o, "transB", 0) != 0 {
		if w, err = G.Transpose(w); err != nil {
			return nil, err
		}
	}
	y, err := G.Mul(a, w)
	if err != nil {
		return nil, err
	}
	if alpha := floatAttrOf(o, "alpha", 1); alpha != 1 {
		if y, err = G.Mul(y, layers.Scalar(b, alpha)); err != nil {
			return nil, err
		}
	}
	if len(o.inputs) < 3 || o.inputs[2] == "" {
		return y, nil
	}
	c, err := get(o, 2)
	if err != nil {
		return nil, err
	}
	if beta := floatAttrOf(o, "beta", 1); beta != 1 {
		if c, err = G.Mul(c, layers.Scalar(b, beta)); err != nil {
			return nil, err
		}
	}
	return broadcast("Add", y, c)
}

// reshapeTo resolves an ONNX Reshape target (0 copies a dimension, −1 is
// inferred).
func reshapeTo(from tensor.Shape, spec []int64) (tensor.Shape, error) {
	total := from.TotalSize()
	out := make(tensor.Shape, len(spec))
	infer, known := -1, 1
	for i, v := range spec {
		switch {
		case v == 0:
			if i >= len(from) {
				return nil, fmt.Errorf("shape %v copies dimension %d of %v", spec, i, from)
			}
			out[i] = from[i]
		case v == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("shape %v has two −1", spec)
			}
			infer = i
			continue
		case v < 0:
			return nil, fmt.Errorf("shape %v has %d", spec, v)
		default:
			out[i] = int(v)
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return nil, fmt.Errorf("cannot reshape %v to %v", from, spec)
		}
		out[infer] = total / known
	} else if known != total {
		return nil, fmt.Errorf("cannot reshape %v (%d values) to %v", from, total, spec)
	}
	return out, nil
}

// broadcast applies an elementwise binary operator with NumPy's
// broadcasting for the ranks an MLP meets: scalars, vectors and matrices.
func broadcast(kind string, a, c *G.Node) (*G.Node, error) {
	var err error
	as, cs := a.Shape(), c.Shape()
	// Scalars and one-element tensors.
	if as.TotalSize() == 1 && len(as) <= 1 || cs.TotalSize() == 1 && len(cs) <= 1 {
		if len(as) == 1 && as[0] == 1 && len(cs) > 0 {
			if a, err = G.Reshape(a, tensor.ScalarShape()); err != nil {
				return nil, err
			}
		}
		if len(cs) == 1 && cs[0] == 1 && len(as) > 0 {
			if c, err = G.Reshape(c, tensor.ScalarShape()); err != nil {
				return nil, err
			}
		}
		return elementwise(kind, a, c)
	}
	// Lift vectors to rows (NumPy aligns trailing dimensions).
	if len(as) == 1 && len(cs) == 2 {
		if a, err = G.Reshape(a, tensor.Shape{1, as[0]}); err != nil {
			return nil, err
		}
	}
	if len(cs) == 1 && len(as) == 2 {
		if c, err = G.Reshape(c, tensor.Shape{1, cs[0]}); err != nil {
			return nil, err
		}
	}
	as, cs = a.Shape(), c.Shape()
	if as.Eq(cs) {
		return elementwise(kind, a, c)
	}
	if len(as) != 2 || len(cs) != 2 {
		return nil, fmt.Errorf("cannot broadcast shapes %v and %v", as, cs)
	}
	var left, right []byte
	for ax := 0; ax < 2; ax++ {
		switch {
		case as[ax] == cs[ax]:
		case as[ax] == 1:
			left = append(left, byte(ax))
		case cs[ax] == 1:
			right = append(right, byte(ax))
		default:
			return nil, fmt.Errorf("cannot broadcast shapes %v and %v", as, cs)
		}
	}
	switch kind {
	case "Add":
		return G.BroadcastAdd(a, c, left, right)
	case "Sub":
		return G.BroadcastSub(a, c, left, right)
	case "Mul":
		return G.BroadcastHadamardProd(a, c, left, right)
	case "Div":
		return G.BroadcastHadamardDiv(a, c, left, right)
	}
	return nil, fmt.Errorf("unknown elementwise operator %s", kind)
}

func elementwise(kind string, a, c *G.Node) (*G.Node, error) {
	switch kind {
	case "Add":
		return G.Add(a, c)
	case "Sub":
		return G.Sub(a, c)
	case "Mul":
		return G.HadamardProd(a, c)
	case "Div":
		return G.HadamardDiv(a, c)
	}
	return nil, fmt.Errorf("unknown elementwise operator %s", kind)
}

// recorder is the onnx-go backend: it records the graph's values and
// operations in file order, for Net to build later.
type recorder struct {
	*simple.WeightedDirectedGraph
	g     *simple.WeightedDirectedGraph
	nodes []*recNode
	ops   []opNode
	err   error
}

type recNode struct {
	id    int64
	name  string
	value tensor.Tensor
}

func (r *recNode) ID() int64                       { return r.id }
func (r *recNode) SetName(s string)                { r.name = s }
func (r *recNode) GetName() string                 { return r.name }
func (r *recNode) SetTensor(t tensor.Tensor) error { r.value = t; return nil }
func (r *recNode) GetTensor() tensor.Tensor        { return r.value }

func (r *recorder) NewNode() gograph.Node {
	n := &recNode{id: r.g.NewNode().ID()}
	return n
}
func (r *recorder) AddNode(n gograph.Node) {
	r.g.AddNode(n)
	r.nodes = append(r.nodes, n.(*recNode))
}

// ApplyOperation records op with its output; the inputs are the output's
// edges, ordered by weight (the input's position).
func (r *recorder) ApplyOperation(op onnxgo.Operation, outs ...gograph.Node) error {
	if len(outs) != 1 {
		err := fmt.Errorf("operator %s has %d outputs; only single-output operators are supported", op.Name, len(outs))
		if r.err == nil {
			r.err = err
		}
		return err
	}
	out := outs[0].(*recNode)
	type in struct {
		pos  float64
		name string
	}
	var ins []in
	it := r.g.From(out.ID())
	for it.Next() {
		n := it.Node().(*recNode)
		ins = append(ins, in{r.g.WeightedEdge(out.ID(), n.ID()).Weight(), n.name})
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].pos < ins[j].pos })
	o := opNode{op: op.Name, name: out.name, attrs: op.Attributes}
	for _, v := range ins {
		o.inputs = append(o.inputs, v.name)
	}
	switch op.Name {
	case "Constant":
		o.inputs = nil // onnx-go gives input-less nodes a fake input
	case "Add", "Sub", "Mul", "Div", "MatMul":
		// The graph keeps one edge per pair of nodes: x·x arrives as one
		// input.
		if len(o.inputs) == 1 {
			o.inputs = append(o.inputs, o.inputs[0])
		}
	}
	r.ops = append(r.ops, o)
	return nil
}

// UpdateWeights returns the ONNX model in b with every initializer named
// like a parameter of p replaced by the parameter's current values (same
// shape and element type); everything else is kept byte for byte. Use it
// to take a network imported with Decode, and trained in flowebm, back to
// the framework it came from.
func UpdateWeights(b []byte, p *graph.Params) ([]byte, error) {
	params := map[string]*graph.Param{}
	for _, q := range p.List() {
		params[q.Name] = q
	}
	found := map[string]bool{}
	var out msg
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, raw []byte) error {
		if num != 7 || typ != protowire.BytesType {
			out = append(out, raw...)
			return nil
		}
		var g msg
		err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, raw []byte) error {
			if num != 5 || typ != protowire.BytesType {
				g = append(g, raw...)
				return nil
			}
			t, err := updateTensor(v, params, found)
			if err != nil {
				return err
			}
			g.bytes(5, t)
			return nil
		})
		if err != nil {
			return err
		}
		out.bytes(7, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name := range params {
		if !found[name] {
			return nil, fmt.Errorf("onnx: parameter %q is not an initializer of the model", name)
		}
	}
	return out, nil
}

// eachField calls fn with every field of the message b: its number, wire
// type, value (the bytes of a length-delimited field) and raw encoding.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v, raw []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("onnx: malformed protobuf: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("onnx: malformed protobuf field %d: %w", num, protowire.ParseError(m))
		}
		var v []byte
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := fn(num, typ, v, b[:n+m]); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// updateTensor re-encodes the TensorProto v with its parameter's values if
// it names one.
func updateTensor(v []byte, params map[string]*graph.Param, found map[string]bool) (msg, error) {
	var name string
	var dims []int
	dtype := 0
	err := eachField(v, func(num protowire.Number, typ protowire.Type, f, raw []byte) error {
		switch {
		case num == 8 && typ == protowire.BytesType:
			name = string(f)
		case num == 2 && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(num):])
			dtype = int(x)
		case num == 1 && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(num):])
			dims = append(dims, int(x))
		case num == 1 && typ == protowire.BytesType: // packed dims
			for len(f) > 0 {
				x, k := protowire.ConsumeVarint(f)
				if k < 0 {
					return fmt.Errorf("onnx: initializer dims: %w", protowire.ParseError(k))
				}
				dims = append(dims, int(x))
				f = f[k:]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	q, ok := params[name]
	if !ok {
		return msg(v), nil
	}
	if fmt.Sprint(dims) != fmt.Sprint(q.Shape) && !(len(dims) == 0 && len(q.Shape) == 1 && q.Shape[0] == 1) {
		return nil, fmt.Errorf("onnx: initializer %q has shape %v, the parameter %v", name, dims, q.Shape)
	}
	if dtype != typeFloat && dtype != typeDouble {
		return nil, fmt.Errorf("onnx: initializer %q has data type %d, want float (1) or double (11)", name, dtype)
	}
	found[name] = true
	return tensorProto(name, dims, dtype, q.Float64s()), nil
}

// maxDeclared bounds the elements of a declared input, output or value
// shape: onnx-go allocates a tensor of every declared shape, so a corrupt
// file could otherwise ask for unbounded memory.
const maxDeclared = 1 << 26

// checkDeclaredShapes rejects models whose graph declares a value with more
// than maxDeclared elements.
func checkDeclaredShapes(b []byte) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, g, _ []byte) error {
		if num != 7 || typ != protowire.BytesType {
			return nil
		}
		return eachField(g, func(num protowire.Number, typ protowire.Type, vi, _ []byte) error {
			if (num != 11 && num != 12 && num != 13) || typ != protowire.BytesType {
				return nil
			}
			var name string
			size := 1
			err := walk(vi, []protowire.Number{2, 1, 2, 1, 1}, func(v uint64) error {
				if v > maxDeclared || size*int(v) > maxDeclared {
					return fmt.Errorf("value %q declares more than %d elements", name, maxDeclared)
				}
				size *= int(v)
				return nil
			}, &name)
			return err
		})
	})
}

// walk follows the path of nested message fields and calls fn with every
// varint at its end; name receives the message's field 1 if it is a string
// (a ValueInfoProto's name).
func walk(b []byte, path []protowire.Number, fn func(uint64) error, name *string) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v, raw []byte) error {
		if name != nil && num == 1 && typ == protowire.BytesType {
			*name = string(v)
		}
		if num != path[0] {
			return nil
		}
		if len(path) == 1 {
			if typ != protowire.VarintType {
				return nil
			}
			x, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(num):])
			return fn(x)
		}
		if typ != protowire.BytesType {
			return nil
		}
		return walk(v, path[1:], fn, nil)
	})
}

// MLP recognises the network as a chain of Gemm (transB = 1, α = β = 1,
// with bias) layers with one elementwise activation between them, as
// PyTorch exports an nn.Sequential of Linears and activations, and returns
// it as a layers.MLP named "net" with a Sequential layout together with its
// parameter values in the MLP's order (weight, bias per layer). Anything
// else is an error naming the node that does not fit.
func (n *Net) MLP() (layers.MLP, [][]float64, error) {
	values := map[string][]float64{}
	shapes := map[string][]int{}
	for _, s := range n.specs {
		v := make([]float64, s.Size())
		s.Init(nil, 0, v)
		values[s.Name], shapes[s.Name] = v, s.Shape
	}
	mlp := layers.MLP{Name: "net", Sizes: []int{n.dim}, Layout: layers.Sequential}
	var vals [][]float64
	cur := n.input
	var hidden *layers.Activation
	pendingAct := false
	for _, o := range n.nodes {
		if len(o.inputs) == 0 || o.inputs[0] != cur {
			return mlp, nil, fmt.Errorf("%s: node %q (%s) does not continue a chain of layers from %q", n.File, o.name, o.op, cur)
		}
		switch o.op {
		case "Gemm":
			if intAttrOf(o, "transA", 0) != 0 || intAttrOf(o, "transB", 0) != 1 || floatAttrOf(o, "alpha", 1) != 1 || floatAttrOf(o, "beta", 1) != 1 || len(o.inputs) != 3 {
				return mlp, nil, fmt.Errorf("%s: node %q: only Gemm(x, W, b) with transB = 1 (nn.Linear) converts", n.File, o.name)
			}
			w, b := o.inputs[1], o.inputs[2]
			ws, bs := shapes[w], shapes[b]
			last := mlp.Sizes[len(mlp.Sizes)-1]
			if len(ws) != 2 || ws[1] != last || len(bs) != 1 || bs[0] != ws[0] {
				return mlp, nil, fmt.Errorf("%s: node %q: weight %v and bias %v do not follow a layer of width %d", n.File, o.name, ws, bs, last)
			}
			if len(mlp.Sizes) > 1 && !pendingAct && hidden != nil {
				return mlp, nil, fmt.Errorf("%s: node %q: two Linears without an activation between them", n.File, o.name)
			}
			mlp.Sizes = append(mlp.Sizes, ws[0])
			vals = append(vals, values[w], values[b])
			pendingAct = false
		case "Relu", "LeakyRelu", "Tanh", "Softplus", "Elu", "Sigmoid":
			a, ok := activationOf(o)
			if !ok || pendingAct || len(mlp.Sizes) < 2 {
				return mlp, nil, fmt.Errorf("%s: node %q: activation %s cannot be part of an MLP here", n.File, o.name, o.op)
			}
			if hidden != nil && *hidden != a {
				return mlp, nil, fmt.Errorf("%s: node %q: activation %v differs from the first hidden one, %v", n.File, o.name, a, *hidden)
			}
			hidden, pendingAct = &a, true
		case "Identity":
		default:
			return mlp, nil, fmt.Errorf("%s: node %q: %s does not fit an MLP of Linears and activations", n.File, o.name, o.op)
		}
		cur = o.name
	}
	if pendingAct || len(mlp.Sizes) < 2 || mlp.Sizes[len(mlp.Sizes)-1] != 1 || cur != n.output {
		return mlp, nil, fmt.Errorf("%s: the network does not end in a Linear with one output", n.File)
	}
	if hidden != nil {
		mlp.Hidden = *hidden
	}
	return mlp, vals, nil
}

func activationOf(o opNode) (layers.Activation, bool) {
	switch o.op {
	case "Relu":
		return layers.ReLU, true
	case "LeakyRelu":
		return layers.LeakyReLU(floatAttrOf(o, "alpha", 0.01)), true
	case "Tanh":
		return layers.Tanh, true
	case "Softplus":
		return layers.Softplus, true
	case "Elu":
		return layers.ELU, floatAttrOf(o, "alpha", 1) == 1
	}
	return layers.Activation{}, false // Sigmoid is not a layers.Activation
}

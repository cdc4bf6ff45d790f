package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/layers/nd"
)

// val is one ONNX value during instantiation: its ONNX shape and element
// type, and either a constant (folded at build time, float64 values in a
// tensor of the physical shape) or a graph node. Physical shapes equal
// ONNX shapes except that rank-0 values are held with shape (1) (see
// package nd).
type val struct {
	shape []int
	elem  DataType
	c     *tensor.Dense
	n     *G.Node
	src   string // the initializer a parameter node (or its Identity) reads
	err   error  // set for outputs the importer does not compute
}

func (v *val) isConst() bool { return v.c != nil }

// phys is the physical shape of an ONNX shape.
func phys(shape []int) []int {
	if len(shape) == 0 {
		return []int{1}
	}
	return shape
}

// constVal makes a constant from float64 values (copied). An empty
// tensor (a dimension 0, as x.shape[2:] of a matrix) is held as a
// one-element placeholder: Shape, Size, Reshape and Concat (which drops
// it) accept it, every other operation refuses it.
func constVal(shape []int, elem DataType, data []float64) *val {
	if len(shape) > 0 && sizeOf(shape) == 0 {
		t := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{0}))
		return &val{shape: append([]int(nil), shape...), elem: elem, c: t}
	}
	return ownConst(shape, elem, append([]float64(nil), data...))
}

// ownConst is constVal without the copy: the constant takes data, which
// the caller must not use again.
func ownConst(shape []int, elem DataType, data []float64) *val {
	if len(shape) > 0 && sizeOf(shape) == 0 {
		return constVal(shape, elem, nil)
	}
	t := tensor.New(tensor.WithShape(phys(shape)...), tensor.WithBacking(data))
	return &val{shape: append([]int(nil), shape...), elem: elem, c: t}
}

func isFloat(t DataType) bool {
	return t == TypeFloat || t == TypeDouble || t == TypeFloat16 || t == TypeBFloat16
}

// instance builds a Net's graph for one batch size.
type instance struct {
	net    *Net
	b      layers.Binder
	batch  int
	env    map[string]*val
	consts map[*val]*G.Node
	mem    memory
	// foldParams reads float initializers as constants (MLP recognition).
	foldParams bool
	// bare: a node's build error is returned as a nodeFailure, without
	// advice (failsAlike's second build).
	bare bool
}

func newInstance(n *Net, b layers.Binder, batch int) *instance {
	return &instance{net: n, b: b, batch: batch, env: map[string]*val{}, consts: map[*val]*G.Node{},
		mem: memory{constLimit: constBudget()}}
}

// run builds every node and returns the energies (B).
func (in *instance) run(x *G.Node) (*G.Node, error) {
	if err := in.buildAll(x); err != nil {
		return nil, err
	}
	return in.energy()
}

// buildAll binds the input x (B, Dim) and builds every node.
func (in *instance) buildAll(x *G.Node) error {
	shape := append([]int{in.batch}, in.net.inShape...)
	xi := x
	if len(shape) != 2 {
		var err error
		if xi, err = G.Reshape(x, tensor.Shape(shape)); err != nil {
			return err
		}
	}
	elem := in.net.inElem
	if elem == TypeUndefined {
		elem = in.floatType()
	}
	xv, err := in.rounded(&val{shape: shape, elem: elem, n: xi}) // a float32 input of a promoted graph
	if err != nil {
		return err
	}
	in.env[in.net.input] = xv
	for _, node := range in.net.nodes {
		if err := in.apply(node); err != nil {
			return in.nodeError(node, err)
		}
	}
	return nil
}

func (in *instance) floatType() DataType {
	if in.net.Dtype == tensor.Float32 {
		return TypeFloat
	}
	return TypeDouble
}

// nodeError names the node and, when the build fails at a batch size other
// than the declared one, says which node pins the batch.
func (in *instance) nodeError(node *Node, err error) error {
	if in.bare {
		return &nodeFailure{node, err}
	}
	msg := fmt.Sprintf("node %q (%s): %v", nodeName(node), node.OpType, err)
	var ns *notSupportedError
	if errors.As(err, &ns) {
		return fmt.Errorf("%s", msg)
	}
	var big *tensorTooLarge
	if errors.As(err, &big) && big.batch > 1 { // round 73 A3: not the batch's fault, but its size
		why := ""
		if big.batch <= 3 { // the load check's (round 74 A3: said of a batch of 7)
			why = ": flowebm checks a graph at batches of 2 and 3 points, so a model whose values pass a third of that a point is too large for it"
		}
		return fmt.Errorf("node %q (%s): %w (at a batch of %d points, %s a point%s)", nodeName(node), node.OpType, err, big.batch, byteSize(big.bytes/float64(big.batch)), why)
	}
	if name := in.emptyConstantInput(node); name != "" && errors.As(err, new(errEmptyOperand)) { // round 68: batch advice for the file's own empty tensor
		return fmt.Errorf("%s: %q is an empty constant of the file, whatever the batch; leave the empty term out of the model before exporting", msg, name)
	}
	if d := in.net.batch; d > 0 && d != in.batch {
		msg += fmt.Sprintf(" (the model's input is declared with batch %d and this node cannot run at batch %d: export with dynamic_axes={%q: {0: \"batch\"}} or evaluate batches of %d)", d, in.batch, in.net.input, d)
	} else if d == 0 && node.OpType == "Reshape" { // probe 48: "cannot reshape [2 4] to [64 -1]" named a batch never given
		msg += fmt.Sprintf(" (the input %q declares a dynamic batch, and flowebm builds the graph at batch %d to check it: a Reshape to a constant batch, kept from the export where the module reads the batch in Python (len(x), x.shape[0]), fails at other sizes: read it from the tensor (x.flatten(1), x.reshape(-1, d)), or export without dynamic_axes so that flowebm runs the graph on chunks of its batch)", in.net.input, in.batch)
	} else if d == 0 && !in.failsAlike(node, err) { // probe 49: x[1:-1] failed at the check's batch of 2, which the message did not say
		msg += fmt.Sprintf(" (at a batch of %d points, for the input %q, which declares a dynamic batch: a graph that cannot run on %d points, or drops or adds rows (x[1:-1]), gives no energy per point; so does one that kept the export's batch as a constant, as PyTorch traces x.view(len(x), -1) or torch.zeros(x.size(0)): read the batch from the tensor (x.flatten(1), x.reshape(-1, d)), or export without dynamic_axes so that flowebm runs the graph on chunks of its batch)", in.batch, in.net.input, in.batch)
	}
	return fmt.Errorf("%s", msg)
}

// nodeFailure is a node's build error in a bare instance.
type nodeFailure struct {
	node *Node
	err  error
}

func (e *nodeFailure) Error() string { return e.err.Error() }

// failsAlike reports whether node fails with err's very words at another
// batch too: then the file's node fails whatever the batch, and advice
// about the batch does not help (round 76 A4: a Gather index past its
// axis, Slice step 0, Conv group 0 were told to export without
// dynamic_axes, which failed alike). An error that names the batch's
// shapes reads differently there, and keeps its advice.
func (in *instance) failsAlike(node *Node, err error) bool {
	other := in.batch + 3
	g := G.NewGraph()
	x := G.NewMatrix(g, in.net.Dtype, G.WithShape(other, in.net.dim), G.WithName("x"))
	again := newInstance(in.net, &recordingBinder{g: g, dtype: in.net.Dtype, inits: in.net.inits, used: map[string]bool{}}, other)
	again.bare, again.foldParams = true, in.foldParams
	var f *nodeFailure
	return errors.As(again.buildAll(x), &f) && f.node == node && f.err.Error() == err.Error()
}

// errEmptyOperand is an operation's refusal of an empty operand.
type errEmptyOperand struct{ shape []int }

func (e errEmptyOperand) Error() string {
	return fmt.Sprintf("an operand is empty (shape %v): only Shape, Size, Reshape and Concat take empty tensors", e.shape)
}

// emptyConstantInput is the first input of node that is an empty
// initializer or an empty Constant node's output ("" if none): empty
// whatever the batch, unlike a slice of the input or a constant computed
// from its shape.
func (in *instance) emptyConstantInput(node *Node) string {
	for _, name := range node.Inputs {
		if t, ok := in.net.inits[name]; ok && t.Len() == 0 {
			return name
		}
		if v, ok := in.env[name]; !ok || !v.isConst() || sizeOf(v.shape) != 0 || len(v.shape) == 0 {
			continue
		}
		for _, p := range in.net.nodes {
			if p.OpType == "Constant" && slices.Contains(p.Outputs, name) {
				return name
			}
		}
	}
	return ""
}

// energy reads the output as energies (B).
func (in *instance) energy() (*G.Node, error) {
	name := in.net.outputName
	v, err := in.computed(name)
	if err != nil {
		return nil, err
	}
	s := v.shape
	if len(s) == 0 && in.batch == 1 { // .squeeze() of one point's energy (probe 50)
		s = tensor.Shape{1}
		if y, err := G.Reshape(v.n, s); err == nil {
			v = &val{shape: s, elem: v.elem, n: y}
		}
	}
	if len(s) == 0 || s[0] != in.batch || sizeOf(s) != in.batch {
		return nil, fmt.Errorf("output %q has shape %v for a batch of %d, want one value per sample: (%d), (%d, 1) or (%d, 1, …, 1)", name, s, in.batch, in.batch, in.batch, in.batch)
	}
	y := v.n
	if len(s) > 1 { // (B, 1, 1, 1) of a last 1-channel convolution pooled (probe 54)
		if y, err = G.Reshape(y, tensor.Shape{in.batch}); err != nil {
			return nil, err
		}
	}
	if in.net.cfg.LogDensity {
		return nd.Apply(nd.Unary{Fn: nd.Neg}, y)
	}
	return y, nil
}

// perSample reads the output name as (B, k): k values per sample, flat
// (an output of shape (B, C, H, W) is reshaped to (B, C·H·W)).
func (in *instance) perSample(name string) (*G.Node, error) {
	v, err := in.computed(name)
	if err != nil {
		return nil, err
	}
	s := v.shape
	if len(s) == 0 && in.batch == 1 { // .squeeze() of one point's output (probe 50)
		return G.Reshape(v.n, tensor.Shape{1, 1})
	}
	if len(s) < 1 || s[0] != in.batch {
		return nil, fmt.Errorf("output %q has shape %v for a batch of %d, want the batch first", name, s, in.batch)
	}
	k := sizeOf(s[1:])
	if len(s) == 2 {
		return v.n, nil
	}
	return G.Reshape(v.n, tensor.Shape{in.batch, k})
}

// computed returns the output name: computed from the input, float.
func (in *instance) computed(name string) (*val, error) {
	v, ok := in.env[name]
	if !ok {
		if _, init := in.net.inits[name]; init {
			return nil, fmt.Errorf("output %q is an initializer, not computed from the input", name)
		}
		return nil, fmt.Errorf("output %q is not computed by any node", name)
	}
	if v.err != nil {
		return nil, fmt.Errorf("output %q: %w", name, v.err)
	}
	if v.isConst() && !slices.Contains(in.net.cfg.Constant, name) {
		return nil, fmt.Errorf("output %q does not depend on the input %q", name, in.net.input)
	}
	if v.isConst() { // a volume-preserving flow's log-determinant, 0 (probe 63: refused): a value of the graph, as a node of nothing else has none
		shape := phys(v.shape)
		n := G.NewTensor(in.b.Graph(), in.b.Dtype(), len(shape), G.WithShape(shape...), G.WithName(fmt.Sprintf("onnx_constant_output_%s_%d_%p", name, in.batch, in.net)),
			G.WithValue(typedTensor(in.b.Dtype(), shape, v.c.Data().([]float64))))
		v = &val{shape: v.shape, elem: v.elem, n: n}
	}
	if !isFloat(v.elem) {
		return nil, fmt.Errorf("output %q is %v, want float values", name, v.elem)
	}
	return v, nil
}

// apply builds one node and binds its outputs.
func (in *instance) apply(node *Node) error {
	if node.Domain != "" && node.Domain != "ai.onnx" {
		return notSupported("operator of domain %q is not supported (only the default ONNX domain)", node.Domain)
	}
	h, ok := handlers[node.OpType]
	if !ok {
		return unsupported(node.OpType)
	}
	if err := checkAttrs(node, in.net.Opset); err != nil {
		return &notSupportedError{err.Error()} // the file's attributes, whatever the batch
	}
	if err := checkArity(node, in.net.Opset); err != nil {
		return &notSupportedError{err.Error()}
	}
	outs, err := h(in, node)
	if err != nil {
		return err
	}
	for i, name := range node.Outputs {
		if name == "" {
			continue
		}
		if i < len(outs) && outs[i] != nil {
			in.env[name] = outs[i]
			continue
		}
		in.env[name] = &val{err: notSupported("output %d of node %q (%s) is not supported", i, nodeName(node), node.OpType)}
	}
	return nil
}

// notSupportedError is a build error for what the importer does not do
// (an operator, an attribute, an output), whatever the batch: it gets no
// explanation of the batch the graph was built at (probe 53).
type notSupportedError struct{ msg string }

func (e *notSupportedError) Error() string { return e.msg }

// notSupported is a notSupportedError with fmt.Sprintf's words.
func notSupported(format string, args ...any) error {
	return &notSupportedError{fmt.Sprintf(format, args...)}
}

// unsupported is the error for an operator the importer does not have.
func unsupported(op string) error {
	if msg, ok := refusals[op]; ok {
		return notSupported("operator %s is not supported: %s", op, msg)
	}
	return notSupported("operator %s is not supported (supported: %s)", op, strings.Join(Supported(), ", "))
}

// refusals explain the operators refused on purpose.
var refusals = map[string]string{
	"Loop":         "control flow is not supported: trace the model with a fixed number of iterations (PyTorch 1.13 exports nn.EmbeddingBag as a Loop: write it as nn.Embedding followed by the bag's sum, mean or max over its indices)",
	"Scan":         "control flow is not supported",
	"RandomNormal": randomRefusal, "RandomNormalLike": randomRefusal, "RandomUniform": randomRefusal,
	"RandomUniformLike": randomRefusal, "Multinomial": randomRefusal, "Bernoulli": randomRefusal,
	"ArgMax": argAdvice, "ArgMin": argAdvice,
}

// argAdvice is why ArgMax and ArgMin are refused, with the rewrite that
// exports without them (round 82 A1: torch.gather(h, 1, h.argmax(1,
// keepdim=True)) got the list of supported operators).
const argAdvice = "an energy reads the largest (smallest) value itself, not its index: write h.max(dim).values or torch.amax(h, dim) (h.min(dim).values, torch.amin) instead of gathering at argmax (argmin), which export without it"

// nonZeroAdvice is why NonZero of computed values is refused.
const nonZeroAdvice = "it has a data-dependent output shape; PyTorch writes boolean-mask indexing (y[mask] = f(x[mask])) " +
	"as NonZero → GatherND → … → ScatterND: rewrite it as masked whole-tensor operations " +
	"(torch.where(mask, f(x), y)) before exporting"

// randomRefusal is why a graph that draws random numbers is refused
// (torch.randn_like in forward, or a flow's sample(n) exported whole): an
// energy, a density and a flow's map are functions of their input.
const randomRefusal = "the graph draws random numbers (torch.randn_like, torch.rand, torch.bernoulli in forward), and an energy, a log-density or a flow's map must be a function of its input: export it without the noise; a flow's sampling graph takes the base draws z as its input (flowebm draws them)"

// input returns node's input i (required).
func (in *instance) input(node *Node, i int) (*val, error) {
	if i >= len(node.Inputs) || node.Inputs[i] == "" {
		return nil, missingInput(node, i)
	}
	return in.lookup(node.Inputs[i], false)
}

// missingInput is the error of a required input the file leaves out: the
// file's, at any batch (probe 67 A3: batch advice followed it).
func missingInput(node *Node, i int) error {
	return notSupported("input %d is required by %s and the file leaves it out (an empty name): the graph is not valid ONNX; export it again (onnx.checker.check_model names what is wrong)", i, node.OpType)
}

// inputs returns node's first n inputs (all required).
func (in *instance) inputs(node *Node, n int) ([]*val, error) {
	vs := make([]*val, n)
	for i := range vs {
		var err error
		if vs[i], err = in.input(node, i); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// optInput returns node's input i, or nil if it is omitted.
func (in *instance) optInput(node *Node, i int) (*val, error) {
	if i >= len(node.Inputs) || node.Inputs[i] == "" {
		return nil, nil
	}
	return in.lookup(node.Inputs[i], false)
}

// constInput returns node's input i as a constant: a float initializer
// is read as its file values, not as a parameter.
func (in *instance) constInput(node *Node, i int) (*val, error) {
	if i >= len(node.Inputs) || node.Inputs[i] == "" {
		return nil, missingInput(node, i)
	}
	v, err := in.lookup(node.Inputs[i], true)
	if err != nil {
		return nil, err
	}
	if !v.isConst() && v.src != "" { // PyTorch merges equal initializers into Identity nodes
		return in.tensorConst(in.net.inits[v.src])
	}
	if !v.isConst() {
		return nil, notSupported("input %d (%q) must be a constant, but it depends on the input or on parameters", i, node.Inputs[i])
	}
	return v, nil
}

// lookup finds a value by name: computed, or an initializer (a parameter
// for float initializers the computation reads, else a constant).
func (in *instance) lookup(name string, asConst bool) (*val, error) {
	if t, ok := in.net.inits[name]; ok && asConst {
		return in.tensorConst(t)
	}
	if v, ok := in.env[name]; ok {
		if v.err != nil {
			return nil, v.err
		}
		return v, nil
	}
	t, ok := in.net.inits[name]
	if !ok {
		return nil, fmt.Errorf("value %q is not computed before it is used", name)
	}
	if !isFloat(t.DataType) || in.foldParams || (in.net.trainable != nil && !in.net.trainable[name]) || t.Len() == 0 { // empty: a constant (probe 68 A1)
		return in.tensorConst(t)
	}
	shape := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		shape[i] = int(d)
	}
	p, err := in.b.Param(in.net.paramName(name), phys(shape)...)
	if err != nil {
		return nil, err
	}
	v := &val{shape: shape, elem: t.DataType, n: p, src: name} // float16 weights compute as float16
	in.env[name] = v
	return v, nil
}

func int64sToFloats(v []int64) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f
}

// node returns v as a graph node, making a graph constant of a folded value.
func (in *instance) node(v *val) *G.Node {
	if v.n != nil {
		return v.n
	}
	if n, ok := in.consts[v]; ok {
		return n
	}
	n := layers.Constant(in.b, "onnx_const", v.c.Data().([]float64), phys(v.shape)...)
	in.consts[v] = n
	return n
}

// opInferred is op with the operation's inferred shape as the result's
// (for operations whose results have rank ≥ 1).
func (in *instance) opInferred(o nd.Op, elem DataType, args ...*val) (*val, error) {
	return in.build(o, nil, true, elem, args)
}

// op applies an nd operation to args: folded when every argument is a
// constant, else added to the graph. shape is the ONNX shape of the
// result (nil or empty: a scalar).
func (in *instance) op(o nd.Op, shape []int, elem DataType, args ...*val) (*val, error) {
	return in.build(o, shape, false, elem, args)
}

func (in *instance) build(o nd.Op, shape []int, infer bool, elem DataType, args []*val) (*val, error) {
	elem = widest(elem, args)
	allConst := true
	for _, a := range args {
		if len(a.shape) > 1 && a.shape[0] > 0 && sizeOf(a.shape) == 0 { // rows kept, no columns: the file's, not the batch's (probe 69 A2)
			return nil, notSupported("an operand has rows but no values in them (shape %v), as a slice past the last column gives (x[:, d:] for a d-wide x): only Shape, Size, Reshape and Concat take empty tensors; leave the empty term out of the model before exporting", a.shape)
		}
		if len(a.shape) > 0 && sizeOf(a.shape) == 0 {
			return nil, errEmptyOperand{a.shape}
		}
		if !a.isConst() {
			allConst = false
		}
	}
	dims := make([]G.DimSizer, len(args))
	shapes := make([]tensor.Shape, len(args))
	for i, a := range args {
		shapes[i] = tensor.Shape(phys(a.shape))
		dims[i] = shapes[i]
	}
	o = nd.Ranked(o, shapes...)
	inferred, err := o.InferShape(dims...)
	if err != nil {
		return nil, err
	}
	if infer {
		shape = append([]int(nil), inferred...)
	} else if sizeOf(phys(shape)) != sizeOf(phys(inferred)) {
		return nil, fmt.Errorf("internal error: %v gives shape %v, expected %v", o, inferred, shape)
	}
	if err := in.reserve(shape, allConst); err != nil {
		return nil, err
	}
	if allConst {
		ts := make([]*tensor.Dense, len(args))
		for i, a := range args {
			ts[i] = a.c
		}
		t, err := nd.Eval(o, ts...)
		if err != nil {
			return nil, err
		}
		return in.rounded(constVal(shape, elem, t.Data().([]float64)))
	}
	nodes := make([]*G.Node, len(args))
	for i, a := range args {
		nodes[i] = in.node(a)
	}
	n, err := nd.Apply(o, nodes...)
	if err != nil {
		return nil, err
	}
	if !equalInts(phys(shape), n.Shape()) {
		if n, err = G.Reshape(n, tensor.Shape(phys(shape))); err != nil {
			return nil, err
		}
	}
	return in.rounded(&val{shape: shape, elem: elem, n: n})
}

// widest is the float type elem widened to the widest float type of args:
// an operation on a float64 value and a float32 constant (PyTorch exports
// torch.tensor(100.0) so inside a float64 model's where or maximum)
// computes in float64, as PyTorch does (probe 56: every energy of such a
// model was rounded to float32).
func widest(elem DataType, args []*val) DataType {
	if !isFloat(elem) {
		return elem
	}
	for _, a := range args {
		if floatWidth(a.elem) > floatWidth(elem) {
			elem = a.elem
		}
	}
	return elem
}

// floatWidth orders the float types by precision (0 for the others).
func floatWidth(t DataType) int {
	switch t {
	case TypeDouble:
		return 3
	case TypeFloat:
		return 2
	case TypeFloat16, TypeBFloat16:
		return 1
	}
	return 0
}

// rounded is v with its values rounded to its element type where that is
// narrower than the graph's (float32 in a float64 graph, float16 and
// bfloat16 in any): each operation on such values gives what the file's
// type gives, as PyTorch computes it (probe 54: a float16 step exported
// by autocast was computed in float32, and a float32 model's float64
// step in float32, 0 where PyTorch gives 4.5).
func (in *instance) rounded(v *val) (*val, error) {
	var fn nd.UnaryFn
	switch {
	case v.elem == TypeFloat16:
		fn = nd.ToFloat16
	case v.elem == TypeBFloat16:
		fn = nd.ToBFloat16
	case v.elem == TypeFloat && in.net.Dtype == tensor.Float64:
		fn = nd.ToFloat32
	default:
		return v, nil
	}
	u := nd.Unary{Fn: fn}
	if v.isConst() {
		t, err := nd.Eval(u, v.c)
		if err != nil {
			return nil, err
		}
		return &val{shape: v.shape, elem: v.elem, c: t}, nil
	}
	n, err := nd.Apply(u, v.n)
	if err != nil {
		return nil, err
	}
	return &val{shape: v.shape, elem: v.elem, n: n}, nil
}

// reshape gives v a new ONNX shape with the same number of values.
func (in *instance) reshape(v *val, shape []int) (*val, error) {
	if sizeOf(shape) != sizeOf(v.shape) {
		return nil, fmt.Errorf("cannot reshape %v (%d values) to %v", v.shape, sizeOf(v.shape), shape)
	}
	if v.isConst() {
		if sizeOf(shape) == 0 {
			return constVal(shape, v.elem, nil), nil
		}
		if err := in.reserveConst(sizeOf(shape)); err != nil {
			return nil, err
		}
		return constVal(shape, v.elem, v.c.Data().([]float64)), nil
	}
	n := v.n
	if !equalInts(phys(shape), n.Shape()) {
		var err error
		if n, err = G.Reshape(n, tensor.Shape(append([]int(nil), phys(shape)...))); err != nil {
			return nil, err
		}
	}
	return &val{shape: append([]int(nil), shape...), elem: v.elem, n: n}, nil
}

// ints reads a constant as integers.
func ints(v *val) ([]int64, error) {
	if !v.isConst() {
		return nil, fmt.Errorf("want a constant integer tensor, have a value that depends on the input")
	}
	if sizeOf(v.shape) == 0 { // its one-element placeholder is no value (probe 36: read as [0])
		return []int64{}, nil
	}
	d := v.c.Data().([]float64)
	out := make([]int64, len(d))
	for i, x := range d {
		if math.IsNaN(x) {
			return nil, fmt.Errorf("NaN where an integer is expected")
		}
		if x != math.Trunc(x) && !math.IsInf(x, 0) { // probe 41: Tile repeats [1, 1.7] ran as [1, 1] (onnx.checker refuses them)
			shown := any(x)
			if v.elem == TypeFloat { // as stored (probe 42: 1.7000000476837158)
				shown = float32(x)
			}
			return nil, fmt.Errorf("%v where an integer is expected (the tensor must hold integers, as int64 or int32)", shown)
		}
		out[i] = clampInt(x)
	}
	return out, nil
}

// clampInt converts a float holding an integer to int64, clamping the
// ±2⁶³ sentinels ONNX uses for "to the end" into ±2⁶².
func clampInt(x float64) int64 {
	const lim = 1 << 62
	switch {
	case x >= lim:
		return lim
	case x <= -lim:
		return -lim
	}
	return int64(x)
}

// Attribute readers.

func nodeInt(node *Node, name string, def int64) int64 {
	if a, ok := node.Attrs[name]; ok && (a.Type == AttrInt) {
		return a.I
	}
	return def
}

func nodeInts(node *Node, name string) ([]int64, bool) {
	if a, ok := node.Attrs[name]; ok && a.Type == AttrInts {
		return a.Ints, true
	}
	return nil, false
}

func nodeString(node *Node, name, def string) string {
	if a, ok := node.Attrs[name]; ok && a.Type == AttrString {
		return string(a.S)
	}
	return def
}

// attrFloat reads a float attribute. ONNX stores them as float32; the
// value is taken as the shortest decimal that rounds to that float32 (the
// 0.05 a PyTorch module was written with, not 0.0500000007…), which makes
// float64 imports agree with PyTorch to round-off.
func nodeFloat(node *Node, name string, def float64) float64 {
	if a, ok := node.Attrs[name]; ok && a.Type == AttrFloat {
		return shortest(a.F)
	}
	return def
}

func shortest(v float32) float64 {
	f, err := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
	if err != nil {
		return float64(v)
	}
	return f
}

// axis normalises a possibly negative axis for a rank.
func axis(a int64, rank int) (int, error) {
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d", a, rank)
	}
	return int(a), nil
}

package onnx

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"

	G "gorgonia.org/gorgonia"

	"github.com/flowebm/flowebm/layers"
)

// MLP recognises the network as a chain of linear layers (Gemm with
// transB = 1, α = β = 1 and a bias, as PyTorch exports nn.Linear) with one
// elementwise activation between them, and returns it as a layers.MLP
// named "net" with a Sequential layout, together with its parameter values
// in the MLP's order (weight, bias per layer). The activation between two
// layers may be written with any operators (flowebm's float64 exports
// write LeakyReLU with Relu and Neg): it is recognised by evaluating it on
// probe points and comparing with ReLU, LeakyReLU, tanh, softplus, ELU and
// SiLU. Anything else is an error naming what does not fit.
func (n *Net) MLP() (layers.MLP, [][]float64, error) {
	mlp := layers.MLP{Name: "net", Sizes: []int{n.dim}, Layout: layers.Sequential}
	if len(n.inShape) != 1 {
		if len(n.inShape) == 0 { // round 72 A5: "input of shape [] per sample"
			return mlp, nil, fmt.Errorf("%s: input %q of shape (batch), one value per point: an MLP takes vectors, (batch, d); export it with an input of shape (batch, 1) (pass x[:, None] to torch.onnx.export and drop the module's own unsqueeze), or use the file as it is with energy and sample", n.File, n.input)
		}
	}
	gemms, flattened, err := n.linearChain()
	if err != nil {
		return mlp, nil, fmt.Errorf("%s: %w%s", n.File, err, n.notAnMLPExport())
	}
	if len(n.inShape) > 1 && !flattened { // round 88 B2: a Flatten on (n, 1, H, W) converts
		return mlp, nil, fmt.Errorf("%s: input of shape %v per sample, which the first Linear (node %q) reads without a Flatten or Reshape to (batch, %d): an MLP takes vectors; export with a flat input, or use the file as it is with energy and sample", n.File, n.inShape, nodeName(gemms[0]), n.dim)
	}
	var vals [][]float64
	var hidden *layers.Activation
	for k, g := range gemms {
		w, b := n.inits[g.Inputs[1]], n.inits[g.Inputs[2]]
		last := mlp.Sizes[len(mlp.Sizes)-1]
		if len(w.Dims) != 2 || int(w.Dims[1]) != last || b.Len() != int(w.Dims[0]) {
			return mlp, nil, fmt.Errorf("%s: node %q: weight %v and bias %v do not follow a layer of width %d", n.File, nodeName(g), w.Dims, b.Dims, last)
		}
		mlp.Sizes = append(mlp.Sizes, int(w.Dims[0]))
		vals = append(vals, append([]float64(nil), w.Float...), append([]float64(nil), b.Float...))
		if k == len(gemms)-1 {
			break
		}
		a, err := n.activationBetween(g, gemms[k+1], int(w.Dims[0]))
		if err != nil {
			return mlp, nil, fmt.Errorf("%s: %w", n.File, err)
		}
		if hidden != nil && *hidden != a {
			return mlp, nil, fmt.Errorf("%s: node %q: activation %v differs from the first hidden one, %v: a checkpoint's MLP has one activation throughout; give the .onnx file itself as --model (flowebm energy and sample read it)", n.File, nodeName(gemms[k+1]), a, *hidden) // round 109 A2: no way on
		}
		hidden = &a
	}
	if mlp.Sizes[len(mlp.Sizes)-1] != 1 {
		return mlp, nil, fmt.Errorf("%s: the network does not end in a Linear with one output", n.File)
	}
	if hidden != nil {
		mlp.Hidden = *hidden
	}
	return mlp, vals, nil
}

// linearChain returns the Gemm nodes in order, checking that each is an
// nn.Linear, that the first reads the input and that the last gives the
// output (through Identity, Squeeze or Reshape at most), and whether a
// Flatten or Reshape lies between the input and the first (readsInput).
func (n *Net) linearChain() (gemms []*Node, flattened bool, err error) {
	fromInput := n.inputDependent()
	for _, node := range n.nodes {
		if !fromInput[node.Outputs[0]] {
			continue // a weight's own computation (spectral_norm's u·W·v): refused at its Gemm
		}
		switch node.OpType {
		case "Conv", "ConvTranspose":
			return nil, false, fmt.Errorf("node %q is %s: a convolutional network is not an MLP, the only energy a checkpoint holds from ONNX; give the .onnx file itself as --model (flowebm energy and sample read it)", nodeName(node), withArticle(node.OpType))
		case "MatMul":
			if _, w := n.inits[node.Inputs[len(node.Inputs)-1]]; w {
				return nil, false, fmt.Errorf("node %q is a MatMul by a weight, which PyTorch writes for an nn.Linear without bias (or one on inputs of more than 2 dimensions): a checkpoint's MLP takes Linears with a bias on (batch, d) inputs (Gemm); export with bias=True on (batch, d), or give the .onnx file itself as --model (flowebm energy and sample read it)", nodeName(node))
			}
		case "BatchNormalization":
			return nil, false, fmt.Errorf("node %q is a BatchNormalization: a checkpoint's MLP holds Linears and activations only; fold the batch norm into the Linear before it (its eval-mode affine map) and export again, or give the .onnx file itself as --model (flowebm energy and sample read it)", nodeName(node))
		}
	}
	for _, node := range n.nodes {
		if node.OpType != "Gemm" {
			continue
		}
		ok := len(node.Inputs) == 3 && nodeInt(node, "transA", 0) == 0 && nodeInt(node, "transB", 0) == 1 &&
			nodeFloat(node, "alpha", 1) == 1 && nodeFloat(node, "beta", 1) == 1
		for _, p := range node.Inputs[1:] {
			if t, init := n.inits[p]; !init || !isFloat(t.DataType) {
				ok = false
			}
		}
		w := node.Inputs[min(1, len(node.Inputs)-1)]
		if by := n.producer(w); !ok && by != nil { // probe 67 A2: blamed on a missing bias
			return nil, false, fmt.Errorf("node %q: the Linear's weight %q is computed in the graph (by node %q, %s), as PyTorch exports torch.nn.utils.spectral_norm and weight_norm: a checkpoint's MLP holds plain weights; call torch.nn.utils.remove_spectral_norm (or remove_weight_norm) on each layer before exporting, or give the .onnx file itself as --model (flowebm energy and sample read it)", nodeName(node), w, nodeName(by), by.OpType)
		}
		if !ok {
			return nil, false, fmt.Errorf("node %q: only Gemm(x, W, b) with transB = 1 and initializers W, b (nn.Linear) converts", nodeName(node))
		}
		gemms = append(gemms, node)
	}
	if len(gemms) == 0 {
		return nil, false, fmt.Errorf("no Gemm (nn.Linear) node: not an MLP")
	}
	if flattened, err = n.readsInput(gemms[0]); err != nil {
		return nil, false, err
	}
	cur := gemms[len(gemms)-1].Outputs[0]
	for _, node := range n.nodes {
		switch node.OpType {
		case "Identity", "Squeeze", "Reshape", "Flatten":
			if node.Inputs[0] == cur {
				cur = node.Outputs[0]
			}
		}
	}
	if cur != n.outputName {
		after := "" // round 119 A5: the node past the last Linear, as net(x) + 0.5*(x**2).sum(1) writes it, went unnamed
		for _, node := range n.nodes {
			if slices.Contains(node.Inputs, cur) {
				after = fmt.Sprintf(": node %q (%s) computes on from it", nodeName(node), withArticle(node.OpType))
				break
			}
		}
		return nil, false, fmt.Errorf("the output %q is not the last Linear's (node %q) output%s; a checkpoint's MLP ends at its last Linear: give the .onnx file itself as --model (flowebm energy and sample read it)", n.outputName, nodeName(gemms[len(gemms)-1]), after)
	}
	return gemms, flattened, nil
}

// readsInput checks that the first Linear reads the input directly or
// through nodes that leave each point's d values as a row: Identity,
// Flatten with axis 1, and Reshape (PyTorch's x.view(x.size(0), -1),
// nn.Flatten; round 87 A1: refused, the Linear blamed). A Reshape to any
// other shape is caught by the Linear's weight, of d columns, and by
// convert's check of the energies. It says whether a Flatten or Reshape
// is on the way: an input of several dimensions per point then reaches
// the Linear as (batch, d), in row-major order, as flowebm flattens points.
func (n *Net) readsInput(first *Node) (flattened bool, err error) {
	for v := first.Inputs[0]; v != n.input; {
		by := n.producer(v)
		switch {
		case by == nil:
			return false, fmt.Errorf("node %q: the first Linear does not read the input %q", nodeName(first), n.input)
		case by.OpType == "Identity":
		case by.OpType == "Reshape", by.OpType == "Flatten" && nodeInt(by, "axis", 1) == 1:
			flattened = true
		default:
			return false, fmt.Errorf("node %q: the first Linear reads the input %q through node %q, %s, which a checkpoint's MLP does not hold; give the .onnx file itself as --model (flowebm energy and sample read it)", nodeName(first), n.input, nodeName(by), withArticle(by.OpType))
		}
		v = by.Inputs[0]
	}
	return flattened, nil
}

// activationOps are the operators that the nodes between two Linears may
// use: PyTorch's exports of ReLU, LeakyReLU, Tanh, Softplus, ELU and SiLU,
// and flowebm's own (LeakyRelu as Relu(x) − α·Relu(−x), Softplus with Log
// and Exp, SiLU as x·Sigmoid(x) or, in float64, x/(1 + exp(−x))). Clipping, thresholds and per-unit
// choices (Clip, Min, Max, Where, Slice, Concat, …) are refused by name:
// their values near 0 can equal an activation's.
var activationOps = map[string]bool{"Relu": true, "LeakyRelu": true, "Tanh": true, "Softplus": true, "Elu": true, "Celu": true, "Sigmoid": true,
	"Mul": true, "Sub": true, "Add": true, "Div": true, "Neg": true, "Log": true, "Exp": true, "Constant": true, "Identity": true}

// activationBetween evaluates the nodes between two Gemms, the first of
// width outputs, on probe points (the same in every hidden unit, which
// must all give the same values) and names the activation they compute.
func (n *Net) activationBetween(from, to *Node, width int) (layers.Activation, error) {
	start, end := slices.Index(n.nodes, from), slices.Index(n.nodes, to)
	for _, node := range n.nodes[start+1 : end] {
		if node.OpType == "Cast" { // probe 68 A2: float64 CELU, blamed on the Cast with no way on
			return layers.Activation{}, fmt.Errorf("node %q between two Linears is a Cast: the activation is computed in another float type than the Linears (PyTorch 1.13 exports a float64 nn.CELU as Cast to float32, Celu, Cast back), which a checkpoint's MLP does not hold; for CELU(1) export nn.ELU() (the same function, in float64), or give the .onnx file itself as --model (flowebm energy and sample read it)", nodeName(node))
		}
		if !activationOps[node.OpType] {
			return layers.Activation{}, fmt.Errorf("node %q between two Linears is %s: a checkpoint's MLP holds one of relu, leaky_relu, tanh, softplus, elu, silu there, the same in every unit; give the .onnx file itself as --model (flowebm energy and sample read it)", nodeName(node), withArticle(node.OpType))
		}
	}
	probe := activationProbes()
	if width < 1 || width > maxProbeWidth {
		return layers.Activation{}, fmt.Errorf("node %q: a hidden layer of width %d, want 1 to %d", nodeName(from), width, maxProbeWidth)
	}
	grid := make([]float64, 0, len(probe)*width) // row i: probe[i] in every unit
	for _, x := range probe {
		for range width {
			grid = append(grid, x)
		}
	}
	g := G.NewGraph()
	in := newInstance(n, &recordingBinder{g: g, dtype: n.Dtype, inits: n.inits, used: map[string]bool{}}, len(probe))
	in.foldParams = true
	in.env[from.Outputs[0]] = constVal([]int{len(probe), width}, in.floatType(), grid)
	for _, node := range n.nodes { // constants may be shared between layers
		if node.OpType == "Constant" {
			if err := in.apply(node); err != nil {
				return layers.Activation{}, fmt.Errorf("node %q (Constant): %w", nodeName(node), err)
			}
		}
	}
	for _, node := range n.nodes[start+1 : end] {
		if err := in.apply(node); err != nil {
			return layers.Activation{}, fmt.Errorf("node %q (%s) between two Linears: %w", nodeName(node), node.OpType, err)
		}
	}
	y, ok := in.env[to.Inputs[0]]
	if !ok || !y.isConst() || !slices.Equal(y.shape, []int{len(probe), width}) {
		return layers.Activation{}, fmt.Errorf("node %q: its input is not an elementwise function of the previous Linear's output", nodeName(to))
	}
	out := y.c.Data().([]float64)
	col := make([]float64, len(probe))
	for i := range probe {
		row := out[i*width : (i+1)*width]
		for j, v := range row {
			if v != row[0] && !(math.IsNaN(v) && math.IsNaN(row[0])) {
				return layers.Activation{}, fmt.Errorf("node %q: the activation before it differs between hidden units (at %g: unit 1 gives %g, unit %d %g): a checkpoint's MLP applies one activation to every unit", nodeName(to), probe[i], row[0], j+1, v)
			}
		}
		col[i] = row[0]
	}
	a, err := recognise(col, probe, n.Dtype.Name() == "float32")
	if err != nil { // round 81 A3: no node named, no way on
		return a, fmt.Errorf("%s between node %q and node %q: %w; give the .onnx file itself as --model (flowebm energy and sample read it)", describeNodes(n.nodes[start+1:end]), nodeName(from), nodeName(to), err)
	}
	return a, nil
}

// describeNodes names nodes for an error, with their float attributes:
// `nodes "/act/Elu" (Elu, alpha 2), …`.
func describeNodes(nodes []*Node) string {
	var parts []string
	for _, node := range nodes {
		if node.OpType == "Constant" {
			continue
		}
		what := node.OpType
		for _, name := range slices.Sorted(maps.Keys(node.Attrs)) {
			if a := node.Attrs[name]; a.Type == AttrFloat {
				what += fmt.Sprintf(", %s %g", name, a.F)
			}
		}
		parts = append(parts, fmt.Sprintf("%q (%s)", nodeName(node), what))
	}
	const listed = 6
	if len(parts) > listed {
		parts = append(parts[:listed], fmt.Sprintf("… (%d nodes in all)", len(parts)))
	}
	if len(parts) == 1 {
		return "node " + parts[0]
	}
	return "nodes " + strings.Join(parts, ", ")
}

// maxProbeWidth bounds the hidden width activationBetween probes (its
// probe grid has a row of that width per probe point).
const maxProbeWidth = 1 << 16

// activationProbes are the points where an activation is compared with
// the candidates: −4 to 4 by 0.1 first (recognise reads the slope at −1
// from index 30), then points between the grid's (thresholds near 0 such
// as Hardshrink(0.05)) and far ones up to 1e8 with their negatives, so
// that a function that equals an activation only near 0 is not taken for
// it: ReLU6 is ReLU below 6, Hardtanh(−5, 5) the identity inside ±5 (probe
// 15: both were converted, their energies off by up to 44 at points of
// scale 50; probe 16: clips at 2e4 and thresholds at 0.05).
func activationProbes() []float64 {
	probe := make([]float64, 0, 81+2*len(fineProbes)+2*len(farProbes))
	for i := 0; i <= 80; i++ {
		probe = append(probe, -4+0.1*float64(i))
	}
	for _, x := range append(slices.Clone(fineProbes), farProbes...) {
		probe = append(probe, x, -x)
	}
	return probe
}

var (
	fineProbes = []float64{1e-6, 1e-3, 0.0071, 0.0123, 0.0271, 0.0371, 0.0449, 0.0517, 0.0613, 0.0789, 0.0911, 0.137, 0.25, 0.333, 0.777, 1.5, 2.5, 3.33}
	farProbes  = []float64{4.5, 5.5, 6.5, 7, 10, 20, 50, 100, 1e3, 1e4, 1e5, 1e6, 1e8}
)

// recognise names the activation whose values at probe are got.
func recognise(got, probe []float64, f32 bool) (layers.Activation, error) {
	slope := -got[30] // f(−1) = −slope for LeakyReLU
	if f32 {
		slope = shortest(float32(slope))
	}
	cands := []layers.Activation{layers.ReLU, layers.LeakyReLU(slope), layers.Tanh, layers.Softplus, layers.ELU, layers.SiLU}
	tol := 1e-12
	if f32 {
		tol = 1e-6
	}
	for _, a := range cands {
		ok := true
		for i, x := range probe {
			if want := scalarActivation(a, x); want != got[i] && !(math.Abs(want-got[i]) <= tol*math.Max(1, math.Abs(got[i]))) {
				ok = false
				break
			}
		}
		if ok {
			return a, nil
		}
	}
	return layers.Activation{}, fmt.Errorf("the function computed is none of relu, leaky_relu, tanh, softplus (β = 1), elu (α = 1), silu (compared at points from −1e8 to 1e8: one written with these operators that is clipped, such as relu(x) − relu(x − 6), is none of them)")
}

// scalarActivation evaluates an activation at x.
func scalarActivation(a layers.Activation, x float64) float64 {
	switch a.Kind {
	case "relu":
		return math.Max(x, 0)
	case "leaky_relu":
		return math.Max(x, 0) + a.Slope*math.Min(x, 0)
	case "tanh":
		return math.Tanh(x)
	case "softplus":
		return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
	case "elu":
		if x > 0 {
			return x
		}
		return math.Expm1(x)
	case "silu":
		return x / (1 + math.Exp(-x))
	}
	return x
}

// notAnMLPExport says which of flowebm's own exports a file that is not an
// MLP is, if it is one (probe 69 B4: --what energy and flow-density
// exports were refused with the Linears' messages alone).
func (n *Net) notAnMLPExport() string {
	switch {
	case n.model.ProducerName != "flowebm":
		return ""
	case n.outputName == "log_density" || n.outputName == "x":
		return "; it is a flow's graph (flowebm convert --what flow-sample or flow-density): give it to sample --flow and --flow-density, it is no energy"
	case !n.WholeEnergy(): // round 117 A2: a --what ebm export of a convolutional network was called a whole energy
		return ""
	case slices.ContainsFunc(n.nodes, func(node *Node) bool { return node.OpType == "Conv" || node.OpType == "ConvTranspose" }):
		return "; it is flowebm's export of a whole energy (--what energy: the network with its tilt and the data's scaling)"
	}
	return "; it is flowebm's export of a whole energy (--what energy: the network with its tilt and the data's scaling), which converts to no MLP: convert back the network alone (convert RUN OUT.onnx --what ebm) with --base σ, or give this file as --model (flowebm energy and sample read it)"
}

// WholeEnergy reports whether the file is flowebm's export of a model's
// whole energy (convert --what energy, its doc string says so): its tilt
// and the data's scaling are in its graph, and a tilt given again counts
// twice (round 103 B2: sample --base on it, unsaid).
func (n *Net) WholeEnergy() bool {
	return n.model.ProducerName == "flowebm" && strings.Contains(n.model.DocString, ": whole energy")
}

// inputDependent is the set of the values that the graph computes from
// its input (the nodes are in topological order).
func (n *Net) inputDependent() map[string]bool {
	dep := map[string]bool{n.input: true}
	for _, node := range n.nodes {
		if slices.ContainsFunc(node.Inputs, func(v string) bool { return dep[v] }) {
			for _, o := range node.Outputs {
				dep[o] = true
			}
		}
	}
	return dep
}

// producer is the node whose output is the value name (nil for an
// initializer or the input).
func (n *Net) producer(name string) *Node {
	for _, node := range n.nodes {
		if slices.Contains(node.Outputs, name) {
			return node
		}
	}
	return nil
}

// withArticle is an operator's name after "a" or "an", as it is read
// aloud (round 82 A4: "is a Erf"): "an Erf", "a Softplus", and an acronym
// by its first letter's name, "an LSTM", "a GRU".
func withArticle(op string) string {
	if op == "" {
		return op
	}
	vowelSound := "AEIOU"
	if len(op) > 1 && unicode.IsUpper(rune(op[1])) {
		vowelSound = "AEFHILMNORSX"
	}
	if strings.ContainsRune(vowelSound, rune(op[0])) {
		return "an " + op
	}
	return "a " + op
}

package onnx

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// checkGraph refuses, before anything is built, what the ONNX checker
// refuses and the importer would otherwise take silently: initializers
// without a name or given twice (the last would win), values produced
// twice (by two nodes, or by a node and an initializer or graph input),
// and NaN or ±Inf in float initializers and constant node values (the
// energy would be NaN everywhere: chains never move, and checkpoints fail
// later). Subgraphs (If branches) are checked too.
func checkGraph(g *Graph) error {
	if err := checkInitializers(g); err != nil {
		return err
	}
	if err := checkProducers(g); err != nil {
		return err
	}
	for _, nd := range g.Nodes {
		if err := checkNodeValues(nd); err != nil && !softmaxMask(g, nd) && !(nd.OpType == "Constant" && len(nd.Outputs) == 1 && nd.Attrs["value"] != nil && infiniteClipBound(g, nd.Outputs[0], nd.Attrs["value"].T)) {
			return err
		}
	}
	return nil
}

// maskAdvice says which −Inf values are taken (maskOnly), and what to
// write for others (probe 60: the refusal of an initializer named no
// reason, that of a constant gave advice about bounded supports alone).
const maskAdvice = "a -Inf attention mask is taken where it reaches only a softmax, exp, logsumexp, row maximum or clip from below, through Add, Sub, Where, Mul or Div by a positive constant, Cast, ScatterND, Slice, Gather, Concat, Pad, Max, Min and reshapes; a mask used otherwise can be written with a large finite value, -1e9"

// softmaxMask says whether nd is a Constant or ConstantOfShape holding
// −Inf (and no NaN or +Inf) that only masks a softmax's inputs
// (maskOnly).
func softmaxMask(g *Graph, nd *Node) bool {
	if (nd.OpType != "Constant" && nd.OpType != "ConstantOfShape") || nd.Domain != "" || len(nd.Attrs) != 1 || len(nd.Outputs) != 1 {
		return false
	}
	a := nd.Attrs["value"]
	return a != nil && a.T != nil && negInfOnly(a.T) && maskOnly(g, nd.Outputs[0])
}

// negInfOnly says whether t holds −Inf and no NaN or +Inf.
func negInfOnly(t *Tensor) bool {
	negInf := false
	for _, x := range t.Float {
		if math.IsNaN(x) || math.IsInf(x, 1) {
			return false
		}
		negInf = negInf || math.IsInf(x, -1)
	}
	return negInf
}

// maskOnly says whether the value name reaches nothing but operations
// that make a −Inf finite for rows with a finite score (Softmax,
// LogSoftmax, Exp, Sigmoid, ReduceMax, ReduceLogSumExp, Clip with a finite
// minimum),
// through operations that keep a −Inf at −Inf for finite scores: Add, Sub
// (as the first operand), Where (as a value), Mul or Div by a positive
// constant, Cast to a float type, ScatterND (as data or updates), Slice,
// Gather and GatherElements (as data), Concat, Pad (as data or value), an
// elementwise Max or Min, and reshapes. That is an attention mask with float('-inf'): masked_fill
// before a softmax, nn.MultiheadAttention's attn_mask (Add) and
// key_padding_mask (Where, Mul by 1, or a float mask filled in place:
// ScatterND), scores scaled by a temperature, a softmax written out with
// its row maximum; the result and its gradient are finite where a row has
// a finite score (probes 58 to 60: refused, with advice about bounded
// supports; Slice, Gather, Pad, Concat, Max and Min refused up to
// session 36).
func maskOnly(g *Graph, name string) bool {
	readers := map[string][]*Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			readers[in] = append(readers[in], n)
		}
	}
	out := map[string]bool{}
	for _, o := range g.Outputs {
		out[o.Name] = true
	}
	c := graphConstants(g)
	seen := map[string]bool{}
	var only func(v string) bool
	only = func(v string) bool {
		if out[v] || len(readers[v]) == 0 {
			return false
		}
		if seen[v] {
			return true
		}
		seen[v] = true
		for _, r := range readers[v] {
			final, ok := maskStep(r, v, c)
			if !ok || (!final && !only(r.Outputs[0])) {
				return false
			}
		}
		return true
	}
	return only(name)
}

// maskStep says whether node r keeps a mask v (one of its inputs) a mask,
// and whether r is the softmax that takes it (final).
func maskStep(r *Node, v string, c constants) (final, ok bool) {
	if r.Domain != "" || len(r.Outputs) != 1 || len(r.Inputs) == 0 {
		return false, false
	}
	data := r.Inputs[0] == v && !slices.Contains(r.Inputs[1:], v)
	switch r.OpType {
	case "Softmax", "LogSoftmax", "Exp", "Sigmoid", "ReduceMax", "ReduceLogSumExp": // logsumexp of masked scores (probe 64)
		return true, data
	case "Clip":
		return true, data && finiteMin(r, c)
	case "Add":
		return false, true
	case "Sub":
		return false, data && len(r.Inputs) == 2
	case "Where":
		return false, len(r.Inputs) == 3 && r.Inputs[0] != v
	case "ScatterND":
		return false, len(r.Inputs) == 3 && r.Inputs[1] != v
	case "Div":
		t := c.tensor(r.Inputs[len(r.Inputs)-1])
		return false, data && len(r.Inputs) == 2 && t != nil && allPositive(t)
	case "Mul":
		if len(r.Inputs) != 2 {
			return false, false
		}
		other := r.Inputs[0]
		if other == v {
			other = r.Inputs[1]
		}
		t := c.tensor(other)
		return false, t != nil && allPositive(t)
	case "Cast":
		to := r.Attrs["to"]
		return false, data && to != nil && DataType(to.I).floating()
	case "Reshape", "Unsqueeze", "Squeeze", "Expand", "Identity", "Transpose", "Tile", "Flatten",
		"Slice", "Gather", "GatherElements":
		return false, data
	case "Concat", "Max", "Min":
		return false, true
	case "Pad":
		// The data or the padding value; never the pads.
		return false, len(r.Inputs) < 2 || r.Inputs[1] != v
	}
	return false, false
}

// infiniteClipBound says whether the value name, holding t, is one −Inf
// read only as Clip's min or one +Inf read only as its max: no bound, as
// x.clamp(0., float("inf")) exports from opset 11 on (round 80 A1: refused
// there, taken as the attribute of opsets 9 and 10).
func infiniteClipBound(g *Graph, name string, t *Tensor) bool {
	if t == nil || len(t.Float) != 1 || !math.IsInf(t.Float[0], 0) {
		return false
	}
	at := 1 // −Inf: the min
	if t.Float[0] > 0 {
		at = 2
	}
	read := false
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if in != name {
				continue
			}
			if n.OpType != "Clip" || n.Domain != "" || i != at {
				return false
			}
			read = true
		}
	}
	for _, o := range g.Outputs {
		if o.Name == name {
			return false
		}
	}
	return read
}

// finiteMin says whether the Clip r has a finite minimum: its constant
// input 1 (opset 11 on), or its attribute min.
func finiteMin(r *Node, c constants) bool {
	if a, ok := r.Attrs["min"]; ok {
		return !math.IsInf(float64(a.F), 0) && !math.IsNaN(float64(a.F))
	}
	if len(r.Inputs) < 2 || r.Inputs[1] == "" {
		return false
	}
	t := c.tensor(r.Inputs[1])
	if t == nil || len(t.Float) != 1 {
		return false
	}
	m := t.Float[0]
	return !math.IsInf(m, 0) && !math.IsNaN(m)
}

// allPositive says whether t holds positive finite numbers only.
func allPositive(t *Tensor) bool {
	for _, x := range t.Float {
		if !(x > 0 && x <= math.MaxFloat64) {
			return false
		}
	}
	return len(t.Float) > 0 && len(t.Float) == t.Len()
}

// graphConstants reads g's initializers and Constant nodes by name.
func graphConstants(g *Graph) constants {
	c := constants{inits: map[string]*Tensor{}, producer: map[string]*Node{}}
	for _, t := range g.Initializers {
		c.inits[t.Name] = t
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			c.producer[o] = n
		}
	}
	return c
}

// checkInitializers refuses unnamed, repeated and non-finite initializers.
func checkInitializers(g *Graph) error {
	seen := map[string]bool{}
	for i, t := range g.Initializers {
		if t.Name == "" {
			return fmt.Errorf("initializer #%d has no name", i)
		}
		if seen[t.Name] {
			return fmt.Errorf("initializer %q given twice", t.Name)
		}
		seen[t.Name] = true
		if err := checkFinite(t); err != nil && !(negInfOnly(t) && maskOnly(g, t.Name)) && !infiniteClipBound(g, t.Name, t) {
			return fmt.Errorf("initializer %q %w: flowebm takes no NaN or infinite weight (a gradient through it is NaN); %s", t.Name, err, maskAdvice)
		}
	}
	return nil
}

// checkProducers refuses a node output that another node, an initializer
// or a graph input already gives (ONNX graphs assign each value once).
func checkProducers(g *Graph) error {
	given := map[string]string{}
	for _, t := range g.Initializers {
		given[t.Name] = "an initializer's name"
	}
	for _, v := range g.Inputs {
		if v.Name != "" {
			given[v.Name] = "a graph input's name"
		}
	}
	for _, nd := range g.Nodes {
		who := fmt.Sprintf("node %q (%s)", nodeName(nd), nd.OpType)
		for _, o := range nd.Outputs {
			if o == "" {
				continue
			}
			if what, ok := given[o]; ok {
				return fmt.Errorf("%s: output %q is also %s", who, o, what)
			}
			given[o] = "the output of " + who
		}
	}
	return nil
}

// checkNodeValues refuses NaN and ±Inf in a node's tensor attributes
// (Constant's and ConstantOfShape's value) and Constant's value_float(s),
// NaN in its other float attributes, and checks its subgraphs.
func checkNodeValues(nd *Node) error {
	names := make([]string, 0, len(nd.Attrs))
	for name := range nd.Attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := checkAttrValues(nd, nd.Attrs[name]); err != nil {
			// Probe 52: said without why, of torch.where(inside, e, inf).
			return fmt.Errorf("node %q (%s): attribute %q %w: flowebm takes no NaN or infinite constant (a gradient through it is NaN, and an infinite energy stops a sampler's chain for good); %s; an energy of bounded support can be written with a large finite value outside it, e.g. torch.where(inside, e, torch.full_like(e, 1e30))", nodeName(nd), nd.OpType, name, err, maskAdvice)
		}
	}
	return nil
}

// checkAttrValues checks one attribute of nd (see checkNodeValues).
func checkAttrValues(nd *Node, a *Attribute) error {
	constant := nd.OpType == "Constant"
	switch {
	case a.Type == AttrTensor && a.T != nil:
		return checkFinite(a.T)
	case a.Type == AttrFloat:
		return checkFloats([]float32{a.F}, constant, []int64{})
	case a.Type == AttrFloats:
		return checkFloats(a.Floats, constant, []int64{int64(len(a.Floats))})
	case a.Type == AttrGraph && a.G != nil:
		if err := checkGraph(a.G); err != nil {
			return fmt.Errorf("(subgraph): %w", err)
		}
	}
	return nil
}

// checkFloats refuses NaN in float attribute values, and ±Inf too in a
// constant's.
func checkFloats(v []float32, constant bool, dims []int64) error {
	for i, x := range v {
		f := float64(x)
		if math.IsNaN(f) || (constant && math.IsInf(f, 0)) {
			return fmt.Errorf("holds %s at index %s", finiteName(f), indexString(dims, i))
		}
	}
	return nil
}

// checkFinite refuses NaN and ±Inf in a float tensor.
func checkFinite(t *Tensor) error {
	if !t.DataType.floating() {
		return nil
	}
	for i, x := range t.Float {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("holds %s at index %s", finiteName(x), indexString(t.Dims, i))
		}
	}
	return nil
}

// finiteName names a non-finite value: NaN, +Inf or -Inf.
func finiteName(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+Inf"
	case math.IsInf(x, -1):
		return "-Inf"
	}
	return "NaN"
}

// indexString writes the flat index i of a tensor of dims as its
// multi-index: "[0,2]" ("[]" for a 0-d tensor).
func indexString(dims []int64, i int) string {
	idx := make([]string, len(dims))
	for k := len(dims) - 1; k >= 0; k-- {
		d := max(int(dims[k]), 1)
		idx[k] = strconv.Itoa(i % d)
		i /= d
	}
	return "[" + strings.Join(idx, ",") + "]"
}

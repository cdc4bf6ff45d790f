package onnx

import (
	"math"
	"testing"
)

// A −Inf constant is taken only where it reaches nothing but operations
// that make it finite (softmax, exp, a row maximum, a clip from below)
// through operations that keep −Inf at −Inf for finite scores (probes 58
// to 60); anywhere else it is refused.
func TestMaskOnly(t *testing.T) {
	ninf := &Tensor{Name: "m", Dims: []int64{2}, DataType: TypeDouble, Float: []float64{0, math.Inf(-1)}}
	scalar := func(name string, v float64) *Tensor {
		return &Tensor{Name: name, Dims: []int64{}, DataType: TypeDouble, Float: []float64{v}}
	}
	toInt := map[string]*Attribute{"to": {Name: "to", Type: AttrInt, I: int64(TypeInt64)}}
	toFloat := map[string]*Attribute{"to": {Name: "to", Type: AttrInt, I: int64(TypeFloat)}}
	node := func(op string, ins []string, out string, attrs ...map[string]*Attribute) *Node {
		n := &Node{Name: out, OpType: op, Inputs: ins, Outputs: []string{out}}
		if len(attrs) > 0 {
			n.Attrs = attrs[0]
		}
		return n
	}
	for _, c := range []struct {
		name  string
		nodes []*Node
		want  bool
	}{
		{"Add then Softmax", []*Node{node("Add", []string{"s", "m"}, "a"), node("Softmax", []string{"a"}, "y")}, true},
		{"Where, Mul by 1, Add", []*Node{node("Where", []string{"c", "m", "zero"}, "w"), node("Mul", []string{"w", "one"}, "u"),
			node("Add", []string{"s", "u"}, "a"), node("LogSoftmax", []string{"a"}, "y")}, true},
		{"Cast to float, Unsqueeze", []*Node{node("Cast", []string{"m"}, "k", toFloat), node("Unsqueeze", []string{"k", "ax"}, "q"),
			node("Add", []string{"s", "q"}, "a"), node("Softmax", []string{"a"}, "y")}, true},
		{"Mul by −1", []*Node{node("Mul", []string{"m", "minus"}, "u"), node("Add", []string{"s", "u"}, "a"), node("Softmax", []string{"a"}, "y")}, false},
		{"Mul by 0", []*Node{node("Mul", []string{"m", "zero"}, "u"), node("Add", []string{"s", "u"}, "a"), node("Softmax", []string{"a"}, "y")}, false},
		{"Mul by a score", []*Node{node("Mul", []string{"m", "s"}, "u"), node("Softmax", []string{"u"}, "y")}, false},
		{"Where's condition", []*Node{node("Where", []string{"m", "s", "zero"}, "w"), node("Softmax", []string{"w"}, "y")}, false},
		{"Cast to int", []*Node{node("Cast", []string{"m"}, "k", toInt), node("Softmax", []string{"k"}, "y")}, false},
		{"Reshape's shape", []*Node{node("Reshape", []string{"s", "m"}, "r"), node("Softmax", []string{"r"}, "y")}, false},
		{"Exp", []*Node{node("Add", []string{"s", "m"}, "a"), node("Exp", []string{"a"}, "y")}, true},
		{"Log", []*Node{node("Add", []string{"s", "m"}, "a"), node("Log", []string{"a"}, "y")}, false},
		{"Div by a temperature, Sub the row maximum", []*Node{node("Add", []string{"s", "m"}, "a"), node("Div", []string{"a", "two"}, "d"),
			node("ReduceMax", []string{"d"}, "mx"), node("Sub", []string{"d", "mx"}, "c"), node("Exp", []string{"c"}, "y")}, true},
		{"Sub as the second operand", []*Node{node("Sub", []string{"s", "m"}, "c"), node("Softmax", []string{"c"}, "y")}, false},
		{"Div by −1", []*Node{node("Div", []string{"m", "minus"}, "d"), node("Softmax", []string{"d"}, "y")}, false},
		{"Div of a score by the mask", []*Node{node("Div", []string{"s", "m"}, "d"), node("Softmax", []string{"d"}, "y")}, false},
		{"ScatterND's updates", []*Node{node("ScatterND", []string{"s", "idx", "m"}, "u"), node("Softmax", []string{"u"}, "y")}, true},
		{"ScatterND's indices", []*Node{node("ScatterND", []string{"s", "m", "s"}, "u"), node("Softmax", []string{"u"}, "y")}, false},
		{"Clip with a finite minimum", []*Node{node("Add", []string{"s", "m"}, "a"), node("Clip", []string{"a", "minus"}, "y")}, true},
		{"Clip without a minimum", []*Node{node("Add", []string{"s", "m"}, "a"), node("Clip", []string{"a"}, "k"), node("Softmax", []string{"k"}, "y")}, false},
		{"Slice, Gather, Pad, Concat, Max", []*Node{node("Slice", []string{"m", "zero", "one"}, "a"), node("Gather", []string{"a", "zero"}, "b"),
			node("Pad", []string{"b", "one"}, "p"), node("Concat", []string{"s", "p"}, "k"), node("Max", []string{"k", "minus"}, "u"),
			node("Min", []string{"s", "u"}, "w"), node("Softmax", []string{"w"}, "y")}, true},
		{"Pad's value", []*Node{node("Pad", []string{"s", "one", "m"}, "p"), node("Softmax", []string{"p"}, "y")}, true},
		{"Pad's pads", []*Node{node("Pad", []string{"s", "m"}, "p"), node("Softmax", []string{"p"}, "y")}, false},
		{"Slice's starts", []*Node{node("Slice", []string{"s", "m", "one"}, "a"), node("Softmax", []string{"a"}, "y")}, false},
		{"Gather's indices", []*Node{node("Gather", []string{"s", "m"}, "a"), node("Softmax", []string{"a"}, "y")}, false},
		{"Concat then Log", []*Node{node("Concat", []string{"s", "m"}, "a"), node("Log", []string{"a"}, "y")}, false},
		{"also read elsewhere", []*Node{node("Add", []string{"s", "m"}, "a"), node("Softmax", []string{"a"}, "y"), node("Neg", []string{"a"}, "y2")}, false},
		{"a graph output", []*Node{node("Add", []string{"s", "m"}, "y")}, false},
		{"read by nothing", nil, false},
	} {
		g := &Graph{Nodes: c.nodes, Initializers: []*Tensor{ninf, scalar("one", 1), scalar("zero", 0), scalar("minus", -1), scalar("two", 2)},
			Outputs: []*ValueInfo{{Name: "y"}, {Name: "y2"}}}
		if got := maskOnly(g, "m"); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		err := checkInitializers(g)
		if (err == nil) != c.want {
			t.Errorf("%s: checkInitializers: %v", c.name, err)
		}
	}
}

// A −Inf mask held in an initializer (nn.Transformer's square subsequent
// mask, registered as a buffer) is a constant, not a weight to train.
func TestMaskNotTrained(t *testing.T) {
	n, err := ReadFile("testdata/pinned/attn_squaremask_dyn.onnx")
	if err != nil {
		t.Fatal(err)
	}
	masks := 0
	for name, init := range n.inits {
		if checkFinite(init) != nil {
			masks++
			for _, p := range n.ParamSpecs() {
				if p.Name == name {
					t.Errorf("mask %q is a parameter", name)
				}
			}
		}
	}
	if masks == 0 || len(n.ParamSpecs()) == 0 {
		t.Errorf("%d masks, %d parameters", masks, len(n.ParamSpecs()))
	}
}

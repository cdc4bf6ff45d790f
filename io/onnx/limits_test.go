package onnx

import (
	"fmt"
	"math"
	"testing"
)

// lmModel encodes a ModelProto of ir_version ir (0: the field left out)
// importing opset of ai.onnx.
func lmModel(g msg, ir, opset int64) []byte {
	var os msg
	os.str(1, "")
	os.varint(2, opset)
	var m msg
	if ir != 0 {
		m.varint(1, ir)
	}
	m.bytes(7, g)
	m.bytes(8, os)
	return m
}

// lmWrapGraph is the probe's model: x (N, 2) reshaped to target, then
// (unless it is nil) transposed by perm, reshaped to (2, 2) and summed per
// row. A target whose product wraps int64 to 4 fits a batch of 2.
func lmWrapGraph(target []int64, perm []int64) msg {
	nodes := []msg{mdNode("r", "Reshape", []string{"x", "target"}, []string{"r"})}
	last := "r"
	if perm != nil {
		nodes = append(nodes, mdNode("t", "Transpose", []string{"r"}, []string{"t"}, intsAttr("perm", perm...)))
		last = "t"
	}
	nodes = append(nodes,
		mdNode("r2", "Reshape", []string{last, "s2"}, []string{"r2"}),
		mdNode("y", "ReduceSum", []string{"r2", "ax1"}, []string{"y"}, intAttr("keepdims", 0).encode()))
	var g msg
	for _, n := range nodes {
		g.bytes(1, n)
	}
	g.str(2, "g")
	for _, t := range []msg{hgInt64s("target", []int64{int64(len(target))}, target...),
		hgInt64s("s2", []int64{2}, 2, 2), hgInt64s("ax1", []int64{1}, 1)} {
		g.bytes(5, t)
	}
	g.bytes(11, valueInfo("x", typeFloat, 2, 2)) // a batch of 2: target reshapes (2, 2)
	g.bytes(12, valueInfo("y", typeFloat, "N"))
	return g
}

// Shapes whose product passes int64 are refused at load, naming the node,
// the shape, its size and the limit: the probe's Reshape to
// [4 5 5581 8681 49477 384773] (2^64 + 4 values, which wrapped to the 4 of
// a (2, 2) batch, loaded, and failed in evaluation with an index out of
// range naming no node), Tile's and Split's counts that wrapped the same
// way, and Reshape's limit error, which was cut off after the dimension.
func TestRefuseShapeOverflow(t *testing.T) {
	wrap := []int64{4, 5, 5581, 8681, 49477, 384773}
	const wrapErr = `node "r" (Reshape): shape [4 5 5581 8681 49477 384773] has 1.845e+19 values (1.37e+11 GiB as float64), more than the 33554432 (256 MiB) one tensor may hold`
	huge := int64(1) << 62
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"reshape wrap", lmModel(lmWrapGraph(wrap, nil), 8, 13), wrapErr},
		{"reshape wrap transpose", lmModel(lmWrapGraph(wrap, []int64{5, 4, 3, 2, 1, 0}), 8, 13), wrapErr},
		{"reshape huge dimension", lmModel(lmWrapGraph([]int64{-1, 1e9, 1e9}, nil), 8, 14),
			`node "r" (Reshape): shape [-1 1000000000 1000000000]: dimension 1 is 1000000000, more than the 33554432 values (256 MiB as float64) one tensor may hold`},
		{"reshape huge product", lmModel(lmWrapGraph([]int64{-1, 1e5, 1e5}, nil), 8, 14),
			`node "r" (Reshape): shape [-1 100000 100000]: its known nonzero dimensions multiply to 1e+10 values (74.5 GiB as float64), more than the 33554432 (256 MiB) one tensor may hold`},
		{"reshape negative", lmModel(lmWrapGraph([]int64{-2, 2}, nil), 8, 14),
			`node "r" (Reshape): negative dimension -2 in shape [-2 2]`},
		{"tile wrap", hgModel("t", []msg{hgInt64s("reps", []int64{2}, 1, huge)},
			mdNode("t", "Tile", []string{"x", "reps"}, []string{"t"})),
			`node "t" (Tile): repeats [1 4611686018427387904]: 4611686018427387904 is not a count from 0 to 33554432`},
		{"split wrap", hgModel("s4", []msg{hgInt64s("split", []int64{5}, huge, huge, huge, huge, 3)},
			mdNode("s", "Split", []string{"x", "split"}, []string{"s0", "s1", "s2", "s3", "s4"}, intAttr("axis", 1).encode())),
			`node "s" (Split): split [4611686018427387904 4611686018427387904 4611686018427387904 4611686018427387904 3] has the size 4611686018427387904, outside 0 to 3 (the size of the axis split)`},
		{"pad huge", hgModel("p", []msg{hgInt64s("pads", []int64{4}, 0, huge, 0, -huge)},
			mdNode("p", "Pad", []string{"x", "pads"}, []string{"p"})),
			`node "p" (Pad): pads [0 4611686018427387904 0 -4611686018427387904]: 4611686018427387904 is over the 33554432 values`},
	}
	for _, c := range cases {
		hgRefused(t, c.name, c.b, Config{}, c.want)
	}
	if _, err := Decode(lmModel(lmWrapGraph([]int64{2, 1, 2}, []int64{0, 2, 1}), 8, 14), "ok.onnx"); err != nil {
		t.Errorf("a small target: %v", err)
	}
}

// sizeOf and Tensor.Len saturate instead of wrapping.
func TestSizeOfSaturates(t *testing.T) {
	for _, c := range []struct {
		shape []int
		want  int
	}{
		{nil, 1}, {[]int{2, 3}, 6}, {[]int{1 << 40, 1 << 40}, math.MaxInt}, {[]int{1 << 40, 1 << 40, 0}, 0},
		{[]int{4, 5, 5581, 8681, 49477, 384773}, math.MaxInt}, {[]int{3, -1}, 0},
	} {
		if got := sizeOf(c.shape); got != c.want {
			t.Errorf("sizeOf(%v) = %d, want %d", c.shape, got, c.want)
		}
	}
	if n := (&Tensor{Dims: []int64{1 << 40, 1 << 40}}).Len(); n != math.MaxInt {
		t.Errorf("Len of dims [2^40 2^40] = %d", n)
	}
}

// An attribute the operator does not define at the model's opset, or of
// the wrong type, is refused naming the node, the operator, the attribute,
// its type and what is expected, as ONNX Runtime refuses it (it was
// ignored for the default: LeakyRelu's alpha given as an int read as
// 0.01).
func TestRefuseBadAttributes(t *testing.T) {
	var one, name msg
	one.varint(3, 1)
	name.str(21, "alpha")
	leaky := func(attrs ...msg) []byte {
		return hgModel("l", nil, mdNode("l", "LeakyRelu", []string{"x"}, []string{"l"}, attrs...))
	}
	shape := func(opset int64, attrs ...msg) []byte {
		ns, inits := hgEnergy("x", mdNode("sh", "Shape", []string{"x"}, []string{"sh"}, attrs...))
		return lmModel(hgGraph(ns, inits, "y"), 8, opset)
	}
	axesAttr := mdNode("r", "ReduceSum", []string{"x"}, []string{"r"}, intsAttr("axes", 1))
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"alpha int", leaky(mdAttr("alpha", AttrInt, one)), `node "l" (LeakyRelu): attribute "alpha" is int, want float (LeakyRelu's alpha)`},
		{"alpha ints", leaky(intsAttr("alpha", 1)), `node "l" (LeakyRelu): attribute "alpha" is ints, want float`},
		{"unknown", leaky(mdAttr("bogus", AttrInt, one)),
			`node "l" (LeakyRelu): attribute "bogus" (int) is not an attribute of LeakyRelu at opset 13 (it has alpha (float))`},
		{"none defined", hgModel("n", nil, mdNode("n", "Neg", []string{"x"}, []string{"n"}, intAttr("axis", 0).encode())),
			`node "n" (Neg): attribute "axis" (int) is not an attribute of Neg at opset 13 (it has none)`},
		{"axes after 13", hgModel("r", nil, axesAttr),
			`node "r" (ReduceSum): attribute "axes" (ints): ReduceSum takes axes as an input from opset 13, not as an attribute (the model's opset is 13)`},
		{"not yet", shape(14, intAttr("start", 1).encode()),
			`node "sh" (Shape): attribute "start" (int): Shape has it from opset 15, the model's opset is 14`},
		{"required", hgModel("c", nil, mdNode("c", "Cast", []string{"x"}, []string{"c"})),
			`node "c" (Cast): attribute "to" (int) is required`},
		{"function reference", leaky(mdAttr("alpha", AttrFloat, name)),
			`node "l" (LeakyRelu): attribute "alpha" refers to "alpha" (ref_attr_name): only a function's nodes may`},
		{"two constant values", hgModel("k", nil, mdNode("k", "Constant", nil, []string{"k"},
			mdTensorAttr("value", mdTensor("", TypeFloat, nil, mdRawF32(1))), mdAttr("value_int", AttrInt, one))),
			`node "k" (Constant): 2 attributes: a Constant has exactly one value attribute`},
	}
	for _, c := range cases {
		hgRefused(t, c.name, c.b, Config{}, c.want)
	}
	for name, b := range map[string][]byte{
		"alpha float": leaky(floatAttr("alpha", 0.2).encode()),
		"axes at 11": lmModel(hgGraph([]msg{mdNode("y", "ReduceSum", []string{"x"}, []string{"y"},
			intsAttr("axes", 1), intAttr("keepdims", 0).encode())}, nil, "y"), 8, 11),
		"start at 15":  shape(15, intAttr("start", 1).encode()),
		"cast with to": hgModel("c", nil, mdNode("c", "Cast", []string{"x"}, []string{"c"}, intAttr("to", 11).encode())),
	} {
		if _, err := Decode(b, name+".onnx"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The attribute table names supported operators only, each attribute
// once.
func TestAttributeTable(t *testing.T) {
	for op, rs := range opAttrs {
		if handlers[op] == nil {
			t.Errorf("opAttrs has %s, which has no handler", op)
		}
		seen := map[string]bool{}
		for _, r := range rs {
			if seen[r.name] || r.typ == AttrUndefined {
				t.Errorf("%s: attribute %q listed twice or without a type", op, r.name)
			}
			seen[r.name] = true
		}
	}
}

// ir_version must be 3 to 10: a missing one (0) and one from a later ONNX
// are refused, naming the field and the range.
func TestRefuseIRVersions(t *testing.T) {
	ns, inits := hgEnergy("x")
	g := hgGraph(ns, inits, "y")
	for _, ir := range []int64{0, 2, 11, 99} {
		hgRefused(t, "ir", lmModel(g, ir, 13), Config{}, fmt.Sprintf("ir_version %d: supported IR versions are 3 to 10 (ModelProto field ir_version", ir))
	}
	for _, ir := range []int64{3, 7, 8, 10} {
		if _, err := Decode(lmModel(g, ir, 13), "ok.onnx"); err != nil {
			t.Errorf("ir_version %d: %v", ir, err)
		}
	}
}

package onnx

import (
	"slices"
	"testing"
)

// Every operator flowebm imports has its schema in opArity from
// MinImportOpset on, with a type for each operand it lists.
func TestArityTableCoversSupported(t *testing.T) {
	for _, op := range Supported() {
		rows := opArity[op]
		if len(rows) == 0 {
			t.Errorf("%s: no schema in arity_table.go (run crosscheck/gen_arity.py)", op)
			continue
		}
		if rows[0].since < MinImportOpset {
			t.Errorf("%s: schemas from opset %d, before %d", op, rows[0].since, MinImportOpset)
		}
		for _, r := range rows {
			if r.inMin > r.inMax || r.outMin > r.outMax || r.outMin < 1 || len(r.in) < min(r.inMax, 1) || len(r.out) < 1 ||
				r.inMax != manyOperands && len(r.in) != r.inMax || r.outMax != manyOperands && len(r.out) != r.outMax {
				t.Errorf("%s from opset %d: inconsistent schema %+v", op, r.since, r)
			}
		}
		if !slices.IsSortedFunc(rows, func(a, b arity) int { return int(a.since - b.since) }) {
			t.Errorf("%s: schemas out of order", op)
		}
	}
}

// Round 76 A1: a node with more inputs or outputs than its operator takes
// at the model's opset was built with the surplus ignored: Clip(x, min,
// max) at opset 9, where min and max are attributes, ran unclipped, and
// Split's sizes given as an input at opset 11 split evenly. They are
// refused, as onnx.checker and ONNX Runtime refuse them.
func TestArityRefused(t *testing.T) {
	f32 := func(name string, v float32) msg { return mdTensor(name, TypeFloat, nil, mdRawF32(v)) }
	sum := mdNode("y", "ReduceSum", []string{"c"}, []string{"y"}, intsAttr("axes", 1), intAttr("keepdims", 0).encode())
	at := func(opset int64, inits []msg, n msg) []byte {
		return lmModel(hgGraphBatch("N", []msg{n, sum}, inits, "y"), 8, opset)
	}
	cases := []struct {
		name, want string
		b          []byte
	}{
		{"clip min max at opset 9", "Clip at opset 9 takes 1 input, the node has 3 (it takes 3 from opset 11 on",
			at(9, []msg{f32("lo", -0.1), f32("hi", 0.1)}, mdNode("c", "Clip", []string{"x", "lo", "hi"}, []string{"c"}))},
		{"split sizes at opset 11", "Split at opset 11 takes 1 input, the node has 2 (it takes 2 from opset 13 on",
			at(11, []msg{hgInt64s("sizes", []int64{2}, 1, 2)}, mdNode("c", "Split", []string{"x", "sizes"}, []string{"c", "c2"}, intAttr("axis", 1).encode()))},
		{"relu of two", "Relu at opset 11 takes 1 input, the node has 2: the graph is not valid ONNX",
			at(11, nil, mdNode("c", "Relu", []string{"x", "x"}, []string{"c"}))},
		{"add of three", "Add at opset 11 takes 2 inputs, the node has 3: the graph is not valid ONNX",
			at(11, nil, mdNode("c", "Add", []string{"x", "x", "x"}, []string{"c"}))},
		{"sigmoid of two outputs", "Sigmoid at opset 11 has 1 output, the node 2",
			at(11, nil, mdNode("c", "Sigmoid", []string{"x"}, []string{"c", "c2"}))},
		{"celu before its opset", "Celu comes in opset 12; the model's opset is 11",
			at(11, nil, mdNode("c", "Celu", []string{"x"}, []string{"c"}))},
		// Round 77 A4: Upsample at opset 11 was refused for its scales.
		{"upsample at opset 11", "Upsample is deprecated from opset 10 (ONNX removed it), and the model's opset is 11",
			at(11, []msg{mdTensor("sc", TypeFloat, []int64{2}, mdRawF32(1, 2))}, mdNode("c", "Upsample", []string{"x", "sc"}, []string{"c"}))},
		{"concat of none", "Concat at opset 11 takes 1 or more inputs, the node has 0",
			at(11, nil, mdNode("c", "Concat", nil, []string{"c"}, intAttr("axis", 1).encode()))},
	}
	for _, c := range cases {
		hgRefused(t, c.name, c.b, Config{}, `: `+c.want)
	}
}

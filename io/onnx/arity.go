package onnx

import "fmt"

// A node's inputs and outputs are counted against its operator's schema at
// the model's opset before it is built, as onnx.checker and ONNX Runtime
// do: a surplus operand was ignored (round 76 A1: Clip(x, min, max) at
// opset 9, where min and max are attributes, ran unclipped; Split's sizes
// given as an input at opset 11 split evenly).

// arity is an operator's schema from opset since on (arity_table.go,
// generated from onnx.defs by crosscheck/gen_arity.py).
type arity struct {
	since          int64
	inMin, inMax   int
	outMin, outMax int
	in, out        []string // type variables ("T") or types ("tensor(int64)") of each
	deprecated     bool     // removed from the standard at this opset
}

// manyOperands is ONNX's bound of a manyOperands operand list.
const manyOperands = 1<<31 - 1

// arityAt is op's schema at opset (false where op has none listed).
func arityAt(op string, opset int64) (arity, bool) {
	var a arity
	found := false
	for _, r := range opArity[op] {
		if r.since <= opset {
			a, found = r, true
		}
	}
	return a, found
}

// checkArity refuses a node with fewer or more inputs or outputs than its
// operator takes at opset (an input left out by an empty name counts, as
// ONNX counts it).
func checkArity(node *Node, opset int64) error {
	a, ok := arityAt(node.OpType, opset)
	if rows := opArity[node.OpType]; !ok && len(rows) > 0 {
		return fmt.Errorf("%s comes in opset %d; the model's opset is %d: the graph is not valid ONNX (onnx.checker and ONNX Runtime refuse it too); export it again", node.OpType, rows[0].since, opset)
	}
	if !ok {
		return nil
	}
	if a.deprecated { // round 77 A4: Upsample at opset 11 was refused for its scales, which it gave
		return fmt.Errorf("%s is deprecated from opset %d (ONNX removed it), and the model's opset is %d: the graph is not valid ONNX (onnx.checker and ONNX Runtime refuse it too); export it again%s", node.OpType, a.since, opset, replacedBy[node.OpType])
	}
	if n := len(node.Inputs); n < a.inMin || n > a.inMax {
		return fmt.Errorf("%s at opset %d takes %s, the node has %d%s: the graph is not valid ONNX (onnx.checker and ONNX Runtime refuse it too); export it again", node.OpType, opset, between(a.inMin, a.inMax, "input"), n, laterInputs(node.OpType, opset, n))
	}
	if n := len(node.Outputs); n < a.outMin || n > a.outMax {
		return fmt.Errorf("%s at opset %d has %s, the node %d: the graph is not valid ONNX (onnx.checker and ONNX Runtime refuse it too); export it again", node.OpType, opset, between(a.outMin, a.outMax, "output"), n)
	}
	return nil
}

// replacedBy says what replaces a deprecated operator.
var replacedBy = map[string]string{"Upsample": " (Resize replaces it; PyTorch exports F.interpolate as Resize from opset 10)"}

// between says how many of what an operator takes: "2 inputs", "1 to 3
// inputs", "1 or more outputs".
func between(lo, hi int, what string) string {
	switch {
	case hi == manyOperands:
		return fmt.Sprintf("%d or more %ss", lo, what)
	case lo == hi && lo == 1:
		return "1 " + what
	case lo == hi:
		return fmt.Sprintf("%d %ss", lo, what)
	}
	return fmt.Sprintf("%d to %d %ss", lo, hi, what)
}

// laterInputs names the opset from which op takes n inputs, where a later
// one does (operands that are attributes before it: Clip's min and max
// before opset 11).
func laterInputs(op string, opset int64, n int) string {
	for _, r := range opArity[op] {
		if r.since > opset && n >= r.inMin && n <= r.inMax {
			return fmt.Sprintf(" (it takes %d from opset %d on, where operands that were attributes became inputs: give them as attributes, or export at opset %d)", n, r.since, r.since)
		}
	}
	return ""
}

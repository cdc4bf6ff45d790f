package onnx

import (
	"fmt"
	"sort"
	"strings"
)

// Node attributes are checked against the ONNX operator specification
// before a node is built, as ONNX Runtime does: an attribute the operator
// does not define at the model's opset (a misspelling, ReduceSum's axes
// after opset 13, where they are an input), or one of the wrong type
// (LeakyRelu's alpha written as an int), is refused instead of being
// ignored for the default.

// attrRule is one attribute an operator defines: its name and type, and
// the opsets [from, to) that have it (0: no bound).
type attrRule struct {
	name     string
	typ      AttrType
	from, to int64
	required bool
}

// defines reports whether the operator has the attribute at opset.
func (r attrRule) defines(opset int64) bool {
	return (r.from == 0 || opset >= r.from) && (r.to == 0 || opset < r.to)
}

func at(name string, t AttrType) attrRule { return attrRule{name: name, typ: t} }

// since is r from opset v on; until is r before opset v (from v the value
// is an input of the operator); required marks an attribute that must be
// given.
func (r attrRule) since(v int64) attrRule { r.from = v; return r }
func (r attrRule) until(v int64) attrRule { r.to = v; return r }
func (r attrRule) needed() attrRule       { r.required = true; return r }
func rules(rs ...attrRule) []attrRule     { return rs }
func floats(names ...string) []attrRule   { return typed(AttrFloat, names) }
func intAttrs(names ...string) []attrRule { return typed(AttrInt, names) }
func typed(t AttrType, n []string) []attrRule {
	rs := make([]attrRule, len(n))
	for i, name := range n {
		rs[i] = at(name, t)
	}
	return rs
}

// opAttrs lists the attributes of each supported operator, from the ONNX
// operator specification (opsets MinImportOpset to MaxImportOpset; the
// attributes of later opsets are listed so that errors can say when they
// came). An operator not listed (Relu, Add, MatMul, Expand, …) has none.
var opAttrs = map[string][]attrRule{
	"LeakyRelu": floats("alpha"), "Elu": floats("alpha"), "Celu": floats("alpha"),
	"Selu": floats("alpha", "gamma"), "HardSigmoid": floats("alpha", "beta"),
	"IsInf": intAttrs("detect_negative", "detect_positive"), "Mod": intAttrs("fmod"), "Trilu": intAttrs("upper"),
	"Einsum":  rules(at("equation", AttrString)),
	"Dropout": rules(at("ratio", AttrFloat).until(12), at("seed", AttrInt).since(12)),
	"Constant": rules(at("value", AttrTensor), at("sparse_value", AttrSparseTensor).since(11),
		at("value_float", AttrFloat).since(12), at("value_floats", AttrFloats).since(12),
		at("value_int", AttrInt).since(12), at("value_ints", AttrInts).since(12),
		at("value_string", AttrString).since(12), at("value_strings", AttrStrings).since(12)),
	"Cast":            rules(at("to", AttrInt).needed(), at("saturate", AttrInt).since(19)),
	"CastLike":        rules(at("saturate", AttrInt).since(19)),
	"Shape":           rules(at("start", AttrInt).since(15), at("end", AttrInt).since(15)),
	"ConstantOfShape": rules(at("value", AttrTensor)),
	"Clip":            rules(at("min", AttrFloat).until(11), at("max", AttrFloat).until(11)),
	"Softmax":         intAttrs("axis"), "LogSoftmax": intAttrs("axis"),
	"CumSum": intAttrs("exclusive", "reverse"),
	"TopK": rules(at("axis", AttrInt), at("k", AttrInt).until(10), at("largest", AttrInt).since(11),
		at("sorted", AttrInt).since(11)),
	"If":           rules(at("then_branch", AttrGraph).needed(), at("else_branch", AttrGraph).needed()),
	"Reshape":      rules(at("allowzero", AttrInt).since(14)),
	"Flatten":      intAttrs("axis"),
	"Squeeze":      rules(at("axes", AttrInts).until(13)),
	"Unsqueeze":    rules(at("axes", AttrInts).until(13)),
	"Transpose":    rules(at("perm", AttrInts)),
	"DepthToSpace": rules(at("blocksize", AttrInt).needed(), at("mode", AttrString).since(11)),
	"SpaceToDepth": rules(at("blocksize", AttrInt).needed()),
	"Slice":        rules(at("starts", AttrInts).until(10), at("ends", AttrInts).until(10), at("axes", AttrInts).until(10)),
	"Split":        rules(at("axis", AttrInt), at("split", AttrInts).until(13), at("num_outputs", AttrInt).since(18)),
	"Concat":       intAttrs("axis"), "Gather": intAttrs("axis"), "GatherElements": intAttrs("axis"),
	"GatherND":      rules(at("batch_dims", AttrInt).since(12)),
	"ScatterND":     rules(at("reduction", AttrString).since(16)),
	"Pad":           rules(at("mode", AttrString), at("pads", AttrInts).until(11), at("value", AttrFloat).until(11)),
	"Gemm":          append(floats("alpha", "beta"), intAttrs("transA", "transB")...),
	"Conv":          convAttrs(),
	"ConvTranspose": append(convAttrs(), at("output_padding", AttrInts), at("output_shape", AttrInts)),
	"AveragePool": append(poolAttrs(), at("count_include_pad", AttrInt), at("ceil_mode", AttrInt).since(10),
		at("dilations", AttrInts).since(19)),
	"MaxPool": append(poolAttrs(), at("storage_order", AttrInt), at("ceil_mode", AttrInt).since(10),
		at("dilations", AttrInts).since(10)),
	"BatchNormalization":    rules(at("epsilon", AttrFloat), at("momentum", AttrFloat), at("training_mode", AttrInt).since(14)),
	"InstanceNormalization": floats("epsilon"),
	"LayerNormalization":    rules(at("axis", AttrInt), at("epsilon", AttrFloat), at("stash_type", AttrInt)),
	"Resize": rules(at("mode", AttrString), at("coordinate_transformation_mode", AttrString).since(11),
		at("cubic_coeff_a", AttrFloat).since(11), at("exclude_outside", AttrInt).since(11),
		at("extrapolation_value", AttrFloat).since(11), at("nearest_mode", AttrString).since(11),
		at("antialias", AttrInt).since(18), at("axes", AttrInts).since(18),
		at("keep_aspect_ratio_policy", AttrString).since(18)),
	"Upsample": rules(at("mode", AttrString)),
	"EyeLike":  intAttrs("dtype", "k"),
}

func init() {
	for op := range reduceOps {
		moved := int64(18) // axes became an input: ReduceSum at 13, the others at 18
		if op == "ReduceSum" {
			moved = 13
		}
		opAttrs[op] = rules(at("axes", AttrInts).until(moved), at("keepdims", AttrInt),
			at("noop_with_empty_axes", AttrInt).since(moved))
	}
}

func convAttrs() []attrRule {
	return rules(at("auto_pad", AttrString), at("dilations", AttrInts), at("group", AttrInt),
		at("kernel_shape", AttrInts), at("pads", AttrInts), at("strides", AttrInts))
}

func poolAttrs() []attrRule {
	return rules(at("auto_pad", AttrString), at("kernel_shape", AttrInts), at("pads", AttrInts), at("strides", AttrInts))
}

// checkAttrs refuses an attribute node's operator does not define at
// opset, one of the wrong type, a reference to a function's attribute,
// and a missing required attribute.
func checkAttrs(node *Node, opset int64) error {
	rs := opAttrs[node.OpType]
	names := make([]string, 0, len(node.Attrs))
	for name := range node.Attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := checkAttr(node.OpType, node.Attrs[name], rs, opset); err != nil {
			return err
		}
	}
	for _, r := range rs {
		if r.required && r.defines(opset) && node.Attrs[r.name] == nil {
			return fmt.Errorf("attribute %q (%v) is required", r.name, r.typ)
		}
	}
	return nil
}

// checkAttr checks one attribute of an op against its rules.
func checkAttr(op string, a *Attribute, rs []attrRule, opset int64) error {
	if a.RefAttrName != "" {
		return fmt.Errorf("attribute %q refers to %q (ref_attr_name): only a function's nodes may", a.Name, a.RefAttrName)
	}
	for _, r := range rs {
		switch {
		case r.name != a.Name:
			continue
		case r.to != 0 && opset >= r.to:
			return fmt.Errorf("attribute %q (%v): %s takes %s as an input from opset %d, not as an attribute (the model's opset is %d)",
				a.Name, a.Type, op, a.Name, r.to, opset)
		case !r.defines(opset):
			return fmt.Errorf("attribute %q (%v): %s has it from opset %d, the model's opset is %d", a.Name, a.Type, op, r.from, opset)
		case a.Type != r.typ:
			return fmt.Errorf("attribute %q is %v, want %v (%s's %s)", a.Name, a.Type, r.typ, op, a.Name)
		}
		return nil
	}
	return fmt.Errorf("attribute %q (%v) is not an attribute of %s at opset %d (%s)", a.Name, a.Type, op, opset, attrNames(rs, opset))
}

// attrNames lists the attributes rs define at opset, for errors.
func attrNames(rs []attrRule, opset int64) string {
	var names []string
	for _, r := range rs {
		if r.defines(opset) {
			names = append(names, fmt.Sprintf("%s (%v)", r.name, r.typ))
		}
	}
	if len(names) == 0 {
		return "it has none"
	}
	return "it has " + strings.Join(names, ", ")
}

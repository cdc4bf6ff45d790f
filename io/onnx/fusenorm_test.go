package onnx

import (
	"fmt"
	"strings"
	"testing"
)

// The norm chains are fused into ReduceL2 only where nothing else reads
// their intermediate values and their exponents are 2 and 0.5 exactly;
// the axes of an opset-13 ReduceSum (an input) become ReduceL2's
// attribute.
func TestFuseNormsOnlyWholeChains(t *testing.T) {
	c := func(name string, v ...float64) *Tensor {
		return &Tensor{Name: name, Dims: []int64{int64(len(v))}, DataType: TypeFloat, Float: v}
	}
	axes := &Tensor{Name: "axes", Dims: []int64{1}, DataType: TypeInt64, Int: []int64{1}}
	for _, tc := range []struct {
		name  string
		nodes []*Node
		out   []string // graph outputs
		want  string   // op types after fusion
	}{
		{"x.norm(dim=1)", []*Node{
			{Name: "m", OpType: "Mul", Inputs: []string{"x", "x"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Sqrt", Inputs: []string{"sum"}, Outputs: []string{"y"}},
		}, []string{"y"}, "ReduceL2"},
		{"linalg.norm", []*Node{
			{Name: "a", OpType: "Abs", Inputs: []string{"x"}, Outputs: []string{"ax"}},
			{Name: "p", OpType: "Pow", Inputs: []string{"ax", "two"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "half"}, Outputs: []string{"y"}},
		}, []string{"y"}, "ReduceL2"},
		{"the sum also read", []*Node{
			{Name: "m", OpType: "Mul", Inputs: []string{"x", "x"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Sqrt", Inputs: []string{"sum"}, Outputs: []string{"y"}},
		}, []string{"y", "sum"}, "Mul ReduceSum Sqrt"},
		{"x times another", []*Node{
			{Name: "m", OpType: "Mul", Inputs: []string{"x", "w"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Sqrt", Inputs: []string{"sum"}, Outputs: []string{"y"}},
		}, []string{"y"}, "Mul ReduceSum Sqrt"},
		{"torch.sqrt((x ** 2).sum(1))", []*Node{
			{Name: "p", OpType: "Pow", Inputs: []string{"x", "two"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Sqrt", Inputs: []string{"sum"}, Outputs: []string{"y"}},
		}, []string{"y"}, "Pow ReduceSum Sqrt"},
		{"(x ** 2).sum(1) ** 0.5", []*Node{
			{Name: "p", OpType: "Pow", Inputs: []string{"x", "two"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "half"}, Outputs: []string{"y"}},
		}, []string{"y"}, "Pow ReduceSum Pow"},
		{"cdist's 0.49999976", []*Node{
			{Name: "p", OpType: "Pow", Inputs: []string{"x", "two"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "almost"}, Outputs: []string{"y"}},
		}, []string{"y"}, "ReduceL2"},
		{"0.49999976 written in float64", []*Node{
			{Name: "p", OpType: "Pow", Inputs: []string{"x", "two"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "almost64"}, Outputs: []string{"y"}},
		}, []string{"y"}, "Pow ReduceSum Pow"},
		{"cdist's exponent after a cube", []*Node{
			{Name: "p", OpType: "Pow", Inputs: []string{"x", "three"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "almost"}, Outputs: []string{"y"}},
		}, []string{"y"}, "Pow ReduceSum Pow"},
		{"vector_norm(ord=3) in float32", []*Node{
			{Name: "a", OpType: "Abs", Inputs: []string{"x"}, Outputs: []string{"ax"}},
			{Name: "p", OpType: "Pow", Inputs: []string{"ax", "three"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "third32"}, Outputs: []string{"y"}},
		}, []string{"y"}, "ReduceL2(p=3)"},
		{"vector_norm(ord=0.5) in float64", []*Node{
			{Name: "a", OpType: "Abs", Inputs: []string{"x"}, Outputs: []string{"ax"}},
			{Name: "p", OpType: "Pow", Inputs: []string{"ax", "half"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "two"}, Outputs: []string{"y"}},
		}, []string{"y"}, "ReduceL2(p=0.5)"},
		{"|x|^3 summed, to the 0.3", []*Node{
			{Name: "a", OpType: "Abs", Inputs: []string{"x"}, Outputs: []string{"ax"}},
			{Name: "p", OpType: "Pow", Inputs: []string{"ax", "three"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"}},
			{Name: "r", OpType: "Pow", Inputs: []string{"sum", "almostThird"}, Outputs: []string{"y"}},
		}, []string{"y"}, "Abs Pow ReduceSum Pow"},
		{"noop_with_empty_axes", []*Node{
			{Name: "m", OpType: "Mul", Inputs: []string{"x", "x"}, Outputs: []string{"sq"}},
			{Name: "s", OpType: "ReduceSum", Inputs: []string{"sq", "axes"}, Outputs: []string{"sum"},
				Attrs: map[string]*Attribute{"noop_with_empty_axes": {Name: "noop_with_empty_axes", Type: AttrInt, I: 1}}},
			{Name: "r", OpType: "Sqrt", Inputs: []string{"sum"}, Outputs: []string{"y"}},
		}, []string{"y"}, "Mul ReduceSum Sqrt"},
	} {
		g := &Graph{}
		for _, o := range tc.out {
			g.Outputs = append(g.Outputs, &ValueInfo{Name: o})
		}
		inits := map[string]*Tensor{"two": c("two", 2), "half": c("half", 0.5), "almost": c("almost", float64(float32(0.49999976))), "almost64": c("almost64", 0.49999976), "axes": axes,
			"three": c("three", 3), "third32": c("third32", float64(float32(1.0/3))), "almostThird": c("almostThird", 0.3)}
		got := fuseNorms(tc.nodes, g, inits, 13)
		var ops []string
		for _, nd := range got {
			if nd.lp != 0 {
				ops = append(ops, fmt.Sprintf("%s(p=%v)", nd.OpType, nd.lp))
				continue
			}
			ops = append(ops, nd.OpType)
		}
		if strings.Join(ops, " ") != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, ops, tc.want)
			continue
		}
		if strings.HasPrefix(tc.want, "ReduceL2") {
			l2 := got[0]
			if l2.Inputs[0] != "x" || len(l2.Inputs) != 1 || l2.Attrs["axes"] == nil || l2.Attrs["axes"].Ints[0] != 1 || l2.Outputs[0] != "y" || l2.Name != "r" {
				t.Errorf("%s: %+v", tc.name, l2)
			}
		}
	}
}

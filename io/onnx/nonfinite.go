package onnx

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
)

// NonFiniteNodeAt names the first node, in the graph's order, whose
// output holds a NaN or an infinity at the point x (one row of the
// input's size) while the graph's energy there is finite, with the file's
// parameter values; "" where none is. A gradient that is NaN where the
// energy is finite mostly comes from such a node: torch.where(c, f, g)
// differentiates both branches, and a NaN in the branch not taken (the
// square root of a negative number) makes the gradient NaN, in PyTorch
// too (round 103 A2: the refusal named no node).
func (n *Net) NonFiniteNodeAt(x []float64) string {
	if len(x) != n.dim {
		return ""
	}
	b := max(n.batch, 1)
	in := make([]float64, 0, b*n.dim)
	for range b {
		in = append(in, x...)
	}
	g := G.NewGraph()
	xn := G.NewMatrix(g, n.Dtype, G.WithShape(b, n.dim), G.WithName("x"), G.WithValue(typedTensor(n.Dtype, []int{b, n.dim}, in)))
	inst := newInstance(n, &fileBinder{g: g, dtype: n.Dtype, inits: n.inits}, b)
	y, err := inst.run(xn)
	if err != nil {
		return ""
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if m.RunAll() != nil {
		return ""
	}
	if e := valueFloats(y.Value()); len(e) == 0 || math.IsNaN(e[0]) || math.IsInf(e[0], 0) {
		return ""
	}
	for _, node := range n.nodes {
		for _, name := range node.Outputs {
			v := inst.env[name]
			if v == nil || v.n == nil || !isFloat(v.elem) || v.n.Value() == nil {
				continue
			}
			for _, f := range valueFloats(v.n.Value()) {
				if math.IsNaN(f) || math.IsInf(f, 0) {
					return fmt.Sprintf("node %q (%s) computes %v there, which the energy does not use: a branch that torch.where (or a mask) discards is differentiated all the same, and its %v makes the gradient NaN (in PyTorch too); keep the branch finite where it is not taken, e.g. torch.where(x > 0, torch.sqrt(x.clamp(min=1e-12)), …)", nodeName(node), node.OpType, f, f)
				}
			}
		}
	}
	return ""
}

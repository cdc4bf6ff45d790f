package graph

import (
	"fmt"
	"reflect"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// executor runs a Gorgonia graph's operations in topological order, the
// way Gorgonia's TapeMachine does, but keeps every node's value between
// runs and writes the next run's result into it (the operations'
// UsePreallocDo), on the calling goroutine. Measured against the
// TapeMachine, whose Reset drops every register (each run reallocates all
// intermediates) and whose RunAll hands the work to a new goroutine on a
// locked OS thread, it removes almost all allocations of a model call.
//
// A node whose first result shares memory with another node's value (a
// view) is always recomputed with Do, so no preallocated write can alias
// another node's value.
type executor struct {
	nodes    []*G.Node
	args     [][]int     // indices of each node's children in nodes
	vals     []G.Value   // each node's value after the last run
	inputs   [][]G.Value // per-node argument buffers
	noReuse  []bool
	ran      bool
	position map[*G.Node]int
}

// newExecutor prepares the subgraph of g that computes outs.
func newExecutor(g *G.ExprGraph, outs []*G.Node) *executor {
	e := &executor{position: make(map[*G.Node]int)}
	var visit func(n *G.Node)
	visit = func(n *G.Node) {
		if _, ok := e.position[n]; ok {
			return
		}
		var kids []int
		for _, c := range childrenOf(g, n) {
			visit(c)
			kids = append(kids, e.position[c])
		}
		e.position[n] = len(e.nodes)
		e.nodes = append(e.nodes, n)
		e.args = append(e.args, kids)
	}
	for _, o := range outs {
		visit(o)
	}
	e.vals = make([]G.Value, len(e.nodes))
	e.inputs = make([][]G.Value, len(e.nodes))
	for i, a := range e.args {
		e.inputs[i] = make([]G.Value, len(a))
	}
	e.noReuse = make([]bool, len(e.nodes))
	return e
}

// childrenOf returns n's operands in order.
func childrenOf(g *G.ExprGraph, n *G.Node) []*G.Node {
	it := g.From(n.ID())
	var cs []*G.Node
	for it.Next() {
		cs = append(cs, it.Node().(*G.Node))
	}
	return cs
}

// value returns n's value after the last run.
func (e *executor) value(n *G.Node) G.Value { return e.vals[e.position[n]] }

// run evaluates every node once.
func (e *executor) run() error {
	for i, n := range e.nodes {
		op := n.Op()
		if op == nil { // an input or parameter: its bound value
			e.vals[i] = n.Value()
			if e.vals[i] == nil {
				return fmt.Errorf("graph: internal error: input %v has no value", n)
			}
			continue
		}
		in := e.inputs[i]
		for k, a := range e.args[i] {
			in[k] = e.vals[a]
		}
		if prev := e.vals[i]; prev != nil && !e.noReuse[i] && !incrementsPrealloc(op) {
			if pd, ok := op.(G.UsePreallocDoer); ok {
				if v, err := pd.UsePreallocDo(prev, in...); err == nil {
					e.vals[i] = v
					continue
				}
			}
		}
		v, err := op.Do(in...)
		if err != nil {
			return fmt.Errorf("graph: evaluating %v: %w", n, err)
		}
		e.vals[i] = v
	}
	if !e.ran {
		e.ran = true
		e.markViews()
	}
	return nil
}

// incrementsPrealloc reports whether op's UsePreallocDo adds into the
// buffer it is given instead of overwriting it: Gorgonia's sliceIncrOp
// (the gradient of Slice) does, so reusing last run's value would
// accumulate gradients across runs (an expression slicing its input
// twice had ∇ 4, 12, 24 on three calls).
func incrementsPrealloc(op G.Op) bool {
	return reflect.TypeOf(op).Name() == "sliceIncrOp"
}

// markViews flags the nodes whose value shares memory with another node's
// (views, pass-through operations) or that are scalars, so that later runs
// recompute them with Do instead of writing into shared memory.
func (e *executor) markViews() {
	type span struct {
		lo, hi uintptr
		node   int
	}
	var spans []span
	for i, v := range e.vals {
		t, ok := v.(tensor.Tensor)
		if !ok || t.Shape().IsScalar() {
			e.noReuse[i] = true
			continue
		}
		if n := t.MemSize(); n > 0 {
			spans = append(spans, span{t.Uintptr(), t.Uintptr() + n, i})
		}
	}
	for k := range spans {
		for j := 0; j < k; j++ {
			if spans[j].lo < spans[k].hi && spans[k].lo < spans[j].hi {
				// Overlap: neither computed node may be written in place.
				for _, i := range []int{spans[j].node, spans[k].node} {
					if e.nodes[i].Op() != nil {
						e.noReuse[i] = true
					}
				}
			}
		}
	}
}

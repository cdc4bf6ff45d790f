package nd

import (
	"fmt"
	"hash"
	"slices"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TopK is the values of ONNX's TopK: the K largest elements along axis
// Axis (the smallest unless Largest), in order, equal ones in index
// order as ONNX specifies, NaN above every number as in PyTorch. The
// result has the input's shape with K along Axis; the Type is
// rank-polymorphic (a → a). The gradient takes g to the positions the
// values came from, 0 elsewhere (torch.topk's and torch.sort's).
type TopK struct {
	pure
	Axis    int
	K       int
	Largest bool
}

// topKGrad is TopK's gradient, for inputs (x, g).
type topKGrad struct {
	pure
	op TopK
}

// shape checks the attributes against the input shape and returns the
// output shape.
func (op TopK) shape(in tensor.Shape) (tensor.Shape, error) {
	if op.Axis < 0 || op.Axis >= len(in) || op.K < 0 || op.K > in[op.Axis] {
		return nil, fmt.Errorf("nd: %v of an input of shape %v", op, in)
	}
	out := in.Clone()
	out[op.Axis] = op.K
	return out, nil
}

// Arity is 1.
func (op TopK) Arity() int { return 1 }

// Type is a → a.
func (op TopK) Type() hm.Type { return fnType(0, 0) }

// InferShape returns the result's shape.
func (op TopK) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	return op.shape(s[0])
}

// Do selects the values.
func (op TopK) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo selects the values into prealloc if it fits.
func (op TopK) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	s, err := op.shape(shapeOf(ts[0]))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	if out.Dtype() == tensor.Float32 {
		topK(op, shapeOf(ts[0]), data[float32](ts[0]), func(to, from int) { data[float32](out)[to] = data[float32](ts[0])[from] })
	} else {
		topK(op, shapeOf(ts[0]), data[float64](ts[0]), func(to, from int) { data[float64](out)[to] = data[float64](ts[0])[from] })
	}
	return out, nil
}

// TopKPick calls pick(to, from) for each element op selects from x, of
// shape s: from its offset in x to its offset in the result. The shape
// must suit op.
func TopKPick(op TopK, s tensor.Shape, x []float64, pick func(to, from int)) { topK(op, s, x, pick) }

// topK calls pick(to, from) for each selected element: from its offset
// in x (of shape s) to its offset in the result.
func topK[T fp](op TopK, s tensor.Shape, x []T, pick func(to, from int)) {
	outer, n, inner := prod(s[:op.Axis]), s[op.Axis], prod(s[op.Axis+1:])
	order := make([]int, n)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			at := func(j int) T { return x[(o*n+j)*inner+i] }
			for j := range order {
				order[j] = j
			}
			slices.SortStableFunc(order, func(a, b int) int { // no allocation per lane, unlike sort.SliceStable
				u, v := at(a), at(b)
				if !op.Largest {
					u, v = v, u
				}
				switch {
				case u > v || (u != u && v == v): // NaN above numbers
					return -1
				case v > u || (v != v && u == u):
					return 1
				}
				return 0
			})
			for j := 0; j < op.K; j++ {
				pick((o*op.K+j)*inner+i, (o*n+order[j])*inner+i)
			}
		}
	}
}

// WriteHash writes the attributes.
func (op TopK) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op TopK) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op TopK) String() string {
	return fmt.Sprintf("TopK{axis %d, k %d, largest %v}", op.Axis, op.K, op.Largest)
}

// DiffWRT is true.
func (op TopK) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the gradient.
func (op TopK) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := Apply(topKGrad{op: op}, in[0], grad)
	return G.Nodes{d}, err
}

// Arity is 2: x and g.
func (op topKGrad) Arity() int { return 2 }

// Type is (a, a) → a.
func (op topKGrad) Type() hm.Type { return fnType(0, 0, 0) }

// InferShape returns x's shape after checking g's.
func (op topKGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	out, err := op.op.shape(s[0])
	if err != nil || !out.Eq(s[1]) {
		return nil, fmt.Errorf("nd: %v of shapes %v", op, s)
	}
	return s[0].Clone(), nil
}

// Do computes the gradient.
func (op topKGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the gradient into prealloc if it fits.
func (op topKGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	s, err := op.op.shape(shapeOf(ts[0]))
	if err != nil || !s.Eq(shapeOf(ts[1])) {
		return nil, fmt.Errorf("nd: %v of shapes %v %v", op, ts[0].Shape(), ts[1].Shape())
	}
	out := output(prealloc, ts[0].Dtype(), shapeOf(ts[0]), ts...)
	if out.Dtype() == tensor.Float32 {
		dx, g := data[float32](out), data[float32](ts[1])
		clear(dx)
		topK(op.op, shapeOf(ts[0]), data[float32](ts[0]), func(to, from int) { dx[from] += g[to] })
	} else {
		dx, g := data[float64](out), data[float64](ts[1])
		clear(dx)
		topK(op.op, shapeOf(ts[0]), data[float64](ts[0]), func(to, from int) { dx[from] += g[to] })
	}
	return out, nil
}

// WriteHash writes the attributes.
func (op topKGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op topKGrad) Hashcode() uint32 { return hashOf(op) }

// String names the gradient.
func (op topKGrad) String() string { return fmt.Sprintf("%vGrad", op.op) }

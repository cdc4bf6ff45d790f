package nd

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Op is a Gorgonia operation of this package: it also reports the shape
// of its result for given input shapes, so callers can check a graph
// before building it.
type Op interface {
	G.Op
	G.UsePreallocDoer
}

// Apply adds op to the graph of its inputs.
func Apply(op Op, in ...*G.Node) (*G.Node, error) { return G.ApplyOp(op, in...) }

// Eval runs op on constant tensors (folding) and returns the result.
func Eval(op Op, in ...*tensor.Dense) (*tensor.Dense, error) {
	vs := make([]G.Value, len(in))
	for i, t := range in {
		vs[i] = t
	}
	v, err := op.Do(vs...)
	if err != nil {
		return nil, err
	}
	t, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("nd: %v returned %T, want a dense tensor", op, v)
	}
	return t, nil
}

// pure holds the Gorgonia Op methods shared by this package's operations:
// they return new values (or write into their previous one), call nothing
// external and never overwrite an input.
type pure struct{}

func (pure) ReturnsPtr() bool     { return false }
func (pure) CallsExtern() bool    { return false }
func (pure) OverwritesInput() int { return -1 }

// fnType is the Gorgonia type of an operation taking tensors of the given
// ranks to a tensor of rank out, all of one float type.
func fnType(out int, in ...int) hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, 0, len(in)+1)
	for _, r := range in {
		ts = append(ts, tensorType(r, a))
	}
	ts = append(ts, tensorType(out, a))
	return hm.NewFnType(ts...)
}

func tensorType(rank int, a hm.Type) hm.Type {
	if rank == 0 {
		return a
	}
	return G.TensorType{Dims: rank, Of: a}
}

// hashOf hashes an operation by its WriteHash.
func hashOf(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// inShapes converts Gorgonia's DimSizers to shapes, checking their number.
func inShapes(op fmt.Stringer, in []G.DimSizer, n int) ([]tensor.Shape, error) {
	if n >= 0 && len(in) != n {
		return nil, fmt.Errorf("nd: %v takes %d inputs, have %d", op, n, len(in))
	}
	s := make([]tensor.Shape, len(in))
	for i, d := range in {
		sh, ok := d.(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("nd: %v: input %d has shape %v of type %T", op, i, d, d)
		}
		if len(sh) == 0 {
			sh = tensor.Shape{1}
		}
		s[i] = sh
	}
	return s, nil
}

// operands checks that the inputs are n float64 or float32 dense tensors
// of one type (n < 0: any number) and returns them contiguous.
func operands(op fmt.Stringer, in []G.Value, n int) ([]*tensor.Dense, error) {
	if n >= 0 && len(in) != n {
		return nil, fmt.Errorf("nd: %v takes %d inputs, have %d", op, n, len(in))
	}
	ts := make([]*tensor.Dense, len(in))
	for i, v := range in {
		t, ok := v.(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("nd: %v: input %d is %T, want a dense tensor", op, i, v)
		}
		if t.Dtype() != tensor.Float64 && t.Dtype() != tensor.Float32 {
			return nil, fmt.Errorf("nd: %v: input %d is %v, want float64 or float32", op, i, t.Dtype())
		}
		if t.Dtype() != in[0].Dtype() {
			return nil, fmt.Errorf("nd: %v: input %d is %v, input 0 %v", op, i, t.Dtype(), in[0].Dtype())
		}
		if t.IsMaterializable() {
			t = t.Materialize().(*tensor.Dense)
		}
		ts[i] = t
	}
	return ts, nil
}

// output returns prealloc if it is a dense tensor of the given type and
// shape that shares no memory with the inputs, else a new zero tensor.
// Operations must write every element of an output (it is reused).
func output(prealloc G.Value, dt tensor.Dtype, shape tensor.Shape, in ...*tensor.Dense) *tensor.Dense {
	if len(shape) == 0 {
		shape = tensor.Shape{1}
	}
	if p, ok := prealloc.(*tensor.Dense); ok && p.Dtype() == dt && sameShape(p.Shape(), shape) && !p.IsMaterializable() {
		shared := false
		for _, t := range in {
			if t.Uintptr() == p.Uintptr() {
				shared = true
			}
		}
		if !shared {
			return p
		}
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.Of(dt))
}

// f64s returns a tensor's values as float64 (a copy for float32).
func f64s(t *tensor.Dense) []float64 {
	switch d := t.Data().(type) {
	case []float64:
		return d
	case []float32:
		v := make([]float64, len(d))
		for i, x := range d {
			v[i] = float64(x)
		}
		return v
	}
	return nil
}

// strides returns the row-major strides of shape.
func strides(shape tensor.Shape) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// sameShape is exact shape equality (tensor.Shape.Eq takes a vector (n)
// and a column (n, 1) for equal).
func sameShape(a, b tensor.Shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

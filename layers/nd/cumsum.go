package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CumSum is the cumulative sum along axis Axis (non-negative, below the
// rank), ONNX's CumSum with its axis input as an attribute: element i is
// the sum of elements 0…i (0…i−1 if Exclusive; with Reverse, i…n−1, or
// i+1…n−1 if Exclusive too). Sums are taken in float64. The Type is
// rank-polymorphic (a → a). The gradient is the cumulative sum of g the
// other way, itself a CumSum.
type CumSum struct {
	pure
	Axis               int
	Exclusive, Reverse bool
}

// Arity is 1.
func (op CumSum) Arity() int { return 1 }

// Type is a → a.
func (op CumSum) Type() hm.Type { return fnType(0, 0) }

// InferShape returns the input's shape after checking the axis.
func (op CumSum) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return alongAxisShape(op, in, op.Axis)
}

// Do computes the sums.
func (op CumSum) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo computes the sums into prealloc if it fits.
func (op CumSum) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	outer, n, inner, err := axisSplit(op, shapeOf(ts[0]), op.Axis)
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), shapeOf(ts[0]), ts...)
	if out.Dtype() == tensor.Float32 {
		cumSum(op, data[float32](out), data[float32](ts[0]), outer, n, inner)
	} else {
		cumSum(op, data[float64](out), data[float64](ts[0]), outer, n, inner)
	}
	return out, nil
}

// cumSum computes the sums of an (outer, n, inner) tensor along n.
func cumSum[T fp](op CumSum, y, x []T, outer, n, inner int) {
	lanes(outer, n, inner, func(base, stride int) {
		i, step := base, stride
		if op.Reverse {
			i, step = base+(n-1)*stride, -stride
		}
		s := 0.0
		for k := 0; k < n; k, i = k+1, i+step {
			v := float64(x[i])
			if !op.Exclusive {
				s += v
			}
			y[i] = T(s)
			if op.Exclusive {
				s += v
			}
		}
	})
}

// WriteHash writes the attributes.
func (op CumSum) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op CumSum) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op CumSum) String() string {
	return fmt.Sprintf("CumSum{axis %d, exclusive %v, reverse %v}", op.Axis, op.Exclusive, op.Reverse)
}

// DiffWRT is true.
func (op CumSum) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the cumulative sum of g in the other direction.
func (op CumSum) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	back := op
	back.Reverse = !op.Reverse
	d, err := Apply(back, grad)
	return G.Nodes{d}, err
}

package layers

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// leakyReLU is a fused Gorgonia operation for max(x, 0) + slope·min(x, 0)
// (slope 0: ReLU), elementwise. Built from Gorgonia's own operations the
// activation takes five nodes (two Rectify, a Neg, a product and a
// difference), each a pass over the batch with its own mask; this is one
// pass, and its derivative (leakyReLUGrad) one more. Both are branch-free
// (the factor 1 or slope is picked by x's sign bit; with random signs a
// branch mispredicts half the time, measured 5 ns per element): at x = +0
// the gradient is 1 (PyTorch takes slope there; x = −0 gives slope).
type leakyReLU struct {
	pure
	slope float64
}

// leakyReLUGrad is g·(x > 0 ? 1 : slope), the backward pass of leakyReLU
// for inputs (x, g). It is not differentiated further.
type leakyReLUGrad struct {
	pure
	slope float64
}

// applyLeakyReLU adds leakyReLU(x) to x's graph.
func applyLeakyReLU(x *G.Node, slope float64) (*G.Node, error) {
	return G.ApplyOp(leakyReLU{slope: slope}, x)
}

func (op leakyReLU) Arity() int                                        { return 1 }
func (op leakyReLU) Type() hm.Type                                     { return fnType(1) }
func (op leakyReLU) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op leakyReLU) WriteHash(h hash.Hash)                             { fmt.Fprint(h, op.String()) }
func (op leakyReLU) Hashcode() uint32                                  { return hashOf(op) }
func (op leakyReLU) String() string                                    { return fmt.Sprintf("LeakyReLU(%v)", op.slope) }
func (op leakyReLU) DiffWRT(int) []bool                                { return []bool{true} }

func (op leakyReLU) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(leakyReLUGrad{slope: op.slope}, in[0], grad)
	return G.Nodes{d}, err
}

func (op leakyReLU) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op leakyReLU) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	x, out, err := unaryOperands(op, prealloc, in)
	if err != nil {
		return nil, err
	}
	switch xd := x.Data().(type) {
	case []float64:
		leaky64(out.Data().([]float64), xd, xd, op.slope)
	case []float32:
		leaky32(out.Data().([]float32), xd, xd, float32(op.slope))
	}
	return out, nil
}

func (op leakyReLUGrad) Arity() int                                        { return 2 }
func (op leakyReLUGrad) Type() hm.Type                                     { return fnType(2) }
func (op leakyReLUGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op leakyReLUGrad) WriteHash(h hash.Hash)                             { fmt.Fprint(h, op.String()) }
func (op leakyReLUGrad) Hashcode() uint32                                  { return hashOf(op) }
func (op leakyReLUGrad) String() string                                    { return fmt.Sprintf("LeakyReLUGrad(%v)", op.slope) }

func (op leakyReLUGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op leakyReLUGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	x, g, out, err := gradOperands(op, prealloc, in)
	if err != nil {
		return nil, err
	}
	switch xd := x.Data().(type) {
	case []float64:
		leaky64(out.Data().([]float64), xd, g.Data().([]float64), op.slope)
	case []float32:
		leaky32(out.Data().([]float32), xd, g.Data().([]float32), float32(op.slope))
	}
	return out, nil
}

// leakyGo64 writes y·(1 if x's sign bit is clear, else slope) into dst: the
// activation for y = x, its gradient for y = g. With slope 0 the negative
// side is masked to +0 instead of multiplied, so that ReLU(−∞) = 0 and an
// infinite gradient behind a negative input gives 0, not NaN.
func leakyGo64(dst, x, y []float64, slope float64) {
	dst, y = dst[:len(x)], y[:len(x)]
	if slope == 0 {
		for i, v := range x {
			mask := ^uint64(int64(math.Float64bits(v)) >> 63)
			dst[i] = math.Float64frombits(math.Float64bits(y[i]) & mask)
		}
		return
	}
	f := [2]float64{1, slope}
	for i, v := range x {
		dst[i] = y[i] * f[math.Float64bits(v)>>63]
	}
}

// leakyCMin is the smallest slice leaky64 and leaky32 hand to C (where
// cgo is on): below it the cgo call costs more than the Go loop saves.
const leakyCMin = 256

// leakyGo32 is leakyGo64 in float32.
func leakyGo32(dst, x, y []float32, slope float32) {
	dst, y = dst[:len(x)], y[:len(x)]
	if slope == 0 {
		for i, v := range x {
			mask := ^uint32(int32(math.Float32bits(v)) >> 31)
			dst[i] = math.Float32frombits(math.Float32bits(y[i]) & mask)
		}
		return
	}
	f := [2]float32{1, slope}
	for i, v := range x {
		dst[i] = y[i] * f[math.Float32bits(v)>>31]
	}
}

func sameShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("layers: no input shape")
	}
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("layers: input shape %v of type %T", in[0], in[0])
	}
	return s.Clone(), nil
}

func hashOf(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

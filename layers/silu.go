package layers

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// siLU is a fused Gorgonia operation for SiLU (Swish), x·σ(x) with
// σ(x) = 1/(1 + exp(−x)), elementwise. Built from Gorgonia's Sigmoid and
// HadamardProd the activation is two nodes whose results (and, in the
// backward pass, five more: σ's derivative and the products) are
// allocated anew on every run, 13% of the image EBM's E and ∇ₓE; this is
// one pass that writes into its previous result, exp(−x) computed for the
// whole array at once (exp64, vectorised through cgo), and its derivative
// (siLUGrad) one more, which recomputes σ(x) from x rather than keeping
// it. x = +∞ gives +∞, x = −∞ gives NaN (−∞·0), as PyTorch's.
type siLU struct{ pure }

// siLUGrad is g·σ(x)·(1 + x·(1 − σ(x))), the backward pass of siLU for
// inputs (x, g). It is not differentiated further.
type siLUGrad struct{ pure }

// applySiLU adds siLU(x) to x's graph.
func applySiLU(x *G.Node) (*G.Node, error) { return G.ApplyOp(siLU{}, x) }

// applyActivation adds the activation a of x to x's graph, SiLU as the
// fused siLU operation and the others as Activation.Apply adds them. The
// image models (ImageEnergy, ImageRealNVP, ResBlock) apply their
// activations through it.
func applyActivation(b Binder, a Activation, x *G.Node) (*G.Node, error) {
	if a.Kind == SiLU.Kind {
		return applySiLU(x)
	}
	return a.Apply(b, x)
}

func (op siLU) Arity() int                                        { return 1 }
func (op siLU) Type() hm.Type                                     { return fnType(1) }
func (op siLU) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op siLU) WriteHash(h hash.Hash)                             { fmt.Fprint(h, op.String()) }
func (op siLU) Hashcode() uint32                                  { return hashOf(op) }
func (op siLU) String() string                                    { return "SiLU" }
func (op siLU) DiffWRT(int) []bool                                { return []bool{true} }

func (op siLU) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(siLUGrad{}, in[0], grad)
	return G.Nodes{d}, err
}

func (op siLU) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op siLU) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	x, out, err := unaryOperands(op, prealloc, in)
	if err != nil {
		return nil, err
	}
	switch xd := x.Data().(type) {
	case []float64:
		silu64(out.Data().([]float64), xd, nil)
	case []float32:
		silu32(out.Data().([]float32), xd, nil)
	}
	return out, nil
}

func (op siLUGrad) Arity() int                                        { return 2 }
func (op siLUGrad) Type() hm.Type                                     { return fnType(2) }
func (op siLUGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(in...) }
func (op siLUGrad) WriteHash(h hash.Hash)                             { fmt.Fprint(h, op.String()) }
func (op siLUGrad) Hashcode() uint32                                  { return hashOf(op) }
func (op siLUGrad) String() string                                    { return "SiLUGrad" }

func (op siLUGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op siLUGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	x, g, out, err := gradOperands(op, prealloc, in)
	if err != nil {
		return nil, err
	}
	switch xd := x.Data().(type) {
	case []float64:
		silu64(out.Data().([]float64), xd, g.Data().([]float64))
	case []float32:
		silu32(out.Data().([]float32), xd, g.Data().([]float32))
	}
	return out, nil
}

// siluBlock is the number of values silu64 and silu32 take at a time: σ's
// exp(−x) goes through a buffer on the stack, so that dst may alias g
// (Gorgonia may give the gradient's result the register of a gradient
// whose last use it is).
const siluBlock = 512

// silu64 writes x·σ(x) into dst (g nil), or the gradient
// g·σ(x)·(1 + x·(1 − σ(x))); dst may alias g or x. exp(−x) comes from
// exp64, so each value depends on x[i] alone.
func silu64(dst, x, g []float64) { siluInto(dst, x, g, exp64) }

// silu32 is silu64 in float32.
func silu32(dst, x, g []float32) { siluInto(dst, x, g, exp32) }

// siluInto is silu64 and silu32, with exp(−x) from exp (exp64 or exp32).
func siluInto[T float32 | float64](dst, x, g []T, exp func(dst, src []T, neg bool)) {
	var e [siluBlock]T
	dst = dst[:len(x)]
	if g != nil {
		g = g[:len(x)]
	}
	for lo := 0; lo < len(x); lo += siluBlock {
		xs := x[lo:min(lo+siluBlock, len(x))]
		es, ds := e[:len(xs)], dst[lo:lo+len(xs)]
		exp(es, xs, true)
		if g == nil {
			for i, v := range xs {
				ds[i] = v * (1 / (1 + es[i]))
			}
			continue
		}
		gs := g[lo : lo+len(xs)]
		for i, v := range xs {
			s := 1 / (1 + es[i])
			ds[i] = gs[i] * (s * (1 + v*(1-s)))
		}
	}
}

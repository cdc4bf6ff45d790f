package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ConvTranspose is ONNX ConvTranspose (PyTorch's transposed convolution)
// over 1, 2 or 3 spatial axes: inputs x (N, C, in…), weights w (C,
// M/Group, kernel…) and, when Bias is set, a bias (M) as a third input;
// the result is (N, M, out…) with out = Strides·(in − 1) + OutputPadding +
// Dilations·(k − 1) + 1 − PadsBegin − PadsEnd along each spatial axis
// (callers resolve ONNX's output_shape and auto_pad into pads). The
// attributes have one entry per spatial axis, so the rank is len(Strides)
// + 2; Type and InferShape also need Bias, the number of inputs (see
// Ranked; Do takes the bias when given whatever Bias says). Each sample and group is one
// gemm then col2im, samples split between goroutines. The gradients are
// those of x (a Conv of the output gradient), w and the bias.
type ConvTranspose struct {
	pure
	Strides, Dilations, PadsBegin, PadsEnd, OutputPadding []int
	Group                                                 int
	Bias                                                  bool
}

// dims checks the shapes of x, w and the bias (nil: none) and returns the
// convolution's geometry (the result is the image, x the grid).
func (op ConvTranspose) dims(x, w, b tensor.Shape) (convDims, error) {
	d, err := convAttrs(op.Strides, op.Dilations, op.PadsBegin, op.PadsEnd, op.Group, x, w)
	if err == nil && len(op.OutputPadding) != d {
		err = fmt.Errorf("want an output padding per spatial axis")
	}
	if err != nil {
		return convDims{}, fmt.Errorf("nd: %v: %w", op, err)
	}
	c := convDims{n: x[0], groups: op.Group, cImg: w[1], cGrid: w[0] / op.Group, dims: d}
	if w[0]%op.Group != 0 || x[1] != w[0] || (b != nil && !b.Eq(tensor.Shape{op.Group * w[1]})) {
		return c, fmt.Errorf("nd: %v of x %v, w %v, bias %v", op, x, w, b)
	}
	g := &c.geom
	g.grid, g.k = pad3(x[2:], 1), pad3(w[2:], 1)
	g.s, g.d, g.p = pad3(op.Strides, 1), pad3(op.Dilations, 1), pad3(op.PadsBegin, 0)
	pe, op3 := pad3(op.PadsEnd, 0), pad3(op.OutputPadding, 0)
	for a := range 3 {
		g.img[a] = g.s[a]*(g.grid[a]-1) + op3[a] + g.d[a]*(g.k[a]-1) + 1 - g.p[a] - pe[a]
		if g.img[a] < 1 || op3[a] < 0 {
			return c, fmt.Errorf("nd: %v of x %v, w %v: empty or negative output", op, x, w)
		}
	}
	return c, nil
}

// Arity is 2, or 3 with a bias.
func (op ConvTranspose) Arity() int { return convArity(op.Bias) }

// Type is a function from x and w of rank len(Strides) + 2 (and a bias of
// rank 1) to a tensor of that rank.
func (op ConvTranspose) Type() hm.Type { return convType(len(op.Strides), op.Bias) }

// InferShape returns (N, M, out…).
func (op ConvTranspose) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, -1)
	if err != nil {
		return nil, err
	}
	if err := checkFields(op, s, []int{op.Arity()}, []int{len(s)}); err != nil {
		return nil, err
	}
	c, err := convDimsOf(op, s)
	if err != nil {
		return nil, err
	}
	return c.imgShape(), nil
}

// Do convolves.
func (op ConvTranspose) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo convolves, writing into prealloc when it fits.
func (op ConvTranspose) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, -1)
	if err != nil {
		return nil, err
	}
	ss := make([]tensor.Shape, len(ts))
	for i, t := range ts {
		ss[i] = shapeOf(t)
	}
	c, err := convDimsOf(op, ss)
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), c.imgShape(), ts...)
	if out.Dtype() == tensor.Float32 {
		convTransposeForward[float32](out, ts, &c)
	} else {
		convTransposeForward[float64](out, ts, &c)
	}
	return out, nil
}

// convTransposeForward computes ConvTranspose from its operands x, w and
// maybe a bias.
func convTransposeForward[T fp](out *tensor.Dense, ts []*tensor.Dense, c *convDims) {
	y := data[T](out)
	convImg(y, data[T](ts[0]), data[T](ts[1]), c)
	if len(ts) == 3 {
		addBias(y, data[T](ts[2]), c.geom.imgVol())
	}
}

// WriteHash writes the attributes.
func (op ConvTranspose) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op ConvTranspose) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op ConvTranspose) String() string {
	return fmt.Sprintf("ConvTranspose{strides %v, dilations %v, pads %v %v, output padding %v, %d groups, bias %v}",
		op.Strides, op.Dilations, op.PadsBegin, op.PadsEnd, op.OutputPadding, op.Group, op.Bias)
}

// DiffWRT is true for every input.
func (op ConvTranspose) DiffWRT(n int) []bool { return allTrue(n) }

// SymDiff returns the gradients of x, w and the bias.
func (op ConvTranspose) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	var b tensor.Shape
	if len(in) == 3 {
		b = in[2].Shape()
	}
	c, err := op.dims(in[0].Shape(), in[1].Shape(), b)
	if err != nil {
		return nil, err
	}
	return convSymDiff(c, true, op.String(), in, grad)
}

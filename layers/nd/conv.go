package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Conv is ONNX Conv (PyTorch's convolution: a cross-correlation) over 1, 2
// or 3 spatial axes: inputs x (N, C, spatial…), weights w (M, C/Group,
// kernel…) and, when Bias is set, a bias (M) as a third input; the result
// is (N, M, out…) with out = ⌊(in + PadsBegin + PadsEnd − Dilations·(k −
// 1) − 1) / Strides⌋ + 1 along each spatial axis. Strides, Dilations,
// PadsBegin and PadsEnd have one entry per spatial axis (strides and
// dilations ≥ 1, pads ≥ 0; callers resolve ONNX's defaults and auto_pad),
// so the rank is len(Strides) + 2; Type and InferShape also need Bias, the
// number of inputs (see Ranked; Do takes the bias when given whatever Bias
// says).
// It computes im2col then one gemm per sample and group, samples split
// between goroutines. The gradients are those of x (col2im of wᵀ times
// the output gradient), w and the bias.
type Conv struct {
	pure
	Strides, Dilations, PadsBegin, PadsEnd []int
	Group                                  int
	Bias                                   bool
}

// convGrad is a gradient of Conv or ConvTranspose.
type convGrad struct {
	pure
	kind       int // convGradData, convGradFilter or convGradBias
	transposed bool
	dims       convDims
	name       string
}

// The kinds of convGrad: inputs (g, w) for the data, (x, g) for the
// filter, (g) for the bias.
const (
	convGradData = iota
	convGradFilter
	convGradBias
)

// convAttrs checks the attributes common to Conv and ConvTranspose for
// inputs of shapes x and w, returning the number of spatial axes.
func convAttrs(strides, dil, pb, pe []int, group int, x, w tensor.Shape) (int, error) {
	d := len(strides)
	if d < 1 || d > 3 || len(dil) != d || len(pb) != d || len(pe) != d {
		return 0, fmt.Errorf("want 1 to 3 spatial axes, each with a stride, dilation and pads")
	}
	if len(x) != d+2 || len(w) != d+2 || group < 1 || !positive(x, w) {
		return 0, fmt.Errorf("input %v, weights %v, %d groups", x, w, group)
	}
	for i := 0; i < d; i++ {
		if strides[i] < 1 || dil[i] < 1 || pb[i] < 0 || pe[i] < 0 {
			return 0, fmt.Errorf("strides %v, dilations %v, pads %v %v", strides, dil, pb, pe)
		}
	}
	return d, nil
}

// dims checks the shapes of x, w and the bias (nil: none) and returns the
// convolution's geometry (x is the image, the result the grid).
func (op Conv) dims(x, w, b tensor.Shape) (convDims, error) {
	d, err := convAttrs(op.Strides, op.Dilations, op.PadsBegin, op.PadsEnd, op.Group, x, w)
	if err != nil {
		return convDims{}, fmt.Errorf("nd: %v: %w", op, err)
	}
	c := convDims{n: x[0], groups: op.Group, cImg: w[1], cGrid: w[0] / op.Group, dims: d}
	if w[0]%op.Group != 0 || x[1] != op.Group*w[1] || (b != nil && !b.Eq(tensor.Shape{w[0]})) {
		return c, fmt.Errorf("nd: %v of x %v, w %v, bias %v", op, x, w, b)
	}
	g := &c.geom
	g.img, g.k = pad3(x[2:], 1), pad3(w[2:], 1)
	g.s, g.d, g.p = pad3(op.Strides, 1), pad3(op.Dilations, 1), pad3(op.PadsBegin, 0)
	pe := pad3(op.PadsEnd, 0)
	for a := range 3 {
		num := g.img[a] + g.p[a] + pe[a] - g.d[a]*(g.k[a]-1) - 1
		if num < 0 {
			return c, fmt.Errorf("nd: %v of x %v, w %v: kernel larger than the padded input", op, x, w)
		}
		g.grid[a] = num/g.s[a] + 1
	}
	return c, nil
}

// convShapes returns the inputs' shapes (the bias' nil if absent).
func convShapes(in []tensor.Shape) (x, w, b tensor.Shape, err error) {
	if len(in) != 2 && len(in) != 3 {
		return nil, nil, nil, fmt.Errorf("%d inputs, want 2 or 3", len(in))
	}
	if len(in) == 3 {
		b = in[2]
	}
	return in[0], in[1], b, nil
}

// Arity is 2, or 3 with a bias.
func (op Conv) Arity() int { return convArity(op.Bias) }

// Type is a function from x and w of rank len(Strides) + 2 (and a bias of
// rank 1) to a tensor of that rank.
func (op Conv) Type() hm.Type { return convType(len(op.Strides), op.Bias) }

// InferShape returns (N, M, out…).
func (op Conv) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
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
	return c.gridShape(), nil
}

// Do convolves.
func (op Conv) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo convolves, writing into prealloc when it fits.
func (op Conv) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
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
	out := output(prealloc, ts[0].Dtype(), c.gridShape(), ts...)
	if out.Dtype() == tensor.Float32 {
		convForward[float32](out, ts, &c)
	} else {
		convForward[float64](out, ts, &c)
	}
	return out, nil
}

// convForward computes Conv from its operands x, w and maybe a bias.
func convForward[T fp](out *tensor.Dense, ts []*tensor.Dense, c *convDims) {
	y := data[T](out)
	convGrid(y, data[T](ts[0]), data[T](ts[1]), c)
	if len(ts) == 3 {
		addBias(y, data[T](ts[2]), c.geom.gridVol())
	}
}

// WriteHash writes the attributes.
func (op Conv) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Conv) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Conv) String() string {
	return fmt.Sprintf("Conv{strides %v, dilations %v, pads %v %v, %d groups, bias %v}",
		op.Strides, op.Dilations, op.PadsBegin, op.PadsEnd, op.Group, op.Bias)
}

// DiffWRT is true for every input.
func (op Conv) DiffWRT(n int) []bool { return allTrue(n) }

// allTrue is n trues.
func allTrue(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff returns the gradients of x, w and the bias.
func (op Conv) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	var b tensor.Shape
	if len(in) == 3 {
		b = in[2].Shape()
	}
	c, err := op.dims(in[0].Shape(), in[1].Shape(), b)
	if err != nil {
		return nil, err
	}
	return convSymDiff(c, false, op.String(), in, grad)
}

// convSymDiff builds the gradients of a convolution (Conv, or
// ConvTranspose if transposed) of inputs in (x, w, maybe a bias).
func convSymDiff(c convDims, transposed bool, name string, in G.Nodes, grad *G.Node) (G.Nodes, error) {
	mk := func(kind int) convGrad {
		return convGrad{kind: kind, transposed: transposed, dims: c, name: name}
	}
	dx, err := G.ApplyOp(mk(convGradData), grad, in[1])
	if err != nil {
		return nil, err
	}
	dw, err := G.ApplyOp(mk(convGradFilter), in[0], grad)
	if err != nil {
		return nil, err
	}
	ds := G.Nodes{dx, dw}
	if len(in) == 3 {
		db, err := G.ApplyOp(mk(convGradBias), grad)
		if err != nil {
			return nil, err
		}
		ds = append(ds, db)
	}
	return ds, nil
}

// xyShapes returns the shapes of the convolution's input and output.
func (op convGrad) xyShapes() (x, y tensor.Shape) {
	if op.transposed {
		return op.dims.gridShape(), op.dims.imgShape()
	}
	return op.dims.imgShape(), op.dims.gridShape()
}

// shapes returns the expected input shapes and the result shape.
func (op convGrad) shapes() ([]tensor.Shape, tensor.Shape) {
	x, y := op.xyShapes()
	w := op.dims.wShape()
	switch op.kind {
	case convGradData:
		return []tensor.Shape{y, w}, x
	case convGradFilter:
		return []tensor.Shape{x, y}, w
	}
	return []tensor.Shape{y}, tensor.Shape{y[1]}
}

func (op convGrad) Arity() int {
	in, _ := op.shapes()
	return len(in)
}

func (op convGrad) Type() hm.Type {
	in, out := op.shapes()
	r := make([]int, len(in))
	for i, s := range in {
		r[i] = len(s)
	}
	return fnType(len(out), r...)
}

func (op convGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	want, out := op.shapes()
	s, err := inShapes(op, in, len(want))
	if err != nil {
		return nil, err
	}
	for i := range s {
		if !s[i].Eq(want[i]) {
			return nil, fmt.Errorf("nd: %v: input %d of shape %v, want %v", op, i, s[i], want[i])
		}
	}
	return out, nil
}

func (op convGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op convGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	want, s := op.shapes()
	ts, err := operands(op, in, len(want))
	if err != nil {
		return nil, err
	}
	for i, t := range ts {
		if err := checkShape(fmt.Sprintf("input %d", i), t, want[i]); err != nil {
			return nil, fmt.Errorf("nd: %v: %w", op, err)
		}
	}
	out := output(prealloc, ts[0].Dtype(), s, ts...)
	if out.Dtype() == tensor.Float32 {
		convGradRun[float32](op, out, ts)
	} else {
		convGradRun[float64](op, out, ts)
	}
	return out, nil
}

// convGradRun computes a convolution gradient into out.
func convGradRun[T fp](op convGrad, out *tensor.Dense, ts []*tensor.Dense) {
	c := &op.dims
	o, a := data[T](out), data[T](ts[0])
	switch {
	case op.kind == convGradBias && op.transposed:
		channelSums(o, a, c.geom.imgVol())
	case op.kind == convGradBias:
		channelSums(o, a, c.geom.gridVol())
	case op.kind == convGradData && op.transposed:
		convGrid(o, a, data[T](ts[1]), c)
	case op.kind == convGradData:
		convImg(o, a, data[T](ts[1]), c)
	case op.transposed:
		convFilter(o, data[T](ts[1]), a, c)
	default:
		convFilter(o, a, data[T](ts[1]), c)
	}
}

func (op convGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v%+v", op, op.dims) }
func (op convGrad) Hashcode() uint32      { return hashOf(op) }
func (op convGrad) String() string {
	return fmt.Sprintf("%sGrad%d", op.name, op.kind)
}

// convOp is what Conv and ConvTranspose share: their geometry from the
// operands' shapes.
type convOp interface {
	fmt.Stringer
	dims(x, w, b tensor.Shape) (convDims, error)
}

// convDimsOf checks a Conv's or ConvTranspose's operand shapes (x, w and
// maybe a bias) and returns its geometry.
func convDimsOf(op convOp, s []tensor.Shape) (convDims, error) {
	x, w, b, err := convShapes(s)
	if err != nil {
		return convDims{}, fmt.Errorf("nd: %v: %w", op, err)
	}
	return op.dims(x, w, b)
}

// convArity is 2 inputs, or 3 with a bias.
func convArity(bias bool) int {
	if bias {
		return 3
	}
	return 2
}

// convType is a function from x and w of rank spatial + 2 (and a bias of
// rank 1) to a tensor of that rank.
func convType(spatial int, bias bool) hm.Type {
	r := spatial + 2
	if bias {
		return fnType(r, r, r, 1)
	}
	return fnType(r, r, r)
}

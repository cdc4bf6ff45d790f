package onnx

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/layers/nd"
)

func init() {
	for op, h := range map[string]handler{
		"Conv": convHandler, "ConvTranspose": convTransposeHandler,
		"AveragePool": poolHandler(nd.AvgPool), "MaxPool": poolHandler(nd.MaxPool),
		"GlobalAveragePool": globalPool(nd.ReduceMean), "GlobalMaxPool": globalPool(nd.ReduceMax),
		"BatchNormalization": batchNormHandler, "InstanceNormalization": instanceNormHandler,
		"LayerNormalization": layerNormHandler, "Resize": resizeHandler, "Upsample": resizeHandler,
	} {
		handlers[op] = h
	}
}

// window holds the spatial attributes shared by Conv and the pools.
type window struct {
	kernel, strides, dilations, padsBegin, padsEnd []int
}

// windowOf reads kernel_shape (or the weight's), strides, dilations, pads
// and auto_pad for spatial dims in (of the input).
func windowOf(node *Node, in []int, kernel []int) (window, error) {
	n := len(in)
	w := window{kernel: kernel, strides: ones(n), dilations: ones(n), padsBegin: make([]int, n), padsEnd: make([]int, n)}
	if k, ok := nodeInts(node, "kernel_shape"); ok {
		if len(k) != n {
			return w, fmt.Errorf("kernel_shape %v for %d spatial dimensions", k, n)
		}
		w.kernel = toInts(k)
	}
	if len(w.kernel) != n {
		return w, fmt.Errorf("no kernel_shape for %d spatial dimensions", n)
	}
	for _, f := range []struct {
		name string
		dst  *[]int
		want int
	}{{"strides", &w.strides, n}, {"dilations", &w.dilations, n}} {
		if v, ok := nodeInts(node, f.name); ok {
			if len(v) != f.want {
				return w, fmt.Errorf("%s %v for %d spatial dimensions", f.name, v, n)
			}
			*f.dst = toInts(v)
		}
	}
	for i := 0; i < n; i++ {
		if min(w.kernel[i], w.strides[i], w.dilations[i]) < 1 || max(w.kernel[i], w.strides[i], w.dilations[i]) > maxElements {
			return w, fmt.Errorf("kernel %v, strides %v, dilations %v: want sizes from 1 to %d", w.kernel, w.strides, w.dilations, maxElements)
		}
	}
	return w, w.pads(node, in)
}

// pads reads explicit pads or computes auto_pad's.
func (w *window) pads(node *Node, in []int) error {
	n := len(in)
	switch ap := nodeString(node, "auto_pad", "NOTSET"); ap {
	case "NOTSET":
		if p, ok := nodeInts(node, "pads"); ok {
			if len(p) != 2*n {
				return fmt.Errorf("pads %v for %d spatial dimensions", p, n)
			}
			for i := 0; i < n; i++ {
				w.padsBegin[i], w.padsEnd[i] = int(p[i]), int(p[i+n])
				if neg := min(p[i], p[i+n]); neg < 0 { // round 81 A2: said to be a size out of range
					hint := ""
					if strings.HasSuffix(node.OpType, "Pool") {
						hint = "; PyTorch writes them for a pooling with ceil_mode=True at opset 9, which has no ceil_mode attribute: export at opset ≥ 10"
					}
					return fmt.Errorf("pads %v: a negative pad (%d) would crop the input, which ONNX does not allow (ONNX Runtime refuses it too): want pads ≥ 0%s", p, neg, hint)
				}
				if max(p[i], p[i+n]) > maxElements {
					return fmt.Errorf("pads %v: want sizes from 0 to %d", p, maxElements)
				}
			}
		}
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := 0; i < n; i++ {
			out := (in[i] + w.strides[i] - 1) / w.strides[i]
			total := max((out-1)*w.strides[i]+(w.kernel[i]-1)*w.dilations[i]+1-in[i], 0)
			small, big := total/2, total-total/2
			if ap == "SAME_UPPER" {
				w.padsBegin[i], w.padsEnd[i] = small, big
			} else {
				w.padsBegin[i], w.padsEnd[i] = big, small
			}
		}
	default:
		return fmt.Errorf("auto_pad %q", ap)
	}
	return nil
}

func ones(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func convHandler(in *instance, node *Node) ([]*val, error) {
	ins, err := in.inputs(node, 2)
	if err != nil {
		return nil, err
	}
	x, w := ins[0], ins[1]
	if len(x.shape) < 3 || len(w.shape) != len(x.shape) {
		return nil, fmt.Errorf("input %v and weight %v: want (N, C, spatial…) and (M, C/group, kernel…)", x.shape, w.shape)
	}
	win, err := windowOf(node, x.shape[2:], w.shape[2:])
	if err != nil {
		return nil, err
	}
	group := int(nodeInt(node, "group", 1))
	if group < 1 || x.shape[1] != w.shape[1]*group || w.shape[0]%group != 0 {
		return nil, fmt.Errorf("group %d with input channels %d and weight %v", group, x.shape[1], w.shape)
	}
	o := nd.Conv{Strides: win.strides, Dilations: win.dilations, PadsBegin: win.padsBegin, PadsEnd: win.padsEnd, Group: group}
	args := []*val{x, w}
	if b, err := in.optInput(node, 2); err != nil {
		return nil, err
	} else if b != nil {
		args = append(args, b)
	}
	y, err := in.opInferred(o, x.elem, args...)
	return []*val{y}, err
}

func convTransposeHandler(in *instance, node *Node) ([]*val, error) {
	ins, err := in.inputs(node, 2)
	if err != nil {
		return nil, err
	}
	x, w := ins[0], ins[1]
	if len(x.shape) < 3 || len(w.shape) != len(x.shape) {
		return nil, fmt.Errorf("input %v and weight %v: want (N, C, spatial…) and (C, M/group, kernel…)", x.shape, w.shape)
	}
	if _, ok := nodeInts(node, "output_shape"); ok {
		return nil, notSupported("the output_shape attribute is not supported: export with explicit pads")
	}
	if ap := nodeString(node, "auto_pad", "NOTSET"); ap != "NOTSET" && ap != "VALID" {
		return nil, notSupported("auto_pad %s is not supported for ConvTranspose: export with explicit pads", ap)
	}
	win, err := windowOf(node, x.shape[2:], w.shape[2:])
	if err != nil {
		return nil, err
	}
	group := int(nodeInt(node, "group", 1))
	if group < 1 || x.shape[1] != w.shape[0] || w.shape[0]%group != 0 {
		return nil, fmt.Errorf("group %d with input channels %d and weight %v", group, x.shape[1], w.shape)
	}
	outPad := make([]int, len(win.kernel))
	if p, ok := nodeInts(node, "output_padding"); ok {
		if len(p) != len(outPad) || slices.Min(p) < 0 || slices.Max(p) > maxElements {
			return nil, fmt.Errorf("output_padding %v: want %d sizes from 0 to %d", p, len(outPad), maxElements)
		}
		outPad = toInts(p)
	}
	o := nd.ConvTranspose{Strides: win.strides, Dilations: win.dilations, PadsBegin: win.padsBegin, PadsEnd: win.padsEnd, OutputPadding: outPad, Group: group}
	args := []*val{x, w}
	if b, err := in.optInput(node, 2); err != nil {
		return nil, err
	} else if b != nil {
		args = append(args, b)
	}
	y, err := in.opInferred(o, x.elem, args...)
	return []*val{y}, err
}

func poolHandler(kind nd.PoolKind) handler {
	return func(in *instance, node *Node) ([]*val, error) {
		x, err := in.input(node, 0)
		if err != nil {
			return nil, err
		}
		if len(x.shape) < 3 {
			return nil, fmt.Errorf("input %v, want (N, C, spatial…)", x.shape)
		}
		win, err := windowOf(node, x.shape[2:], nil)
		if err != nil {
			return nil, err
		}
		o := nd.Pool{Kind: kind, Kernel: win.kernel, Strides: win.strides, Dilations: win.dilations,
			PadsBegin: win.padsBegin, PadsEnd: win.padsEnd,
			CountIncludePad: nodeInt(node, "count_include_pad", 0) != 0, CeilMode: nodeInt(node, "ceil_mode", 0) != 0}
		y, err := in.opInferred(o, x.elem, x)
		// The Indices output is an error only where read (round 77 A1:
		// PyTorch 2's exporter names it, and nothing reads it).
		return []*val{y, {err: notSupported("the Indices output of MaxPool is not supported")}}, err
	}
}

func globalPool(kind nd.ReduceKind) handler {
	return func(in *instance, node *Node) ([]*val, error) {
		x, err := in.input(node, 0)
		if err != nil {
			return nil, err
		}
		if len(x.shape) < 3 {
			return nil, fmt.Errorf("input %v, want (N, C, spatial…)", x.shape)
		}
		var axes []int64
		for i := 2; i < len(x.shape); i++ {
			axes = append(axes, int64(i))
		}
		// GlobalMaxPool's gradient goes to the first of tied maxima, as
		// PyTorch's adaptive_max_pool (round 79 A4: split among them).
		y, err := in.reduceBy(nd.Reduce{Kind: kind, KeepDims: true, FirstTie: kind == nd.ReduceMax}, x, axes)
		return []*val{y}, err
	}
}

// channelShape is the shape that broadcasts a per-channel vector over
// (N, C, spatial…).
func channelShape(x *val) []int {
	s := make([]int, len(x.shape)-1)
	for i := range s {
		s[i] = 1
	}
	s[0] = x.shape[1]
	return s
}

// affine is y·scale + bias with per-channel (C) scale and bias.
func (in *instance) affine(y *val, scale, bias *val, shape []int) (*val, error) {
	var err error
	for i, p := range []*val{scale, bias} {
		if p == nil {
			continue
		}
		if sizeOf(p.shape) != sizeOf(shape) {
			return nil, fmt.Errorf("parameter of shape %v for %v channels", p.shape, shape)
		}
		if p, err = in.reshape(p, shape); err != nil {
			return nil, err
		}
		kind := nd.Mul
		if i == 1 {
			kind = nd.Add
		}
		if y, err = in.binary(kind, y, p); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// batchNormHandler is BatchNormalization in inference mode: the running
// mean and variance are constants (not parameters), scale and bias are
// parameters.
func batchNormHandler(in *instance, node *Node) ([]*val, error) {
	// Before opset 14 a node in training mode is one with the running
	// statistics' outputs (round 76 A3: torch.onnx.export(...,
	// training=TrainingMode.TRAINING) at opsets 9 to 13 was computed with
	// the running statistics, silently).
	statistics := slices.ContainsFunc(node.Outputs[min(1, len(node.Outputs)):], func(o string) bool { return o != "" })
	if nodeInt(node, "training_mode", 0) != 0 || statistics && in.net.Opset < 14 {
		what := "training_mode 1"
		if in.net.Opset < 14 {
			what = fmt.Sprintf("%d outputs, which at opset %d mark training mode (the batch's statistics and the running ones updated)", len(node.Outputs), in.net.Opset)
		}
		return nil, notSupported("%s: the layer normalises by the statistics of its batch, which mixes the points of a batch: export the model in eval() mode, with running statistics (a BatchNorm made with track_running_stats=False, or F.batch_norm(..., training=True), uses the batch's in eval() mode too: give it running statistics, or use a per-sample norm: GroupNorm, LayerNorm)", what)
	}
	if statistics {
		return nil, notSupported("the running-statistics outputs are not supported: export in eval() mode")
	}
	ins, err := in.inputs(node, 3)
	if err != nil {
		return nil, err
	}
	x, scale, bias := ins[0], ins[1], ins[2]
	if len(x.shape) < 2 {
		return nil, fmt.Errorf("input %v, want (N, C, …)", x.shape)
	}
	mean, err := in.constInput(node, 3)
	if err != nil {
		return computedStatsNorm(in, node, x, scale, bias)
	}
	variance, err := in.constInput(node, 4)
	if err != nil {
		return computedStatsNorm(in, node, x, scale, bias)
	}
	c := x.shape[1]
	if sizeOf(mean.shape) != c || sizeOf(variance.shape) != c {
		return nil, fmt.Errorf("mean %v and variance %v for %d channels", mean.shape, variance.shape, c)
	}
	eps := nodeFloat(node, "epsilon", 1e-5)
	inv := make([]float64, c)
	for i, v := range variance.c.Data().([]float64) {
		inv[i] = 1 / math.Sqrt(v+eps)
	}
	shape := channelShape(x)
	y, err := in.binary(nd.Sub, x, constVal(shape, TypeDouble, mean.c.Data().([]float64)))
	if err != nil {
		return nil, err
	}
	if y, err = in.binary(nd.Mul, y, constVal(shape, TypeDouble, inv)); err != nil {
		return nil, err
	}
	y, err = in.affine(y, scale, bias, shape)
	return []*val{y}, err
}

// computedStatsNorm is BatchNormalization whose mean and variance are
// computed in the graph rather than stored: InstanceNorm2d with
// track_running_stats=True exports, in eval() mode, its running
// statistics tiled over the batch (probe 57: refused as depending "on the
// input or on parameters"). y = (x − mean)/√(var + ε)·scale + bias.
func computedStatsNorm(in *instance, node *Node, x, scale, bias *val) ([]*val, error) {
	ins, err := in.inputs(node, 5)
	if err != nil {
		return nil, err
	}
	mean, variance := ins[3], ins[4]
	shape := channelShape(x)
	c := x.shape[1]
	if sizeOf(mean.shape) != c || sizeOf(variance.shape) != c {
		return nil, fmt.Errorf("mean %v and variance %v for %d channels", mean.shape, variance.shape, c)
	}
	if mean, err = in.reshape(mean, shape); err != nil {
		return nil, err
	}
	if variance, err = in.reshape(variance, shape); err != nil {
		return nil, err
	}
	sd, err := in.binary(nd.Add, variance, constVal(nil, TypeDouble, []float64{nodeFloat(node, "epsilon", 1e-5)}))
	if err != nil {
		return nil, err
	}
	if sd, err = in.op(nd.Unary{Fn: nd.Sqrt}, sd.shape, sd.elem, sd); err != nil {
		return nil, err
	}
	y, err := in.binary(nd.Sub, x, mean)
	if err != nil {
		return nil, err
	}
	if y, err = in.binary(nd.Div, y, sd); err != nil {
		return nil, err
	}
	y, err = in.affine(y, scale, bias, shape)
	return []*val{y}, err
}

// normalize is (x − mean)/√(var + ε) over axes, with the biased variance.
func (in *instance) normalize(x *val, axes []int64, eps float64) (*val, error) {
	mean, err := in.reduce(nd.ReduceMean, x, axes, true)
	if err != nil {
		return nil, err
	}
	d, err := in.binary(nd.Sub, x, mean)
	if err != nil {
		return nil, err
	}
	sq, err := in.binary(nd.Mul, d, d)
	if err != nil {
		return nil, err
	}
	v, err := in.reduce(nd.ReduceMean, sq, axes, true)
	if err != nil {
		return nil, err
	}
	if v, err = in.binary(nd.Add, v, scalar(eps)); err != nil {
		return nil, err
	}
	if v, err = in.op(nd.Unary{Fn: nd.Sqrt}, v.shape, v.elem, v); err != nil {
		return nil, err
	}
	return in.binary(nd.Div, d, v)
}

func instanceNormHandler(in *instance, node *Node) ([]*val, error) {
	ins, err := in.inputs(node, 3)
	if err != nil {
		return nil, err
	}
	x, scale, bias := ins[0], ins[1], ins[2]
	if len(x.shape) < 3 {
		return nil, fmt.Errorf("input %v, want (N, C, spatial…)", x.shape)
	}
	var axes []int64
	for i := 2; i < len(x.shape); i++ {
		axes = append(axes, int64(i))
	}
	y, err := in.normalize(x, axes, nodeFloat(node, "epsilon", 1e-5))
	if err != nil {
		return nil, err
	}
	y, err = in.affine(y, scale, bias, channelShape(x))
	return []*val{y}, err
}

// layerNormHandler is LayerNormalization (opset 17): normalisation over
// the axes from axis on, then Scale and optional B broadcast.
func layerNormHandler(in *instance, node *Node) ([]*val, error) {
	x, err := in.input(node, 0)
	if err != nil {
		return nil, err
	}
	ax, err := axis(nodeInt(node, "axis", -1), len(x.shape))
	if err != nil {
		return nil, err
	}
	var axes []int64
	for i := ax; i < len(x.shape); i++ {
		axes = append(axes, int64(i))
	}
	y, err := in.normalize(x, axes, nodeFloat(node, "epsilon", 1e-5))
	if err != nil {
		return nil, err
	}
	// PyTorch 1.13 writes nn.LayerNorm(elementwise_affine=False) at
	// opset 17 with an empty Scale (invalid ONNX, which its checker
	// names): no scale, as the module meant (probe 67 A3).
	scale, err := in.optInput(node, 1)
	if err != nil {
		return nil, err
	}
	if scale != nil {
		if y, err = in.binary(nd.Mul, y, scale); err != nil {
			return nil, err
		}
	}
	if b, err := in.optInput(node, 2); err != nil {
		return nil, err
	} else if b != nil {
		if y, err = in.binary(nd.Add, y, b); err != nil {
			return nil, err
		}
	}
	// Mean and InvStdDev are errors only where read (round 77 A1: PyTorch
	// 2's exporter names them, and nothing reads them).
	stat := &val{err: notSupported("the Mean and InvStdDev outputs of LayerNormalization are not supported")}
	return []*val{y, stat, stat}, nil
}

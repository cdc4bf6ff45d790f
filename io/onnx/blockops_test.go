package onnx

import (
	"strings"
	"testing"
)

// DepthToSpace and SpaceToDepth with a blocksize that does not divide
// the input, a missing or bad blocksize, a bad mode, or an input not of
// rank 4 are refused, naming the node and what was expected.
func TestBlockOpRefusals(t *testing.T) {
	var crd, bad msg
	crd.str(4, "CRD")
	bad.str(4, "XYZ")
	for _, c := range []struct {
		name  string
		op    string
		shape []any
		attrs []msg
		want  string
	}{
		{"channels", "DepthToSpace", []any{"batch", 6, 2, 2}, []msg{intAttr("blocksize", 2).encode()}, "6 channels are not a multiple of blocksize² = 4"},
		{"no blocksize", "DepthToSpace", []any{"batch", 8, 2, 2}, nil, `attribute "blocksize" (int) is required`},
		{"blocksize 0", "DepthToSpace", []any{"batch", 8, 2, 2}, []msg{intAttr("blocksize", 0).encode()}, "blocksize 0: want a positive size"},
		{"mode", "DepthToSpace", []any{"batch", 8, 2, 2}, []msg{intAttr("blocksize", 2).encode(), mdAttr("mode", AttrString, bad)}, `mode "XYZ": want DCR or CRD`},
		{"rank", "DepthToSpace", []any{"batch", 8, 4}, []msg{intAttr("blocksize", 2).encode(), mdAttr("mode", AttrString, crd)}, "want rank 4 (N, C, H, W)"},
		{"space", "SpaceToDepth", []any{"batch", 2, 3, 4}, []msg{intAttr("blocksize", 2).encode()}, "height 3 and width 4 must be multiples of blocksize 2"},
	} {
		b := newBuilder(typeDouble, nil)
		y := b.nodeAttrs(c.op, []string{"x"}, c.attrs...)
		axes := b.int64s("axes", 1, 2, 3)
		if len(c.shape) == 3 {
			axes = b.int64s("axes", 1, 2)
		}
		b.rename(b.node("ReduceSum", []string{y, axes}, intAttr("keepdims", 0)), "energy")
		g := b.graph("g", []msg{valueInfo("x", typeDouble, c.shape...)}, []msg{valueInfo("energy", typeDouble, "batch")})
		_, err := Decode(modelWithOpset(g, 13), "m.onnx")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "m.onnx") || !strings.Contains(err.Error(), c.op) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// Probe 59: an input whose feature axis is dynamic (dynamic_axes={'x':
// [0, 1]}) is refused saying that only the batch may be, and how to export.
func TestDynamicFeatureAxis(t *testing.T) {
	b := newBuilder(typeDouble, nil)
	b.rename(b.node("ReduceSum", []string{"x", b.int64s("axes", 1)}, intAttr("keepdims", 0)), "energy")
	g := b.graph("g", []msg{valueInfo("x", typeDouble, "batch", "d")}, []msg{valueInfo("energy", typeDouble, "batch")})
	_, err := Decode(modelWithOpset(g, 13), "m.onnx")
	if err == nil || !strings.Contains(err.Error(), `m.onnx: input "x" has shape (batch, d): dimension 1 is not a known positive size: flowebm takes the batch dimension (0) as the only dynamic one; export with dynamic_axes={"x": {0: "batch"}}`) {
		t.Errorf("%v", err)
	}
}

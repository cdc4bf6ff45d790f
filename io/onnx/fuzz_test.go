package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// No input makes Decode panic, and what it accepts builds an EBM that
// evaluates a batch without error.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	net := graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: []int{2, 4, 1}, Hidden: layers.Tanh, Layout: layers.Sequential}}
	ebm, err := graph.NewEBM(net, nil, tensor.Float64, rng)
	if err != nil {
		f.Fatal(err)
	}
	b, err := EBM(ebm, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if t, err := os.ReadFile("testdata/torch/relu_f32.onnx"); err == nil {
		f.Add(t)
	}
	f.Add([]byte{0x08, 0x07, 0x3a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Decode(b, "fuzz.onnx")
		if err != nil {
			return
		}
		e, err := graph.NewEBM(n, nil, n.Dtype, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			return
		}
		x := mat.NewDense(2, n.Dim(), nil)
		out := make([]float64, 2)
		_ = e.Energy(x, out)
	})
}

// intsAttr encodes an INTS attribute.
func intsAttr(name string, v ...int64) msg {
	var m msg
	m.str(1, name)
	for _, x := range v {
		m.varint(8, x)
	}
	m.varint(20, 7)
	return m
}

// shapeProgram builds a model from fuzz bytes: x (batch, 2, 3) goes
// through a sequence of shape operators (Shape/Gather/Concat/Reshape,
// Slice, Squeeze/Unsqueeze, Transpose, Flatten, Expand, Tile, Pad) whose
// constants come from the bytes, and a ReduceSum to the output.
func shapeProgram(b []byte) []byte {
	bld := newBuilder(typeDouble, nil)
	next := func() int64 {
		if len(b) == 0 {
			return 0
		}
		v := int64(int8(b[0]))
		b = b[1:]
		return v
	}
	ints := func(name string, k int) string {
		v := make([]int, k)
		for i := range v {
			v[i] = int(next())
		}
		return bld.int64s(name, v...)
	}
	cur := "x"
	for step := 0; len(b) > 0 && step < 8; step++ {
		tag := fmt.Sprint(step)
		switch next() & 15 {
		case 0: // x.view(x.size(0), -1)
			s := bld.node("Shape", []string{cur})
			g := bld.node("Gather", []string{s, bld.int64s("i0"+tag, int(next()))}, intAttr("axis", 0))
			u := bld.node("Unsqueeze", []string{g, bld.int64s("a0"+tag, 0)})
			c := bld.node("Concat", []string{u, bld.int64s("m1"+tag, -1)}, intAttr("axis", 0))
			cur = bld.node("Reshape", []string{cur, c})
		case 1:
			cur = bld.node("Slice", []string{cur, ints("s"+tag, 1), ints("e"+tag, 1), ints("ax"+tag, 1), ints("st"+tag, 1)})
		case 2:
			cur = bld.node("Unsqueeze", []string{cur, ints("u"+tag, 1)})
		case 3:
			cur = bld.node("Squeeze", []string{cur, ints("q"+tag, 1)})
		case 4:
			cur = bld.nodeMsg("Transpose", []string{cur}, intsAttr("perm", next(), next(), next()))
		case 5:
			cur = bld.node("Flatten", []string{cur}, intAttr("axis", next()))
		case 6:
			cur = bld.node("Expand", []string{cur, ints("x"+tag, int(next()&3))})
		case 7:
			cur = bld.node("Tile", []string{cur, ints("t"+tag, int(next()&3))})
		case 8:
			cur = bld.node("Pad", []string{cur, ints("p"+tag, int(next()&7))})
		case 9:
			cur = bld.node("Reshape", []string{cur, ints("r"+tag, int(next()&3))})
		default:
			cur = bld.node("Concat", []string{cur, cur}, intAttr("axis", next()))
		}
	}
	sum := bld.node("ReduceSum", []string{cur, bld.int64s("all", 1, 2)}, intAttr("keepdims", 0))
	bld.rename(sum, "energy")
	return model(bld.graph("g", []msg{valueInfo("x", typeDouble, "batch", 2, 3)}, []msg{valueInfo("energy", typeDouble, "batch")}), "")
}

// Shape folding never panics: any program of shape operators either
// loads, and then evaluates at batch sizes 1 and 3 with finite energies,
// or is refused with an error naming a node or the model.
func FuzzShapeFolding(f *testing.F) {
	f.Add([]byte{0, 0})
	f.Add([]byte{1, 0, 1, 1, 1, 2, 2, 0, 3, 0})
	f.Add([]byte{4, 0, 2, 1, 5, 1, 6, 2, 1, 1})
	f.Add([]byte{8, 6, 0, 1, 0, 0, 1, 0, 7, 3, 1, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := shapeProgram(b)
		n, err := Decode(m, "fuzz.onnx")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.onnx: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		e, err := graph.NewEBM(n, nil, n.Dtype, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			return
		}
		for _, bs := range []int{1, 3} {
			x := mat.NewDense(bs, n.Dim(), nil)
			for i := range x.RawMatrix().Data {
				x.RawMatrix().Data[i] = float64(i)
			}
			out := make([]float64, bs)
			if err := e.Energy(x, out); err != nil {
				if strings.Contains(err.Error(), "internal error") {
					t.Fatal(err)
				}
				continue
			}
			for _, v := range out {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("energy %v", out)
				}
			}
		}
	})
}

// nodeMsg is node with attributes already encoded.
func (b *builder) nodeMsg(op string, inputs []string, attrs ...msg) string {
	out := b.node(op, inputs)
	m := b.nodes[len(b.nodes)-1]
	for _, a := range attrs {
		m.bytes(5, a)
	}
	b.nodes[len(b.nodes)-1] = m
	return out
}

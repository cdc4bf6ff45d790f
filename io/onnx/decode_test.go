package onnx

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	onnxgo "github.com/owulveryck/onnx-go"
	gograph "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gorgonia.org/tensor"
)

// tensorRecorder is an onnx-go backend that keeps the tensors onnx-go
// decodes, by node name: a second, independent decoder to check ours.
type tensorRecorder struct {
	*simple.WeightedDirectedGraph
	nodes []*recordedNode
}

type recordedNode struct {
	id    int64
	name  string
	value tensor.Tensor
}

func (r *recordedNode) ID() int64                       { return r.id }
func (r *recordedNode) SetName(s string)                { r.name = s }
func (r *recordedNode) GetName() string                 { return r.name }
func (r *recordedNode) SetTensor(t tensor.Tensor) error { r.value = t; return nil }
func (r *recordedNode) GetTensor() tensor.Tensor        { return r.value }

func (r *tensorRecorder) NewNode() gograph.Node {
	return &recordedNode{id: r.WeightedDirectedGraph.NewNode().ID()}
}

func (r *tensorRecorder) AddNode(n gograph.Node) {
	r.WeightedDirectedGraph.AddNode(n)
	r.nodes = append(r.nodes, n.(*recordedNode))
}

func (r *tensorRecorder) ApplyOperation(onnxgo.Operation, ...gograph.Node) error { return nil }

// DecodeModel reads PyTorch's exports with the same initializers, shapes
// and values as onnx-go v0.5.0's decoder, and the graph's inputs,
// outputs and opset as written.
func TestDecodeModelAgreesWithOnnxGo(t *testing.T) {
	files, _ := filepath.Glob("testdata/torch/*.onnx")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := DecodeModel(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rec := &tensorRecorder{WeightedDirectedGraph: simple.NewWeightedDirectedGraph(-1, -1)}
		if err := onnxgo.NewModel(rec).UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: onnx-go: %v", f, err)
		}
		theirs := map[string]tensor.Tensor{}
		for _, n := range rec.nodes {
			if n.value != nil {
				theirs[n.name] = n.value
			}
		}
		if len(m.Graph.Initializers) == 0 || m.Opsets[""] < 9 || len(m.Graph.Inputs) == 0 || len(m.Graph.Outputs) != 1 {
			t.Errorf("%s: %d initializers, opset %d, %d inputs, %d outputs", f, len(m.Graph.Initializers), m.Opsets[""], len(m.Graph.Inputs), len(m.Graph.Outputs))
		}
		for _, init := range m.Graph.Initializers {
			tt, ok := theirs[init.Name]
			if !ok {
				t.Errorf("%s: initializer %q unknown to onnx-go", f, init.Name)
				continue
			}
			if got, want := tt.Shape().TotalSize(), init.Len(); got != want {
				t.Errorf("%s: %q has %d values in onnx-go, %d here", f, init.Name, got, want)
				continue
			}
			compareValues(t, f+": "+init.Name, init, tt)
		}
	}
}

func compareValues(t *testing.T, what string, ours *Tensor, theirs tensor.Tensor) {
	t.Helper()
	var want []float64
	switch d := theirs.Data().(type) {
	case []float32:
		for _, v := range d {
			want = append(want, float64(v))
		}
	case []float64:
		want = d
	case []int64:
		for _, v := range d {
			want = append(want, float64(v))
		}
	default:
		t.Errorf("%s: onnx-go data %T", what, d)
		return
	}
	got := ours.Float
	if got == nil {
		got = int64sToFloats(ours.Int)
	}
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("%s[%d] = %v, onnx-go %v", what, i, got[i], want[i])
			return
		}
	}
}

// tensorMsg encodes a TensorProto with the given fields.
func tensorMsg(name string, dtype int64, dims []int64, extra func(m *msg)) msg {
	var m msg
	for _, d := range dims {
		m.varint(1, d)
	}
	m.varint(2, dtype)
	m.str(8, name)
	if extra != nil {
		extra(&m)
	}
	return m
}

func graphWithInit(t msg) []byte {
	var g msg
	g.bytes(5, t)
	return modelWithOpset(g, 14)
}

// Tensors in every encoding decode to their values; tensors that lie
// about their size, use external data or ask for too much are refused
// with their name, before anything is allocated.
func TestDecodeTensors(t *testing.T) {
	half := func(m *msg) { m.bytes(9, []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c}) } // 1, −2, +Inf
	floats := func(m *msg) {
		for _, v := range []float32{0.5, -1.5} {
			m.float32(4, v)
		}
	}
	bools := func(m *msg) { m.bytes(9, []byte{0, 1, 7}) }
	ok := []struct {
		name string
		t    msg
		want []float64
	}{
		{"float16 raw", tensorMsg("h", 10, []int64{3}, half), []float64{1, -2, math.Inf(1)}},
		{"float_data unpacked", tensorMsg("f", 1, []int64{2}, floats), []float64{0.5, -1.5}},
		{"0-d double", tensorMsg("s", 11, nil, func(m *msg) { m.bytes(9, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) }), []float64{1}},
		{"bool raw", tensorMsg("b", 9, []int64{3}, bools), []float64{0, 1, 1}},
		{"int64_data", tensorMsg("i", 7, []int64{2}, func(m *msg) { m.varint(7, 5); m.varint(7, -3) }), []float64{5, -3}},
	}
	for _, c := range ok {
		m, err := DecodeModel(graphWithInit(c.t))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		tt := m.Graph.Initializers[0]
		got := tt.Float
		if got == nil {
			got = int64sToFloats(tt.Int)
		}
		if tt.Len() != len(c.want) || len(got) != len(c.want) {
			t.Errorf("%s: %d values, want %d", c.name, len(got), len(c.want))
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
	bad := []struct {
		name string
		t    msg
		want string
	}{
		{"lying dims", tensorMsg("w", 1, []int64{3, 4}, func(m *msg) { m.bytes(9, make([]byte, 12)) }), `initializer "w": raw_data has 12 bytes, dims [3 4] of float need 48`},
		{"huge dims", tensorMsg("big", 1, []int64{1 << 20, 1 << 20}, nil), `initializer "big": dims [1048576 1048576]: more than 268435456 elements`},
		{"negative dims", tensorMsg("neg", 1, []int64{-2}, nil), `initializer "neg": negative dimension`},
		{"external", tensorMsg("ext", 1, []int64{2}, func(m *msg) { m.varint(14, 1) }), `initializer "ext": external data is not supported`},
		{"string", tensorMsg("str", 8, []int64{1}, nil), `initializer "str": tensors of type string are not supported`},
		{"too few floats", tensorMsg("few", 1, []int64{3}, floats), `initializer "few": float_data has 2 values, dims [3] need 3`},
	}
	for _, c := range bad {
		_, err := DecodeModel(graphWithInit(c.t))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	for _, b := range [][]byte{nil, {0x3a}, {0x3a, 0x05, 0x0a}, []byte("not a model at all")} {
		if _, err := DecodeModel(b); err == nil {
			t.Errorf("%q decoded", b)
		}
	}
}

// No input makes DecodeModel panic or return a tensor whose values do
// not match its dimensions.
func FuzzDecodeModel(f *testing.F) {
	files, _ := filepath.Glob("testdata/torch/*_f32.onnx")
	for _, p := range files[:min(len(files), 4)] {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(graphWithInit(tensorMsg("h", 10, []int64{3}, func(m *msg) { m.bytes(9, []byte{0, 0x3c, 0, 0xc0, 0, 0x7c}) })))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeModel(b)
		if err != nil {
			return
		}
		for _, tt := range m.Graph.Initializers {
			if n := len(tt.Float) + len(tt.Int); n != tt.Len() {
				t.Fatalf("%q: %d values for dims %v", tt.Name, n, tt.Dims)
			}
		}
	})
}

package onnx

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	onnxgo "github.com/owulveryck/onnx-go"
	gograph "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"google.golang.org/protobuf/encoding/protowire"
	"gorgonia.org/tensor"
)

// The golden decodings in testdata/decode/golden.json are written by
// testdata/decode/make_golden.py with onnx 1.12's protobuf classes and
// numpy_helper, an independent decoder.

// mdFloat is a golden float: a JSON number, or "NaN", "Inf", "-Inf".
type mdFloat float64

func (f *mdFloat) UnmarshalJSON(b []byte) error {
	if s, err := strconv.Unquote(string(b)); err == nil {
		v, err := strconv.ParseFloat(s, 64)
		*f = mdFloat(v)
		return err
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*f = mdFloat(v)
	return err
}

type mdGoldenModel struct {
	IRVersion       int64            `json:"ir_version"`
	Opsets          map[string]int64 `json:"opsets"`
	ProducerName    string           `json:"producer_name"`
	ProducerVersion string           `json:"producer_version"`
	GraphName       string           `json:"graph_name"`
	Inputs          []mdGoldenValue  `json:"inputs"`
	Outputs         []mdGoldenValue  `json:"outputs"`
	ValueInfo       []mdGoldenValue  `json:"value_info"`
	Nodes           []mdGoldenNode   `json:"nodes"`
	Initializers    []mdGoldenTensor `json:"initializers"`
}

type mdGoldenValue struct {
	Name     string   `json:"name"`
	ElemType DataType `json:"elem_type"`
	HasShape bool     `json:"has_shape"`
	Shape    []Dim    `json:"shape"`
}

type mdGoldenNode struct {
	Name    string                  `json:"name"`
	OpType  string                  `json:"op_type"`
	Domain  string                  `json:"domain"`
	Inputs  []string                `json:"inputs"`
	Outputs []string                `json:"outputs"`
	Attrs   map[string]mdGoldenAttr `json:"attrs"`
}

type mdGoldenAttr struct {
	Type     AttrType        `json:"type"`
	F        mdFloat         `json:"f"`
	I        int64           `json:"i"`
	S        string          `json:"s"`
	T        *mdGoldenTensor `json:"t"`
	Floats   []mdFloat       `json:"floats"`
	Ints     []int64         `json:"ints"`
	Strings  []string        `json:"strings"`
	HasGraph bool            `json:"has_graph"`
}

// mdGoldenTensor summarises a tensor: sequential sums (Σv, Σ(i+1)v) and
// the leading values (all of them for edge.onnx).
type mdGoldenTensor struct {
	Name     string    `json:"name"`
	Dims     []int64   `json:"dims"`
	DataType DataType  `json:"data_type"`
	Len      int       `json:"len"`
	Sum      *mdFloat  `json:"sum"`
	WSum     *mdFloat  `json:"wsum"`
	Values   []mdFloat `json:"values"`
	ISum     *int64    `json:"isum"`
	IValues  []int64   `json:"ivalues"`
}

// mdSame compares floats bit for bit, NaNs of any payload alike.
func mdSame(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

func TestDecodeModelGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/decode/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden map[string]mdGoldenModel
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden) < 3 {
		t.Fatalf("golden.json has %d models", len(golden))
	}
	for file, want := range golden {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata", file)
			if file == "edge.onnx" {
				path = filepath.Join("testdata/decode", file)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := DecodeModel(b)
			if err != nil {
				t.Fatal(err)
			}
			mdCompareModel(t, m, &want)
		})
	}
}

func mdCompareModel(t *testing.T, m *Model, want *mdGoldenModel) {
	t.Helper()
	if m.IRVersion != want.IRVersion || m.ProducerName != want.ProducerName || m.ProducerVersion != want.ProducerVersion {
		t.Errorf("model (%d, %q, %q), want (%d, %q, %q)", m.IRVersion, m.ProducerName, m.ProducerVersion, want.IRVersion, want.ProducerName, want.ProducerVersion)
	}
	if !reflect.DeepEqual(m.Opsets, want.Opsets) {
		t.Errorf("opsets %v, want %v", m.Opsets, want.Opsets)
	}
	g := m.Graph
	if g.Name != want.GraphName {
		t.Errorf("graph name %q, want %q", g.Name, want.GraphName)
	}
	mdCompareValues(t, "input", g.Inputs, want.Inputs)
	mdCompareValues(t, "output", g.Outputs, want.Outputs)
	mdCompareValues(t, "value_info", g.ValueInfo, want.ValueInfo)
	if len(g.Nodes) != len(want.Nodes) {
		t.Fatalf("%d nodes, want %d", len(g.Nodes), len(want.Nodes))
	}
	for i, nd := range g.Nodes {
		mdCompareNode(t, nd, i, &want.Nodes[i])
	}
	if len(g.Initializers) != len(want.Initializers) {
		t.Fatalf("%d initializers, want %d", len(g.Initializers), len(want.Initializers))
	}
	for i, init := range g.Initializers {
		mdCompareTensor(t, "initializer "+init.Name, init, &want.Initializers[i])
	}
}

func mdCompareValues(t *testing.T, role string, got []*ValueInfo, want []mdGoldenValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d %ss, want %d", len(got), role, len(want))
		return
	}
	for i, v := range got {
		w := want[i]
		if v.Name != w.Name || v.ElemType != w.ElemType || v.HasShape != w.HasShape || len(v.Shape) != len(w.Shape) {
			t.Errorf("%s %d: %+v, want %+v", role, i, *v, w)
			continue
		}
		for j := range v.Shape {
			if v.Shape[j] != w.Shape[j] {
				t.Errorf("%s %q dim %d: %+v, want %+v", role, v.Name, j, v.Shape[j], w.Shape[j])
			}
		}
	}
}

func mdCompareNode(t *testing.T, nd *Node, i int, want *mdGoldenNode) {
	t.Helper()
	if nd.Index != i || nd.Name != want.Name || nd.OpType != want.OpType || nd.Domain != want.Domain ||
		!mdSameStrings(nd.Inputs, want.Inputs) || !mdSameStrings(nd.Outputs, want.Outputs) {
		t.Errorf("node %d: %q %s %q %q→%q, want %q %s %q %q→%q", i, nd.Name, nd.OpType, nd.Domain, nd.Inputs, nd.Outputs,
			want.Name, want.OpType, want.Domain, want.Inputs, want.Outputs)
	}
	if len(nd.Attrs) != len(want.Attrs) {
		t.Errorf("node %d: %d attributes, want %d", i, len(nd.Attrs), len(want.Attrs))
	}
	for name, w := range want.Attrs {
		a := nd.Attrs[name]
		if a == nil {
			t.Errorf("node %d: no attribute %q", i, name)
			continue
		}
		mdCompareAttr(t, fmt.Sprintf("node %d attribute %q", i, name), a, &w)
	}
}

// mdSameStrings compares string lists, nil and empty alike.
func mdSameStrings(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func mdCompareAttr(t *testing.T, where string, a *Attribute, w *mdGoldenAttr) {
	t.Helper()
	if a.Type != w.Type || a.HasGraph != w.HasGraph {
		t.Errorf("%s: type %v graph %v, want %v %v", where, a.Type, a.HasGraph, w.Type, w.HasGraph)
	}
	switch a.Type {
	case AttrFloat:
		if !mdSame(float64(a.F), float64(w.F)) {
			t.Errorf("%s: f %v, want %v", where, a.F, w.F)
		}
	case AttrInt:
		if a.I != w.I {
			t.Errorf("%s: i %v, want %v", where, a.I, w.I)
		}
	case AttrString:
		if string(a.S) != w.S {
			t.Errorf("%s: s %q, want %q", where, a.S, w.S)
		}
	case AttrTensor:
		mdCompareTensor(t, where, a.T, w.T)
	case AttrFloats:
		ok := len(a.Floats) == len(w.Floats)
		for i := 0; ok && i < len(a.Floats); i++ {
			ok = mdSame(float64(a.Floats[i]), float64(w.Floats[i]))
		}
		if !ok {
			t.Errorf("%s: floats %v, want %v", where, a.Floats, w.Floats)
		}
	case AttrInts:
		if len(a.Ints) != len(w.Ints) || (len(a.Ints) > 0 && !reflect.DeepEqual(a.Ints, w.Ints)) {
			t.Errorf("%s: ints %v, want %v", where, a.Ints, w.Ints)
		}
	case AttrStrings:
		var got []string
		for _, s := range a.Strings {
			got = append(got, string(s))
		}
		if !mdSameStrings(got, w.Strings) {
			t.Errorf("%s: strings %q, want %q", where, got, w.Strings)
		}
	}
}

func mdCompareTensor(t *testing.T, where string, got *Tensor, w *mdGoldenTensor) {
	t.Helper()
	if got == nil || w == nil {
		t.Errorf("%s: tensor %v, want %v", where, got, w)
		return
	}
	if got.Name != w.Name || got.DataType != w.DataType || got.Len() != w.Len || len(got.Dims) != len(w.Dims) ||
		(len(w.Dims) > 0 && !reflect.DeepEqual(got.Dims, w.Dims)) {
		t.Errorf("%s: %q %v dims %v len %d, want %q %v %v %d", where, got.Name, got.DataType, got.Dims, got.Len(), w.Name, w.DataType, w.Dims, w.Len)
	}
	if w.ISum != nil {
		mdCompareInts(t, where, got, w)
		return
	}
	if len(got.Float) != w.Len || got.Int != nil {
		t.Fatalf("%s: %d floats and %d ints, want %d floats", where, len(got.Float), len(got.Int), w.Len)
	}
	var sum, wsum float64
	for i, v := range got.Float {
		sum += v
		wsum += float64(i+1) * v
	}
	if !mdSame(sum, float64(*w.Sum)) || !mdSame(wsum, float64(*w.WSum)) {
		t.Errorf("%s: sums %v %v, want %v %v", where, sum, wsum, *w.Sum, *w.WSum)
	}
	for i, v := range w.Values {
		if !mdSame(got.Float[i], float64(v)) {
			t.Errorf("%s: value %d is %v, want %v", where, i, got.Float[i], v)
		}
	}
}

func mdCompareInts(t *testing.T, where string, got *Tensor, w *mdGoldenTensor) {
	t.Helper()
	if len(got.Int) != w.Len || got.Float != nil {
		t.Fatalf("%s: %d ints and %d floats, want %d ints", where, len(got.Int), len(got.Float), w.Len)
	}
	var sum int64
	for _, v := range got.Int {
		sum += v
	}
	if sum != *w.ISum || !reflect.DeepEqual(got.Int[:len(w.IValues)], w.IValues) {
		t.Errorf("%s: sum %d values %v, want %d %v", where, sum, got.Int, *w.ISum, w.IValues)
	}
}

// mdTorchFiles lists the PyTorch exports.
func mdTorchFiles(t testing.TB) []string {
	files, err := filepath.Glob("testdata/torch/*.onnx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no PyTorch fixtures: %v", err)
	}
	return files
}

// mdGoBackend is an onnx-go backend that records the values it is given.
type mdGoBackend struct {
	*simple.WeightedDirectedGraph
	ops []string
}

type mdGoNode struct {
	id    int64
	name  string
	value tensor.Tensor
}

func (n *mdGoNode) ID() int64                       { return n.id }
func (n *mdGoNode) SetName(s string)                { n.name = s }
func (n *mdGoNode) GetName() string                 { return n.name }
func (n *mdGoNode) SetTensor(t tensor.Tensor) error { n.value = t; return nil }
func (n *mdGoNode) GetTensor() tensor.Tensor        { return n.value }

func (b *mdGoBackend) NewNode() gograph.Node {
	return &mdGoNode{id: b.WeightedDirectedGraph.NewNode().ID()}
}

func (b *mdGoBackend) ApplyOperation(op onnxgo.Operation, _ ...gograph.Node) error {
	b.ops = append(b.ops, op.Name)
	return nil
}

// mdOnnxGo decodes b with onnx-go: its values by name, and its operators.
func mdOnnxGo(t *testing.T, b []byte) (map[string]tensor.Tensor, []string) {
	be := &mdGoBackend{WeightedDirectedGraph: simple.NewWeightedDirectedGraph(-1, -1)}
	if err := onnxgo.NewModel(be).UnmarshalBinary(b); err != nil {
		t.Fatalf("onnx-go: %v", err)
	}
	values := map[string]tensor.Tensor{}
	for it := be.Nodes(); it.Next(); {
		n := it.Node().(*mdGoNode)
		values[n.name] = n.value
	}
	return values, be.ops
}

// TestDecodeModelMatchesOnnxGo decodes every PyTorch export with onnx-go
// too and compares the operators and every initializer's shape and values.
func TestDecodeModelMatchesOnnxGo(t *testing.T) {
	for _, file := range mdTorchFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := DecodeModel(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		mdValidate(t, m)
		values, ops := mdOnnxGo(t, b)
		var myOps []string
		for _, nd := range m.Graph.Nodes {
			myOps = append(myOps, nd.OpType)
		}
		if !reflect.DeepEqual(myOps, ops) {
			t.Errorf("%s: operators %v, onnx-go %v", file, myOps, ops)
		}
		if len(m.Graph.Initializers) == 0 {
			t.Errorf("%s: no initializers", file)
		}
		for _, init := range m.Graph.Initializers {
			mdCompareOnnxGo(t, file, init, values[init.Name])
		}
	}
}

func mdCompareOnnxGo(t *testing.T, file string, init *Tensor, v tensor.Tensor) {
	t.Helper()
	if v == nil {
		t.Errorf("%s: onnx-go has no initializer %q", file, init.Name)
		return
	}
	shape := v.Shape()
	if len(shape) != len(init.Dims) {
		t.Errorf("%s %q: dims %v, onnx-go %v", file, init.Name, init.Dims, shape)
		return
	}
	for i, d := range shape {
		if int64(d) != init.Dims[i] {
			t.Errorf("%s %q: dims %v, onnx-go %v", file, init.Name, init.Dims, shape)
		}
	}
	var want []float64
	switch data := v.Data().(type) {
	case []float32:
		for _, x := range data {
			want = append(want, float64(x))
		}
	case []float64:
		want = data
	default:
		t.Fatalf("%s %q: onnx-go data %T", file, init.Name, data)
	}
	if len(want) != len(init.Float) {
		t.Fatalf("%s %q: %d values, onnx-go %d", file, init.Name, len(init.Float), len(want))
	}
	for i := range want {
		if !mdSame(init.Float[i], want[i]) {
			t.Fatalf("%s %q: value %d is %v, onnx-go %v", file, init.Name, i, init.Float[i], want[i])
		}
	}
}

// Hand-built models, encoded with protowire.

// mdTensor encodes a TensorProto: dims, data type, name, then the data
// fields given.
func mdTensor(name string, dtype DataType, dims []int64, data ...msg) msg {
	var m msg
	for _, d := range dims {
		m.varint(1, d)
	}
	m.varint(2, int64(dtype))
	if name != "" {
		m.str(8, name)
	}
	for _, d := range data {
		m = append(m, d...)
	}
	return m
}

// mdRaw is a raw_data field holding the little-endian values of vals (each
// of size bytes).
func mdRaw(size int, vals ...uint64) msg {
	b := make([]byte, 0, size*len(vals))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, v)[:len(b)+size]
	}
	var m msg
	m.bytes(9, b)
	return m
}

// mdRawF32 is a raw_data field of float32 values.
func mdRawF32(vals ...float32) msg {
	var u []uint64
	for _, v := range vals {
		u = append(u, uint64(math.Float32bits(v)))
	}
	return mdRaw(4, u...)
}

// mdPackedVarints is a packed repeated varint field.
func mdPackedVarints(num protowire.Number, vals ...int64) msg {
	var b []byte
	for _, v := range vals {
		b = protowire.AppendVarint(b, uint64(v))
	}
	var m msg
	m.bytes(num, b)
	return m
}

// mdFixed32s is an unpacked repeated float field.
func mdFixed32s(num protowire.Number, vals ...float32) msg {
	var m msg
	for _, v := range vals {
		m.float32(num, v)
	}
	return m
}

// mdAttr encodes an AttributeProto; typ 0 leaves the type field out.
func mdAttr(name string, typ AttrType, fields ...msg) msg {
	var m msg
	m.str(1, name)
	for _, f := range fields {
		m = append(m, f...)
	}
	if typ != 0 {
		m.varint(20, int64(typ))
	}
	return m
}

// mdTensorAttr is a tensor attribute (field t).
func mdTensorAttr(name string, t msg) msg {
	var f msg
	f.bytes(5, t)
	return mdAttr(name, AttrTensor, f)
}

// mdNode encodes a NodeProto.
func mdNode(name, op string, ins, outs []string, attrs ...msg) msg {
	var m msg
	for _, s := range ins {
		m.str(1, s)
	}
	for _, s := range outs {
		m.str(2, s)
	}
	m.str(3, name)
	m.str(4, op)
	for _, a := range attrs {
		m.bytes(5, a)
	}
	return m
}

// mdGraph encodes a GraphProto of nodes and initializers, with input x
// (N, 3) and output y.
func mdGraph(nodes []msg, inits ...msg) msg { return hgGraph(nodes, inits, "y") }

// mdModel encodes a ModelProto around a graph, importing opset 13.
func mdModel(g msg) []byte {
	var opset msg
	opset.str(1, "")
	opset.varint(2, 13)
	var m msg
	m.varint(1, 8)
	m.bytes(8, opset)
	m.str(2, "hand")
	m.bytes(7, g)
	return m
}

// mdInitModel is a model whose only content is one initializer.
func mdInitModel(t msg) []byte { return mdModel(mdGraph(nil, t)) }

// mdConstModel is a model whose only node is a Constant named name with
// attribute value t.
func mdConstModel(name string, t msg) []byte {
	return mdModel(mdGraph([]msg{mdNode(name, "Constant", nil, []string{"c"}, mdTensorAttr("value", t))}))
}

func mdDecode(t *testing.T, b []byte) *Model {
	t.Helper()
	m, err := DecodeModel(b)
	if err != nil {
		t.Fatal(err)
	}
	mdValidate(t, m)
	return m
}

func TestDecodeModelConstants(t *testing.T) {
	f16 := []uint64{0x3C00, 0xC000, 0x0001, 0x7BFF, 0xFC00, 0x8000, 0x3555}
	b := mdModel(mdGraph([]msg{
		mdNode("scalar", "Constant", nil, []string{"a"}, mdTensorAttr("value", mdTensor("", TypeFloat, nil, mdRawF32(1.5)))),
		mdNode("i64", "Constant", nil, []string{"b"}, mdTensorAttr("value", mdTensor("", TypeInt64, nil, mdPackedVarints(7, -3)))),
		mdNode("one", "Constant", nil, []string{"c"}, mdTensorAttr("value", mdTensor("", TypeFloat, []int64{1}, mdFixed32s(4, 2.5)))),
		mdNode("half", "Constant", nil, []string{"d"}, mdTensorAttr("value", mdTensor("", TypeFloat16, []int64{7}, mdRaw(2, f16...)))),
	}))
	g := mdDecode(t, b).Graph
	want := []struct {
		dims []int64
		f    []float64
		i    []int64
	}{
		{nil, []float64{1.5}, nil},
		{nil, nil, []int64{-3}},
		{[]int64{1}, []float64{2.5}, nil},
		{[]int64{7}, []float64{1, -2, math.Ldexp(1, -24), 65504, math.Inf(-1), math.Copysign(0, -1), 0.333251953125}, nil},
	}
	for i, w := range want {
		c := g.Nodes[i].Attrs["value"].T
		if len(c.Dims) != len(w.dims) || c.Len() != max(len(w.f), len(w.i)) || !reflect.DeepEqual(c.Int, w.i) {
			t.Errorf("constant %d: dims %v len %d ints %v, want %v %v", i, c.Dims, c.Len(), c.Int, w.dims, w.i)
		}
		for j, v := range w.f {
			if !mdSame(c.Float[j], v) {
				t.Errorf("constant %d value %d: %v, want %v", i, j, c.Float[j], v)
			}
		}
	}
}

func TestDecodeModelTensorEncodings(t *testing.T) {
	nan16 := mdTensor("nan16", TypeFloat16, []int64{1}, mdPackedVarints(5, 0x7E00))
	cases := []struct {
		t    msg
		want []float64
		ints []int64
	}{
		{mdTensor("unpacked", TypeFloat, []int64{3}, mdFixed32s(4, 1, -2, 0.25)), []float64{1, -2, 0.25}, nil},
		{mdTensor("mixed", TypeFloat, []int64{3}, mdPackedF32(1, 2), mdFixed32s(4, 3)), []float64{1, 2, 3}, nil},
		{mdTensor("f16typed", TypeFloat16, []int64{2}, mdPackedVarints(5, 0x3C00, 0xC000)), []float64{1, -2}, nil},
		{mdTensor("bf16raw", TypeBFloat16, []int64{2}, mdRaw(2, 0x3F80, 0xC0A0)), []float64{1, -5}, nil},
		{mdTensor("bf16typed", TypeBFloat16, []int64{1}, mdPackedVarints(5, 0x3F80)), []float64{1}, nil},
		{mdTensor("doubles", TypeDouble, []int64{2}, mdPackedF64(math.Pi, -1e300)), []float64{math.Pi, -1e300}, nil},
		{mdTensor("bools", TypeBool, []int64{3}, mdRaw(1, 0, 2, 1)), nil, []int64{0, 1, 1}},
		{mdTensor("booltyped", TypeBool, []int64{2}, mdPackedVarints(5, 5, 0)), nil, []int64{1, 0}},
		{mdTensor("i8typed", TypeInt8, []int64{2}, mdPackedVarints(5, -5, 127)), nil, []int64{-5, 127}},
		{mdTensor("i8raw", TypeInt8, []int64{2}, mdRaw(1, 0xFB, 0x80)), nil, []int64{-5, -128}},
		{mdTensor("u16raw", TypeUint16, []int64{1}, mdRaw(2, 0xFFFF)), nil, []int64{65535}},
		{mdTensor("i32raw", TypeInt32, []int64{1}, mdRaw(4, 0xFFFFFFFE)), nil, []int64{-2}},
		{mdTensor("u32", TypeUint32, []int64{2}, mdPackedVarints(11, 4294967295, 1)), nil, []int64{4294967295, 1}},
		{mdTensor("u64raw", TypeUint64, []int64{1}, mdRaw(8, math.MaxInt64)), nil, []int64{math.MaxInt64}},
		{mdTensor("i64unpacked", TypeInt64, []int64{2}, mdVarints(7, -1, 1<<40)), nil, []int64{-1, 1 << 40}},
		{mdTensor("empty", TypeFloat, []int64{0, 3}), []float64{}, nil},
		{mdTensor("emptyraw", TypeInt64, []int64{3, 0}, mdRaw(8)), nil, []int64{}},
	}
	var inits []msg
	for _, c := range cases {
		inits = append(inits, c.t)
	}
	g := mdDecode(t, mdModel(mdGraph(nil, append(inits, nan16)...))).Graph
	for i, c := range cases {
		got := g.Initializers[i]
		if c.want != nil {
			if len(got.Float) != len(c.want) || got.Int != nil {
				t.Errorf("%s: floats %v ints %v, want %v", got.Name, got.Float, got.Int, c.want)
				continue
			}
			for j := range c.want {
				if !mdSame(got.Float[j], c.want[j]) {
					t.Errorf("%s: %v, want %v", got.Name, got.Float, c.want)
				}
			}
		} else if !reflect.DeepEqual(got.Int, c.ints) || got.Float != nil {
			t.Errorf("%s: ints %v floats %v, want %v", got.Name, got.Int, got.Float, c.ints)
		}
	}
	if v := g.Initializers[len(cases)].Float; len(v) != 1 || !math.IsNaN(v[0]) {
		t.Errorf("float16 NaN decoded as %v", v)
	}
}

// mdPackedF32 is a packed float_data field.
func mdPackedF32(vals ...float32) msg {
	var b []byte
	for _, v := range vals {
		b = protowire.AppendFixed32(b, math.Float32bits(v))
	}
	var m msg
	m.bytes(4, b)
	return m
}

// mdPackedF64 is a packed double_data field.
func mdPackedF64(vals ...float64) msg {
	var b []byte
	for _, v := range vals {
		b = protowire.AppendFixed64(b, math.Float64bits(v))
	}
	var m msg
	m.bytes(10, b)
	return m
}

// mdVarints is an unpacked repeated varint field.
func mdVarints(num protowire.Number, vals ...int64) msg {
	var m msg
	for _, v := range vals {
		m.varint(num, v)
	}
	return m
}

func TestDecodeModelNodes(t *testing.T) {
	var floats, ints, gfield, tfield msg
	floats.float32(2, 0.5)
	ints = mdPackedVarints(8, 2, 0, 1)
	gfield.bytes(6, mdGraph(nil))
	tfield.bytes(5, mdTensor("", TypeInt64, nil, mdVarints(7, 4)))
	var refAttr msg
	refAttr.str(21, "outer")
	nodes := []msg{
		mdNode("split", "Split", []string{"x"}, []string{"s0", "s1", "s2"}, mdAttr("axis", AttrInt, mdVarints(3, 1))),
		mdNode("clip", "Clip", []string{"x", "", "hi", ""}, []string{"y"}),
		mdNode("untyped", "Custom", []string{"x"}, []string{"z"},
			mdAttr("alpha", 0, floats), mdAttr("perm", 0, ints), mdAttr("k", 0, tfield), mdAttr("body", 0, gfield),
			mdAttr("unpacked", AttrInts, mdVarints(8, 5, -6)), mdAttr("ref", AttrFloat, refAttr)),
		append(mdNode("", "Relu", []string{"x"}, []string{"r"}), mdDomain("ai.onnx")...),
		append(mdNode("ms", "FusedGemm", []string{"x"}, []string{"q"}), mdDomain("com.microsoft")...),
	}
	g := mdDecode(t, mdModel(mdGraph(nodes))).Graph
	if s := g.Nodes[0]; !reflect.DeepEqual(s.Outputs, []string{"s0", "s1", "s2"}) || s.Attrs["axis"].I != 1 || s.Attrs["axis"].Type != AttrInt {
		t.Errorf("split: %+v", s)
	}
	if c := g.Nodes[1]; !reflect.DeepEqual(c.Inputs, []string{"x", "", "hi", ""}) {
		t.Errorf("clip inputs %q", c.Inputs)
	}
	a := g.Nodes[2].Attrs
	switch {
	case a["alpha"].Type != AttrFloat || a["alpha"].F != 0.5:
		t.Errorf("alpha: %+v", a["alpha"])
	case a["perm"].Type != AttrInts || !reflect.DeepEqual(a["perm"].Ints, []int64{2, 0, 1}):
		t.Errorf("perm: %+v", a["perm"])
	case a["k"].Type != AttrTensor || a["k"].T.Int[0] != 4:
		t.Errorf("k: %+v", a["k"])
	case a["body"].Type != AttrGraph || !a["body"].HasGraph || a["body"].G == nil || a["body"].G.Name != "g":
		t.Errorf("body: %+v", a["body"])
	case !reflect.DeepEqual(a["unpacked"].Ints, []int64{5, -6}):
		t.Errorf("unpacked: %+v", a["unpacked"])
	case a["ref"].RefAttrName != "outer":
		t.Errorf("ref: %+v", a["ref"])
	}
	for i, nd := range g.Nodes {
		if nd.Index != i {
			t.Errorf("node %d has index %d", i, nd.Index)
		}
	}
	if g.Nodes[3].Domain != "" || g.Nodes[4].Domain != "com.microsoft" {
		t.Errorf("domains %q %q", g.Nodes[3].Domain, g.Nodes[4].Domain)
	}
}

// mdDomain is a NodeProto domain field.
func mdDomain(d string) msg {
	var m msg
	m.str(7, d)
	return m
}

// TestDecodeModelSubgraphs decodes an If's branches and bounds their
// nesting.
func TestDecodeModelSubgraphs(t *testing.T) {
	b, err := os.ReadFile("testdata/decode/edge.onnx")
	if err != nil {
		t.Fatal(err)
	}
	m := mdDecode(t, b)
	var ifNode *Node
	for _, nd := range m.Graph.Nodes {
		if nd.OpType == "If" {
			ifNode = nd
		}
	}
	then := ifNode.Attrs["then_branch"].G
	if then == nil || then.Name != "then" || len(then.Nodes) != 1 || then.Nodes[0].Attrs["value"].T.Float[0] != 1 ||
		then.Outputs[0].Name != "then_c" {
		t.Errorf("then_branch %+v", then)
	}
	if _, err := DecodeModel(mdModel(mdNested(8))); err != nil {
		t.Errorf("8 nested graphs: %v", err)
	}
	_, err = DecodeModel(mdModel(mdNested(9)))
	if err == nil || !strings.Contains(err.Error(), `node "if1" attribute "then_branch"`) || !strings.Contains(err.Error(), "nested") {
		t.Errorf("9 nested graphs: %v", err)
	}
}

// mdNested is a graph with an If whose then_branch holds an If... depth
// times.
func mdNested(depth int) msg {
	g := mdGraph(nil)
	for i := depth; i > 0; i-- {
		var f msg
		f.bytes(6, g)
		g = mdGraph([]msg{mdNode(fmt.Sprint("if", i), "If", []string{"c"}, []string{"y"}, mdAttr("then_branch", AttrGraph, f))})
	}
	return g
}

func TestDecodeModelHeaderAndValues(t *testing.T) {
	var m msg
	m.varint(1, 7)
	for _, o := range []struct {
		d string
		v int64
	}{{"ai.onnx", 14}, {"com.microsoft", 1}} {
		var op msg
		op.str(1, o.d)
		op.varint(2, o.v)
		m.bytes(8, op)
	}
	m.str(2, "prod")
	m.str(3, "2.0")
	g := mdGraph(nil)
	var noType, seq, dims msg
	noType.str(1, "plain")
	g.bytes(13, noType)
	var seqType, tp msg
	seqType.bytes(1, valueInfo("", typeFloat))
	tp.bytes(4, seqType) // sequence_type
	seq.str(1, "seq")
	seq.bytes(2, tp)
	g.bytes(13, seq)
	dims = mdDimsValue("d", 5, -1)
	g.bytes(13, dims)
	m.bytes(7, g)
	mod := mdDecode(t, m)
	if mod.IRVersion != 7 || mod.ProducerName != "prod" || mod.ProducerVersion != "2.0" ||
		!reflect.DeepEqual(mod.Opsets, map[string]int64{"": 14, "com.microsoft": 1}) {
		t.Errorf("header %+v", mod)
	}
	x := mod.Graph.Inputs[0]
	if x.Name != "x" || x.ElemType != TypeFloat || !x.HasShape || !reflect.DeepEqual(x.Shape, []Dim{{2, ""}, {3, ""}}) {
		t.Errorf("input %+v", x)
	}
	vi := mod.Graph.ValueInfo
	if vi[0].Name != "plain" || vi[0].HasShape || vi[0].ElemType != 0 || vi[1].Name != "seq" || vi[1].ElemType != 0 || vi[1].HasShape {
		t.Errorf("value_info %+v %+v", vi[0], vi[1])
	}
	if !reflect.DeepEqual(vi[2].Shape, []Dim{{5, ""}, {-1, ""}, {-1, ""}}) {
		t.Errorf("dims %+v", vi[2].Shape)
	}
}

// mdDimsValue is a float ValueInfoProto with a known dimension, a negative
// dim_value and an empty dimension.
func mdDimsValue(name string, known, negative int64) msg {
	var d1, d2, d3, shape, tt, typ, m msg
	d1.varint(1, known)
	d2.varint(1, negative)
	shape.bytes(1, d1)
	shape.bytes(1, d2)
	shape.bytes(1, d3)
	tt.varint(1, typeFloat)
	tt.bytes(2, shape)
	typ.bytes(1, tt)
	m.str(1, name)
	m.bytes(2, typ)
	return m
}

// mdUnknownFields is one field of each wire type under numbers onnx.proto
// does not use, a group included.
func mdUnknownFields() msg {
	var m msg
	m.varint(990, 1)
	m = protowire.AppendTag(m, 991, protowire.Fixed64Type)
	m = protowire.AppendFixed64(m, 7)
	m.str(992, "future")
	m = protowire.AppendTag(m, 993, protowire.StartGroupType)
	m.varint(1, 3)
	m = protowire.AppendTag(m, 993, protowire.EndGroupType)
	m.float32(994, 1)
	return m
}

func TestDecodeModelSkipsUnknownFields(t *testing.T) {
	u := mdUnknownFields()
	tensor := append(mdTensor("", TypeFloat, nil, mdRawF32(2)), u...)
	attr := append(mdTensorAttr("value", tensor), u...)
	node := append(mdNode("c", "Constant", nil, []string{"y"}, attr), u...)
	g := append(mdGraph([]msg{node}, append(mdTensor("w", TypeFloat, []int64{1}, mdRawF32(3)), u...)), u...)
	m := append(msg(mdModel(g)), u...)
	got := mdDecode(t, m)
	if got.Graph.Nodes[0].Attrs["value"].T.Float[0] != 2 || got.Graph.Initializers[0].Float[0] != 3 {
		t.Errorf("decoded %+v", got.Graph)
	}
}

// mdErrorCase is a malformed model and the substrings its error must have.
type mdErrorCase struct {
	name string
	b    []byte
	want []string
}

func mdErrorCases() []mdErrorCase {
	wrongDims := msg(protowire.AppendTag(nil, 1, protowire.Fixed32Type))
	wrongDims = protowire.AppendFixed32(wrongDims, 3)
	var external, location, graphVarint, nodeVarint, attrVarint, sparse, badPacked msg
	external.bytes(13, mdStringEntry("location", "w.bin"))
	location.varint(14, 1)
	graphVarint.varint(7, 1)
	nodeVarint.varint(1, 5)
	attrVarint.str(1, "alpha")
	attrVarint.varint(2, 1)
	sparse.bytes(15, mdTensor("s", TypeFloat, nil))
	badPacked.bytes(4, []byte{1, 2, 3, 4, 5})
	var noGraph msg
	noGraph.varint(1, 8)
	torch, _ := os.ReadFile("testdata/torch/relu_f32.onnx")
	return []mdErrorCase{
		{"truncated", torch[:len(torch)-1], []string{"unexpected EOF"}},
		{"no graph", noGraph, []string{"model has no graph"}},
		{"graph varint", graphVarint, []string{"ModelProto field graph (7) has wire type varint, want bytes"}},
		{"node input varint", mdModel(mdGraph([]msg{append(mdNode("n", "Relu", nil, nil), nodeVarint...)})), []string{`node "n"`, "NodeProto field input (1) has wire type varint"}},
		{"attr f varint", mdModel(mdGraph([]msg{mdNode("n", "Elu", nil, nil, attrVarint)})), []string{`node "n" attribute "alpha"`, "AttributeProto field f (2) has wire type varint, want fixed32"}},
		{"dims fixed32", mdInitModel(append(mdTensor("w", TypeFloat, nil, mdRawF32(1)), wrongDims...)), []string{`initializer "w"`, "TensorProto field dims (1) has wire type fixed32"}},
		{"raw too short", mdInitModel(mdTensor("fc.weight", TypeFloat, []int64{3, 4}, mdRaw(4, 1, 2, 3))), []string{`initializer "fc.weight": raw_data has 12 bytes, dims [3 4] of float need 48`}},
		{"raw too long", mdInitModel(mdTensor("b", TypeDouble, []int64{1}, mdRaw(8, 1, 2))), []string{`initializer "b": raw_data has 16 bytes, dims [1] of double need 8`}},
		{"typed too few", mdInitModel(mdTensor("w", TypeFloat, []int64{3}, mdFixed32s(4, 1, 2))), []string{`initializer "w": float_data has 2 values, dims [3] need 3`}},
		{"typed too many", mdInitModel(mdTensor("s", TypeInt64, nil, mdPackedVarints(7, 1, 2))), []string{`initializer "s": int64_data has 2 values, dims [] need 1`}},
		{"no data", mdInitModel(mdTensor("w", TypeFloat, []int64{2})), []string{`initializer "w": no data`}},
		{"huge dims", mdInitModel(mdTensor("big", TypeFloat, []int64{1 << 40}, mdRawF32(1))), []string{`initializer "big": dims [1099511627776]`, "limit"}},
		{"overflowing dims", mdInitModel(mdTensor("big", TypeFloat, []int64{1 << 20, 1 << 20, 1 << 20, 1 << 20}, mdRawF32(1))), []string{`initializer "big"`, "limit"}},
		{"huge typed", mdInitModel(mdTensor("big", TypeInt64, []int64{1 << 27, 1 << 27}, mdVarints(7, 1))), []string{`initializer "big"`, "limit"}},
		{"negative dims", mdInitModel(mdTensor("neg", TypeFloat, []int64{2, -1}, mdRawF32(1))), []string{`initializer "neg": negative dimension -1 in dims [2 -1]`}},
		{"negative after zero", mdInitModel(mdTensor("neg", TypeFloat, []int64{0, -1})), []string{`initializer "neg"`, "negative"}},
		{"external data", mdInitModel(mdTensor("ext", TypeFloat, []int64{4}, external, location)), []string{`initializer "ext": external data is not supported: save the model with all tensors inside the file`}},
		{"external entries", mdInitModel(mdTensor("ext", TypeFloat, []int64{4}, external)), []string{`initializer "ext": external data`}},
		{"string tensor", mdInitModel(mdTensor("str", TypeString, []int64{1})), []string{`initializer "str": tensors of type string are not supported`}},
		{"complex tensor", mdInitModel(mdTensor("z", TypeComplex64, []int64{1}, mdFixed32s(4, 1, 2))), []string{`initializer "z": tensors of type complex64 are not supported`}},
		{"undefined type", mdInitModel(mdTensor("u", TypeUndefined, []int64{1}, mdRawF32(1))), []string{`initializer "u": data_type is not set`}},
		{"unknown type", mdInitModel(mdTensor("u", 99, []int64{1}, mdRawF32(1))), []string{`initializer "u": tensors of type DataType(99) are not supported`}},
		{"wrong typed field", mdInitModel(mdTensor("w", TypeFloat, []int64{1}, mdVarints(7, 1))), []string{`initializer "w": int64_data is set, but float tensors keep their values in float_data or raw_data`}},
		{"raw and typed", mdInitModel(mdTensor("w", TypeFloat, []int64{1}, mdRawF32(1), mdFixed32s(4, 1))), []string{`initializer "w": both raw_data and float_data`}},
		{"packed floats misaligned", mdInitModel(mdTensor("w", TypeFloat, []int64{1}, badPacked)), []string{`initializer "w"`, "5 bytes, not a multiple of 4"}},
		{"uint64 overflow", mdInitModel(mdTensor("u", TypeUint64, []int64{1}, mdVarints(11, -1))), []string{`initializer "u"`, "does not fit in int64"}},
		{"constant raw", mdConstModel("Constant_3", mdTensor("", TypeFloat, []int64{2}, mdRawF32(1))), []string{`node "Constant_3" attribute "value": raw_data has 4 bytes, dims [2] of float need 8`}},
		{"constant huge", mdConstModel("Constant_3", mdTensor("", TypeFloat, []int64{1 << 40, 1 << 40})), []string{`node "Constant_3" attribute "value": dims [1099511627776 1099511627776]`}},
		{"constant external", mdConstModel("Constant_3", mdTensor("", TypeFloat, nil, location)), []string{`node "Constant_3" attribute "value": external data`}},
		{"unnamed node", mdModel(mdGraph([]msg{mdNode("", "Constant", nil, nil, mdTensorAttr("value", mdTensor("", TypeFloat, []int64{-2})))})), []string{`node #0 (Constant) attribute "value": negative dimension -2 in dims [-2]`}},
		{"nameless attribute", mdModel(mdGraph([]msg{mdNode("n", "Elu", nil, nil, mdAttr("", AttrInt))})), []string{`node "n": attribute #0 has no name`}},
		{"duplicate attribute", mdModel(mdGraph([]msg{mdNode("n", "Elu", nil, nil, mdAttr("alpha", AttrInt), mdAttr("alpha", AttrInt))})), []string{`node "n": attribute "alpha" is given twice`}},
		{"sparse initializer", mdModel(append(mdGraph(nil), sparse...)), []string{"sparse initializers are not supported"}},
		{"malformed tag", append(mdModel(mdGraph(nil)), 0x80), []string{"malformed ModelProto"}},
	}
}

// mdStringEntry is a StringStringEntryProto.
func mdStringEntry(k, v string) msg {
	var m msg
	m.str(1, k)
	m.str(2, v)
	return m
}

func TestDecodeModelErrors(t *testing.T) {
	for _, c := range mdErrorCases() {
		m, err := DecodeModel(c.b)
		if err == nil {
			t.Errorf("%s: decoded %+v, want an error", c.name, m.Graph)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want %q", c.name, err, w)
			}
		}
	}
}

// TestDecodeModelLyingDimsAllocateNothing checks that a tensor whose dims
// claim far more data than it holds is refused before allocation.
func TestDecodeModelLyingDimsAllocateNothing(t *testing.T) {
	for _, b := range [][]byte{
		mdInitModel(mdTensor("big", TypeFloat, []int64{1 << 14, 1 << 14}, mdRawF32(1))),
		mdInitModel(mdTensor("big", TypeInt64, []int64{1 << 28}, mdVarints(7, 1))),
		mdInitModel(mdTensor("big", TypeFloat, []int64{1 << 27}, mdPackedF32(1))),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecodeModel(b)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatal("accepted")
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%v: allocated %d bytes", err, d)
		}
	}
}

// TestDecodeModelTruncations decodes every prefix of a fixture: each is
// refused or decodes to a valid model, and none panics.
func TestDecodeModelTruncations(t *testing.T) {
	for _, file := range []string{"testdata/decode/edge.onnx", "testdata/torch/silu_f32.onnx"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		refused := 0
		for n := 0; n < len(b); n++ {
			if m, err := DecodeModel(b[:n]); err != nil {
				refused++
			} else {
				mdValidate(t, m)
			}
		}
		if refused < len(b)/2 {
			t.Errorf("%s: only %d of %d prefixes refused", file, refused, len(b))
		}
	}
}

// mdValidate checks the invariants of a decoded model.
func mdValidate(t testing.TB, m *Model) {
	t.Helper()
	if m == nil || m.Graph == nil || m.Opsets == nil {
		t.Fatalf("incomplete model %+v", m)
	}
	mdValidateGraph(t, m.Graph)
}

// mdValidateGraph checks the invariants of a decoded graph and its
// subgraphs.
func mdValidateGraph(t testing.TB, g *Graph) {
	t.Helper()
	for i, nd := range g.Nodes {
		if nd.Index != i || nd.Attrs == nil {
			t.Fatalf("node %d: index %d attrs %v", i, nd.Index, nd.Attrs)
		}
		for k, a := range nd.Attrs {
			if a.Name != k {
				t.Fatalf("node %d: attribute %q under %q", i, a.Name, k)
			}
			if a.T != nil {
				mdValidateTensor(t, a.T)
			}
			if a.G != nil {
				if !a.HasGraph {
					t.Fatalf("node %d attribute %q: a graph, not flagged", i, k)
				}
				mdValidateGraph(t, a.G)
			}
		}
	}
	for _, init := range g.Initializers {
		mdValidateTensor(t, init)
	}
	for _, list := range [][]*ValueInfo{g.Inputs, g.Outputs, g.ValueInfo} {
		for _, v := range list {
			for _, d := range v.Shape {
				if d.Value < -1 || (d.Param != "" && d.Value != -1) || !v.HasShape {
					t.Fatalf("value %q: shape %+v has shape %v", v.Name, v.Shape, v.HasShape)
				}
			}
		}
	}
}

// mdMaxLen is the most elements a decoded tensor may have.
const mdMaxLen = 1 << 28

// mdFloating reports whether a type's values are decoded to Tensor.Float.
func mdFloating(t DataType) bool {
	return t == TypeFloat || t == TypeDouble || t == TypeFloat16 || t == TypeBFloat16
}

// mdSupported reports whether DecodeModel decodes tensors of type t.
func mdSupported(t DataType) bool {
	switch t {
	case TypeUndefined, TypeString, TypeComplex64, TypeComplex128:
		return false
	}
	return t >= TypeFloat && t <= TypeBFloat16
}

// mdValidateTensor checks that a decoded tensor's values match its dims
// and type.
func mdValidateTensor(t testing.TB, x *Tensor) {
	t.Helper()
	n := x.Len()
	for _, d := range x.Dims {
		if d < 0 || d > mdMaxLen {
			t.Fatalf("tensor %q: dims %v", x.Name, x.Dims)
		}
	}
	if n > mdMaxLen || !mdSupported(x.DataType) {
		t.Fatalf("tensor %q: %d elements of %v", x.Name, n, x.DataType)
	}
	if mdFloating(x.DataType) {
		if x.Float == nil || len(x.Float) != n || x.Int != nil {
			t.Fatalf("tensor %q: %v dims %v with %d floats, %d ints", x.Name, x.DataType, x.Dims, len(x.Float), len(x.Int))
		}
		return
	}
	if x.Int == nil || len(x.Int) != n || x.Float != nil {
		t.Fatalf("tensor %q: %v dims %v with %d ints, %d floats", x.Name, x.DataType, x.Dims, len(x.Int), len(x.Float))
	}
	for _, v := range x.Int {
		if x.DataType == TypeBool && v != 0 && v != 1 {
			t.Fatalf("tensor %q: bool %d", x.Name, v)
		}
	}
}

func TestDataTypeString(t *testing.T) {
	for dt, want := range map[DataType]string{TypeFloat: "float", TypeInt64: "int64", TypeFloat16: "float16",
		TypeBFloat16: "bfloat16", TypeDouble: "double", TypeBool: "bool", 17: "DataType(17)", -1: "DataType(-1)"} {
		if dt.String() != want {
			t.Errorf("%d: %q, want %q", int32(dt), dt.String(), want)
		}
	}
}

// FuzzDecodeModel checks that DecodeModel never panics and that whatever
// it accepts is consistent: every tensor holds exactly Len() values.
func FuzzDecodeModel(f *testing.F) {
	files := append(mdTorchFiles(f), "testdata/decode/edge.onnx")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, c := range mdErrorCases() {
		f.Add(c.b)
	}
	f.Add(mdConstModel("c", mdTensor("", TypeFloat16, []int64{2}, mdRaw(2, 0x3C00, 0x7E00))))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeModel(b)
		if err != nil {
			if m != nil {
				t.Fatalf("error %v with a model", err)
			}
			return
		}
		mdValidate(t, m)
	})
}

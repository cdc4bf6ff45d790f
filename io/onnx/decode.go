package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The importer decodes ONNX's protobuf messages itself, with protowire and
// the field numbers of onnx.proto (ONNX 1.12, as Debian's python3-onnx
// ships it). onnx-go v0.5.0, which decoded files before, cannot represent
// 0-d constants, several outputs per node or optional inputs, and
// registering ONNX's generated types a second time would clash with it.

// Model is a decoded ModelProto.
type Model struct {
	IRVersion       int64
	Opsets          map[string]int64 // domain ("" for ai.onnx) → version
	ProducerName    string
	ProducerVersion string
	Graph           *Graph
}

// Graph is a decoded GraphProto.
type Graph struct {
	Name         string
	Nodes        []*Node
	Initializers []*Tensor
	Inputs       []*ValueInfo
	Outputs      []*ValueInfo
	ValueInfo    []*ValueInfo
}

// Node is a decoded NodeProto.
type Node struct {
	Name, OpType, Domain string
	// Inputs and Outputs name values; "" marks an omitted optional one.
	Inputs, Outputs []string
	Attrs           map[string]*Attribute
	Index           int // position in the graph's node list
}

// AttrType is AttributeProto.AttributeType.
type AttrType int32

// Attribute types.
const (
	AttrFloat   AttrType = 1
	AttrInt     AttrType = 2
	AttrString  AttrType = 3
	AttrTensor  AttrType = 4
	AttrGraph   AttrType = 5
	AttrFloats  AttrType = 6
	AttrInts    AttrType = 7
	AttrStrings AttrType = 8
	AttrTensors AttrType = 9
	AttrGraphs  AttrType = 10
)

// Attribute is a decoded AttributeProto. A GRAPH attribute (an If's
// branches) is decoded into G; lists of graphs are only flagged.
type Attribute struct {
	Name        string
	Type        AttrType
	F           float32
	I           int64
	S           []byte
	T           *Tensor
	Floats      []float32
	Ints        []int64
	Strings     [][]byte
	RefAttrName string
	G           *Graph
	HasGraph    bool
}

// maxGraphDepth bounds the nesting of subgraphs.
const maxGraphDepth = 8

// DataType is TensorProto.DataType.
type DataType int32

// Tensor element types.
const (
	TypeUndefined  DataType = 0
	TypeFloat      DataType = 1
	TypeUint8      DataType = 2
	TypeInt8       DataType = 3
	TypeUint16     DataType = 4
	TypeInt16      DataType = 5
	TypeInt32      DataType = 6
	TypeInt64      DataType = 7
	TypeString     DataType = 8
	TypeBool       DataType = 9
	TypeFloat16    DataType = 10
	TypeDouble     DataType = 11
	TypeUint32     DataType = 12
	TypeUint64     DataType = 13
	TypeComplex64  DataType = 14
	TypeComplex128 DataType = 15
	TypeBFloat16   DataType = 16
)

var dataTypeNames = map[DataType]string{
	TypeUndefined: "undefined", TypeFloat: "float", TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16",
	TypeInt16: "int16", TypeInt32: "int32", TypeInt64: "int64", TypeString: "string", TypeBool: "bool",
	TypeFloat16: "float16", TypeDouble: "double", TypeUint32: "uint32", TypeUint64: "uint64",
	TypeComplex64: "complex64", TypeComplex128: "complex128", TypeBFloat16: "bfloat16",
}

func (t DataType) String() string {
	if s, ok := dataTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("data type %d", int32(t))
}

// byteSize is the size of one element in raw_data (0: not supported).
func (t DataType) byteSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16, TypeFloat16, TypeBFloat16:
		return 2
	case TypeFloat, TypeInt32, TypeUint32:
		return 4
	case TypeDouble, TypeInt64, TypeUint64:
		return 8
	}
	return 0
}

// Tensor is a decoded TensorProto: float types in Float, integer and
// boolean types in Int.
type Tensor struct {
	Name     string
	Dims     []int64
	DataType DataType
	Float    []float64
	Int      []int64
}

// Len is the number of elements (1 for a 0-d tensor).
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Dims {
		n *= int(d)
	}
	return n
}

// ValueInfo is a decoded ValueInfoProto of a tensor.
type ValueInfo struct {
	Name     string
	ElemType DataType
	HasShape bool
	Shape    []Dim
}

// Dim is one dimension: Value ≥ 0 when known, Param a symbolic name;
// Value −1 with Param "" is unknown.
type Dim struct {
	Value int64
	Param string
}

// field is one decoded protobuf field.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // varint and fixed values
	b   []byte // length-delimited values
}

// fields decodes every field of a message.
func fields(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed protobuf: %w", protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("malformed protobuf field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// want checks a known field's wire type.
func (f field) want(msg string, typ protowire.Type) error {
	if f.typ != typ {
		return fmt.Errorf("%s field %d has wire type %d, want %d", msg, f.num, f.typ, typ)
	}
	return nil
}

// DecodeModel decodes a serialized ModelProto.
func DecodeModel(b []byte) (*Model, error) {
	m := &Model{Opsets: map[string]int64{}}
	err := fields(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			if err = f.want("ModelProto", protowire.VarintType); err == nil {
				m.IRVersion = int64(f.v)
			}
		case 2, 3:
			if err = f.want("ModelProto", protowire.BytesType); err == nil {
				if f.num == 2 {
					m.ProducerName = string(f.b)
				} else {
					m.ProducerVersion = string(f.b)
				}
			}
		case 7:
			if err = f.want("ModelProto", protowire.BytesType); err == nil {
				m.Graph, err = decodeGraph(f.b, 0)
			}
		case 8:
			if err = f.want("ModelProto", protowire.BytesType); err == nil {
				err = decodeOpset(f.b, m.Opsets)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if m.Graph == nil {
		return nil, fmt.Errorf("model has no graph")
	}
	return m, nil
}

func decodeOpset(b []byte, opsets map[string]int64) error {
	domain, version := "", int64(0)
	err := fields(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			domain = string(f.b)
		case f.num == 2 && f.typ == protowire.VarintType:
			version = int64(f.v)
		case f.num == 1 || f.num == 2:
			return f.want("OperatorSetIdProto", protowire.BytesType)
		}
		return nil
	})
	if domain == "ai.onnx" {
		domain = ""
	}
	opsets[domain] = version
	return err
}

func decodeGraph(b []byte, depth int) (*Graph, error) {
	if depth > maxGraphDepth {
		return nil, fmt.Errorf("subgraphs nested more than %d deep", maxGraphDepth)
	}
	g := &Graph{}
	err := fields(b, func(f field) error {
		if f.num == 1 || f.num == 2 || f.num == 5 || f.num == 11 || f.num == 12 || f.num == 13 || f.num == 15 {
			if err := f.want("GraphProto", protowire.BytesType); err != nil {
				return err
			}
		}
		switch f.num {
		case 1:
			nd, err := decodeNode(f.b, len(g.Nodes), depth)
			if err != nil {
				return err
			}
			g.Nodes = append(g.Nodes, nd)
		case 2:
			g.Name = string(f.b)
		case 5:
			t, err := decodeTensor(f.b)
			if err != nil {
				return fmt.Errorf("initializer %q: %w", t.Name, err)
			}
			g.Initializers = append(g.Initializers, t)
		case 11, 12, 13:
			v, err := decodeValueInfo(f.b)
			if err != nil {
				return err
			}
			switch f.num {
			case 11:
				g.Inputs = append(g.Inputs, v)
			case 12:
				g.Outputs = append(g.Outputs, v)
			default:
				g.ValueInfo = append(g.ValueInfo, v)
			}
		case 15:
			return fmt.Errorf("sparse initializers are not supported")
		}
		return nil
	})
	return g, err
}

func decodeNode(b []byte, index, depth int) (*Node, error) {
	nd := &Node{Attrs: map[string]*Attribute{}, Index: index}
	err := fields(b, func(f field) error {
		switch f.num {
		case 1, 2, 3, 4, 5, 7:
			if err := f.want("NodeProto", protowire.BytesType); err != nil {
				return err
			}
		}
		switch f.num {
		case 1:
			nd.Inputs = append(nd.Inputs, string(f.b))
		case 2:
			nd.Outputs = append(nd.Outputs, string(f.b))
		case 3:
			nd.Name = string(f.b)
		case 4:
			nd.OpType = string(f.b)
		case 7:
			nd.Domain = string(f.b)
		case 5:
			a, err := decodeAttribute(f.b, depth)
			if err != nil {
				return fmt.Errorf("node %q attribute %q: %w", nd.Name, a.Name, err)
			}
			nd.Attrs[a.Name] = a
		}
		return nil
	})
	return nd, err
}

func decodeAttribute(b []byte, depth int) (*Attribute, error) {
	a := &Attribute{}
	err := fields(b, func(f field) error {
		switch f.num {
		case 1:
			a.Name = string(f.b)
		case 21:
			a.RefAttrName = string(f.b)
		case 20:
			a.Type = AttrType(f.v)
		case 2:
			a.F = math.Float32frombits(uint32(f.v))
			a.setType(AttrFloat)
		case 3:
			a.I = int64(f.v)
			a.setType(AttrInt)
		case 4:
			a.S = f.b
			a.setType(AttrString)
		case 5:
			t, err := decodeTensor(f.b)
			if err != nil {
				return err
			}
			a.T = t
			a.setType(AttrTensor)
		case 6:
			g, err := decodeGraph(f.b, depth+1)
			if err != nil {
				return err
			}
			a.G, a.HasGraph = g, true
			a.setType(AttrGraph)
		case 11:
			a.HasGraph = true
		case 7:
			return a.appendFloats(f)
		case 8:
			return a.appendInts(f)
		case 9:
			a.Strings = append(a.Strings, f.b)
			a.setType(AttrStrings)
		}
		return nil
	})
	return a, err
}

// setType sets the type from the field present when the file has no type
// field (files older than IR 3).
func (a *Attribute) setType(t AttrType) {
	if a.Type == 0 {
		a.Type = t
	}
}

func (a *Attribute) appendFloats(f field) error {
	a.setType(AttrFloats)
	switch f.typ {
	case protowire.Fixed32Type:
		a.Floats = append(a.Floats, math.Float32frombits(uint32(f.v)))
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return fmt.Errorf("packed floats of %d bytes", len(f.b))
		}
		for i := 0; i < len(f.b); i += 4 {
			a.Floats = append(a.Floats, math.Float32frombits(binary.LittleEndian.Uint32(f.b[i:])))
		}
	default:
		return fmt.Errorf("floats with wire type %d", f.typ)
	}
	return nil
}

func (a *Attribute) appendInts(f field) error {
	a.setType(AttrInts)
	switch f.typ {
	case protowire.VarintType:
		a.Ints = append(a.Ints, int64(f.v))
	case protowire.BytesType:
		v, err := packedVarints(f.b)
		if err != nil {
			return err
		}
		a.Ints = append(a.Ints, v...)
	default:
		return fmt.Errorf("ints with wire type %d", f.typ)
	}
	return nil
}

func packedVarints(b []byte) ([]int64, error) {
	var out []int64
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, fmt.Errorf("packed varints: %w", protowire.ParseError(n))
		}
		out = append(out, int64(v))
		b = b[n:]
	}
	return out, nil
}

func decodeValueInfo(b []byte) (*ValueInfo, error) {
	v := &ValueInfo{}
	err := fields(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			v.Name = string(f.b)
		case f.num == 2 && f.typ == protowire.BytesType:
			return fields(f.b, func(t field) error { // TypeProto
				if t.num != 1 || t.typ != protowire.BytesType {
					return nil // sequences, maps: no tensor type
				}
				return v.decodeTensorType(t.b)
			})
		}
		return nil
	})
	if err != nil {
		return v, fmt.Errorf("value %q: %w", v.Name, err)
	}
	return v, nil
}

func (v *ValueInfo) decodeTensorType(b []byte) error {
	return fields(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.VarintType:
			v.ElemType = DataType(f.v)
		case f.num == 2 && f.typ == protowire.BytesType:
			v.HasShape = true
			return fields(f.b, func(d field) error {
				if d.num != 1 || d.typ != protowire.BytesType {
					return nil
				}
				dim := Dim{Value: -1}
				err := fields(d.b, func(x field) error {
					switch {
					case x.num == 1 && x.typ == protowire.VarintType:
						dim.Value = int64(x.v)
					case x.num == 2 && x.typ == protowire.BytesType:
						dim.Param = string(x.b)
					}
					return nil
				})
				v.Shape = append(v.Shape, dim)
				return err
			})
		}
		return nil
	})
}

// maxTensorElements bounds one decoded tensor.
const maxTensorElements = 1 << 28

// tensorFields collects a TensorProto's fields before the values are
// decoded (the data type may come after the data).
type tensorFields struct {
	raw                     []byte
	hasRaw                  bool
	floats, doubles         []byte // packed
	floatList, doubleList   []uint64
	int32s, int64s, uint64s []int64
	external                bool
}

func decodeTensor(b []byte) (*Tensor, error) {
	t := &Tensor{}
	var tf tensorFields
	err := fields(b, func(f field) error { return tf.add(t, f) })
	if err != nil {
		return t, err
	}
	if tf.external {
		return t, fmt.Errorf("external data is not supported: save the model with all tensors inside the file")
	}
	n := int64(1)
	for _, d := range t.Dims {
		if d < 0 {
			return t, fmt.Errorf("negative dimension in dims %v", t.Dims)
		}
		if d > maxTensorElements || n*d > maxTensorElements {
			return t, fmt.Errorf("dims %v: more than %d elements", t.Dims, maxTensorElements)
		}
		n *= d
	}
	return t, tf.values(t, int(n))
}

func (tf *tensorFields) add(t *Tensor, f field) error {
	var err error
	switch f.num {
	case 1:
		if f.typ == protowire.BytesType {
			var v []int64
			v, err = packedVarints(f.b)
			t.Dims = append(t.Dims, v...)
		} else {
			t.Dims = append(t.Dims, int64(f.v))
		}
	case 2:
		t.DataType = DataType(f.v)
	case 8:
		t.Name = string(f.b)
	case 9:
		tf.raw, tf.hasRaw = f.b, true
	case 14:
		tf.external = tf.external || f.v == 1
	case 13:
		tf.external = true
	case 4:
		if f.typ == protowire.BytesType {
			tf.floats = append(tf.floats, f.b...)
		} else {
			tf.floatList = append(tf.floatList, f.v)
		}
	case 10:
		if f.typ == protowire.BytesType {
			tf.doubles = append(tf.doubles, f.b...)
		} else {
			tf.doubleList = append(tf.doubleList, f.v)
		}
	case 5, 7, 11:
		var v []int64
		if f.typ == protowire.BytesType {
			v, err = packedVarints(f.b)
		} else {
			v = []int64{int64(f.v)}
		}
		switch f.num {
		case 5:
			tf.int32s = append(tf.int32s, v...)
		case 7:
			tf.int64s = append(tf.int64s, v...)
		default:
			tf.uint64s = append(tf.uint64s, v...)
		}
	}
	return err
}

// values decodes the n elements of t from raw_data or the typed fields,
// checking their number before allocating.
func (tf *tensorFields) values(t *Tensor, n int) error {
	switch t.DataType {
	case TypeString, TypeComplex64, TypeComplex128, TypeUndefined:
		return fmt.Errorf("tensors of type %v are not supported", t.DataType)
	}
	if t.DataType.byteSize() == 0 {
		return fmt.Errorf("unknown data type %d", int32(t.DataType))
	}
	if tf.hasRaw {
		if want := n * t.DataType.byteSize(); len(tf.raw) != want {
			return fmt.Errorf("raw_data has %d bytes, dims %v of %v need %d", len(tf.raw), t.Dims, t.DataType, want)
		}
		return decodeRaw(t, tf.raw, n)
	}
	return tf.typed(t, n)
}

func decodeRaw(t *Tensor, raw []byte, n int) error {
	le := binary.LittleEndian
	if isFloat(t.DataType) {
		t.Float = make([]float64, n)
	} else {
		t.Int = make([]int64, n)
	}
	for i := 0; i < n; i++ {
		switch t.DataType {
		case TypeFloat:
			t.Float[i] = float64(math.Float32frombits(le.Uint32(raw[4*i:])))
		case TypeDouble:
			t.Float[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		case TypeFloat16:
			t.Float[i] = half(le.Uint16(raw[2*i:]))
		case TypeBFloat16:
			t.Float[i] = float64(math.Float32frombits(uint32(le.Uint16(raw[2*i:])) << 16))
		case TypeInt8:
			t.Int[i] = int64(int8(raw[i]))
		case TypeUint8, TypeBool:
			t.Int[i] = int64(raw[i])
		case TypeInt16:
			t.Int[i] = int64(int16(le.Uint16(raw[2*i:])))
		case TypeUint16:
			t.Int[i] = int64(le.Uint16(raw[2*i:]))
		case TypeInt32:
			t.Int[i] = int64(int32(le.Uint32(raw[4*i:])))
		case TypeUint32:
			t.Int[i] = int64(le.Uint32(raw[4*i:]))
		case TypeInt64:
			t.Int[i] = int64(le.Uint64(raw[8*i:]))
		case TypeUint64:
			v := le.Uint64(raw[8*i:])
			if v > math.MaxInt64 {
				return fmt.Errorf("uint64 value %d does not fit int64", v)
			}
			t.Int[i] = int64(v)
		}
	}
	if t.DataType == TypeBool {
		for i, v := range t.Int {
			if v != 0 {
				t.Int[i] = 1
			}
		}
	}
	return nil
}

// typed decodes the typed repeated fields onnx.proto assigns to each type.
func (tf *tensorFields) typed(t *Tensor, n int) error {
	count := func(have int, fieldName string) error {
		if have != n {
			return fmt.Errorf("%s has %d values, dims %v need %d", fieldName, have, t.Dims, n)
		}
		return nil
	}
	switch t.DataType {
	case TypeFloat:
		if err := count(len(tf.floats)/4+len(tf.floatList), "float_data"); err != nil {
			return err
		}
		t.Float = make([]float64, 0, n)
		for i := 0; i+4 <= len(tf.floats); i += 4 {
			t.Float = append(t.Float, float64(math.Float32frombits(binary.LittleEndian.Uint32(tf.floats[i:]))))
		}
		for _, v := range tf.floatList {
			t.Float = append(t.Float, float64(math.Float32frombits(uint32(v))))
		}
	case TypeDouble:
		if err := count(len(tf.doubles)/8+len(tf.doubleList), "double_data"); err != nil {
			return err
		}
		t.Float = make([]float64, 0, n)
		for i := 0; i+8 <= len(tf.doubles); i += 8 {
			t.Float = append(t.Float, math.Float64frombits(binary.LittleEndian.Uint64(tf.doubles[i:])))
		}
		for _, v := range tf.doubleList {
			t.Float = append(t.Float, math.Float64frombits(v))
		}
	case TypeFloat16, TypeBFloat16:
		if err := count(len(tf.int32s), "int32_data"); err != nil {
			return err
		}
		t.Float = make([]float64, n)
		for i, v := range tf.int32s {
			if t.DataType == TypeFloat16 {
				t.Float[i] = half(uint16(v))
			} else {
				t.Float[i] = float64(math.Float32frombits(uint32(uint16(v)) << 16))
			}
		}
	case TypeInt64:
		if err := count(len(tf.int64s), "int64_data"); err != nil {
			return err
		}
		t.Int = tf.int64s
	case TypeUint32, TypeUint64:
		if err := count(len(tf.uint64s), "uint64_data"); err != nil {
			return err
		}
		for _, v := range tf.uint64s {
			if v < 0 {
				return fmt.Errorf("uint64 value %d does not fit int64", uint64(v))
			}
		}
		t.Int = tf.uint64s
	default: // int32, int16, int8, uint16, uint8, bool
		if err := count(len(tf.int32s), "int32_data"); err != nil {
			return err
		}
		t.Int = make([]int64, n)
		for i, v := range tf.int32s {
			t.Int[i] = int64(int32(v))
			if t.DataType == TypeBool && v != 0 {
				t.Int[i] = 1
			}
		}
	}
	return nil
}

// half converts IEEE 754 binary16 bits to a float64.
func half(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

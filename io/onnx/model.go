package onnx

// DecodeModel reads ONNX's protobuf messages with protowire and the field
// numbers of onnx.proto (checked against ONNX 1.12's copy, as Debian's
// python3-onnx installs it: /usr/lib/python3/dist-packages/onnx/onnx.proto).
// No protobuf type is registered, so it coexists with onnx-go's generated
// ones. It decodes what an importer needs: functions, lists of graphs,
// sparse and type-proto attributes are flagged or skipped, never descended
// into; a graph attribute (an If's branches) is decoded, nested at most
// maxSubgraphDepth deep. Unknown fields are skipped; a known field with
// the wrong wire type is an error. Every tensor's element count is checked
// against the bytes holding its values before they are allocated.

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Model is a decoded ModelProto.
type Model struct {
	IRVersion       int64
	Opsets          map[string]int64 // domain ("" = ai.onnx, also for "ai.onnx") -> version
	ProducerName    string
	ProducerVersion string
	DocString       string
	Graph           *Graph
	// Metadata is metadata_props (key → value; a repeated key keeps its
	// last value).
	Metadata map[string]string
}

// Graph is a decoded GraphProto.
type Graph struct {
	Name         string
	Nodes        []*Node // in file order
	Initializers []*Tensor
	Inputs       []*ValueInfo
	Outputs      []*ValueInfo
	ValueInfo    []*ValueInfo
}

// Node is a decoded NodeProto. Domain "ai.onnx" is given as "".
type Node struct {
	Name, OpType, Domain string
	Inputs, Outputs      []string // "" marks an omitted optional input, kept in place
	Attrs                map[string]*Attribute
	Index                int // position in the graph's node list

	// lp is set by fuseNorms on a ReduceL2 node that computes a norm of
	// another order: (Σ|x|ᵖ)^(1/p). A file cannot set it.
	lp float64
	// flatAtZero is set by fuseNorms on a Sqrt whose derivative at 0 is
	// taken as 0 (flatSqrt). A file cannot set it.
	flatAtZero bool
}

// AttrType is AttributeProto.AttributeType.
type AttrType int32

// AttributeProto.AttributeType values.
const (
	AttrUndefined     AttrType = 0
	AttrFloat         AttrType = 1
	AttrInt           AttrType = 2
	AttrString        AttrType = 3
	AttrTensor        AttrType = 4
	AttrGraph         AttrType = 5
	AttrFloats        AttrType = 6
	AttrInts          AttrType = 7
	AttrStrings       AttrType = 8
	AttrTensors       AttrType = 9
	AttrGraphs        AttrType = 10
	AttrSparseTensor  AttrType = 11
	AttrSparseTensors AttrType = 12
	AttrTypeProto     AttrType = 13
	AttrTypeProtos    AttrType = 14
)

var attrTypeNames = [...]string{"undefined", "float", "int", "string", "tensor", "graph", "floats", "ints",
	"strings", "tensors", "graphs", "sparse_tensor", "sparse_tensors", "type_proto", "type_protos"}

// String is the type's name in onnx.proto, in lower case ("ints").
func (t AttrType) String() string {
	if t >= 0 && int(t) < len(attrTypeNames) {
		return attrTypeNames[t]
	}
	return fmt.Sprintf("AttrType(%d)", int32(t))
}

// Attribute is a decoded AttributeProto. Only the field its Type names is
// meaningful. A graph attribute (g: If's branches, Loop's body) is decoded
// into G; lists of graphs are only flagged by HasGraph, and the tensors,
// sparse tensors and type protos of the list types are not decoded (Type
// still tells which was given).
type Attribute struct {
	Name        string
	Type        AttrType // from the type field; if absent (old files), inferred from the first field set
	F           float32
	I           int64
	S           []byte
	T           *Tensor
	Floats      []float32 // packed and unpacked encodings both accepted
	Ints        []int64
	Strings     [][]byte
	RefAttrName string // ref_attr_name (functions); non-empty is refused by the importer
	G           *Graph // the subgraph g, decoded
	HasGraph    bool   // a subgraph is given (g or graphs)
}

// DataType is TensorProto.DataType.
type DataType int32

// TensorProto.DataType values.
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

var dataTypeNames = [...]string{"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
	"string", "bool", "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16"}

// String is the type's name as numpy and ONNX's docs write it ("float",
// "int64", "float16").
func (t DataType) String() string {
	if t >= 0 && int(t) < len(dataTypeNames) {
		return dataTypeNames[t]
	}
	return fmt.Sprintf("DataType(%d)", int32(t))
}

// elemSize is the size of one element in raw_data, 0 for the types the
// decoder does not support (string, complex, undefined, unknown).
func (t DataType) elemSize() int {
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

// floating reports whether t's values go to Tensor.Float.
func (t DataType) floating() bool {
	return t == TypeFloat || t == TypeDouble || t == TypeFloat16 || t == TypeBFloat16
}

// Tensor is a decoded TensorProto. A decoded tensor of a floating type has
// a non-nil Float of Len() values and a nil Int; one of an integer or bool
// type the reverse.
type Tensor struct {
	Name     string
	Dims     []int64
	DataType DataType
	Float    []float64 // values of float, double, float16, bfloat16 tensors
	Int      []int64   // values of integer and bool tensors (bool as 0/1)
}

// Len is the number of elements: the product of Dims, 1 for a 0-d tensor
// (0 if a dimension is 0 or negative), saturated at math.MaxInt.
func (t *Tensor) Len() int { return sizeOf(toInts(t.Dims)) }

// ValueInfo is a decoded ValueInfoProto. Values that are not tensors
// (sequences, maps, optionals) have ElemType 0 and no shape.
type ValueInfo struct {
	Name     string
	ElemType DataType // from type.tensor_type.elem_type; 0 if absent
	HasShape bool
	Shape    []Dim
}

// Dim is one dimension of a ValueInfo's shape.
type Dim struct {
	Value int64  // ≥ 0 when known (dim_value set)
	Param string // dim_param, a symbolic name; Value -1 and Param "" means unknown
}

// maxSubgraphDepth bounds the nesting of graph attributes (an If inside an
// If's branch is at depth 2).
const maxSubgraphDepth = 8

// maxTensorLen bounds the elements of one decoded tensor (2 GiB of
// float64s): a larger one is refused before anything is allocated.
const maxTensorLen = 1 << 28

// DecodeModel decodes a serialized ModelProto.
func DecodeModel(b []byte) (*Model, error) {
	m := &Model{Opsets: map[string]int64{}}
	inField := false // the error is a field's, not the file's framing
	err := readFields(&modelSpec, b, func(f pbField) (err error) {
		defer func() { inField = err != nil }()
		switch f.num {
		case fModelIRVersion:
			m.IRVersion = int64(f.u)
		case fModelProducerName:
			m.ProducerName = string(f.b)
		case fModelProducerVersion:
			m.ProducerVersion = string(f.b)
		case fModelDocString:
			m.DocString = string(f.b)
		case fModelGraph:
			m.Graph, err = decodeGraph(f.b, 0)
		case fModelOpsetImport:
			err = decodeOpset(f.b, m.Opsets)
		case fModelMetadataProps:
			err = decodeEntry(f.b, m)
		}
		return err
	})
	if err != nil && !inField {
		return nil, fmt.Errorf("%w: %s", err, notAModel) // round 80 B2: a text file got the wire error alone
	}
	if err != nil {
		return nil, err
	}
	if m.Graph == nil {
		return nil, errors.New("model has no graph: " + notAModel)
	}
	return m, nil
}

// notAModel says what a file that does not decode as a model is likely to
// be.
const notAModel = "not an ONNX model, or one cut short or damaged (an .onnx file is an ONNX ModelProto, the protobuf torch.onnx.export writes)"

// decodeEntry adds a StringStringEntryProto to m.Metadata.
func decodeEntry(b []byte, m *Model) error {
	var key, value string
	err := readFields(&entrySpec, b, func(f pbField) error {
		if f.num == fEntryKey {
			key = string(f.b)
		} else {
			value = string(f.b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m.Metadata == nil {
		m.Metadata = map[string]string{}
	}
	m.Metadata[key] = value
	return nil
}

// decodeOpset adds an OperatorSetIdProto to opsets.
func decodeOpset(b []byte, opsets map[string]int64) error {
	var domain string
	var version int64
	err := readFields(&opsetSpec, b, func(f pbField) error {
		if f.num == fOpsetDomain {
			domain = string(f.b)
		} else {
			version = int64(f.u)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("opset_import: %w", err)
	}
	opsets[defaultDomain(domain)] = version
	return nil
}

// defaultDomain maps "ai.onnx", the default domain's other spelling, to "".
func defaultDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

// decodeGraph decodes a GraphProto, the main graph at depth 0 or a graph
// attribute's at depth > 0.
func decodeGraph(b []byte, depth int) (*Graph, error) {
	if depth > maxSubgraphDepth {
		return nil, fmt.Errorf("subgraphs nested more than %d deep", maxSubgraphDepth)
	}
	g := &Graph{}
	err := readFields(&graphSpec, b, func(f pbField) error {
		switch f.num {
		case fGraphName:
			g.Name = string(f.b)
		case fGraphNode:
			nd, err := decodeNode(f.b, len(g.Nodes), depth)
			g.Nodes = append(g.Nodes, nd)
			return err
		case fGraphInitializer:
			t, err := decodeTensor(f.b)
			if err != nil {
				return fmt.Errorf("%s: %w", tensorLabel("initializer", t.Name, len(g.Initializers)), err)
			}
			g.Initializers = append(g.Initializers, t)
		case fGraphInput, fGraphOutput, fGraphValueInfo:
			return g.addValueInfo(f)
		case fGraphSparseInitializer:
			return errors.New("sparse initializers are not supported")
		}
		return nil
	})
	return g, err
}

// addValueInfo decodes a graph input, output or value_info entry.
func (g *Graph) addValueInfo(f pbField) error {
	list, role := &g.Inputs, "input"
	switch f.num {
	case fGraphOutput:
		list, role = &g.Outputs, "output"
	case fGraphValueInfo:
		list, role = &g.ValueInfo, "value_info"
	}
	v, err := decodeValueInfo(f.b)
	if err != nil {
		return fmt.Errorf("%s: %w", tensorLabel("graph "+role, v.Name, len(*list)), err)
	}
	*list = append(*list, v)
	return nil
}

// tensorLabel names a tensor or value in errors: by name, or by position
// when it has none.
func tensorLabel(role, name string, index int) string {
	if name == "" {
		return fmt.Sprintf("%s #%d", role, index)
	}
	return fmt.Sprintf("%s %q", role, name)
}

// decodeNode decodes a NodeProto, the index-th of its graph (at depth).
// The attributes are decoded last, so that their errors can name the node.
func decodeNode(b []byte, index, depth int) (*Node, error) {
	nd := &Node{Index: index, Attrs: map[string]*Attribute{}}
	var attrs [][]byte
	err := readFields(&nodeSpec, b, func(f pbField) error {
		switch f.num {
		case fNodeInput:
			nd.Inputs = append(nd.Inputs, string(f.b))
		case fNodeOutput:
			nd.Outputs = append(nd.Outputs, string(f.b))
		case fNodeName:
			nd.Name = string(f.b)
		case fNodeOpType:
			nd.OpType = string(f.b)
		case fNodeDomain:
			nd.Domain = string(f.b)
		case fNodeAttribute:
			attrs = append(attrs, f.b)
		}
		return nil
	})
	if err != nil {
		return nd, fmt.Errorf("%s: %w", nd.label(), err)
	}
	nd.Domain = defaultDomain(nd.Domain)
	for _, ab := range attrs {
		if err := nd.addAttribute(ab, depth); err != nil {
			return nd, err
		}
	}
	return nd, nil
}

// label names the node in errors: `node "Gemm_0"`, or by position and
// operator when it has no name.
func (nd *Node) label() string {
	switch {
	case nd.Name != "":
		return fmt.Sprintf("node %q", nd.Name)
	case nd.OpType != "":
		return fmt.Sprintf("node #%d (%s)", nd.Index, nd.OpType)
	}
	return fmt.Sprintf("node #%d", nd.Index)
}

// addAttribute decodes an AttributeProto of a node at depth into nd.Attrs.
func (nd *Node) addAttribute(b []byte, depth int) error {
	a, err := decodeAttribute(b, depth)
	switch {
	case err != nil && a.Name == "":
		return fmt.Errorf("%s attribute #%d: %w", nd.label(), len(nd.Attrs), err)
	case err != nil:
		return fmt.Errorf("%s attribute %q: %w", nd.label(), a.Name, err)
	case a.Name == "":
		return fmt.Errorf("%s: attribute #%d has no name", nd.label(), len(nd.Attrs))
	case nd.Attrs[a.Name] != nil:
		return fmt.Errorf("%s: attribute %q is given twice", nd.label(), a.Name)
	}
	nd.Attrs[a.Name] = a
	return nil
}

// decodeAttribute decodes an AttributeProto of a node at depth. Its tensor
// or graph is decoded last: the returned attribute carries its name even
// on error.
func decodeAttribute(b []byte, depth int) (*Attribute, error) {
	a := &Attribute{}
	var tensor, graph []byte
	var first AttrType // the type of the first value field, for files without a type
	err := readFields(&attrSpec, b, func(f pbField) error {
		if t := attrFieldType[f.num]; t != 0 && first == 0 {
			first = t
		}
		switch f.num {
		case fAttrT:
			tensor = f.b
		case fAttrG:
			graph, a.HasGraph = f.b, true
		default:
			return a.set(f)
		}
		return nil
	})
	if err != nil {
		return a, err
	}
	if a.Type == AttrUndefined {
		a.Type = first
	}
	if tensor != nil {
		if a.T, err = decodeTensor(tensor); err != nil {
			return a, err
		}
	}
	if graph != nil {
		a.G, err = decodeGraph(graph, depth+1)
	}
	return a, err
}

// set stores one field of an AttributeProto (all but t and g).
func (a *Attribute) set(f pbField) error {
	switch f.num {
	case fAttrName:
		a.Name = string(f.b)
	case fAttrType:
		a.Type = AttrType(int32(f.u))
	case fAttrRefAttrName:
		a.RefAttrName = string(f.b)
	case fAttrF:
		a.F = math.Float32frombits(uint32(f.u))
	case fAttrI:
		a.I = int64(f.u)
	case fAttrS:
		a.S = bytes.Clone(f.b) // not aliasing the caller's buffer
	case fAttrStrings:
		a.Strings = append(a.Strings, bytes.Clone(f.b))
	case fAttrGraphs:
		a.HasGraph = true
	case fAttrFloats:
		return eachValue(f, 4, func(u uint64) error {
			a.Floats = append(a.Floats, math.Float32frombits(uint32(u)))
			return nil
		})
	case fAttrInts:
		return eachValue(f, 0, func(u uint64) error {
			a.Ints = append(a.Ints, int64(u))
			return nil
		})
	}
	return nil
}

// decodeValueInfo decodes a ValueInfoProto; its type is decoded after its
// name, so that errors name the value.
func decodeValueInfo(b []byte) (*ValueInfo, error) {
	v := &ValueInfo{}
	var typ []byte
	err := readFields(&valueInfoSpec, b, func(f pbField) error {
		if f.num == fValueInfoName {
			v.Name = string(f.b)
		} else {
			typ = f.b
		}
		return nil
	})
	if err != nil || typ == nil {
		return v, err
	}
	// TypeProto: only tensor_type is decoded.
	return v, readFields(&typeSpec, typ, func(f pbField) error { return v.decodeTensorType(f.b) })
}

// decodeTensorType decodes a TypeProto.Tensor into v.
func (v *ValueInfo) decodeTensorType(b []byte) error {
	return readFields(&tensorTypeSpec, b, func(f pbField) error {
		if f.num == fTensorTypeElemType {
			v.ElemType = DataType(int32(f.u))
			return nil
		}
		v.HasShape, v.Shape = true, v.Shape[:0]
		return readFields(&shapeSpec, f.b, func(f pbField) error {
			d, err := decodeDim(f.b)
			v.Shape = append(v.Shape, d)
			return err
		})
	})
}

// decodeDim decodes a TensorShapeProto.Dimension (a oneof: the last of
// dim_value and dim_param wins). A negative dim_value reads as unknown.
func decodeDim(b []byte) (Dim, error) {
	d := Dim{Value: -1}
	err := readFields(&dimSpec, b, func(f pbField) error {
		if f.num == fDimValue {
			d = Dim{Value: max(int64(f.u), -1)}
		} else {
			d = Dim{Value: -1, Param: string(f.b)}
		}
		return nil
	})
	return d, err
}

// tensorScan is what the first pass over a TensorProto finds besides the
// dims, type and name: where the values are and how many there are.
type tensorScan struct {
	raw      []byte
	hasRaw   bool
	external bool
	counts   [fTensorUint64Data + 1]int // values in each typed field, by field number
}

// decodeTensor decodes a TensorProto in two passes: the first reads the
// dims, type and name and counts the values; once the count is checked
// against the dims, the second decodes them. The returned tensor is never
// nil and has its name even on error.
func decodeTensor(b []byte) (*Tensor, error) {
	t := &Tensor{}
	var s tensorScan
	if err := readFields(&tensorSpec, b, func(f pbField) error { return s.add(t, f) }); err != nil {
		return t, err
	}
	n, err := s.check(t)
	if err != nil {
		return t, err
	}
	if t.DataType.floating() {
		t.Float = make([]float64, n)
	} else {
		t.Int = make([]int64, n)
	}
	if s.hasRaw {
		return t, t.decodeRaw(s.raw)
	}
	return t, t.decodeTyped(b, n)
}

// add records one field of the first pass.
func (s *tensorScan) add(t *Tensor, f pbField) error {
	switch f.num {
	case fTensorDims:
		return eachValue(f, 0, func(u uint64) error {
			t.Dims = append(t.Dims, int64(u))
			return nil
		})
	case fTensorDataType:
		t.DataType = DataType(int32(f.u))
	case fTensorName:
		t.Name = string(f.b)
	case fTensorRawData:
		s.raw, s.hasRaw = f.b, true
	case fTensorDataLocation:
		s.external = f.u == 1 // EXTERNAL
	case fTensorExternalData:
		s.external = true
	case fTensorStringData:
		s.counts[f.num]++
	default: // a typed value field
		c, err := countValues(f, tensorFieldSize[f.num])
		s.counts[f.num] += c
		return err
	}
	return nil
}

// check validates the first pass and returns the element count: the data
// type is supported, the dims are sane, and exactly one field holds the
// right number of values (none for an empty tensor), as onnx's checker
// requires.
func (s *tensorScan) check(t *Tensor) (int, error) {
	if s.external {
		return 0, errors.New("external data is not supported: save the model with all tensors inside the file")
	}
	size := t.DataType.elemSize()
	switch {
	case t.DataType == TypeUndefined:
		return 0, errors.New("data_type is not set")
	case size == 0:
		return 0, fmt.Errorf("tensors of type %v are not supported", t.DataType)
	}
	n, err := elementCount(t.Dims)
	if err != nil {
		return 0, err
	}
	want := typedField(t.DataType)
	for num, c := range s.counts {
		if c > 0 && protowire.Number(num) != want {
			return 0, fmt.Errorf("%s is set, but %v tensors keep their values in %s or raw_data", tensorSpec.fields[protowire.Number(num)].name, t.DataType, tensorSpec.fields[want].name)
		}
	}
	have := s.counts[want]
	switch {
	case s.hasRaw && have > 0:
		return 0, fmt.Errorf("both raw_data and %s are set", tensorSpec.fields[want].name)
	case s.hasRaw && len(s.raw) != n*size:
		return 0, fmt.Errorf("raw_data has %d bytes, dims %v of %v need %d", len(s.raw), t.Dims, t.DataType, n*size)
	case !s.hasRaw && have == 0 && n > 0:
		return 0, fmt.Errorf("no data (neither raw_data nor %s): dims %v of %v need %d values", tensorSpec.fields[want].name, t.Dims, t.DataType, n)
	case !s.hasRaw && have != n:
		return 0, fmt.Errorf("%s has %d values, dims %v need %d", tensorSpec.fields[want].name, have, t.Dims, n)
	}
	return n, nil
}

// elementCount is the number of elements dims describe, refused when a
// dimension is negative or above maxTensorLen, or the product is (each
// partial product is checked, so it cannot overflow).
func elementCount(dims []int64) (int, error) {
	zero := false
	for _, d := range dims {
		switch {
		case d < 0:
			return 0, fmt.Errorf("negative dimension %d in dims %v", d, dims)
		case d > maxTensorLen:
			return 0, fmt.Errorf("dims %v: dimension %d is over the decoder's limit of %d elements", dims, d, maxTensorLen)
		case d == 0:
			zero = true
		}
	}
	if zero {
		return 0, nil
	}
	n := int64(1)
	for _, d := range dims {
		n *= d // n, d ≤ 2^28 before: no overflow
		if n > maxTensorLen {
			return 0, fmt.Errorf("dims %v: more than %d elements, the decoder's limit", dims, maxTensorLen)
		}
	}
	return int(n), nil
}

// typedField is the TensorProto field onnx.proto assigns to a data type's
// values when raw_data is not used.
func typedField(t DataType) protowire.Number {
	switch t {
	case TypeFloat, TypeComplex64:
		return fTensorFloatData
	case TypeInt64:
		return fTensorInt64Data
	case TypeDouble, TypeComplex128:
		return fTensorDoubleData
	case TypeUint32, TypeUint64:
		return fTensorUint64Data
	case TypeString:
		return fTensorStringData
	}
	return fTensorInt32Data // int32, int16, int8, uint16, uint8, bool, float16, bfloat16
}

// decodeRaw decodes raw_data, whose length check has already passed: n
// little-endian elements of the data type's size.
func (t *Tensor) decodeRaw(raw []byte) error {
	size := t.DataType.elemSize()
	for i := 0; i < len(raw)/size; i++ {
		var u uint64
		for k := size - 1; k >= 0; k-- {
			u = u<<8 | uint64(raw[i*size+k])
		}
		if err := t.setElem(i, u); err != nil {
			return err
		}
	}
	return nil
}

// decodeTyped is the second pass over a TensorProto: it decodes the n
// values of the data type's typed field.
func (t *Tensor) decodeTyped(b []byte, n int) error {
	want := typedField(t.DataType)
	i := 0
	return readFields(&tensorSpec, b, func(f pbField) error {
		if f.num != want {
			return nil
		}
		return eachValue(f, tensorFieldSize[f.num], func(u uint64) error {
			if i >= n { // counted in the first pass: cannot happen
				return fmt.Errorf("%s has more than %d values", tensorSpec.fields[want].name, n)
			}
			i++
			return t.setElem(i-1, u)
		})
	})
}

// setElem stores element i from its bits u: a little-endian element of
// raw_data, or a value of the typed field (float_data's and double_data's
// IEEE bits, int32_data's int32 or float16/bfloat16 bit pattern,
// int64_data's or uint64_data's integer).
func (t *Tensor) setElem(i int, u uint64) error {
	switch t.DataType {
	case TypeFloat:
		t.Float[i] = float64(math.Float32frombits(uint32(u)))
	case TypeDouble:
		t.Float[i] = math.Float64frombits(u)
	case TypeFloat16:
		t.Float[i] = float16Value(uint16(u))
	case TypeBFloat16:
		t.Float[i] = float64(math.Float32frombits(uint32(uint16(u)) << 16))
	case TypeBool:
		t.Int[i] = 0
		if u != 0 {
			t.Int[i] = 1
		}
	case TypeInt8:
		t.Int[i] = int64(int8(u))
	case TypeUint8:
		t.Int[i] = int64(uint8(u))
	case TypeInt16:
		t.Int[i] = int64(int16(u))
	case TypeUint16:
		t.Int[i] = int64(uint16(u))
	case TypeInt32:
		t.Int[i] = int64(int32(u))
	case TypeUint32:
		t.Int[i] = int64(uint32(u))
	case TypeInt64:
		t.Int[i] = int64(u)
	case TypeUint64:
		if u > math.MaxInt64 {
			return fmt.Errorf("element %d: uint64 value %d does not fit in int64", i, u)
		}
		t.Int[i] = int64(u)
	}
	return nil
}

// float16Value converts IEEE 754 binary16 bits to a float64 (exactly).
func float16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0: // zero, subnormal
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// The protobuf layer.

// pbField is one field read from a message, after its wire type was
// checked: a varint or fixed value in u, a length-delimited one in b.
type pbField struct {
	num protowire.Number
	typ protowire.Type
	u   uint64
	b   []byte
}

// wireKind is the encoding a known field accepts.
type wireKind uint8

const (
	wireVarint   wireKind = iota + 1 // int32, int64, enum
	wireFixed32                      // float
	wireBytes                        // string, bytes, message
	wireVarints                      // repeated integers: unpacked or packed
	wireFixed32s                     // repeated float: unpacked or packed
	wireFixed64s                     // repeated double: unpacked or packed
)

// accepts reports whether a field of kind k may come with wire type typ.
func (k wireKind) accepts(typ protowire.Type) bool {
	switch k {
	case wireVarint:
		return typ == protowire.VarintType
	case wireFixed32:
		return typ == protowire.Fixed32Type
	case wireBytes:
		return typ == protowire.BytesType
	case wireVarints:
		return typ == protowire.VarintType || typ == protowire.BytesType
	case wireFixed32s:
		return typ == protowire.Fixed32Type || typ == protowire.BytesType
	case wireFixed64s:
		return typ == protowire.Fixed64Type || typ == protowire.BytesType
	}
	return false
}

func (k wireKind) String() string {
	return [...]string{"", "varint", "fixed32", "bytes", "varint or packed bytes",
		"fixed32 or packed bytes", "fixed64 or packed bytes"}[k]
}

// wireName names a wire type in errors.
func wireName(typ protowire.Type) string {
	switch typ {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "bytes"
	case protowire.StartGroupType:
		return "start group"
	case protowire.EndGroupType:
		return "end group"
	}
	return fmt.Sprintf("wire type %d", typ)
}

// fieldSpec is a known field: its name in onnx.proto and encoding.
type fieldSpec struct {
	name string
	kind wireKind
}

// msgSpec is the part of a message the decoder reads: its name and the
// fields it uses, by number. Other fields are skipped.
type msgSpec struct {
	name   string
	fields map[protowire.Number]fieldSpec
}

// readFields calls fn for each known field of the message in b, in file
// order, after checking its wire type; it skips unknown fields.
func readFields(spec *msgSpec, b []byte, fn func(f pbField) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed %s: %w", spec.name, protowire.ParseError(n))
		}
		b = b[n:]
		fs, known := spec.fields[num]
		if !known {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return fmt.Errorf("malformed %s field %d: %w", spec.name, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		if !fs.kind.accepts(typ) {
			return fmt.Errorf("%s field %s (%d) has wire type %s, want %v", spec.name, fs.name, num, wireName(typ), fs.kind)
		}
		f, n := consumeValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("malformed %s field %s (%d): %w", spec.name, fs.name, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// consumeValue reads a field's value of wire type typ (varint, fixed32,
// fixed64 or bytes) from b; n < 0 is protowire's error code.
func consumeValue(num protowire.Number, typ protowire.Type, b []byte) (f pbField, n int) {
	f = pbField{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		f.u, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.u = uint64(v)
	case protowire.Fixed64Type:
		f.u, n = protowire.ConsumeFixed64(b)
	default:
		f.b, n = protowire.ConsumeBytes(b)
	}
	return f, n
}

// countValues is the number of values of a repeated scalar field: 1 when
// unpacked, else the packed elements of size bytes (0: varints).
func countValues(f pbField, size int) (int, error) {
	switch {
	case f.typ != protowire.BytesType:
		return 1, nil
	case size > 0 && len(f.b)%size != 0:
		return 0, fmt.Errorf("packed field %d has %d bytes, not a multiple of %d", f.num, len(f.b), size)
	case size > 0:
		return len(f.b) / size, nil
	case len(f.b) > 0 && f.b[len(f.b)-1] >= 0x80:
		return 0, fmt.Errorf("packed field %d: %w", f.num, protowire.ParseError(-1))
	}
	c := 0
	for _, x := range f.b {
		if x < 0x80 { // a varint's last byte
			c++
		}
	}
	return c, nil
}

// eachValue calls fn with each value of a repeated scalar field, unpacked
// (one) or packed (elements of size bytes, 0: varints).
func eachValue(f pbField, size int, fn func(u uint64) error) error {
	if f.typ != protowire.BytesType {
		return fn(f.u)
	}
	if _, err := countValues(f, size); err != nil {
		return err
	}
	for b := f.b; len(b) > 0; {
		var u uint64
		var n int
		switch size {
		case 0:
			u, n = protowire.ConsumeVarint(b)
		case 4:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			u = uint64(v)
		default:
			u, n = protowire.ConsumeFixed64(b)
		}
		if n < 0 {
			return fmt.Errorf("packed field %d: %w", f.num, protowire.ParseError(n))
		}
		if err := fn(u); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// Field numbers of onnx.proto (ONNX 1.12).
const (
	// ModelProto
	fModelIRVersion       = 1
	fModelProducerName    = 2
	fModelProducerVersion = 3
	fModelDocString       = 6
	fModelGraph           = 7
	fModelOpsetImport     = 8
	fModelMetadataProps   = 14
	// StringStringEntryProto
	fEntryKey   = 1
	fEntryValue = 2
	// OperatorSetIdProto
	fOpsetDomain  = 1
	fOpsetVersion = 2
	// GraphProto
	fGraphNode              = 1
	fGraphName              = 2
	fGraphInitializer       = 5
	fGraphInput             = 11
	fGraphOutput            = 12
	fGraphValueInfo         = 13
	fGraphSparseInitializer = 15
	// NodeProto
	fNodeInput     = 1
	fNodeOutput    = 2
	fNodeName      = 3
	fNodeOpType    = 4
	fNodeAttribute = 5
	fNodeDomain    = 7
	// AttributeProto
	fAttrName          = 1
	fAttrF             = 2
	fAttrI             = 3
	fAttrS             = 4
	fAttrT             = 5
	fAttrG             = 6
	fAttrFloats        = 7
	fAttrInts          = 8
	fAttrStrings       = 9
	fAttrTensors       = 10
	fAttrGraphs        = 11
	fAttrTp            = 14
	fAttrTypeProtos    = 15
	fAttrType          = 20
	fAttrRefAttrName   = 21
	fAttrSparseTensor  = 22
	fAttrSparseTensors = 23
	// ValueInfoProto
	fValueInfoName = 1
	fValueInfoType = 2
	// TypeProto (only tensor_type is read) and TypeProto.Tensor
	fTypeTensorType     = 1
	fTensorTypeElemType = 1
	fTensorTypeShape    = 2
	// TensorShapeProto and TensorShapeProto.Dimension
	fShapeDim = 1
	fDimValue = 1
	fDimParam = 2
	// TensorProto
	fTensorDims         = 1
	fTensorDataType     = 2
	fTensorFloatData    = 4
	fTensorInt32Data    = 5
	fTensorStringData   = 6
	fTensorInt64Data    = 7
	fTensorName         = 8
	fTensorRawData      = 9
	fTensorDoubleData   = 10
	fTensorUint64Data   = 11
	fTensorExternalData = 13
	fTensorDataLocation = 14
)

// The fields read of each message.
var (
	modelSpec = msgSpec{"ModelProto", map[protowire.Number]fieldSpec{
		fModelIRVersion: {"ir_version", wireVarint}, fModelProducerName: {"producer_name", wireBytes},
		fModelProducerVersion: {"producer_version", wireBytes}, fModelDocString: {"doc_string", wireBytes}, fModelGraph: {"graph", wireBytes},
		fModelOpsetImport: {"opset_import", wireBytes}, fModelMetadataProps: {"metadata_props", wireBytes}}}
	entrySpec = msgSpec{"StringStringEntryProto", map[protowire.Number]fieldSpec{
		fEntryKey: {"key", wireBytes}, fEntryValue: {"value", wireBytes}}}
	opsetSpec = msgSpec{"OperatorSetIdProto", map[protowire.Number]fieldSpec{
		fOpsetDomain: {"domain", wireBytes}, fOpsetVersion: {"version", wireVarint}}}
	graphSpec = msgSpec{"GraphProto", map[protowire.Number]fieldSpec{
		fGraphNode: {"node", wireBytes}, fGraphName: {"name", wireBytes}, fGraphInitializer: {"initializer", wireBytes},
		fGraphInput: {"input", wireBytes}, fGraphOutput: {"output", wireBytes}, fGraphValueInfo: {"value_info", wireBytes},
		fGraphSparseInitializer: {"sparse_initializer", wireBytes}}}
	nodeSpec = msgSpec{"NodeProto", map[protowire.Number]fieldSpec{
		fNodeInput: {"input", wireBytes}, fNodeOutput: {"output", wireBytes}, fNodeName: {"name", wireBytes},
		fNodeOpType: {"op_type", wireBytes}, fNodeAttribute: {"attribute", wireBytes}, fNodeDomain: {"domain", wireBytes}}}
	attrSpec = msgSpec{"AttributeProto", map[protowire.Number]fieldSpec{
		fAttrName: {"name", wireBytes}, fAttrF: {"f", wireFixed32}, fAttrI: {"i", wireVarint}, fAttrS: {"s", wireBytes},
		fAttrT: {"t", wireBytes}, fAttrG: {"g", wireBytes}, fAttrFloats: {"floats", wireFixed32s},
		fAttrInts: {"ints", wireVarints}, fAttrStrings: {"strings", wireBytes}, fAttrTensors: {"tensors", wireBytes},
		fAttrGraphs: {"graphs", wireBytes}, fAttrTp: {"tp", wireBytes}, fAttrTypeProtos: {"type_protos", wireBytes},
		fAttrType: {"type", wireVarint}, fAttrRefAttrName: {"ref_attr_name", wireBytes},
		fAttrSparseTensor: {"sparse_tensor", wireBytes}, fAttrSparseTensors: {"sparse_tensors", wireBytes}}}
	valueInfoSpec = msgSpec{"ValueInfoProto", map[protowire.Number]fieldSpec{
		fValueInfoName: {"name", wireBytes}, fValueInfoType: {"type", wireBytes}}}
	typeSpec = msgSpec{"TypeProto", map[protowire.Number]fieldSpec{
		fTypeTensorType: {"tensor_type", wireBytes}}}
	tensorTypeSpec = msgSpec{"TypeProto.Tensor", map[protowire.Number]fieldSpec{
		fTensorTypeElemType: {"elem_type", wireVarint}, fTensorTypeShape: {"shape", wireBytes}}}
	shapeSpec = msgSpec{"TensorShapeProto", map[protowire.Number]fieldSpec{
		fShapeDim: {"dim", wireBytes}}}
	dimSpec = msgSpec{"TensorShapeProto.Dimension", map[protowire.Number]fieldSpec{
		fDimValue: {"dim_value", wireVarint}, fDimParam: {"dim_param", wireBytes}}}
	tensorSpec = msgSpec{"TensorProto", map[protowire.Number]fieldSpec{
		fTensorDims: {"dims", wireVarints}, fTensorDataType: {"data_type", wireVarint},
		fTensorFloatData: {"float_data", wireFixed32s}, fTensorInt32Data: {"int32_data", wireVarints},
		fTensorStringData: {"string_data", wireBytes}, fTensorInt64Data: {"int64_data", wireVarints},
		fTensorName: {"name", wireBytes}, fTensorRawData: {"raw_data", wireBytes},
		fTensorDoubleData: {"double_data", wireFixed64s}, fTensorUint64Data: {"uint64_data", wireVarints},
		fTensorExternalData: {"external_data", wireBytes}, fTensorDataLocation: {"data_location", wireVarint}}}
)

// attrFieldType is the attribute type each value field implies, for files
// without the type field.
var attrFieldType = map[protowire.Number]AttrType{
	fAttrF: AttrFloat, fAttrI: AttrInt, fAttrS: AttrString, fAttrT: AttrTensor, fAttrG: AttrGraph,
	fAttrFloats: AttrFloats, fAttrInts: AttrInts, fAttrStrings: AttrStrings, fAttrTensors: AttrTensors,
	fAttrGraphs: AttrGraphs, fAttrSparseTensor: AttrSparseTensor, fAttrSparseTensors: AttrSparseTensors,
	fAttrTp: AttrTypeProto, fAttrTypeProtos: AttrTypeProtos,
}

// tensorFieldSize is the packed element size of TensorProto's typed value
// fields (0: varints).
var tensorFieldSize = map[protowire.Number]int{
	fTensorFloatData: 4, fTensorDoubleData: 8, fTensorInt32Data: 0, fTensorInt64Data: 0, fTensorUint64Data: 0,
}

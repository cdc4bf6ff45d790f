// Package onnx writes flowebm's models as ONNX files (IR 7, opset 13) that
// ONNX Runtime and PyTorch tooling run. The protobuf messages are encoded
// by hand with protowire, so nothing registers ONNX's proto names (which
// would clash with onnx-go's).
package onnx

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Versions written.
const (
	IRVersion = 7
	Opset     = 13
)

// ONNX TensorProto data types.
const (
	typeFloat  = 1
	typeInt64  = 7
	typeDouble = 11
)

// AttributeProto types.
const (
	attrFloat = 1
	attrInt   = 2
)

// msg accumulates one protobuf message.
type msg []byte

func (m *msg) bytes(field protowire.Number, b []byte) {
	*m = protowire.AppendTag(*m, field, protowire.BytesType)
	*m = protowire.AppendBytes(*m, b)
}

func (m *msg) str(field protowire.Number, s string) { m.bytes(field, []byte(s)) }

func (m *msg) varint(field protowire.Number, v int64) {
	*m = protowire.AppendTag(*m, field, protowire.VarintType)
	*m = protowire.AppendVarint(*m, uint64(v))
}

func (m *msg) float32(field protowire.Number, v float32) {
	*m = protowire.AppendTag(*m, field, protowire.Fixed32Type)
	*m = protowire.AppendFixed32(*m, math.Float32bits(v))
}

// attr is an AttributeProto.
type attr struct {
	name string
	f    float64
	i    int64
	kind int
}

func floatAttr(name string, v float64) attr { return attr{name: name, f: v, kind: attrFloat} }
func intAttr(name string, v int64) attr     { return attr{name: name, i: v, kind: attrInt} }

func (a attr) encode() msg {
	var m msg
	m.str(1, a.name)
	switch a.kind {
	case attrFloat:
		m.float32(2, float32(a.f))
	case attrInt:
		m.varint(3, a.i)
	}
	m.varint(20, int64(a.kind))
	return m
}

// tensor is a TensorProto with raw little-endian data.
func tensorProto(name string, dims []int, dtype int, data []float64) msg {
	var m msg
	for _, d := range dims {
		m.varint(1, int64(d))
	}
	m.varint(2, int64(dtype))
	m.str(8, name)
	var raw []byte
	switch dtype {
	case typeFloat:
		raw = make([]byte, 4*len(data))
		for i, v := range data {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(v)))
		}
	case typeDouble:
		raw = make([]byte, 8*len(data))
		for i, v := range data {
			binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
		}
	case typeInt64:
		raw = make([]byte, 8*len(data))
		for i, v := range data {
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(int64(v)))
		}
	}
	m.bytes(9, raw)
	return m
}

// valueInfo is a ValueInfoProto of a tensor whose dimensions are given by
// size (> 0) or by name (a symbolic dimension such as "batch").
func valueInfo(name string, dtype int, dims ...any) msg {
	var shape msg
	for _, d := range dims {
		var dim msg
		switch v := d.(type) {
		case int:
			dim.varint(1, int64(v))
		case string:
			dim.str(2, v)
		}
		shape.bytes(1, dim)
	}
	var tt msg
	tt.varint(1, int64(dtype))
	tt.bytes(2, shape)
	var typ msg
	typ.bytes(1, tt)
	var m msg
	m.str(1, name)
	m.bytes(2, typ)
	return m
}

// model encodes a ModelProto around a graph.
// model wraps a graph in a ModelProto; meta are metadata_props entries
// (key, value).
func model(graph msg, doc string, meta ...[2]string) []byte {
	var opset msg
	opset.str(1, "")
	opset.varint(2, Opset)
	var m msg
	m.varint(1, IRVersion)
	m.str(2, "flowebm")
	m.str(3, "1")
	m.str(6, doc)
	m.bytes(7, graph)
	m.bytes(8, opset)
	for _, kv := range meta {
		var e msg
		e.str(1, kv[0])
		e.str(2, kv[1])
		m.bytes(14, e)
	}
	return m
}

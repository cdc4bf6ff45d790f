package onnx

import (
	"math"
	"strings"
	"testing"
)

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

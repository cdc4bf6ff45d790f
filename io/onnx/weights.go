package onnx

import (
	"fmt"

	"github.com/flowebm/flowebm/graph"
	"google.golang.org/protobuf/encoding/protowire"
)

// UpdateWeights returns the ONNX model in b with every initializer named
// like a parameter of p replaced by the parameter's current values (same
// shape and element type); everything else is kept byte for byte. Use it
// to take a network imported with Decode, and trained in flowebm, back to
// the framework it came from.
func UpdateWeights(b []byte, p *graph.Params) ([]byte, error) {
	params := map[string]*graph.Param{}
	for _, q := range p.List() {
		params[q.Name] = q
	}
	return updateWeights(b, params)
}

// updateWeights is UpdateWeights for the parameters in params, each of
// which must be an initializer of b.
func updateWeights(b []byte, params map[string]*graph.Param) ([]byte, error) {
	found := map[string]bool{}
	var out msg
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, raw []byte) error {
		if num != 7 || typ != protowire.BytesType {
			out = append(out, raw...)
			return nil
		}
		var g msg
		err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, raw []byte) error {
			if num != 5 || typ != protowire.BytesType {
				g = append(g, raw...)
				return nil
			}
			t, err := updateTensor(v, params, found)
			if err != nil {
				return err
			}
			g.bytes(5, t)
			return nil
		})
		if err != nil {
			return err
		}
		out.bytes(7, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name := range params {
		if !found[name] {
			return nil, fmt.Errorf("onnx: parameter %q is not an initializer of the model", name)
		}
	}
	return out, nil
}

// eachField calls fn with every field of the message b: its number, wire
// type, value (the bytes of a length-delimited field) and raw encoding.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v, raw []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("onnx: malformed protobuf: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("onnx: malformed protobuf field %d: %w", num, protowire.ParseError(m))
		}
		var v []byte
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := fn(num, typ, v, b[:n+m]); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// updateTensor re-encodes the TensorProto v with its parameter's values if
// it names one.
func updateTensor(v []byte, params map[string]*graph.Param, found map[string]bool) (msg, error) {
	var name string
	var dims []int
	dtype := 0
	err := eachField(v, func(num protowire.Number, typ protowire.Type, f, raw []byte) error {
		switch {
		case num == 8 && typ == protowire.BytesType:
			name = string(f)
		case num == 2 && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(num):])
			dtype = int(x)
		case num == 1 && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(num):])
			dims = append(dims, int(x))
		case num == 1 && typ == protowire.BytesType: // packed dims
			for len(f) > 0 {
				x, k := protowire.ConsumeVarint(f)
				if k < 0 {
					return fmt.Errorf("onnx: initializer dims: %w", protowire.ParseError(k))
				}
				dims = append(dims, int(x))
				f = f[k:]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	q, ok := params[name]
	if !ok {
		return msg(v), nil
	}
	if fmt.Sprint(dims) != fmt.Sprint(q.Shape) && !(len(dims) == 0 && len(q.Shape) == 1 && q.Shape[0] == 1) {
		return nil, fmt.Errorf("onnx: initializer %q has shape %v, the parameter %v", name, dims, q.Shape)
	}
	if dtype != typeFloat && dtype != typeDouble {
		return nil, fmt.Errorf("onnx: initializer %q has data type %d, want float (1) or double (11)", name, dtype)
	}
	found[name] = true
	return tensorProto(name, dims, dtype, q.Float64s()), nil
}

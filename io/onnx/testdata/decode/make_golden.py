#!/usr/bin/python3
"""Writes the golden decodings that model_test.go compares DecodeModel with.

Run with Debian's python (python3-onnx 1.12, python3-numpy), from this
directory:  /usr/bin/python3 make_golden.py

It writes
  edge.onnx     a model built with onnx.helper (an encoder independent of
                the Go tests' protowire one) with 0-d constants, every
                supported element type in raw_data and in the typed fields,
                Split's several outputs, an omitted optional input,
                attributes of every kind and a subgraph;
  golden.json   for edge.onnx and a few PyTorch exports under ../torch:
                opsets, nodes (op types, inputs, outputs, attributes),
                inputs/outputs with shapes, and every tensor's name, dims,
                data type, element count, sums and leading values (all the
                values for edge.onnx), as onnx and numpy_helper decode them.
"""
import json
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TORCH = ["relu_f32", "elu_f64", "silu_f32", "toy_opset9_f32", "toy_opset17_f64", "toy_fixed_batch_f64"]


def num(v):
    """A JSON-safe float: non-finite values as strings."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return v


def tensor(t, full):
    """Summary of a TensorProto from numpy_helper's decoding."""
    a = numpy_helper.to_array(t)
    if t.data_type == TensorProto.BFLOAT16 and a.dtype != np.float32:
        raise SystemExit("unexpected bfloat16 decoding")
    flat = a.reshape(-1)
    out = {"name": t.name, "dims": list(t.dims), "data_type": t.data_type, "len": int(flat.size)}
    if a.dtype.kind in "f":
        vals = [float(v) for v in flat]
        s = w = 0.0
        for i, v in enumerate(vals):  # sequential sums, as Go adds them
            s += v
            w += (i + 1) * v
        out["sum"], out["wsum"] = num(s), num(w)
        shown = vals if full else vals[:6]
        out["values"] = [num(v) for v in shown]
    else:
        vals = [int(v) for v in flat]
        out["isum"] = sum(vals)
        out["ivalues"] = vals if full else vals[:6]
    return out


def attribute(a, full):
    out = {"type": a.type}
    T = onnx.AttributeProto
    if a.type == T.FLOAT:
        out["f"] = num(a.f)
    elif a.type == T.INT:
        out["i"] = a.i
    elif a.type == T.STRING:
        out["s"] = a.s.decode()
    elif a.type == T.TENSOR:
        out["t"] = tensor(a.t, full)
    elif a.type == T.FLOATS:
        out["floats"] = [num(v) for v in a.floats]
    elif a.type == T.INTS:
        out["ints"] = list(a.ints)
    elif a.type == T.STRINGS:
        out["strings"] = [s.decode() for s in a.strings]
    out["has_graph"] = a.type in (T.GRAPH, T.GRAPHS)
    return out


def value_info(v):
    out = {"name": v.name, "elem_type": 0, "has_shape": False, "shape": []}
    if v.type.HasField("tensor_type"):
        tt = v.type.tensor_type
        out["elem_type"] = tt.elem_type
        if tt.HasField("shape"):
            out["has_shape"] = True
            for d in tt.shape.dim:
                if d.HasField("dim_value"):
                    out["shape"].append({"value": d.dim_value, "param": ""})
                elif d.HasField("dim_param"):
                    out["shape"].append({"value": -1, "param": d.dim_param})
                else:
                    out["shape"].append({"value": -1, "param": ""})
    return out


def domain(d):
    return "" if d == "ai.onnx" else d


def model(m, full):
    g = m.graph
    return {
        "ir_version": m.ir_version,
        "opsets": {domain(o.domain): o.version for o in m.opset_import},
        "producer_name": m.producer_name,
        "producer_version": m.producer_version,
        "graph_name": g.name,
        "inputs": [value_info(v) for v in g.input],
        "outputs": [value_info(v) for v in g.output],
        "value_info": [value_info(v) for v in g.value_info],
        "nodes": [{
            "name": n.name, "op_type": n.op_type, "domain": domain(n.domain),
            "inputs": list(n.input), "outputs": list(n.output),
            "attrs": {a.name: attribute(a, full) for a in n.attribute},
        } for n in g.node],
        "initializers": [tensor(t, full) for t in g.initializer],
    }


def const(name, t):
    return helper.make_node("Constant", [], [name], name=name, value=t)


def edge():
    """A model exercising the decoder's cases through onnx.helper."""
    T = TensorProto
    f16 = np.array([1.0, -2.0, 0.5, 65504.0, 2.0 ** -24, np.inf, -0.0], dtype=np.float16)
    bf16 = [1.0, -3.5, 0.15625, 1e30]  # exactly representable in bfloat16 except 1e30 (truncated)
    nodes = [
        const("c_scalar", helper.make_tensor("", T.FLOAT, [], [2.5])),
        const("c_scalar_raw", helper.make_tensor("", T.FLOAT, [], np.float32([-0.75]).tobytes(), raw=True)),
        const("c_one", helper.make_tensor("", T.FLOAT, [1], [3.25])),
        const("c_i64", helper.make_tensor("", T.INT64, [], [-7])),
        const("c_f16", helper.make_tensor("", T.FLOAT16, [7], f16)),
        const("c_f16_raw", helper.make_tensor("", T.FLOAT16, [7], f16.tobytes(), raw=True)),
        const("c_bf16", helper.make_tensor("", T.BFLOAT16, [2, 2], bf16)),
        const("c_bool", helper.make_tensor("", T.BOOL, [3], [True, False, True])),
        const("c_bool_raw", helper.make_tensor("", T.BOOL, [3], np.array([1, 0, 1], np.bool_).tobytes(), raw=True)),
        const("c_i8", helper.make_tensor("", T.INT8, [4], [-128, -1, 0, 127])),
        const("c_i8_raw", helper.make_tensor("", T.INT8, [4], np.int8([-128, -1, 0, 127]).tobytes(), raw=True)),
        const("c_u8_raw", helper.make_tensor("", T.UINT8, [3], np.uint8([0, 200, 255]).tobytes(), raw=True)),
        const("c_i16", helper.make_tensor("", T.INT16, [2], [-32768, 32767])),
        const("c_u16_raw", helper.make_tensor("", T.UINT16, [2], np.uint16([1, 65535]).tobytes(), raw=True)),
        const("c_i32", helper.make_tensor("", T.INT32, [3], [-2147483648, -5, 2147483647])),
        const("c_u32", helper.make_tensor("", T.UINT32, [2], [0, 4294967295])),
        const("c_u64", helper.make_tensor("", T.UINT64, [2], [7, 9223372036854775800])),
        const("c_f64", helper.make_tensor("", T.DOUBLE, [2, 1], [math.pi, -1e-300])),
        const("c_i64_raw", helper.make_tensor("", T.INT64, [2], np.int64([-(2 ** 63), 2 ** 62]).tobytes(), raw=True)),
        const("c_empty", helper.make_tensor("", T.FLOAT, [0, 3], [])),
        helper.make_node("Split", ["x", "split_sizes"], ["s0", "s1", "s2"], name="split", axis=1),
        helper.make_node("Clip", ["x", "", "c_scalar"], ["clipped"], name="clip"),
        helper.make_node("Custom", ["x"], ["custom_out"], name="custom", domain="com.example",
                         f=0.1, i=-3, s=b"caf\xc3\xa9", floats=[1.5, -2.25, 1e-7], ints=[0, -1, 1 << 40],
                         strings=[b"a", b""], t=helper.make_tensor("attr_t", T.FLOAT, [2], [4.0, 5.0])),
        helper.make_node("If", ["cond"], ["if_out"], name="if",
                         then_branch=helper.make_graph([const("then_c", helper.make_tensor("", T.FLOAT, [], [1.0]))], "then", [], [helper.make_tensor_value_info("then_c", T.FLOAT, [])]),
                         else_branch=helper.make_graph([const("else_c", helper.make_tensor("", T.FLOAT, [], [0.0]))], "else", [], [helper.make_tensor_value_info("else_c", T.FLOAT, [])])),
        helper.make_node("Relu", ["x"], ["relu_out"], name="", domain="ai.onnx"),
    ]
    inits = [
        helper.make_tensor("w", T.FLOAT, [2, 3], np.float32([[1, 2, 3], [4, 5, 6.5]]).tobytes(), raw=True),
        helper.make_tensor("w_typed", T.FLOAT, [3], [-1.0, 0.0, 1e-45]),
        helper.make_tensor("split_sizes", T.INT64, [3], [1, 1, 1]),
        helper.make_tensor("cond", T.BOOL, [], [True]),
    ]
    x = helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", T.FLOAT16, [None, 2])
    scalar = helper.make_tensor_value_info("scalar", T.DOUBLE, [])
    noshape = helper.make_tensor_value_info("noshape", T.INT64, None)
    seq = helper.make_tensor_sequence_value_info("seq", T.FLOAT, None)
    outs = [helper.make_tensor_value_info(n, T.FLOAT, ["N", 1]) for n in ("s0", "s1", "s2")]
    g = helper.make_graph(nodes, "edge", [x, y, scalar, noshape, seq], outs, inits,
                          value_info=[helper.make_tensor_value_info("clipped", T.FLOAT, ["N", 3])])
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1), helper.make_opsetid("ai.onnx.ml", 2)]
    m = helper.make_model(g, opset_imports=opsets, producer_name="make_golden.py", producer_version="1")
    m.ir_version = 8
    return m


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    golden = {}
    e = edge()
    with open(os.path.join(here, "edge.onnx"), "wb") as f:
        f.write(e.SerializeToString())
    golden["edge.onnx"] = model(onnx.load(os.path.join(here, "edge.onnx")), True)
    for name in TORCH:
        rel = "../torch/%s.onnx" % name
        golden["torch/%s.onnx" % name] = model(onnx.load(os.path.join(here, rel)), False)
    with open(os.path.join(here, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

"""Energies at the edges of what flowebm imports (probe 34), written to
io/onnx/testdata/edge/ as their authors would:

- log_energy.onnx: an MLP energy whose activation is torch.log, NaN where
  its argument is negative (exported by torch.onnx.export's defaults);
- floor_energy.onnx: one with torch.floor, whose gradient is zero almost
  everywhere and which Gorgonia cannot differentiate;
- clip_init.onnx: an MLP whose Clip takes its bounds from initializers,
  as onnx-simplifier and constant folding leave them (torch exports
  them as Constant nodes);
- where_sqrt_energy.onnx: where(h > 0, sqrt(h), 0), finite, whose gradient
  is NaN where h < 0, in PyTorch too (probe 35 wrote sqrt(relu(h)), whose
  PyTorch gradient is 0 there, as flowebm's since round 78);
- clip_empty.onnx: a Clip whose lower bound is an empty initializer
  (float32[0]), which ONNX Runtime refuses (probe 35);
- isnan_energy.onnx: an energy of IsNaN(x) cast to float, which has no
  gradient at all (probe 35);
- empty_*.onnx, with *_ref.onnx computing the same energy another way
  (probe 36): an empty shape given to ConstantOfShape (a scalar), empty
  axes given to ReduceSum (every axis), Pad's value as an initializer;
  and refused ones: CumSum with an empty axis, ConstantOfShape with a
  value of two elements, Mul by an empty constant (probe 37: read as 0);
- empty_gather.onnx: Gather with no indices concatenated to the hidden
  layer (an empty tensor that drops out), equal to plain_ref.onnx;
- resize_scales3.onnx: Resize of a rank-2 tensor given 3 scales, refused;
- shape_only_energy.onnx: an energy of ConstantOfShape(Shape(h1)), which
  depends on the input's shape only and has no gradient (probe 36);
- split_zero.onnx: torch.split(h, [0, 8], 1) and torch.cat of the parts,
  exported by torch.onnx.export, equal to split_zero_ref.onnx, the same
  module without the split (probe 38: an empty part was refused);
- empty_tile.onnx: Tile of the hidden layer with a repeat of 0 (an empty
  tensor, valid ONNX) concatenated to it, equal to plain_ref.onnx
  (probe 40: refused);
- tile_float.onnx: Tile whose repeats are float [1, 1.7], which ONNX
  requires as int64 (probe 41: run as [1, 1]);
- gemm_transA.onnx: a first Gemm with transA=1, which multiplies the
  batch axis and fails where N is not 2 (probe 37: the file named twice).

Run with /usr/bin/python3 (PyTorch 1.13, onnx) from the repository root.
"""
import numpy as np
import onnx
import torch
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = "io/onnx/testdata/edge"
torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.l1, self.l2, self.act = torch.nn.Linear(2, 8), torch.nn.Linear(8, 1), act

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


for name, act in [("log_energy", torch.log), ("floor_energy", torch.floor),
                  ("where_sqrt_energy", lambda h: torch.where(h > 0, torch.sqrt(h), torch.zeros_like(h)))]:
    torch.onnx.export(MLP(act), torch.randn(3, 2), f"{out}/{name}.onnx", input_names=["x"], output_names=["energy"],
                      dynamic_axes={"x": {0: "N"}, "energy": {0: "N"}})



def save(name, nodes, inits):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", T.FLOAT, ["N", 2])],
                     [h.make_tensor_value_info("energy", T.FLOAT, ["N", 1])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{name}.onnx")


rng = np.random.default_rng(0)
mlp = [nh.from_array(a.astype(np.float32), n) for n, a in [
    ("W1", rng.normal(size=(8, 2))), ("b1", np.zeros(8)), ("W2", rng.normal(size=(1, 8))), ("b2", np.zeros(1))]]
clip = [h.make_node("Gemm", ["x", "W1", "b1"], ["h1"], transB=1),
        h.make_node("Clip", ["h1", "lo", "hi"], ["a1"]),
        h.make_node("Gemm", ["a1", "W2", "b2"], ["energy"], transB=1)]
hi = nh.from_array(np.array(1.0, dtype=np.float32), "hi")
save("clip_init", clip, mlp + [nh.from_array(np.array(-1.0, dtype=np.float32), "lo"), hi])
save("clip_empty", clip, mlp + [nh.from_array(np.zeros(0, dtype=np.float32), "lo"), hi])
save("isnan_energy", [h.make_node("IsNaN", ["x"], ["n"]), h.make_node("Cast", ["n"], ["f"], to=T.FLOAT),
                      h.make_node("ReduceSum", ["f", "axes"], ["energy"], keepdims=1)],
     [nh.from_array(np.array([1], dtype=np.int64), "axes")])


def i64(name, v):
    return nh.from_array(np.array(v, dtype=np.int64), name)


def f32(name, v):
    return nh.from_array(np.array(v, dtype=np.float32), name)


def head(extra):  # h1 = Gemm(x), then extra nodes making a1 from h1, then the energy
    return [h.make_node("Gemm", ["x", "W1", "b1"], ["h1"], transB=1)] + extra + \
        [h.make_node("Gemm", ["a1", "W2", "b2"], ["energy"], transB=1)]


half = h.make_tensor("v", T.FLOAT, [1], [0.5])
save("empty_shape", head([h.make_node("ConstantOfShape", ["s"], ["c"], value=half),
                          h.make_node("Add", ["h1", "c"], ["a1"])]), mlp + [i64("s", np.zeros(0))])
save("empty_shape_ref", head([h.make_node("Add", ["h1", "c"], ["a1"])]), mlp + [f32("c", 0.5)])
C = rng.normal(size=(1, 8))
save("empty_axes", head([h.make_node("ReduceSum", ["C", "axes"], ["c"], keepdims=0),
                         h.make_node("Add", ["h1", "c"], ["a1"])]), mlp + [f32("C", C), i64("axes", np.zeros(0))])
save("empty_axes_ref", head([h.make_node("ReduceSum", ["C"], ["c"], keepdims=0),
                             h.make_node("Add", ["h1", "c"], ["a1"])]), mlp + [f32("C", C)])
W2p = [f32("W2", rng.normal(size=(1, 9)))]
mlp9 = [t for t in mlp if t.name != "W2"] + W2p
save("empty_pad_init", head([h.make_node("Pad", ["h1", "pads", "pv"], ["a1"])]),
     mlp9 + [i64("pads", [0, 0, 0, 1]), f32("pv", 0.5)])
save("empty_pad_init_ref", head([h.make_node("Constant", [], ["pv"], value=h.make_tensor("", T.FLOAT, [], [0.5])),
                                 h.make_node("Pad", ["h1", "pads", "pv"], ["a1"])]), mlp9 + [i64("pads", [0, 0, 0, 1])])
save("empty_cumsum_axis", head([h.make_node("CumSum", ["h1", "ax"], ["a1"])]), mlp + [i64("ax", np.zeros(0))])
save("empty_fill_two", head([h.make_node("ConstantOfShape", ["s"], ["c"], value=h.make_tensor("v", T.FLOAT, [2], [0.5, 0.5])),
                             h.make_node("Add", ["h1", "c"], ["a1"])]), mlp + [i64("s", [1])])
save("empty_mul", head([h.make_node("Constant", [], ["e"], value=h.make_tensor("", T.FLOAT, [0, 8], [])),
                        h.make_node("Mul", ["h1", "e"], ["a1"])]), mlp)
save("empty_gather", head([h.make_node("Gather", ["h1", "gi"], ["g"], axis=1),
                          h.make_node("Concat", ["h1", "g"], ["a1"], axis=1)]), mlp + [i64("gi", np.zeros(0))])
save("plain_ref", head([h.make_node("Identity", ["h1"], ["a1"])]), mlp)
save("resize_scales3", head([h.make_node("Resize", ["h1", "", "sc"], ["a1"])]), mlp + [f32("sc", [1, 1, 1])])
save("shape_only_energy", head([h.make_node("Shape", ["h1"], ["s"]),
                                h.make_node("ConstantOfShape", ["s"], ["a1"], value=half)]), mlp)
save("gemm_transA", [h.make_node("Gemm", ["x", "W1", "b1"], ["h1"], transA=1, transB=1),
                     h.make_node("Gemm", ["h1", "W2", "b2"], ["energy"], transB=1)], mlp)


class SplitZero(torch.nn.Module):
    def __init__(self, split):
        super().__init__()
        torch.manual_seed(1)
        self.l1, self.l2, self.split = torch.nn.Linear(2, 8), torch.nn.Linear(8, 1), split

    def forward(self, x):
        h = torch.tanh(self.l1(x))
        if self.split:
            a, b = torch.split(h, [0, 8], 1)
            h = torch.cat([b, a], 1)
        return self.l2(h)


for name, split in [("split_zero", True), ("split_zero_ref", False)]:
    torch.onnx.export(SplitZero(split), torch.randn(3, 2), f"{out}/{name}.onnx", input_names=["x"], output_names=["energy"],
                      dynamic_axes={"x": {0: "N"}, "energy": {0: "N"}}, opset_version=13)
save("empty_tile", head([h.make_node("Tile", ["h1", "reps"], ["t"]),
                        h.make_node("Concat", ["h1", "t"], ["a1"], axis=1)]), mlp + [i64("reps", [1, 0])])
g = h.make_graph(head([h.make_node("Tile", ["h1", "reps"], ["t"]), h.make_node("Concat", ["h1", "t"], ["a1"], axis=1)]),
                 "tile_float", [h.make_tensor_value_info("x", T.FLOAT, ["N", 2])],
                 [h.make_tensor_value_info("energy", T.FLOAT, ["N", 1])], mlp + [f32("reps", [1, 1.7])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, f"{out}/tile_float.onnx")  # not checked: the checker's type inference refuses float repeats

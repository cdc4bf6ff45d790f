"""Energies with the trigonometric and hyperbolic functions (round 100
B3: torch.atan refused), written to io/onnx/testdata/pinned/ in
make_pinned.py's format:

- trig_dyn (float64, dynamic batch, opset 14) and trig_b4_f32 (float32,
  exported at a batch of 4, default opset): tan, asin, acos and atan as
  PyTorch 1.13 exports them (it exports no sinh, cosh, asinh, acosh or
  atanh), energies and gradients by PyTorch autograd;
- asin_acos_edge_dyn: asin(x0) + acos(x1), for the gradient at ±1;
- hyperbolic_dyn (float64, opset 9): Sinh, Cosh, Asinh, Acosh and Atanh in
  a graph written with onnx.helper, energies and gradients by NumPy from
  their closed forms.

Each NAME.npz holds, for each batch size n, x{n} (the points, (n, d)),
energy{n} and grad{n} (as float64).

Run with /usr/bin/python3 (PyTorch 1.13, onnx) from the repository root.
"""
import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = "io/onnx/testdata/pinned"


class TrigEBM(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(4, 4), nn.Linear(4, 1)

    def forward(self, x):
        z = self.l1(x)
        u = 0.9 * torch.tanh(z)  # inside (−1, 1)
        parts = [torch.tan(u), torch.asin(u), torch.acos(u), torch.atan(z)]
        return self.l2(torch.stack([p[:, i] for i, p in enumerate(parts)], 1)).squeeze(1)


def save_torch(name, m, dtype, export_batch, sizes, dynamic, opset=None):
    m = m.eval().to(dtype)
    kw = {"opset_version": opset} if opset else {}
    if dynamic:
        kw.update(input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "batch"}, "energy": {0: "batch"}})
    torch.onnx.export(m, torch.randn(export_batch, 4, dtype=dtype), f"{out}/{name}.onnx", **kw)
    arrays = {}
    for n in sizes:
        x = torch.randn(n, 4, dtype=dtype).requires_grad_(True)
        e = m(x)
        (g,) = torch.autograd.grad(e.sum(), x)
        arrays[f"x{n}"] = x.detach().numpy()
        arrays[f"energy{n}"] = e.detach().double().numpy()
        arrays[f"grad{n}"] = g.double().numpy()
    np.savez(f"{out}/{name}.npz", **arrays)


torch.manual_seed(100)
m = TrigEBM()
save_torch("trig_dyn", m, torch.float64, 3, [5], True, opset=14)
save_torch("trig_b4_f32", m, torch.float32, 4, [5], False)

# The hyperbolic family: energy = Σ_k w_k f_k(a_k x_k + b_k) over the five
# functions, one per coordinate of x (d = 5), each argument inside its
# domain: Acosh of 1.5 + x², Atanh of 0.9·tanh(x).
rng = np.random.default_rng(100)
a, b, w = rng.normal(size=5), rng.normal(size=5) * 0.3, rng.normal(size=5)
nodes = [h.make_node("Mul", ["x", "a"], ["ax"]), h.make_node("Add", ["ax", "b"], ["z"])]
cols = []
for k, op in enumerate(["Sinh", "Cosh", "Asinh", "Acosh", "Atanh"]):
    nodes.append(h.make_node("Gather", ["z", f"i{k}"], [f"z{k}"], axis=1))
    arg = f"z{k}"
    if op == "Acosh":
        nodes += [h.make_node("Mul", [arg, arg], ["sq"]), h.make_node("Add", ["sq", "one5"], ["ac"])]
        arg = "ac"
    if op == "Atanh":
        nodes += [h.make_node("Tanh", [arg], ["th"]), h.make_node("Mul", ["th", "p9"], ["at"])]
        arg = "at"
    nodes.append(h.make_node(op, [arg], [f"f{k}"]))
    cols.append(f"f{k}")
nodes += [h.make_node("Concat", cols, ["fs"], axis=1), h.make_node("MatMul", ["fs", "w"], ["energy"])]
inits = [nh.from_array(a, "a"), nh.from_array(b, "b"), nh.from_array(w.reshape(5, 1), "w"),
         nh.from_array(np.array(1.5), "one5"), nh.from_array(np.array(0.9), "p9")]
inits += [nh.from_array(np.array([k], dtype=np.int64), f"i{k}") for k in range(5)]
g = h.make_graph(nodes, "hyperbolic", [h.make_tensor_value_info("x", T.DOUBLE, ["N", 5])],
                 [h.make_tensor_value_info("energy", T.DOUBLE, ["N", 1])], inits)
model = h.make_model(g, opset_imports=[h.make_opsetid("", 9)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, f"{out}/hyperbolic_dyn.onnx")
x = rng.normal(size=(5, 5))
z = a * x + b
th = np.tanh(z[:, 4])
f = np.stack([np.sinh(z[:, 0]), np.cosh(z[:, 1]), np.arcsinh(z[:, 2]), np.arccosh(1.5 + z[:, 3] ** 2), np.arctanh(0.9 * th)], 1)
df = np.stack([np.cosh(z[:, 0]), np.sinh(z[:, 1]), 1 / np.sqrt(z[:, 2] ** 2 + 1),
               2 * z[:, 3] / np.sqrt((1.5 + z[:, 3] ** 2) ** 2 - 1), 0.9 * (1 - th ** 2) / (1 - (0.9 * th) ** 2)], 1)
np.savez(f"{out}/hyperbolic_dyn.npz", x5=x, energy5=f @ w, grad5=df * w * a)

# asin_acos_edge_dyn: E = asin(x₀) + acos(x₁), finite at x = (1, 0) and
# (0, 1) where its gradient is +Inf, −Inf (round 101 A1: the note called
# both +Inf); PyTorch's export, no reference arrays (the test computes
# the closed form).
class AsinAcos(nn.Module):
    def forward(self, x):
        return torch.asin(x[:, 0]) + torch.acos(x[:, 1])


torch.onnx.export(AsinAcos(), torch.zeros(2, 2, dtype=torch.float64), f"{out}/asin_acos_edge_dyn.onnx", opset_version=14,
                  input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "batch"}, "energy": {0: "batch"}})

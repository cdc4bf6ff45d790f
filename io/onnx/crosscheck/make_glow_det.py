"""Adds to io/onnx/testdata/flows a Glow-style flow whose invertible 1×1
layer's log-determinant is torch.log(torch.abs(torch.det(W))), exported
as ONNX Det (round 100 B1: refused; torch 1.13 cannot export slogdet), in
make_flow_fixtures.py's format: glowdet_f64 and glowdet_f32 with their
reference arrays, appended to manifest.json (run after
make_flow_fixtures.py, which rewrites it). Layers, d = 3: an invertible
1×1 map W (its inverse by Newton–Schulz iterations, which export as
MatMuls: torch 1.13 exports no matrix inverse), an affine coupling on a
mask, a flip, another 1×1 map and coupling. Trained 60 steps of maximum
likelihood so that its weights are far from the initialisation.

Run: /usr/bin/python3 io/onnx/crosscheck/make_glow_det.py (repository root)
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_flow import export_flow  # noqa: E402

out = "io/onnx/testdata/flows"
D, SIGMA = 3, 1.0


def inverse(w, steps=40):
    """W⁻¹ by Newton–Schulz from Wᵀ/(‖W‖₁‖W‖∞), exact to round-off for a well-conditioned W."""
    x = w.t() / (w.abs().sum(0).max() * w.abs().sum(1).max())
    eye = torch.eye(w.shape[0], dtype=w.dtype)
    for _ in range(steps):
        x = x @ (2 * eye - w @ x)
    return x


class OneByOne(nn.Module):
    def __init__(self, d):
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(d, d))
        self.w = nn.Parameter(q + 0.3 * torch.randn(d, d))

    def to_z(self, x):  # density direction
        return x @ self.w.t(), torch.log(torch.abs(torch.det(self.w))).expand(x.shape[0])

    def to_x(self, z):  # sampling direction
        return z @ inverse(self.w).t(), -torch.log(torch.abs(torch.det(self.w))).expand(z.shape[0])


class Coupling(nn.Module):
    def __init__(self, d, mask):
        super().__init__()
        self.register_buffer("mask", torch.tensor(mask))
        self.net = nn.Sequential(nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, 2 * d))

    def st(self, a):
        s, t = self.net(a * self.mask).chunk(2, 1)
        return torch.tanh(s) * (1 - self.mask), t * (1 - self.mask)

    def to_z(self, x):
        s, t = self.st(x)
        return x * torch.exp(s) + t, s.sum(1)

    def to_x(self, z):
        s, t = self.st(z)
        return (z - t) * torch.exp(-s), -s.sum(1)


class Flip(nn.Module):
    def to_z(self, x):
        return torch.flip(x, [1]), torch.zeros(x.shape[0], dtype=x.dtype)

    def to_x(self, z):
        return torch.flip(z, [1]), torch.zeros(z.shape[0], dtype=z.dtype)


class Glow(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([OneByOne(D), Coupling(D, [1.0, 0.0, 1.0]), Flip(), OneByOne(D), Coupling(D, [0.0, 1.0, 0.0])])

    def inverse(self, x):  # x → z
        for layer in self.layers:
            x, _ = layer.to_z(x)
        return x

    def forward(self, z):  # z → (x, log|det dx/dz|)
        ld = torch.zeros(z.shape[0], dtype=z.dtype)
        for layer in reversed(self.layers):
            z, l = layer.to_x(z)
            ld = ld + l
        return z, ld

    def log_prob(self, x):
        ld = torch.zeros(x.shape[0], dtype=x.dtype)
        for layer in self.layers:
            x, l = layer.to_z(x)
            ld = ld + l
        return (-0.5 * (x / SIGMA) ** 2 - np.log(SIGMA) - 0.5 * np.log(2 * np.pi)).sum(1) + ld


torch.manual_seed(100)
flow = Glow().to(torch.float64)
g = torch.Generator().manual_seed(3)
data = torch.randn(512, D, generator=g, dtype=torch.float64) * torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64) + 0.7
data[:, 0] = data[:, 0] + 0.3 * data[:, -1] ** 2
opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
for _ in range(60):
    opt.zero_grad()
    loss = -flow.log_prob(data).mean()
    loss.backward()
    opt.step()

manifest = [m for m in json.load(open(f"{out}/manifest.json")) if not m["name"].startswith("glowdet")]
for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
    f = flow.to(dtype).eval()
    base = f"{out}/glowdet_{tag}"
    export_flow(f, D, base + "_sample.onnx", base + "_density.onnx", base_sigma=SIGMA, dtype=dtype)
    gen = torch.Generator().manual_seed(11)
    z = (torch.randn(7, D, generator=gen, dtype=torch.float64) * SIGMA).to(dtype)
    pts = (torch.randn(7, D, generator=gen, dtype=torch.float64) * 1.5 + 0.5).to(dtype)
    with torch.no_grad():
        x, ld = f(z)
        arrays = {"z": z, "x": x, "logdet": ld, "logq_x": f.log_prob(x), "points": pts,
                  "logq_points": f.log_prob(pts), "z_points": f.inverse(pts)}
    for k, v in arrays.items():
        np.save(f"{base}_{k}.npy", v.numpy())
    manifest.append({"name": f"glowdet_{tag}", "dtype": tag, "dim": D, "base_sigma": SIGMA,
                     "params": sum(p.numel() for p in f.parameters()), "final_loss": float(loss)})
json.dump(manifest, open(f"{out}/manifest.json", "w"), indent=1)
print("glowdet: loss", float(loss))

# scale0: a diagonal flow x = z·w, w = (1, 0), whose sampling direction is
# singular: both graphs give log λ(x) = +Inf (round 102 B1: called two
# flows that differ). Its own wrapper, not export_flow's: the refusal is
# what is tested.


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([1.0, 0.0]))

    def forward(self, z):
        return z * self.w, -(z ** 2).sum(1) / 2 - np.log(2 * np.pi) - torch.log(self.w.abs()).sum()


class ScaleDensity(Scale):
    def forward(self, x):
        z = x * self.w
        return -(z ** 2).sum(1) / 2 - np.log(2 * np.pi) - torch.log(self.w.abs()).sum(), z


for m, f, i, o in [(Scale(), "scale0_sample.onnx", "z", ["x", "log_density"]), (ScaleDensity(), "scale0_density.onnx", "x", ["log_density", "z"])]:
    torch.onnx.export(m, torch.randn(3, 2), f"{out}/{f}", input_names=[i], output_names=o, dynamic_axes={i: {0: "n"}}, opset_version=13)

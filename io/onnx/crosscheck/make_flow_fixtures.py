"""Regenerates io/onnx/testdata/flows: normalizing flows trained a few steps
in PyTorch and exported with export_flow.py as flowebm's two ONNX graphs,
with base draws z, PyTorch's x = T(z), log|det J_T(z)| and log q(x), and
points with PyTorch's log q and T^-1, for io/onnx's flow tests (which need
no PyTorch). The flows:

  realnvp  flowebm's reference RealNVP (realnvp.py), d = 3, base sigma 1.3
  maf      nflows' MaskedAutoregressiveFlow (MADE, masks as buffers,
           permutations), d = 3
  nvp      nflows' SimpleRealNVP (residual nets), d = 4
  realnvp2 the reference RealNVP in d = 2 (4 blocks of [2, 16, 2], base
           sigma 1.5) trained 300 steps on App. C.2's two-modes data, for
           `flowebm train --flow` and `sample --flow` tests

and bimodal_energy.onnx, an energy with two modes of weights 1/4 and 3/4.

nflows is not packaged by Debian: pass a checkout of bayesiains/nflows
(the fixtures were made at 5d22344436a4a5f4c3b93a3b99322a6bfe374c08). Its
UMNN transform needs a pip package that is stubbed here (not used).

Run: /usr/bin/python3 make_flow_fixtures.py OUTDIR NFLOWS_CHECKOUT
"""
import json
import math
import os
import sys
import types

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, sys.argv[2])
umnn = types.ModuleType("UMNN")
umnn.NeuralIntegral = umnn.ParallelNeuralIntegral = object
sys.modules["UMNN"] = umnn

from export_flow import export_flow, nflows_functions  # noqa: E402
from nflows.flows import MaskedAutoregressiveFlow, SimpleRealNVP  # noqa: E402
from realnvp import RealNVP  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def train(flow, d, steps=60):
    # A few steps of maximum likelihood on a skewed, shifted data set:
    # weights far from the initialisation, as a flow trained in PyTorch.
    g = torch.Generator().manual_seed(3)
    scale = torch.linspace(0.5, 2.0, d, dtype=torch.float64)
    data = torch.randn(512, d, generator=g, dtype=torch.float64) * scale + 0.7
    data[:, 0] = data[:, 0] + 0.3 * data[:, -1] ** 2
    opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        loss = -flow.log_prob(data.to(next(flow.parameters()).dtype)).mean()
        loss.backward()
        opt.step()
    return float(loss)


def two_modes(n, g):
    """Paper App. C.2's data: 1/3 N(-1.5·1, 0.05 I) + 2/3 N(1.5·1, 0.1 I)."""
    small = torch.rand(n, generator=g) < 1 / 3
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    return torch.where(small[:, None], -1.5 + 0.05 ** 0.5 * x, 1.5 + 0.1 ** 0.5 * x)


def train_two_modes(flow, d, steps=300):
    g = torch.Generator().manual_seed(5)
    data = two_modes(2048, g)
    opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
    loss = None
    for _ in range(steps):
        opt.zero_grad()
        loss = -flow.log_prob(data).mean()
        loss.backward()
        opt.step()
    return float(loss)


def make(name, d, build, sigma, fit=train):
    torch.manual_seed(7)
    flow = build().to(torch.float64)
    loss = fit(flow, d)
    for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
        f = flow.to(dtype)
        f.eval()
        fns = nflows_functions(f) if not name.startswith("realnvp") else {}
        base = f"{out}/{name}_{tag}"
        export_flow(f, d, base + "_sample.onnx", base + "_density.onnx", base_sigma=sigma, dtype=dtype, **fns)
        g = torch.Generator().manual_seed(11)
        z = (torch.randn(7, d, generator=g, dtype=torch.float64) * sigma).to(dtype)
        pts = (torch.randn(7, d, generator=g, dtype=torch.float64) * 1.5 + 0.5).to(dtype)
        sample = fns.get("sample", f.forward)
        log_prob = fns.get("log_prob", f.log_prob)
        inverse = fns.get("inverse", getattr(f, "inverse", None))
        with torch.no_grad():
            x, ld = sample(z)
            arrays = {"z": z, "x": x, "logdet": ld, "logq_x": log_prob(x), "points": pts,
                      "logq_points": log_prob(pts), "z_points": inverse(pts)}
        for k, v in arrays.items():
            np.save(f"{base}_{k}.npy", v.numpy())
        manifest.append({"name": f"{name}_{tag}", "dtype": tag, "dim": d, "base_sigma": sigma,
                         "params": sum(p.numel() for p in f.parameters()), "final_loss": loss})


class Bimodal(torch.nn.Module):
    """An energy as people write one: two Gaussian modes of weights 0.25 and
    0.75 at (-2.5, 0) and (2.5, 0), sigma 0.6, with Python floats in
    forward; exported with torch.onnx's defaults (for flowebm sample's
    adaptive flowMC test)."""

    def forward(self, x):
        a = -((x[:, 0] + 2.5) ** 2 + x[:, 1] ** 2) / (2 * 0.6 ** 2) + math.log(0.25)
        b = -((x[:, 0] - 2.5) ** 2 + x[:, 1] ** 2) / (2 * 0.6 ** 2) + math.log(0.75)
        return -torch.logsumexp(torch.stack([a, b], 1), 1)


torch.onnx.export(Bimodal(), torch.randn(3, 2, dtype=torch.float64), f"{out}/bimodal_energy.onnx",
                  input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "batch"}, "energy": {0: "batch"}})

manifest = []
make("realnvp", 3, lambda: RealNVP(d=3, blocks=2, hidden=[8], depth=1, sigma=1.3), 1.3)
make("maf", 3, lambda: MaskedAutoregressiveFlow(features=3, hidden_features=8, num_layers=2,
                                                num_blocks_per_layer=1), 1.0)
make("realnvp2", 2, lambda: RealNVP(d=2, blocks=4, hidden=[16], depth=1, sigma=1.5), 1.5, fit=train_two_modes)
make("nvp", 4, lambda: SimpleRealNVP(features=4, hidden_features=8, num_layers=2, num_blocks_per_layer=1), 1.0)
json.dump(manifest, open(f"{out}/manifest.json", "w"), indent=1)
print(len(manifest), "flows")

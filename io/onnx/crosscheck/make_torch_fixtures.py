"""Regenerates io/onnx/testdata/torch: energy networks exported by PyTorch's
torch.onnx.export with its defaults, inputs, and PyTorch's energies and
x-gradients, for flowebm's import test (which needs no PyTorch).

Run with Debian's python3-torch (1.13):  /usr/bin/python3 make_torch_fixtures.py OUTDIR
"""
import json
import sys

import numpy as np
import torch
import torch.nn as nn

out = sys.argv[1]
torch.manual_seed(0)


def toy(d):
    # The paper's toy EBM (Nijkamp et al. 2020): d→32→64→64→64→1, LeakyReLU(0.05).
    return nn.Sequential(nn.Linear(d, 32), nn.LeakyReLU(0.05), nn.Linear(32, 64), nn.LeakyReLU(0.05),
                         nn.Linear(64, 64), nn.LeakyReLU(0.05), nn.Linear(64, 64), nn.LeakyReLU(0.05),
                         nn.Linear(64, 1))


def small(d, act):
    return nn.Sequential(nn.Linear(d, 16), act, nn.Linear(16, 16), act, nn.Linear(16, 1))


cases = [("toy", 2, toy(2), True, None), ("toy_fixed_batch", 2, toy(2), False, None),
         ("toy_opset9", 2, toy(2), True, 9), ("toy_opset17", 2, toy(2), True, 17)]
for name, act in [("relu", nn.ReLU()), ("silu", nn.SiLU()), ("softplus", nn.Softplus()), ("tanh", nn.Tanh()),
                  ("elu", nn.ELU()), ("sigmoid", nn.Sigmoid())]:
    cases.append((name, 3, small(3, act), True, None))

manifest = []
n = 9
for name, d, net, dynamic, opset in cases:
    for dtype, tag in [(torch.float64, "f64"), (torch.float32, "f32")]:
        m = net.to(dtype)
        x = (2 * torch.randn(n, d, dtype=torch.float64)).to(dtype)
        base = f"{name}_{tag}"
        kw = {"input_names": ["x"], "output_names": ["energy"]}
        if dynamic:
            kw["dynamic_axes"] = {"x": {0: "batch"}, "energy": {0: "batch"}}
        if opset is not None:
            kw["opset_version"] = opset
        torch.onnx.export(m, x, f"{out}/{base}.onnx", **kw)
        xg = x.clone().requires_grad_(True)
        e = m(xg)
        g, = torch.autograd.grad(e.sum(), xg)
        np.save(f"{out}/{base}_x.npy", x.detach().numpy())
        np.save(f"{out}/{base}_energy.npy", e.detach().to(torch.float64).numpy()[:, 0])
        np.save(f"{out}/{base}_grad.npy", g.detach().to(torch.float64).numpy())
        manifest.append({"name": base, "dtype": tag, "dim": d, "dynamic_batch": dynamic, "opset": opset or 14})
json.dump(manifest, open(f"{out}/manifest.json", "w"), indent=1)
print(len(manifest), "models")

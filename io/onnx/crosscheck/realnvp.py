"""Reference PyTorch modules with flowebm's checkpoint layout, so that models
trained in PyTorch load into flowebm (and flowebm's load into PyTorch).

RealNVP is layers.RealNVP: blocks of two residual affine couplings with
complementary masks (mask "half": the first ⌊d/2⌋ coordinates are
transformed by the even couplings, the rest by the odd ones), each block
applied block_depth times with shared weights, dt = 2 / (blocks·2·depth):

    s = tanh(S(x⊙(1−m)))⊙m·dt,  t = T(x⊙(1−m))⊙m·dt,  y = (x + t)⊙exp(s)

S and T are ModuleLists of Linears (d → hidden… → d) with ReLU between.
state_dict names are "couplings.K.s.I.weight", as flowebm's, so
save_checkpoint writes spec.json + weights.npz that flowebm.Load reads.
"""
import json
import math

import numpy as np
import torch
import torch.nn as nn


class Coupling(nn.Module):
    def __init__(self, d, hidden, mask, dt):
        super().__init__()
        sizes = [d] + list(hidden) + [d]
        self.s = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])
        self.t = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])
        self.register_buffer("mask", mask)
        self.dt = dt

    @staticmethod
    def mlp(layers, x):
        for i, l in enumerate(layers):
            x = l(x)
            if i < len(layers) - 1:
                x = torch.relu(x)
        return x

    def shift_scale(self, x):
        xc = x * (1 - self.mask)
        s = torch.tanh(self.mlp(self.s, xc)) * self.mask * self.dt
        t = self.mlp(self.t, xc) * self.mask * self.dt
        return s, t

    def forward(self, x):
        s, t = self.shift_scale(x)
        return (x + t) * torch.exp(s), s.sum(1)

    def inverse(self, y):
        s, t = self.shift_scale(y)
        return y * torch.exp(-s) - t, -s.sum(1)


class RealNVP(nn.Module):
    def __init__(self, d, blocks, hidden, depth=1, sigma=1.0):
        super().__init__()
        base = torch.zeros(d)
        base[d // 2:] = 1
        dt = 2 / (blocks * 2 * depth)
        self.couplings = nn.ModuleList(
            [Coupling(d, hidden, 1 - base if k % 2 == 0 else base, dt) for k in range(2 * blocks)])
        self.order = [k for b in range(blocks) for _ in range(depth) for k in (2 * b, 2 * b + 1)]
        self.d, self.blocks, self.depth, self.hidden = d, blocks, depth, list(hidden)
        self.sigma = torch.full((d,), float(sigma), dtype=torch.float64)

    def base_log_prob(self, z):
        s = self.sigma.to(z.dtype)
        return (-0.5 * (z / s) ** 2 - torch.log(s) - 0.5 * math.log(2 * math.pi)).sum(1)

    def forward(self, z):
        """x = T(z) and log|det J_T(z)|."""
        ld = torch.zeros(z.shape[0], dtype=z.dtype)
        for k in self.order:
            z, l = self.couplings[k](z)
            ld = ld + l
        return z, ld

    def inverse(self, x):
        """z = T⁻¹(x)."""
        for k in reversed(self.order):
            x, _ = self.couplings[k].inverse(x)
        return x

    def log_prob(self, x):
        """log λ(x) = log ρ(T⁻¹(x)) + log|det J_{T⁻¹}(x)|."""
        ld = torch.zeros(x.shape[0], dtype=x.dtype)
        for k in reversed(self.order):
            x, l = self.couplings[k].inverse(x)
            ld = ld + l
        return self.base_log_prob(x) + ld


def save_checkpoint(folder, flow, ebm_sizes, ebm=None, dtype="float64"):
    """Writes folder/spec.json and folder/weights.npz as flowebm's io/checkpoint
    reads them. ebm is an nn.Sequential of Linears and LeakyReLU(0.05) with the
    given sizes (a fresh one if None)."""
    if ebm is None:
        layers = []
        for i, (a, b) in enumerate(zip(ebm_sizes[:-1], ebm_sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(ebm_sizes) - 2:
                layers.append(nn.LeakyReLU(0.05))
        ebm = nn.Sequential(*layers)
    spec = {
        "format": "flowebm-checkpoint/1", "dtype": dtype, "base_sigma": flow.sigma.tolist(),
        "ebm": {"sizes": list(ebm_sizes), "activation": "leaky_relu(0.05)", "layout": "sequential", "name": "net"},
        "flow": {"dim": flow.d, "blocks": flow.blocks, "block_depth": flow.depth, "hidden": flow.hidden,
                 "activation": "relu", "mask": "half", "name": "couplings"},
    }
    np_dtype = np.float64 if dtype == "float64" else np.float32
    arrays = {"ebm.net." + k: v.detach().numpy().astype(np_dtype) for k, v in ebm.state_dict().items()}
    arrays.update({"flow." + k: v.detach().numpy().astype(np_dtype)
                   for k, v in flow.state_dict().items() if not k.endswith(".mask")})
    with open(folder + "/spec.json", "w") as f:
        json.dump(spec, f, indent=2)
    np.savez(folder + "/weights.npz", **arrays)

#!/usr/bin/python3
"""PyTorch peer of flowebm's convolutional RealNVP for images (layers.ImageRealNVP).

The network is rebuilt from DIR/spec.json, written by flowebm's bench
command (bench/convflow.go), with torch.nn.functional ops, and loaded with
flowebm's weights (DIR/params/NAME.npy, named and shaped as spec.json lists
them). Images are (B, C, H, W) tensors, rows of B x C*H*W matrices outside.

  squeeze      space-to-depth (C, H, W) -> (4C, H/2, W/2) in Glow's order:
               channel 4c + 2*dy + dx holds pixel (2i + dy, 2j + dx) of c.
  coupling     on the image squeezed q times, with mask m (1 on the
               transformed half: checkerboard, (i + j) % 2 == parity over
               the squeezed pixels, every channel; channel, the first half of
               the squeezed channels for parity 0, the second for 1):
                 h = act(ResBlocks(conv_in(x * (1 - m))))
                 s = tanh(conv_s(h)) * m * dt,  t = conv_t(h) * m * dt
                 forward  y = (x + t) * exp(s),   log|det| = sum s
                 inverse  x = y * exp(-s) - t,    log|det| = -sum s
               with ResBlock(h) = h + conv2(act(conv1(act(h)))), every
               convolution 3x3 with padding 1; the result is unsqueezed.
  flow         the couplings in spec.json's order (their inverses in
               reverse order); base N(0, sigma^2 I):
                 sample   z ~ N(0, sigma^2 I), x = T(z),
                          log q(x) = log rho(z) - log|det J_T(z)|
                 density  log q(x) = log rho(T^-1(x)) + log|det J_T^-1(x)|

Modes (DIR as written by flowebm; the float type is spec.json's):

  --check DIR
      writes PyTorch's samples and log-densities from DIR/z.npy (base draws,
      (B, C*H*W)) as sample_x.npy and sample_logq.npy, and the log-density
      of DIR/x.npy as density_logq.npy, all float64; prints
      {"params": n, "torch": version}.

  --serve DIR [--threads T]
      answers flowebm's bench command on stdin, one JSON line per command,
      like conv_ebm.py:
        sample K    K draws of a batch: x and log q(x) -> {"seconds": t}
        density K   K log-densities of DIR/x.npy      -> {"seconds": t}
        gemm N K    K products of two N x N matrices  -> {"seconds": t}
        quit
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def squeeze(x):
    b, c, h, w = x.shape
    x = x.reshape(b, c, h // 2, 2, w // 2, 2).permute(0, 1, 3, 5, 2, 4)
    return x.reshape(b, 4 * c, h // 2, w // 2)


def unsqueeze(x):
    b, c, h, w = x.shape
    x = x.reshape(b, c // 4, 2, 2, h, w).permute(0, 1, 4, 2, 5, 3)
    return x.reshape(b, c // 4, 2 * h, 2 * w)


def activation(spec):
    kind = spec.get("kind") or "identity"
    if kind == "relu":
        return F.relu
    if kind == "leaky_relu":
        slope = spec.get("slope", 0.0)
        return lambda h: F.leaky_relu(h, slope)
    if kind == "silu":
        return F.silu
    if kind == "tanh":
        return torch.tanh
    if kind == "identity":
        return lambda h: h
    raise ValueError("conv_flow.py: activation %r not implemented" % kind)


class Coupling:
    def __init__(self, spec, image, act, params, dtype):
        c, h, w = image
        self.q, self.dt, self.act = spec["squeeze"], spec["dt"], act
        c, h, w = c * 4 ** self.q, h >> self.q, w >> self.q
        if spec["kind"] == "checkerboard":
            i, j = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            m = ((i + j) % 2 == spec["parity"]).expand(c, h, w)
        elif spec["kind"] == "channel":
            first = (torch.arange(c) < c // 2).view(c, 1, 1).expand(c, h, w)
            m = first if spec["parity"] == 0 else ~first
        else:
            raise ValueError("conv_flow.py: coupling kind %r" % spec["kind"])
        m = m.to(dtype)
        self.keep, self.mdt = 1 - m, m * self.dt
        name, hid = spec["name"], spec["hidden"]

        def conv(prefix, cin, cout):
            wt, b = params.pop(prefix + ".weight"), params.pop(prefix + ".bias")
            if tuple(wt.shape) != (cout, cin, 3, 3) or tuple(b.shape) != (cout,):
                raise ValueError("conv_flow.py: %s has shapes %s and %s, want (%d, %d, 3, 3) and (%d,)"
                                 % (prefix, tuple(wt.shape), tuple(b.shape), cout, cin, cout))
            return wt, b

        self.conv_in = conv(name + ".in", c, hid)
        self.blocks = [(conv("%s.blocks.%d.conv1" % (name, r), hid, hid), conv("%s.blocks.%d.conv2" % (name, r), hid, hid))
                       for r in range(spec["blocks"])]
        self.conv_s, self.conv_t = conv(name + ".s", hid, c), conv(name + ".t", hid, c)

    def shift_scale(self, x):
        h = F.conv2d(x * self.keep, *self.conv_in, padding=1)
        for (w1, b1), (w2, b2) in self.blocks:
            h = h + F.conv2d(self.act(F.conv2d(self.act(h), w1, b1, padding=1)), w2, b2, padding=1)
        h = self.act(h)
        s = torch.tanh(F.conv2d(h, *self.conv_s, padding=1)) * self.mdt
        t = F.conv2d(h, *self.conv_t, padding=1) * self.mdt
        return s, t

    def apply(self, x, inverse):
        for _ in range(self.q):
            x = squeeze(x)
        s, t = self.shift_scale(x)
        if inverse:
            y, logdet = x * torch.exp(-s) - t, -s.flatten(1).sum(1)
        else:
            y, logdet = (x + t) * torch.exp(s), s.flatten(1).sum(1)
        for _ in range(self.q):
            y = unsqueeze(y)
        return y, logdet


class Flow:
    def __init__(self, d):
        with open(os.path.join(d, "spec.json")) as f:
            spec = json.load(f)
        self.dtype = torch.float32 if spec["dtype"] == "float32" else torch.float64
        self.image, self.sigma, self.batch = tuple(spec["image"]), spec["sigma"], spec["batch"]
        params = {}
        for p in spec["params"]:
            a = np.load(os.path.join(d, p["file"]))
            if list(a.shape) != p["shape"]:
                raise ValueError("conv_flow.py: %s has shape %s, spec.json says %s" % (p["file"], a.shape, p["shape"]))
            params[p["name"]] = torch.from_numpy(a).to(self.dtype)
        self.params = sum(v.numel() for v in params.values())
        act = activation(spec["activation"])
        self.couplings = [Coupling(c, self.image, act, params, self.dtype) for c in spec["couplings"]]
        if params:
            raise ValueError("conv_flow.py: parameters not used by any coupling: %s" % sorted(params))
        self.dim = self.image[0] * self.image[1] * self.image[2]
        self.lognorm = -0.5 * self.dim * math.log(2 * math.pi) - self.dim * math.log(self.sigma)

    def log_base(self, z):
        return self.lognorm - 0.5 * ((z / self.sigma) ** 2).sum(1)

    def sample_from(self, z):
        """x = T(z) and log q(x) for base draws z (B, d)."""
        x, logdet = z.view(-1, *self.image), 0
        for c in self.couplings:
            x, ld = c.apply(x, False)
            logdet = logdet + ld
        return x.flatten(1), self.log_base(z) - logdet

    def sample(self, n):
        return self.sample_from(self.sigma * torch.randn(n, self.dim, dtype=self.dtype))

    def log_density(self, x):
        z, logdet = x.view(-1, *self.image), 0
        for c in reversed(self.couplings):
            z, ld = c.apply(z, True)
            logdet = logdet + ld
        return self.log_base(z.flatten(1)) + logdet


def load_points(flow, d, name):
    return torch.from_numpy(np.load(os.path.join(d, name + ".npy"))).to(flow.dtype)


def check(flow, d):
    z, x = load_points(flow, d, "z"), load_points(flow, d, "x")
    xs, lqs = flow.sample_from(z)
    lq = flow.log_density(x)
    for name, a in (("sample_x", xs), ("sample_logq", lqs), ("density_logq", lq)):
        np.save(os.path.join(d, name + ".npy"), a.double().numpy())
    print(json.dumps({"params": flow.params, "torch": torch.__version__}), flush=True)


def timed(task, k, flow, x):
    if task[0] == "gemm":
        n = int(task[1])
        a, b = torch.randn(n, n, dtype=flow.dtype), torch.randn(n, n, dtype=flow.dtype)
        t0 = time.perf_counter()
        for _ in range(k):
            torch.mm(a, b)
        return time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(k):
        if task[0] == "sample":
            flow.sample(flow.batch)
        else:
            flow.log_density(x)
    return time.perf_counter() - t0


def serve(flow, d):
    x = load_points(flow, d, "x")
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] not in ("sample", "density", "gemm"):
            print(json.dumps({"error": "unknown command " + cmd[0]}), flush=True)
            continue
        print(json.dumps({"seconds": timed(cmd, int(cmd[-1]), flow, x)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="DIR")
    mode.add_argument("--serve", metavar="DIR")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    d = a.check or a.serve
    flow = Flow(d)
    with torch.no_grad():
        if a.check:
            check(flow, d)
        else:
            serve(flow, d)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""PyTorch peer of flowebm's E + grad_x E for an IGEBM-size convolutional EBM.

The model is written the way EBM papers write it (Du & Mordatch 2019's
MNIST-style network, the short-run EBM family): four 2-D convolutions with
LeakyReLU(0.2) on 1 x 28 x 28 images, flattened with x.view(x.size(0), -1),
then one linear unit, the energy (B, 1). About 350k parameters.

Modes (DIR a folder, DTYPE float32 or float64):

  --export DIR [--dtype DTYPE]
      writes DIR/conv_ebm.onnx (torch.onnx.export with its defaults, opset
      14, input "x", output "energy", dynamic batch), DIR/conv_ebm.pt (the
      state_dict), a fixed input DIR/x.npy (64, 1, 28, 28) and PyTorch's
      energies DIR/energy.npy (64) and input gradients DIR/grad.npy; prints
      {"params": n, "torch": version, "onnx": path}.

  --serve DIR [--dtype DTYPE] [--threads T]
      loads DIR's model and input and answers flowebm's bench command on
      stdin, one JSON line per command, like flowmc_ebm.py:
        grad K     K evaluations of E and autograd grad_x E -> {"seconds": t}
        gemm N K   K products of two N x N matrices       -> {"seconds": t}
        quit

  --time SECONDS [--dir DIR] [--dtype DTYPE] [--threads T]
      by hand: times E + grad_x E at batch 64 for about SECONDS (after a
      warm-up) and prints {"ms_per_call": ms, "calls": k, "threads": T}.
      Without --dir the model is freshly initialised.
"""

import argparse
import copy
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

BATCH = 64


class ConvEBM(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 3, padding=1)
        self.conv2 = nn.Conv2d(64, 64, 4, stride=2, padding=1)
        self.conv3 = nn.Conv2d(64, 128, 4, stride=2, padding=1)
        self.conv4 = nn.Conv2d(128, 128, 3, padding=1)
        self.fc = nn.Linear(128 * 7 * 7, 1)

    def forward(self, x):
        x = F.leaky_relu(self.conv1(x), 0.2)
        x = F.leaky_relu(self.conv2(x), 0.2)
        x = F.leaky_relu(self.conv3(x), 0.2)
        x = F.leaky_relu(self.conv4(x), 0.2)
        x = x.view(x.size(0), -1)
        return self.fc(x)


def energy_grad(model, x):
    """E(x) and grad_x E(x), as Langevin samplers compute them."""
    x = x.detach().requires_grad_(True)
    e = model(x)
    (g,) = torch.autograd.grad([e.sum()], [x])
    return e.detach().squeeze(1), g


def setup(dtype, threads):
    torch.set_default_dtype(torch.float64 if dtype == "float64" else torch.float32)
    torch.set_num_threads(threads)
    torch.manual_seed(1)


def load(d):
    model = ConvEBM()
    if d:
        model.load_state_dict(torch.load(os.path.join(d, "conv_ebm.pt")))
        x = torch.from_numpy(np.load(os.path.join(d, "x.npy")))
    else:
        x = torch.rand(BATCH, 1, 28, 28)
    return model.to(torch.get_default_dtype()), x.to(torch.get_default_dtype())


def kink_margin(model, x):
    """Per image: the smallest |z| / (sum of |w·h| + |b|) over every LeakyReLU
    input z, computed in float64: how far the image sits from a kink,
    relative to the round-off of the sum that computes z."""
    m, h, out = copy.deepcopy(model).double(), x.double(), []
    with torch.no_grad():
        for c in (m.conv1, m.conv2, m.conv3, m.conv4):
            z = c(h)
            za = F.conv2d(h.abs(), c.weight.abs(), c.bias.abs(), c.stride, c.padding)
            out.append((z.abs() / za).flatten(1).min(1).values)
            h = F.leaky_relu(z, 0.2)
    return torch.stack(out, 1).min(1).values


def well_conditioned_input(model):
    """BATCH uniform images, each redrawn until no LeakyReLU input lies
    within 1e-6 of its sum's magnitude from zero. Where |z| is below
    float32's round-off of its sum, either side of the kink is a correct
    float32 result and the x-gradient jumps by 0.8·∂E/∂a·∂z/∂x: about 4% of
    random images have such a unit in float32 (measured), so a batch of 64
    almost always does, and the frameworks' gradients would differ by
    several percent on those images whatever their accuracy."""
    x = torch.rand(BATCH, 1, 28, 28)
    for _ in range(100):
        bad = kink_margin(model, x) < 1e-6
        if not bad.any():
            return x
        x[bad] = torch.rand(int(bad.sum()), 1, 28, 28)
    raise RuntimeError("no well-conditioned input after 100 redraws")


def export(d):
    model = ConvEBM().to(torch.get_default_dtype())
    x = well_conditioned_input(model)
    path = os.path.join(d, "conv_ebm.onnx")
    torch.onnx.export(model, (x,), path, opset_version=14, input_names=["x"], output_names=["energy"],
                      dynamic_axes={"x": {0: "batch"}, "energy": {0: "batch"}})
    torch.save(model.state_dict(), os.path.join(d, "conv_ebm.pt"))
    e, g = energy_grad(model, x)
    for name, a in (("x", x), ("energy", e), ("grad", g)):
        np.save(os.path.join(d, name + ".npy"), a.numpy())
    n = sum(p.numel() for p in model.parameters())
    print(json.dumps({"params": n, "torch": torch.__version__, "onnx": path}), flush=True)


def timed(task, k, model, x):
    t0 = time.perf_counter()
    if task[0] == "grad":
        for _ in range(k):
            energy_grad(model, x)
    else:
        n = int(task[1])
        a, b = torch.randn(n, n), torch.randn(n, n)
        t0 = time.perf_counter()
        for _ in range(k):
            torch.mm(a, b)
    return time.perf_counter() - t0


def serve(model, x):
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] not in ("grad", "gemm"):
            print(json.dumps({"error": "unknown command " + cmd[0]}), flush=True)
            continue
        print(json.dumps({"seconds": timed(cmd, int(cmd[-1]), model, x)}), flush=True)


def time_for(seconds, model, x):
    timed(["grad"], 2, model, x)
    k = max(1, int(seconds / (timed(["grad"], 3, model, x) / 3)))
    t = timed(["grad"], k, model, x)
    print(json.dumps({"ms_per_call": 1e3 * t / k, "calls": k, "threads": torch.get_num_threads()}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--export", metavar="DIR")
    mode.add_argument("--serve", metavar="DIR")
    mode.add_argument("--time", metavar="SECONDS", type=float)
    ap.add_argument("--dir", help="with --time: the exported model and input")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    setup(a.dtype, a.threads)
    if a.export:
        export(a.export)
    elif a.serve:
        serve(*load(a.serve))
    else:
        time_for(a.time, *load(a.dir))


if __name__ == "__main__":
    main()

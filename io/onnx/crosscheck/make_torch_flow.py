"""Regenerates io/checkpoint/testdata/torch_flow: a RealNVP trained for a few
steps in PyTorch (realnvp.py), saved as a flowebm checkpoint, with latents,
points, and PyTorch's T(z), log|det J_T(z)| and log λ(x), for io/checkpoint's
test. Run: /usr/bin/python3 make_torch_flow.py OUTDIR"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from realnvp import RealNVP, save_checkpoint  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(1)
torch.set_default_dtype(torch.float64)
flow = RealNVP(d=3, blocks=2, hidden=[8], depth=2, sigma=1.3)
for p in flow.parameters():
    torch.nn.init.normal_(p, std=0.3)
# A few steps of maximum likelihood on a skewed data set: weights far from
# the identity, as a flow trained in PyTorch would have.
data = torch.randn(512, 3) * torch.tensor([0.5, 2.0, 1.0]) + torch.tensor([1.0, -1.0, 0.5])
opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
for _ in range(50):
    opt.zero_grad()
    loss = -flow.log_prob(data).mean()
    loss.backward()
    opt.step()
save_checkpoint(out, flow, [3, 16, 1])
z = torch.randn(7, 3) * 1.3
x, ld = flow(z)
pts = torch.randn(7, 3) * 1.5
np.save(out + "/z.npy", z.numpy())
np.save(out + "/x.npy", x.detach().numpy())
np.save(out + "/logdet.npy", ld.detach().numpy())
np.save(out + "/points.npy", pts.numpy())
np.save(out + "/logq.npy", flow.log_prob(pts).detach().numpy())
print("final loss", float(loss))

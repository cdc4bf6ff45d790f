"""Regenerates io/onnx/testdata/refused: energy MLPs as researchers write
them that a flowebm checkpoint cannot hold, exported by torch.onnx.export
with its defaults. flowebm convert must refuse each, saying why, rather
than write another model (flowebm's test needs no PyTorch):

- relu6, hardtanh5: clipped activations, equal to ReLU and the identity
  near 0 (ReLU6, Hardtanh(-5, 5));
- batchnorm: a BatchNorm1d between the Linears (eval mode);
- nobias: a Linear without bias (exported as MatMul);
- relu6_by_relus: ReLU6 written relu(x) - relu(x - 6), with operators an
  activation may use, equal to ReLU below 6;
- per_unit: relu scaled by a different constant in each hidden unit;
- spectral_norm, weight_norm_unfolded: Linears whose weight the graph
  computes (torch.nn.utils.spectral_norm; weight_norm exported without
  constant folding);
- celu_f64: a float64 CELU, computed in float32 by the export;
- mixed_act: ReLU after the first Linear, Tanh after the second;
- quadratic_tail: net(x) + 0.5 * (x**2).sum(1, keepdim=True), the EBM with
  a Gaussian term that papers write.

Run with Debian's python3-torch (1.13):  /usr/bin/python3 make_refused_mlps.py OUTDIR
"""
import sys

import torch
import torch.nn as nn

out = sys.argv[1]
torch.manual_seed(0)
class Relu6ByRelus(nn.Module):
    def forward(self, x):
        return torch.relu(x) - torch.relu(x - 6)


class PerUnit(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.register_buffer("scale", torch.arange(1, h + 1, dtype=torch.float64))

    def forward(self, x):
        return torch.relu(x) * self.scale


class QuadraticTail(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 8), nn.SiLU(), nn.Linear(8, 1))

    def forward(self, x):
        return self.net(x) + 0.5 * (x ** 2).sum(1, keepdim=True)


nets = {
    "relu6": nn.Sequential(nn.Linear(3, 8), nn.ReLU6(), nn.Linear(8, 1)),
    "hardtanh5": nn.Sequential(nn.Linear(3, 8), nn.Hardtanh(-5, 5), nn.Linear(8, 1)),
    "batchnorm": nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)),
    "nobias": nn.Sequential(nn.Linear(3, 8, bias=False), nn.ReLU(), nn.Linear(8, 1)),
    "relu6_by_relus": nn.Sequential(nn.Linear(3, 8), Relu6ByRelus(), nn.Linear(8, 1)),
    "per_unit": nn.Sequential(nn.Linear(3, 8), PerUnit(8), nn.Linear(8, 1)),
    # Probe 67 A2: weights computed in the graph, blamed on a missing bias
    # (spectral_norm's u·W·v is a MatMul) or refused without a way on.
    "spectral_norm": nn.Sequential(nn.utils.spectral_norm(nn.Linear(3, 8)), nn.SiLU(), nn.utils.spectral_norm(nn.Linear(8, 1))),
    "weight_norm_unfolded": nn.Sequential(nn.utils.weight_norm(nn.Linear(3, 8)), nn.SiLU(), nn.Linear(8, 1)),
    # Probe 68 A2: float64 CELU, exported as Cast(float) -> Celu -> Cast(double).
    "celu_f64": nn.Sequential(nn.Linear(3, 8), nn.CELU(), nn.Linear(8, 1)),
    # Probe 109 A2: two activations, refused without a way on.
    "mixed_act": nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)),
    # Round 119 A5: the Gemm named, not the Add after it, and no way on.
    "quadratic_tail": QuadraticTail(),
}
for name, m in nets.items():
    m = m.double().eval()
    torch.onnx.export(m, (torch.randn(2, 3, dtype=torch.float64),), f"{out}/{name}.onnx", input_names=["x"],
                      output_names=["energy"], dynamic_axes={"x": {0: "batch"}, "energy": {0: "batch"}},
                      do_constant_folding=not name.endswith("_unfolded"))

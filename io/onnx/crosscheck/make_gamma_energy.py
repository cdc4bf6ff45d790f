"""The energy of a Gamma(3, 1) in 2 dimensions, -2 log x + x summed over
the coordinates, as a researcher writes it in PyTorch (a Python float in
forward) and exports it with torch.onnx.export's defaults, to
io/onnx/testdata/edge/gamma_energy.onnx: +Inf on the edge of its support
(x = 0), NaN outside it (round 98 A1: one such point refused the whole
file of points).

Run with /usr/bin/python3 (PyTorch 1.13, onnx) from the repository root.
"""
import torch


class GammaEnergy(torch.nn.Module):
    def forward(self, x):
        return (-2.0 * torch.log(x) + x).sum(1)


torch.onnx.export(GammaEnergy(), torch.ones(3, 2), "io/onnx/testdata/edge/gamma_energy.onnx",
                  input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "N"}, "energy": {0: "N"}})

"""A smooth, steep energy, sum of x**4, as a researcher writes it in PyTorch
and exports it with torch.onnx.export, to
io/onnx/testdata/edge/quartic_energy.onnx: a MALA chain started far out
(at (12, 12), energy 41472, gradient 6912 per coordinate) has every
proposal rejected with the step tuned on the other chains, and never moves
(round 104 A1: said to be on a plateau outside the support).

Run with /usr/bin/python3 (PyTorch 1.13, onnx) from the repository root.
"""
import torch


class Quartic(torch.nn.Module):
    def forward(self, x):
        return (x ** 4).sum(1, keepdim=True)


torch.onnx.export(Quartic(), torch.ones(4, 2), "io/onnx/testdata/edge/quartic_energy.onnx", opset_version=13,
                  input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "N"}, "energy": {0: "N"}})

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


# gamma_placeholder_energy.onnx: a Gamma(3, 2) energy in 1 dimension,
# 1e30 outside its support, as flowebm's refusal of +Inf energies advises
# writing it (torch.where(inside, e, torch.full_like(e, 1e30))): chains
# started outside stay there (round 102 A1).
class GammaPlaceholder(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0, 2 * x - 2 * torch.log(torch.clamp(x, min=1e-30)), torch.full_like(x, 1e30)).sum(-1)


torch.onnx.export(GammaPlaceholder(), torch.rand(5, 1) + 0.1, "io/onnx/testdata/edge/gamma_placeholder_energy.onnx", opset_version=13,
                  input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "N"}, "energy": {0: "N"}})


# gamma_plateau_energy.onnx: the same Gamma(3, 2) with 1000 outside its
# support, a placeholder researchers write as often as 1e30: chains
# started outside stay on that plateau (round 103 A1: not noted below a
# gap of 10⁴).
class GammaPlateau(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0, 2 * x - 2 * torch.log(torch.clamp(x, min=1e-30)), torch.full_like(x, 1000.0)).sum(-1)


torch.onnx.export(GammaPlateau(), torch.rand(5, 1) + 0.1, "io/onnx/testdata/edge/gamma_plateau_energy.onnx", opset_version=13,
                  input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "N"}, "energy": {0: "N"}})


# gamma_low_plateau_energy.onnx: the same Gamma(3, 2) with 30 outside its
# support: a plateau above the band where draws at equilibrium lie but
# below 50 + 5·d above them (round 126 A5: chains on it were said nothing
# of).
class GammaLowPlateau(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0, 2 * x - 2 * torch.log(torch.clamp(x, min=1e-30)), torch.full_like(x, 30.0)).sum(-1)


torch.onnx.export(GammaLowPlateau(), torch.rand(5, 1) + 0.1, "io/onnx/testdata/edge/gamma_low_plateau_energy.onnx", opset_version=13,
                  input_names=["x"], output_names=["energy"], dynamic_axes={"x": {0: "N"}, "energy": {0: "N"}})

"""Exports a PyTorch normalizing flow as the two ONNX graphs flowebm reads
(io/onnx.ReadFlow; `flowebm sample --flow SAMPLE.onnx --flow-density
DENSITY.onnx`):

  sampling graph  z (batch, d) -> x (batch, d) = T(z), log_density (batch) = log q(x)
  density graph   x (batch, d) -> log_density (batch) = log q(x) [, z (batch, d) = T^-1(x)]

with the base N(0, diag sigma^2) declared in metadata_props
("flowebm.base_sigma") and the module's parameters listed
("flowebm.parameters"), so that flowebm trains exactly those (not a
coupling's mask or a MADE's masks, which are buffers) and keeps the two
graphs tied by initializer name. Both graphs are exported from one wrapper
module with do_constant_folding=False and without PyTorch's merging of
equal-valued initializers (two zero biases would otherwise become one
weight), so the initializer names are the module's state_dict names.

Use from Python (Debian: /usr/bin/python3 with python3-torch, python3-onnx):

    from export_flow import export_flow, nflows_functions
    export_flow(flow, d, "flow_sample.onnx", "flow_density.onnx",
                sample=..., log_prob=..., inverse=...)

sample(z) must return (x, logdet) with logdet = log|det dx/dz|, or
(x, log_q) with log_q=True; log_prob(x) returns log q(x); inverse(x), if
given, returns z = T^-1(x) (NeuTra needs it). For a module with
forward(z) -> (x, logdet), log_prob(x) and optionally inverse(x), the
defaults need nothing more; nflows_functions(flow) adapts an nflows.Flow.
"""
import json

import onnx
import torch
import torch.nn as nn


class _Graph(nn.Module):
    """One direction of the flow as a module whose parameters are the flow's
    (names prefixed "flow."). training reads True at this level only, so that
    torch.onnx keeps equal-valued parameters apart; submodules still run in
    evaluation mode (BatchNorm uses its running statistics)."""

    def __init__(self, flow, fn):
        super().__init__()
        self.flow = flow
        self.fn = fn

    @property
    def training(self):
        return True

    @training.setter
    def training(self, _):
        pass

    def forward(self, v):
        return self.fn(v)


def _add_metadata(path, params, sigma):
    m = onnx.load(path)
    names = {t.name for t in m.graph.initializer}
    missing = [p for p in params if p not in names]
    if missing:
        raise ValueError(f"{path}: parameters {missing[:3]} are not initializers of the export; "
                         "they were folded or merged (export_flow uses do_constant_folding=False; "
                         "a parameter used only through a computed copy cannot be tied)")
    used = {i for n in m.graph.node for i in n.input}
    for k, v in (("flowebm.parameters", json.dumps([p for p in params if p in used])),
                 ("flowebm.base_sigma", json.dumps(sigma))):
        e = m.metadata_props.add()
        e.key, e.value = k, v
    onnx.save(m, path)


def export_flow(flow, d, sample_path, density_path, sample=None, log_prob=None, inverse=None,
                log_q=False, base_sigma=1.0, dtype=torch.float64, opset=14, batch=5):
    """Writes the flow's sampling and density graphs. base_sigma is the base's
    sigma (a number or d numbers); dtype the graphs' float type."""
    flow = flow.to(dtype)
    flow.eval()
    sample = sample or flow.forward
    log_prob = log_prob or flow.log_prob
    if inverse is None and hasattr(flow, "inverse"):
        inverse = flow.inverse
    sigma64 = torch.as_tensor(base_sigma, dtype=torch.float64).expand(d).clone()
    sigma = sigma64.to(dtype)

    def sample_fn(z):
        x, s = sample(z)
        if not log_q:
            base = (-0.5 * (z / sigma) ** 2 - torch.log(sigma) - 0.9189385332046727418).sum(1)
            s = base - s
        return x, s

    def density_fn(x):
        lq = log_prob(x)
        return (lq, inverse(x)) if inverse is not None else lq

    for path, fn, inp, outs in ((sample_path, sample_fn, "z", ["x", "log_density"]),
                                (density_path, density_fn, "x",
                                 ["log_density", "z"] if inverse is not None else ["log_density"])):
        g = _Graph(flow, fn)
        v = torch.randn(batch, d, dtype=dtype)
        axes = {n: {0: "batch"} for n in [inp] + outs}
        with torch.no_grad():
            torch.onnx.export(g, (v,), path, input_names=[inp], output_names=outs, dynamic_axes=axes,
                              opset_version=opset, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.PRESERVE)
        params = [n for n, _ in g.named_parameters()]
        _add_metadata(path, params, sigma64.tolist())


def nflows_functions(flow):
    """sample, log_prob and inverse of an nflows.flows.Flow with a standard
    normal base: x = transform^-1(z), and z = transform(x)."""
    def sample(z):
        return flow._transform.inverse(z)

    def inverse(x):
        return flow._transform(x)[0]

    return dict(sample=sample, log_prob=flow.log_prob, inverse=inverse)

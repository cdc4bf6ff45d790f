"""Regenerates io/onnx/testdata/zoo: energy-based models and normalising flows
written the way their authors write them, exported by PyTorch 1.13's
torch.onnx.export with its defaults, with PyTorch's outputs, input gradients
and parameter gradients, for io/onnx's zoo test (which needs no PyTorch).

Run with Debian's python3-torch 1.13 and python3-onnx 1.12 (only
/usr/bin/python3 sees them):

    /usr/bin/python3 make_zoo.py ../testdata/zoo [--flowlibs DIR]

--flowlibs DIR holds source trees of the flow libraries, not copied into
this repository. Without it the library flows are recorded as not exported.
Get them with (any clone works; the commit is read from DIR/NAME/COMMIT, or
from git when DIR/NAME is a clone):

    for r in bayesiains/nflows:nflows VincentStimper/normalizing-flows:normflows \\
             probabilists/zuko:zuko; do
      git clone -q https://github.com/${r%%:*} DIR/${r##*:}
      git -C DIR/${r##*:} rev-parse HEAD > DIR/${r##*:}/COMMIT
    done

(the fixtures in the repository were made from nflows 5d22344, normflows
c6616b1, zuko 1063ae4; see manifest.json). nflows imports matplotlib, tqdm
and UMNN at import time but uses none of them for the flows here; where they
are missing the script puts inert stand-in modules in sys.modules.

For each model and dtype (float64: model.double(), float32: model.float(),
same weights, same inputs) it writes NAME.onnx and NAME.npz (np.savez) with
  x        the input batch (5 rows for dynamic-batch exports, which are traced
           at batch 3; the export batch for fixed-batch ones), in the
           model's input shape and dtype;
  energy   the graph's output as float64 (squeezed from (B, 1) to (B,)). For
           entries whose manifest "output" is "log_prob" this is the log
           density itself (higher is more likely), not its negative;
  grad     d(sum of output)/dx, float64, x's shape;
  pgrad_P  d(sum of output)/dP for every ONNX initializer P whose name and
           shape are those of a PyTorch parameter (constant folding renames
           some: fused Conv+BatchNorm, masked weights, transposed MatMul
           weights), float64;
  identity_pgrad_P  the same for a parameter P that the exporter replaced by
           Identity(another initializer with equal values), so P is no
           initializer (manifest "identity_pgrads");
  folded_pgrad_P  PyTorch's gradient for a parameter P that is still an
           initializer but also feeds an initializer made by constant
           folding (e.g. exp(2 * log_sigma) folded next to an unfolded use of
           log_sigma): the graph's own gradient for P differs, so it is not
           stored as pgrad_P (manifest "partially_folded_params").
References are computed by PyTorch autograd in the export's own dtype.

manifest.json lists every model, including the exports that failed
("export_error" set, no files), with: name, family, dtype (f64/f32), opset,
input_shape (without batch), dynamic_batch (dynamic_axes on dim 0),
export_batch (the tracing batch), fixture_batch, batch_pinned (the graph
only runs at export_batch: fixed-batch exports, and dynamic-batch exports
holding torch.zeros(len(x)) constants), output ("energy": lower is more
likely; "log_prob": the output is a log density), output_name, output_shape
(at fixture_batch), ops (op_type histogram, subgraphs included),
data_dependent_shape (NonZero & co. present), source ("own" or
"LIB@COMMIT"), notes, checker_error (onnx.checker.check_model with
full_check), n_params, pgrads, renamed_params (parameters with no
initializer of their name), identity_initializers, identity_pgrads,
partially_folded_params, warnings (the exporter's), bytes_onnx, bytes_npz,
and for f32 entries f32_vs_f64_rel (relative inf-norm difference between the
f32 and f64 PyTorch outputs at the same x).
"""
import argparse
import collections
import copy
import importlib.util
import io
import json
import math
import os
import subprocess
import sys
import time
import types
import warnings
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

EXPORT_BATCH = 3   # batch of the tracing input
TEST_BATCH = 5     # batch of the fixture's x for dynamic-batch exports
DEFAULT_OPSET = 14  # torch 1.13's default; written explicitly in the manifest

# ---------------------------------------------------------------------------
# Energy-based models, written in their authors' idioms.
# ---------------------------------------------------------------------------


class Swish(nn.Module):
    # IGEBM's swish, as in ebm_code_release: x * sigmoid(x).
    def forward(self, x):
        return x * torch.sigmoid(x)


class IGEBM(nn.Module):
    """Du & Mordatch (2019)-style conv EBM on MNIST (1x28x28)."""

    def __init__(self, ch=8, act="leaky"):
        super().__init__()
        self.act = nn.LeakyReLU(0.2) if act == "leaky" else Swish()
        self.conv1 = nn.Conv2d(1, ch, 3, 1, 1)
        self.conv2 = nn.Conv2d(ch, 2 * ch, 4, 2, 1)  # 28 -> 14
        self.conv3 = nn.Conv2d(2 * ch, 2 * ch, 3, 1, 1)
        self.pool = nn.AvgPool2d(2)  # 14 -> 7
        self.fc = nn.Linear(2 * ch * 7 * 7, 1)

    def forward(self, x):
        h = self.act(self.conv1(x))
        h = self.act(self.conv2(h))
        h = self.act(self.conv3(h))
        h = self.pool(h)
        h = h.view(h.size(0), -1)
        return self.fc(h)


class IGEBMFlat(nn.Module):
    """The same on flat (B, 784) input, reshaped in forward."""

    def __init__(self, ch=8):
        super().__init__()
        self.swish = Swish()
        self.conv1 = nn.Conv2d(1, ch, 3, 1, 1)
        self.conv2 = nn.Conv2d(ch, 2 * ch, 4, 2, 1)
        self.fc = nn.Linear(2 * ch * 7 * 7, 1)

    def forward(self, x):
        x = x.view(-1, 1, 28, 28)
        h = self.swish(self.conv1(x))
        h = self.swish(self.conv2(h))
        h = F.avg_pool2d(h, 2)
        h = h.view(h.size(0), -1)
        return self.fc(h).squeeze(-1)


# --- JEM (Grathwohl et al. 2020): wide_resnet.py with norm=None or "batch".
class Identity(nn.Module):
    def forward(self, x):
        return x


def get_norm(n_filters, norm):
    if norm is None:
        return Identity()
    elif norm == "batch":
        return nn.BatchNorm2d(n_filters, momentum=0.9)
    elif norm == "group":
        return nn.GroupNorm(2, n_filters)


class WideBasic(nn.Module):
    def __init__(self, in_planes, planes, dropout_rate, stride=1, norm=None, leak=.2):
        super().__init__()
        self.lrelu = nn.LeakyReLU(leak)
        self.bn1 = get_norm(in_planes, norm)
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, padding=1, bias=True)
        self.dropout = Identity() if dropout_rate == 0.0 else nn.Dropout(p=dropout_rate)
        self.bn2 = get_norm(planes, norm)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=True)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=True))

    def forward(self, x):
        out = self.dropout(self.conv1(self.lrelu(self.bn1(x))))
        out = self.conv2(self.lrelu(self.bn2(out)))
        out += self.shortcut(x)
        return out


class WideResNet(nn.Module):
    # depth 10 = one block per stage; widths 4, 4, 8, 8 (JEM: 16, 160, 320, 640).
    def __init__(self, widths=(4, 4, 8, 8), num_classes=10, norm=None, dropout_rate=0.0, pool="avg_pool2d"):
        super().__init__()
        self.leak = .2
        self.pool = pool
        self.conv1 = nn.Conv2d(3, widths[0], kernel_size=3, stride=1, padding=1, bias=True)
        self.layer1 = nn.Sequential(WideBasic(widths[0], widths[1], dropout_rate, 1, norm))
        self.layer2 = nn.Sequential(WideBasic(widths[1], widths[2], dropout_rate, 2, norm))
        self.layer3 = nn.Sequential(WideBasic(widths[2], widths[3], dropout_rate, 2, norm))
        self.bn1 = get_norm(widths[3], norm)
        self.last_dim = widths[3]
        self.avgpool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        out = self.conv1(x)
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.layer3(out)
        out = F.leaky_relu(self.bn1(out), self.leak)
        if self.pool == "avg_pool2d":
            out = F.avg_pool2d(out, 8)
            out = out.view(out.size(0), -1)
        elif self.pool == "adaptive":
            out = torch.flatten(self.avgpool(out), 1)
        else:
            out = out.mean(dim=(2, 3))
        return out


class JEM(nn.Module):
    """JEM's F: energy(x) = -logsumexp_y f(x)[y]."""

    def __init__(self, n_classes=10, **kw):
        super().__init__()
        self.f = WideResNet(**kw)
        self.class_output = nn.Linear(self.f.last_dim, n_classes)

    def classify(self, x):
        return self.class_output(self.f(x)).squeeze()

    def forward(self, x):
        logits = self.classify(x)
        return -torch.logsumexp(logits, 1)


# --- Short-run MCMC / "anatomy" EBM (Nijkamp et al. 2019, 2020), VanillaNet.
class VanillaNet(nn.Module):
    def __init__(self, n_c=3, n_f=2, leak=0.2, flatten="squeeze"):
        super().__init__()
        self.flatten = flatten
        self.f = nn.Sequential(
            nn.Conv2d(n_c, n_f, 3, 1, 1), nn.LeakyReLU(leak),
            nn.Conv2d(n_f, n_f * 2, 4, 2, 1), nn.LeakyReLU(leak),
            nn.Conv2d(n_f * 2, n_f * 4, 4, 2, 1), nn.LeakyReLU(leak),
            nn.Conv2d(n_f * 4, n_f * 8, 4, 2, 1), nn.LeakyReLU(leak),
            nn.Conv2d(n_f * 8, 1, 4, 1, 0))

    def forward(self, x):
        if self.flatten == "squeeze":
            return self.f(x).squeeze()
        return self.f(x).view(-1)


# --- MLP EBMs.
class MLPLayerNorm(nn.Module):
    def __init__(self, d=8, h=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, h), nn.LayerNorm(h), nn.SiLU(),
                                 nn.Linear(h, h), nn.LayerNorm(h), nn.SiLU(), nn.Linear(h, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def mlp_batchnorm(d=8, h=16):
    return nn.Sequential(nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(h, h), nn.BatchNorm1d(h), nn.LeakyReLU(0.1), nn.Dropout(0.1),
                         nn.Linear(h, 1))


class MLPAct(nn.Module):
    def __init__(self, act, d=8, h=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, h), act, nn.Linear(h, h), copy.deepcopy(act), nn.Linear(h, 1))

    def forward(self, x):
        return self.net(x)


class SoftplusTempEBM(nn.Module):
    """Energy = f(x)/T + a Gaussian quadratic term."""

    def __init__(self, d=8, h=16, T=0.7):
        super().__init__()
        self.T = T
        self.net = nn.Sequential(nn.Linear(d, h), nn.Softplus(beta=2), nn.Linear(h, h), nn.Softplus(beta=2),
                                 nn.Linear(h, 1))

    def forward(self, x):
        energy = self.net(x).squeeze(-1)
        return energy / self.T + 0.5 * (x ** 2).sum(1)


class ImageMLP(nn.Module):
    """An MLP EBM on 8x8 digits images (B, 1, 8, 8), flattened in forward."""

    def __init__(self, h=16):
        super().__init__()
        self.fc1 = nn.Linear(64, h)
        self.act1 = nn.ELU(alpha=0.5)
        self.fc2 = nn.Linear(h, h)
        self.act2 = nn.SELU()
        self.fc3 = nn.Linear(h, 1)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        h = self.act2(self.fc2(self.act1(self.fc1(x))))
        return self.fc3(h).squeeze(-1) + 0.01 * x.pow(2).sum(dim=1)


class HardswishMish(nn.Module):
    def __init__(self, d=8, h=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, h), nn.Hardswish(), nn.Linear(h, h), nn.Mish(), nn.Linear(h, 1))

    def forward(self, x):
        return self.net(x)


class ClampWhere(nn.Module):
    def __init__(self, d=8, h=16):
        super().__init__()
        self.l1 = nn.Linear(d, h)
        self.l2 = nn.Linear(h, h)
        self.l3 = nn.Linear(h, 1)

    def forward(self, x):
        h = torch.clamp(self.l1(x), min=-1.5, max=1.5)
        h = self.l2(h)
        h = torch.where(h > 0, h, 0.1 * h)
        e = self.l3(torch.tanh(h)).squeeze(-1)
        return e + 0.1 * torch.abs(x).sum(-1)


class ResidualMLP(nn.Module):
    """Residual MLP on (B, 2, 4) input with nn.Flatten and a norm term."""

    def __init__(self, h=16):
        super().__init__()
        self.flatten = nn.Flatten()
        self.inp = nn.Linear(8, h)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LeakyReLU(0.05), nn.Linear(h, h)) for _ in range(2)])
        self.out = nn.Linear(h, 1)

    def forward(self, x):
        h = self.inp(self.flatten(x))
        for block in self.blocks:
            h = h + block(h)
        return self.out(F.leaky_relu(h, 0.05)).squeeze(1) + 0.1 * h.norm(dim=1)


class DeepSetsEBM(nn.Module):
    """Permutation-invariant energy of a set of N points (B, N, 2)."""

    def __init__(self, h=16):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(2, h), nn.ReLU(), nn.Linear(h, h))
        self.rho = nn.Sequential(nn.Linear(h, h), nn.Tanh(), nn.Linear(h, 1))

    def forward(self, x):
        pooled = self.phi(x).sum(dim=1) + self.phi(x).mean(dim=1)
        return self.rho(pooled).squeeze(-1)


class GMMEnergy(nn.Module):
    """A learned Gaussian mixture as an energy: -logsumexp over components,
    with raw nn.Parameters and broadcasting via None-indexing."""

    def __init__(self, d=4, k=5):
        super().__init__()
        self.mu = nn.Parameter(torch.randn(k, d))
        self.log_sigma = nn.Parameter(0.1 * torch.randn(k))
        self.logits = nn.Parameter(torch.zeros(k))

    def forward(self, x):
        d = x.shape[1]
        diff = x[:, None, :] - self.mu[None, :, :]
        sq = (diff ** 2).sum(-1) / torch.exp(2 * self.log_sigma)
        log_comp = -0.5 * sq - d * self.log_sigma + torch.log_softmax(self.logits, dim=0)
        return -torch.logsumexp(log_comp, dim=1)


class QuadraticFormEBM(nn.Module):
    """A Gaussian energy 0.5 x^T A A^T x + b.x plus x @ W nonlinearity."""

    def __init__(self, d=4, h=8):
        super().__init__()
        self.A = nn.Parameter(torch.randn(d, d) / math.sqrt(d))
        self.b = nn.Parameter(torch.zeros(d))
        self.W = nn.Parameter(torch.randn(d, h) / math.sqrt(d))
        self.v = nn.Parameter(torch.randn(h) / math.sqrt(h))

    def forward(self, x):
        y = x @ self.A
        quad = 0.5 * (y * y).sum(dim=1)
        feat = torch.tanh(torch.matmul(x, self.W))
        return quad + x @ self.b + (feat * self.v).sum(-1)


# --- Spectral norm.
def sn_mlp(d=8, h=16):
    sn = nn.utils.spectral_norm
    return nn.Sequential(sn(nn.Linear(d, h)), nn.LeakyReLU(0.2), sn(nn.Linear(h, h)), nn.LeakyReLU(0.2),
                         sn(nn.Linear(h, 1)))


def sn_conv(ch=4):
    # On 1x16x16.
    sn = nn.utils.spectral_norm
    return nn.Sequential(sn(nn.Conv2d(1, ch, 3, 1, 1)), nn.LeakyReLU(0.2),
                         sn(nn.Conv2d(ch, ch, 4, 2, 1)), nn.LeakyReLU(0.2),
                         nn.AvgPool2d(2), nn.Flatten(), sn(nn.Linear(ch * 4 * 4, 1)))


def remove_sn(model):
    for m in model.modules():
        if hasattr(m, "weight_orig"):
            nn.utils.remove_spectral_norm(m)
    return model


# --- Convolutional odds and ends.
class GroupNormConv(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, ch, 3, 1, 1)
        self.gn1 = nn.GroupNorm(4, ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, 2, 1)
        self.gn2 = nn.GroupNorm(2, ch)
        self.fc = nn.Linear(ch, 1)

    def forward(self, x):
        h = F.silu(self.gn1(self.conv1(x)))
        h = F.silu(self.gn2(self.conv2(h)))
        return self.fc(h.mean([2, 3])).squeeze(-1)


class InstanceNormConv(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(3, ch, 3, 1, 1), nn.InstanceNorm2d(ch, affine=True), nn.LeakyReLU(0.2),
                                  nn.Conv2d(ch, ch, 4, 2, 1), nn.InstanceNorm2d(ch), nn.LeakyReLU(0.2),
                                  nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(ch, 1)

    def forward(self, x):
        h = self.main(x)
        return self.fc(h.view(h.size(0), -1))


class DepthwiseReflect(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.stem = nn.Conv2d(3, ch, 3, padding=1, padding_mode="reflect")
        self.dw = nn.Conv2d(ch, ch, 3, padding=2, dilation=2, groups=ch)
        self.pw = nn.Conv2d(ch, ch, 1)
        self.pad = nn.ReplicationPad2d(1)
        self.conv = nn.Conv2d(ch, ch, 3)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(ch, 1)

    def forward(self, x):
        h = F.leaky_relu(self.stem(x), 0.2)
        h = F.leaky_relu(self.pw(self.dw(h)), 0.2)
        h = self.pool(h)
        h = F.leaky_relu(self.conv(self.pad(h)), 0.2)
        h = F.max_pool2d(h, kernel_size=3, stride=2, padding=1)
        return self.head(h.sum(dim=(2, 3))).squeeze(-1)


class Conv1dEBM(nn.Module):
    """An EBM on sequences (B, C, L)."""

    def __init__(self, c=2, ch=8):
        super().__init__()
        self.conv1 = nn.Conv1d(c, ch, 5, padding=2)
        self.conv2 = nn.Conv1d(ch, ch, 3, stride=2, padding=1)
        self.pool = nn.AvgPool1d(2)
        self.fc = nn.Linear(ch, 1)

    def forward(self, x):
        h = F.silu(self.conv1(x))
        h = self.pool(F.silu(self.conv2(h)))
        return self.fc(h.mean(-1)).squeeze(-1)


class ConvAE(nn.Module):
    """Autoencoder energy ||x - dec(enc(x))||^2 (1x16x16)."""

    def __init__(self, ch=4, upsample=False, loss="sum"):
        super().__init__()
        self.upsample = upsample
        self.loss = loss
        self.enc = nn.Sequential(nn.Conv2d(1, ch, 3, 2, 1), nn.ReLU(), nn.Conv2d(ch, 2 * ch, 3, 2, 1), nn.ReLU())
        if upsample:
            self.dec = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(2 * ch, ch, 3, 1, 1),
                                     nn.ReLU(), nn.Upsample(scale_factor=2), nn.Conv2d(ch, 1, 3, 1, 1), nn.Tanh())
        else:
            self.dec = nn.Sequential(nn.ConvTranspose2d(2 * ch, ch, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(ch, 1, 3, 2, 1, output_padding=1), nn.Tanh())

    def forward(self, x):
        recon = self.dec(self.enc(x))
        if self.loss == "mse_loss":
            return F.mse_loss(recon, x, reduction="none").sum(dim=(1, 2, 3))
        if self.upsample:
            return ((recon - x) ** 2).sum(dim=(1, 2, 3))
        return ((x - recon) ** 2).view(x.size(0), -1).sum(1)


class BasicBlock(nn.Module):
    # torchvision-style Conv -> BatchNorm -> ReLU (fused by the exporter in eval).
    def __init__(self, inp, out, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or inp != out:
            self.down = nn.Sequential(nn.Conv2d(inp, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class ResNetConvBN(nn.Module):
    def __init__(self, ch=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, ch, 3, 1, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU(inplace=True))
        self.layer1 = BasicBlock(ch, ch)
        self.layer2 = BasicBlock(ch, 2 * ch, 2)
        self.fc = nn.Linear(2 * ch, 1)

    def forward(self, x):
        h = self.layer2(self.layer1(self.stem(x)))
        h = F.adaptive_avg_pool2d(h, (1, 1))
        return self.fc(torch.flatten(h, 1))


# ---------------------------------------------------------------------------
# Own flows, written as users write them.
# ---------------------------------------------------------------------------


class AffineCoupling(nn.Module):
    """x = (x1, x2); z2 = (x2 - t(x1)) * exp(-s(x1)), s = tanh(.)."""

    def __init__(self, d, hidden, split="slice"):
        super().__init__()
        self.d1 = d // 2
        self.split = split
        self.net = nn.Sequential(nn.Linear(self.d1, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 2 * (d - self.d1)))

    def inverse(self, x):  # data -> latent, with log|det dz/dx|
        if self.split == "slice":
            x1, x2 = x[:, :self.d1], x[:, self.d1:]
        else:
            x1, x2 = torch.chunk(x, 2, dim=1)
        s, t = self.net(x1).chunk(2, dim=1)
        s = torch.tanh(s)
        z2 = (x2 - t) * torch.exp(-s)
        return torch.cat([x1, z2], dim=1), -s.sum(dim=1)


class ActNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, d))
        self.log_scale = nn.Parameter(torch.zeros(1, d))

    @torch.no_grad()
    def initialize(self, x):
        # Glow's data-dependent initialisation: zero mean, unit variance.
        self.loc.copy_(x.mean(0, keepdim=True))
        self.log_scale.copy_(torch.log(x.std(0, keepdim=True)))

    def inverse(self, x):
        z = (x - self.loc) * torch.exp(-self.log_scale)
        return z, -self.log_scale.sum() * torch.ones_like(x[:, 0])


class RealNVP(nn.Module):
    """RealNVP on R^d: couplings interleaved with fixed permutations; forward
    returns log p(x) (or -log p(x) with energy=True)."""

    def __init__(self, d=4, n_layers=3, hidden=8, split="slice", actnorm=False, perm="index", logdet="new_zeros",
                 energy=False):
        super().__init__()
        self.d = d
        self.energy = energy
        self.logdet = logdet
        self.perm = perm
        self.layers = nn.ModuleList([AffineCoupling(d, hidden, split) for _ in range(n_layers)])
        self.norms = nn.ModuleList([ActNorm(d) for _ in range(n_layers)]) if actnorm else None
        for i in range(n_layers):
            self.register_buffer(f"perm_{i}", torch.randperm(d))

    def log_prob(self, x):
        if self.logdet == "zeros_len":
            log_det = torch.zeros(len(x), dtype=x.dtype, device=x.device)
        else:
            log_det = x.new_zeros(x.shape[0])
        z = x
        for i in reversed(range(len(self.layers))):
            if self.perm == "index":
                z = z[:, getattr(self, f"perm_{i}")]
            else:
                z = torch.flip(z, dims=[1])
            z, ld = self.layers[i].inverse(z)
            log_det = log_det + ld
            if self.norms is not None:
                z, ld = self.norms[i].inverse(z)
                log_det += ld
        base = -0.5 * (z ** 2).sum(1) - 0.5 * self.d * math.log(2 * math.pi)
        return base + log_det

    @torch.no_grad()
    def initialize(self, x):
        # ActNorm's data-dependent init on a first batch, through the layers.
        z = x
        for i in reversed(range(len(self.layers))):
            z = z[:, getattr(self, f"perm_{i}")] if self.perm == "index" else torch.flip(z, dims=[1])
            z, _ = self.layers[i].inverse(z)
            if self.norms is not None:
                self.norms[i].initialize(z)
                z, _ = self.norms[i].inverse(z)
        return self

    def forward(self, x):
        if self.energy:
            return -self.log_prob(x)
        return self.log_prob(x)


class MaskedLinear(nn.Linear):
    def __init__(self, in_features, out_features, mask):
        super().__init__(in_features, out_features)
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)


class MADE(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        deg_in = torch.arange(1, d + 1)
        deg_h = torch.arange(hidden) % max(1, d - 1) + 1
        m1 = (deg_h[:, None] >= deg_in[None, :]).float()
        m2 = (deg_h[:, None] >= deg_h[None, :]).float()
        m3 = (deg_in[:, None] > deg_h[None, :]).float().repeat(2, 1)
        self.net = nn.Sequential(MaskedLinear(d, hidden, m1), nn.ReLU(), MaskedLinear(hidden, hidden, m2), nn.ReLU(),
                                 MaskedLinear(hidden, 2 * d, m3))

    def forward(self, x):
        mu, alpha = self.net(x).chunk(2, dim=1)
        return mu, alpha


class MAF(nn.Module):
    """A hand-written MAF (Papamakarios et al. 2017): log p(x) in one pass."""

    def __init__(self, d=4, n_layers=2, hidden=8):
        super().__init__()
        self.d = d
        self.mades = nn.ModuleList([MADE(d, hidden) for _ in range(n_layers)])

    def forward(self, x):
        log_det = 0.0
        z = x
        for made in self.mades:
            mu, alpha = made(z)
            z = (z - mu) * torch.exp(-alpha)
            log_det = log_det - alpha.sum(dim=1)
            z = z.flip(1)
        return -0.5 * (z ** 2).sum(1) - 0.5 * self.d * math.log(2 * math.pi) + log_det


# ---------------------------------------------------------------------------
# Flow libraries (source trees given with --flowlibs).
# ---------------------------------------------------------------------------

LIBS = {}  # name -> {"path", "commit", "source", "error"}


def _stub(name):
    m = types.ModuleType(name)

    def ga(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)

        class Missing:
            def __init__(self, *a, **k):
                raise ImportError(f"{name} is not installed (make_zoo.py's stand-in)")
        return Missing
    m.__getattr__ = ga
    return m


def setup_flowlibs(root):
    missing = [n for n in ["matplotlib", "UMNN", "tqdm"] if importlib.util.find_spec(n) is None]
    for n in missing:
        sys.modules[n] = _stub(n)
    if "matplotlib" in missing:
        sys.modules["matplotlib.pyplot"] = sys.modules["matplotlib"].pyplot = _stub("matplotlib.pyplot")
    for lib, dirs in [("nflows", ["nflows", "bayesiains+nflows"]),
                      ("normflows", ["normflows", "normalizing-flows", "VincentStimper+normalizing-flows"]),
                      ("zuko", ["zuko", "probabilists+zuko"])]:
        info = {"source": lib + "@unknown", "error": ""}
        found = None
        for d in [os.path.join(root, x) for x in dirs] + [root]:
            if os.path.isfile(os.path.join(d, lib, "__init__.py")):
                found = d
                break
        if found is None:
            info["error"] = f"{lib}: no source tree under {root}"
            LIBS[lib] = info
            continue
        commit = ""
        cf = os.path.join(found, "COMMIT")
        if os.path.isfile(cf):
            commit = open(cf).read().strip()
        else:
            try:
                commit = subprocess.run(["git", "-C", found, "rev-parse", "HEAD"], capture_output=True, text=True,
                                        check=True).stdout.strip()
            except Exception:
                commit = "unknown"
        sys.path.insert(0, found)
        try:
            importlib.import_module(lib)
        except Exception as e:
            info["error"] = f"import {lib}: {type(e).__name__}: {e}"
        info["source"] = f"{lib}@{commit}"
        info["path"] = found
        LIBS[lib] = info


class LogProb(nn.Module):
    """What a user writes to export a library flow's log-density."""

    def __init__(self, flow, call="log_prob"):
        super().__init__()
        self.flow = flow
        self.call = call

    def forward(self, x):
        if self.call == "zuko":
            return self.flow().log_prob(x)
        return self.flow.log_prob(x)


def perturb(model, std=0.1):
    # Stands in for training: the libraries initialise their flows at (or
    # near) the identity, which would make a weak fixture.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(std * torch.randn_like(p))
    return model


def nflows_realnvp():
    from nflows.flows import SimpleRealNVP
    return LogProb(perturb(SimpleRealNVP(features=4, hidden_features=8, num_layers=2, num_blocks_per_layer=1)))


def nflows_maf():
    from nflows.flows import MaskedAutoregressiveFlow
    return LogProb(perturb(MaskedAutoregressiveFlow(features=4, hidden_features=8, num_layers=2,
                                                    num_blocks_per_layer=1)))


def nflows_nsf_ar():
    from nflows.distributions import StandardNormal
    from nflows.flows import Flow
    from nflows.transforms import (CompositeTransform, MaskedPiecewiseRationalQuadraticAutoregressiveTransform,
                                   ReversePermutation)
    layers = [MaskedPiecewiseRationalQuadraticAutoregressiveTransform(
        features=4, hidden_features=8, num_bins=4, tails="linear", tail_bound=3.0), ReversePermutation(4)]
    return LogProb(perturb(Flow(CompositeTransform(layers), StandardNormal([4]))))


def normflows_realnvp():
    import normflows as nf
    flows = []
    for _ in range(2):
        flows += [nf.flows.AffineCouplingBlock(nf.nets.MLP([2, 8, 8, 4], init_zeros=True)),
                  nf.flows.Permute(4, mode="swap")]
    return LogProb(perturb(nf.NormalizingFlow(nf.distributions.base.DiagGaussian(4), flows)))


def normflows_maf():
    import normflows as nf
    flows = []
    for _ in range(2):
        flows += [nf.flows.MaskedAffineAutoregressive(4, 8, num_blocks=1), nf.flows.LULinearPermute(4)]
    return LogProb(perturb(nf.NormalizingFlow(nf.distributions.DiagGaussian(4), flows)))


def normflows_nsf_ar():
    import normflows as nf
    flows = [nf.flows.AutoregressiveRationalQuadraticSpline(4, 1, 8, num_bins=4), nf.flows.LULinearPermute(4)]
    return LogProb(perturb(nf.NormalizingFlow(nf.distributions.DiagGaussian(4, trainable=False), flows)))


def zuko_flow(kind):
    def build():
        import zuko
        cls = {"maf": zuko.flows.MAF, "realnvp": zuko.flows.RealNVP, "nsf": zuko.flows.NSF}[kind]
        kw = {"bins": 4} if kind == "nsf" else {}
        return LogProb(perturb(cls(4, transforms=2, hidden_features=[8, 8], **kw)), call="zuko")
    return build


# torch 1.13 has no ONNX symbolics for aten::unflatten and aten::broadcast_to
# (zuko uses both); the user's usual fix is a custom symbolic.
def _sym_unflatten(g, x, dim, sizes):
    from torch.onnx import symbolic_helper as sh
    dim, sizes = sh._get_const(dim, "i", "dim"), sh._get_const(sizes, "is", "sizes")
    rank = sh._get_tensor_rank(x)
    if dim < 0:
        dim += rank
    shape = g.op("Shape", x)
    parts = []
    if dim > 0:
        parts.append(sh._slice_helper(g, shape, axes=[0], starts=[0], ends=[dim]))
    parts.append(g.op("Constant", value_t=torch.tensor(sizes, dtype=torch.int64)))
    if dim + 1 < rank:
        parts.append(sh._slice_helper(g, shape, axes=[0], starts=[dim + 1], ends=[rank]))
    return g.op("Reshape", x, g.op("Concat", *parts, axis_i=0) if len(parts) > 1 else parts[0])


def _sym_broadcast_to(g, x, size):
    from torch.onnx import symbolic_opset9 as o9
    return o9.expand(g, x, size, None)


class custom_symbolics:
    """Registers the two symbolics for the duration of one export."""

    def __enter__(self):
        torch.onnx.register_custom_op_symbolic("aten::unflatten", _sym_unflatten, 9)
        torch.onnx.register_custom_op_symbolic("aten::broadcast_to", _sym_broadcast_to, 9)

    def __exit__(self, *a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for op in ["aten::unflatten", "aten::broadcast_to"]:
                for v in range(9, 18):
                    try:
                        torch.onnx.unregister_custom_op_symbolic(op, v)
                    except Exception:
                        pass


# ---------------------------------------------------------------------------
# Inputs.
# ---------------------------------------------------------------------------


def images(shape):
    def gen(n, g):
        return 2 * torch.rand((n,) + shape, generator=g) - 1
    return gen


def gauss(shape, scale=1.5):
    def gen(n, g):
        return scale * torch.randn((n,) + shape, generator=g)
    return gen


def flow_inputs(d):
    # Standard normal points with two beyond a spline's tail bound of 3, so
    # both the spline and its linear tails are on the path.
    def gen(n, g):
        x = torch.randn(n, d, generator=g)
        x[0, 0] = 3.5
        x[1 % n, d - 1] = -3.2
        return x
    return gen


# ---------------------------------------------------------------------------
# The zoo.
# ---------------------------------------------------------------------------


def case(name, family, build, input_shape, xgen, output="energy", output_name=None, opsets=(DEFAULT_OPSET,),
         dynamic=True, source="own", notes="", lib=None, symbolics=False, batch_pinned=False, fixture_batch=None):
    return dict(name=name, family=family, build=build, input_shape=tuple(input_shape), xgen=xgen, output=output,
                output_name=output_name or ("log_prob" if output == "log_prob" else "energy"), opsets=opsets,
                dynamic=dynamic, source=source, notes=notes, lib=lib, symbolics=symbolics, batch_pinned=batch_pinned,
                fixture_batch=fixture_batch)


def set_norm_stats(model):
    """Non-trivial running statistics and affine parameters, as after training."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.normal_(0, 0.3)
                m.running_var.uniform_(0.5, 2.0)
            if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.GroupNorm, nn.LayerNorm,
                              nn.modules.instancenorm._InstanceNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.normal_(1.0, 0.2)
                if getattr(m, "bias", None) is not None:
                    m.bias.normal_(0.0, 0.2)
    return model


def with_stats(f):
    return lambda: set_norm_stats(f())


IMG28, IMG32 = (1, 28, 28), (3, 32, 32)
CASES = [
    # 1. IGEBM-style conv EBMs on MNIST; 8. opsets.
    case("igebm_leaky", "igebm", lambda: IGEBM(4, "leaky"), IMG28, images(IMG28), opsets=(14, 9, 11, 13, 17),
         notes="Conv2d + LeakyReLU(0.2) + AvgPool2d, Linear after x.view(x.size(0), -1); output (B, 1)"),
    case("igebm_flat", "igebm", lambda: IGEBMFlat(4), (784,), images((784,)),
         notes="flat (B, 784) input, x.view(-1, 1, 28, 28) in forward; IGEBM's Swish module x * torch.sigmoid(x), "
               "F.avg_pool2d, .squeeze(-1)"),
    # 2. JEM.
    case("jem_wrn_nonorm", "jem", lambda: JEM(norm=None, pool="avg_pool2d"), IMG32, images(IMG32),
         notes="JEM wide_resnet.py, norm=None (JEM's default), F.avg_pool2d(out, 8), energy = -logsumexp(logits, 1)"),
    case("jem_wrn_bn", "jem", with_stats(lambda: JEM(norm="batch", pool="adaptive")), (3, 16, 16),
         images((3, 16, 16)),
         notes="pre-activation BatchNorm2d (eval, non-trivial running stats; the exporter fuses only bn2, which "
               "follows conv1 through the identity dropout, into onnx::Conv_*), AdaptiveAvgPool2d(1) + torch.flatten; "
               "3x16x16 input to keep the zoo small"),
    case("jem_wrn_mean", "jem", lambda: JEM(norm=None, pool="mean", dropout_rate=0.3), (3, 16, 16),
         images((3, 16, 16)), notes="spatial mean out.mean(dim=(2, 3)), Dropout(0.3) in eval; 3x16x16 input to "
                                    "keep the zoo small"),
    # 3. Short-run MCMC.
    case("shortrun_squeeze", "shortrun", lambda: VanillaNet(n_f=2, leak=0.2, flatten="squeeze"), IMG32,
         images(IMG32), notes="Nijkamp et al. VanillaNet (n_f=2): strided convs, final 4x4 conv to 1x1, "
                              ".squeeze() with no dim; ebm-anatomy's convention E(x) = net(x)"),
    case("shortrun_view", "shortrun", lambda: VanillaNet(n_c=1, n_f=2, leak=0.05, flatten="view"), (1, 32, 32),
         images((1, 32, 32)), notes="as shortrun_squeeze on MNIST padded to 1x32x32 (ebm-anatomy's MNIST setting), "
                                    ".view(-1), LeakyReLU(0.05)"),
    # 4. MLPs.
    case("mlp_layernorm", "mlp", with_stats(MLPLayerNorm), (8,), gauss((8,)), opsets=(14, 17),
         notes="nn.LayerNorm: decomposed below opset 17, LayerNormalization at 17; .squeeze(-1)"),
    case("mlp_batchnorm", "mlp", with_stats(mlp_batchnorm), (8,), gauss((8,)),
         notes="Linear + BatchNorm1d (eval, non-trivial running stats) + Dropout(0.1) eval; output (B, 1)"),
    case("mlp_batchnorm_fresh", "mlp", mlp_batchnorm, (8,), gauss((8,)),
         notes="BatchNorm1d never trained (running stats and affine at their defaults): the exporter deduplicates "
               "equal initializers, so running_var/running_mean become Identity(weight)/Identity(bias); PyTorch's "
               "parameter gradients do not flow through the running statistics"),
    case("mlp_gelu", "mlp", lambda: MLPAct(nn.GELU()), (8,), gauss((8,)), notes="exact GELU (Erf)"),
    case("mlp_gelu_tanh", "mlp", lambda: MLPAct(nn.GELU(approximate="tanh")), (8,), gauss((8,)),
         notes="GELU(approximate='tanh') with scalar constants"),
    case("mlp_softplus_temp", "mlp", SoftplusTempEBM, (8,), gauss((8,)), opsets=(14, 9, 11, 13, 17),
         notes="Softplus(beta=2), energy / T with a Python float T=0.7, + 0.5 * (x ** 2).sum(1), .squeeze(-1)"),
    case("mlp_image_view", "mlp", ImageMLP, (1, 8, 8), images((1, 8, 8)),
         notes="x.view(x.size(0), -1) on (B, 1, 8, 8); ELU(alpha=0.5), SELU, + 0.01 * x.pow(2).sum(dim=1)"),
    case("mlp_hardswish_mish", "mlp", lambda: HardswishMish(), (8,), gauss((8,)), notes="Hardswish, Mish"),
    case("mlp_clamp_where", "mlp", ClampWhere, (8,), gauss((8,)),
         notes="torch.clamp(min, max), torch.where(h > 0, h, 0.1 * h), tanh, abs"),
    case("mlp_residual", "mlp", ResidualMLP, (2, 4), gauss((2, 4)),
         notes="nn.Flatten on (B, 2, 4), residual h = h + block(h), F.leaky_relu, + 0.1 * h.norm(dim=1)"),
    case("mlp_deepsets", "mlp", DeepSetsEBM, (6, 2), gauss((6, 2), 1.0),
         notes="set input (B, 6, 2): Linear on 3-D input (MatMul + Add, weights transposed and renamed by "
               "constant folding), sum and mean over dim 1"),
    case("mlp_gmm", "mlp", GMMEnergy, (4,), gauss((4,)),
         notes="raw nn.Parameters, x[:, None, :] - mu[None], exp, log_softmax, -logsumexp over components"),
    case("mlp_quadform", "mlp", QuadraticFormEBM, (4,), gauss((4,)),
         notes="x @ A, x @ b (1-D), torch.matmul(x, W), raw parameters"),
    # 5. Spectral norm.
    case("sn_mlp_hooked", "spectral", sn_mlp, (8,), gauss((8,)),
         notes="torch.nn.utils.spectral_norm left hooked (eval): weight = weight_orig / (u . (W v)); weight_u and "
               "weight_v are buffers"),
    case("sn_mlp_removed", "spectral", lambda: remove_sn(sn_mlp()), (8,), gauss((8,)),
         notes="the same after remove_spectral_norm: plain Gemm with the normalised weight"),
    case("sn_conv_hooked", "spectral", sn_conv, (1, 16, 16), images((1, 16, 16)),
         notes="spectral_norm on Conv2d (weight reshaped to a matrix) and Linear, hooked, eval"),
    case("sn_conv_removed", "spectral", lambda: remove_sn(sn_conv()), (1, 16, 16), images((1, 16, 16)),
         notes="the same after remove_spectral_norm"),
    # 6. Convolutional odds and ends.
    case("conv_groupnorm", "conv", with_stats(GroupNormConv), (3, 12, 12), images((3, 12, 12)),
         notes="GroupNorm(4, 8) and GroupNorm(2, 8), F.silu, h.mean([2, 3])"),
    case("conv_instancenorm", "conv", with_stats(InstanceNormConv), (3, 12, 12), images((3, 12, 12)),
         notes="InstanceNorm2d(affine=True) and InstanceNorm2d (no affine), AdaptiveAvgPool2d(1)"),
    case("conv_depthwise_reflect", "conv", DepthwiseReflect, (3, 12, 12), images((3, 12, 12)),
         notes="padding_mode='reflect', depthwise dilated conv (groups=8, dilation=2), 1x1 conv, ReplicationPad2d, "
               "MaxPool2d(2), F.max_pool2d(3, 2, padding=1), sum over (2, 3)"),
    case("conv1d", "conv", Conv1dEBM, (2, 16), gauss((2, 16), 1.0),
         notes="Conv1d on (B, C, L), strided Conv1d, AvgPool1d, mean over L"),
    case("conv_autoencoder", "conv", ConvAE, (1, 16, 16), images((1, 16, 16)),
         notes="energy ((x - dec(enc(x))) ** 2).view(B, -1).sum(1), ConvTranspose2d with output_padding"),
    case("conv_autoencoder_upsample", "conv", lambda: ConvAE(upsample=True), (1, 16, 16), images((1, 16, 16)),
         notes="decoder nn.Upsample(scale_factor=2, nearest) + Conv2d (Resize); ((recon - x) ** 2).sum(dim=(1, 2, 3))"),
    case("conv_autoencoder_mseloss", "conv", lambda: ConvAE(upsample=True, loss="mse_loss"), (1, 16, 16),
         images((1, 16, 16)), notes="as conv_autoencoder_upsample with F.mse_loss(recon, x, reduction='none')"
                                    ".sum(dim=(1, 2, 3)), which torch 1.13 cannot export"),
    case("resnet_convbn", "conv", with_stats(ResNetConvBN), (3, 12, 12), images((3, 12, 12)),
         notes="torchvision-style Conv -> BatchNorm2d -> ReLU: the exporter fuses each BN into its conv "
               "(fused weights renamed onnx::Conv_*), nn.ReLU(inplace=True), F.adaptive_avg_pool2d"),
    # 7a. Own flows.
    case("own_realnvp", "flow_own", lambda: RealNVP(4, split="slice"), (4,), gauss((4,), 1.2), output="log_prob",
         notes="affine couplings x[:, :d]/x[:, d:], .chunk(2, dim=1), torch.cat, permutation by an index buffer "
               "(Gather), standard normal base -0.5*(z**2).sum(1) - 0.5*d*log(2*pi), x.new_zeros(x.shape[0])"),
    case("own_realnvp_energy", "flow_own", lambda: RealNVP(4, split="chunk", actnorm=True, perm="flip", energy=True)
         .initialize(torch.randn(64, 4) * torch.tensor([1.0, 2.0, 0.5, 1.5]) + 0.3), (4,), gauss((4,), 1.2),
         notes="energy = -log_prob(x): torch.chunk split, ActNorm (parameters of shape (1, d), Glow's "
               "data-dependent init, ones_like), torch.flip permutation"),
    case("own_maf", "flow_own", MAF, (4,), gauss((4,), 1.2), output="log_prob",
         notes="hand-written MADE with masks as buffers: F.linear(x, weight * mask, bias); constant folding "
               "multiplies out the masks, so the weights are renamed (no pgrad)"),
    # 9. Batch pinning.
    case("own_realnvp_zeroslen", "flow_own", lambda: RealNVP(4, logdet="zeros_len"), (4,), gauss((4,), 1.2),
         output="log_prob", dynamic=False,
         notes="log_det = torch.zeros(len(x)) (normflows' idiom) is traced to a constant of the export batch; "
               "exported without dynamic_axes"),
    case("own_realnvp_zeroslen_dyn", "flow_own", lambda: RealNVP(4, logdet="zeros_len"), (4,), gauss((4,), 1.2),
         output="log_prob", batch_pinned=True, fixture_batch=EXPORT_BATCH,
         notes="the same exported WITH dynamic_axes on the batch, as a user would: the graph declares a symbolic "
               "batch but holds a constant of the export batch (3), so it only runs at batch 3; fixture at batch 3"),
    # 7b. Library flows.
    case("nflows_realnvp", "flow_lib", nflows_realnvp, (4,), flow_inputs(4), output="log_prob", lib="nflows",
         notes="nflows.flows.SimpleRealNVP(4, 8, num_layers=2, num_blocks_per_layer=1); params perturbed N(0, 0.1^2)"),
    case("nflows_maf", "flow_lib", nflows_maf, (4,), flow_inputs(4), output="log_prob", lib="nflows",
         notes="nflows.flows.MaskedAutoregressiveFlow(4, 8, 2, 1); params perturbed N(0, 0.1^2)"),
    case("nflows_nsf_ar", "flow_lib", nflows_nsf_ar, (4,), flow_inputs(4), output="log_prob", lib="nflows",
         notes="MaskedPiecewiseRationalQuadraticAutoregressiveTransform(num_bins=4, tails='linear', tail_bound=3) "
               "+ ReversePermutation (one layer, to keep the file small), StandardNormal; "
               "params perturbed N(0, 0.1^2)"),
    case("normflows_realnvp", "flow_lib", normflows_realnvp, (4,), flow_inputs(4), output="log_prob",
         lib="normflows", dynamic=False,
         notes="normflows README RealNVP: AffineCouplingBlock(MLP([2, 8, 8, 4], init_zeros=True)) + Permute(swap), "
               "DiagGaussian; NormalizingFlow.log_prob's torch.zeros(len(x)) pins the batch, so exported without "
               "dynamic_axes; params perturbed N(0, 0.1^2)"),
    case("normflows_realnvp_dyn", "flow_lib", normflows_realnvp, (4,), flow_inputs(4), output="log_prob",
         lib="normflows", batch_pinned=True, fixture_batch=EXPORT_BATCH,
         notes="as normflows_realnvp but exported with dynamic_axes as a user would: batch declared symbolic, "
               "yet torch.zeros(len(x)) is a constant of the export batch (3); fixture at batch 3"),
    case("normflows_maf", "flow_lib", normflows_maf, (4,), flow_inputs(4), output="log_prob", lib="normflows",
         dynamic=False, notes="MaskedAffineAutoregressive(4, 8, num_blocks=1) + LULinearPermute(4), DiagGaussian; "
                              "fixed batch (torch.zeros(len(x))); params perturbed N(0, 0.1^2)"),
    case("normflows_nsf_ar", "flow_lib", normflows_nsf_ar, (4,), flow_inputs(4), output="log_prob",
         lib="normflows", dynamic=False,
         notes="AutoregressiveRationalQuadraticSpline(4, 1, 8, num_bins=4) + LULinearPermute(4) (the paper's "
               "example, one layer), DiagGaussian(trainable=False); fixed batch; params perturbed N(0, 0.1^2)"),
    case("zuko_maf_plain", "flow_lib", zuko_flow("maf"), (4,), flow_inputs(4), output="log_prob", lib="zuko",
         opsets=(14, 16, 17), notes="zuko.flows.MAF exported as is"),
    case("zuko_maf", "flow_lib", zuko_flow("maf"), (4,), flow_inputs(4), output="log_prob", lib="zuko",
         symbolics=True, notes="zuko.flows.MAF(4, transforms=2, hidden_features=[8, 8]), log_prob of flow(); "
                               "exported with custom symbolics for aten::unflatten (Reshape) and aten::broadcast_to "
                               "(Expand), which torch 1.13 lacks; params perturbed N(0, 0.1^2)"),
    case("zuko_nsf", "flow_lib", zuko_flow("nsf"), (4,), flow_inputs(4), output="log_prob", lib="zuko",
         symbolics=True, notes="zuko.flows.NSF(4, bins=4, transforms=2, hidden_features=[8, 8]) (masks by "
                               "torch.where, no boolean indexing); custom symbolics as zuko_maf"),
    case("zuko_realnvp", "flow_lib", zuko_flow("realnvp"), (4,), flow_inputs(4), output="log_prob", lib="zuko",
         symbolics=True, opsets=(14, 16, 17),
         notes="zuko.flows.RealNVP(4, transforms=2, hidden_features=[8, 8]); custom symbolics as zuko_maf. "
               "zuko.transforms.CouplingTransform.merge writes x[..., idx] = x_a: torch 1.13's index_put symbolic "
               "(symbolic_opset11.index_put) asks the Ellipsis index for a scalar type and hits an internal assert"),
]

DATA_DEPENDENT_OPS = {"NonZero", "Compress", "Unique", "NonMaxSuppression"}


def graph_ops(graph, counter):
    for n in graph.node:
        counter[n.op_type] += 1
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                graph_ops(a.g, counter)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    graph_ops(g, counter)
    return counter


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7fffffff


def build_model(c):
    torch.manual_seed(seed_of(c["name"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = c["build"]()
    return m.float().eval()


def short_error(e):
    s = " ".join(f"{type(e).__name__}: {e}".split())[:400]
    tb = e.__traceback__
    where = ""
    while tb is not None:  # innermost frame in torch
        f = tb.tb_frame.f_code.co_filename
        if "/torch/" in f:
            where = f" [at {f[f.index('/torch/') + 1:]}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}]"
        tb = tb.tb_next
    return s + where


def export(model, x, opset, c):
    kw = dict(input_names=["x"], output_names=[c["output_name"]], opset_version=opset)
    if c["dynamic"]:
        kw["dynamic_axes"] = {"x": {0: "batch"}, c["output_name"]: {0: "batch"}}
    buf = io.BytesIO()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if c["symbolics"]:
            with custom_symbolics():
                torch.onnx.export(model, x, buf, **kw)
        else:
            torch.onnx.export(model, x, buf, **kw)
    msgs = []
    for wi in w:
        s = f"{wi.category.__name__}: {str(wi.message).splitlines()[0][:160]}"
        if s not in msgs:
            msgs.append(s)
    return buf.getvalue(), msgs


def float_inits(proto):
    from onnx import numpy_helper
    return {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer
            if t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16)}


def partially_folded(base_model, dtype, x_export, opset, c, proto, candidates):
    """Parameters that keep their initializer but also feed an initializer
    made by constant folding (exp(2 * log_sigma) next to an unfolded use of
    log_sigma): the graph's gradient with respect to such an initializer is
    not PyTorch's. Found by exporting again with one parameter changed and
    looking for folded initializers that change with it."""
    own = {n for n, _ in base_model.named_parameters()} | {n for n, _ in base_model.named_buffers()}
    base = float_inits(proto)
    derived = [n for n in base if n not in own]
    if not derived:
        return []
    found = []
    for name in candidates:
        m2 = copy.deepcopy(base_model).to(dtype).eval()
        with torch.no_grad():
            p = dict(m2.named_parameters())[name]
            p.mul_(1.25).add_(0.0625)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            blob, _ = export(m2, x_export, opset, c)
        other = float_inits(onnx.load_from_string(blob))
        if any(d not in other or not np.array_equal(base[d], other[d]) for d in derived):
            found.append(name)
    return found


def reference(model, x, shapes):
    """Output, d(sum)/dx and d(sum)/dP for the parameters P named in shapes
    (with those shapes)."""
    xg = x.clone().requires_grad_(True)
    params = [(n, p) for n, p in model.named_parameters() if n in shapes and tuple(shapes[n]) == tuple(p.shape)]
    out = model(xg)
    grads = torch.autograd.grad(out.sum(), [xg] + [p for _, p in params], allow_unused=True)
    pg = {}
    for (n, p), g in zip(params, grads[1:]):
        pg[n] = (torch.zeros_like(p) if g is None else g).detach().to(torch.float64).numpy()
    return out.detach(), grads[0].detach().to(torch.float64).numpy(), pg


def rel_inf(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    den = np.max(np.abs(b)) if b.size else 0.0
    num = np.max(np.abs(a - b)) if b.size else 0.0
    return float(num / den) if den > 0 else float(num)


def run_case(c, out_dir, manifest, rows):
    lib_error = ""
    source = c["source"]
    if c["lib"]:
        info = LIBS.get(c["lib"], {"source": c["lib"] + "@unknown", "error": "no --flowlibs given"})
        source = info["source"]
        lib_error = info["error"]
    for opset in c["opsets"]:
        suffix = "" if opset == DEFAULT_OPSET else f"_opset{opset}"
        refs = {}
        for tag, dtype in [("f64", torch.float64), ("f32", torch.float32)]:
            name = f"{c['name']}{suffix}_{tag}"
            entry = dict(name=name, family=c["family"], dtype=tag, opset=opset, input_shape=list(c["input_shape"]),
                         dynamic_batch=c["dynamic"], export_batch=EXPORT_BATCH, output=c["output"],
                         output_name=c["output_name"], ops={}, data_dependent_shape=False, source=source,
                         notes=c["notes"], export_error="", checker_error="", batch_pinned=c["batch_pinned"] or
                         not c["dynamic"], fixture_batch=0, output_shape=[], n_params=0, pgrads=[],
                         renamed_params=[], identity_initializers=[], identity_pgrads=[],
                         partially_folded_params=[], warnings=[], bytes_onnx=0,
                         bytes_npz=0)
            manifest.append(entry)
            if lib_error:
                entry["export_error"] = lib_error
                rows.append((name, "EXPORT FAILED", lib_error[:60], 0))
                continue
            try:
                base = build_model(c)
            except Exception as e:
                entry["export_error"] = "building the model: " + short_error(e)
                rows.append((name, "BUILD FAILED", entry["export_error"][:60], 0))
                continue
            model = copy.deepcopy(base).to(dtype).eval()
            g = torch.Generator().manual_seed(seed_of(c["name"]) + 1)
            x_export = c["xgen"](EXPORT_BATCH, g).to(torch.float32)
            nfix = c["fixture_batch"] or (TEST_BATCH if c["dynamic"] else EXPORT_BATCH)
            x32 = c["xgen"](nfix, g).to(torch.float32)  # same values in both dtypes
            x = x32.to(dtype)
            try:
                blob, msgs = export(model, x_export.to(dtype), opset, c)
            except Exception as e:
                err = short_error(e)
                entry["export_error"] = err
                rows.append((name, "EXPORT FAILED", err[:60], 0))
                continue
            entry["warnings"] = msgs
            proto = onnx.load_from_string(blob)
            try:
                onnx.checker.check_model(proto, full_check=True)
            except Exception as e:
                entry["checker_error"] = short_error(e)
            ops = graph_ops(proto.graph, collections.Counter())
            entry["ops"] = dict(sorted(ops.items()))
            entry["data_dependent_shape"] = bool(DATA_DEPENDENT_OPS & set(ops))
            init_shapes = {i.name: list(i.dims) for i in proto.graph.initializer}
            pnames = [n for n, _ in model.named_parameters()]
            entry["n_params"] = len(pnames)
            entry["renamed_params"] = [n for n in pnames if n not in init_shapes]  # folded, fused or deduplicated
            idn = [n for n in proto.graph.node if n.op_type == "Identity" and n.input[0] in init_shapes]
            entry["identity_initializers"] = [f"{n.output[0]} = Identity({n.input[0]})" for n in idn]
            # The exporter replaces initializers equal to another by Identity
            # of it; where the Identity's output keeps a parameter's name,
            # PyTorch's gradient for that parameter is stored as
            # identity_pgrad_NAME (not pgrad_: it is no initializer).
            dedup = {n.output[0]: init_shapes[n.input[0]] for n in idn if n.output[0] not in init_shapes}
            y, gx, pg = reference(model, x, {**init_shapes, **dedup})
            dg = {n: pg.pop(n) for n in list(pg) if n in dedup}
            entry["identity_pgrads"] = sorted(dg)
            # PyTorch's gradient for a parameter partly folded into other
            # initializers is kept as folded_pgrad_NAME, not pgrad_NAME.
            folded = partially_folded(base, dtype, x_export.to(dtype), opset, c, proto, sorted(pg))
            fg = {n: pg.pop(n) for n in folded}
            entry["partially_folded_params"] = folded
            entry["output_shape"] = list(y.shape)
            entry["fixture_batch"] = nfix
            energy = y.to(torch.float64).numpy()
            if energy.ndim == 2 and energy.shape[1] == 1:
                energy = energy[:, 0]
            refs[tag] = energy
            if tag == "f32" and "f64" in refs:
                entry["f32_vs_f64_rel"] = rel_inf(energy, refs["f64"])
            entry["pgrads"] = sorted(pg)
            arrays = {"x": x.numpy(), "energy": energy, "grad": gx}
            arrays.update({"pgrad_" + n: v for n, v in pg.items()})
            arrays.update({"identity_pgrad_" + n: v for n, v in dg.items()})
            arrays.update({"folded_pgrad_" + n: v for n, v in fg.items()})
            with open(os.path.join(out_dir, name + ".onnx"), "wb") as f:
                f.write(blob)
            np.savez(os.path.join(out_dir, name + ".npz"), **arrays)
            entry["bytes_onnx"] = len(blob)
            entry["bytes_npz"] = os.path.getsize(os.path.join(out_dir, name + ".npz"))
            opsum = ",".join(sorted(ops))
            rows.append((name, f"{sum(ops.values())} nodes", opsum, entry["bytes_onnx"] + entry["bytes_npz"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--flowlibs", help="folder with the source trees of nflows, normflows, zuko")
    ap.add_argument("--only", help="comma-separated case names (for debugging)")
    args = ap.parse_args()
    t0 = time.time()
    torch.set_num_threads(1)
    os.makedirs(args.outdir, exist_ok=True)
    for f in os.listdir(args.outdir):
        if f.endswith((".onnx", ".npz")) or f == "manifest.json":
            os.remove(os.path.join(args.outdir, f))
    if args.flowlibs:
        setup_flowlibs(args.flowlibs)
    manifest, rows = [], []
    only = set(args.only.split(",")) if args.only else None
    for c in CASES:
        if only and c["name"] not in only:
            continue
        run_case(c, args.outdir, manifest, rows)
    meta = {"generator": "io/onnx/crosscheck/make_zoo.py", "torch": torch.__version__, "onnx": onnx.__version__,
            "libraries": {k: v["source"] for k, v in LIBS.items()}}
    with open(os.path.join(args.outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = 0
    w = max(len(r[0]) for r in rows)
    for name, nodes, opsum, size in rows:
        total += size
        print(f"{name:<{w}}  {size / 1024:7.1f} KiB  {nodes:>10}  {opsum}")
    ok = sum(1 for e in manifest if not e["export_error"])
    print(f"{ok} of {len(manifest)} exports written, {total / 1e6:.2f} MB (+ manifest), "
          f"{time.time() - t0:.0f} s; {meta}")
    bad = [e["name"] + ": " + e["checker_error"] for e in manifest if e["checker_error"]]
    if bad:
        print("onnx.checker failures:\n  " + "\n  ".join(bad))


if __name__ == "__main__":
    main()

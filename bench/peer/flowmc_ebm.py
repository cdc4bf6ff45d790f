#!/usr/bin/python3
"""PyTorch peer of flowebm's flowMC-EBM training iteration, for timing.

It implements, with PyTorch 1.13 on the CPU, the same iteration as
algorithms.Trainer.Step with the flowmc algorithm:

  * the tilted EBM log p(x) = -E(x) + log rho(x), E an MLP
    (Linear/LeakyReLU, Sequential layout), rho = N(0, sigma^2 I);
  * the RealNVP of layers.RealNVP (residual affine couplings of
    h2o64/flow_mcmc: s = tanh(S(x_c)) m dt, t = T(x_c) m dt,
    y = (x + t) exp(s)), S and T ReLU MLPs;
  * chains started from a persistent bank, moved by flowMC: cycles of
    global i-SIR moves (N particles proposed by the flow) and local MALA
    moves whose step size adapts to a target acceptance (x1.05 or /1.05
    outside +-0.03), log-densities and gradients cached between moves as
    flowebm caches them;
  * negatives "last" or "all"; an Adam step of the EBM on
    mean E(x+) - mean E(x-); an Adam step of the flow by maximum likelihood
    on the negatives; the moving average of the EBM's parameters; the
    divergence guard (energies of the positives after the update).

The configuration (architectures, sampler, batch, bank, learning rates) and
the training data come from the files flowebm's bench command writes, so
the two sides run the same iteration. The process reads commands on stdin,
one per line, and answers one JSON line per command:

  iter K       K training iterations           -> {"seconds": t}
  mala K       K MALA steps on the MALA chains  -> {"seconds": t}
  isir K       K i-SIR steps on the i-SIR chains -> {"seconds": t}
  isirwide K   K i-SIR steps with wide_particles particles on fresh i-SIR chains -> {"seconds": t}
  gemm N K     K products of two N x N matrices -> {"seconds": t}
  stats        the bank's fraction with a positive coordinate sum, MALA's
               step size, and the mean global acceptance so far
  quit

Usage: flowmc_ebm.py SPEC.json DATA.npy DTYPE THREADS
"""

import json
import math
import sys
import time

import numpy as np
import torch
from torch import nn


class MLP(nn.Module):
    """Linear layers with an activation between them (none after the last)."""

    def __init__(self, sizes, act):
        super().__init__()
        self.lin = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.act = act

    def forward(self, x):
        for i, l in enumerate(self.lin):
            x = l(x)
            if i < len(self.lin) - 1:
                x = self.act(x)
        return x


class Coupling(nn.Module):
    def __init__(self, mask, hidden, dt, init, scale):
        super().__init__()
        d = len(mask)
        sizes = [d] + hidden + [d]
        self.s, self.t = MLP(sizes, torch.relu), MLP(sizes, torch.relu)
        m = torch.tensor(mask)
        self.register_buffer("keep", 1 - m)
        self.register_buffer("mdt", m * dt)
        for net in (self.s, self.t):
            for i, l in enumerate(net.lin):
                last = i == len(net.lin) - 1
                if init == "small" or last:
                    nn.init.normal_(l.weight, std=scale / math.sqrt(l.in_features))
                    nn.init.zeros_(l.bias)

    def shift_scale(self, xc):
        return torch.tanh(self.s(xc)) * self.mdt, self.t(xc) * self.mdt

    def forward(self, x):
        s, t = self.shift_scale(x * self.keep)
        return (x + t) * torch.exp(s), s.sum(1)

    def inverse(self, y):
        s, t = self.shift_scale(y * self.keep)
        return y * torch.exp(-s) - t, -s.sum(1)


class RealNVP(nn.Module):
    def __init__(self, spec, sigma):
        super().__init__()
        self.c = nn.ModuleList(
            Coupling(m, spec["flow_hidden"], spec["flow_dt"], spec["flow_init"], 1e-6) for m in spec["flow_masks"])
        self.sigma, self.d = sigma, spec["dim"]

    def log_rho(self, z):
        return -0.5 * (z * z).sum(1) / self.sigma ** 2 - self.d * (math.log(self.sigma) + 0.5 * math.log(2 * math.pi))

    def sample(self, n):
        z = self.sigma * torch.randn(n, self.d)
        x, ld = z, 0
        for c in self.c:
            x, l = c(x)
            ld = ld + l
        return x, self.log_rho(z) - ld

    def log_prob(self, x):
        ld = 0
        for c in reversed(self.c):
            x, l = c.inverse(x)
            ld = ld + l
        return self.log_rho(x) + ld


class EBM(nn.Module):
    def __init__(self, spec, sigma):
        super().__init__()
        slope = spec["ebm_slope"]
        self.net = MLP(spec["ebm_sizes"], lambda h: nn.functional.leaky_relu(h, slope))
        nn.init.zeros_(self.net.lin[-1].weight)
        nn.init.zeros_(self.net.lin[-1].bias)
        self.sigma, self.d = sigma, spec["dim"]

    def energy(self, x):
        return self.net(x).squeeze(1)

    def log_p(self, x):
        return -self.energy(x) - 0.5 * (x * x).sum(1) / self.sigma ** 2

    def log_p_grad(self, x):
        x = x.detach().requires_grad_(True)
        lp = self.log_p(x)
        (g,) = torch.autograd.grad(lp.sum(), x)
        return lp.detach(), g


class Chains:
    """Chain states with the caches flowebm keeps (log p, its gradient, log q)."""

    def __init__(self, x):
        self.x, self.lp, self.g, self.lq = x, None, None, None


class Sampler:
    def __init__(self, spec, ebm, flow):
        self.ebm, self.flow = ebm, flow
        self.eta = spec["step_size"]
        self.target = spec["target_accept"]
        self.n = spec["particles"]
        self.moves, self.moved = 0, 0.0

    def isir(self, c):
        with torch.no_grad():
            if c.lp is None:
                c.lp = self.ebm.log_p(c.x)
            if c.lq is None:
                c.lq = self.flow.log_prob(c.x)
            m, n = c.x.shape[0], self.n
            y, lqy = self.flow.sample(m * (n - 1))
            lpy = self.ebm.log_p(y)
            logw = torch.cat([(c.lp - c.lq)[:, None], (lpy - lqy).view(m, n - 1)], 1)
            logw = torch.nan_to_num(logw, nan=-math.inf)
            gumbel = -torch.log(-torch.log(torch.rand(m, n)))
            pick = torch.argmax(logw + gumbel, 1)
            moved = pick > 0
            r = torch.arange(m) * (n - 1) + (pick - 1).clamp(min=0)
            self.moves += 1
            self.moved += float(moved.double().mean())
            c.x = torch.where(moved[:, None], y[r], c.x)
            c.lp = torch.where(moved, lpy[r], c.lp)
            c.lq = torch.where(moved, lqy[r], c.lq)
            if bool(moved.any()):
                c.g = None
            return float(moved.double().mean())

    def mala(self, c):
        eta = self.eta
        if c.g is None:
            c.lp, c.g = self.ebm.log_p_grad(c.x)
        y = c.x + eta * c.g + math.sqrt(2 * eta) * torch.randn_like(c.x)
        lpy, gy = self.ebm.log_p_grad(y)
        with torch.no_grad():
            a = c.x - y - eta * gy
            b = y - c.x - eta * c.g
            la = lpy - c.lp - ((a * a).sum(1) - (b * b).sum(1)) / (4 * eta)
            acc = (la >= 0) | (torch.log(torch.rand(la.shape[0], dtype=la.dtype)) < la)
            c.x = torch.where(acc[:, None], y, c.x)
            c.g = torch.where(acc[:, None], gy, c.g)
            c.lp = torch.where(acc, lpy, c.lp)
            c.lq = None
            rate = float(acc.double().mean())
        if rate - self.target > 0.03:
            self.eta *= 1.05
        elif self.target - rate > 0.03:
            self.eta /= 1.05
        return rate


class Trainer:
    def __init__(self, spec, data):
        sigma = spec["sigma"]
        self.spec, self.data = spec, data
        self.ebm, self.flow = EBM(spec, sigma), RealNVP(spec, sigma)
        self.sampler = Sampler(spec, self.ebm, self.flow)
        self.opt_e = torch.optim.Adam(self.ebm.parameters(), lr=spec["ebm_lr"])
        self.opt_f = torch.optim.Adam(self.flow.parameters(), lr=spec["flow_lr"])
        self.avg = [p.detach().clone() for p in self.ebm.parameters()]
        self.window = spec["average_window"]
        with torch.no_grad():
            self.bank, _ = self.flow.sample(spec["persistent"])
        self.order, self.pos = torch.randperm(data.shape[0]), 0

    def next_batch(self):
        b = self.spec["batch"]
        if self.pos + b > len(self.order):
            self.order, self.pos = torch.randperm(self.data.shape[0]), 0
        rows = self.order[self.pos:self.pos + b]
        self.pos += b
        return self.data[rows]

    def step(self):
        s = self.spec
        pos = self.next_batch()
        idx = torch.randperm(s["persistent"])[:s["batch"]]
        c = Chains(self.bank[idx])
        cycle = s["global_steps"] + s["local_steps"]
        moves = s["steps"] * cycle if s["stacked"] else s["steps"]
        per_step = cycle if s["stacked"] else 1
        kept = []
        for k in range(moves):
            if k % cycle < s["global_steps"]:
                self.sampler.isir(c)
            else:
                self.sampler.mala(c)
            if s["negatives"] == "all" and (k + 1) % per_step == 0:
                kept.append(c.x)
        self.bank[idx] = c.x
        neg = torch.cat(kept) if s["negatives"] == "all" else c.x
        # EBM step.
        self.opt_e.zero_grad()
        loss = self.ebm.energy(pos).mean() - self.ebm.energy(neg).mean()
        loss.backward()
        self.opt_e.step()
        with torch.no_grad():
            for a, p in zip(self.avg, self.ebm.parameters()):
                a.add_(p - a, alpha=1 / self.window)
        # Flow step: maximum likelihood on the negatives.
        self.opt_f.zero_grad()
        nll = -self.flow.log_prob(neg).mean()
        nll.backward()
        self.opt_f.step()
        # Divergence guard.
        with torch.no_grad():
            e = self.ebm.energy(pos)
            if not bool(torch.isfinite(e).all()) or float(e.abs().max()) > 1e6 or not math.isfinite(float(loss)):
                raise RuntimeError("diverged")


def main():
    spec_file, data_file, dtype, threads = sys.argv[1:5]
    torch.set_default_dtype(torch.float64 if dtype == "float64" else torch.float32)
    torch.set_num_threads(int(threads))
    torch.manual_seed(1)
    spec = json.load(open(spec_file))
    data = torch.from_numpy(np.load(data_file)).to(torch.get_default_dtype())
    tr = Trainer(spec, data)
    mala_chains = Chains(tr.flow.sample(spec["mala_chains"])[0].detach())
    isir_chains = Chains(tr.flow.sample(spec["isir_chains"])[0].detach())
    isir = Sampler(dict(spec, particles=spec["isir_particles"]), tr.ebm, tr.flow)
    wide_chains = Chains(tr.flow.sample(spec["isir_chains"])[0].detach())
    wide = Sampler(dict(spec, particles=spec["wide_particles"]), tr.ebm, tr.flow)
    print(json.dumps({"ready": True, "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "stats":
            s = tr.sampler
            print(json.dumps({"bank_positive": float((tr.bank.sum(1) > 0).double().mean()), "step_size": s.eta,
                              "global_accept": s.moved / max(1, s.moves)}), flush=True)
            continue
        k = int(cmd[-1])
        t0 = time.perf_counter()
        if cmd[0] == "iter":
            for _ in range(k):
                tr.step()
        elif cmd[0] == "mala":
            for _ in range(k):
                tr.sampler.mala(mala_chains)
        elif cmd[0] == "isir":
            for _ in range(k):
                isir.isir(isir_chains)
        elif cmd[0] == "isirwide":
            for _ in range(k):
                wide.isir(wide_chains)
        elif cmd[0] == "gemm":
            n = int(cmd[1])
            a, b = torch.randn(n, n), torch.randn(n, n)
            t0 = time.perf_counter()
            for _ in range(k):
                torch.mm(a, b)
        else:
            print(json.dumps({"error": "unknown command " + cmd[0]}), flush=True)
            continue
        print(json.dumps({"seconds": time.perf_counter() - t0}), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Independent NumPy reference for flowebm's samplers/diagnostics.

Written from the published definitions (Vehtari, Gelman, Simpson,
Carpenter, Bürkner 2021, "Rank-normalization, folding, and localization:
an improved R-hat", sections 3-4; Margossian, Hoffman, Sountsov,
Riou-Durand, Vehtari, Gelman 2024, "Nested R-hat", Bayesian Analysis) and
the behaviour of Stan's posterior 1.7 (R/convergence.R, R/nested_rhat.R)
and ArviZ 0.21 (arviz/stats/diagnostics.py), not from the Go code.

It generates test chains with fixed seeds, computes every diagnostic and
writes them, with the chains, as JSON (non-finite numbers as the strings
"NaN", "Inf", "-Inf"):

    /usr/bin/python3 reference.py [--out FILE] [--selfcheck]

The default FILE is ../testdata/crosscheck.json. --selfcheck also checks
ess_mean against the closed-form tau of long AR(1) chains, the hand-written
beta quantile against scipy (when installed) and prints where posterior's
and ArviZ's Geyer truncation bounds give different ESS.

Needs only numpy; the beta quantile (for the quantile MCSE) and the normal
quantile (rank normalisation, from the standard library) are computed here.
"""

import argparse
import json
import math
import os
import statistics
import sys

import numpy as np

PROBS = [0.0, 0.05, 0.25, 0.5, 0.9, 0.95, 1.0]
SIGMA_PROBS = (0.1586553, 0.8413447)  # Phi(-1), Phi(1) as both packages write them


# ---------------------------------------------------------------- helpers

def finite_ok(x, min_chains=1, min_draws=4):
    """Shape and finiteness rules: posterior's should_return_NA and ArviZ's
    _not_valid(min_draws=4)."""
    x = np.asarray(x, dtype=float)
    return (x.ndim == 2 and x.shape[0] >= min_chains and x.shape[1] >= min_draws
            and np.all(np.isfinite(x)))


def constant(x):
    return np.max(x) == np.min(x)


def split(x):
    """Split-chains: first and last floor(N/2) draws (odd N drops the middle)."""
    h = x.shape[1] // 2
    return np.concatenate([x[:, :h], x[:, x.shape[1] - h:]], axis=0)


def q7(v, p):
    """Type-7 sample quantile (R's default, NumPy's 'linear')."""
    s = np.sort(np.ravel(v))
    h = (len(s) - 1) * p
    lo = int(math.floor(h))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def biased_acov(chain):
    """Autocovariances (1/N) sum_i (x_i - m)(x_{i+t} - m), t = 0..N-1, via a
    zero-padded FFT (as Geyer 1992 recommends the biased estimate)."""
    n = len(chain)
    d = chain - chain.mean()
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(d, size)
    return np.fft.irfft(f * np.conj(f), size)[:n] / n


# ---------------------------------------------------------------- ESS core

def ess_core(x, bound="flowebm"):
    """Multi-chain ESS of Vehtari et al. (2021), eq. (10)-(11), as computed by
    ArviZ's _ess and posterior's .ess: combined autocorrelations
    rho_t = 1 - (W - mean_m acov_m(t)) / var+, W the mean unbiased chain
    variance, var+ = (N-1)/N W + B/N (B/N the variance of the chain means,
    only for M > 1); Geyer's initial positive sequence over pairs
    (rho_2k, rho_2k+1), read while the previous pair sum is > 0 and, for
    ArviZ, 2k + 2 < N (posterior: 2k + 3 < N); the monotone sequence;
    tau = -1 + 2 * (sum of the kept full pairs) + the last even rho read
    (when > 0, or when its pair was kept); tau >= 1/log10(M N).
    NaN when all draws are equal (posterior's NA) and, for posterior only,
    for chains of fewer than 3 draws (ArviZ goes on: tau = 0, capped).
    bound "flowebm" (the default) is ArviZ's, but NaN for chains of fewer
    than 5 draws, where no lag beyond 1 is read and both codes give the
    cap M N log10(M N) whatever the draws."""
    x = np.asarray(x, dtype=float)
    m, n = x.shape
    if constant(x) or (bound == "posterior" and n < 3) or (bound == "flowebm" and n < 5):
        return float("nan")
    acov = np.array([biased_acov(c) for c in x]).mean(axis=0)
    w = acov[0] * n / (n - 1)
    var_plus = w * (n - 1) / n
    if m > 1:
        var_plus += np.var(x.mean(axis=1), ddof=1)
    if not var_plus > 0:
        return float("nan")
    rho = 1 - (w - acov) / var_plus
    rho[0] = 1.0
    limit = (lambda k: 2 * k + 3 < n) if bound == "posterior" else (lambda k: 2 * k + 2 < n)

    pairs = [(1.0, rho[1])]  # kept pairs, pair 0 always
    last_even, last_kept = 1.0, True
    k = 1
    while limit(k) and sum(pairs[-1]) > 0 and last_kept:
        e, o = rho[2 * k], rho[2 * k + 1]
        last_even = e
        last_kept = e + o >= 0
        if last_kept:
            pairs.append((e, o))
        k += 1
    # the last pair read is not a full pair of the sum: only its even term
    if k > 1:
        tail_even = last_even if (last_even > 0 or last_kept) else 0.0
        full = pairs[:-1] if last_kept else pairs
    else:  # no pair after the first was read: tau from rho_0 alone
        tail_even, full = 1.0, []
    # Geyer's initial monotone sequence over the full pairs (not pair 0)
    sums = []
    for j, (e, o) in enumerate(full):
        s = e + o
        if j > 0 and s > sums[-1]:
            s = sums[-1]
        sums.append(s)
    tau = -1 + 2 * sum(sums) + tail_even
    if k == 1:
        tau = -1 + tail_even  # = 0: only rho_0 = 1 counted, as the codes do
    total = m * n
    tau = max(tau, 1 / math.log10(total))
    return total / tau


# ---------------------------------------------------------------- ranks

_NORMAL = statistics.NormalDist()


def rank_normalize(x):
    """Phi^-1((r - 3/8)/(S + 1/4)), r the average rank among all S values."""
    v = np.ravel(x)
    order = np.argsort(v, kind="mergesort")
    ranks = np.empty(len(v))
    sv = v[order]
    i = 0
    while i < len(v):
        j = i
        while j < len(v) and sv[j] == sv[i]:
            j += 1
        ranks[order[i:j]] = (i + 1 + j) / 2
        i = j
    u = (ranks - 0.375) / (len(v) + 0.25)
    return np.array([_NORMAL.inv_cdf(p) for p in u]).reshape(np.shape(x))


def rhat_basic(x):
    m, n = x.shape
    w = x.var(axis=1, ddof=1).mean()
    b = n * x.mean(axis=1).var(ddof=1)
    if w == 0:
        return float("inf") if b > 0 else float("nan")
    return math.sqrt((b / w + n - 1) / n)


# ---------------------------------------------------------------- diagnostics

def nan_unless(x, min_chains=1):
    return not finite_ok(x, min_chains=min_chains)


def rhat(x, variant="posterior"):
    """max of the rank-normalised split R-hats of x and of |x - median|.
    ArviZ folds the split chains about their median; posterior folds all
    draws about theirs and then splits (they differ for odd N)."""
    x = np.asarray(x, float)
    if nan_unless(x):  # one chain: its halves (posterior's rhat, ArviZ's _rhat_rank)
        return float("nan")
    s = split(x)
    bulk = rhat_basic(rank_normalize(s))
    if variant == "arviz":
        folded = np.abs(s - np.median(s))
    else:
        folded = split(np.abs(x - np.median(x)))
    fold = rhat_basic(rank_normalize(folded))
    if math.isnan(bulk) or math.isnan(fold):
        return float("nan")
    return max(bulk, fold)


def rhat_classic(x):
    x = np.asarray(x, float)
    return float("nan") if nan_unless(x, 2) else rhat_basic(x)


def ess_raw(x, bound="flowebm"):
    x = np.asarray(x, float)
    return float("nan") if nan_unless(x) else ess_core(x, bound)


def ess_bulk(x, bound="flowebm"):
    x = np.asarray(x, float)
    return float("nan") if nan_unless(x) else ess_core(rank_normalize(split(x)), bound)


def ess_mean(x, bound="flowebm"):
    x = np.asarray(x, float)
    return float("nan") if nan_unless(x) else ess_core(split(x), bound)


def ess_sd(x, bound="flowebm"):
    """posterior >= 1.6.1 / ArviZ >= 0.21: ESS of the split (x - mean)^2."""
    x = np.asarray(x, float)
    if nan_unless(x):
        return float("nan")
    return ess_core(split((x - x.mean()) ** 2), bound)


def ess_quantile(x, p, bound="flowebm"):
    """posterior's .ess_quantile: split ESS of I[x <= q_p]; p = 1 -> (S-1/2)/S."""
    x = np.asarray(x, float)
    if nan_unless(x) or not 0 <= p <= 1 or constant(x):
        return float("nan")
    if p == 1:
        p = (x.size - 0.5) / x.size
    return ess_core(split((x <= q7(x, p)).astype(float)), bound)


def ess_tail(x, bound="flowebm"):
    lo, hi = ess_quantile(x, 0.05, bound), ess_quantile(x, 0.95, bound)
    return float("nan") if math.isnan(lo) or math.isnan(hi) else min(lo, hi)


def mcse_mean(x):
    x = np.asarray(x, float)
    if nan_unless(x):
        return float("nan")
    return np.std(x, ddof=1) / math.sqrt(ess_mean(x))


def mcse_sd(x):
    """posterior >= 1.2.2 / ArviZ >= 0.21 (Kenney & Keeping 1951, p. 141, and
    a first-order Taylor expansion of sqrt)."""
    x = np.asarray(x, float)
    if nan_unless(x):
        return float("nan")
    d = (x - x.mean()) ** 2
    e = ess_core(split(d))
    ev = d.mean()
    varvar = ((d ** 2).mean() - ev ** 2) / e
    return math.sqrt(varvar / ev / 4)


def quantile_bracket(e, p, size):
    """a1 S and a2 S, a the SIGMA_PROBS quantiles of Beta(e p + 1, e (1-p) + 1)."""
    a, b = e * p + 1, e * (1 - p) + 1
    return [beta_ppf(u, a, b) * size for u in SIGMA_PROBS]


def mcse_quantile(x, p):
    """posterior's .mcse_quantile: (theta_(ceil(a2 S)) - theta_(floor(a1 S)))/2,
    1-based order statistics clamped to 1..S."""
    x = np.asarray(x, float)
    e = ess_quantile(x, p)
    if math.isnan(e):
        return float("nan"), None
    s = np.sort(x.ravel())
    size = len(s)
    a1s, a2s = quantile_bracket(e, p, size)
    i1 = max(math.floor(a1s), 1)
    i2 = min(math.ceil(a2s), size)
    return (s[i2 - 1] - s[i1 - 1]) / 2, (a1s, a2s)


def nested_rhat(x, k):
    """Margossian et al. (2024) eq. (4)-(8): chains grouped consecutively into
    k superchains of M chains; sqrt(1 + B_nu / W_nu)."""
    x = np.asarray(x, float)
    if x.ndim != 2 or k < 2 or x.shape[0] % k or x.shape[1] < 1:
        return float("nan")
    if not np.all(np.isfinite(x)) or constant(x):
        return float("nan")
    m, n = x.shape[0] // k, x.shape[1]
    if m == 1 and n == 1:
        return float("nan")
    f = x.reshape(k, m, n)
    chain_mean = f.mean(axis=2)              # f_.mk
    super_mean = chain_mean.mean(axis=1)     # f_..k
    b_nu = np.sum((super_mean - super_mean.mean()) ** 2) / (k - 1)
    b_tilde = (np.sum((chain_mean - super_mean[:, None]) ** 2, axis=1) / (m - 1)
               if m > 1 else np.zeros(k))
    w_tilde = (np.mean(np.sum((f - chain_mean[:, :, None]) ** 2, axis=2) / (n - 1), axis=1)
               if n > 1 else np.zeros(k))
    w_nu = np.mean(b_tilde + w_tilde)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sqrt(1 + b_nu / w_nu))


# ---------------------------------------------------------------- beta quantile

def _betacf(x, a, b):
    """Continued fraction of the incomplete beta (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for i in range(1, 100000):
        m2 = 2 * i
        aa = i * (b - i) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + i) * (qab + i) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            return h
    raise RuntimeError("betacf did not converge")


def beta_cdf(x, a, b):
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
           + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(x, a, b) / a
    return 1 - math.exp(lbt) * _betacf(1 - x, b, a) / b


def beta_ppf(u, a, b):
    """Quantile of Beta(a, b) by bisection to adjacent doubles."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            break
        if beta_cdf(mid, a, b) < u:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ---------------------------------------------------------------- cases

def ar1(rng, m, n, rho):
    x = np.empty((m, n))
    s = math.sqrt(1 - rho * rho)
    v = rng.standard_normal(m)
    for i in range(n):
        x[:, i] = v
        v = rho * v + s * rng.standard_normal(m)
    return x


def stuck(rng, m, n):
    """Random-walk Metropolis on N(0, 1) with a step so large that chains
    stay put for long stretches; the last chain starts far out (at 8) and
    its start is slow to wash out."""
    x = np.empty((m, n))
    for c in range(m):
        v = 8.0 if c == m - 1 else rng.standard_normal()
        for i in range(n):
            prop = v + 15 * rng.standard_normal()
            if math.log(rng.random()) < (v * v - prop * prop) / 2:
                v = prop
            x[c, i] = v
    return x


def cases():
    rng = np.random.default_rng(20240615)
    out = []

    def add(name, x, ks=()):
        out.append((name, np.asarray(x, float), list(ks)))

    add("iid_normal_4x100", rng.standard_normal((4, 100)), [2])
    add("iid_normal_odd_3x101", 3 + 2 * rng.standard_normal((3, 101)), [3])
    add("ar1_rho0.9_4x500", ar1(rng, 4, 500, 0.9), [2, 4])
    add("ar1_rho-0.5_2x300", ar1(rng, 2, 300, -0.5), [2])  # antithetic: ESS > S
    add("stuck_4x200", stuck(rng, 4, 200), [2, 4])
    add("ties_poisson_4x100", rng.poisson(2.0, (4, 100)), [2])
    add("ties_binary_2x50", (rng.random((2, 50)) < 0.3).astype(float), [2])
    add("separated_4x60", rng.standard_normal((4, 60)) + np.array([[0], [0], [5], [5]]), [2])
    add("trend_2x11", np.arange(11.0)[None, :] + 0.01 * rng.standard_normal((2, 11)), [2])
    add("one_chain_1x50", rng.standard_normal((1, 50)))
    add("short_2x4", rng.standard_normal((2, 4)), [2])
    add("constant_2x10", np.full((2, 10), 1.5), [2])
    add("constant_chains_apart_4x8", np.repeat([[1.0], [2.0], [3.0], [4.0]], 8, axis=1), [2, 4])
    x = rng.standard_normal((3, 10))
    x[1, 4] = np.nan
    add("nan_3x10", x, [3])
    x = rng.standard_normal((3, 10))
    x[2, 0] = np.inf
    add("inf_3x10", x, [3])
    # Nested R-hat regime: many short chains in superchains that share a start
    starts = np.repeat(rng.standard_normal(8) * 3, 16)[:, None]
    add("nested_far_128x5", starts + ar1(rng, 128, 5, 0.3), [8, 4, 2])
    starts = np.repeat(rng.standard_normal(8) * 0.05, 16)[:, None]
    add("nested_near_128x5", starts + ar1(rng, 128, 5, 0.3), [8, 64, 128])
    add("nested_single_draw_64x1", np.repeat(rng.standard_normal(8), 8)[:, None]
        + rng.standard_normal((64, 1)), [8, 64])
    # Chains of an odd length whose scales differ: the folded R-hat decides,
    # and posterior's fold (about the median of all draws) and ArviZ's (of
    # the split chains, each middle draw left out) differ (probe 63).
    # (Their own stream, so that the cases above keep theirs; its first
    # draw's two folds happen to agree.)
    r63 = np.random.default_rng(1)
    r63.standard_normal((4, 51))
    add("scales_odd_4x51", r63.standard_normal((4, 51)) * np.array([[1.0], [1.0], [1.5], [1.5]]), [2])
    return out


def diagnose(x, ks, bound="flowebm"):
    r = {
        "rhat": rhat(x, "posterior"),
        "rhat_classic": rhat_classic(x),
        "ess_raw": ess_raw(x, bound),
        "ess_bulk": ess_bulk(x, bound),
        "ess_tail": ess_tail(x, bound),
        "ess_mean": ess_mean(x, bound),
        "ess_sd": ess_sd(x, bound),
        "ess_median": ess_quantile(x, 0.5, bound),
        "mcse_mean": mcse_mean(x),
        "mcse_sd": mcse_sd(x),
        "mcse_median": mcse_quantile(x, 0.5)[0],
        "ess_quantile": [ess_quantile(x, p, bound) for p in PROBS],
        "mcse_quantile": [mcse_quantile(x, p)[0] for p in PROBS],
        "nested_rhat": [nested_rhat(x, k) for k in ks],
    }
    # a1 S and a2 S, whose floor and ceil pick the order statistics: a test
    # can see how far each is from an integer (how robust the MCSE is)
    r["mcse_quantile_bracket"] = [mcse_quantile(x, p)[1] for p in PROBS]
    return r


def enc(v):
    if isinstance(v, (list, tuple)):
        return [enc(u) for u in v]
    if isinstance(v, np.ndarray):
        return enc(v.tolist())
    if v is None:
        return None
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return v


# ---------------------------------------------------------------- self-checks

def selfcheck(all_cases):
    ok = True
    # 1. ess_mean of AR(1) against tau = (1 + rho)/(1 - rho)
    rng = np.random.default_rng(7)
    for rho in (0.5, 0.9, -0.3):
        x = ar1(rng, 4, 50000, rho)
        want = x.size * (1 - rho) / (1 + rho)
        got = ess_mean(x)
        ratio = got / want
        print(f"AR(1) rho={rho}: ess_mean {got:.0f}, closed form {want:.0f}, ratio {ratio:.3f}")
        ok &= 0.85 < ratio < 1.15
    # 2. hand-written beta quantile against scipy
    try:
        from scipy import stats
        worst = 0.0
        for a, b in [(1.5, 300), (200.2, 200.2), (3000.5, 1.0), (1.0, 9000.3), (45.0, 12.0)]:
            for u in SIGMA_PROBS:
                mine, theirs = beta_ppf(u, a, b), stats.beta.ppf(u, a, b)
                worst = max(worst, abs(mine - theirs) / theirs)
        print(f"beta quantile vs scipy: largest relative difference {worst:.2e}")
        ok &= worst < 1e-10
    except ImportError:
        print("scipy absent: beta quantile not cross-checked")
    # 3. where posterior's truncation bound changes the ESS
    for name, x, _ in all_cases:
        for f in (ess_raw, ess_mean, ess_bulk, ess_sd):
            a, p = f(x, "arviz"), f(x, "posterior")
            if not (a == p or (math.isnan(a) and math.isnan(p))):
                print(f"{name}: {f.__name__} ArviZ bound {a:.6g}, posterior bound {p:.6g}")
        a, p = rhat(x, "arviz"), rhat(x, "posterior")
        if not (a == p or (math.isnan(a) and math.isnan(p))):
            print(f"{name}: rhat ArviZ fold {a:.10g}, posterior fold {p:.10g}")
    return ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(here, "..", "testdata", "crosscheck.json"))
    ap.add_argument("--selfcheck", action="store_true")
    args = ap.parse_args()
    all_cases = cases()
    doc = {
        "generator": "samplers/diagnostics/crosscheck/reference.py",
        "numpy": np.__version__,
        "probs": PROBS,
        "cases": [],
    }
    for name, x, ks in all_cases:
        doc["cases"].append({
            "name": name,
            "chains": enc(x),
            "superchains": ks,
            "want": {k: enc(v) for k, v in diagnose(x, ks).items()},
        })
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    if args.selfcheck and not selfcheck(all_cases):
        sys.exit("self-check failed")


if __name__ == "__main__":
    main()

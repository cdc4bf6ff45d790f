"""Writes CSV chains for diagnose's readers, with the same draws as .npy:
cmdstan/output_K.csv (CmdStan's layout: comment lines, the sampler's
columns name__, adaptation comments between header and draws, timing
comments at the end), draws_df.csv (posterior's as_draws_df layout:
.chain, .iteration, .draw) and csv_same.npy (chains, draws, dims).
Run: /usr/bin/python3 gen_csv.py (in this folder)."""
import os

import numpy as np

rng = np.random.default_rng(7)
chains, draws = 4, 300
mu = np.zeros((chains, draws))
tau = np.zeros((chains, draws))
for c in range(chains):
    a, b = rng.normal(), rng.normal()
    for n in range(draws):
        a = 0.8 * a + 0.6 * rng.normal()
        b = 0.3 * b + rng.normal()
        mu[c, n], tau[c, n] = 1 + a, np.exp(0.5 * b)
theta = rng.normal(size=(chains, draws, 2)) + mu[..., None]
params = np.concatenate([mu[..., None], tau[..., None], theta], axis=2)
names = ["mu", "tau", "theta.1", "theta.2"]
np.save("csv_same.npy", params)
os.makedirs("cmdstan", exist_ok=True)
sampler = ["lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__"]
for c in range(chains):
    with open(f"cmdstan/output_{c + 1}.csv", "w") as f:
        f.write("# stan_version_major = 2\n# model = eight_schools_model\n# method = sample (Default)\n")
        f.write(f"#   id = {c + 1}\n#   num_samples = {draws}\n")
        f.write(",".join(sampler + names) + "\n")
        f.write("# Adaptation terminated\n# Step size = 0.412\n# Diagonal elements of inverse mass matrix:\n# 1.1, 0.9, 1, 1\n")
        for n in range(draws):
            s = [-rng.exponential() * 5, rng.uniform(), 0.412, 3, 7, 0, rng.exponential() * 5]
            f.write(",".join(f"{v:.17g}" for v in list(s) + list(params[c, n])) + "\n")
        f.write("# \n#  Elapsed Time: 0.02 seconds (Warm-up)\n#                0.03 seconds (Sampling)\n")
with open("draws_df.csv", "w") as f:
    f.write(",".join(names + [".chain", ".iteration", ".draw"]) + "\n")
    for c in range(chains):
        for n in range(draws):
            f.write(",".join(f"{v:.17g}" for v in params[c, n]) + f",{c + 1},{n + 1},{c * draws + n + 1}\n")

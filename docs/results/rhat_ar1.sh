#!/bin/sh
# What flowebm's d = 64 R-hat asks of a sampler: max rank-normalised split
# R-hat over 64 dimensions of 128 chains of 16 draws (the paper's Table 2
# diagnostic) for stationary AR(1) chains -- started in their N(0, 1)
# target, lag-1 autocorrelation RHO, no bias at all -- over 5 replicates.
# Needs NumPy (Debian: /usr/bin/python3 with python3-numpy).
#
#   docs/results/rhat_ar1.sh            (FLOWEBM names the binary)
set -eu
FLOWEBM=${FLOWEBM:-flowebm}
PY=${PY:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for rho in 0 0.1 0.2 0.3; do
	line="rho $rho:"
	for seed in 1 2 3 4 5; do
		"$PY" -c 'import sys, numpy as np
rho, seed = float(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(seed)
e = rng.normal(size=(128, 16, 64))
x = np.empty_like(e)
x[:, 0] = e[:, 0]
for t in range(1, 16):
    x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * e[:, t]
np.save(sys.argv[3], x)' "$rho" "$seed" "$tmp/x.npy"
		line="$line $("$FLOWEBM" diagnose "$tmp/x.npy" --json | "$PY" -c 'import json, sys; print("%.3f" % max(d["rhat"] for d in json.load(sys.stdin)))')"
	done
	echo "$line"
done

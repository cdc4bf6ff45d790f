#!/bin/sh
# Trains flowMC-EBM with each flow family -- the RealNVP of the defaults
# and rational-quadratic spline couplings ("model": {"flow": "spline"},
# everything else as the defaults but the RealNVP's flow_init) -- on rings, four-gaussians-32 and mnist
# (seed 1), one run at a time, and tabulates them with flowebm compare.
#
#   docs/results/flows/run.sh [RUNS [OUT]]
#
# RUNS (default runs/flows) receives the run folders, OUT (default
# docs/results/flows) the comparison's figures and summary.md. FLOWEBM names
# the binary (default: flowebm on PATH). Finished runs are kept: run it
# again after an interruption.
set -eu
FLOWEBM=${FLOWEBM:-flowebm}
RUNS=${1:-runs/flows}
OUT=${2:-docs/results/flows}
EXPERIMENTS=${EXPERIMENTS:-rings four-gaussians-32 mnist}
mkdir -p "$RUNS"
dirs=""
for e in $EXPERIMENTS; do
	"$FLOWEBM" train --experiment "$e" --print-config >"$RUNS/$e-realnvp.json"
	python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
m = c.setdefault("model", {})
m["flow"] = "spline"
m.pop("flow_init", None)  # the RealNVP'"'"'s initialisation; splines start as the identity
json.dump(c, open(sys.argv[2], "w"), indent=2)' "$RUNS/$e-realnvp.json" "$RUNS/$e-spline.json"
	for flow in realnvp spline; do
		run="$RUNS/$e-$flow"
		if [ -f "$run/metrics.json" ]; then
			echo "$run: trained already"
		elif [ -d "$run/checkpoint" ]; then
			"$FLOWEBM" train --quiet --resume "$run"
		else
			"$FLOWEBM" train --quiet --config "$RUNS/$e-$flow.json" --out "$run"
		fi
		dirs="$dirs $run"
	done
done
# shellcheck disable=SC2086 # the run folders, one word each
"$FLOWEBM" compare $dirs --out "$OUT" --force

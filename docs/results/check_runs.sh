#!/bin/sh
# Does the current code still give the committed runs? For each run folder
# under docs/results/runs (or the folders given), train its own config.json
# again for its first evaluations only (two eval intervals, or past
# CoopFlow's freeze_flow) and compare those rows of metrics.csv with the
# committed ones (iteration, loss, flow LL, acceptances, step size, weight
# MSEs), digit for digit. SAME means training's arithmetic has not changed
# since the run was trained; DIFF means the run must be trained again
# before its numbers are quoted at this code. About 10 minutes for the 40
# runs on 2 cores.
#
#   docs/results/check_runs.sh [RUN...]     (FLOWEBM names the binary)
set -eu
FLOWEBM=${FLOWEBM:-flowebm}
PY=${PY:-python3}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ $# -gt 0 ] || set -- "$here"/runs/*
status=0
for run in "$@"; do
	[ -f "$run/config.json" ] || continue # not a run folder (seeds.json beside them)
	name=$(basename "$run")
	"$PY" - "$run/config.json" "$tmp/$name.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("build", None)
every = c["eval_every"]
it = max(2 * every, (c["train"].get("freeze_flow") or 0) + every)
c["train"]["iterations"] = -(-it // every) * every
json.dump(c, open(sys.argv[2], "w"))
PY
	if ! "$FLOWEBM" train --config "$tmp/$name.json" --out "$tmp/$name" >"$tmp/$name.log" 2>&1; then
		echo "$name FAILED: $(tail -n 1 "$tmp/$name.log")"
		status=1
		continue
	fi
	# Every row but the last, which is the shortened run's final evaluation.
	n=$(($(wc -l <"$tmp/$name/metrics.csv") - 1))
	if [ "$(sed -n "2,${n}p" "$tmp/$name/metrics.csv" | cut -d, -f1-10)" = "$(sed -n "2,${n}p" "$run/metrics.csv" | cut -d, -f1-10)" ]; then
		echo "$name SAME ($((n - 1)) evaluations)"
	else
		echo "$name DIFF"
		status=1
	fi
	rm -rf "${tmp:?}/$name"
done
exit $status

#!/usr/bin/env bash
# Executes every notebook in this folder headless on the flowebm-go
# (gophernotes) kernel and reports `notebooks: N passed, N failed`; exits 1 if
# any cell of any notebook errors. Installs what it needs: Debian's Jupyter
# (nbconvert, jupyter-client, ipykernel) and the kernel (install-kernel.sh).
#
#   notebooks/run-notebooks.sh             # execute into a temporary folder
#   notebooks/run-notebooks.sh --inplace   # also save the outputs into the
#                                          # notebooks (to commit them)
#   FLOWEBM_NOTEBOOK_OUT=DIR notebooks/run-notebooks.sh
#                                          # keep the executed copies and
#                                          # logs in DIR
#
# 1 min 50 s for the five (18, 39, 28, 9 and 16 s), measured 2026-11-28 at
# aab933e with --inplace on a 2-core AMD EPYC VM with OpenBLAS, a warm Go
# build cache and kernel plugins, nothing else running; on a first run the
# kernel also compiles each notebook's imports into a plugin first.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
inplace=0
[ "${1:-}" = "--inplace" ] && inplace=1

if ! /usr/bin/jupyter nbconvert --version >/dev/null 2>&1; then
  echo "== installing Jupyter (Debian: jupyter-nbconvert, jupyter-client, python3-ipykernel)"
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo -n"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq jupyter-nbconvert jupyter-client python3-ipykernel >/dev/null || exit 1
fi

"$here/install-kernel.sh" || exit 1
export JUPYTER_PATH="${FLOWEBM_JUPYTER_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/flowebm-jupyter}${JUPYTER_PATH:+:$JUPYTER_PATH}"

if [ -n "${FLOWEBM_NOTEBOOK_OUT:-}" ]; then
  out="$FLOWEBM_NOTEBOOK_OUT"; mkdir -p "$out" || exit 1
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
pass=0; fail=0; failed=""
for nb in "$here"/[0-9]*.ipynb; do
  name=$(basename "$nb" .ipynb)
  start=$(date +%s)
  if /usr/bin/jupyter nbconvert --to notebook --execute "$nb" \
      --ExecutePreprocessor.timeout=1500 --ExecutePreprocessor.kernel_name=flowebm-go \
      --output-dir "$out" --output "$name" >"$out/$name.log" 2>&1; then
    pass=$((pass + 1))
    echo "== $name: passed in $(( $(date +%s) - start )) s"
    if [ "$inplace" = 1 ]; then
      # Atomic replacement: never a half-written notebook.
      cp "$out/$name.ipynb" "$nb.tmp" && mv "$nb.tmp" "$nb"
    fi
  else
    fail=$((fail + 1)); failed="$failed $name"
    echo "== $name: FAILED after $(( $(date +%s) - start )) s; the end of nbconvert's log:"
    tail -n 40 "$out/$name.log"
  fi
done
echo "notebooks: $pass passed, $fail failed${failed:+ (failed:$failed)}"
[ "$fail" = 0 ]

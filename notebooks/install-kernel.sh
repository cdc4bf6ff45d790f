#!/usr/bin/env bash
# Builds the gophernotes Jupyter kernel (v0.7.5, patched to run on Go 1.26)
# and registers it as the kernel "flowebm-go" in a kernel folder that
# Jupyter finds through JUPYTER_PATH. Idempotent: a kernel already built is
# kept.
#
#   notebooks/install-kernel.sh            # build + register
#   export JUPYTER_PATH=$HOME/.cache/flowebm-jupyter   # printed at the end
#
# What it takes (found on Go 1.26, see ../shared/REFERENCE.md §9 and the
# notebooks issue): `go install ...@v0.7.5` is refused by the proxy, so the
# module source is downloaded and built as a copy; gomacro is upgraded to
# v0.0.0-20240506194242-2ff796e3da10 and golang.org/x/tools to v0.52.0, the
# kernel's go.mod gets `godebug gotypesalias=0`, and proxy_JSONer in
# x_package.go returns map[string]interface{} as display.JSONer does. The
# checksum database has no entries for gomacro's pseudo-versions here, hence
# GONOSUMDB. cgo is needed: imports are compiled as plugins.
set -euo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}"
BUILD="$CACHE/flowebm-gophernotes"
KERNELS="${FLOWEBM_JUPYTER_PATH:-$CACHE/flowebm-jupyter}"
BIN="$BUILD/bin/gophernotes"
export GONOSUMDB="github.com/cosmos72/gomacro${GONOSUMDB:+,$GONOSUMDB}"
export GOFLAGS=-mod=mod
export CGO_ENABLED=1

if [ ! -x "$BIN" ]; then
  echo "== building gophernotes v0.7.5 (patched for Go $(go env GOVERSION)) in $BUILD"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # go mod download needs a module context for -json of a bare path.
  (cd "$tmp" && go mod init tmp >/dev/null 2>&1)
  dir=$(cd "$tmp" && go mod download -json github.com/gopherdata/gophernotes@v0.7.5 | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  [ -n "$dir" ] || { echo "could not download gophernotes v0.7.5" >&2; exit 1; }
  rm -rf "$BUILD/src"
  mkdir -p "$BUILD/src" "$BUILD/bin"
  cp -r "$dir"/. "$BUILD/src/"
  chmod -R u+w "$BUILD/src"
  cd "$BUILD/src"
  # display.JSONer's method returns a map; the proxy must match it.
  sed -i 's/JSON_  func(interface{}) string/JSON_  func(interface{}) map[string]interface{}/; s/func (P \*proxy_JSONer) JSON() string {/func (P *proxy_JSONer) JSON() map[string]interface{} {/' x_package.go
  grep -q 'func (P \*proxy_JSONer) JSON() map\[string\]interface{}' x_package.go || { echo "x_package.go: proxy_JSONer patch did not apply" >&2; exit 1; }
  go mod edit -go=1.26 -godebug=gotypesalias=0
  go get github.com/cosmos72/gomacro@v0.0.0-20240506194242-2ff796e3da10 golang.org/x/tools@v0.52.0
  go mod tidy
  go build -o "$BIN" .
fi

# The kernel compiles each import into a plugin in a module of its own that
# replaces github.com/flowebm/flowebm by the local checkout (notebooks import
# "../algorithms" etc.). Resolving that replacement needs a proxy that
# answers "not found" for the project's own module path, and the project's
# dependencies: the module cache's download folder is such a proxy once
# `go mod download` has filled it (done here). Its contents were checked
# against go.sum when downloaded, so the plugin builds skip the checksum
# database (GOSUMDB=off), which is not reachable here.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
(cd "$ROOT" && GOFLAGS=-mod=readonly go mod download)
MODPROXY="file://$(go env GOMODCACHE)/cache/download"

mkdir -p "$KERNELS/kernels/flowebm-go"
cat > "$KERNELS/kernels/flowebm-go/kernel.json" <<EOF
{
  "argv": ["$BIN", "{connection_file}"],
  "display_name": "Go (flowebm, gophernotes)",
  "language": "go",
  "name": "flowebm-go",
  "env": {"GOPROXY": "$MODPROXY", "GOSUMDB": "off", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "1"}
}
EOF
echo "== kernel flowebm-go registered in $KERNELS"
echo "   export JUPYTER_PATH=$KERNELS"

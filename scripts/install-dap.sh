#!/usr/bin/env bash
# Installs (idempotently) the debug adapters the gantry-dap tests drive:
# debugpy (PyPI), lldb-dap (Debian bookworm's lldb-19, which ships it as
# lldb-dap-19) and delve with a Go toolchain (Debian's delve 1.20 and
# golang-go 1.19; the Go fixture uses only the standard library, so it
# builds with GOPROXY=off). The Dart SDK is not installable from the
# registries reachable here: the dart adapter has detection and status tests
# only.
set -euo pipefail

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

if ! python3 -c 'import debugpy' >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check debugpy
fi

missing=()
for pkg in lldb-19 delve golang-go; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# Report what the tests will find.
printf '%-14s %s\n' debugpy "$(python3 -c 'import debugpy; print(debugpy.__version__)' 2>/dev/null || echo MISSING)"
printf '%-14s %s\n' lldb-dap "$(compgen -c | grep -E '^lldb-dap(-[0-9]+)?$' | sort -u | tr '\n' ' ')"
printf '%-14s %s\n' dlv "$(command -v dlv || echo MISSING)"
printf '%-14s %s\n' go "$(command -v go || echo MISSING)"

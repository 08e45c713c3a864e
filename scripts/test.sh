#!/usr/bin/env bash
# Installs everything the tests need (idempotently) and runs the whole suite.
# Usage: scripts/test.sh        (CI runs exactly this through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

# --- what the tests talk to -------------------------------------------------
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  fi
}
apt_install ripgrep fd-find

python3 -m pip install -q --disable-pip-version-check -r tests/e2e/requirements.txt
scripts/install-lsp.sh
# The official MCP conformance suite, with the Node >= 22 it needs.
export GANTRY_CONFORMANCE_BIN="$(scripts/install-conformance.sh)"

# --- the suite -----------------------------------------------------------------
export CI="${CI:-}"
cargo build -p gantry
cargo test --workspace
GANTRY_BIN="$PWD/target/debug/gantry" python3 -m pytest -q tests/e2e

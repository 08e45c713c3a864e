#!/usr/bin/env bash
# Fault injection of issue 26: kill -9 a language server (basedpyright), a
# debug adapter (debugpy), a Python kernel, a bridged MCP server and a
# worker's model endpoint at random points of the calls using them, KILLS
# times each (tests/e2e/test_faults.py, which the suite runs 5 times each).
# Prints one line per resource: kills, calls hit (each said what died),
# calls the kill missed, the slowest hit call and the slowest recovery.
# Usage: bench/faults.sh [KILLS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-lsp.sh >/dev/null
scripts/install-dap.sh >/dev/null
python3 -c 'import mcp' 2>/dev/null || python3 -m pip install -q -r tests/e2e/requirements.txt
cargo build -q --release -p gantry
GANTRY_BIN=target/release/gantry GANTRY_FAULT_KILLS="${1:-200}" \
  python3 -m pytest -q -s -rs -p no:cacheprovider tests/e2e/test_faults.py

#!/usr/bin/env bash
# Gantry's debug tool vs a bare DAP client driving debugpy, in one run:
# launch to the first stop and the step round trip (each with the place and
# the locals an agent needs at a stop), and the process tree's RSS at the
# first stop; Gantry through `gantry mcp` and the raw JSON-RPC client of
# bench/mcp_client.py. Prints the ratios against the goals (within 5 % of
# bare; process tree within 20 MB of bare).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import debugpy' 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check debugpy
fi
cargo build --release -q -p gantry
python3 bench/dap.py --gantry "$PWD/target/release/gantry" "$@"

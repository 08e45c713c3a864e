#!/usr/bin/env bash
# Gantry's eval kernel vs Jupyter's ipykernel (driven by jupyter_client):
# cold start to the first result and the p50/p99 round trip of a trivial
# cell over 300 cells, Gantry through `gantry mcp` and the raw JSON-RPC
# client of bench/mcp_client.py, in one run; prints the ratios against the
# goals (cold start <= 1/5 of ipykernel's, round trip <= 1/10).
# Pass --sdk to also time the official Python MCP SDK driving Gantry.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import ipykernel, jupyter_client' 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check ipykernel jupyter_client
fi
cargo build --release -q -p gantry
python3 bench/kernel.py --gantry "$PWD/target/release/gantry" "$@"

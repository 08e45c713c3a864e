#!/usr/bin/env bash
# Language-server figures of issue 5, side by side in one run: `lsp references`
# and `hover` through `gantry mcp` (Python MCP SDK client, and a minimal raw
# JSON-RPC client) against a bare LSP client on basedpyright, interleaved, p50
# and p99; cold spawn to the first references answer; diagnostics on write
# against the server's own publish (and its pull answer). See bench/lsp_mcp.py.
# Usage: bench/lsp.sh [CALLS] [COLD_ROUNDS] [WRITES]   (default 200 5 20)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-lsp.sh >/dev/null
python3 -c 'import mcp' 2>/dev/null || python3 -m pip install -q -r tests/e2e/requirements.txt
cargo build -q --release -p gantry
python3 bench/lsp_mcp.py target/release/gantry "${1:-200}" "${2:-5}" "${3:-20}"

#!/usr/bin/env bash
# Gantry vs the reference filesystem MCP server (@modelcontextprotocol/server-filesystem):
# start-up to the first tools/list, RSS after start, and read latency p50/p99,
# both driven by the same client in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
peer_dir="${XDG_CACHE_HOME:-$HOME/.cache}/gantry-bench"
if [ ! -f "$peer_dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ]; then
  mkdir -p "$peer_dir"
  npm install --silent --prefix "$peer_dir" @modelcontextprotocol/server-filesystem
fi
cargo build --release -q -p gantry
python3 bench/mcp_client.py \
  --gantry "$PWD/target/release/gantry" \
  --peer-js "$peer_dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" "$@"

#!/usr/bin/env bash
# Bridged MCP servers through Gantry vs the same servers called directly,
# by the same raw client in one run: server-filesystem's read_file p50/p99
# over 1,000 calls, and start-up to the first tools/list with two bridged
# servers (server-filesystem, server-everything) vs the slower server's own.
set -euo pipefail
cd "$(dirname "$0")/.."
peer_dir="${XDG_CACHE_HOME:-$HOME/.cache}/gantry-bench"
modules="$peer_dir/node_modules/@modelcontextprotocol"
if [ ! -f "$modules/server-filesystem/dist/index.js" ] || [ ! -f "$modules/server-everything/dist/index.js" ]; then
  mkdir -p "$peer_dir"
  npm install --silent --prefix "$peer_dir" @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-everything
fi
cargo build --release -q -p gantry
python3 bench/discovery.py \
  --gantry "$PWD/target/release/gantry" \
  --fs-js "$modules/server-filesystem/dist/index.js" \
  --everything-js "$modules/server-everything/dist/index.js" "$@"

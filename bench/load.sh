#!/usr/bin/env bash
# Load on one `gantry mcp` (issue 26, "Load"): a native load generator
# (crates/mcp/examples/load.rs, the official MCP Rust SDK as the client)
# makes 200 concurrent read_file calls over one stdio connection; then 50
# concurrent streamable HTTP sessions of 500 read_file calls each, back to
# back (saturating the machine: the latency is then mostly the queue) and
# paced at one call per session every EVERY_MS (a fleet below capacity);
# then 20 bearer tokens on protocol 2026-07-28, each with a background
# shell job whose isolation from the other runs is checked. Prints, for
# each, the calls answered and failed, latency p50, p99 and max, the CPU of
# the server and of the generator, and the server's resident memory now
# and at its peak. Goal on 2 cores: read_file p99 <= 10 ms at 50 sessions,
# memory <= 100 MB.
#
# Usage: bench/load.sh [CALLS [SESSIONS [PER_SESSION [EVERY_MS]]]]   (200 50 500 100)
set -euo pipefail
cd "$(dirname "$0")/.."
calls="${1:-200}"
sessions="${2:-50}"
per_session="${3:-500}"
every_ms="${4:-100}"
cargo build --release -q -p gantry
cargo build --release -q -p gantry-mcp --example load
workspace="$(mktemp -d)"
trap 'rm -rf "$workspace"' EXIT
cp README.md "$workspace/README.md"
echo "$(nproc) cores; read_file of a $(wc -c <README.md)-byte file"
target/release/examples/load target/release/gantry "$workspace" stdio "$calls"
target/release/examples/load target/release/gantry "$workspace" http "$sessions" "$per_session"
target/release/examples/load target/release/gantry "$workspace" http "$sessions" "$per_session" "$every_ms"
target/release/examples/load target/release/gantry "$workspace" tokens 20 "$per_session"

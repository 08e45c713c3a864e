#!/usr/bin/env bash
# Worker mode (vibe_*) against the scripted OpenAI-compatible peer, through
# `gantry mcp` and the raw JSON-RPC client: vibe_spawn to the first model
# request, vibe_kill to every process gone, and Gantry's own time per tool
# round of the agent loop, each beside a bare Python client doing the same
# in the same run, with the ratio and the issue's goal.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-workers.sh >/dev/null
cargo build --release -q -p gantry
python3 bench/workers.py --gantry "$PWD/target/release/gantry" "$@"

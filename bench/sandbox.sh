#!/usr/bin/env bash
# What the sandbox costs, side by side in one run: Gantry with its default
# sandbox (each command in its own namespaces, under Landlock), with
# Landlock alone (`sandbox.namespaces: false`) and with `sandbox.mode: off`,
# through `gantry mcp` and the raw client of bench/mcp_client.py, calls
# interleaved: a fresh server's first call, the round trip of
# `shell {"command": "true"}` (goal: within 2 ms of Landlock alone) and a
# clean `cargo check` of a generated 200-file crate (goal: within 2 %). See
# bench/sandbox.py. First, in one process, the bare spawn
# and wait of `true` under the reaper, unconfined and confined (the fork
# and the three system calls the sandbox adds to a spawn).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gantry -p gantry-process --bins
cargo build --release -q -p gantry-process --example sandbox_spawn
abi="$(python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))')"
echo "kernel $(uname -r), Landlock ABI $abi, $(nproc) cores"
target/release/examples/sandbox_spawn target/release/gantry-reap 300
exec python3 bench/sandbox.py --gantry target/release/gantry "$@"

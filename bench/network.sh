#!/usr/bin/env bash
# What the network sandbox costs: a 50 MB download and a new HTTPS
# connection from a `shell` command, with the host's whole network and
# through Gantry's proxy from the command's own network, side by side in
# one run. See bench/network.py.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gantry -p gantry-process --bins
exec python3 bench/network.py --gantry target/release/gantry "$@"

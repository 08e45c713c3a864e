#!/usr/bin/env bash
# What the run log costs a call: p50 of read_file and write_file with the
# log on and off, side by side in one run. See bench/runlog.py.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gantry
exec python3 bench/runlog.py --gantry target/release/gantry "$@"

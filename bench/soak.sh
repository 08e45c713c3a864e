#!/usr/bin/env bash
# The soak of issue 26: one `gantry mcp` run under a mixed workload (edit
# with diagnostics, grep, lsp, eval, shell, read_file) for SECONDS, sampled
# every 10 s. Prints the server's memory slope, its file descriptors and
# the processes under it; writes the samples to bench/soak.csv and their
# plot to bench/soak.png.
# Usage: bench/soak.sh [SECONDS]   (default 3600)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-lsp.sh >/dev/null
scripts/install-kernel.sh >/dev/null
python3 -c 'import mcp, matplotlib' 2>/dev/null || python3 -m pip install -q -r tests/e2e/requirements.txt matplotlib
cargo build -q --release -p gantry
python3 bench/soak.py target/release/gantry "${1:-3600}" bench/soak.png bench/soak.csv

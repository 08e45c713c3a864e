#!/usr/bin/env bash
# The time a write spends on the files it can break (issue: diagnostics on
# write reach the files the write broke): p50 of `edit` calls changing a
# declaration with 10 dependent files, on warm typescript-language-server
# and clangd, with the lookup on against the same edits with it off
# (`lsp.dependents: false`), interleaved. See bench/lsp_dependents.py.
# Usage: bench/lsp_dependents.sh [EDITS]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-lsp.sh >/dev/null
cargo build -q --release -p gantry
python3 bench/lsp_dependents.py target/release/gantry "${1:-100}"

#!/usr/bin/env bash
# Language-server latency: Gantry's `lsp` tool against a bare LSP client
# (bench/lsp_raw.py), both talking to basedpyright on the same small project,
# in one run: cold start to the first references answer, p50/p99 of
# definition, references and hover over CALLS calls each, and diagnostics on
# write (write call to result, against didChange to the server's pull answer).
# Usage: bench/lsp.sh [CALLS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
calls="${1:-200}"
scripts/install-lsp.sh >/dev/null
cargo build -q --release -p gantry-lsp --example lsp_bench

make_project() {
  local dir; dir="$(mktemp -d)"
  mkdir -p "$dir/app"
  printf '[project]\nname = "bench"\nversion = "0"\n\n[tool.basedpyright]\ntypeCheckingMode = "standard"\n' > "$dir/pyproject.toml"
  : > "$dir/app/__init__.py"
  printf 'def greet(name: str) -> str:\n    """Say hello."""\n    return "hello " + name\n' > "$dir/app/util.py"
  printf 'from app.util import greet\n\n\nmessage = greet("x")\nprint(greet(message))\n' > "$dir/main.py"
  echo "$dir"
}

raw_dir="$(make_project)"; gantry_dir="$(make_project)"
trap 'rm -rf "$raw_dir" "$gantry_dir"' EXIT
# Alternate the order so neither side always runs on a cooler machine.
raw1="$(python3 bench/lsp_raw.py "$raw_dir" "$calls")"
gantry1="$(target/release/examples/lsp_bench "$gantry_dir" "$calls")"

python3 - "$raw1" "$gantry1" "$calls" <<'PY'
import json, sys
raw, gantry, calls = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
print(f"basedpyright, {calls} calls each (ms)      bare client   gantry    gantry-bare  ratio")
for name in ("definition", "references", "hover"):
    for p in ("p50", "p99"):
        b, g = raw[name][p], gantry[name][p]
        print(f"  {name:<11} {p:<4}                      {b:9.2f} {g:9.2f} {g-b:+10.2f} {g/b:6.2f}x")
b, g = raw["cold_ms"], gantry["cold_ms"]
print(f"  cold start to first references          {b:9.0f} {g:9.0f} {g-b:+10.0f} {g/b:6.2f}x")
b, g = raw["write_diagnostics_p50_ms"], gantry["write_diagnostics_p50_ms"]
print(f"  diagnostics on write, p50               {b:9.1f} {g:9.1f} {g-b:+10.1f} {g/b:6.2f}x")
PY

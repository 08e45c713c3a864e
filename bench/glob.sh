#!/usr/bin/env bash
# Benchmarks Gantry's `glob` against fd on a large real tree and prints the
# ratio (gantry time / fd time; below 1 means gantry is faster).
#
#   bench/glob.sh
#
# Environment:
#   GANTRY_BENCH_TREE    tree to search (default ~/.cargo/registry/src, which
#                        any machine has after `cargo build`)
#   GANTRY_BENCH_COPIES  search N hard-linked copies of the tree side by side
#                        (default 1: the tree itself); 8 makes a ~100k-file
#                        tree out of the registry without using disk
#   GANTRY_BENCH_RUNS    timed runs per contender (default 10)
#   GANTRY_BENCH_NO_CLI  set to skip the CLI comparison under hyperfine
#
# Two comparisons:
#   1. in-process: the glob tool called through `Run::call`
#      (crates/fs/examples/glob_bench.rs) against `fdfind` as a process;
#      always runs.
#   2. process against process under hyperfine:
#      `gantry --root TREE call glob '{"pattern":"**/*.rs"}'` against
#      `fdfind -g '*.rs' -t f TREE`; runs when the gantry CLI is built and
#      has the fs tools.
# The tree is the workspace root in both. fd 8.x needs a git repository to
# apply .gitignore files while gantry applies them anywhere, so on trees with
# .gitignore files and no .git the counts may differ; both are printed.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_tree
COPIES=${GANTRY_BENCH_COPIES:-1}
RUNS=${GANTRY_BENCH_RUNS:-10}

# Tools: hyperfine and fd, from Debian's packages when missing.
bench_install hyperfine=hyperfine fd-find=fdfind,fd
FD=$(command -v fdfind || command -v fd || true)

WORK=""
cleanup() { if [ -n "$WORK" ]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT
if [ "$COPIES" -gt 1 ]; then
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/gantry-glob-bench.XXXXXX")
    for i in $(seq 1 "$COPIES"); do
        cp -al "$TREE" "$WORK/copy$i" 2>/dev/null || cp -a "$TREE" "$WORK/copy$i"
    done
    TREE=$WORK
fi
TREE=$(cd "$TREE" && pwd -P)

echo "tree: $TREE ($(find "$TREE" -type f | wc -l) files, $(find "$TREE" -type f -name '*.rs' | wc -l) *.rs), $(nproc) cores"
echo

echo "== 1. in-process glob tool vs ${FD:-fd (missing)} =="
cargo build --release -q -p gantry-fs --example glob_bench
"$ROOT/target/release/examples/glob_bench" "$TREE" --runs "$RUNS"
echo

echo "== 2. gantry CLI vs ${FD:-fd (missing)} under hyperfine =="
if [ -n "${GANTRY_BENCH_NO_CLI:-}" ]; then
    echo "skipped (GANTRY_BENCH_NO_CLI)"
    exit 0
fi
if ! command -v hyperfine >/dev/null || [ -z "$FD" ]; then
    echo "skipped: hyperfine and fd are both needed"
    exit 0
fi
GANTRY="$ROOT/target/release/gantry"
if [ ! -x "$GANTRY" ]; then
    cargo build --release -q -p gantry
fi
ARGS='{"pattern":"**/*.rs"}'
if ! "$GANTRY" --root "$TREE" call glob "$ARGS" >/dev/null 2>&1; then
    echo "skipped: '$GANTRY --root TREE call glob' did not succeed (is the fs family registered in the CLI?)"
    exit 0
fi
echo "gantry: $("$GANTRY" --root "$TREE" call glob "$ARGS" | head -n 1)"
echo "fd:     $("$FD" -g '*.rs' -t f "$TREE" | wc -l) files"
JSON=$(mktemp)
hyperfine --warmup 2 --runs "$RUNS" --export-json "$JSON" \
    --command-name gantry "'$GANTRY' --root '$TREE' call glob '$ARGS'" \
    --command-name fd "'$FD' -g '*.rs' -t f '$TREE'"
if command -v jq >/dev/null; then
    jq -r '"ratio gantry/fd (mean): \(.results[0].mean / .results[1].mean * 100 | round / 100)x"' "$JSON"
else
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print("ratio gantry/fd (mean): %.2fx" % (r[0]["mean"]/r[1]["mean"]))' "$JSON"
fi
rm -f "$JSON"

#!/usr/bin/env bash
# Benchmarks Gantry's `grep` against ripgrep on a large real tree and prints
# the ratio (gantry time / rg time; below 1 means gantry is faster). The
# goal (issue 3) is at most 1.2x rg's time, warm cache, same regex.
#
#   bench/grep.sh
#
# Environment:
#   GANTRY_BENCH_TREE    tree to search (default ~/.cargo/registry/src, which
#                        any machine has after `cargo build`)
#   GANTRY_BENCH_RUNS    timed runs per contender (default 10)
#   GANTRY_BENCH_NO_CLI  set to skip the CLI comparison under hyperfine
#
# Regexes: a common literal (`unwrap\(\)`), an identifier pattern
# (`fn \w+_test`) and a rare name (`PhantomPinned`). Both sides match case
# exactly: `rg -n REGEX TREE`, and grep with `case_insensitive: false`; the
# CLI comparison adds smart case on both sides (grep's default, `rg -S`).
#
# Two comparisons:
#   1. in-process: the grep tool called through `Run::call`
#      (crates/fs/examples/grep_bench.rs) against `rg` as a process;
#      always runs.
#   2. process against process under hyperfine:
#      `gantry --root TREE call grep '{"pattern": ...}'` against
#      `rg -n REGEX TREE`; gantry's start-up (runtime, registry, schemas)
#      counts here. Runs when the gantry CLI is built.
# rg prints every matching line; grep shows the first 200 in path order and
# stops counting well past them, so for a common literal it does less work.
# The rare regex makes both search every file: that row is like for like.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_tree
RUNS=${GANTRY_BENCH_RUNS:-10}
PATTERNS=('unwrap\(\)' 'fn \w+_test' 'PhantomPinned')
TREE=$(cd "$TREE" && pwd -P)

# Tools: ripgrep and hyperfine, from Debian's packages when missing.
bench_install ripgrep=rg hyperfine=hyperfine

echo "tree: $TREE ($(find "$TREE" -type f | wc -l) files, $(du -sh "$TREE" | cut -f1)), $(nproc) cores"
command -v rg >/dev/null && echo "$(rg --version | head -n 1)"
echo

echo "== 1. in-process grep tool vs rg =="
cargo build --release -q -p gantry-fs --example grep_bench
pattern_args=()
for p in "${PATTERNS[@]}"; do pattern_args+=(--pattern "$p"); done
"$ROOT/target/release/examples/grep_bench" "$TREE" --runs "$RUNS" "${pattern_args[@]}"
echo

echo "== 2. gantry CLI vs rg under hyperfine =="
if [ -n "${GANTRY_BENCH_NO_CLI:-}" ]; then
    echo "skipped (GANTRY_BENCH_NO_CLI)"
    exit 0
fi
if ! command -v hyperfine >/dev/null || ! command -v rg >/dev/null; then
    echo "skipped: hyperfine and rg are both needed"
    exit 0
fi
GANTRY="$ROOT/target/release/gantry"
# Rebuilt so the CLI runs the same grep as the in-process comparison.
if ! cargo build --release -q -p gantry; then
    echo "could not build the gantry CLI; timing the binary already there, if any" >&2
fi
if ! "$GANTRY" --root "$TREE" call grep '{"pattern":"PhantomPinned"}' >/dev/null 2>&1; then
    echo "skipped: '$GANTRY --root TREE call grep' did not succeed (is the fs family registered in the CLI?)"
    exit 0
fi

SUMMARY=$(mktemp)
JSON=$(mktemp)
trap 'rm -f "$SUMMARY" "$JSON"' EXIT
for p in "${PATTERNS[@]}"; do
    # The regex as a JSON string: backslashes and quotes escaped.
    escaped=${p//\\/\\\\}
    escaped=${escaped//\"/\\\"}
    args="{\"pattern\":\"$escaped\",\"case_insensitive\":false}"
    gantry_cmd="$(printf '%q ' "$GANTRY" --root "$TREE" call grep "$args")"
    rg_cmd="$(printf '%q ' rg -n "$p" "$TREE")"
    # Smart case on both sides: grep's default, and `rg -S`.
    smart_args="{\"pattern\":\"$escaped\"}"
    gantry_smart_cmd="$(printf '%q ' "$GANTRY" --root "$TREE" call grep "$smart_args")"
    rg_smart_cmd="$(printf '%q ' rg -S -n "$p" "$TREE")"
    echo "-- $p"
    # sed reads to the end, so the CLI never writes into a closed pipe.
    echo "gantry: $("$GANTRY" --root "$TREE" call grep "$args" | sed -n 1p)"
    echo "rg:     $(rg -n "$p" "$TREE" | wc -l) lines"
    hyperfine --warmup 2 --runs "$RUNS" --export-json "$JSON" \
        --command-name gantry "$gantry_cmd" \
        --command-name rg "$rg_cmd" \
        --command-name "gantry (smart case)" "$gantry_smart_cmd" \
        --command-name "rg -S" "$rg_smart_cmd"
    python3 - "$JSON" "$p" >>"$SUMMARY" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
for (g, rg), case in (((r[0], r[1]), "exact"), ((r[2], r[3]), "smart")):
    print("%-16s %-6s %10.1f ms %10.1f ms %8.2fx %10.2fx" % (
        sys.argv[2], case, g["mean"] * 1000, rg["mean"] * 1000,
        g["mean"] / rg["mean"], g["median"] / rg["median"]))
EOF
    echo
done
echo "== CLI summary (gantry process start-up included) =="
printf '%-16s %-6s %13s %13s %9s %11s\n' regex case "gantry mean" "rg mean" "ratio" "ratio(med)"
cat "$SUMMARY"

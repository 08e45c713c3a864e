#!/usr/bin/env bash
# Benchmarks Gantry's `ast_grep` against the ast-grep CLI (`ast-grep run`,
# PyPI ast-grep-cli 0.51.1) on a large real corpus, side by side in one
# run, and checks the match sets are equal (issue 4, "Figures").
#
#   bench/ast.sh
#
# Environment:
#   GANTRY_AST_CORPUS   folder to search (default ~/.cargo/registry/src: the
#                       Rust sources of the dependency tree)
#   GANTRY_AST_LANG     language of the corpus (default rust)
#   GANTRY_AST_CACHE_MB cap of gantry's parse cache in MiB (default: the
#                       tool's default, 512)
#
# Rows:
#   cold common  `$X.unwrap()`, first call of a fresh process
#   cold rare    `$X.frobnicate_the_gizmo($Y)` (matches nothing), first call
#                of another fresh process
#   warm second  `$X.expect($Y)`, the second call of the first process (the
#                run's parse cache holds what the first call parsed)
#   warm repeat  `$X.unwrap()` again, third call of the first process
# ast-grep has no warm mode: every row is a fresh `ast-grep run`.
# Gantry's times are measured around `Run::call` inside the process
# (crates/ast/examples/ast_bench.rs), the peer's around the whole process;
# the cold rows also give gantry's whole-process time. Both report every
# match: gantry's result is cut at the model's 256 KiB budget, so the
# example gathers its match locations afterwards, untimed, folder by
# folder, and checks they add up to the timed call's count. The OS page cache is warmed first, so "cold" means no parse done
# yet, not disk reads.
#
# Note: /usr/bin/sg on Debian is shadow-utils' `sg`; the peer is called as
# `ast-grep` explicitly.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

CORPUS=${GANTRY_AST_CORPUS:-${CARGO_HOME:-$HOME/.cargo}/registry/src}
LANG_ID=${GANTRY_AST_LANG:-rust}
if [ ! -d "$CORPUS" ]; then
    echo "no corpus at $CORPUS: run 'cargo build' once or set GANTRY_AST_CORPUS" >&2
    exit 1
fi
CORPUS=$(cd "$CORPUS" && pwd -P)

if ! command -v ast-grep >/dev/null || ! ast-grep --version | grep -q '0\.51\.'; then
    echo "installing ast-grep-cli==0.51.1 from PyPI" >&2
    python3 -m pip install -q ast-grep-cli==0.51.1
fi

cargo build --release -q -p gantry-ast --example ast_bench
BENCH="$ROOT/target/release/examples/ast_bench"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "corpus: $CORPUS ($LANG_ID), $(nproc) cores, $(ast-grep --version)"
# Warm the page cache for both sides.
find "$CORPUS" -type f -name '*.rs' -print0 | xargs -0 cat >/dev/null

python3 - "$BENCH" "$CORPUS" "$LANG_ID" "$OUT" <<'EOF'
import json, os, subprocess, sys, time

bench, corpus, lang, out = sys.argv[1:]
common, second, rare = "$X.unwrap()", "$X.expect($Y)", "$X.frobnicate_the_gizmo($Y)"

def gantry(patterns, tag):
    folder = os.path.join(out, tag)
    os.makedirs(folder)
    started = time.perf_counter()
    result = subprocess.run([bench, corpus, lang, folder, *patterns],
                            capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    rows, notes = [], []
    for line in result.stdout.splitlines():
        if line.startswith("# "):
            notes.append(line[2:])
        else:
            pattern, seconds, count = line.split("\t")
            rows.append((float(seconds), int(count)))
    sets = []
    for index in range(len(patterns)):
        with open(os.path.join(folder, f"gantry-{index}.txt")) as f:
            sets.append({l for l in f.read().splitlines() if l})
    return rows, sets, wall, notes

def peer(pattern):
    started = time.perf_counter()
    result = subprocess.run(["ast-grep", "run", "-p", pattern, "-l", lang, "--json=stream", "."],
                            cwd=corpus, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    found = set()
    for line in result.stdout.splitlines():
        match = json.loads(line)
        path = match["file"].removeprefix("./")
        start = match["range"]["start"]
        found.add(f"{path}:{start['line'] + 1}:{start['column'] + 1}")
    return seconds, found

(g_common, g_second, g_repeat), (s_common, s_second, s_repeat), wall_first, notes = \
    gantry([common, second, common], "first")
(g_rare,), (s_rare,), wall_rare, _ = gantry([rare], "rare")
p_common, sg_common = peer(common)
p_second, sg_second = peer(second)
p_rare, sg_rare = peer(rare)

def compare(ours, theirs):
    if ours == theirs:
        return "equal"
    only_ours, only_theirs = sorted(ours - theirs), sorted(theirs - ours)
    text = f"differ: {len(only_ours)} only gantry, {len(only_theirs)} only ast-grep"
    for example in only_ours[:3]:
        text += f"\n      only gantry:   {example}"
    for example in only_theirs[:3]:
        text += f"\n      only ast-grep: {example}"
    return text

print(f"{'row':<12} {'pattern':<30} {'gantry s':>9} {'ast-grep s':>10} {'ratio':>7} {'goal':>6}  match locations (gantry / ast-grep)")
rows = [
    ("cold common", common, g_common[0], p_common, 1.0, len(s_common), len(sg_common), s_common, sg_common),
    ("cold rare", rare, g_rare[0], p_rare, 1 / 50, len(s_rare), len(sg_rare), s_rare, sg_rare),
    ("warm second", second, g_second[0], p_second, 1 / 5, len(s_second), len(sg_second), s_second, sg_second),
    ("warm repeat", common, g_repeat[0], p_common, 1 / 5, len(s_repeat), len(sg_common), s_repeat, sg_common),
]
for name, pattern, ours, theirs, goal, count, peer_count, ours_set, theirs_set in rows:
    ratio = ours / theirs
    verdict = "ok" if ratio <= goal else "MISSED"
    print(f"{name:<12} {pattern:<30} {ours:>9.3f} {theirs:>10.3f} {ratio:>7.3f} {goal:>6.3f}  "
          f"{count} / {peer_count}  {verdict}; sets {compare(ours_set, theirs_set)}")
print(f"whole process, gantry: first process {wall_first:.3f} s (3 calls), rare-pattern process {wall_rare:.3f} s")
for note in notes:
    print(f"memory: {note}")
EOF

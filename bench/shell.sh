#!/usr/bin/env bash
# What the reaper costs and what it buys, side by side in one run: the
# round trip of the shell tool running `true` (and a bare spawn and wait
# of `true`) with no reaper, under gantry-reap and under the gantry binary
# itself (`gantry __reap`, what an install without gantry-reap uses); and
# the time from a timeout to every descendant gone (a setsid child, a
# background child, the command), which without a reaper is never for the
# setsid child. Rounds alternate, so load on the machine hits all alike.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gantry -p gantry-process --bins
cargo build --release -q -p gantry-shell --example reaper_bench
bench=target/release/examples/reaper_bench
for round in 1 2 3; do
  echo "round $round"
  "$bench" direct
  "$bench" reaper target/release/gantry-reap
  "$bench" reaper target/release/gantry
done

#!/usr/bin/env bash
# Times 1,000 `edit` and 1,000 `apply_patch` calls on a 10,000-line file
# through Run::call (release build), and the share of each call spent in the
# write path (SPEC §3: hash check, temp files and fsyncs, journal, renames).
#
#   bench/edit.sh [calls]
#
# The workspace and Gantry's state directory are temp dirs under $TMPDIR
# (default /tmp): the figures are those of that filesystem's fsync.
# No peer is run: no other tool offers the same all-or-nothing, journaled
# write to compare with.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "filesystem: $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2 " (" $1 ")"}')"
cargo run --release -q -p gantry-edit --example edit_bench -- "$@"

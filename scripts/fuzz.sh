#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets) with libFuzzer, one after the
# other, each for SECONDS (default 600), with the limits of a finding: a
# panic, an input over 1 s, or over 2 GB. The corpus each grows stays in
# fuzz/corpus/<target> (minimise it with `cargo fuzz cmin` before keeping
# it); an input that breaks a promise is copied to fuzz/regressions/<target>,
# which tests/corpora.rs replays on stable in every test run.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# Needs a nightly toolchain (`rustup toolchain list`) for the sanitizer
# flags libFuzzer builds with; installs cargo-fuzz once.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
# The workspace's release profile is for the shipped binary (size, one
# fat-LTO unit); fuzz binaries want speed and a short build.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=3 CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_STRIP=false
targets=("$@")
if [ ${#targets[@]} = 0 ]; then
  mapfile -t targets < <(ls fuzz/fuzz_targets | sed 's/\.rs$//')
fi
failed=0
for target in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$target" "fuzz/regressions/$target"
  log="$(mktemp)"
  if cargo +nightly fuzz run --features libfuzzer "$target" -- \
    -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 >"$log" 2>&1; then
    echo "fuzz: ok   $target: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$log" | tail -1)"
  else
    echo "fuzz: FAIL $target (log: $log)"
    for artifact in fuzz/artifacts/"$target"/*; do
      [ -f "$artifact" ] && cp "$artifact" "fuzz/regressions/$target/"
    done
    failed=1
  fi
done
exit "$failed"

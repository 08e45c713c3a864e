#!/usr/bin/env bash
# Installs (idempotently) what the sandbox tests (crates/process/tests/sandbox.rs,
# crates/shell/tests/sandbox.rs) run inside the sandbox: python3 with
# setuptools and wheel (a `pip install --target` of a local package builds a
# wheel) and a Rust toolchain (a `cargo build` of a tiny crate, offline).
# The kernel side (Landlock ABI 4) cannot be installed: the tests fail
# without it unless GANTRY_SKIP_SANDBOX=1.
set -euo pipefail

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

if ! command -v python3 >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 python3-pip
fi
if ! python3 -c 'import setuptools, wheel' >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check setuptools wheel
fi

python3 -c 'import setuptools, wheel; print("setuptools", setuptools.__version__, "wheel", wheel.__version__)'
cargo --version
abi="$(python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))' 2>/dev/null || echo -1)"
echo "Landlock ABI of this kernel: $abi (the sandbox tests need 4)"

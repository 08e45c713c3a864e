#!/usr/bin/env bash
# Installs (idempotently) the language servers the gantry-lsp tests use:
# basedpyright (PyPI, bundles its node), typescript 6 + typescript-language-server
# (npm, global prefix) and clangd (Debian's clangd-19). rust-analyzer, gopls and
# the Dart server have no usable package here: their table entries are covered
# by detection and status tests only.
set -euo pipefail

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

if ! command -v basedpyright-langserver >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check basedpyright
fi

# typescript-language-server drives tsserver, which TypeScript 7 (the native
# port) no longer ships: pin the last line that has it.
tsserver="$(npm root -g 2>/dev/null)/typescript/lib/tsserver.js"
if ! command -v typescript-language-server >/dev/null 2>&1 || [ ! -f "$tsserver" ]; then
  $sudo npm install -g --silent 'typescript@^6' typescript-language-server
fi

if ! compgen -c | grep -qE '^clangd(-[0-9]+)?$'; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clangd-19 || \
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clangd
fi

# Report what the tests will find.
for bin in basedpyright-langserver typescript-language-server tsc; do
  printf '%-28s %s\n' "$bin" "$(command -v "$bin" || echo MISSING)"
done
printf '%-28s %s\n' clangd "$(compgen -c | grep -E '^clangd(-[0-9]+)?$' | sort -u | tr '\n' ' ')"
if rust-analyzer --version >/dev/null 2>&1; then
  printf '%-28s %s\n' rust-analyzer "$(rust-analyzer --version)"
else
  printf '%-28s %s\n' rust-analyzer "not usable (the rustup component is not installed; status tests only)"
fi

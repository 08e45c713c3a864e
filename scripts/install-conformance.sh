#!/usr/bin/env bash
# Installs the official MCP conformance suite and the Node it needs (>= 22,
# from npm's `node@22` package, so the machine's own Node is left alone)
# into the user's cache, never the checkout. Idempotent: a second run only
# checks the versions. Prints the directory whose bin/ holds `conformance`.
set -euo pipefail
VERSION=0.1.16
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/gantry-test/conformance"
mkdir -p "$DIR"
if ! [ -x "$DIR/node_modules/.bin/conformance" ] \
  || ! grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null; then
  npm install --prefix "$DIR" --no-audit --no-fund --silent \
    node@22 "@modelcontextprotocol/conformance@$VERSION" >&2
fi
echo "$DIR/node_modules/.bin"

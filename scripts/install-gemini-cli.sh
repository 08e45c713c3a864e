#!/usr/bin/env bash
# Installs Gemini CLI, a real MCP client the end-to-end tests drive over
# streamable HTTP (tests/e2e/test_gemini_cli.py), from npm into the user's
# cache, never the checkout or the global prefix. Its engine requirement
# (node >= 20) is met by the machine's own Node. Idempotent: a second run
# only checks the version. Prints the directory whose bin/ holds `gemini`.
set -euo pipefail
VERSION=0.61.0
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/gantry-test/gemini"
mkdir -p "$DIR"
if ! [ -x "$DIR/node_modules/.bin/gemini" ] \
  || ! grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/@google/gemini-cli/package.json" 2>/dev/null; then
  npm install --prefix "$DIR" --no-audit --no-fund --silent "@google/gemini-cli@$VERSION" >&2
fi
echo "$DIR/node_modules/.bin"

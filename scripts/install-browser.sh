#!/usr/bin/env bash
# Installs what the browser test of `gantry view` (tests/e2e/test_view.py)
# drives: Debian's Chromium, and playwright-core from npm into the user's
# cache, never the checkout or the global prefix. Playwright's own browser
# downloads are never used (`npx playwright install` is not run): the test
# launches /usr/bin/chromium. Idempotent: a second run only checks.
# Prints the directory whose node_modules/ holds playwright-core (the
# test reads it from GANTRY_BROWSER_DIR).
set -euo pipefail
VERSION=1.64.1
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/gantry-test/browser"

if ! [ -x /usr/bin/chromium ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
fi

mkdir -p "$DIR"
if ! grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/playwright-core/package.json" 2>/dev/null; then
  npm install --prefix "$DIR" --no-audit --no-fund --silent "playwright-core@$VERSION" >&2
fi
echo "$DIR"

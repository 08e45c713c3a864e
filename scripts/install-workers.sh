#!/usr/bin/env bash
# Installs (idempotently) what the gantry-workers tests and bench/workers.sh
# use: python3 (3.9 or newer), which runs the scripted OpenAI-compatible
# peer (stdlib only) and the bench's client (os.pidfd_open).
set -euo pipefail

if ! command -v python3 >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3
fi
printf '%-8s %s\n' python3 "$(python3 --version 2>&1)"

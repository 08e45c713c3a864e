#!/usr/bin/env bash
# Installs (idempotently) what the gantry-kernel tests and bench/kernel.sh
# use: pandas, matplotlib and IPython for the system python3 (the tests'
# kernels; IPython's own transformer is tested beside the fallback
# rewriter), ipykernel and jupyter_client (the bench's peer), and node.
set -euo pipefail

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

if ! python3 -c 'import pandas, matplotlib, IPython, ipykernel, jupyter_client' 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check \
    pandas matplotlib ipython ipykernel jupyter_client
fi
# The tests build a fixture .venv with `python3 -m venv`.
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv
fi
if ! command -v node >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs
fi

printf '%-16s %s\n' python3 "$(python3 --version 2>&1)" node "$(node --version)"
python3 -c 'import pandas, matplotlib, IPython; print("pandas", pandas.__version__, "matplotlib", matplotlib.__version__, "IPython", IPython.__version__)'

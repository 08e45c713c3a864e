#!/usr/bin/env bash
# Installs (idempotently) the MCP servers the gantry-discovery tests bridge,
# none of them written by this project: @modelcontextprotocol/server-everything
# and @modelcontextprotocol/server-filesystem (npm, global prefix, so their
# binaries are on PATH), and the Python `mcp` SDK the streamable HTTP test
# server is written with (PyPI).
set -euo pipefail

sudo=""
[ "$(id -u)" -ne 0 ] && [ ! -w "$(npm prefix -g)" ] && sudo="sudo"

missing=()
command -v mcp-server-everything >/dev/null 2>&1 || missing+=(@modelcontextprotocol/server-everything)
command -v mcp-server-filesystem >/dev/null 2>&1 || missing+=(@modelcontextprotocol/server-filesystem)
if [ ${#missing[@]} -gt 0 ]; then
  $sudo npm install -g --silent "${missing[@]}"
fi

python3 -c 'import mcp.server.mcpserver' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check 'mcp>=2.3'

# Report what the tests will find.
for bin in mcp-server-everything mcp-server-filesystem; do
  printf '%-24s %s\n' "$bin" "$(command -v "$bin" || echo MISSING)"
done
printf '%-24s %s\n' "python mcp" "$(python3 -c 'import mcp, importlib.metadata as m; print(m.version("mcp"))')"

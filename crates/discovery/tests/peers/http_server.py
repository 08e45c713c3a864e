"""A streamable HTTP MCP server written with the official Python SDK, for
gantry-discovery's tests: `python3 http_server.py PORT [START_DELAY_S]`.

Tools: `shout` (read-only: upper-cases its text), `crash` (ends the
process, so a test sees a server die), `slow` (answers after `seconds`).
The optional delay holds back the listening socket, as a slow server's
start-up would."""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

port = int(sys.argv[1])
if len(sys.argv) > 2:
    time.sleep(float(sys.argv[2]))

server = MCPServer("py-http")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


@server.tool()
def crash() -> str:
    """Ends the server process."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float) -> str:
    """Answers after a while."""
    import anyio

    await anyio.sleep(seconds)
    return "done"


server.run("streamable-http", host="127.0.0.1", port=port)

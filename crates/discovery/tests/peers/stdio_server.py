"""A stdio MCP server written with the official Python SDK, for
gantry-discovery's tests: `python3 stdio_server.py [START_DELAY_S]`.

Tools: `crash` (ends the process with code 3 after writing to stderr),
`write` (writes a file, to see the sandbox refuse it), `fetch` (a URL,
through the proxy the environment names), `grow` (adds a
tool `grown` and sends `tools/list_changed`),
`pid` (the process id, the working directory and a token of the process's
own, to tell a restarted server from the first). The
optional delay holds back start-up, as a slow server's would."""

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

if len(sys.argv) > 1:
    time.sleep(float(sys.argv[1]))

server = MCPServer("py-stdio")


@server.tool()
def crash() -> str:
    """Ends the server process."""
    print("the crash tool was called: exiting on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def fetch(url: str) -> str:
    """Fetches a URL as any client would (through the proxy the
    environment names), to see the sandbox's network policy."""
    import urllib.error
    import urllib.request

    try:
        return urllib.request.urlopen(url, timeout=20).read().decode()
    except urllib.error.HTTPError as e:
        return f"refused {e.code}: {e.read().decode()}"


@server.tool()
def write(path: str) -> str:
    """Writes a file (to see the sandbox refuse it)."""
    with open(path, "w") as out:
        out.write("written")
    return "wrote " + path


def grown() -> str:
    """A tool added at run time."""
    return "grown"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `grown` and says the tool list changed."""
    server.add_tool(grown)
    await ctx.session.send_tool_list_changed()
    return "grew"


# Which process this is: in its own PID namespace every server is pid 2,
# so the pid alone does not tell a restarted server from the first; when it
# started (in clock ticks after boot) reads the same inside and out.
with open("/proc/self/stat") as stat:
    STARTED = stat.read().rsplit(")", 1)[1].split()[19]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> str:
    """This server's process id, its working directory and when it started,
    one a line."""
    return f"{os.getpid()}\n{os.getcwd()}\n{STARTED}"


server.run("stdio")

"""Starts one installed Gantry as an MCP client would (the official Python
SDK over stdio), lists its tools and reads a file through `read_file`.
Prints the seconds from the launch to the first `tools/list` answer.

Usage: python3 smoke.py WORKSPACE COMMAND [ARG...]
The command is run as given, with `mcp --root WORKSPACE` appended unless
the arguments already hold `mcp`.
"""

import asyncio
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

MARKER = "gantry dist smoke: the file's own words"


async def main() -> None:
    workspace, *command = sys.argv[1:]
    args = command[1:]
    if "mcp" not in args:
        args += ["mcp", "--root", workspace]
    with open(os.path.join(workspace, "hello.txt"), "w", encoding="utf-8") as file:
        file.write(MARKER + "\n")
    started = time.perf_counter()
    params = StdioServerParameters(command=command[0], args=args, env=dict(os.environ), cwd=workspace)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            listed = time.perf_counter() - started
            names = {tool.name for tool in tools.tools}
            missing = {"read_file", "grep", "shell", "ast_grep"} - names
            if missing:
                sys.exit(f"smoke: tools missing from tools/list: {sorted(missing)}")
            result = await session.call_tool("read_file", {"path": "hello.txt"})
            text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
            if result.is_error or MARKER not in text:
                sys.exit(f"smoke: read_file did not give the file back: {text!r}")
    print(f"{listed:.3f}")


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(), timeout=120))

"""A confined command's network through a real MCP client: a connection to
a host the policy does not list is asked about through the client's
elicitation, once per run, and refused when the person refuses. A loopback
HTTP server stands in for the host; its name is mapped to loopback for
Gantry's proxy (GANTRY_NETWORK_MAP), never to any other address."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp import types

from conftest import legacy_session, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    (served / "x.txt").write_text("reached the stand-in\n")
    server = subprocess.Popen(
        [sys.executable, "-u", "-c",
         "import functools, http.server, sys\n"
         "handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n"
         "server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)\n"
         "print(server.server_address[1], flush=True)\n"
         "server.serve_forever()", str(served)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    port = int(server.stdout.readline())
    monkeypatch.setenv("GANTRY_NETWORK_MAP", "pkg.example.org=127.0.0.1,other.example.org=127.0.0.1")
    yield port
    server.kill()
    server.wait()


async def test_a_new_host_is_asked_about_through_elicitation(workspace: Path, stand_in: int):
    asked: list[str] = []

    async def person(context, params):
        asked.append(params.message)
        host = "pkg.example.org" if "pkg.example.org" in params.message else "other"
        choice = "Allow for this run" if host == "pkg.example.org" else "Refuse"
        return types.ElicitResult(action="accept", content={"choice": choice})

    curl = "curl -sS http://{}:%d/x.txt" % stand_in
    async with legacy_session(workspace, elicitation=person) as session:
        for _ in range(2):
            result = await session.call_tool("shell", {"command": curl.format("pkg.example.org")})
            assert "reached the stand-in" in text_of(result), text_of(result)
        refused = await session.call_tool("shell", {"command": curl.format("other.example.org")})
        assert f"refused the command's connection to other.example.org:{stand_in}" in text_of(refused), text_of(refused)
        status = await session.call_tool("shell", {"command": curl.format("other.example.org")})
        assert "refused" in text_of(status)
    assert len(asked) == 2, asked
    assert f"connect to pkg.example.org:{stand_in}" in asked[0]


async def test_without_elicitation_a_new_host_is_refused(workspace: Path, stand_in: int):
    async with legacy_session(workspace) as session:
        result = await session.call_tool(
            "shell", {"command": f"curl -sS http://pkg.example.org:{stand_in}/x.txt"}
        )
    text = text_of(result)
    assert "reached the stand-in" not in text, text
    assert "no person could be asked" in text and "`sandbox.network.allow`" in text, text

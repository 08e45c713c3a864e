"""`gantry mcp --http`: streamable HTTP, one run per MCP session, Origin
checked, bearer token required beyond loopback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import httpx2
import mcp
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import process_exited, env_for, free_port, gantry_bin, text_of

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_legacy_sessions_are_separate_runs(workspace: Path, http_server):
    _, url = http_server()

    async def accept(context, params):
        return types.ElicitResult(action="accept", content={"choice": "yes"})

    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write, elicitation_callback=accept) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"ls", "read_file", "glob", "shell", "ask_user"} <= names
            read = await session.call_tool("read_file", {"path": "README.md"})
            assert "A small workspace." in text_of(read)
            bad = await session.call_tool("read_file", {"path": "README.md", "limit": 0})
            assert bad.is_error and "limit: expected integer >= 1, got 0" in text_of(bad)
            started = await session.call_tool("shell", {"command": "sleep 300", "is_background": True})
            assert "bg_1" in text_of(started)
            answered = await session.call_tool(
                "ask_user", {"question": "Go?", "options": [{"label": "yes"}, {"label": "no"}]}
            )
            assert "1. yes" in text_of(answered)
            # A second session is its own run: it has no background job bg_1.
            async with streamable_http_client(url) as (read2, write2):
                async with ClientSession(read2, write2) as other:
                    await other.initialize()
                    names2 = {t.name for t in (await other.list_tools()).tools}
                    assert "ask_user" not in names2, "this client declared no elicitation"
                    poll = await other.call_tool("shell", {"handle": "bg_1"})
                    assert poll.is_error and "no background job" in text_of(poll)
            poll = await session.call_tool("shell", {"handle": "bg_1", "kill": True})
            assert "killed by signal 9" in text_of(poll)


async def test_modern_client_over_http(workspace: Path, http_server):
    _, url = http_server("--tier", "read")
    async with mcp.Client(url) as client:
        assert client.protocol_version == "2026-07-28"
        names = {t.name for t in (await client.list_tools()).tools}
        assert "read_file" in names and "shell" not in names
        result = await client.call_tool("glob", {"pattern": "*.md"})
        assert "README.md" in text_of(result)


async def test_foreign_origin_is_refused(workspace: Path, http_server):
    _, url = http_server()
    async with httpx2.AsyncClient() as http:
        evil = await http.post(url, json=INIT, headers={**HEADERS, "Origin": "http://evil.example"})
        assert evil.status_code == 403, evil.text
        local = await http.post(url, json=INIT, headers={**HEADERS, "Origin": "http://localhost:5173"})
        assert local.status_code == 200, local.text
        rebound = await http.post(url, json=INIT, headers={**HEADERS, "Host": "evil.example"})
        assert rebound.status_code in (403, 421), rebound.text


async def test_token_required_beyond_loopback(workspace: Path, http_server):
    port = free_port()
    refused = subprocess.run(
        [gantry_bin(), "mcp", "--root", str(workspace), "--http", f"0.0.0.0:{port}"],
        env={k: v for k, v in env_for(workspace.parent).items() if k != "GANTRY_HTTP_TOKEN"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode != 0
    assert "bearer token" in refused.stderr

    _, url = http_server(host="0.0.0.0", env_extra={"GANTRY_HTTP_TOKEN": "s3cret"})
    async with httpx2.AsyncClient() as http:
        anonymous = await http.post(url, json=INIT, headers=HEADERS)
        assert anonymous.status_code == 401
        wrong = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        right = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer s3cret"})
        assert right.status_code == 200, right.text


async def test_idle_session_ends_its_run(workspace: Path, http_server):
    """A session nobody talks to expires, and its run's processes go with it."""
    _, url = http_server("--idle-timeout", "1")
    async with streamable_http_client(url, terminate_on_close=False) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("shell", {"command": "echo $$ > idle.pid; sleep 300", "is_background": True})
    pid_file = workspace / "idle.pid"
    with anyio.fail_after(10):
        while not pid_file.exists() or not pid_file.read_text().strip():
            await anyio.sleep(0.02)
    pid = int(pid_file.read_text())
    with anyio.fail_after(20):
        await process_exited(pid)



async def test_stateless_requests_share_one_run(workspace: Path, http_server):
    """2026-07-28 has no sessions: stateless requests share the server's run,
    so a background job started in one call is there for the next, even
    from a new connection, and it ends when the server does."""
    proc, url = http_server()
    async with mcp.Client(url) as client:
        assert client.protocol_version == "2026-07-28"
        started = await client.call_tool("shell", {"command": "echo $$ > shared.pid; sleep 300", "is_background": True})
        assert "bg_1" in text_of(started)
    async with mcp.Client(url) as again:
        polled = await again.call_tool("shell", {"handle": "bg_1"})
        assert not polled.is_error and "running for" in text_of(polled), text_of(polled)
    pid_file = workspace / "shared.pid"
    with anyio.fail_after(10):
        while not pid_file.exists() or not pid_file.read_text().strip():
            await anyio.sleep(0.02)
    pid = int(pid_file.read_text())
    proc.terminate()
    with anyio.fail_after(20):
        await process_exited(pid)


async def test_malformed_bodies_get_json_rpc_errors(workspace: Path, http_server):
    _, url = http_server()
    cases = [
        (b"{not json", None, -32700),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', None, -32600),
        (b'{"jsonrpc":"2.0","id":2}', 2, -32600),
        (b'{"jsonrpc":"2.0","id":3,"method":"initialize"}', 3, -32602),
        (b'{"jsonrpc":"2.0","id":4,"method":"tools/call",' + b'"params":' + b"[" * 300 + b"]" * 300 + b"}", 4, -32700),
    ]
    async with httpx2.AsyncClient() as client:
        for body, id, code in cases:
            response = await client.post(url, content=body, headers=HEADERS)
            assert response.status_code == 400, (body[:60], response.status_code, response.text)
            assert response.headers["content-type"].startswith("application/json")
            reply = response.json()
            assert reply["id"] == id and reply["error"]["code"] == code, (body[:60], reply)


def _modern(url: str, token: str | None = None, **kwargs):
    """`mcp.Client` (protocol 2026-07-28) over HTTP, with a bearer token."""
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return mcp.Client(streamable_http_client(url, http_client=http), **kwargs)


async def test_ask_user_follows_each_requests_capabilities(workspace: Path, http_server):
    """Stateless requests share a run, yet each sees `ask_user` only when it
    declared elicitation, and one that did not is refused at once."""
    _, url = http_server()

    async def answer(context, params):
        return types.ElicitResult(action="accept", content={"choice": "b"})

    async with _modern(url, elicitation_callback=answer) as asking:
        assert asking.protocol_version == "2026-07-28"
        names = {t.name for t in (await asking.list_tools()).tools}
        assert "ask_user" in names
        answered = await asking.call_tool("ask_user", {"question": "Pick", "options": [{"label": "a"}, {"label": "b"}]})
        assert "2. b" in text_of(answered), text_of(answered)
    async with _modern(url) as mute:
        names = {t.name for t in (await mute.list_tools()).tools}
        assert "ask_user" not in names and "read_file" in names
        refused = await mute.call_tool("ask_user", {"question": "Pick"})
        assert refused.is_error and "did not declare elicitation" in text_of(refused)


async def test_each_bearer_token_gets_its_own_stateless_run(workspace: Path, http_server):
    _, url = http_server("--token", "alpha", "--token", "beta", "--idle-timeout", "2")
    async with _modern(url, "alpha") as alpha:
        started = await alpha.call_tool("shell", {"command": "echo $$ > alpha.pid; sleep 300", "is_background": True})
        assert "bg_1" in text_of(started)
    async with _modern(url, "beta") as beta:
        polled = await beta.call_tool("shell", {"handle": "bg_1"})
        assert polled.is_error and "no background job" in text_of(polled), text_of(polled)
        killed = await beta.call_tool("shell", {"handle": "bg_1", "kill": True})
        assert killed.is_error
    async with _modern(url, "alpha") as again:
        polled = await again.call_tool("shell", {"handle": "bg_1"})
        assert not polled.is_error and "running for" in text_of(polled), text_of(polled)
    # Unused for the idle time, alpha's run ends, and its job with it.
    pid_file = workspace / "alpha.pid"
    with anyio.fail_after(10):
        while not pid_file.exists() or not pid_file.read_text().strip():
            await anyio.sleep(0.02)
    with anyio.fail_after(20):
        await process_exited(int(pid_file.read_text()))

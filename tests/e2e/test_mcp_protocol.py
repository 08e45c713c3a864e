"""What real clients hit at the protocol level, over both transports: no
resumability priming event (an event with empty data) to a client of a
revision before 2025-11-25; a JSON-RPC error body, with the right code, for
every malformed request; `subscriptions/listen` (2026-07-28) carrying the
tool-list changes discovery makes; the probes every client sends at start
answered, not warned about."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import mcp
import pytest

from conftest import REPO, RawStdio, env_for, gantry_bin, server_params, text_of

pytestmark = pytest.mark.anyio

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# A real MCP server written with the official Python SDK whose `grow` tool
# adds a tool and says so (crates/discovery's test peer).
PEER = REPO / "crates" / "discovery" / "tests" / "peers" / "stdio_server.py"


def initialize(version: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "gemini-cli-mcp-client", "version": "0.61.0"},
        },
    }


def events(stream: str) -> list[dict]:
    """The server-sent events of `stream`: each one's fields, `data` joined."""
    parsed = []
    for block in stream.replace("\r\n", "\n").split("\n\n"):
        fields: dict = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            fields[name] = fields[name] + "\n" + value if name in fields and name == "data" else value
        if fields:
            parsed.append(fields)
    return parsed


def bridge_peer(workspace: Path) -> None:
    """User settings that bridge the peer server as `py`."""
    home = workspace.parent / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(
        json.dumps({"mcpServers": {"py": {"command": sys.executable, "args": [str(PEER)]}}})
    )


async def test_initialize_is_answered_while_a_bridged_server_starts_and_the_first_list_waits_for_it(workspace: Path):
    """A bridged server starting slowly holds up neither the handshake nor
    the other tools; the first tools/list waits for it, so a client that
    lists once (Qwen Code) sees its tools, and no list change is announced
    for what that list already has."""
    home = workspace.parent / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(
        json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [str(PEER), "4"]}}})
    )
    raw = RawStdio(workspace)
    try:
        started = time.monotonic()
        reply = raw.initialize()
        answered = time.monotonic() - started
        assert "result" in reply, reply
        # The server sleeps 4 s before it serves.
        assert answered < 3, f"initialize waited {answered:.1f} s for the bridged server"
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        seen = []
        while True:
            message = raw.receive(timeout=30)
            if message.get("id") == 1:
                break
            seen.append(message)
        names = {tool["name"] for tool in message["result"]["tools"]}
        assert {"slow__pid", "read_file"} <= names, names
        assert not [m for m in seen if m.get("method") == "notifications/tools/list_changed"], seen
    finally:
        raw.close()


async def test_a_2025_06_18_client_never_receives_an_event_without_data(workspace: Path, http_server):
    """Gemini CLI's MCP library parses every event's data as JSON and drops
    the server at an empty one: the initialize, request and standalone
    streams of a 2025-06-18 session carry only events with data, while a
    2025-11-25 session still gets its priming event."""
    bridge_peer(workspace)
    server = http_server()
    async with server.http() as http:
        modern = await http.post(server.url, json=initialize("2025-11-25"), headers=HEADERS)
        assert any(e.get("data") == "" for e in events(modern.text)), "2025-11-25 is primed"

        response = await http.post(server.url, json=initialize("2025-06-18"), headers=HEADERS)
        assert response.status_code == 200, response.text
        seen = events(response.text)
        session = {
            **HEADERS,
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        await http.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        with anyio.fail_after(60):
            async with http.stream("GET", server.url, headers={**session, "Accept": "text/event-stream"}) as standalone:
                assert standalone.status_code == 200
                for id, method, params in [
                    (2, "tools/list", {}),
                    (3, "tools/call", {"name": "read_file", "arguments": {"path": "README.md"}}),
                    (4, "tools/call", {"name": "py__grow", "arguments": {}}),
                ]:
                    reply = await http.post(
                        server.url, json={"jsonrpc": "2.0", "id": id, "method": method, "params": params}, headers=session
                    )
                    assert reply.status_code == 200, reply.text
                    seen += events(reply.text)
                    assert any(json.loads(e["data"]).get("id") == id for e in seen if e.get("data")), reply.text
                # The grown tool is announced on the standalone stream: the
                # first event there is that notification, not a priming one.
                text = ""
                async for chunk in standalone.aiter_text():
                    text += chunk
                    if "\n\n" in text.lstrip(":\n"):
                        break
                first = events(text)[0]
                seen.append(first)
                assert json.loads(first["data"])["method"] == "notifications/tools/list_changed", first
    empty = [e for e in seen if not e.get("data")]
    assert not empty, f"events without data sent to a 2025-06-18 client: {empty}"


BROKEN_PARAMS = ["x", [1], 5]


async def test_malformed_requests_get_the_same_json_rpc_errors_over_both_transports(workspace: Path, http_server):
    """A string, an array or a number as `params` is -32602 with the
    request's id over HTTP as over stdio (rmcp's HTTP server said 415 in
    plain text); bad JSON is -32700; a wrong content type or `Accept` is
    -32600 in a JSON-RPC body."""
    raw = RawStdio(workspace)
    try:
        raw.initialize("probe", "2025-11-25")
        over_stdio = []
        for i, params in enumerate(BROKEN_PARAMS):
            for method in ["tools/call", "tools/list"]:
                reply = raw.request(10 + i, method, params)
                over_stdio.append((method, reply["id"], reply["error"]["code"]))
        raw.send_bytes(b'{"jsonrpc": "2.0", "id": 20, "method": \n')
        assert raw.receive()["error"]["code"] == -32700
    finally:
        raw.close()

    server = http_server()
    async with server.http() as http:
        started = await http.post(server.url, json=initialize("2025-11-25"), headers=HEADERS)
        session = {**HEADERS, "mcp-session-id": started.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        over_http = []
        for i, params in enumerate(BROKEN_PARAMS):
            for method in ["tools/call", "tools/list"]:
                body = {"jsonrpc": "2.0", "id": 10 + i, "method": method, "params": params}
                response = await http.post(server.url, json=body, headers=session)
                assert response.status_code == 400, response.text
                assert response.headers["content-type"].startswith("application/json"), response.text
                reply = response.json()
                over_http.append((method, reply["id"], reply["error"]["code"]))
                assert "expected" in reply["error"]["message"], reply
        assert over_http == over_stdio
        assert {code for _, _, code in over_http} == {-32602}

        response = await http.post(server.url, content=b'{"jsonrpc": "2.0", "id": 20, "method": ', headers=session)
        assert (response.status_code, response.json()["error"]["code"]) == (400, -32700)

        ping = {"jsonrpc": "2.0", "id": 21, "method": "ping"}
        for headers, status in [({"Content-Type": "text/plain"}, 415), ({"Accept": "text/plain"}, 406)]:
            response = await http.post(server.url, content=json.dumps(ping), headers={**session, **headers})
            assert response.status_code == status, response.text
            assert response.headers["content-type"].startswith("application/json"), response.text
            reply = response.json()
            assert reply["id"] == 21 and reply["error"]["code"] == -32600, reply
        # And the session still serves.
        response = await http.post(server.url, json=ping, headers=session)
        assert response.status_code == 200 and '"result"' in response.text, response.text


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_listen_carries_a_bridged_servers_tool_list_change(workspace: Path, http_server, transport: str):
    """On 2026-07-28 a tool-list change reaches a client only on its
    `subscriptions/listen` stream: a bridged server's new tool is heard
    there, and then listed."""
    bridge_peer(workspace)
    client = mcp.Client(server_params(workspace)) if transport == "stdio" else http_server().client()
    async with client:
        assert client.protocol_version == "2026-07-28"
        with anyio.fail_after(60):
            async with client.listen(tools_list_changed=True) as subscription:
                assert subscription.honored.tools_list_changed
                names = {t.name for t in (await client.list_tools()).tools}
                assert "py__grow" in names and "py__grown" not in names, names
                grew = await client.call_tool("py__grow", {})
                assert not grew.is_error, text_of(grew)
                heard = 0
                async for _event in subscription:
                    heard += 1
                    names = {t.name for t in (await client.list_tools()).tools}
                    if "py__grown" in names:
                        break
        assert heard >= 1
        grown = await client.call_tool("py__grown", {})
        assert text_of(grown) == "grown"


async def test_start_up_probes_get_empty_lists_and_no_warning(workspace: Path, tmp_path: Path, http_server):
    """Clients ask for prompts and resources at every start: Gantry declares
    both and answers empty lists, so nothing is logged at the default level."""
    log = tmp_path / "gantry.log"
    proc = subprocess.Popen(
        [gantry_bin(), "mcp", "--root", str(workspace), "--log-file", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env_for(workspace.parent),
    )
    lines = [
        initialize("2025-06-18"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/templates/list"},
    ]
    out, _ = proc.communicate("".join(json.dumps(m) + "\n" for m in lines).encode(), timeout=60)
    replies = {r["id"]: r for r in map(json.loads, out.decode().splitlines())}
    assert replies[1]["result"]["capabilities"].keys() >= {"prompts", "resources", "tools"}
    assert replies[2]["result"]["prompts"] == []
    assert replies[3]["result"]["resources"] == []
    assert replies[4]["result"]["resourceTemplates"] == []
    assert "WARN" not in log.read_text(), log.read_text()

    server = http_server()
    async with server.client() as client:
        assert (await client.list_prompts()).prompts == []
        assert (await client.list_resources()).resources == []

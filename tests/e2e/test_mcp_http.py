"""`gantry mcp --http`: streamable HTTP, one run per MCP session, Origin
checked, a bearer token required on loopback too (made and printed when
none is given), never needed on the command line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession

from conftest import process_exited, env_for, free_port, gantry_bin, pid_running, text_of, unique_sleep

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
    server = http_server()

    async def accept(context, params):
        return types.ElicitResult(action="accept", content={"choice": "yes"})

    async with server.streams() as (read, write):
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
            async with server.streams() as (read2, write2):
                async with ClientSession(read2, write2) as other:
                    await other.initialize()
                    names2 = {t.name for t in (await other.list_tools()).tools}
                    assert "ask_user" not in names2, "this client declared no elicitation"
                    poll = await other.call_tool("shell", {"handle": "bg_1"})
                    assert poll.is_error and "no background job" in text_of(poll)
            poll = await session.call_tool("shell", {"handle": "bg_1", "kill": True})
            assert "killed by signal 9" in text_of(poll)


async def test_modern_client_over_http(workspace: Path, http_server):
    server = http_server("--tier", "read")
    async with server.client() as client:
        assert client.protocol_version == "2026-07-28"
        names = {t.name for t in (await client.list_tools()).tools}
        assert "read_file" in names and "shell" not in names
        result = await client.call_tool("glob", {"pattern": "*.md"})
        assert "README.md" in text_of(result)


async def test_foreign_origin_is_refused(workspace: Path, http_server):
    server = http_server()
    url = server.url
    async with server.http() as http:
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

    url = http_server(host="0.0.0.0", token="s3cret").url
    async with httpx2.AsyncClient() as http:
        anonymous = await http.post(url, json=INIT, headers=HEADERS)
        assert anonymous.status_code == 401
        wrong = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        right = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer s3cret"})
        assert right.status_code == 200, right.text


async def test_idle_session_ends_its_run(workspace: Path, http_server):
    """A session nobody talks to expires, and its run's processes go with it."""
    server = http_server("--idle-timeout", "1")
    idle_sleep = unique_sleep()
    async with server.streams(terminate_on_close=False) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("shell", {"command": f"echo started > idle.pid; sleep {idle_sleep}", "is_background": True})
    pid_file = workspace / "idle.pid"
    with anyio.fail_after(10):
        while not pid_file.exists() or not pid_file.read_text().strip():
            await anyio.sleep(0.02)
    pid = pid_running(idle_sleep)
    with anyio.fail_after(20):
        await process_exited(pid)



async def test_stateless_requests_share_one_run(workspace: Path, http_server):
    """2026-07-28 has no sessions: stateless requests share the server's run,
    so a background job started in one call is there for the next, even
    from a new connection, and it ends when the server does."""
    server = http_server()
    shared_sleep = unique_sleep()
    async with server.client() as client:
        assert client.protocol_version == "2026-07-28"
        started = await client.call_tool("shell", {"command": f"echo started > shared.pid; sleep {shared_sleep}", "is_background": True})
        assert "bg_1" in text_of(started)
    async with server.client() as again:
        polled = await again.call_tool("shell", {"handle": "bg_1"})
        assert not polled.is_error and "running for" in text_of(polled), text_of(polled)
    pid_file = workspace / "shared.pid"
    with anyio.fail_after(10):
        while not pid_file.exists() or not pid_file.read_text().strip():
            await anyio.sleep(0.02)
    pid = pid_running(shared_sleep)
    server.proc.terminate()
    with anyio.fail_after(20):
        await process_exited(pid)


async def test_malformed_bodies_get_json_rpc_errors(workspace: Path, http_server):
    server = http_server()
    cases = [
        (b"{not json", None, -32700),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', None, -32600),
        (b'{"jsonrpc":"2.0","id":2}', 2, -32600),
        (b'{"jsonrpc":"2.0","id":3,"method":"initialize"}', 3, -32602),
        (b'{"jsonrpc":"2.0","id":4,"method":"tools/call",' + b'"params":' + b"[" * 300 + b"]" * 300 + b"}", 4, -32700),
    ]
    async with server.http() as client:
        for body, id, code in cases:
            response = await client.post(server.url, content=body, headers=HEADERS)
            assert response.status_code == 400, (body[:60], response.status_code, response.text)
            assert response.headers["content-type"].startswith("application/json")
            reply = response.json()
            assert reply["id"] == id and reply["error"]["code"] == code, (body[:60], reply)


async def test_ask_user_follows_each_requests_capabilities(workspace: Path, http_server):
    """Stateless requests share a run, yet each sees `ask_user` only when it
    declared elicitation, and one that did not is refused at once."""
    server = http_server()

    async def answer(context, params):
        return types.ElicitResult(action="accept", content={"choice": "b"})

    async with server.client(elicitation_callback=answer) as asking:
        assert asking.protocol_version == "2026-07-28"
        names = {t.name for t in (await asking.list_tools()).tools}
        assert "ask_user" in names
        answered = await asking.call_tool("ask_user", {"question": "Pick", "options": [{"label": "a"}, {"label": "b"}]})
        assert "2. b" in text_of(answered), text_of(answered)
    async with server.client() as mute:
        names = {t.name for t in (await mute.list_tools()).tools}
        assert "ask_user" not in names and "read_file" in names
        refused = await mute.call_tool("ask_user", {"question": "Pick"})
        assert refused.is_error and "did not declare elicitation" in text_of(refused)


async def test_each_bearer_token_gets_its_own_stateless_run(workspace: Path, http_server):
    tokens = workspace.parent / "tokens"
    tokens.write_text("# one per agent\nalpha\n\nbeta\n")
    server = http_server("--tokens-file", str(tokens), "--idle-timeout", "2", token=None)
    alpha_sleep = unique_sleep()
    async with server.client("alpha") as alpha:
        started = await alpha.call_tool("shell", {"command": f"echo started > alpha.pid; sleep {alpha_sleep}", "is_background": True})
        assert "bg_1" in text_of(started)
    async with server.client("beta") as beta:
        polled = await beta.call_tool("shell", {"handle": "bg_1"})
        assert polled.is_error and "no background job" in text_of(polled), text_of(polled)
        killed = await beta.call_tool("shell", {"handle": "bg_1", "kill": True})
        assert killed.is_error
    async with server.client("alpha") as again:
        polled = await again.call_tool("shell", {"handle": "bg_1"})
        assert not polled.is_error and "running for" in text_of(polled), text_of(polled)
    # Unused for the idle time, alpha's run ends, and its job with it.
    pid_file = workspace / "alpha.pid"
    with anyio.fail_after(10):
        while not pid_file.exists() or not pid_file.read_text().strip():
            await anyio.sleep(0.02)
    pid = pid_running(alpha_sleep)
    with anyio.fail_after(20):
        await process_exited(pid)


def _cmdline(proc: subprocess.Popen) -> bytes:
    return Path(f"/proc/{proc.pid}/cmdline").read_bytes()


async def _refused(http: httpx2.AsyncClient, url: str, headers: dict) -> None:
    response = await http.post(url, json=INIT, headers={**HEADERS, **headers})
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.headers["content-type"].startswith("application/json")
    reply = response.json()
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply
    assert "bearer token" in reply["error"]["message"], reply


async def test_loopback_requires_the_token(workspace: Path, http_server):
    """On loopback too, a request without the token, or with another, is
    refused before it reaches MCP; one with the token is served."""
    server = http_server()
    async with httpx2.AsyncClient(timeout=30) as http:
        await _refused(http, server.url, {})
        await _refused(http, server.url, {"Authorization": f"Bearer {server.token}x"})
        await _refused(http, server.url, {"Authorization": server.token})
        stream = await http.get(server.url, headers={"Accept": "text/event-stream"})
        assert stream.status_code == 401, stream.text
    async with server.client() as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "read_file" in names


async def test_a_token_is_made_and_printed_when_none_is_given(workspace: Path, http_server):
    """With no token, Gantry makes one, prints the header and MCP settings
    a client pastes, and keeps it in no argv, environment or file."""
    server = http_server(token=None)
    header = re.search(r"^  Authorization: Bearer ([0-9a-f]{64})$", server.banner, re.M)
    assert header, server.banner
    token = header.group(1)
    settings = next(line for line in server.banner.splitlines() if "mcpServers" in line)
    entry = json.loads(settings)["mcpServers"]["gantry"]
    assert entry["url"] == server.url, settings
    assert entry["headers"] == {"Authorization": f"Bearer {token}"}, settings

    async with httpx2.AsyncClient(timeout=30) as http:
        await _refused(http, server.url, {})
    async with server.client(token) as client:
        read = await client.call_tool("read_file", {"path": "README.md"})
        assert "A small workspace." in text_of(read)

    assert token.encode() not in _cmdline(server.proc)
    assert token.encode() not in Path(f"/proc/{server.proc.pid}/environ").read_bytes()
    # Nothing was written that holds it: not the workspace, not Gantry's
    # home or state directories (all beneath the test's temporary folder).
    for path in workspace.parent.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert token.encode() not in path.read_bytes(), path
    # A second server makes a token of its own.
    other = http_server(token=None)
    assert token not in other.banner


async def test_no_token_keeps_loopback_open_with_a_warning(workspace: Path, http_server):
    server = http_server("--no-token", token=None)
    assert "warning: --no-token" in server.banner, server.banner
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(server.url, json=INIT, headers=HEADERS)
        assert response.status_code == 200, response.text


def test_no_token_is_refused_beyond_loopback_and_beside_a_token(workspace: Path):
    env = env_for(workspace.parent)
    beyond = subprocess.run(
        [gantry_bin(), "mcp", "--root", str(workspace), "--http", f"0.0.0.0:{free_port()}", "--no-token"],
        env=env, capture_output=True, text=True, timeout=30,
    )
    assert beyond.returncode != 0
    assert "--no-token is allowed on loopback only" in beyond.stderr, beyond.stderr
    both = subprocess.run(
        [gantry_bin(), "mcp", "--root", str(workspace), "--http", f"127.0.0.1:{free_port()}", "--no-token"],
        env={**env, "GANTRY_HTTP_TOKEN": "s3cret"}, capture_output=True, text=True, timeout=30,
    )
    assert both.returncode != 0
    assert "GANTRY_HTTP_TOKEN gives a token" in both.stderr, both.stderr


async def test_tokens_need_not_be_on_the_command_line(workspace: Path, http_server):
    """A token from the variable or from --tokens-file is not in Gantry's
    /proc/PID/cmdline; one from --token is, and Gantry warns of it."""
    from_env = http_server()
    assert from_env.token.encode() not in _cmdline(from_env.proc)
    assert "warning" not in from_env.banner, from_env.banner

    tokens = workspace.parent / "tokens"
    tokens.write_text("from-the-file\n")
    from_file = http_server("--tokens-file", str(tokens), token=None)
    assert b"from-the-file" not in _cmdline(from_file.proc)
    async with from_file.client("from-the-file") as client:
        assert (await client.list_tools()).tools

    tokens.write_text("# none yet\n\n")
    empty = subprocess.run(
        [gantry_bin(), "mcp", "--root", str(workspace), "--http", f"127.0.0.1:{free_port()}",
         "--tokens-file", str(tokens)],
        env=env_for(workspace.parent), capture_output=True, text=True, timeout=30,
    )
    assert empty.returncode != 0 and "holds no token" in empty.stderr, empty.stderr

    on_argv = http_server("--token", "on-the-argv", token=None)
    assert "warning: --token puts the token on the command line" in on_argv.banner, on_argv.banner
    async with on_argv.client("on-the-argv") as client:
        assert (await client.list_tools()).tools


async def test_a_command_gantry_runs_cannot_call_its_server(workspace: Path, http_server):
    """The attack the token and the command's own network close: a command
    run through `shell` looks for the token where it could find one (its
    own environment, Gantry's command line), and tries the loopback
    server directly and through the sandbox's proxy; it finds no token,
    sees no Gantry process, and reaches no server."""
    server = http_server()
    probe = workspace.parent / "probe.py"
    probe.write_text(
        "import json, os, sys, urllib.request, urllib.error\n"
        "url, pid = sys.argv[1], sys.argv[2]\n"
        "token = os.environ.get('GANTRY_HTTP_TOKEN', '')\n"
        "try:\n"
        "    argv = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')\n"
        "    print('argv:', [a.decode() for a in argv if a])\n"
        "except OSError:\n"
        "    print('argv: unseen')\n"
        "print('env token:', bool(token))\n"
        f"body = json.dumps({json.dumps(INIT)}).encode()\n"
        "proxy = os.environ.get('HTTP_PROXY', '')\n"
        "for name, proxies in [('direct', {}), ('proxy', {'http': proxy})]:\n"
        "    os.environ['no_proxy'] = os.environ['NO_PROXY'] = ''\n"
        f"    request = urllib.request.Request(url, body, {json.dumps(HEADERS)})\n"
        "    if token: request.add_header('Authorization', 'Bearer ' + token)\n"
        "    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))\n"
        "    try:\n"
        "        print(name, 'status', opener.open(request, timeout=10).status)\n"
        "    except urllib.error.HTTPError as e:\n"
        "        print(name, 'status', e.code, e.read().decode()[:300])\n"
        "    except urllib.error.URLError as e:\n"
        "        print(name, 'unreachable', e.reason)\n"
    )
    async with server.client() as client:
        ran = await client.call_tool(
            "shell", {"command": f"python3 {probe} {server.url} {server.proc.pid}"}
        )
    out = text_of(ran)
    assert "env token: False" in out, out
    assert server.token not in out, out
    assert "argv: unseen" in out, out
    assert "direct unreachable" in out, out
    assert "proxy status 403" in out and "Gantry's own port" in out, out


async def test_the_bearer_scheme_is_case_insensitive(workspace: Path, http_server):
    """RFC 7235: the auth scheme is case-insensitive."""
    server = http_server()
    async with httpx2.AsyncClient(timeout=30) as http:
        for scheme in ("bearer", "BEARER"):
            response = await http.post(
                server.url, json=INIT, headers={**HEADERS, "Authorization": f"{scheme} {server.token}"}
            )
            assert response.status_code == 200, (scheme, response.text)


# What a confined command tries: every token-like string it can read (its
# own environment, every /proc/*/cmdline and environ, Gantry's home), then
# a session of its own that runs `shell` with `sandbox: false`.
ATTACK = r'''
import glob, json, os, re, sys, urllib.request, urllib.error
url, marker = sys.argv[1], sys.argv[2]
found = {None}
places = glob.glob("/proc/*/cmdline") + glob.glob("/proc/*/environ")
places += glob.glob(os.path.expanduser("~/**"), recursive=True)[:2000]
for place in places:
    try:
        found.update(m.decode() for m in re.findall(rb"[0-9a-f]{32,64}", open(place, "rb").read()))
    except OSError:
        pass
def post(message, headers):
    request = urllib.request.Request(url, json.dumps(message).encode(), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    return urllib.request.urlopen(request, timeout=5)
outcomes = set()
for token in found:
    headers = {"Authorization": "Bearer " + token} if token else {}
    try:
        reply = post(INIT, headers)
    except urllib.error.HTTPError as e:
        outcomes.add(f"refused {e.code}")
        continue
    except Exception as e:
        outcomes.add(f"unreachable {type(e).__name__}")
        continue
    outcomes.add("ACCEPTED")
    session = reply.headers.get("mcp-session-id")
    if session:
        headers["mcp-session-id"] = session
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shell",
          "arguments": {"command": f"touch {marker}", "sandbox": False}}}, headers).read()
print(len(found), "candidates:", sorted(outcomes))
'''.replace("INIT", repr(INIT))


@pytest.mark.parametrize("given", ["environment", "made", "argv"])
async def test_a_confined_command_cannot_open_a_session_of_its_own(workspace: Path, http_server, given):
    """A command the session runs, confined, finds no token to reach the
    server it runs under, so it can never call `shell` with
    `sandbox: false` and approve it itself."""
    if os.environ.get("GANTRY_SKIP_SANDBOX") == "1":
        pytest.skip("GANTRY_SKIP_SANDBOX=1: the test needs the sandbox")
    if given == "environment":
        server = http_server()
        token = server.token
    elif given == "made":
        server = http_server(token=None)
        token = re.search(r"Bearer ([0-9a-f]+)", server.banner).group(1)
    else:
        token = secrets_token()
        server = http_server("--token", token, token=None)
        # Blanked in Gantry's own argument memory once parsed.
        assert token.encode() not in _cmdline(server.proc)
    home = Path(os.environ.get("HOME", "/root"))
    outside = Path(tempfile.mkdtemp(prefix=".gantry-test-outside-", dir=home))
    marker = outside / "escaped"
    (workspace / "attack.py").write_text(ATTACK)
    try:
        async with server.client(token) as client:
            result = await client.call_tool(
                "shell", {"command": f"python3 attack.py {server.url} {marker}", "timeout": 60}
            )
            said = text_of(result)
        assert "candidates:" in said, said
        assert "ACCEPTED" not in said, said
        assert not marker.exists(), said
    finally:
        shutil.rmtree(outside)


def secrets_token() -> str:
    import secrets

    return secrets.token_hex(16)

"""The command line: `gantry call`, `gantry session`, `gantry tools`,
`gantry status`, and the hint `gantry mcp` prints on a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
import pytest

from conftest import env_for, gantry_bin, pid_running, process_exited, text_of


def gantry(workspace: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [gantry_bin(), "--root", str(workspace), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env_for(workspace.parent),
        timeout=60,
    )


def test_call_prints_the_display_and_json_on_request(workspace: Path):
    done = gantry(workspace, "call", "read_file", '{"path": "notes.txt", "limit": 3}')
    assert done.returncode == 0, done.stderr
    assert "line 1" in done.stdout and "line 4" not in done.stdout
    whole = gantry(workspace, "call", "read_file", '{"path": "README.md"}', "--json")
    result = json.loads(whole.stdout)
    assert result["llm_content"][0]["type"] == "text"
    assert "A small workspace." in result["return_display"]["markdown"]


def test_call_errors_exit_nonzero_with_the_message(workspace: Path):
    bad = gantry(workspace, "call", "read_file", '{"path": "notes.txt", "offset": "abc"}')
    assert bad.returncode == 1
    assert 'offset: expected integer >= 1, got "abc"' in bad.stderr
    not_json = gantry(workspace, "call", "ls", "{nope")
    assert not_json.returncode == 2 and "not JSON" in not_json.stderr
    # A bare value where the JSON object goes: the expected form, with the
    # tool's own first parameter.
    bare = gantry(workspace, "call", "read_file", "app.py")
    assert bare.returncode == 2
    assert """gantry call read_file '{"path": "app.py"}'""" in bare.stderr, bare.stderr
    hidden = gantry(workspace, "call", "shell", '{"command": "true"}', "--tier", "read")
    assert hidden.returncode == 1 and "limited to read tools" in hidden.stderr
    assert "tool `shell` is an exec tool" in hidden.stderr, hidden.stderr
    write = gantry(workspace, "call", "write_file", '{"path": "x", "content": ""}', "--tier", "read")
    assert write.returncode == 1 and "tool `write_file` is a write tool" in write.stderr
    # A tool that ran and failed is an error too, in either output form.
    missing = gantry(workspace, "call", "read_file", '{"path": "nope.txt"}')
    assert missing.returncode == 1 and "nope.txt" in missing.stderr
    missing = gantry(workspace, "call", "read_file", '{"path": "nope.txt"}', "--json")
    assert missing.returncode == 1 and json.loads(missing.stdout)["ok"] is False


def _with_stdout_closed(workspace: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Runs gantry with a stdout nobody reads any more, as `| head -1` leaves
    it: the pipe's read end is closed before gantry starts, so every write
    fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [gantry_bin(), "--root", str(workspace), *args],
            input=stdin,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env_for(workspace.parent),
            timeout=60,
        )
    finally:
        os.close(write)


def test_a_reader_that_went_away_is_no_error(workspace: Path):
    session = json.dumps({"tool": "read_file", "args": {"path": "README.md"}}) + "\n"
    for args, stdin in [
        (["tools"], None),
        (["tools", "--json"], None),
        (["tools", "--markdown"], None),
        (["status"], None),
        (["call", "read_file", '{"path": "notes.txt"}'], None),
        (["session"], session),
    ]:
        done = _with_stdout_closed(workspace, *args, stdin=stdin)
        assert done.returncode == 0, (args, done.returncode, done.stderr)
        assert "Broken pipe" not in done.stderr and "panicked" not in done.stderr, (args, done.stderr)
    piped = subprocess.run(
        ["bash", "-c", f"'{gantry_bin()}' --root '{workspace}' tools --json | head -1; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        env=env_for(workspace.parent),
        timeout=60,
    )
    assert piped.returncode == 0 and piped.stdout == "[\n" and piped.stderr == "", piped


def test_mcp_with_nothing_on_stdin_says_no_client_spoke(workspace: Path):
    done = gantry(workspace, "mcp", stdin="")
    assert done.returncode == 1, done
    assert "stdin closed before any MCP client sent `initialize`" in done.stderr, done.stderr
    assert "see README" in done.stderr and "connection closed" not in done.stderr


def test_session_keeps_one_run_across_calls(workspace: Path):
    calls = [
        {"id": 1, "tool": "shell", "args": {"command": "sleep 300", "is_background": True}},
        {"id": 2, "tool": "shell", "args": {"handle": "bg_1", "kill": True}},
        {"id": 3, "name": "read_file", "arguments": {"path": "README.md"}},
        {"id": 4, "tool": "nope", "args": {}},
        "this is not json",
    ]
    stdin = "\n".join(c if isinstance(c, str) else json.dumps(c) for c in calls) + "\n"
    done = gantry(workspace, "session", stdin=stdin)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == 5
    assert replies[0]["ok"] and "bg_1" in replies[0]["result"]["llm_content"][0]["text"]
    assert replies[1]["ok"] and "killed by signal 9" in replies[1]["result"]["llm_content"][0]["text"], replies[1]
    assert replies[2]["id"] == 3 and "A small workspace." in replies[2]["result"]["llm_content"][0]["text"]
    assert replies[3]["ok"] is False and replies[3]["error"]["kind"] == "UnknownTool"
    assert replies[4]["ok"] is False and "not a JSON object" in replies[4]["error"]["message"]


def test_tools_and_status(workspace: Path):
    listing = json.loads(gantry(workspace, "tools", "--json").stdout)
    names = {tool["name"] for tool in listing}
    assert {"ls", "read_file", "glob", "shell"} <= names
    read_only = json.loads(gantry(workspace, "tools", "--json", "--tier", "read").stdout)
    assert all(tool["tier"] == "read" for tool in read_only)
    status = gantry(workspace, "status")
    assert status.returncode == 0
    assert "tools wired" in status.stdout
    assert "ask_user:" in status.stdout and "no person is wired" in status.stdout


def test_a_newcomers_first_minutes(workspace: Path):
    """What `--help`, `gantry tools` and `gantry status` say to someone new."""
    mcp_help = gantry(workspace, "mcp", "--help").stdout
    assert "Default: client" in mcp_help, mcp_help
    assert "one run per MCP session (on protocol 2026-07-28, one per bearer token)" in gantry(workspace, "--help").stdout
    # The tools absent here, and why, in one line.
    listing = gantry(workspace, "tools").stdout
    absent = [line for line in listing.splitlines() if "ask_user" in line or "vibe_spawn" in line]
    assert len(absent) == 1, listing
    assert "ask_user (no person is wired to this run)" in absent[0], absent
    assert "vibe_kill, vibe_list, vibe_send, vibe_spawn, vibe_wait (worker mode is off)" in absent[0], absent
    status = gantry(workspace, "status").stdout
    # Said once, where it belongs: how to configure a worker tier.
    assert status.count("add a `workers` section") == 1, status
    assert "vibe_kill, vibe_list, vibe_send, vibe_spawn, vibe_wait: worker mode is off" in status, status
    assert "shows how to configure" not in status, status
    assert "settings witness" not in status and "resource:" not in status, status
    ask = next(line for line in status.splitlines() if line.strip().startswith("ask_user:"))
    assert "assumption" not in ask, ask


def test_bad_settings_are_reported_with_file_line_and_column(workspace: Path):
    (workspace / ".gantry").mkdir()
    (workspace / ".gantry" / "settings.json").write_text('{\n  "askUser": {,}\n}\n')
    done = gantry(workspace, "status")
    assert done.returncode == 2
    assert "settings.json:2:" in done.stderr and "invalid settings JSON" in done.stderr


def test_mcp_on_a_terminal_prints_a_hint(workspace: Path):
    binary, env = gantry_bin(), env_for(workspace.parent)
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(binary, [binary, "mcp", "--root", str(workspace)], env)
        finally:
            os._exit(127)
    output = b""
    deadline = time.monotonic() + 20
    try:
        while b"gantry call" not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if ready:
                output += os.read(fd, 4096)
    finally:
        os.kill(pid, 15)
        os.waitpid(pid, 0)
    text = output.decode()
    assert "waits for an MCP client" in text
    assert "claude mcp add gantry" in text
    assert "gantry call read_file" in text


def _run_on_terminal(argv: list[str], env: dict, answer: bytes, prompt: bytes) -> str:
    """Runs `argv` on a pseudo-terminal, types `answer` once `prompt` shows,
    and returns everything it printed."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    output = b""
    answered = False
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
            if not answered and prompt in output:
                os.write(fd, answer)
                answered = True
    finally:
        os.waitpid(pid, 0)
    return output.decode(errors="replace")


def test_ask_user_on_a_terminal(workspace: Path):
    question = json.dumps(
        {"question": "Which database?", "options": [{"label": "Postgres"}, {"label": "SQLite"}]}
    )
    text = _run_on_terminal(
        [gantry_bin(), "--root", str(workspace), "call", "ask_user", question],
        env_for(workspace.parent),
        b"2\n",
        b"A number",
    )
    assert "1. Postgres" in text and "2. SQLite" in text
    assert "The user chose option:\r\n2. SQLite" in text or "The user chose option:\n2. SQLite" in text, text


def test_confirmation_on_a_terminal(workspace: Path):
    text = _run_on_terminal(
        [gantry_bin(), "--root", str(workspace), "call", "--approval", "default",
         "write_file", json.dumps({"path": "hello.txt", "content": "hi\n"})],
        env_for(workspace.parent),
        b"n\n",
        b"Run it? [y/N]",
    )
    assert "+hi" in text, "the confirmation shows the diff: " + text
    assert "declined" in text
    assert not (workspace / "hello.txt").exists()


STUBBORN_LSP = r"""#!/usr/bin/env python3
# A language server that starts and answers, but never ends when asked to:
# shutdown goes unanswered, exit and SIGTERM are ignored.
import json, os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
while True:
    length = None
    while True:
        line = stdin.readline()
        if not line:
            while True:
                signal.pause()
        if line.strip() == b"":
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    message = json.loads(stdin.read(length))
    if "id" not in message or message.get("method") in (None, "shutdown"):
        continue
    result = {"capabilities": {}} if message["method"] == "initialize" else None
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
    stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdout.flush()
"""


@pytest.mark.anyio
async def test_sigterm_ends_mcp_http_within_a_second(workspace: Path, http_server):
    """A signal ends `gantry mcp --http` within a second even when a run
    holds a language server that will not stop, and that server is killed,
    not left behind."""
    # Signalled the moment it listens, it still stops gracefully.
    quick = http_server().proc
    quick.send_signal(signal.SIGTERM)
    assert quick.wait(timeout=10) == 0

    # Outside every place a confined command may write: a server binary
    # there would be refused.
    outside = Path(tempfile.mkdtemp(prefix=".gantry-test-outside-", dir=Path.home()))
    server = outside / "stubborn-lsp"
    server.write_text(STUBBORN_LSP)
    server.chmod(0o755)
    (workspace / "go.mod").write_text("module example.com/x\n")
    (workspace / "main.go").write_text("package main\n")
    lsp_pid_file = workspace / "lsp.pid"
    # The user's file: a workspace's own may not choose a server's program.
    settings = {"lsp": {"servers": {"gopls": {"command": [str(server)], "args": [str(lsp_pid_file)]}}}}
    home = Path(env_for(workspace.parent)["GANTRY_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps(settings))
    server = http_server()
    proc = server.proc
    async with server.client() as client:
        started = await client.call_tool("lsp", {"action": "reload", "file": "main.go"})
        assert "restarted (pid" in text_of(started), text_of(started)
    # Named by its argument: the pid it wrote is its namespace's.
    lsp_pid = pid_running(str(lsp_pid_file))
    shutil.rmtree(outside)

    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    with anyio.fail_after(10):
        await process_exited(proc.pid)
    took = time.monotonic() - signalled
    assert proc.wait(timeout=10) == 0
    assert took < 1.0, f"gantry mcp --http took {took:.2f} s to exit after SIGTERM"
    with anyio.fail_after(10):
        await process_exited(lsp_pid)

"""The command line: `gantry call`, `gantry session`, `gantry tools`,
`gantry status`, and the hint `gantry mcp` prints on a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

from conftest import env_for, gantry_bin


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
    assert not_json.returncode == 2 and "not valid JSON" in not_json.stderr
    hidden = gantry(workspace, "call", "shell", '{"command": "true"}', "--tier", "read")
    assert hidden.returncode == 1 and "limited to read tools" in hidden.stderr


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
    assert replies[1]["ok"] and "killed by signal 9" in replies[1]["result"]["llm_content"][0]["text"]
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

"""Shared fixtures: the gantry binary, a small real workspace, and MCP
clients from the Python `mcp` SDK (a client this project did not write)."""

from __future__ import annotations

import os
import random
import secrets
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import NamedTuple

import anyio
import httpx2
import mcp
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]


def gantry_bin() -> str:
    path = os.environ.get("GANTRY_BIN") or str(REPO / "target" / "debug" / "gantry")
    if not Path(path).exists():
        pytest.fail(f"gantry binary not found at {path}; build it with `cargo build -p gantry` or set GANTRY_BIN")
    return path


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.rs").write_text('fn main() {\n    println!("hi");\n}\n')
    (root / "README.md").write_text("# demo\n\nA small workspace.\n")
    (root / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (root / ".gitignore").write_text("target/\n")
    (root / "target").mkdir()
    (root / "target" / "junk.rs").write_text("// ignored\n")
    return root


def env_for(tmp_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Keep the user's real settings and state out of the tests, and the
    # word of a journal the write path leaves in the state directory every
    # process of the user shares (the platform's, XDG_STATE_HOME) too.
    env["GANTRY_HOME"] = str(tmp_home / "home")
    env["GANTRY_STATE_DIR"] = str(tmp_home / "state")
    env["XDG_STATE_HOME"] = str(tmp_home / "shared-state")
    # A test gives `gantry mcp --http` its tokens itself.
    env.pop("GANTRY_HTTP_TOKEN", None)
    return env


def server_params(workspace: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=gantry_bin(),
        args=["mcp", "--root", str(workspace), *args],
        env=env_for(workspace.parent),
    )


@asynccontextmanager
async def legacy_session(workspace: Path, *args: str, elicitation=None):
    """A handshake-era client (protocol 2025-11-25): `ClientSession` +
    `initialize()`, eliciting by server-to-client request."""
    async with stdio_client(server_params(workspace, *args)) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicitation) as session:
            await session.initialize()
            yield session


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def process_exited(pid: int) -> None:
    """Waits for `pid` to exit (not necessarily our child) on its pidfd: an
    event, not a poll. Bound it with `anyio.fail_after`."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def unique_sleep() -> str:
    """A `sleep` duration no other process has: it names the process. A
    confined command runs in a PID namespace of its own, so a pid it
    reports (`$$`, `$!`) names nothing here."""
    return f"{300 + random.randint(1, 10**6) / 10**7:.7f}"


def pid_running(argument: str) -> int:
    """The pid, seen from here, of the process with `argument` among its
    arguments."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if argument.encode() in args:
            return int(entry)
    raise AssertionError(f"no process runs with the argument {argument}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served(NamedTuple):
    """A `gantry mcp --http` started by the `http_server` fixture."""

    proc: subprocess.Popen
    url: str
    # The bearer token the test gave it, if any.
    token: str | None
    # What it wrote on stderr before it said it serves.
    banner: str

    def http(self, token: str | None = None, **kwargs) -> httpx2.AsyncClient:
        """An HTTP client sending `token` (by default the server's) as the
        bearer token."""
        token = token or self.token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx2.AsyncClient(headers=headers, timeout=30, **kwargs)

    def streams(self, token: str | None = None, **kwargs):
        """The SDK's streamable HTTP transport, with the bearer token."""
        return streamable_http_client(self.url, http_client=self.http(token), **kwargs)

    def client(self, token: str | None = None, **kwargs) -> mcp.Client:
        """`mcp.Client` (protocol 2026-07-28), with the bearer token."""
        return mcp.Client(self.streams(token), **kwargs)


@pytest.fixture
def http_server(workspace: Path):
    """`gantry mcp --http` on a free loopback port. By default it gets a
    fresh bearer token in GANTRY_HTTP_TOKEN; with `token=None`, none (the
    test passes `--no-token`, `--tokens-file`, or lets it make one)."""
    procs = []

    def start(*args: str, host: str = "127.0.0.1", token: str | None = "fresh") -> Served:
        port = free_port()
        env = env_for(workspace.parent)
        if token == "fresh":
            token = secrets.token_hex(16)
        if token is not None:
            env["GANTRY_HTTP_TOKEN"] = token
        proc = subprocess.Popen(
            [gantry_bin(), "mcp", "--root", str(workspace), "--http", f"{host}:{port}", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        # The server says where it serves, last, once it is listening.
        deadline = time.monotonic() + 30
        banner = ""
        line = ""
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if "serving MCP at" in line or not line:
                break
            banner += line
        if "serving MCP at" not in line:
            proc.kill()
            raise RuntimeError(f"gantry --http did not start: {banner}{line}{proc.stderr.read()}")
        return Served(proc, f"http://127.0.0.1:{port}/mcp", token, banner)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


class RawStdio:
    """`gantry mcp` spoken to line by line, as raw JSON-RPC: for what an SDK
    client will not send (a client's own extra parameters, malformed or
    oversized messages). Every read is bounded."""

    def __init__(self, workspace: Path, *args: str):
        import json
        import queue
        import threading

        self._json = json
        self.proc = subprocess.Popen(
            [gantry_bin(), "mcp", "--root", str(workspace), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env_for(workspace.parent),
        )
        self._lines: queue.Queue = queue.Queue()

        def pump():
            for line in self.proc.stdout:
                self._lines.put(line)
            self._lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def send_bytes(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_bytes(self._json.dumps(message).encode() + b"\n")

    def receive(self, timeout: float = 10) -> dict:
        line = self._lines.get(timeout=timeout)
        assert line is not None, "the server closed its output"
        return self._json.loads(line)

    def request(self, id, method: str, params=None) -> dict:
        message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            reply = self.receive()
            if reply.get("id") == id:
                return reply

    def initialize(self, client: str = "gemini-cli-mcp-client", version: str = "2025-06-18") -> dict:
        reply = self.request(0, "initialize", {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "0.61.0"},
        })
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

"""Clients that misbehave (issue 26): one that stops reading (a full stdio
pipe, an HTTP answer never read) must not make the server grow without
bound, and one that disappears mid-call must have what it left cancelled:
the command it started is killed, and a stdio server ends."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from conftest import env_for, gantry_bin, process_exited, unique_sleep
from test_faults import descendants

pytestmark = pytest.mark.anyio

# Each answer carries about 256 KiB: 4,000 unread answers would be 1 GiB.
BIG_LINE = "x" * 1000 + "\n"
REQUESTS = 4000
# What the server may hold, whatever its client leaves unread.
MEMORY_BOUND_MIB = 200


def resident_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"process {pid} has no VmRSS")


def request(id: int, name: str, arguments: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode() + b"\n"


def handshake() -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "a client that stops reading", "version": "0"}}}).encode() + b"\n"
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")


def write_in_background(pipe, chunks) -> threading.Thread:
    """Writes every chunk to `pipe` from a thread (the server may stop
    reading, and this write then blocks), closing nothing."""
    def feed():
        try:
            for chunk in chunks:
                pipe.write(chunk)
                pipe.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def stdio_server(workspace: Path) -> subprocess.Popen:
    return subprocess.Popen([gantry_bin(), "mcp", "--root", str(workspace)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env_for(workspace.parent))


def peak_while(pid: int, thread: threading.Thread, seconds: float) -> float:
    """The server's largest resident size while `thread` writes, sampled
    for at most `seconds`."""
    peak = resident_mib(pid)
    deadline = time.monotonic() + seconds
    while thread.is_alive() and time.monotonic() < deadline:
        peak = max(peak, resident_mib(pid))
        thread.join(0.05)
    return max(peak, resident_mib(pid))


def test_a_stdio_client_that_stops_reading_does_not_grow_the_server(workspace: Path):
    (workspace / "big.txt").write_text(BIG_LINE * 256)
    server = stdio_server(workspace)
    try:
        calls = [handshake()] + [request(i, "read_file", {"path": "big.txt", "limit": 256})
                                 for i in range(1, REQUESTS + 1)]
        writer = write_in_background(server.stdin, calls)
        # The client reads nothing. The writer stalls once the server
        # stops taking requests it cannot answer; 20 s is a bound, not a wait.
        peak = peak_while(server.pid, writer, 20)
        print(f"\nstdio, {REQUESTS} requests of 256 KiB answers never read: server peak {peak:.0f} MiB",
              file=sys.stderr)
        assert peak < MEMORY_BOUND_MIB, f"the server grew to {peak:.0f} MiB for a client that reads nothing"
        # The client goes away: the server ends.
        server.stdout.close()
        server.stdin.close()
        server.wait(timeout=15)
    finally:
        server.kill()
        server.wait()


def test_a_stdio_client_that_vanishes_mid_call_has_its_command_killed(workspace: Path):
    duration = unique_sleep()
    server = stdio_server(workspace)
    try:
        server.stdin.write(handshake() + request(1, "shell", {"command": f"sleep {duration}"}))
        server.stdin.flush()
        sleeper = wait_for_process(server.pid, f"sleep {duration}")
        # The client dies: both pipes close at once.
        server.stdin.close()
        server.stdout.close()
        server.wait(timeout=15)
        assert not alive(sleeper), "the command of a vanished client is still running"
    finally:
        server.kill()
        server.wait()


def wait_for_process(root: int, command: str, bound: float = 30) -> int:
    """The pid of `command` under `root`, once it runs."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        found = [pid for pid, (state, line) in descendants(root).items() if line == command and state != "Z"]
        if found:
            return found[0]
        # No event announces a grandchild's start; a short bounded poll.
        time.sleep(0.01)
    raise AssertionError(f"`{command}` never ran under {root}")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def post(port: int, token: str, body: dict, session: str | None = None, version: str = "2025-06-18") -> socket.socket:
    """A POST /mcp sent on a fresh connection whose answer is not read."""
    data = json.dumps(body).encode()
    headers = [
        "POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {token}",
        "Content-Type: application/json", "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {version}", f"Content-Length: {len(data)}",
    ]
    if session:
        headers.append(f"Mcp-Session-Id: {session}")
    connection = socket.create_connection(("127.0.0.1", port))
    # A small receive buffer: the answer backs up into the server at once.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    connection.sendall(("\r\n".join(headers) + "\r\n\r\n").encode() + data)
    return connection


def open_session(port: int, token: str) -> str:
    connection = post(port, token, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    connection.settimeout(30)
    head = b""
    while b"\r\n\r\n" not in head:
        head += connection.recv(4096)
    connection.close()
    session = next(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"mcp-session-id:"))
    initialized = post(port, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    initialized.settimeout(30)
    initialized.recv(4096)
    initialized.close()
    return session


async def settled_size(pid: int) -> float:
    """The largest resident size of `pid` until it has stopped changing
    (ten samples 50 ms apart alike; at most 30 s): nothing announces that a
    server has done all it will do for requests it cannot answer."""
    peak, same, last = 0.0, 0, -1.0
    with anyio.fail_after(30):
        while same < 10:
            size = resident_mib(pid)
            peak = max(peak, size)
            same = same + 1 if size == last else 0
            last = size
            await anyio.sleep(0.05)
    return peak


async def test_http_answers_never_read_do_not_grow_the_server(workspace: Path, http_server):
    (workspace / "big.txt").write_text(BIG_LINE * 256)
    served = http_server()
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    session = open_session(port, served.token)
    connections = []
    peak = resident_mib(served.proc.pid)
    try:
        for i in range(1, 201):
            connections.append(post(port, served.token, json.loads(
                request(i, "read_file", {"path": "big.txt", "limit": 256})), session))
            peak = max(peak, resident_mib(served.proc.pid))
        peak = max(peak, await settled_size(served.proc.pid))
        print(f"\nhttp, 200 answers of 256 KiB never read: server peak {peak:.0f} MiB", file=sys.stderr)
        assert peak < MEMORY_BOUND_MIB, f"the server grew to {peak:.0f} MiB for 200 answers nobody reads"
    finally:
        for connection in connections:
            connection.close()


async def test_an_http_client_that_vanishes_mid_call_has_its_command_killed(workspace: Path, http_server):
    served = http_server()
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    session = open_session(port, served.token)
    duration = unique_sleep()
    connection = post(port, served.token, json.loads(request(1, "shell", {"command": f"sleep {duration}"})), session)
    sleeper = wait_for_process(served.proc.pid, f"sleep {duration}")
    connection.close()
    with anyio.fail_after(15):
        await process_exited(sleeper)

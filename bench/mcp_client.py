#!/usr/bin/env python3
"""Start-up, memory and read latency of an MCP server over stdio, measured
for Gantry and the reference filesystem server by the same client.

The client is a minimal line-delimited JSON-RPC driver (the MCP stdio
framing), so neither server pays for an SDK the other does not.

    bench/mcp_client.py --gantry target/release/gantry --peer-js PATH/dist/index.js

Prints each figure for both servers and the ratio gantry / peer.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROTOCOL = "2025-11-25"


class StdioClient:
    def __init__(self, argv: list[str], cwd: str, env: dict | None = None):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0

    def initialize(self) -> None:
        self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        self.notify("notifications/initialized")

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed the stream during {method}")
            reply = json.loads(line)
            if reply.get("id") == self.next_id and "method" not in reply:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def notify(self, method: str) -> None:
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
        self.proc.stdin.flush()

    def rss_mb(self) -> float:
        """Resident memory of the server and its children (npx-free, but a
        node server may still fork)."""
        total_kb = 0
        for pid in [self.proc.pid, *children(self.proc.pid)]:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
            except FileNotFoundError:
                pass
        return total_kb / 1024

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def children(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return []
    out = []
    for kid in map(int, kids):
        out += [kid, *children(kid)]
    return out


def start(argv: list[str], cwd: str) -> tuple[StdioClient, float]:
    client = StdioClient(argv, cwd)
    client.initialize()
    client.request("tools/list", {})
    return client, (time.perf_counter() - client.started) * 1000


def measure(name: str, argv: list[str], cwd: str, read_tool: str, read_path: str, starts: int, reads: int) -> dict:
    start_ms = []
    rss = []
    for _ in range(starts):
        client, ms = start(argv, cwd)
        start_ms.append(ms)
        rss.append(client.rss_mb())
        client.close()
    client, _ = start(argv, cwd)
    latencies = []
    for _ in range(reads):
        t0 = time.perf_counter()
        result = client.request("tools/call", {"name": read_tool, "arguments": {"path": read_path}})
        latencies.append((time.perf_counter() - t0) * 1000)
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result}")
    client.close()
    latencies.sort()
    return {
        "start_ms": statistics.median(start_ms),
        "rss_mb": statistics.median(rss),
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--peer-js", required=True, help="server-filesystem's dist/index.js")
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--reads", type=int, default=1000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "small.txt").write_text("".join(f"line {i}: some text\n" for i in range(40)))
        env_note = f"node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}"
        gantry = measure(
            "gantry", [args.gantry, "mcp", "--root", root], root, "read_file", "small.txt", args.starts, args.reads
        )
        peer = measure(
            "server-filesystem", ["node", args.peer_js, root], root, "read_text_file",
            str(Path(root) / "small.txt"), args.starts, args.reads,
        )
    print(f"MCP stdio, same client, {args.starts} starts, {args.reads} reads ({env_note})")
    print(f"{'figure':<28}{'gantry':>12}{'server-filesystem':>20}{'ratio':>10}")
    for key, label in [
        ("start_ms", "spawn -> tools/list (ms)"),
        ("rss_mb", "RSS after start (MB)"),
        ("p50_ms", "read p50 (ms)"),
        ("p99_ms", "read p99 (ms)"),
    ]:
        ratio = gantry[key] / peer[key] if peer[key] else float("nan")
        print(f"{label:<28}{gantry[key]:>12.2f}{peer[key]:>20.2f}{ratio:>9.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

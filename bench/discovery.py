#!/usr/bin/env python3
"""A bridged MCP server through Gantry against the same server called
directly, by the same raw client (bench/mcp_client.py's StdioClient), in
one run:

- read latency: `server-filesystem__read_file` through `gantry mcp` vs
  `read_file` sent to @modelcontextprotocol/server-filesystem itself,
  p50/p99 over --reads calls each, interleaved in blocks so both see the
  same machine;
- start-up to the first tools/list: `gantry mcp` bridging two servers
  (server-filesystem and server-everything) vs each server's own, median
  of --starts.

    bench/discovery.py --gantry target/release/gantry --fs-js PATH/dist/index.js --everything-js PATH/dist/index.js

Prints both figures side by side with the difference against the goals
(+0.5 ms at p50; no more than the slower server's start-up + 20 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_client import StdioClient  # noqa: E402


def started(argv: list[str], cwd: str, env: dict, handshakes: list[float] | None = None) -> tuple[StdioClient, float]:
    """The client and the milliseconds from spawn to its first tools/list
    answer; with `handshakes`, also appends the milliseconds to the
    `initialize` answer."""
    client = StdioClient(argv, cwd, env)
    client.initialize()
    if handshakes is not None:
        handshakes.append((time.perf_counter() - client.started) * 1000)
    client.request("tools/list", {})
    return client, (time.perf_counter() - client.started) * 1000


def started_together(commands: list[list[str]], cwd: str, env: dict) -> float:
    """Milliseconds until every one of `commands`, started at once, has
    answered tools/list: the same work on the same cores as Gantry starting
    them side by side."""
    begun = time.perf_counter()
    clients: list[StdioClient] = []

    def one(argv: list[str]) -> None:
        client, _ = started(argv, cwd, env)
        clients.append(client)

    threads = [threading.Thread(target=one, args=(argv,)) for argv in commands]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = (time.perf_counter() - begun) * 1000
    for client in clients:
        client.close()
    return elapsed


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--fs-js", required=True, help="server-filesystem's dist/index.js")
    parser.add_argument("--everything-js", required=True, help="server-everything's dist/index.js")
    parser.add_argument("--reads", type=int, default=1000)
    parser.add_argument("--starts", type=int, default=10)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "ws"
        root.mkdir()
        small = root / "small.txt"
        small.write_text("".join(f"line {i}: some text\n" for i in range(40)))
        home = Path(scratch) / "home"
        home.mkdir()
        fs = {"command": "node", "args": [args.fs_js, str(root)]}
        everything = {"command": "node", "args": [args.everything_js]}
        env = dict(os.environ, GANTRY_HOME=str(home), GANTRY_STATE_DIR=str(Path(scratch) / "state"))
        gantry_argv = [args.gantry, "mcp", "--root", str(root)]

        # Read latency, interleaved in blocks of 100.
        (home / "settings.json").write_text(json.dumps({"mcpServers": {"server-filesystem": fs}}))
        through, _ = started(gantry_argv, str(root), env)
        direct, _ = started(["node", args.fs_js, str(root)], str(root), env)
        bridged_ms: list[float] = []
        direct_ms: list[float] = []
        own_ms: list[float] = []
        call = {"arguments": {"path": str(small)}}
        for block in range(0, args.reads, 100):
            for client, name, out in (
                (through, "server-filesystem__read_file", bridged_ms),
                (direct, "read_file", direct_ms),
                (through, "read_file", own_ms),
            ):
                for _ in range(min(100, args.reads - block)):
                    t0 = time.perf_counter()
                    result = client.request("tools/call", {"name": name, **call})
                    out.append((time.perf_counter() - t0) * 1000)
                    if result.get("isError"):
                        raise RuntimeError(f"{name}: {result}")
        through.close()
        direct.close()

        # Start-up to the first tools/list, alternating.
        (home / "settings.json").write_text(
            json.dumps({"mcpServers": {"server-filesystem": fs, "server-everything": everything}})
        )
        gantry_start, fs_start, everything_start, together, gantry_handshake = [], [], [], [], []
        fs_argv = ["node", args.fs_js, str(root)]
        everything_argv = ["node", args.everything_js]
        for _ in range(args.starts):
            for argv, out in (
                (gantry_argv, gantry_start),
                (fs_argv, fs_start),
                (everything_argv, everything_start),
            ):
                client, ms = started(argv, str(root), env, gantry_handshake if out is gantry_start else None)
                out.append(ms)
                client.close()
            together.append(started_together([fs_argv, everything_argv], str(root), env))

    p50_b, p50_d = percentile(bridged_ms, 0.50), percentile(direct_ms, 0.50)
    p99_b, p99_d = percentile(bridged_ms, 0.99), percentile(direct_ms, 0.99)
    g, f, e, both = (statistics.median(x) for x in (gantry_start, fs_start, everything_start, together))
    slower = max(f, e)
    print(f"bridged read_file, same client, {args.reads} calls each (interleaved); start-up median of {args.starts}")
    print(f"{'figure':<36}{'gantry':>10}{'direct':>10}{'ratio':>9}{'diff':>10}  goal")
    print(f"{'read p50 (ms)':<36}{p50_b:>10.3f}{p50_d:>10.3f}{p50_b / p50_d:>8.2f}x{p50_b - p50_d:>+10.3f}  +0.5 ms")
    print(f"{'read p99 (ms)':<36}{p99_b:>10.3f}{p99_d:>10.3f}{p99_b / p99_d:>8.2f}x{p99_b - p99_d:>+10.3f}")
    print(f"  (Gantry's own read_file over the same session, for scale: p50 {percentile(own_ms, 0.5):.3f} ms, p99 {percentile(own_ms, 0.99):.3f} ms)")
    print(f"{'spawn -> tools/list, 2 bridged (ms)':<36}{g:>10.1f}{slower:>10.1f}{g / slower:>8.2f}x{g - slower:>+10.1f}  +20 ms")
    print(f"{'  vs both started at once directly':<36}{g:>10.1f}{both:>10.1f}{g / both:>8.2f}x{g - both:>+10.1f}  (same work, same cores)")
    print(f"  (Gantry answers initialize at {statistics.median(gantry_handshake):.1f} ms: the servers start beside the handshake, the first tools/list waits for them)")
    print(f"  (servers' own, alone: server-filesystem {f:.1f} ms, server-everything {e:.1f} ms; direct = the slower)")
    verdict = []
    verdict.append("p50 within goal" if p50_b - p50_d <= 0.5 else "p50 OVER goal")
    verdict.append("start-up within goal" if g - slower <= 20 else "start-up OVER goal")
    print("; ".join(verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())

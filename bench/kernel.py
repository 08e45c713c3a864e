#!/usr/bin/env python3
"""Gantry's eval kernel beside Jupyter's, in one run: cold start to the
first result of `1+1`, and the p50/p99 round trip of a trivial cell over
300 cells.

Gantry is driven through `gantry mcp` by the raw JSON-RPC client of
bench/mcp_client.py (what an agent's harness pays); ipykernel by
jupyter_client, as a notebook front end drives it (ZeroMQ, HMAC-signed
messages). Optionally (--sdk) the official Python MCP SDK drives Gantry
too, to show the SDK's own overhead apart.

    bench/kernel.py --gantry target/release/gantry

Prints each figure for both and the ratio against the goals (cold start
at most 1/5 of ipykernel's, round trip at most 1/10).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from mcp_client import StdioClient  # noqa: E402

CELL = "1+1"
DESCRIPTION = "add one and one for the benchmark"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def gantry_eval(client: StdioClient) -> None:
    result = client.request("tools/call", {"name": "eval", "arguments": {"code": CELL, "description": DESCRIPTION}})
    text = "".join(part.get("text", "") for part in result.get("content", []))
    if result.get("isError") or not text.startswith("2"):
        raise RuntimeError(f"gantry eval: {result}")


def gantry(binary: str, root: str, env: dict, starts: int, cells: int) -> dict:
    cold = []
    for _ in range(starts):
        client = StdioClient([binary, "mcp", "--root", root], root, env)
        client.initialize()
        gantry_eval(client)
        cold.append((time.perf_counter() - client.started) * 1000)
        client.close()
    client = StdioClient([binary, "mcp", "--root", root], root, env)
    client.initialize()
    gantry_eval(client)
    trips = []
    for _ in range(cells):
        t0 = time.perf_counter()
        gantry_eval(client)
        trips.append((time.perf_counter() - t0) * 1000)
    client.close()
    return {"cold_ms": statistics.median(cold), "p50_ms": percentile(trips, 0.5), "p99_ms": percentile(trips, 0.99)}


def ipykernel_execute(kc) -> None:
    msg_id = kc.execute(CELL)
    got = None
    while True:
        msg = kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "execute_result":
            got = msg["content"]["data"]["text/plain"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    kc.get_shell_msg(timeout=30)
    if got != "2":
        raise RuntimeError(f"ipykernel: {got!r}")


def ipykernel(root: str, starts: int, cells: int) -> dict:
    from jupyter_client import KernelManager

    cold = []
    for _ in range(starts):
        t0 = time.perf_counter()
        km = KernelManager(kernel_name="python3")
        km.start_kernel(cwd=root, stderr=subprocess.DEVNULL)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        ipykernel_execute(kc)
        cold.append((time.perf_counter() - t0) * 1000)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=root, stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    ipykernel_execute(kc)
    trips = []
    for _ in range(cells):
        t0 = time.perf_counter()
        ipykernel_execute(kc)
        trips.append((time.perf_counter() - t0) * 1000)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return {"cold_ms": statistics.median(cold), "p50_ms": percentile(trips, 0.5), "p99_ms": percentile(trips, 0.99)}


def sdk(binary: str, root: str, env: dict, cells: int) -> dict | None:
    """The same cells through the official MCP Python SDK, if installed."""
    try:
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError:
        return None

    async def main() -> dict:
        params = StdioServerParameters(command=binary, args=["mcp", "--root", root], env=env, cwd=root)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("eval", {"code": CELL, "description": DESCRIPTION})
            trips = []
            for _ in range(cells):
                t0 = time.perf_counter()
                await session.call_tool("eval", {"code": CELL, "description": DESCRIPTION})
                trips.append((time.perf_counter() - t0) * 1000)
        return {"p50_ms": percentile(trips, 0.5), "p99_ms": percentile(trips, 0.99)}

    return anyio.run(main)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--sdk", action="store_true", help="also drive Gantry through the Python MCP SDK")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as state:
        env = dict(os.environ, GANTRY_STATE_DIR=state)
        # Gantry's kernel environment is made once per workspace; made
        # here first so that each start measured is a kernel's start.
        t0 = time.perf_counter()
        client = StdioClient([args.gantry, "mcp", "--root", root], root, env)
        client.initialize()
        gantry_eval(client)
        client.close()
        first_ever = (time.perf_counter() - t0) * 1000
        g = gantry(args.gantry, root, env, args.starts, args.cells)
        j = ipykernel(root, args.starts, args.cells)
        s = sdk(args.gantry, root, env, args.cells) if args.sdk else None

    print(f"eval `{CELL}`: {args.starts} cold starts (median), {args.cells} cells; one run, same machine")
    print(f"{'figure':<34}{'gantry mcp':>12}{'ipykernel':>12}{'ratio':>9}{'goal':>9}")
    for key, label, goal in [
        ("cold_ms", "cold start to first result (ms)", 1 / 5),
        ("p50_ms", "round trip p50 (ms)", 1 / 10),
        ("p99_ms", "round trip p99 (ms)", 1 / 10),
    ]:
        ratio = g[key] / j[key]
        verdict = "met" if ratio <= goal else "MISSED"
        print(f"{label:<34}{g[key]:>12.2f}{j[key]:>12.2f}{ratio:>8.3f}x{goal:>8.2f}x {verdict}")
    print(f"(once per workspace: Gantry's first start, creating its kernel environment: {first_ever:.0f} ms)")
    if s:
        print(f"through the Python MCP SDK instead: p50 {s['p50_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms (the SDK's own overhead)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Gantry's debug tool beside a bare DAP client driving the same adapter
(debugpy), in one run: launch to the first stop, and the round trip of a
step, each up to what an agent needs at a stop (where it is and the top
frame's locals); and the process tree of the session (the sum of RSS over
every process below the client, sampled at the first stop).

Gantry is driven through `gantry mcp` by the raw JSON-RPC client of
bench/mcp_client.py; the bare client is the few lines of DAP below, which
is the floor any debugging tool pays. Rounds alternate, so load on the
machine hits both alike.

    bench/dap.py --gantry target/release/gantry

Prints each figure for both and the ratios against the goals (launch to
stop and step within 5 % of bare, process tree within 20 MB of bare).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from mcp_client import StdioClient  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "crates/dap/tests/fixtures/python"
# The endless loop of the fixture (`beats += 1`): every step stops again.
LOOP_LINE = 20


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, by parent id: /proc's `children` lists
    only one thread's, and Gantry and debugpy start processes from many."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, frontier = [], [pid]
    while frontier:
        kids = parents.get(frontier.pop(), [])
        found += kids
        frontier += kids
    return found


def tree_rss_mb(pid: int) -> float:
    """RSS of every process below `pid` (not `pid` itself: the client)."""
    total_kb = 0
    for kid in descendants(pid):
        try:
            for line in Path(f"/proc/{kid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total_kb / 1024


class BareDap:
    """A minimal DAP client over the adapter's stdio."""

    def __init__(self, root: str):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "debugpy.adapter"],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.seq = 0
        self.events: list[dict] = []

    def send(self, command: str, arguments: dict) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return self.seq

    def read(self) -> dict:
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the adapter closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def until(self, wanted) -> dict:
        while True:
            message = self.read()
            if wanted(message):
                return message
            if message.get("type") == "event":
                self.events.append(message)

    def request(self, command: str, arguments: dict) -> dict:
        seq = self.send(command, arguments)
        reply = self.until(lambda m: m.get("type") == "response" and m.get("request_seq") == seq)
        if not reply.get("success"):
            raise RuntimeError(f"{command}: {reply.get('message')}")
        return reply.get("body", {})

    def stopped(self) -> dict:
        for event in self.events:
            if event.get("event") == "stopped":
                self.events.remove(event)
                return event
        return self.until(lambda m: m.get("type") == "event" and m.get("event") == "stopped")

    def report(self, stop: dict) -> None:
        """What an agent needs at a stop: the place and the locals."""
        thread = stop["body"]["threadId"]
        frame = self.request("stackTrace", {"threadId": thread, "startFrame": 0, "levels": 1})["stackFrames"][0]
        scopes = self.request("scopes", {"frameId": frame["id"]})["scopes"]
        self.request("variables", {"variablesReference": scopes[0]["variablesReference"]})

    def launch(self, program: str, line: int) -> dict:
        self.request("initialize", {"clientID": "bench", "adapterID": "debugpy", "pathFormat": "path",
                                    "linesStartAt1": True, "columnsStartAt1": True})
        launch = self.send("launch", {"program": program, "args": ["--forever"], "console": "internalConsole",
                                      "justMyCode": True, "cwd": str(Path(program).parent)})
        self.until(lambda m: m.get("event") == "initialized")
        self.request("setBreakpoints", {"source": {"path": program}, "breakpoints": [{"line": line}]})
        self.request("setExceptionBreakpoints", {"filters": ["uncaught"]})
        self.request("configurationDone", {})
        self.until(lambda m: m.get("type") == "response" and m.get("request_seq") == launch)
        stop = self.stopped()
        self.report(stop)
        return stop

    def step(self, thread: int) -> None:
        self.request("next", {"threadId": thread})
        self.report(self.stopped())

    def close(self) -> None:
        try:
            self.request("disconnect", {"terminateDebuggee": True})
        except RuntimeError:
            pass
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def bare_round(root: str, steps: int) -> dict:
    client = BareDap(root)
    stop = client.launch(str(Path(root) / "app.py"), LOOP_LINE)
    first = (time.perf_counter() - client.started) * 1000
    rss = tree_rss_mb(os.getpid())
    trips = []
    for _ in range(steps):
        t0 = time.perf_counter()
        client.step(stop["body"]["threadId"])
        trips.append((time.perf_counter() - t0) * 1000)
    client.close()
    return {"stop_ms": first, "step_ms": statistics.median(trips), "tree_mb": rss}


def gantry_call(client: StdioClient, arguments: dict) -> str:
    result = client.request("tools/call", {"name": "debug", "arguments": arguments})
    text = "".join(part.get("text", "") for part in result.get("content", []))
    if result.get("isError"):
        raise RuntimeError(f"gantry debug {arguments}: {text}")
    return text


def gantry_round(binary: str, root: str, steps: int) -> dict:
    client = StdioClient([binary, "mcp", "--root", root], root)
    client.initialize()
    gantry_call(client, {"op": "breakpoints", "file": "app.py", "lines": [LOOP_LINE]})
    t0 = time.perf_counter()
    text = gantry_call(client, {"op": "launch", "program": "app.py", "args": ["--forever"], "wait_ms": 60000})
    first = (time.perf_counter() - t0) * 1000
    if "stopped: breakpoint" not in text:
        raise RuntimeError(f"gantry launch did not stop: {text}")
    rss = tree_rss_mb(client.proc.pid)
    # Everything below this client is gantry mcp and its session's tree.
    gantry_rss = tree_rss_mb(os.getpid()) - rss
    trips = []
    for _ in range(steps):
        t0 = time.perf_counter()
        text = gantry_call(client, {"op": "step_over", "wait_ms": 60000})
        trips.append((time.perf_counter() - t0) * 1000)
        if "stopped: " not in text:
            raise RuntimeError(f"gantry step did not stop: {text}")
    gantry_call(client, {"op": "terminate"})
    client.close()
    return {"stop_ms": first, "step_ms": statistics.median(trips), "tree_mb": rss, "gantry_mb": gantry_rss}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = str(Path(tmp) / "project")
        shutil.copytree(FIXTURE, root)
        results = {"gantry": [], "bare": []}
        for round_ in range(args.rounds):
            results["bare"].append(bare_round(root, args.steps))
            results["gantry"].append(gantry_round(args.gantry, root, args.steps))
            print(f"round {round_ + 1}: bare {results['bare'][-1]}, gantry {results['gantry'][-1]}", file=sys.stderr)

    def median(who: str, key: str) -> float:
        return statistics.median(r[key] for r in results[who])

    print(f"debugpy, {args.rounds} rounds interleaved, {args.steps} steps each (medians)")
    print(f"{'':34} {'gantry':>10} {'bare DAP':>10} {'ratio':>8}  goal")
    stop_g, stop_b = median("gantry", "stop_ms"), median("bare", "stop_ms")
    step_g, step_b = median("gantry", "step_ms"), median("bare", "step_ms")
    tree_g, tree_b = median("gantry", "tree_mb"), median("bare", "tree_mb")
    print(f"{'launch to first stop (ms)':34} {stop_g:10.0f} {stop_b:10.0f} {stop_g / stop_b:8.3f}  <= 1.05")
    print(f"{'step round trip (ms)':34} {step_g:10.1f} {step_b:10.1f} {step_g / step_b:8.3f}  <= 1.05")
    print(f"{'process tree at the stop (MB)':34} {tree_g:10.1f} {tree_b:10.1f} {tree_g - tree_b:+8.1f}  <= +20 MB")
    print(f"{'gantry mcp itself (MB)':34} {median('gantry', 'gantry_mb'):10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

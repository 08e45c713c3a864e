#!/usr/bin/env python3
"""Worker mode's own costs, measured through `gantry mcp` with the raw
JSON-RPC client of bench/mcp_client.py against the scripted
OpenAI-compatible peer (crates/workers/tests/peer/openai_peer.py), each
beside the same thing done by a bare Python client in the same run:

- vibe_spawn to the worker's first model request (goal <= 20 ms), beside
  a bare HTTP client posting its first request to the same peer;
- vibe_kill to every process of the worker gone (goal <= 200 ms), beside
  a bare kill of an equal process group (a shell and its background sleep);
- Gantry's own time per tool round of the agent loop, the model excluded
  (goal <= 2 ms p50): from the peer's last byte of one answer to its
  receipt of the next request, while the worker runs `ls` each round;
  beside a bare Python loop (urllib, os.listdir as the tool).

Times are CLOCK_MONOTONIC on both sides (time.monotonic), so the peer's
timestamps and the client's compare directly.

    bench/workers.py --gantry target/release/gantry
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from mcp_client import StdioClient  # noqa: E402

PEER = Path(__file__).parent.parent / "crates/workers/tests/peer/openai_peer.py"


class Peer:
    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, str(PEER)], stdout=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        self.port = int(line.split()[1])

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, conversations: dict) -> None:
        self.post("/script", {"conversations": conversations})

    def post(self, path: str, body: dict) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port)
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        reply = json.loads(conn.getresponse().read())
        conn.close()
        return reply

    def records(self) -> list[dict]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/requests") as r:
            return json.loads(r.read())

    def of(self, marker: str) -> list[dict]:
        return [r for r in self.records() if any(
            m.get("role") == "user" and marker in str(m.get("content")) for m in r["body"]["messages"])]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def call(client: StdioClient, name: str, arguments: dict) -> str:
    result = client.request("tools/call", {"name": name, "arguments": arguments})
    text = "\n".join(c.get("text", "") for c in result.get("content", []))
    if result.get("isError"):
        raise RuntimeError(f"{name} {arguments}: {text}")
    return text


def wait_for_requests(peer: Peer, marker: str, count: int, bound: float = 10.0) -> list[dict]:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        found = peer.of(marker)
        if len(found) >= count:
            return found
        time.sleep(0.002)
    raise RuntimeError(f"{marker}: fewer than {count} model requests within {bound} s")


def all_gone(pids: list[int], bound: float = 10.0) -> float:
    """Waits on the processes' pidfds; the monotonic time the last one went."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            pass
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    left = set(fds)
    deadline = time.monotonic() + bound
    while left:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RuntimeError(f"processes {pids} outlived {bound} s")
        for fd, _ in poller.poll(remaining * 1000):
            left.discard(fd)
            poller.unregister(fd)
    done = time.monotonic()
    for fd in fds:
        os.close(fd)
    return done


def read_pids(path: Path, count: int, bound: float = 10.0) -> list[int]:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if path.exists():
            pids = [int(x) for x in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.002)
    raise RuntimeError(f"{path}: the worker's command did not start")


def spawn_to_first_request(client: StdioClient, peer: Peer, runs: int) -> list[float]:
    out = []
    peer.script({f"SPAWN-{i}": [{"content": "done"}] for i in range(runs)})
    for i in range(runs):
        marker = f"SPAWN-{i}"
        t0 = time.monotonic()
        call(client, "vibe_spawn", {"brief": f"{marker}: nothing", "label": marker})
        first = wait_for_requests(peer, marker, 1)[0]
        out.append((first["received"] - t0) * 1000)
        call(client, "vibe_wait", {"worker_id": f"w{len(out)}", "timeout_seconds": 10})
    return out


def bare_first_request(peer: Peer, runs: int) -> list[float]:
    out = []
    for i in range(runs):
        marker = f"BARE-{i}"
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": marker}]}
        t0 = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", peer.port)
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        conn.getresponse().read()
        conn.close()
        out.append((peer.of(marker)[0]["received"] - t0) * 1000)
    return out


def kill_to_gone(client: StdioClient, peer: Peer, runs: int, first_id: int, scratch: Path) -> list[float]:
    out = []
    for i in range(runs):
        marker = f"KILL-{i}"
        pids = scratch / f"kill-{i}.pids"
        command = f"echo $$ > {pids}; sleep 300 & echo $! >> {pids}; wait"
        peer.script({marker: [{"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}]})
        call(client, "vibe_spawn", {"brief": f"{marker}: run it", "label": marker})
        started = read_pids(pids, 2)
        t0 = time.monotonic()
        call(client, "vibe_kill", {"worker_id": f"w{first_id + i}"})
        out.append((all_gone(started) - t0) * 1000)
    return out


def bare_kill(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        proc = subprocess.Popen(["bash", "-c", "sleep 300 & echo $!; wait"], stdout=subprocess.PIPE,
                                start_new_session=True)
        child = int(proc.stdout.readline())
        t0 = time.monotonic()
        os.killpg(proc.pid, 9)
        gone = all_gone([proc.pid, child])
        proc.wait()
        out.append((gone - t0) * 1000)
    return out


def tool_rounds(client: StdioClient, peer: Peer, rounds: int, worker_id: str) -> list[float]:
    marker = "ROUNDS"
    steps = [{"tool_calls": [{"name": "ls", "arguments": {"path": "."}}]} for _ in range(rounds)]
    peer.script({marker: steps + [{"content": "done"}]})
    call(client, "vibe_spawn", {"brief": f"{marker}: list", "label": marker})
    call(client, "vibe_wait", {"worker_id": worker_id, "timeout_seconds": 600})
    records = peer.of(marker)
    return [(b["received"] - a["answered"]) * 1000 for a, b in zip(records, records[1:])]


def bare_rounds(peer: Peer, rounds: int, root: str) -> list[float]:
    marker = "BARE-ROUNDS"
    steps = [{"tool_calls": [{"name": "ls", "arguments": {"path": "."}}]} for _ in range(rounds)]
    peer.script({marker: steps + [{"content": "done"}]})
    messages = [{"role": "user", "content": marker}]
    while True:
        body = json.dumps({"model": "m", "messages": messages, "stream": False}).encode()
        request = urllib.request.Request(f"{peer.url()}/chat/completions", body,
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as r:
            message = json.loads(r.read())["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            break
        for c in message["tool_calls"]:
            path = json.loads(c["function"]["arguments"])["path"]
            messages.append({"role": "tool", "tool_call_id": c["id"],
                             "content": "\n".join(sorted(os.listdir(os.path.join(root, path))))})
    records = peer.of(marker)
    return [(b["received"] - a["answered"]) * 1000 for a, b in zip(records, records[1:])]


def p50(values: list[float]) -> float:
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    gantry = os.path.abspath(args.gantry)

    peer = Peer()
    try:
        return measure(args, gantry, peer)
    finally:
        peer.close()


def measure(args: argparse.Namespace, gantry: str, peer: Peer) -> int:
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        root = scratch / "ws"
        home = scratch / "home"
        root.mkdir()
        home.mkdir()
        for i in range(20):
            (root / f"file{i}.txt").write_text("x\n")
        settings = {"workers": {
            "fast": {"baseUrl": peer.url(), "model": "bench-model"},
            "maxTier": "exec", "approval": "yolo", "maxRunning": 64, "maxTurns": args.rounds + 5,
        }}
        (home / "settings.json").write_text(json.dumps(settings))
        env = dict(os.environ, GANTRY_HOME=str(home), GANTRY_STATE_DIR=str(scratch / "state"))
        client = StdioClient([gantry, "mcp", "--root", str(root)], str(root), env)
        try:
            client.initialize()
            spawn = spawn_to_first_request(client, peer, args.runs)
            bare_spawn = bare_first_request(peer, args.runs)
            kill = kill_to_gone(client, peer, args.runs, args.runs + 1, scratch)
            bare = bare_kill(args.runs)
            rounds = tool_rounds(client, peer, args.rounds, f"w{2 * args.runs + 1}")
            bare_round = bare_rounds(peer, args.rounds, str(root))
        finally:
            client.close()

    print(f"worker mode through `gantry mcp`, scripted OpenAI-compatible peer on loopback; "
          f"{args.runs} spawns, {args.runs} kills, {args.rounds} tool rounds (ls)")
    print(f"{'figure (ms)':<40}{'gantry p50':>11}{'max':>8}{'bare p50':>10}{'ratio':>9}{'goal':>7}  verdict")
    rows = [
        ("vibe_spawn -> first model request", spawn, bare_spawn, 20.0),
        ("vibe_kill -> every process gone", kill, bare, 200.0),
        ("own time per tool round (no model)", rounds, bare_round, 2.0),
    ]
    for label, ours, theirs, goal in rows:
        ratio = p50(ours) / p50(theirs) if p50(theirs) else float("nan")
        verdict = "meets" if p50(ours) <= goal else "MISSES"
        print(f"{label:<40}{p50(ours):>11.2f}{max(ours):>8.2f}{p50(theirs):>10.2f}{ratio:>8.2f}x"
              f"{goal:>7.0f}  {verdict} the goal ({p50(ours) / goal:.2f} of it)")
    print("bare: a Python HTTP client's first request; os.killpg of an equal group; a Python loop "
          "(urllib, os.listdir) doing the same rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())

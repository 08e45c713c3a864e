#!/usr/bin/env python3
"""What the run log costs a call: `read_file` and `write_file` round trips
over stdio through two `gantry mcp` servers of the same binary, one with
the run log on (the default) and one with `log.enabled: false`, calls
interleaved, side by side in one run. The goal: at most 0.1 ms more per
call at p50.

    bench/runlog.py --gantry target/release/gantry [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from mcp_client import StdioClient  # noqa: E402


def server(gantry: str, root: Path, home: Path, enabled: bool) -> StdioClient:
    home.mkdir(parents=True)
    (home / "settings.json").write_text(json.dumps({"log": {"enabled": enabled}}))
    env = dict(os.environ, GANTRY_HOME=str(home), GANTRY_STATE_DIR=str(home / "state"))
    client = StdioClient([gantry, "mcp", "--root", str(root)], str(root), env)
    client.initialize()
    return client


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    args.gantry = str(Path(args.gantry).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sides = {}
        for side, enabled in (("log on", True), ("log off", False)):
            # A workspace each: one server's writes must not wake the other's watchers.
            root = tmp / f"ws-{enabled}"
            root.mkdir()
            (root / "notes.txt").write_text("".join(f"line {i} of the notes\n" for i in range(200)))
            sides[side] = server(args.gantry, root, tmp / side.replace(" ", "-"), enabled)
        calls = {
            "read_file": lambda n: ("read_file", {"path": "notes.txt"}),
            "write_file": lambda n: ("write_file", {"path": f"out-{n % 50}.txt", "content": f"version {n}\n" * 40}),
        }
        took = {(side, call): [] for side in sides for call in calls}
        try:
            for n in range(args.calls + 100):
                # Which side goes first alternates: the first call after the
                # client's own turn is slower, whichever server takes it.
                order = list(sides.items()) if n % 2 == 0 else list(sides.items())[::-1]
                for call, make in calls.items():
                    for side, client in order:
                        name, arguments = make(n)
                        start = time.perf_counter()
                        client.request("tools/call", {"name": name, "arguments": arguments})
                        if n >= 100:
                            took[(side, call)].append((time.perf_counter() - start) * 1000)
            logged = sum(f.stat().st_size for f in (tmp / "log-on" / "state" / "runs").glob("*.jsonl"))
        finally:
            for client in sides.values():
                client.close()
        print(f"{args.calls} calls of each tool per side, interleaved, {os.cpu_count()} cores")
        for call in calls:
            on = statistics.median(took[("log on", call)])
            off = statistics.median(took[("log off", call)])
            print(
                f"  {call:10}  p50 log on {on:.3f} ms   log off {off:.3f} ms   "
                f"cost {(on - off) * 1000:+.0f} us (goal <= +100 us)   ratio {on / off:.3f}"
            )
        print(f"  the log of the run: {logged / 1024:.0f} KiB for {2 * args.calls + 200} calls")


if __name__ == "__main__":
    main()

"""The soak of issue 26: one run of `gantry mcp` (stdio, the Python MCP
SDK as its client) under a mixed workload for a while: an edit (with the
language server's diagnostics on the write), a grep, an `lsp` question, an
`eval` cell, a `shell` command and a `read_file`, round after round. Every
10 s it samples the server's resident memory, its open file descriptors,
the processes under it and their memory; at the end it prints the slope
of the server's memory (least squares over the samples after the first
tenth of the run, as the caches fill then), whether descriptors and
processes stayed flat, and plots the samples to a PNG.

    python3 bench/soak.py GANTRY SECONDS OUT.png OUT.csv
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SAMPLE_EVERY = 10.0
# A round starts every half second at most: an agent's pace, busy (12 calls
# a second), which leaves the machine's cores for the server's own work.
ROUND_EVERY = 0.5


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def resident_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def server_pid(workspace: Path) -> int:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if f"mcp --root {workspace}".encode() in f.read().replace(b"\0", b" "):
                        return int(entry)
            except OSError:
                continue
    raise SystemExit(f"no gantry mcp runs for {workspace}")


def sample(pid: int, started: float, rounds: int) -> dict:
    under = descendants(pid)
    return {
        "seconds": round(time.monotonic() - started, 1),
        "rounds": rounds,
        "server_mib": round(resident_mib(pid), 2),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "processes": len(under),
        "children_mib": round(sum(resident_mib(p) for p in under), 1),
    }


def project(root: Path) -> None:
    (root / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "soak"\nversion = "0"\n')
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "util.py").write_text('def greet(name: str) -> str:\n    return "hello " + name\n')
    (root / "main.py").write_text('from app.util import greet\n\nmessage = greet("x")\nprint(message)\n')
    for i in range(200):
        (root / "app" / f"mod{i}.py").write_text(f"def f{i}(x: int) -> int:\n    return x + {i}\n")


async def round_of_work(session: ClientSession, round_number: int) -> None:
    async def call(name: str, arguments: dict) -> str:
        with anyio.fail_after(120):
            result = await session.call_tool(name, arguments)
        text = text_of(result)
        if result.is_error:
            raise SystemExit(f"round {round_number}: {name} failed: {text}")
        return text

    old, new = ('message = greet("x")', 'message = greet("y")')
    if round_number % 2:
        old, new = new, old
    await call("edit", {"path": "main.py", "old_string": old, "new_string": new})
    await call("grep", {"pattern": "def f1[0-9]"})
    await call("lsp", {"action": "references", "file": "main.py", "line": 3, "symbol": "greet"})
    await call("eval", {"code": f"rounds = {round_number}\nsum(range(10000))",
                        "description": "a cell of the soak"})
    await call("shell", {"command": "echo soak | wc -c"})
    await call("read_file", {"path": "app/util.py"})


async def soak(gantry: str, seconds: float, png: Path, table: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        workspace = scratch / "ws"
        project(workspace)
        env = dict(os.environ, GANTRY_HOME=str(scratch / "home"), GANTRY_STATE_DIR=str(scratch / "state"))
        params = StdioServerParameters(command=gantry, args=["mcp", "--root", str(workspace)], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                pid = server_pid(workspace)
                started = time.monotonic()
                samples = [sample(pid, started, 0)]
                rounds = 0
                next_sample = started + SAMPLE_EVERY
                while time.monotonic() - started < seconds:
                    round_started = time.monotonic()
                    await round_of_work(session, rounds)
                    rounds += 1
                    await anyio.sleep(max(0.0, round_started + ROUND_EVERY - time.monotonic()))
                    if time.monotonic() >= next_sample:
                        samples.append(sample(pid, started, rounds))
                        next_sample += SAMPLE_EVERY
                samples.append(sample(pid, started, rounds))
    with open(table, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(samples[0]))
        writer.writeheader()
        writer.writerows(samples)
    report(samples, png)


def slope_per_hour(points: list[tuple[float, float]]) -> float:
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points) or 1.0
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread * 3600


def report(samples: list[dict], png: Path) -> None:
    settled = [s for s in samples if s["seconds"] >= samples[-1]["seconds"] / 10] or samples
    slope = slope_per_hour([(s["seconds"], s["server_mib"]) for s in settled])
    children = slope_per_hour([(s["seconds"], s["children_mib"]) for s in settled])
    last = samples[-1]
    print(f"soak: {last['seconds'] / 60:.1f} min, {last['rounds']} rounds of 6 calls "
          f"({last['rounds'] * 6 / last['seconds']:.1f} calls/s)")
    print(f"  server memory: {samples[0]['server_mib']:.1f} MiB at start, "
          f"{min(s['server_mib'] for s in settled):.1f} to {max(s['server_mib'] for s in settled):.1f} MiB "
          f"after the first tenth, {last['server_mib']:.1f} MiB at the end; slope {slope:+.2f} MiB/hour")
    print(f"  processes under it: memory slope {children:+.1f} MiB/hour")
    print(f"  file descriptors: {min(s['fds'] for s in settled)} to {max(s['fds'] for s in settled)} "
          f"(start {samples[0]['fds']}, end {last['fds']})")
    print(f"  processes under it: {min(s['processes'] for s in settled)} to "
          f"{max(s['processes'] for s in settled)} (end {last['processes']})")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [s["seconds"] / 60 for s in samples]
    figure, memory = plt.subplots(figsize=(9, 4.5), dpi=100)
    memory.plot(minutes, [s["server_mib"] for s in samples], color="tab:blue", label="gantry resident memory (MiB)")
    memory.set_xlabel("minutes")
    memory.set_ylabel("MiB")
    memory.set_ylim(bottom=0)
    descriptors = memory.twinx()
    descriptors.plot(minutes, [s["fds"] for s in samples], color="tab:orange", label="open file descriptors")
    descriptors.plot(minutes, [s["processes"] for s in samples], color="tab:green", label="processes under it")
    descriptors.set_ylabel("count")
    descriptors.set_ylim(bottom=0)
    lines = memory.get_legend_handles_labels()
    more = descriptors.get_legend_handles_labels()
    memory.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize=8, framealpha=0.6)
    memory.set_title(f"gantry mcp soak: {last['rounds']} rounds of edit, grep, lsp, eval, shell, read_file; "
                     f"memory slope {slope:+.2f} MiB/h", fontsize=9)
    figure.tight_layout()
    figure.savefig(png)
    print(f"  plotted to {png}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    anyio.run(soak, sys.argv[1], float(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))

#!/usr/bin/env python3
"""What the sandbox costs, side by side in one run: Gantry with its default
sandbox (workspace-write: each command in its own namespaces, under
Landlock), the same with `sandbox.namespaces: false` (Landlock alone, the
sandbox before namespaces) and with `sandbox.mode: off`, all over MCP
stdio through the raw client of bench/mcp_client.py, calls interleaved so
load on the machine hits them alike.

0. The first command of a run (which also finds out whether the machine
   gives namespaces, once per process): a fresh server's first call.
1. `shell {"command": "true"}`: the round trip of a call, median of many.
2. `cargo check` of a generated 200-file crate, from a clean target
   directory each time: median and fastest wall time of several (on a
   busy machine the fastest is the steadier figure).
3. What the build pays for: one `open()` of a file, timed in a loop inside
   each side (Landlock walks the path on every open once truncation is
   controlled), in microseconds.

    bench/sandbox.py --gantry target/release/gantry

Prints each figure for each side, and the differences and ratios of the
namespaces against Landlock alone (the goals: within 2 ms per command,
within 2 % on the build) and against no sandbox.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_client import StdioClient  # noqa: E402

MODULES = 200


def server(gantry: str, root: Path, home: Path, settings: dict) -> StdioClient:
    """`gantry mcp` on `root` with `settings` as the user's file."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps(settings))
    env = dict(os.environ, GANTRY_HOME=str(home))
    client = StdioClient([gantry, "mcp", "--root", str(root)], str(root), env)
    client.initialize()
    return client


def shell(client: StdioClient, command: str, timeout: int = 600) -> tuple[float, str]:
    """One `shell` call: its round trip in ms and its text."""
    started = time.perf_counter()
    result = client.request(
        "tools/call", {"name": "shell", "arguments": {"command": command, "timeout": timeout}}
    )
    elapsed = (time.perf_counter() - started) * 1000
    text = "".join(part.get("text", "") for part in result.get("content", []))
    if result.get("isError") or "[exit code 0" not in text:
        raise RuntimeError(f"`{command}` failed:\n{text}")
    return elapsed, text


def generate_crate(root: Path) -> None:
    """A library of MODULES modules, each with a struct, a trait impl and a
    few generic functions: enough type checking to time."""
    src = root / "src"
    src.mkdir(parents=True)
    (root / "Cargo.toml").write_text(
        '[package]\nname = "bench200"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n'
    )
    lib = []
    for i in range(MODULES):
        lib.append(f"pub mod m{i};\n")
        previous = f"crate::m{i - 1}::Item{i - 1}" if i else "u64"
        (src / f"m{i}.rs").write_text(
            f"""use std::collections::HashMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Item{i} {{
    pub id: u64,
    pub name: String,
    pub tags: Vec<String>,
    pub scores: HashMap<String, f64>,
}}

pub trait Describe{i} {{
    fn describe(&self) -> String;
}}

impl Describe{i} for Item{i} {{
    fn describe(&self) -> String {{
        format!("{{}}:{{}}:{{}}", self.id, self.name, self.tags.join(","))
    }}
}}

pub fn total{i}<I: IntoIterator<Item = f64>>(values: I) -> f64 {{
    values.into_iter().filter(|v| v.is_finite()).sum()
}}

pub fn build{i}(previous: &{previous}) -> Item{i} {{
    let mut scores = HashMap::new();
    scores.insert(format!("{{:?}}", previous), {i} as f64);
    Item{i} {{ id: {i}, name: "m{i}".into(), tags: vec!["a".into(), "b".into()], scores }}
}}
"""
        )
    (src / "lib.rs").write_text("".join(lib))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--calls", type=int, default=300, help="`true` calls per side")
    parser.add_argument("--builds", type=int, default=5, help="cargo checks per side")
    args = parser.parse_args()
    gantry = str(Path(args.gantry).resolve())

    settings = {
        "ns": {},
        "landlock": {"sandbox": {"namespaces": False}},
        "off": {"sandbox": {"mode": "off"}},
    }
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        root = scratch / "workspace"
        generate_crate(root)
        # The first call of a fresh server, each side in turn, twice.
        first = {side: [] for side in settings}
        for round_ in range(2):
            for side, chosen in settings.items():
                client = server(gantry, root, scratch / f"home-first-{side}-{round_}", chosen)
                first[side].append(shell(client, "true")[0])
                client.close()
        sides = {side: server(gantry, root, scratch / f"home-{side}", chosen)
                 for side, chosen in settings.items()}
        # Warm up every side (the run's sandbox is built on the first
        # command, the mode-off notice comes once), and check each side is
        # what it says.
        for _ in range(5):
            for client in sides.values():
                shell(client, "true")
        # A directory outside the temp directory and the caches (beside
        # the gantry binary): only the unconfined side may write there.
        outside = Path(tempfile.mkdtemp(prefix="sandbox-bench-", dir=Path(gantry).parent))
        try:
            probe = f"touch {outside}/probe-$$ 2>&1; true"
            for side, client in sides.items():
                _, text = shell(client, probe)
                refused = "The sandbox probably refused" in text
                assert refused == (side != "off"), (side, text)
            assert len(list(outside.iterdir())) == 1, "exactly the off side wrote"
        finally:
            for probe_file in outside.iterdir():
                probe_file.unlink()
            outside.rmdir()
        _, text = shell(sides["ns"], "ls /proc | grep -c '^[0-9]'")
        assert int(text.split("\n")[1]) < 10, f"the ns side has no PID namespace: {text}"

        order = list(sides)
        calls = {side: [] for side in sides}
        for i in range(args.calls):
            for side in order[i % 3:] + order[:i % 3]:
                calls[side].append(shell(sides[side], "true")[0])

        builds = {side: [] for side in sides}
        for i in range(args.builds):
            for side in order[i % 3:] + order[:i % 3]:
                shell(sides[side], "rm -rf target")
                # Each side its own target directory, so none reuses
                # another's work; timed inside the command, the build alone.
                _, text = shell(
                    sides[side],
                    f"s=$(date +%s%N); CARGO_TARGET_DIR=target/{side} cargo check --offline -q; "
                    "e=$(date +%s%N); echo build_ns=$((e - s))",
                )
                ns = int(text.rsplit("build_ns=", 1)[1].split()[0])
                builds[side].append(ns / 1e6)
        opens = {}
        loop = (
            "python3 -c 'import os, time\n"
            "t = time.perf_counter()\n"
            "for _ in range(100000): os.close(os.open(\"src/lib.rs\", os.O_RDONLY))\n"
            "print(\"us_per_open\", (time.perf_counter() - t) / 100000 * 1e6)'"
        )
        for side in order + order:
            _, text = shell(sides[side], loop)
            us = float(text.rsplit("us_per_open", 1)[1].split()[0])
            opens[side] = min(opens.get(side, us), us)
        for client in sides.values():
            client.close()

    def figures(label: str, values: dict, unit: str = "ms") -> None:
        shown = "   ".join(f"{side} {value:9.2f} {unit}" for side, value in values.items())
        print(f"{label:<34} {shown}")

    def compare(label: str, values: dict, goal_ms=None, goal_pct=None) -> None:
        ns, landlock, off = values["ns"], values["landlock"], values["off"]
        verdict = ""
        if goal_ms is not None:
            verdict = f"goal: within {goal_ms} ms -> {'met' if ns - landlock <= goal_ms else 'NOT met'}"
        if goal_pct is not None:
            verdict = (f"goal: within {goal_pct} % -> "
                       f"{'met' if ns <= landlock * (1 + goal_pct / 100) else 'NOT met'}")
        print(f"{'':<34} ns - landlock {ns - landlock:+8.2f}  (ratio {ns / landlock:6.3f})   "
              f"ns - off {ns - off:+8.2f}  (ratio {ns / off:6.3f})   {verdict}")

    med = statistics.median
    print(f"{args.calls} interleaved calls per side; {args.builds} interleaved builds per side "
          "(medians); sides: ns = namespaces + Landlock (default), landlock = Landlock alone, "
          "off = no sandbox")
    first_call = {side: med(v) for side, v in first.items()}
    figures("first call of a fresh server", first_call)
    compare("", first_call)
    call = {side: med(v) for side, v in calls.items()}
    figures('shell {"command": "true"}', call)
    compare("", call, goal_ms=2)
    build = {side: med(v) for side, v in builds.items()}
    figures(f"cargo check, {MODULES} files", build)
    compare("", build, goal_pct=2)
    fastest = {side: min(v) for side, v in builds.items()}
    figures(f"cargo check, {MODULES} files, fastest", fastest)
    compare("", fastest)
    figures("open() of a file (best of 2 loops)", opens, unit="us")
    return 0


if __name__ == "__main__":
    sys.exit(main())

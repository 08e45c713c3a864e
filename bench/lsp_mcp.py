#!/usr/bin/env python3
"""Gantry's `lsp` through `gantry mcp` against a bare LSP client, both on
basedpyright, side by side in one run (bench/lsp.sh builds and calls this).

Three clients, each with its own basedpyright started on the same project
directory:

* sdk:   `gantry mcp` driven by the Python MCP SDK (ClientSession over
         stdio_client): what an MCP host pays end to end;
* raw:   the same `gantry mcp` driven by a minimal line-delimited JSON-RPC
         client, so the SDK's own cost can be told apart from Gantry's;
* bare:  a hand-written LSP client talking to basedpyright-langserver over
         stdio with nothing in between: the floor.

Gantry owns its server process, so "the same warm server" is approximated:
all servers are warm and started on the same project, and the calls are
interleaved in one loop (one sdk call, one raw call, one bare call, the
order rotating every round), so machine load hits all of them alike.

Figures:
* warm latency of `references` and `hover` at the same position, CALLS
  calls each, p50 and p99;
* cold: process spawn to the first references answer (gantry: spawn of
  `gantry mcp`, MCP handshake, server start, answer; bare: spawn of the
  server, handshake, workspace loaded, answer), median of COLD rounds
  after one untimed start of each;
* diagnostics on write: gantry's `edit` call (through the SDK) to its
  result naming the new error, against the bare server's didChange to the
  publishDiagnostics for that version naming it.

Usage: lsp_mcp.py GANTRY_BIN [CALLS] [COLD] [WRITES]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_client import StdioClient  # noqa: E402

MAIN = 'from app.util import greet\n\n\nmessage = greet("x")\nprint(greet(message))\n'
UTIL = 'def greet(name: str) -> str:\n    """Say hello."""\n    return "hello " + name\n'
PYPROJECT = '[project]\nname = "bench"\nversion = "0"\n\n[tool.basedpyright]\ntypeCheckingMode = "standard"\n'
# `greet` on line 4 (1-based), column 10 (0-based) of main.py.
LINE, COLUMN = 4, 10
BROKEN_LINE = "undefined_thing()\n"


def make_project() -> Path:
    root = Path(tempfile.mkdtemp(prefix="gantry-lsp-bench-"))
    (root / "app").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "util.py").write_text(UTIL)
    (root / "main.py").write_text(MAIN)
    (root / "notes.txt").write_text("a\nb\n")
    return root


def ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class BareLsp:
    """basedpyright-langserver over stdio, with nothing in between."""

    def __init__(self, root: Path, pull: bool = False):
        self.started = time.perf_counter()
        self.root = root
        self.pull = pull
        self.proc = subprocess.Popen(
            ["basedpyright-langserver", "--stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root,
        )
        self.next_id = 0
        self.loaded = False
        self.published: dict[str, dict] = {}
        self.uri = (root / "main.py").as_uri()
        self.version = 1

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict:
        length = 0
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("basedpyright closed its output")
            line = line.strip()
            if not line:
                break
            name, value = line.decode().split(":", 1)
            if name.lower() == "content-length":
                length = int(value)
        message = json.loads(self.proc.stdout.read(length))
        self.handle(message)
        return message

    def handle(self, message: dict) -> None:
        """Answers server requests; notes workspace loading and publishes."""
        method = message.get("method")
        if method and "id" in message:
            result = None
            if method == "workspace/configuration":
                result = [None] * len(message["params"]["items"])
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "window/logMessage" and "source file" in message["params"]["message"]:
            self.loaded = True
        elif method == "textDocument/publishDiagnostics":
            self.published[message["params"]["uri"]] = message["params"]

    def request(self, method: str, params: dict):
        self.next_id += 1
        mine = self.next_id
        self.send({"jsonrpc": "2.0", "id": mine, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == mine and "method" not in message:
                return message.get("result")

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def start(self) -> None:
        """Handshake, open main.py, wait until the workspace is loaded (pyright
        leaves requests sent earlier unanswered). Without `pull` the server
        publishes diagnostics on its own after each change; with it, they
        are asked for (as Gantry's client does)."""
        text_caps = {"publishDiagnostics": {"versionSupport": True}}
        if self.pull:
            text_caps["diagnostic"] = {"dynamicRegistration": True}
        caps = {
            "textDocument": text_caps,
            "workspace": {"configuration": True},
            "window": {"workDoneProgress": True},
        }
        uri = self.root.as_uri()
        self.request("initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": caps,
                                    "workspaceFolders": [{"uri": uri, "name": "bench"}]})
        self.notify("initialized", {})
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "python", "version": self.version, "text": MAIN}})
        while not self.loaded:
            self.receive()

    def at(self) -> dict:
        return {"textDocument": {"uri": self.uri}, "position": {"line": LINE - 1, "character": COLUMN}}

    def references(self):
        return self.request("textDocument/references", dict(self.at(), context={"includeDeclaration": True}))

    def hover(self):
        return self.request("textDocument/hover", self.at())

    def change(self, text: str, marker: str | None) -> float:
        """didChange to the publish for that version (with `marker` in a
        message, or with no errors when `marker` is None); milliseconds."""
        self.version += 1
        version = self.version
        t = time.perf_counter()
        self.notify("textDocument/didChange", {"textDocument": {"uri": self.uri, "version": version},
                                               "contentChanges": [{"text": text}]})
        if self.pull:
            report = self.request("textDocument/diagnostic", {"textDocument": {"uri": self.uri}})
            messages = " ".join(d["message"] for d in report.get("items", []))
            if (marker in messages) if marker else not report.get("items"):
                return ms(t)
            raise RuntimeError(f"bare pull: unexpected diagnostics {report}")
        while True:
            got = self.published.get(self.uri)
            if got and (got.get("version") or 0) >= version:
                messages = " ".join(d["message"] for d in got["diagnostics"])
                if (marker in messages) if marker else not got["diagnostics"]:
                    return ms(t)
            self.receive()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


class RawMcp(StdioClient):
    """`gantry mcp` over stdio with a minimal line-delimited JSON-RPC client."""

    def __init__(self, gantry: str, root: Path, env: dict):
        super().__init__([gantry, "mcp", "--root", str(root)], str(root), env)
        self.initialize()

    def lsp(self, action: str) -> str:
        result = self.request("tools/call", {"name": "lsp", "arguments": lsp_args(action)})
        return "\n".join(c.get("text", "") for c in result["content"])


def lsp_args(action: str) -> dict:
    return {"action": action, "file": "main.py", "line": LINE, "symbol": "greet"}


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def check(side: str, action: str, text: str) -> None:
    expected = {"references": "references to `greet`", "hover": "def greet(name: str) -> str"}[action]
    if expected not in text:
        raise RuntimeError(f"{side} {action}: unexpected answer:\n{text}")


def check_bare(action: str, answer) -> None:
    ok = len(answer or []) == 4 if action == "references" else "greet" in json.dumps(answer or {})
    if not ok:
        raise RuntimeError(f"bare {action}: unexpected answer: {answer}")


async def main() -> int:
    gantry = os.path.abspath(sys.argv[1])
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    cold_rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    writes = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    root = make_project()
    state = Path(tempfile.mkdtemp(prefix="gantry-lsp-bench-home-"))
    env = dict(os.environ, GANTRY_HOME=str(state / "home"), GANTRY_STATE_DIR=str(state / "state"))
    params = StdioServerParameters(command=gantry, args=["mcp", "--root", str(root)], env=env)
    devnull = open(os.devnull, "w")

    # Cold: rounds alternate which side goes first; neither runs alongside
    # the other.
    cold = {"gantry": [], "bare": []}

    def cold_bare() -> None:
        bare = BareLsp(root)
        bare.start()
        check_bare("references", bare.references())
        cold["bare"].append(ms(bare.started))
        bare.close()

    async def cold_gantry() -> None:
        t = time.perf_counter()
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                text = text_of(await session.call_tool("lsp", lsp_args("references")))
                cold["gantry"].append(ms(t))
                check("gantry", "references", text)

    # One untimed start of each first, so that neither pays for a cold page
    # cache of node, basedpyright and gantry.
    cold_bare()
    await cold_gantry()
    cold = {"gantry": [], "bare": []}
    for round_ in range(cold_rounds):
        if round_ % 2 == 0:
            cold_bare()
            await cold_gantry()
        else:
            await cold_gantry()
            cold_bare()

    # Warm: three clients, interleaved.
    bare = BareLsp(root)
    bare.start()
    raw = RawMcp(gantry, root, env)
    raw.lsp("references")
    samples = {(side, action): [] for side in ("sdk", "raw", "bare") for action in ("references", "hover")}
    write_ms = {"gantry": [], "bare": [], "pull": [], "txt": []}
    puller = BareLsp(root, pull=True)
    puller.start()
    async with stdio_client(params, errlog=devnull) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def sdk_call(action: str) -> str:
                return text_of(await session.call_tool("lsp", lsp_args(action)))

            async def one(side: str, action: str, keep: bool) -> None:
                t = time.perf_counter()
                if side == "sdk":
                    text = await sdk_call(action)
                elif side == "raw":
                    text = raw.lsp(action)
                else:
                    answer = bare.references() if action == "references" else bare.hover()
                elapsed = ms(t)
                if side == "bare":
                    check_bare(action, answer)
                else:
                    check(side, action, text)
                if keep:
                    samples[(side, action)].append(elapsed)

            sides = ["sdk", "raw", "bare"]
            for warmup in range(20):
                for side in sides:
                    for action in ("references", "hover"):
                        await one(side, action, keep=False)
            for round_ in range(calls):
                order = sides[round_ % 3:] + sides[:round_ % 3]
                for action in ("references", "hover"):
                    for side in order:
                        await one(side, action, keep=True)

            # Diagnostics on write: introduce the error, then fix it, on
            # each side in turn; only the introducing writes are timed.
            broken = MAIN + BROKEN_LINE
            edit_in = {"path": "main.py", "old_string": "print(greet(message))\n",
                       "new_string": "print(greet(message))\n" + BROKEN_LINE}
            edit_out = {"path": "main.py", "old_string": BROKEN_LINE, "new_string": ""}
            # The run's first write to a file of the server has no baseline;
            # one untimed round on each side first.
            await session.call_tool("edit", edit_in)
            await session.call_tool("edit", edit_out)
            for server in (bare, puller):
                server.change(broken, "undefined_thing")
                server.change(MAIN, None)
            sides = ["gantry", "bare", "pull", "txt"]
            for round_ in range(writes):
                for side in sides[round_ % 4:] + sides[:round_ % 4]:
                    if side == "gantry":
                        t = time.perf_counter()
                        text = text_of(await session.call_tool("edit", edit_in))
                        write_ms["gantry"].append(ms(t))
                        if "introduced these problems" not in text or "undefined_thing" not in text:
                            raise RuntimeError(f"gantry edit: no new diagnostic in:\n{text}")
                        await session.call_tool("edit", edit_out)
                    elif side == "txt":
                        t = time.perf_counter()
                        await session.call_tool("edit", {"path": "notes.txt", "old_string": "b\n",
                                                         "new_string": "b\nc\n"})
                        write_ms["txt"].append(ms(t))
                        await session.call_tool("edit", {"path": "notes.txt", "old_string": "c\n",
                                                         "new_string": ""})
                    else:
                        server = bare if side == "bare" else puller
                        write_ms[side].append(server.change(broken, "undefined_thing"))
                        server.change(MAIN, None)
    raw.close()
    bare.close()
    puller.close()

    print(f"basedpyright on one small project; warm: {calls} calls per action per client, interleaved")
    print("in one loop (sdk, raw, bare, order rotating each round) after 20 warm-up calls each; all")
    print("servers warm and started on the same project, so machine load hits them alike.")
    print("  sdk  = `gantry mcp` through the Python MCP SDK (ClientSession over stdio_client)")
    print("  raw  = the same `gantry mcp` through a minimal line-delimited JSON-RPC client")
    print("  bare = a hand-written LSP client straight to basedpyright-langserver --stdio")
    print()
    print(f"{'figure (ms)':<34}{'bare':>9}{'gantry sdk':>12}{'sdk-bare':>10}{'ratio':>8}"
          f"{'gantry raw':>12}{'raw-bare':>10}")
    for action in ("references", "hover"):
        for p in (50, 99):
            b = pct(samples[("bare", action)], p)
            s = pct(samples[("sdk", action)], p)
            r = pct(samples[("raw", action)], p)
            print(f"{action + ' p' + str(p):<34}{b:>9.2f}{s:>12.2f}{s - b:>+10.2f}{s / b:>7.2f}x"
                  f"{r:>12.2f}{r - b:>+10.2f}")
    b, g = statistics.median(cold["bare"]), statistics.median(cold["gantry"])
    print(f"{'cold: spawn to first references':<34}{b:>9.0f}{g:>12.0f}{g - b:>+10.0f}{g / b:>7.2f}x"
          f"   (median of {cold_rounds}; gantry via the SDK)")
    for p in (50, 90):
        b, g = pct(write_ms["bare"], p), pct(write_ms["gantry"], p)
        print(f"{'diagnostics on write p' + str(p):<34}{b:>9.1f}{g:>12.1f}{g - b:>+10.1f}{g / b:>7.2f}x"
              f"   ({writes} writes)")
    for p in (50, 90):
        b, g = pct(write_ms["pull"], p), pct(write_ms["gantry"], p)
        print(f"{'  same, bare pulling p' + str(p):<34}{b:>9.1f}{g:>12.1f}{g - b:>+10.1f}{g / b:>7.2f}x")
    print(f"{'  edit of a .txt (no server) p50':<34}{'':>9}{pct(write_ms['txt'], 50):>12.1f}"
          f"   (the write path and MCP round trip alone)")
    print()
    print("diagnostics on write: gantry = `edit` call through the SDK until its result names the new")
    print("error (the edit, the write path, didChange, the pull, the ledger, the MCP round trip);")
    print("bare = didChange until basedpyright publishes diagnostics for that version naming it;")
    print("bare pulling = didChange, then textDocument/diagnostic answered with it (Gantry's route).")
    print("Goals: p50 within 3 ms of bare; cold within 0.3 s of bare; diagnostics within 200 ms of bare.")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

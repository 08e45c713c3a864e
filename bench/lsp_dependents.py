#!/usr/bin/env python3
"""What finding the files a write can break costs a write (bench/lsp_dependents.sh
builds and calls this).

For each language (TypeScript on typescript-language-server, C on clangd
with compile_flags.txt), a project with one declaration file and 10 files
that call what it declares:

* ts: src/lib.ts exports `scale(x: number): number`; src/user0.ts ..
  src/user9.ts call it;
* c:  ops.h declares `int mul(int a, int b);`; user0.c .. user9.c include
  it and call it.

Two `gantry mcp` processes per language, each on its own copy of the
project and with its own servers: `on` with the default settings, `off`
with `lsp.dependents: false` in its user settings. Each reads the
declaration file (as an agent would before editing it), then changes the
declaration with `edit`: a parameter added (which breaks the 10 callers),
then removed again (which fixes them), EDITS edits in all. Calls to `on`
and `off` alternate in one loop (the order rotating every round) after
warm-up edits, so machine load hits both alike.

Each `on` edit that adds the parameter must name the 10 broken callers,
and each `off` edit none: the figures are of the work as it is meant to
be done. The figure is the edit call's latency (the write path, the
lookup, opening and checking the dependents, the MCP round trip) with
the lookup on, minus the same with it off.

For scale, the same edits are made in the same loop by a bare LSP client
on its own server and project copy, twice: with the declaration file and
the 10 dependents open, and with the declaration file alone; each timed
from didChange (and didSave) until every open file has been published
since. Their difference is what the server itself takes to check the 10
files again, which no client can save; what `on - off` adds beyond it is
Gantry's.

Usage: lsp_dependents.py GANTRY_BIN [EDITS]
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_client import StdioClient  # noqa: E402

USERS = 10

TSCONFIG = '{ "compilerOptions": { "strict": true, "target": "es2020", "module": "commonjs", "noEmit": true }, "include": ["src"] }\n'


def ts_files() -> dict[str, str]:
    files = {
        "tsconfig.json": TSCONFIG,
        "src/lib.ts": "export function scale(x: number): number {\n  return x * 2;\n}\n",
    }
    for n in range(USERS):
        files[f"src/user{n}.ts"] = (
            f'import {{ scale }} from "./lib";\n\nexport function user{n}(y: number): number {{\n'
            f"  return scale(y) + {n};\n}}\n"
        )
    return files


def c_files() -> dict[str, str]:
    files = {"compile_flags.txt": "-std=c11\n-Wall\n", "ops.h": "int mul(int a, int b);\n"}
    for n in range(USERS):
        files[f"user{n}.c"] = f'#include "ops.h"\n\nint user{n}(int y) {{\n    return mul(y, {n});\n}}\n'
    return files


LANGUAGES = {
    "typescript": {
        "files": ts_files,
        "decl": "src/lib.ts",
        "plain": "scale(x: number)",
        "added": "scale(x: number, k: number)",
        "server": ["typescript-language-server", "--stdio"],
        "options": {"tsserver": {"useSyntaxServer": "never"}},
        "language_id": "typescript",
    },
    "c": {
        "files": c_files,
        "decl": "ops.h",
        "plain": "mul(int a, int b)",
        "added": "mul(int a, int b, int c)",
        "server": ["clangd", "--background-index", "--log=error"],
        "options": None,
        "language_id": "c",
    },
}


def make_project(files: dict[str, str], prefix: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix=prefix))
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def binary(name: str) -> str:
    """`name` on PATH, or Debian's versioned `name-NN`."""
    found = shutil.which(name)
    if found:
        return found
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        try:
            for entry in sorted(os.listdir(directory), reverse=True):
                if entry.startswith(name + "-") and entry[len(name) + 1:].isdigit():
                    return os.path.join(directory, entry)
        except OSError:
            continue
    raise RuntimeError(f"{name} is not on PATH")


class BareLsp:
    """A language server over stdio with nothing in between: the
    declaration file open, and the dependents too when `dependents`."""

    def __init__(self, lang: dict, dependents: bool):
        self.lang = lang
        self.root = make_project(lang["files"](), "gantry-dependents-bare-")
        argv = [binary(lang["server"][0]), *lang["server"][1:]]
        self.proc = subprocess.Popen(argv, cwd=self.root, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()
        self.next_id = 0
        self.published: dict[str, int] = {}
        self.seq = 0
        uri = self.root.as_uri()
        caps = {"textDocument": {"publishDiagnostics": {"versionSupport": True}},
                "window": {"workDoneProgress": True}, "workspace": {"configuration": True}}
        self.request("initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": caps,
                                    "initializationOptions": lang["options"],
                                    "workspaceFolders": [{"uri": uri, "name": "bench"}]})
        self.notify("initialized", {})
        self.decl = (self.root / lang["decl"]).as_uri()
        self.open = [self.decl]
        if dependents:
            self.open += [p.as_uri() for p in sorted(self.root.rglob("user*")) if p.is_file()]
        for uri in self.open:
            text = Path(uri[len("file://"):]).read_text()
            self.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": lang["language_id"], "version": 1, "text": text}})
        self.version = 1
        self.wait_published(0, time.perf_counter() + 60)

    def read(self) -> None:
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, value = line.decode().split(":", 1)
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(out.read(length)))

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def handle(self, message: dict, until: float):
        method = message.get("method")
        if method and "id" in message:
            result = [None] * len(message["params"].get("items", [])) \
                if method == "workspace/configuration" else None
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "textDocument/publishDiagnostics":
            self.seq += 1
            self.published[message["params"]["uri"]] = self.seq
        return message

    def next(self, until: float) -> dict:
        left = until - time.perf_counter()
        if left <= 0:
            raise RuntimeError("bare server: no answer in time")
        return self.handle(self.messages.get(timeout=left), until)

    def request(self, method: str, params: dict):
        self.next_id += 1
        mine = self.next_id
        self.send({"jsonrpc": "2.0", "id": mine, "method": method, "params": params})
        until = time.perf_counter() + 60
        while True:
            message = self.next(until)
            if message.get("id") == mine and "method" not in message:
                return message.get("result")

    def wait_published(self, since: int, until: float) -> None:
        while not all(self.published.get(uri, 0) > since for uri in self.open):
            self.next(until)

    def change(self, add: bool) -> float:
        """The declaration changed; milliseconds until every open file has
        been published since."""
        old, new = (self.lang["plain"], self.lang["added"]) if add else (self.lang["added"], self.lang["plain"])
        path = self.root / self.lang["decl"]
        text = path.read_text().replace(old, new)
        path.write_text(text)
        self.version += 1
        since = self.seq
        t = time.perf_counter()
        self.notify("textDocument/didChange", {"textDocument": {"uri": self.decl, "version": self.version},
                                               "contentChanges": [{"text": text}]})
        self.notify("textDocument/didSave", {"textDocument": {"uri": self.decl}})
        self.wait_published(since, t + 30)
        return (time.perf_counter() - t) * 1000

    def done(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Gantry(StdioClient):
    """`gantry mcp` on its own project copy, with or without the lookup."""

    def __init__(self, gantry: str, files: dict[str, str], dependents: bool):
        self.root = make_project(files, "gantry-dependents-bench-")
        self.state = Path(tempfile.mkdtemp(prefix="gantry-dependents-home-"))
        (self.state / "home").mkdir()
        settings = {"lsp": {"dependents": dependents}}
        (self.state / "home" / "settings.json").write_text(json.dumps(settings))
        env = dict(os.environ, GANTRY_HOME=str(self.state / "home"),
                   GANTRY_STATE_DIR=str(self.state / "state"))
        super().__init__([gantry, "mcp", "--root", str(self.root)], str(self.root), env)
        self.initialize()

    def call(self, tool: str, arguments: dict) -> str:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        text = "\n".join(c.get("text", "") for c in result["content"])
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {text}")
        return text

    def done(self) -> None:
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.state, ignore_errors=True)


def edit(side: Gantry, lang: dict, add: bool, check: str | None) -> float:
    """One declaration edit; its milliseconds. `check` is "on" or "off" for
    the result to verify, None for warm-up edits."""
    old, new = (lang["plain"], lang["added"]) if add else (lang["added"], lang["plain"])
    t = time.perf_counter()
    text = side.call("edit", {"path": lang["decl"], "old_string": old, "new_string": new})
    elapsed = (time.perf_counter() - t) * 1000
    users = text.count("(uses what the write changed)")
    if check == "on" and add and users != USERS:
        raise RuntimeError(f"on: {users} of {USERS} callers named after adding a parameter:\n{text}")
    if check == "on" and not add and "introduced" in text:
        raise RuntimeError(f"on: removing the parameter introduced problems:\n{text}")
    if check == "off" and users:
        raise RuntimeError(f"off: callers named with the lookup off:\n{text}")
    if check and "did not arrive" in text:
        raise RuntimeError(f"{check}: diagnostics missed the deadline:\n{text}")
    return elapsed


def run_language(gantry: str, name: str, edits: int) -> dict:
    lang = LANGUAGES[name]
    sides = {"on": Gantry(gantry, lang["files"](), True), "off": Gantry(gantry, lang["files"](), False)}
    bare = {"bare with": BareLsp(lang, True), "bare without": BareLsp(lang, False)}
    try:
        for side in sides.values():
            side.call("read_file", {"path": lang["decl"]})
        # Warm-up: the servers load the project, open the callers, learn the
        # declarations; untimed.
        for _ in range(5):
            for side in sides.values():
                edit(side, lang, True, None)
                edit(side, lang, False, None)
            for server in bare.values():
                server.change(True)
                server.change(False)
        keys = [*sides, *bare]
        times = {key: {"add": [], "remove": []} for key in keys}
        for n in range(edits // 2):
            for key in keys[n % len(keys):] + keys[:n % len(keys)]:
                for add in (True, False):
                    if key in sides:
                        elapsed = edit(sides[key], lang, add, key)
                    else:
                        elapsed = bare[key].change(add)
                    times[key]["add" if add else "remove"].append(elapsed)
        return times
    finally:
        for side in sides.values():
            side.done()
        for server in bare.values():
            server.done()


def main() -> int:
    gantry = os.path.abspath(sys.argv[1])
    edits = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    results = {name: run_language(gantry, name, edits) for name in LANGUAGES}
    print(f"`edit` of a declaration with {USERS} dependent files, warm servers, {edits} edits per side")
    print("(half add a parameter, breaking the callers; half remove it), on and off interleaved.")
    print("  on  = default settings: the lookup finds, opens and checks the dependents")
    print("  off = lsp.dependents: false: the written file's own diagnostics only")
    print()
    print("  bare with / without = a bare LSP client, the 10 dependents open or not: didChange until")
    print("  every open file is published again; their difference is the server's own recheck")
    print()
    print(f"{'figure (ms)':<34}{'off':>9}{'on':>9}{'on-off':>9}{'bare w/o':>10}{'bare w':>9}{'w-w/o':>9}{'gantry':>9}")
    for name, times in results.items():
        for label, pick in (("all edits", ("add", "remove")), ("adding (breaks)", ("add",)),
                            ("removing (fixes)", ("remove",))):
            def at(key: str, p: float) -> float:
                return pct([t for k in pick for t in times[key][k]], p)
            for p in (50,) if label != "all edits" else (50, 90):
                off, on = at("off", p), at("on", p)
                without, with_ = at("bare without", p), at("bare with", p)
                print(f"{name + ' ' + label + ' p' + str(p):<34}{off:>9.1f}{on:>9.1f}{on - off:>+9.1f}"
                      f"{without:>10.1f}{with_:>9.1f}{with_ - without:>+9.1f}"
                      f"{(on - off) - (with_ - without):>+9.1f}")
    print()
    print("gantry = (on - off) - (bare w - bare w/o): what the lookup costs beyond the server's own recheck.")
    print("Goal: on within +50 ms of off at p50 (all edits) for TypeScript and C.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

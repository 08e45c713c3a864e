#!/usr/bin/env python3
"""A bare LSP client: the baseline for bench/lsp.sh.

Talks to basedpyright-langserver over stdio with nothing in between, sends
the same requests Gantry sends (definition, references, hover at the same
positions; a write that introduces an error, then its fix), and prints one
JSON object of timings in milliseconds.

Usage: lsp_raw.py PROJECT_DIR CALLS
"""
import json
import os
import select
import statistics
import subprocess
import sys
import time

root, calls = os.path.abspath(sys.argv[1]), int(sys.argv[2])
uri = "file://" + root
started = time.perf_counter()
proc = subprocess.Popen(["basedpyright-langserver", "--stdio"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root)
next_id = 0
loaded = False


def send(message):
    body = json.dumps(message).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def receive():
    headers = {}
    while True:
        line = proc.stdout.readline().decode().strip()
        if not line:
            break
        name, value = line.split(":", 1)
        headers[name.lower()] = value.strip()
    return json.loads(proc.stdout.read(int(headers["content-length"])))


def handle(message):
    """Answers server requests; notes the end of workspace loading."""
    global loaded
    if "method" in message and "id" in message:
        result = None
        if message["method"] == "workspace/configuration":
            result = [None] * len(message["params"]["items"])
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    elif message.get("method") == "window/logMessage" and "source file" in message["params"]["message"]:
        loaded = True


def request(method, params):
    global next_id
    next_id += 1
    mine = next_id
    send({"jsonrpc": "2.0", "id": mine, "method": method, "params": params})
    while True:
        message = receive()
        if message.get("id") == mine and "method" not in message:
            return message.get("result")
        handle(message)


def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})


caps = {"textDocument": {"diagnostic": {"dynamicRegistration": True},
                         "publishDiagnostics": {"versionSupport": True}},
        "workspace": {"configuration": True}, "window": {"workDoneProgress": True}}
request("initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": caps,
                       "workspaceFolders": [{"uri": uri, "name": "bench"}]})
notify("initialized", {})
main_uri = uri + "/main.py"
text = open(os.path.join(root, "main.py")).read()
notify("textDocument/didOpen", {"textDocument": {"uri": main_uri, "languageId": "python",
                                                 "version": 1, "text": text}})
# Like any client that works with pyright: requests only after it loaded
# the workspace (earlier ones are left unanswered).
while not loaded:
    handle(receive())
doc = {"textDocument": {"uri": main_uri}}
at = dict(doc, position={"line": 3, "character": 10})
request("textDocument/references", dict(at, context={"includeDeclaration": True}))
cold = (time.perf_counter() - started) * 1000

samples = {"definition": [], "references": [], "hover": []}
for _ in range(calls):
    for name, method, params in (
        ("definition", "textDocument/definition", at),
        ("references", "textDocument/references", dict(at, context={"includeDeclaration": True})),
        ("hover", "textDocument/hover", at),
    ):
        t = time.perf_counter()
        request(method, params)
        samples[name].append((time.perf_counter() - t) * 1000)

writes = []
version = 1
for i in range(20):
    version += 1
    new = text + ("undefined_thing()\n" if i % 2 == 0 else "")
    t = time.perf_counter()
    notify("textDocument/didChange", {"textDocument": {"uri": main_uri, "version": version},
                                      "contentChanges": [{"text": new}]})
    request("textDocument/diagnostic", doc)
    writes.append((time.perf_counter() - t) * 1000)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


out = {"cold_ms": cold, "write_diagnostics_p50_ms": statistics.median(writes)}
for name, values in samples.items():
    out[name] = {"p50": pct(values, 50), "p99": pct(values, 99)}
print(json.dumps(out))
proc.kill()

#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for Gantry's worker
tests and bench: a real HTTP peer on loopback that speaks the wire format
(JSON answers, and server-sent events with tool-call deltas split across
chunks by `index` and a usage chunk for `stream_options.include_usage`)
and answers from a planned script instead of a model.

    openai_peer.py SCRIPT.json [PORT]   # prints "PORT <n>" once listening

PORT (default: any free one) lets a peer killed on purpose come back where
its clients expect it.

The script maps a marker to the steps of one conversation:

    {"conversations": {"MARKER": [STEP, ...]}}

A request belongs to the conversation whose marker occurs in its first
user message; its step is the number of assistant messages it carries, so
the peer keeps no state per conversation and two workers can talk to it
at once. A step is

    {"tool_calls": [{"name": "write_file", "arguments": {...}}], "content": "..."}
    {"content": "final text"}
    {"hang": true}          # never answers (until the client goes away)
    {"delay": 0.5, ...}     # waits before answering

and past the last step the peer answers "(script ended)".

GET /requests returns every request received, in order, as
{"body": ..., "received": t, "answered": t} (time.monotonic() seconds);
POST /script replaces the script.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
SCRIPT: dict = {"conversations": {}}
REQUESTS: list[dict] = []


def first_user_text(body: dict) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def step_for(body: dict) -> dict:
    text = first_user_text(body)
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    with LOCK:
        conversations = SCRIPT.get("conversations", {})
    for marker, steps in conversations.items():
        if marker in text:
            return steps[turn] if turn < len(steps) else {"content": "(script ended)"}
    return {"content": f"(no script for this conversation: {text[:80]!r})"}


def calls_of(step: dict, turn: int) -> list[dict]:
    return [
        {"id": f"call_{turn}_{i}", "name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}
        for i, c in enumerate(step.get("tool_calls", []))
    ]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def reply_json(self, code: int, value) -> None:
        data = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/requests":
            with LOCK:
                self.reply_json(200, REQUESTS)
        else:
            self.reply_json(404, {"error": "not found"})

    def do_POST(self) -> None:
        received = time.monotonic()
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/script":
            with LOCK:
                SCRIPT.clear()
                SCRIPT.update(body)
            self.reply_json(200, {"ok": True})
            return
        if not self.path.endswith("/chat/completions"):
            self.reply_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        record = {"body": body, "received": received, "answered": None,
                  "authorization": self.headers.get("Authorization")}
        with LOCK:
            REQUESTS.append(record)
        step = step_for(body)
        if step.get("hang"):
            # Hold the connection until the client closes it.
            while self.rfile.read(1):
                pass
            return
        if step.get("delay"):
            time.sleep(step["delay"])
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        calls = calls_of(step, turn)
        content = step.get("content", "")
        usage = {"prompt_tokens": 10 * (turn + 1), "completion_tokens": 5, "total_tokens": 10 * (turn + 1) + 5}
        if body.get("stream"):
            self.stream(body, content, calls, usage)
        else:
            message = {"role": "assistant", "content": content or None}
            if calls:
                message["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls
                ]
            self.reply_json(200, {
                "id": "chatcmpl-peer", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": usage,
            })
        record["answered"] = time.monotonic()

    def stream(self, body: dict, content: str, calls: list[dict], usage: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {"id": "chatcmpl-peer", "object": "chat.completion.chunk", "model": body.get("model")}

        def send(delta: dict, finish=None) -> None:
            chunk = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()

        send({"role": "assistant", "content": ""})
        half = len(content) // 2
        if content:
            send({"content": content[:half]})
            send({"content": content[half:]})
        # First every call's id and name with the first half of its
        # arguments, highest index first; then the second halves: a client
        # must assemble by index, not by order.
        for i in reversed(range(len(calls))):
            c = calls[i]
            cut = len(c["arguments"]) // 2
            send({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"][:cut]}}]})
        if calls:
            send({"tool_calls": [{"index": i, "function": {"arguments": c["arguments"][len(c["arguments"]) // 2:]}}
                                 for i, c in enumerate(calls)]})
        send({}, "tool_calls" if calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk = dict(base, choices=[], usage=usage)
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main() -> None:
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            SCRIPT.update(json.load(f))
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

"""The run log through `gantry mcp` and the MCP Python SDK: a write, a
declined confirmation, a command the sandbox refused and a worker's turn
(its model a real OpenAI-compatible peer on loopback) are each in the
run's log, in order, with secrets cut, and `gantry log` prints them; a run
killed with SIGKILL leaves a log the next `gantry log` reads; with the
standard OTLP variables set, a real OTLP/HTTP receiver on loopback gets
the run's calls as spans."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import env_for, gantry_bin, legacy_session, text_of

pytestmark = pytest.mark.anyio

SECRET = "sk-live0123456789abcdefghijklmnop"


def gantry_log(workspace: Path, *args: str) -> str:
    done = subprocess.run(
        [gantry_bin(), "log", *args],
        env=env_for(workspace.parent),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def records(workspace: Path, run: str = "last") -> list[dict]:
    return [json.loads(line) for line in gantry_log(workspace, "--run", run, "--json").splitlines()]


class ChatCompletions(BaseHTTPRequestHandler):
    """An OpenAI-compatible model that first asks for `read_file`, then answers."""

    requests: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        ChatCompletions.requests.append(body)
        if not any(m.get("role") == "tool" for m in body["messages"]):
            message = {
                "role": "assistant",
                "content": "Reading the README first.",
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"path": "README.md"})},
                }],
            }
        else:
            message = {"role": "assistant", "content": "The README says: demo."}
        reply = json.dumps({
            "id": "x", "object": "chat.completion", "model": "stand-in",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def serve(handler) -> tuple[ThreadingHTTPServer, int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


async def test_a_run_logs_its_write_refusals_confirmation_and_worker_turn_in_order(workspace: Path):
    model, port = serve(ChatCompletions)
    home = workspace.parent / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps({
        "workers": {"fast": {"baseUrl": f"http://127.0.0.1:{port}/v1", "model": "stand-in"}},
    }))
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        if "declined.txt" in params.message:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={})

    try:
        async with legacy_session(workspace, "--approval", "default", elicitation=answer) as session:
            wrote = await session.call_tool(
                "write_file", {"path": "made.txt", "content": f"api key {SECRET}\nline two\n"}
            )
            assert not wrote.is_error, text_of(wrote)
            declined = await session.call_tool("write_file", {"path": "declined.txt", "content": "no\n"})
            assert declined.is_error
            refused = await session.call_tool("shell", {"command": "touch /usr/gantry-refused-here"})
            assert "[sandbox]" in text_of(refused), text_of(refused)
            # A confined command reads no run's log, this one's included.
            runs = workspace.parent / "state" / "runs"
            peek = await session.call_tool("shell", {"command": f"cat {runs}/*.jsonl | head -c 200; ls {runs}"})
            assert "run.start" not in text_of(peek), text_of(peek)
            spawned = await session.call_tool("vibe_spawn", {"brief": "Summarise the README.", "label": "reader"})
            assert not spawned.is_error, text_of(spawned)
            waited = await session.call_tool("vibe_wait", {"worker_id": "w1", "timeout_seconds": 60})
            assert "demo" in text_of(waited), text_of(waited)
    finally:
        model.shutdown()

    log = records(workspace)
    kinds = [r["kind"] for r in log]
    assert kinds[0] == "run.start" and kinds[-1] == "run.end", kinds
    assert log[0]["front"] == "mcp stdio" and log[0]["client"]["name"], log[0]
    assert [r["seq"] for r in log] == list(range(len(log)))
    text = json.dumps(log)
    assert SECRET not in text, "a secret reached the log"

    def of_call(tool: str, nth: int = 0) -> list[dict]:
        starts = [r for r in log if r["kind"] == "call.start" and r["tool"] == tool]
        call = starts[nth]["call"]
        return [r for r in log if r.get("call") == call]

    write = [r["kind"] for r in of_call("write_file")]
    assert write == ["call.start", "confirm.ask", "confirm.answer", "file.write", "call.end"], write
    made = next(r for r in of_call("write_file") if r["kind"] == "file.write")
    assert made["path"] == "made.txt" and made["action"] == "create", made
    assert "+line two" in made["diff"] and len(made["sha256"]) == 64, made
    no = of_call("write_file", 1)
    assert [r.get("answer") for r in no if r["kind"] == "confirm.answer"] == ["no"]
    assert no[-1]["kind"] == "call.end" and no[-1]["outcome"] == "refused", no[-1]
    assert not (workspace / "declined.txt").exists()
    shell = of_call("shell")
    refusal = [r for r in shell if r["kind"] == "sandbox.refused"]
    assert refusal and "/usr" in refusal[0]["detail"], shell
    turns = [r for r in log if r["kind"] == "worker.turn"]
    assert [t["turn"] for t in turns] == [1, 2] and turns[0]["tools"] == ["read_file"], turns
    by_worker = [r for r in log if r["kind"] == "call.start" and r["by"] == "worker w1"]
    assert [r["tool"] for r in by_worker] == ["read_file"], by_worker
    assert kinds.index("worker.turn") < kinds.index("run.end")
    # In time order: each call's start before its end, the calls in the order made.
    tools = [r["tool"] for r in log if r["kind"] == "call.start" and r["by"] == "client"]
    assert tools == ["write_file", "write_file", "shell", "shell", "vibe_spawn", "vibe_wait"], tools

    printed = gantry_log(workspace, "--run", "last")
    assert "create made.txt" in printed and "sandbox refused file" in printed, printed
    assert "the person answered: no" in printed and "worker w1 turn 1" in printed, printed
    listed = gantry_log(workspace)
    assert "ended" in listed and "mcp stdio" in listed, listed


def jsonrpc(proc: subprocess.Popen, message: dict) -> dict | None:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    return json.loads(proc.stdout.readline())


def test_a_run_killed_with_sigkill_leaves_a_log_gantry_log_reads(workspace: Path):
    proc = subprocess.Popen(
        [gantry_bin(), "mcp", "--root", str(workspace)],
        env=env_for(workspace.parent), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )
    try:
        jsonrpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "killer", "version": "1"}}})
        jsonrpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n in range(3):
            answer = jsonrpc(proc, {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                                    "params": {"name": "read_file", "arguments": {"path": "notes.txt"}}})
            assert "result" in answer, answer
        listed = gantry_log(workspace)
        assert "running" in listed and "killer" in listed, listed
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    listed = gantry_log(workspace)
    assert " killed " in listed, listed
    log = records(workspace)
    assert [r["kind"] for r in log if r["kind"].startswith("call.")] == ["call.start", "call.end"] * 3
    assert "run.end" not in [r["kind"] for r in log]


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: decodes each export with opentelemetry-proto."""

    spans: list = []
    content_types: list[str] = []

    def do_POST(self):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        from google.protobuf import json_format

        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        kind = self.headers["content-type"]
        Collector.content_types.append(kind)
        if kind == "application/json":
            json_format.Parse(body, request)
        else:
            request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}["service.name"]
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    Collector.spans.append((service, span))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
async def test_each_call_is_a_span_of_the_run_trace_sent_to_an_otlp_receiver(workspace: Path, protocol: str):
    Collector.spans, Collector.content_types = [], []
    receiver, port = serve(Collector)
    env = env_for(workspace.parent)
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
        OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
        OTEL_SERVICE_NAME="agents-under-test",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    params = StdioServerParameters(command=gantry_bin(), args=["mcp", "--root", str(workspace)], env=env)
    try:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                assert not (await session.call_tool("read_file", {"path": "README.md"})).is_error
                assert (await session.call_tool("read_file", {"path": "missing.txt"})).is_error
                cell = await session.call_tool("eval", {
                    "code": "tool('read_file', {'path': 'notes.txt'})[:4]",
                    "description": "a cell that reads through the tool bridge",
                })
                assert not cell.is_error, text_of(cell)
    finally:
        receiver.shutdown()
    spans = {span.name: (service, span) for service, span in Collector.spans}
    assert {"execute_tool read_file", "execute_tool eval", "gantry run"} <= set(spans), list(spans)
    assert {service for service, _ in Collector.spans} == {"agents-under-test"}
    assert set(Collector.content_types) == {"application/json" if protocol == "http/json" else "application/x-protobuf"}
    root = spans["gantry run"][1]
    calls = [span for _, span in Collector.spans if span.name.startswith("execute_tool")]
    assert len(calls) == 4, [s.name for s in calls]
    assert {span.trace_id for span in calls} == {root.trace_id}
    eval_span = spans["execute_tool eval"][1]
    nested = [s for s in calls if s.parent_span_id == eval_span.span_id]
    assert [s.name for s in nested] == ["execute_tool read_file"]
    attributes = {s.span_id: {a.key: a.value for a in s.attributes} for s in calls}
    outcomes = sorted(attributes[s.span_id]["gantry.outcome"].string_value for s in calls)
    assert outcomes == ["failed", "ok", "ok", "ok"], outcomes
    assert attributes[nested[0].span_id]["gantry.by"].string_value == "cell"
    assert all("gen_ai.tool.call.arguments" not in a for a in attributes.values())
    assert all(s.end_time_unix_nano >= s.start_time_unix_nano > 0 for s in calls)


class Lines:
    """A child's pipe read line by line on a thread, so a wait for the next
    line is bounded rather than able to hang the suite."""

    def __init__(self, stream):
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in iter(stream.readline, "")] + [self.lines.put("")], daemon=True).start()

    def next(self, seconds: float = 30) -> str:
        try:
            return self.lines.get(timeout=seconds)
        except queue.Empty:
            raise AssertionError(f"no line within {seconds} s") from None


def test_gantry_log_follow_prints_a_new_runs_records_as_they_are_written(workspace: Path):
    env = env_for(workspace.parent)
    follow = subprocess.Popen(
        [gantry_bin(), "log", "--follow", "--json"], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # The follower watches the folder before it says there is nothing yet.
        out, err = Lines(follow.stdout), Lines(follow.stderr)
        assert "following the runs" in err.next()
        called = subprocess.run(
            [gantry_bin(), "call", "--root", str(workspace), "read_file", json.dumps({"path": "README.md"})],
            env=env, capture_output=True, text=True, timeout=60,
        )
        assert called.returncode == 0, called.stderr
        seen = []
        while not seen or seen[-1]["kind"] != "run.end":
            line = out.next()
            assert line, "gantry log --follow ended"
            seen.append(json.loads(line))
        assert [r["kind"] for r in seen][:2] == ["run.start", "call.start"], seen
        assert seen[0]["front"] == "call" and seen[1]["tool"] == "read_file"
        assert seen[1]["args"] == {"path": "README.md"}
    finally:
        follow.kill()
        follow.wait()


def test_a_checkout_cannot_turn_off_the_log_of_what_runs_in_it(workspace: Path):
    (workspace / ".gantry").mkdir()
    (workspace / ".gantry" / "settings.json").write_text(json.dumps({"log": {"enabled": False}}))
    called = subprocess.run(
        [gantry_bin(), "call", "--root", str(workspace), "read_file", json.dumps({"path": "README.md"})],
        env=env_for(workspace.parent), capture_output=True, text=True, timeout=60,
    )
    assert called.returncode == 0, called.stderr
    kinds = [r["kind"] for r in records(workspace)]
    assert kinds[:2] == ["run.start", "call.start"] and kinds[-1] == "run.end", kinds


def test_gantry_log_since_takes_a_span_or_a_time_and_says_what_it_wants(workspace: Path):
    called = subprocess.run(
        [gantry_bin(), "call", "--root", str(workspace), "read_file", json.dumps({"path": "README.md"})],
        env=env_for(workspace.parent), capture_output=True, text=True, timeout=60,
    )
    assert called.returncode == 0, called.stderr
    assert "read_file" in gantry_log(workspace, "--run", "last", "--since", "1h")
    assert "read_file" in gantry_log(workspace, "--run", "last", "--since", "2000-01-01T00:00:00Z")
    assert gantry_log(workspace, "--run", "last", "--since", "2999-01-01T00:00:00Z") == ""
    assert gantry_log(workspace, "--since", "2999-01-01T00:00:00Z") == ""
    bad = subprocess.run([gantry_bin(), "log", "--since", "yesterday"], env=env_for(workspace.parent),
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "expected a time" in bad.stderr, bad.stderr

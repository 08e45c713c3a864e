"""`gantry mcp` over stdio, driven by the Python MCP SDK, in both protocol
eras: the handshake client (2025-11-25, `elicitation/create` requests) and
the modern auto client (2026-07-28, input-required results and retries)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import mcp
import mcp_types as types
import pytest

from mcp import ClientSession
from mcp.client.stdio import stdio_client

from conftest import pid_running, process_exited, legacy_session, server_params, text_of, unique_sleep

pytestmark = pytest.mark.anyio

READ_TOOLS = {"ls", "read_file", "glob"}


def answer_with(action: str, content: dict | None = None, seen: list | None = None):
    async def callback(context, params):
        if seen is not None:
            seen.append(params)
        return types.ElicitResult(action=action, content=content)

    return callback


async def test_initialize_and_tier_filtering(workspace: Path):
    async with legacy_session(workspace, "--tier", "read") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert READ_TOOLS <= set(tools), tools.keys()
        assert "shell" not in tools
        assert tools["read_file"].annotations.read_only_hint is True
        assert tools["read_file"].input_schema["properties"]["offset"]["type"] == "integer"
        assert "$ref" not in str(tools["read_file"].input_schema)
    async with legacy_session(workspace, "--tier", "exec") as session:
        assert session.protocol_version == "2025-11-25"
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert READ_TOOLS | {"shell"} <= set(tools)
        assert tools["shell"].annotations.destructive_hint is True
        assert tools["shell"].annotations.read_only_hint is False


async def test_workspace_tools_answer(workspace: Path):
    async with legacy_session(workspace) as session:
        listing = text_of(await session.call_tool("ls", {"path": "."}))
        assert "src/" in listing and "README.md" in listing
        read = text_of(await session.call_tool("read_file", {"path": "notes.txt", "offset": 10, "limit": 2}))
        assert "line 10" in read and "line 11" in read and "line 12" not in read
        found = text_of(await session.call_tool("glob", {"pattern": "**/*.rs"}))
        assert "src/main.rs" in found
        assert "junk.rs" not in found, "gitignored files are skipped"


async def test_bad_parameters_and_paths_are_tool_errors(workspace: Path):
    async with legacy_session(workspace) as session:
        bad = await session.call_tool("read_file", {"path": "notes.txt", "offset": "abc"})
        assert bad.is_error
        assert 'offset: expected integer >= 1, got "abc"' in text_of(bad)
        outside = await session.call_tool("read_file", {"path": "../secret"})
        assert outside.is_error and "outside the workspace" in text_of(outside)
        # An unknown tool is a protocol error (-32602), not a tool failure.
        with pytest.raises(mcp.MCPError) as unknown:
            await session.call_tool("readfile", {"path": "x"})
        assert "Did you mean `read_file`?" in str(unknown.value)


async def test_hidden_tool_called_by_name_is_refused(workspace: Path):
    async with legacy_session(workspace, "--tier", "read") as session:
        refused = await session.call_tool("shell", {"command": "touch should-not-exist"})
        assert refused.is_error
        assert "exec tool and this surface is limited to read tools" in text_of(refused)
    assert not (workspace / "should-not-exist").exists()


async def test_cancellation_reaches_the_tool(workspace: Path):
    pid_file = workspace / "child.pid"
    sleep = unique_sleep()
    async with legacy_session(workspace) as session:
        with anyio.move_on_after(30) as outer:
            async with anyio.create_task_group() as tg:

                async def slow():
                    await session.call_tool("shell", {"command": f"sleep {sleep} & echo started > child.pid; wait"})

                tg.start_soon(slow)
                with anyio.fail_after(20):
                    while not (pid_file.exists() and pid_file.read_text().strip()):
                        await anyio.sleep(0.02)
                pid = pid_running(sleep)
                tg.cancel_scope.cancel()
        assert not outer.cancelled_caught, "the slow call was never cancelled"
        with anyio.fail_after(10):
            await process_exited(pid)
        # The session is still usable after a cancelled call.
        assert "README.md" in text_of(await session.call_tool("ls", {}))



async def test_ask_user_answered_through_elicitation(workspace: Path):
    seen: list = []
    callback = answer_with("accept", {"choice": "SQLite"}, seen)
    async with legacy_session(workspace, elicitation=callback) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "ask_user" in names
        result = await session.call_tool(
            "ask_user",
            {"question": "Which database?", "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
        )
        assert not result.is_error
        assert "2. SQLite" in text_of(result)
    assert "1. Postgres" in seen[0].message


async def test_ask_user_declined_is_a_skip(workspace: Path):
    async with legacy_session(workspace, elicitation=answer_with("decline")) as session:
        result = await session.call_tool("ask_user", {"question": "Tabs or spaces?"})
        assert not result.is_error
        assert "do not ask this question again" in text_of(result)


async def test_without_elicitation_ask_user_is_absent_and_fails_at_once(workspace: Path):
    async with legacy_session(workspace) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "ask_user" not in names
        with anyio.fail_after(10):
            result = await session.call_tool("ask_user", {"question": "anyone?"})
        assert result.is_error and "not available" in text_of(result)


async def test_confirmation_under_default_approval(workspace: Path):
    seen: list = []
    async with legacy_session(workspace, "--approval", "default", elicitation=answer_with("accept", {"approve": True}, seen)) as session:
        result = await session.call_tool("shell", {"command": "echo yes > accepted.txt"})
        assert not result.is_error, text_of(result)
    assert (workspace / "accepted.txt").read_text() == "yes\n"
    assert "echo yes > accepted.txt" in seen[0].message
    async with legacy_session(workspace, "--approval", "default", elicitation=answer_with("decline")) as session:
        result = await session.call_tool("shell", {"command": "echo no > refused.txt"})
        assert result.is_error and "declined" in text_of(result)
        # Read tools are never confirmed.
        assert not (await session.call_tool("ls", {})).is_error
    assert not (workspace / "refused.txt").exists()
    # No elicitation at all: fail closed.
    async with legacy_session(workspace, "--approval", "default") as session:
        result = await session.call_tool("shell", {"command": "echo x > nobody.txt"})
        assert result.is_error and "no person is wired" in text_of(result)
    assert not (workspace / "nobody.txt").exists()


async def test_a_shell_description_is_shown_in_the_confirmation(workspace: Path):
    """Qwen Code and the seed tool set give `shell` a `description`: a label
    for the person, shown with the command when they are asked, and no
    "ignored" note to the model."""
    seen: list = []
    async with legacy_session(workspace, "--approval", "default", elicitation=answer_with("accept", {"approve": True}, seen)) as session:
        result = await session.call_tool("shell", {"command": "echo labelled", "description": "Check the label"})
        assert not result.is_error, text_of(result)
        assert "labelled" in text_of(result) and "ignored" not in text_of(result)
    assert "Check the label (run: echo labelled)" in seen[0].message, seen[0].message


async def test_modern_client_elicits_by_input_required_round_trip(workspace: Path):
    """`mcp.Client` in auto mode negotiates 2026-07-28, where the server may
    not send requests; questions come back as input-required results and the
    client retries with the answers."""
    seen: list = []
    client = mcp.Client(
        server_params(workspace, "--approval", "default"),
        elicitation_callback=answer_with("accept", {"choice": "b", "approve": True}, seen),
    )
    async with client:
        assert client.protocol_version == "2026-07-28"
        names = {t.name for t in (await client.list_tools()).tools}
        assert "ask_user" in names
        result = await client.call_tool(
            "ask_user", {"question": "Pick", "options": [{"label": "a"}, {"label": "b"}]}
        )
        assert not result.is_error, text_of(result)
        assert "2. b" in text_of(result)
        confirmed = await client.call_tool("shell", {"command": "echo modern > modern.txt"})
        assert not confirmed.is_error, text_of(confirmed)
    assert (workspace / "modern.txt").read_text() == "modern\n"
    assert len(seen) == 2


async def test_modern_client_decline_refuses(workspace: Path):
    client = mcp.Client(server_params(workspace, "--approval", "default"), elicitation_callback=answer_with("decline"))
    async with client:
        result = await client.call_tool("shell", {"command": "echo no > modern-refused.txt"})
        assert result.is_error and "declined" in text_of(result)
    assert not (workspace / "modern-refused.txt").exists()


async def test_modern_client_without_elicitation(workspace: Path):
    async with mcp.Client(server_params(workspace)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "ask_user" not in names and "read_file" in names
        result = await client.call_tool("ask_user", {"question": "anyone?"})
        assert result.is_error and "not available" in text_of(result)
        read = await client.call_tool("read_file", {"path": "README.md"})
        assert "A small workspace." in text_of(read)


async def test_forged_request_state_is_refused(workspace: Path):
    """Answers sent with a retry are bound to the call that asked for them."""
    async with mcp.Client(server_params(workspace, "--approval", "default"), elicitation_callback=answer_with("accept")) as client:
        first = await client.session.call_tool(
            "shell", {"command": "echo a > a.txt"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        responses = {key: {"action": "accept", "content": {"approve": True}} for key in first.input_requests}
        forged = await client.session.call_tool(
            "shell",
            {"command": "echo b > b.txt"},
            input_responses=responses,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert forged.is_error and "belong to a different call" in text_of(forged)
    assert not (workspace / "b.txt").exists() and not (workspace / "a.txt").exists()


async def test_logs_never_reach_the_protocol_stream(workspace: Path, tmp_path: Path):
    log = tmp_path / "gantry.log"
    async with legacy_session(workspace, "-vv", "--log-file", str(log)) as session:
        await session.list_tools()
        await session.call_tool("ls", {})
    assert log.exists() and log.stat().st_size > 0


def _png(width: int, height: int) -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


async def test_images_come_back_as_image_content(workspace: Path):
    import base64

    png = _png(3, 2)
    (workspace / "dot.png").write_bytes(png)
    async with legacy_session(workspace) as session:
        result = await session.call_tool("read_file", {"path": "dot.png"})
        assert not result.is_error
        images = [c for c in result.content if c.type == "image"]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data) == png


async def test_memory_files_reach_the_client_instructions(workspace: Path):
    (workspace / "GANTRY.md").write_text("# Project\n\nAlways run `make check`.\n")
    async with legacy_session(workspace) as session:
        saved = await session.call_tool("save_memory", {"fact": "Prefers small commits", "scope": "workspace"})
        assert not saved.is_error, text_of(saved)
    async with stdio_client(server_params(workspace)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
    assert "Always run `make check`." in init.instructions
    assert "- Prefers small commits" in init.instructions


async def test_long_commands_report_progress(workspace: Path):
    updates: list = []

    async def on_progress(progress: float, total: float | None, message: str | None):
        updates.append((progress, message))

    async with legacy_session(workspace) as session:
        result = await session.call_tool(
            "shell", {"command": "echo start; sleep 4.5; echo done"}, progress_callback=on_progress
        )
        assert "done" in text_of(result)
    assert len(updates) >= 2, updates
    assert all("running for" in message for _, message in updates)
    assert [p for p, _ in updates] == sorted(p for p, _ in updates), "progress only grows"


async def test_a_gemini_shaped_call_with_its_own_parameter_works(workspace: Path):
    # Recorded from Gemini CLI 0.61: it adds `wait_for_previous` to every
    # tool's schema and forwards what the model sets.
    from conftest import RawStdio

    raw = RawStdio(workspace)
    try:
        raw.initialize()
        reply = raw.request(2, "tools/call", {
            "name": "read_file",
            "arguments": {"path": "notes.txt", "limit": 2, "wait_for_previous": True},
        })
        result = reply["result"]
        assert result.get("isError") is not True, reply
        text = "\n".join(c["text"] for c in result["content"] if c["type"] == "text")
        assert "line 1" in text and "line 2" in text
        assert text.rstrip().endswith("[ignored: `wait_for_previous` is not a parameter of `read_file`]")
        # A slip of a real name is still an error that says so.
        reply = raw.request(3, "tools/call", {
            "name": "read_file",
            "arguments": {"path": "notes.txt", "limt": 2},
        })
        assert reply["result"]["isError"] is True
        assert "limt: unknown parameter (did you mean `limit`?)" in reply["result"]["content"][0]["text"]
    finally:
        raw.close()


async def test_every_broken_message_gets_a_json_rpc_error_and_serving_goes_on(workspace: Path):
    from conftest import RawStdio

    raw = RawStdio(workspace)
    try:
        raw.initialize("probe", "2025-11-25")
        # Over the 16 MiB limit: answered with its id, not dropped.
        big = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"' + b"a" * (17 * 1024 * 1024) + b'"}}}\n'
        raw.send_bytes(big)
        reply = raw.receive()
        assert reply["id"] == 41 and reply["error"]["code"] == -32600, reply
        assert "limit" in reply["error"]["message"]
        # Nested deeper than any parser takes: a parse error with its id.
        deep = '{"jsonrpc":"2.0","id":42,"method":"tools/call","params":' + "[" * 300 + "]" * 300 + "}\n"
        raw.send_bytes(deep.encode())
        reply = raw.receive()
        assert reply["id"] == 42 and reply["error"]["code"] == -32700, reply
        # Not JSON at all: a parse error for id null.
        raw.send_bytes(b"{oops\n")
        reply = raw.receive()
        assert reply["id"] is None and reply["error"]["code"] == -32700, reply
        # A batch, and a message without a method: invalid requests.
        raw.send_bytes(b'[{"jsonrpc":"2.0","id":43,"method":"ping"}]\n')
        assert raw.receive()["error"]["code"] == -32600
        raw.send({"jsonrpc": "2.0", "id": 44})
        reply = raw.receive()
        assert reply["id"] == 44 and reply["error"]["code"] == -32600, reply
        # tools/call with params missing, null, or arguments not an object.
        for i, params in enumerate([None, "null", {"name": "read_file", "arguments": "x"}]):
            message = {"jsonrpc": "2.0", "id": 50 + i, "method": "tools/call"}
            if params == "null":
                message["params"] = None
            elif params is not None:
                message["params"] = params
            raw.send(message)
            reply = raw.receive()
            assert reply["id"] == 50 + i and reply["error"]["code"] == -32602, reply
        # An unknown tool is a protocol error that suggests the right name.
        reply = raw.request(60, "tools/call", {"name": "readfile", "arguments": {}})
        assert reply["error"]["code"] == -32602, reply
        assert "Did you mean `read_file`?" in reply["error"]["message"]
        # And the server still serves.
        reply = raw.request(61, "tools/call", {"name": "read_file", "arguments": {"path": "README.md"}})
        assert "A small workspace." in reply["result"]["content"][0]["text"]
    finally:
        raw.close()

"""`eval` through `gantry mcp` and the Python MCP SDK: state across calls,
a matplotlib figure arriving as an MCP image, the tool bridge, and a
bridged write that asks the person by elicitation (declined: the cell is
told, nothing is written)."""

from __future__ import annotations

import base64
from pathlib import Path

import mcp_types as types
import pytest

from conftest import legacy_session, text_of

pytestmark = pytest.mark.anyio


def cell(code: str, **extra) -> dict:
    return {"code": code, "description": "a cell run by the end-to-end test", **extra}


async def test_eval_keeps_state_and_returns_figures_as_images(workspace: Path):
    async with legacy_session(workspace) as session:
        first = await session.call_tool("eval", cell("total = 40\ntotal + 2"))
        assert not first.is_error, text_of(first)
        assert text_of(first).startswith("42")
        second = await session.call_tool("eval", cell("total"))
        assert text_of(second).startswith("40")
        figure = await session.call_tool(
            "eval", cell("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('plotted')")
        )
        assert not figure.is_error, text_of(figure)
        images = [c for c in figure.content if getattr(c, "type", "") == "image"]
        assert len(images) == 1
        assert images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data).startswith(b"\x89PNG\r\n\x1a\n")
        bridged = await session.call_tool("eval", cell("tool('read_file', {'path': 'README.md'})[:20]"))
        assert "# demo" in text_of(bridged), text_of(bridged)
        js = await session.call_tool("eval", cell("let n = 1; let n2 = n + 1; n2", language="javascript"))
        assert text_of(js).startswith("2"), text_of(js)


async def test_a_bridged_write_asks_by_elicitation_and_a_decline_reaches_the_cell(workspace: Path):
    asked = []

    async def decline_writes(context, params):
        asked.append(params.message)
        # The cell itself runs; the write it asks for is declined.
        if "write_file" in params.message.lower() or "made.txt" in params.message:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={})

    async with legacy_session(workspace, "--approval", "default", elicitation=decline_writes) as session:
        result = await session.call_tool(
            "eval",
            cell("try:\n    tool('write_file', {'path': 'made.txt', 'content': 'x'})\nexcept ToolError as e:\n    print('refused:', e)"),
        )
        assert not result.is_error, text_of(result)
        assert "refused:" in text_of(result), text_of(result)
        assert len(asked) == 2, asked
    assert not (workspace / "made.txt").exists()

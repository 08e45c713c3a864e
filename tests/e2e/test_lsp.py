"""`lsp`, `lsp_rename` and diagnostics on write through `gantry mcp`, driven
by the Python MCP SDK, against real language servers (basedpyright,
typescript-language-server). A missing server fails the test
(scripts/install-lsp.sh installs them); GANTRY_SKIP_LSP=1 skips these tests
explicitly, with the reason in pytest's summary (-rs)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import legacy_session, text_of

pytestmark = pytest.mark.anyio


def need(*binaries: str) -> None:
    """Skips the test only when GANTRY_SKIP_LSP=1 asks to; a missing server
    otherwise fails it, so a green run means these tests ran."""
    if os.environ.get("GANTRY_SKIP_LSP") == "1":
        pytest.skip(f"GANTRY_SKIP_LSP=1: skipped on request (needs {', '.join(binaries)})")
    missing = [b for b in binaries if shutil.which(b) is None]
    if missing:
        pytest.fail(
            f"missing {', '.join(missing)} on PATH: scripts/install-lsp.sh installs it; "
            "set GANTRY_SKIP_LSP=1 to skip the tests that need a language server"
        )


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


MAIN_PY = 'from app.util import greet\n\n\nmessage = greet("x")\nprint(greet(message))\n'


@pytest.fixture
def python_project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "py", {
        "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n',
        "app/__init__.py": "",
        "app/util.py": 'def greet(name: str) -> str:\n    """Say hello."""\n    return "hello " + name\n',
        "main.py": MAIN_PY,
    })


@pytest.fixture
def ts_project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "ts", {
        "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}\n',
        "src/util.ts": "/** Doubles `n`. */\nexport function double(n: number): number {\n  return n * 2;\n}\n",
        "src/main.ts": 'import { double } from "./util";\n\nexport const four: number = double(2);\n',
    })


async def test_python_navigation_diagnostics_on_edit_and_a_shell_change(python_project: Path):
    need("basedpyright-langserver")
    async with legacy_session(python_project) as session:
        # A read touches the file: its server starts in the background.
        await session.call_tool("read_file", {"path": "main.py"})
        at = {"file": "main.py", "line": 4, "symbol": "greet"}
        refs = text_of(await session.call_tool("lsp", {"action": "references", **at}))
        assert "references to `greet` (main.py:4)" in refs, refs
        assert "app/util.py\n  1: def greet(name: str) -> str:" in refs, refs
        hover = text_of(await session.call_tool("lsp", {"action": "hover", **at}))
        assert "def greet(name: str) -> str" in hover and "Say hello." in hover, hover

        # The edit tool's result carries what the edit broke, and only that.
        broken = text_of(await session.call_tool("edit", {
            "path": "main.py", "old_string": "print(greet(message))\n",
            "new_string": "print(greet(message))\nundefined_thing()\n"}))
        assert "the write succeeded; it introduced these problems:" in broken, broken
        assert "main.py:6: error" in broken and "undefined_thing" in broken, broken
        fixed = text_of(await session.call_tool("edit", {
            "path": "main.py", "old_string": "undefined_thing()\n", "new_string": ""}))
        assert "introduced" not in fixed, fixed

        # Changed by the shell, then asked: the answer is about the new text.
        shell = text_of(await session.call_tool("shell", {"command": "sed -i 's/message/note/g' main.py"}))
        assert "exit code 0" in shell, shell
        fresh = text_of(await session.call_tool("lsp", {
            "action": "references", "file": "main.py", "line": 4, "symbol": "note"}))
        assert '  4: note = greet("x")' in fresh and "  5: print(greet(note))" in fresh, fresh

        status = text_of(await session.call_tool("lsp", {"action": "status"}))
        assert "- basedpyright for . (" in status and ": ready, pid " in status, status


async def test_typescript_rename_and_project_diagnostics(ts_project: Path):
    need("typescript-language-server", "tsc")
    async with legacy_session(ts_project) as session:
        renamed = text_of(await session.call_tool("lsp_rename", {
            "file": "src/main.ts", "line": 3, "symbol": "double", "new_name": "twice"}))
        assert "renamed `double` to `twice` in 2 file(s)" in renamed, renamed
        assert "export function twice(n: number)" in (ts_project / "src/util.ts").read_text()
        assert "twice(2)" in (ts_project / "src/main.ts").read_text()

        broken = text_of(await session.call_tool("edit", {
            "path": "src/main.ts", "old_string": "twice(2)", "new_string": 'twice("2")'}))
        assert "the write succeeded; it introduced these problems:" in broken, broken
        assert "src/main.ts:3: error[2345]" in broken, broken
        project = text_of(await session.call_tool("lsp", {"action": "diagnostics", "file": "*"}))
        assert "$ tsc --noEmit" in project and "src/main.ts(3," in project and "TS2345" in project, project

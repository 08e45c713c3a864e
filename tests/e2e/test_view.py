"""`gantry view` in a real browser: a `gantry mcp` session writes a file,
edits it and plots with `eval`; the view, reading the same state directory,
shows that run in Chromium (driven by tests/e2e/view/drive.mjs through
playwright-core), and one more call made while the page is open appears
without a reload. The API refuses requests without the token.

Chromium and playwright-core are installed by scripts/install-browser.sh;
the directory it prints comes in GANTRY_BROWSER_DIR. Set
GANTRY_SKIP_BROWSER=1 to skip this test explicitly. The page's screenshot
is kept at target/test-artifacts/view.png."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from conftest import REPO, env_for, gantry_bin, legacy_session, text_of

pytestmark = pytest.mark.anyio

DRIVE = Path(__file__).resolve().parent / "view" / "drive.mjs"
SCREENSHOT = REPO / "target" / "test-artifacts" / "view.png"
INSTALL_HINT = "run scripts/install-browser.sh and set GANTRY_BROWSER_DIR to the directory it prints"


def browser_dir() -> str:
    if os.environ.get("GANTRY_SKIP_BROWSER") == "1":
        pytest.skip("GANTRY_SKIP_BROWSER=1: the browser test of gantry view was skipped on request")
    given = os.environ.get("GANTRY_BROWSER_DIR")
    if not given:
        pytest.fail(f"GANTRY_BROWSER_DIR is not set: {INSTALL_HINT}")
    if not (Path(given) / "node_modules" / "playwright-core").is_dir():
        pytest.fail(f"no playwright-core under {given}: {INSTALL_HINT}")
    if not Path("/usr/bin/chromium").exists():
        pytest.fail(f"/usr/bin/chromium is missing: {INSTALL_HINT}")
    if not shutil.which("node"):
        pytest.fail("node is not on PATH (scripts/install-kernel.sh installs it)")
    return given


def cell(code: str) -> dict:
    return {"code": code, "description": "a cell run by the end-to-end test"}


async def read_line(lines: BufferedByteReceiveStream, what: str) -> str:
    try:
        return (await lines.receive_until(b"\n", 1 << 20)).decode()
    except (anyio.EndOfStream, anyio.IncompleteRead):
        raise AssertionError(f"{what} closed its output") from None


@asynccontextmanager
async def gantry_view(workspace: Path, logs: Path):
    """`gantry view --port 0` with the environment (and so the state
    directory) the MCP sessions of `legacy_session` get: its URL, the base
    address, the token."""
    with open(logs / "view.stderr", "wb") as stderr:
        proc = await anyio.open_process(
            [gantry_bin(), "view", "--port", "0"],
            env=env_for(workspace.parent), stdout=subprocess.PIPE, stderr=stderr,
        )
        try:
            stdout = BufferedByteReceiveStream(proc.stdout)
            with anyio.fail_after(30):
                url = (await read_line(stdout, "gantry view")).strip()
            assert url.startswith("http://127.0.0.1:") and "/#token=" in url, url
            base, token = url.split("/#token=", 1)
            async with anyio.create_task_group() as tasks:
                # Whatever it says later must not fill the pipe.
                async def drain():
                    async for _ in stdout:
                        pass

                tasks.start_soon(drain)
                yield url, base, token
                tasks.cancel_scope.cancel()
        finally:
            if proc.returncode is None:
                proc.terminate()
                with anyio.move_on_after(10):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()


async def session_run(base: str, token: str, workspace: Path) -> dict:
    """The summary of the one running run of `workspace`."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        response = await http.get(f"{base}/api/runs")
    assert response.status_code == 200, response.text
    runs = [
        run for run in response.json()
        if run["state"] == "running"
        and os.path.realpath((run.get("start") or {}).get("workspace", "")) == os.path.realpath(workspace)
    ]
    assert len(runs) == 1, response.json()
    return runs[0]


async def test_the_api_wants_the_token(workspace: Path, tmp_path: Path):
    async with gantry_view(workspace, tmp_path) as (url, base, token):
        async with httpx2.AsyncClient(timeout=30) as http:
            # The page itself needs none.
            page = await http.get(f"{base}/")
            assert page.status_code == 200 and "app.js" in page.text, page.text
            assert (await http.get(f"{base}/app.js")).status_code == 200
            for path in ["/api/runs", "/api/runs/none"]:
                assert (await http.get(f"{base}{path}")).status_code == 401, path
                wrong = await http.get(f"{base}{path}", headers={"Authorization": "Bearer wrong"})
                assert wrong.status_code == 401, path
                assert (await http.get(f"{base}{path}?token=wrong")).status_code == 401, path
            # Not read: a stream that was accepted would not end.
            async with http.stream("GET", f"{base}/api/events") as events:
                assert events.status_code == 401
            right = await http.get(f"{base}/api/runs", headers={"Authorization": f"Bearer {token}"})
            assert right.status_code == 200 and isinstance(right.json(), list), right.text
            assert (await http.get(f"{base}/api/runs?token={token}")).status_code == 200
            auth = {"Authorization": f"Bearer {token}"}
            # DNS rebinding: a page of another name that resolves to loopback
            # is refused, token or not.
            rebound = await http.get(f"{base}/api/runs", headers={**auth, "Host": "attacker.example.org"})
            assert rebound.status_code == 421, rebound.text
            # A run id is a file name in the runs folder, nothing else.
            for id in ["..%2F..%2Fetc%2Fpasswd", "..", "x.jsonl", "%2Fetc%2Fpasswd"]:
                escaped = await http.get(f"{base}/api/runs/{id}", headers=auth)
                assert escaped.status_code == 404, (id, escaped.status_code, escaped.text[:200])


async def test_a_session_shows_live_in_the_browser(workspace: Path, tmp_path: Path):
    browser = browser_dir()
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    SCREENSHOT.unlink(missing_ok=True)
    async with gantry_view(workspace, tmp_path) as (url, base, token):
        async with legacy_session(workspace) as session:
            wrote = await session.call_tool("write_file", {"path": "plot.py", "content": "def f():\n    return 1\n"})
            assert not wrote.is_error, text_of(wrote)
            # Markup in what a run logs stays text: were it parsed, the page's
            # policy would refuse the inline handler, a console error drive.mjs
            # fails on.
            hostile = await session.call_tool("write_file", {
                "path": "x<img src=x onerror=\"document.title='pwned'\">.txt",
                "content": "<script>document.title='pwned'</script>\n",
            })
            assert not hostile.is_error, text_of(hostile)
            edited = await session.call_tool(
                "edit", {"path": "plot.py", "old_string": "return 1", "new_string": "return 2"})
            assert not edited.is_error, text_of(edited)
            figure = await session.call_tool(
                "eval", cell("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('plotted')"))
            assert not figure.is_error, text_of(figure)
            assert any(getattr(c, "type", "") == "image" for c in figure.content)
            run = await session_run(base, token, workspace)

            drive = await anyio.open_process(
                ["node", str(DRIVE), "--url", url, "--run", run["id"], "--screenshot", str(SCREENSHOT),
                 "--tools", "write_file,edit,eval", "--new-tool", "read_file"],
                env={**os.environ, "GANTRY_BROWSER_DIR": browser},
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
            try:
                said = BufferedByteReceiveStream(drive.stdout)
                with anyio.fail_after(120):
                    ready = await read_line(said, "drive.mjs")
                if ready.strip() == "ready":
                    # One more call while the page is open: it must show up live.
                    read = await session.call_tool("read_file", {"path": "plot.py"})
                    assert "return 2" in text_of(read), text_of(read)
                    await drive.stdin.send(b"go\n")
                with anyio.fail_after(120):
                    rest = b""
                    async for chunk in said:
                        rest += chunk
                    await drive.wait()
                problem = b""
                async for chunk in drive.stderr:
                    problem += chunk
            finally:
                if drive.returncode is None:
                    drive.kill()
                    await drive.wait()

    view_log = (tmp_path / "view.stderr").read_text(errors="replace")[-2000:]
    assert drive.returncode == 0 and ready.strip() == "ready", (
        f"drive.mjs failed (exit {drive.returncode})\nits stdout: {ready}{rest.decode()}\n"
        f"its stderr: {problem.decode()}\ngantry view's stderr: {view_log}\nscreenshot: {SCREENSHOT}")
    summary = json.loads(rest.decode().strip().splitlines()[-1])
    assert summary["ok"] and summary["run"] == run["id"], summary
    assert summary["state"] == "running", summary
    assert {"write_file", "edit", "eval", "read_file"} <= set(summary["tools"]), summary
    assert summary["newOutcome"] == "ok", summary
    assert summary["images"] and all(width > 0 for width in summary["images"]), summary
    # The create and the modify, each with its diff, in the Files section.
    assert summary["filesDiffs"] >= 2, summary
    assert SCREENSHOT.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
